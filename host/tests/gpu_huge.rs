//! Adds past 2^31 and 2^32 elements: every add variant of each dtype at
//! n = 2^31−1, 2^31+1 and 2^32+2^20, compared in full on the device.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{canaries_hold, gpu, record, CANARY};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::{CountVariant, LaunchShape, Variant};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// The sizes past the 32-bit limits: the largest i32, just past it, and past u32.
const HUGE_SIZES: [usize; 3] = [(1 << 31) - 1, (1 << 31) + 1, (1 << 32) + (1 << 20)];

/// One thread per block and no cap below the hardware's: for n ≥ 2^31 the grid
/// of a one-element-per-thread walk is clamped at 2^31−1 blocks.
const CLAMPED: LaunchShape = LaunchShape { block: 1, max_grid: kernels_gpu::launch::MAX_GRID_X };

/// One huge-n test at a time: each needs tens of GB of device and host memory.
static HUGE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Splits `sizes` into those whose `device` and `host` byte needs fit the free
/// memory (with 2 GiB and 4 GiB to spare) and records the others as skipped.
fn sizes_that_fit(
    test: &str,
    what: &str,
    sizes: &[usize],
    device: impl Fn(usize) -> usize,
    host: impl Fn(usize) -> usize,
) -> Vec<usize> {
    let (free, _) = gpu().mem_info().unwrap();
    let avail = common::host_available_bytes().unwrap_or(usize::MAX);
    let mut fit = Vec::new();
    for &n in sizes {
        if device(n) + (2 << 30) <= free && host(n) + (4 << 30) <= avail {
            fit.push(n);
        } else {
            let reason = format!(
                "needs {} GiB of device memory ({} GiB free) and {} GiB of host memory ({} GiB available)",
                device(n) >> 30,
                free >> 30,
                host(n) >> 30,
                avail >> 30
            );
            common::record_skip(test, what, n, &reason);
        }
    }
    fit
}

/// n ∈ {2^31−1, 2^31+1, 2^32+2^20}: every variant of the dtype, and the scalar
/// one with one thread per block so that its grid is clamped at the hardware
/// limit. Each result is compared in full on the device with an uploaded CPU
/// reference, checked on the host at its first, middle and last million, and
/// must leave the canary bands on both sides of the output untouched. The inputs
/// are generated once at the largest size that fits; smaller n use prefixes.
fn huge<T: ReferenceAdd>() {
    let _g = HUGE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = gpu();
    let size = T::DTYPE.size();
    let what = format!("{:?}", T::DTYPE);
    // Device: a, b, the reference and the output band. Host: a, b, the reference.
    let sizes = sizes_that_fit("huge_n", &what, &HUGE_SIZES, |n| 4 * n * size, |n| 3 * n * size);
    let Some(&big) = sizes.last() else { return };
    let seed: u64 = rand::random();
    let chunk = 1 << 22;
    let gen = |salt: u64| -> Vec<T> {
        let mut v = vec![T::from_bits32(0); big];
        v.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ salt ^ (i as u64) << 20);
            for x in c {
                *x = if rng.gen_range(0..8) == 0 {
                    T::from_bits32(rng.gen())
                } else {
                    common::from_f32(rng.gen_range(-100.0f32..100.0))
                };
            }
        });
        v
    };
    let (a, b) = (gen(1), gen(2));
    let mut want = vec![T::from_bits32(0); big];
    want.par_chunks_mut(chunk).enumerate().for_each(|(i, w)| {
        let s = i * chunk;
        for (j, x) in w.iter_mut().enumerate() {
            *x = T::reference_add(a[s + j], b[s + j]);
        }
    });
    let stream = gpu.stream().unwrap();
    let (da, db, dwant) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap(), gpu.upload(&want).unwrap());
    drop((a, b));
    let mut band = gpu.alloc::<T>(big + 2 * CANARY).unwrap();
    let million = 1 << 20;
    let mut failures = Vec::new();
    for &n in &sizes {
        let runs = Variant::of_dtype(T::DTYPE)
            .filter(|&v| common::runs_here("huge_n", v))
            .map(|v| (v, LaunchShape::default()));
        for (v, cfg) in runs.chain([(Variant::scalar(T::DTYPE), CLAMPED)]) {
            for poison in common::POISONS {
                band.fill(T::from_bits32(poison)).unwrap();
                let out = band.slice_mut(CANARY..CANARY + n).unwrap();
                gpu.studies().add_with(v, cfg, da.slice(..n).unwrap(), db.slice(..n).unwrap(), out, &stream).unwrap();
                stream.synchronize().unwrap();
                let out = band.slice(CANARY..CANARY + n).unwrap();
                let bad = gpu.studies().count_mismatches(out, dwant.slice(..n).unwrap(), &stream).unwrap();
                let mut spot_ok = true;
                for start in [0, n / 2, n - million] {
                    let got = out.slice(start..start + million).unwrap().to_vec().unwrap();
                    spot_ok &= reference::first_mismatch(&got, &want[start..start + million]).is_none();
                }
                let p = T::from_bits32(poison);
                let canaries_ok = canaries_hold(&band, n, |x| x.same_as(p));
                let ok = bad == 0 && spot_ok && canaries_ok;
                let case = format!(
                    "{v} block={} poison={poison:#x} mismatches={bad} spot_ok={spot_ok} canaries_ok={canaries_ok}",
                    cfg.block
                );
                record("huge_n", &case, n, ok);
                if !ok {
                    failures.push(format!("n={n} {case}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The comparison must be able to fail: one flipped bit in the last element
    // (or zero, where the flip leaves a NaN a NaN, which the count calls equal).
    let n = big;
    let flipped = T::from_bits32(want[n - 1].to_bits32() ^ 1);
    let flipped = if flipped.same_as(want[n - 1]) { T::from_bits32(0) } else { flipped };
    band.slice_mut(CANARY + n - 1..CANARY + n).unwrap().copy_from_slice(&[flipped]).unwrap();
    let out = band.slice(CANARY..CANARY + n).unwrap();
    assert_eq!(gpu.studies().count_mismatches(out, dwant.view(), &stream).unwrap(), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_past_2_31_and_2_32_f32() {
    huge::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_past_2_31_and_2_32_f16() {
    huge::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_past_2_31_and_2_32_bf16() {
    huge::<bf16>();
}

/// Grids clamped at the hardware limit (2^31−1 blocks of one thread): the walk
/// still visits every one of more than 2^31 (and, in pairs, 2^32) elements
/// exactly once. Counted on the device; canaries checked on the host.
#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_clamped_grid_visits_every_index_exactly_once() {
    let _g = HUGE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let limit = kernels_gpu::launch::MAX_GRID_X as usize;
    // (lanes, n): the grid exactly at the limit; past it, so that the first
    // threads take a second step; and two-lane groups past it at n > 2^32.
    let cases = [(1u32, limit), (1, limit + (1 << 20) + 1), (2, 2 * limit + (1 << 21) + 3)];
    let all: Vec<usize> = cases.iter().map(|&(_, n)| n).collect();
    let fit = sizes_that_fit("huge_n_clamped_grid", "i32 marks", &all, |n| 4 * n, |_| 0);
    let Some(&big) = fit.last() else { return };
    let mut band = gpu.alloc::<i32>(big + 2 * CANARY).unwrap();
    let mut failures = Vec::new();
    for (lanes, n) in cases.into_iter().filter(|(_, n)| fit.contains(n)) {
        band.fill_bits(0).unwrap();
        gpu.studies().mark_visits(lanes, CLAMPED, band.slice_mut(CANARY..CANARY + n).unwrap(), &stream).unwrap();
        stream.synchronize().unwrap();
        let once = gpu
            .studies()
            .count_eq(CountVariant::WarpShuffle, band.slice(CANARY..CANARY + n).unwrap(), 1, &stream)
            .unwrap();
        let canaries_ok = canaries_hold(&band, n, |&m| m == 0);
        let ok = once == n as u64 && canaries_ok;
        record(
            "huge_n_clamped_grid",
            &format!("lanes={lanes} block=1 grid={limit} once={once} canaries_ok={canaries_ok}"),
            n,
            ok,
        );
        if !ok {
            failures
                .push(format!("lanes={lanes} n={n}: {once} elements visited exactly once, canaries_ok={canaries_ok}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The count must notice one element visited twice.
    let n = big;
    band.slice_mut(CANARY + n / 2..CANARY + n / 2 + 1).unwrap().copy_from_slice(&[2]).unwrap();
    let once =
        gpu.studies().count_eq(CountVariant::WarpShuffle, band.slice(CANARY..CANARY + n).unwrap(), 1, &stream).unwrap();
    assert_eq!(once, n as u64 - 1);
}

/// Past 2^32 elements the unrolled walk takes its 64-bit path: with the grid
/// capped at 1000 blocks each block walks thousands of tiles, and still every
/// index is visited exactly once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_unrolled_walk_visits_every_index_exactly_once() {
    let _g = HUGE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let n = (1usize << 32) + (1 << 20) + 5;
    let fit = sizes_that_fit("huge_n_unrolled_walk", "i32 marks", &[n], |n| 4 * n, |_| 0);
    if fit.is_empty() {
        return;
    }
    let mut band = gpu.alloc::<i32>(n + 2 * CANARY).unwrap();
    let mut failures = Vec::new();
    for (lanes, unroll) in [(4u32, 2u32), (8, 4)] {
        band.fill_bits(0).unwrap();
        let cfg = LaunchShape { block: 256, max_grid: 1000 };
        gpu.studies()
            .mark_visits_unrolled(lanes, unroll, cfg, band.slice_mut(CANARY..CANARY + n).unwrap(), &stream)
            .unwrap();
        stream.synchronize().unwrap();
        let once = gpu
            .studies()
            .count_eq(CountVariant::WarpShuffle, band.slice(CANARY..CANARY + n).unwrap(), 1, &stream)
            .unwrap();
        let canaries_ok = canaries_hold(&band, n, |&m| m == 0);
        let ok = once == n as u64 && canaries_ok;
        record("huge_n_unrolled_walk", &format!("lanes={lanes} unroll={unroll} grid=1000 once={once}"), n, ok);
        if !ok {
            failures.push(format!("lanes={lanes} unroll={unroll}: {once} of {n} once, canaries_ok={canaries_ok}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
