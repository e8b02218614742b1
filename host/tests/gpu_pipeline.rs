//! GPU checks of the device's pipeline building blocks (sm_90): rows copied
//! through `gpukern_device::ring::Ring`'s walk (every stage count, grids
//! that make each persistent block go round its ring many times, pitched
//! rows with canaries between them) and the cluster-wide sum over
//! distributed shared memory (every portable cluster size, rank order, the
//! same bits in every thread); bad settings are errors. One binary, so
//! compute-sanitizer's racecheck and synccheck run on all of it.

mod common;

use common::{gpu, record, record_skip};
use rand::{Rng, SeedableRng};

const CANARY: f32 = -7.25;

#[test]
#[ignore = "needs a CUDA GPU"]
fn ring_walk_copies_every_row_once() {
    let gpu = gpu();
    if !gpu.info().has_sm90() {
        record_skip("ring_walk", "all", 0, "needs compute capability 9.0");
        return;
    }
    let s = gpu.stream().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut failures = Vec::new();
    let sanitizing = common::sanitizing();
    for (rows, cols, pitch) in [(1, 4, 4), (37, 1000, 1008), (500, 4096, 4096), (3000, 64, 80)] {
        for stages in [1u32, 2, 3, 4, 16] {
            for (grid, block) in [(1u32, 32u32), (7, 256), (rows.min(132), 1024)] {
                if sanitizing && (rows > 37 || stages == 16) {
                    continue;
                }
                let slot = gpukern_device::ring::ring_slot_bytes(cols as u64 * 4) as u32;
                let ring = gpukern_device::ring::ring_shared_bytes(slot, stages);
                if cols / 4 > 4 * block || grid > rows || ring > gpu.info().shared_per_block_optin as u64 {
                    continue;
                }
                let span = (rows as usize - 1) * pitch as usize + cols as usize;
                let x: Vec<f32> = (0..span).map(|_| rng.gen_range(-1e3f32..1e3)).collect();
                let dx = gpu.upload(&x).unwrap();
                let mut dy = gpu.upload(&vec![CANARY; span]).unwrap();
                let r = gpu.studies().ring_copy_rows(
                    dx.view(),
                    dy.view_mut(),
                    (rows, cols, pitch),
                    (stages, grid, block),
                    &s,
                );
                let what = format!("{rows}x{cols}/{pitch} stages {stages} grid {grid} block {block}");
                let r = r.map_err(|e| e.to_string()).and_then(|_| {
                    s.synchronize().map_err(|e| e.to_string())?;
                    let y = dy.to_vec().map_err(|e| e.to_string())?;
                    let bad = (0..span).find(|&i| {
                        let want = if (i % pitch as usize) < cols as usize { x[i] } else { CANARY };
                        y[i].to_bits() != want.to_bits()
                    });
                    bad.map_or(Ok(()), |i| Err(format!("{what}: y[{i}] = {}", y[i])))
                });
                record("ring_walk", &what, span, r.is_ok());
                failures.extend(r.err());
            }
        }
    }
    // Bad settings: errors, nothing queued.
    let (dx, mut dy) = (gpu.upload(&vec![1.0f32; 64]).unwrap(), gpu.alloc::<f32>(64).unwrap());
    let st = gpu.studies();
    for (shape, ring) in [
        ((2, 6, 8), (2, 1, 32)),  // rows not of whole packs
        ((2, 8, 4), (2, 1, 32)),  // pitch below the row
        ((2, 8, 8), (0, 1, 32)),  // no stage
        ((2, 8, 8), (17, 1, 32)), // past the barriers
        ((2, 8, 8), (2, 3, 32)),  // more blocks than rows
        ((2, 8, 8), (2, 1, 48)),  // block not of warps
        ((9, 8, 8), (2, 1, 32)),  // x short
    ] {
        let e = st.ring_copy_rows(dx.view(), dy.view_mut(), shape, ring, &s);
        if e.is_ok() {
            failures.push(format!("{shape:?} {ring:?} accepted"));
        }
    }
    assert!(failures.is_empty(), "{} failures: {:#?}", failures.len(), &failures[..failures.len().min(5)]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_fold_sums_in_rank_order() {
    let gpu = gpu();
    if !gpu.info().has_sm90() {
        record_skip("cluster_fold", "all", 0, "needs compute capability 9.0");
        return;
    }
    let s = gpu.stream().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let mut failures = Vec::new();
    for cluster in 1..=8u32 {
        for block in [32u32, 256] {
            let blocks = cluster as usize * 24;
            // Values of very different sizes: any other order gives other bits.
            let x: Vec<f32> =
                (0..blocks).map(|i| rng.gen_range(-1.0f32..1.0) * 10f32.powi((i % 7) as i32 * 3)).collect();
            let dx = gpu.upload(&x).unwrap();
            let mut dy = gpu.alloc::<f32>(blocks * block as usize).unwrap();
            let what = format!("cluster {cluster} block {block}");
            let r = gpu.studies().cluster_fold_sum(dx.view(), dy.view_mut(), cluster, block, &s);
            let r = r.map_err(|e| e.to_string()).and_then(|_| {
                s.synchronize().map_err(|e| e.to_string())?;
                let y = dy.to_vec().map_err(|e| e.to_string())?;
                for (b, ys) in y.chunks(block as usize).enumerate() {
                    let c = b / cluster as usize * cluster as usize;
                    let want = x[c + 1..c + cluster as usize].iter().fold(x[c], |a, v| a + v);
                    if let Some(t) = ys.iter().position(|v| v.to_bits() != want.to_bits()) {
                        return Err(format!("{what}: block {b} thread {t}: {} vs {want}", ys[t]));
                    }
                }
                Ok(())
            });
            record("cluster_fold", &what, blocks, r.is_ok());
            failures.extend(r.err());
        }
    }
    let (dx, mut dy) = (gpu.upload(&[1.0f32; 12]).unwrap(), gpu.alloc::<f32>(12 * 32).unwrap());
    for (cluster, block) in [(0, 32), (9, 32), (5, 32), (4, 48), (4, 64)] {
        if gpu.studies().cluster_fold_sum(dx.view(), dy.view_mut(), cluster, block, &s).is_ok() {
            failures.push(format!("cluster {cluster} block {block} accepted"));
        }
    }
    assert!(failures.is_empty(), "{} failures: {:#?}", failures.len(), &failures[..failures.len().min(5)]);
}
