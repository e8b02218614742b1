//! GPU checks of the bulk-copy kernels (sm_90), the foreach add and the ceiling
//! kernels: bit-exact results at every tiling and grid, canaries, and visit
//! markers proving that their walks touch every index exactly once. Kept in one
//! binary so compute-sanitizer's racecheck and synccheck can run on all of it.

mod common;

use common::{
    canaries_hold, check_launch, gpu, marks_problem, record, record_skip, walk_failures, Data, Launch, CANARY, POISONS,
};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::{BulkConfig, CountVariant, Error, LaunchShape, Triple, Variant, View, ViewMut};
use rand::{Rng, SeedableRng};

/// Tilings from the smallest legal tile up to tiles larger than some inputs.
const TILINGS: [(u32, u32); 7] = [(16, 1), (48, 2), (4096, 1), (8192, 2), (8192, 4), (32768, 3), (65536, 1)];

fn hopper() -> bool {
    gpu().info().has_sm90()
}

/// Every bulk variant, every tiling, four launch settings, sizes around tile
/// edges: bit-exact, both poisons, canaries intact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bulk_tilings_and_grids_are_bit_exact() {
    if !hopper() {
        record_skip("bulk_tilings", "all", 0, "needs compute capability 9.0");
        return;
    }
    let cfgs = [
        LaunchShape::default(),
        LaunchShape { block: 32, max_grid: 1 },
        LaunchShape { block: 1024, max_grid: 7 },
        LaunchShape { block: 96, max_grid: 3 },
    ];
    // Under compute-sanitizer: two launch settings (one capped grid), fewer sizes.
    let cfgs = if common::sanitizing() { &cfgs[..2] } else { &cfgs[..] };
    let mut failures = Vec::new();
    let limit = gpu().info().shared_per_block_optin as u64;
    for v in Variant::ALL.into_iter().filter(|v| v.is_bulk() && (common::bulk_store_checked() || !v.bulk_store())) {
        let size = v.dtype().size();
        for (tile_bytes, stages) in TILINGS {
            let bulk = BulkConfig { tile_bytes, stages };
            if kernels_gpu::bulk::shared_bytes(tile_bytes, stages, v.bulk_store()) > limit {
                continue;
            }
            let t = tile_bytes as usize / size;
            for &cfg in cfgs {
                let sizes = [0, 1, 7, 9, t.saturating_sub(1), t, t + 1, 3 * t + 5, 100_003];
                for n in sizes.into_iter().filter(|&n| !common::sanitizing() || n == 9 || n == 3 * t + 5) {
                    let r = check_launch(v, Launch::Bulk(v, cfg, bulk), n, Data::Random);
                    record("bulk_tilings", &format!("{v} {bulk:?} {cfg:?}"), n, r.is_ok());
                    failures.extend(r.err());
                }
            }
            let r = check_launch(v, Launch::Bulk(v, LaunchShape::default(), bulk), 3 * t + 17, Data::Special);
            record("bulk_tilings", &format!("{v} {bulk:?} special"), 3 * t + 17, r.is_ok());
            failures.extend(r.err());
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}

/// Bad tilings and non-bulk variants are errors, not launches.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bulk_settings_are_checked() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let (a, b) = (gpu.alloc::<f32>(1024).unwrap(), gpu.alloc::<f32>(1024).unwrap());
    let mut c = gpu.alloc::<f32>(1024).unwrap();
    let run = |v: Variant, bulk: BulkConfig, c: &mut gpukern::DeviceVec<f32>| {
        gpu.studies().add_bulk_with(v, LaunchShape::default(), bulk, &a, &b, c, &stream)
    };
    if !hopper() {
        let e = run(Variant::F32Bulk, BulkConfig::default(), &mut c).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        return;
    }
    let e = run(Variant::F32x4, BulkConfig::default(), &mut c).unwrap_err();
    assert_eq!(e.to_string(), "add_f32x4: not a bulk-copy variant");
    let e = run(Variant::F32Bulk, BulkConfig { tile_bytes: 40, stages: 1 }, &mut c).unwrap_err();
    assert!(e.to_string().contains("multiple of 16"), "{e}");
    let e = run(Variant::F32Bulk, BulkConfig { tile_bytes: 65536, stages: 16 }, &mut c).unwrap_err();
    assert!(e.to_string().contains("bytes of shared memory per block"), "{e}");
    let e = run(Variant::F16Bulk, BulkConfig::default(), &mut c);
    assert!(e.is_err(), "f16 variant on f32 buffers must fail");
    // A view 4 bytes into its buffer is not 16-byte aligned.
    let e = gpu
        .studies()
        .add_bulk_with(
            Variant::F32Bulk,
            LaunchShape::default(),
            BulkConfig::default(),
            a.slice(1..).unwrap(),
            b.slice(1..).unwrap(),
            c.slice_mut(1..).unwrap(),
            &stream,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Misaligned { operand: "a", required: 16, .. }), "{e}");
    record("bulk_settings", "errors", 1024, true);
}

/// The bulk kernels' tiled walk, at many tile sizes and grids: every index once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tiled_walk_visits_every_index_exactly_once() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let cfgs = [
        LaunchShape::default(),
        LaunchShape { block: 1, max_grid: 1 },
        LaunchShape { block: 32, max_grid: 3 },
        LaunchShape { block: 1024, max_grid: 7 },
    ];
    let sizes = [0usize, 1, 3, 4, 7, 8, 9, 11, 12, 13, 2047, 2048, 2049, 16_387, 100_003];
    let mut band = gpu.alloc::<i32>(100_003 + 2 * CANARY).unwrap();
    let mut failures = Vec::new();
    for lanes in [4u32, 8] {
        // Tiles of one or three packs, and those of the unrolled kernels at 256
        // threads (2 or 4 packs per thread: 2048, 4096, 8192 elements) and more.
        for tile in [lanes as u64, 3 * lanes as u64, 2048, 4096, 8192, 16_384] {
            for cfg in cfgs {
                let what = format!("lanes={lanes} tile={tile} {cfg:?}");
                failures.extend(walk_failures(&mut band, &stream, "tiled_walk_exactly_once", &what, &sizes, |m| {
                    gpu.studies().mark_visits_tiles(lanes, tile, cfg, m, &stream)
                }));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A second pass must show as 2.
    band.fill_bits(0).unwrap();
    for _ in 0..2 {
        let marks = band.slice_mut(CANARY..CANARY + 4097).unwrap();
        gpu.studies().mark_visits_tiles(8, 2048, LaunchShape::default(), marks, &stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(marks_problem(&band.to_vec().unwrap(), 4097).as_deref(), Some("element 0 visited 2 times"));
    let e = gpu.studies().mark_visits_tiles(4, 6, LaunchShape::default(), band.view_mut(), &stream).unwrap_err();
    assert!(e.to_string().contains("multiple of 4"), "{e}");
}

/// Past 2^32 elements with the grid capped at 1000 blocks, so each block walks
/// thousands of tiles at 64-bit offsets: still every index exactly once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_tiled_walk_visits_every_index_exactly_once() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let n = (1usize << 32) + (1 << 20) + 3;
    let (free, _) = gpu.mem_info().unwrap();
    if 4 * (n + 2 * CANARY) + (2 << 30) > free {
        record_skip("huge_n_tiled_walk", "i32 marks", n, &format!("needs {} GiB of device memory", (4 * n) >> 30));
        return;
    }
    let mut band = gpu.alloc::<i32>(n + 2 * CANARY).unwrap();
    let mut failures = Vec::new();
    for (lanes, tile) in [(4u32, 2048u64), (8, 4096)] {
        band.fill_bits(0).unwrap();
        let cfg = LaunchShape { block: 256, max_grid: 1000 };
        gpu.studies()
            .mark_visits_tiles(lanes, tile, cfg, band.slice_mut(CANARY..CANARY + n).unwrap(), &stream)
            .unwrap();
        stream.synchronize().unwrap();
        let once = gpu
            .studies()
            .count_eq(CountVariant::WarpShuffle, band.slice(CANARY..CANARY + n).unwrap(), 1, &stream)
            .unwrap();
        let canaries = canaries_hold(&band, n, |&m| m == 0);
        let ok = once == n as u64 && canaries;
        record("huge_n_tiled_walk", &format!("lanes={lanes} tile={tile} grid=1000 once={once}"), n, ok);
        if !ok {
            failures.push(format!("lanes={lanes}: {once} of {n} visited once, canaries_ok={canaries}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Random lists of triples (lengths around chunk edges, empty ones, per-operand
/// offsets that break 16-byte alignment), outputs packed into one band with
/// canaries between them: one launch adds them all, bit-exact, writing nothing else.
fn many_lists<T: ReferenceAdd>() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(rand::random());
    let lengths = [0usize, 1, 7, 8, 9, 4095, 4096, 4097, 8193, 100_003];
    for (round, tensors) in [1usize, 2, 17, 300].into_iter().enumerate() {
        let lens: Vec<usize> = (0..tensors).map(|_| lengths[rng.gen_range(0..lengths.len())]).collect();
        let offs: Vec<[usize; 3]> = (0..tensors)
            .map(|_| {
                if rng.gen_bool(0.5) {
                    [0; 3]
                } else {
                    [rng.gen_range(0..8), rng.gen_range(0..8), rng.gen_range(0..8)]
                }
            })
            .collect();
        // Inputs: one buffer per operand, triples back to back with gaps of 8.
        let span = |i: usize| lens[i] + 8 + CANARY;
        let total: usize = (0..tensors).map(span).sum::<usize>() + CANARY;
        let (a, b) = common::inputs::<T>(Data::Random, total, &mut rng);
        let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        let mut out = gpu.alloc::<T>(total).unwrap();
        for poison in POISONS {
            out.fill(T::from_bits32(poison)).unwrap();
            let mut starts = Vec::new();
            let mut ops: Vec<Triple<'_, T>> = Vec::new();
            let mut rest: ViewMut<'_, T> = out.view_mut();
            let mut at = 0;
            for i in 0..tensors {
                let [oa, ob, oc] = offs[i];
                let s = at + CANARY;
                starts.push((s + oa, s + ob, s + oc));
                let (head, tail) = rest.into_split_at(span(i)).unwrap();
                let (_, mine) = head.into_split_at(CANARY + oc).unwrap();
                let (mine, _) = mine.into_split_at(lens[i]).unwrap();
                let (va, vb): (View<'_, T>, View<'_, T>) =
                    (da.slice(s + oa..s + oa + lens[i]).unwrap(), db.slice(s + ob..s + ob + lens[i]).unwrap());
                ops.push((va, vb, mine));
                rest = tail;
                at += span(i);
            }
            if round % 2 == 0 {
                gpu.add_many(ops, &stream).unwrap();
            } else {
                let plan = gpukern::AddManyPlan::new(&gpu, ops).unwrap();
                assert_eq!(plan.len(), tensors);
                let graph = plan.graph(2).unwrap();
                graph.launch(&stream).unwrap();
                stream.synchronize().unwrap();
            }
            stream.synchronize().unwrap();
            let got = out.to_vec().unwrap();
            let p = T::from_bits32(poison);
            let mut written = vec![false; total];
            let mut ok = true;
            for (i, &(sa, sb, sc)) in starts.iter().enumerate() {
                let want = reference::add(&a[sa..sa + lens[i]], &b[sb..sb + lens[i]]);
                if let Some(j) = reference::first_mismatch(&got[sc..sc + lens[i]], &want) {
                    ok = false;
                    eprintln!("{:?} triple {i} (n={}, offsets {:?}): element {j} differs", T::DTYPE, lens[i], offs[i]);
                }
                written[sc..sc + lens[i]].iter_mut().for_each(|w| *w = true);
            }
            let untouched = got.iter().zip(&written).all(|(x, &w)| w || x.same_as(p));
            record("add_many", &format!("{:?} tensors={tensors} poison={poison:#x}", T::DTYPE), total, ok && untouched);
            assert!(ok, "add_many is not bit-exact");
            assert!(untouched, "add_many wrote outside its outputs");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn add_many_is_bit_exact_f32() {
    many_lists::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn add_many_is_bit_exact_f16() {
    many_lists::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn add_many_is_bit_exact_bf16() {
    many_lists::<bf16>();
}

/// Errors of the foreach add: mismatched lengths, another Gpu's stream; empty lists are no-ops.
#[test]
#[ignore = "needs a CUDA GPU"]
fn add_many_errors() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let (a, b) = (gpu.alloc::<f16>(100).unwrap(), gpu.alloc::<f16>(99).unwrap());
    let mut c = gpu.alloc::<f16>(100).unwrap();
    let e = gpu.add_many([(a.view(), b.view(), c.view_mut())], &stream).unwrap_err();
    assert_eq!(e.to_string(), "add_many_f16: length mismatch: a has 100 elements, b has 99, out has 100");
    gpu.add_many(Vec::<Triple<'_, f16>>::new(), &stream).unwrap();
    let other = gpukern::Gpu::new(0).unwrap();
    let other_stream = other.stream().unwrap();
    let e = gpu.add_many([(a.view(), a.view(), c.view_mut())], &other_stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "stream", .. }), "{e}");
    let mut marks = gpu.alloc::<i32>(4).unwrap();
    let e = gpu.studies().mark_visits_many(5, vec![marks.view_mut()], &stream).unwrap_err();
    assert_eq!(e.to_string(), "mark_visits_many: lanes = 5; must be 4 or 8");
    record("add_many_errors", "errors", 100, true);
}

/// The foreach walk with i32 marks: lists of many lengths, every index once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn foreach_walk_visits_every_index_exactly_once() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let lens = [1usize, 0, 4095, 4096, 4097, 3, 100_003, 8, 12_289];
    let total: usize = lens.iter().map(|l| l + CANARY).sum::<usize>() + CANARY;
    let mut band = gpu.alloc::<i32>(total).unwrap();
    for lanes in [4u32, 8] {
        band.fill_bits(0).unwrap();
        let mut rest = band.view_mut();
        let mut marks = Vec::new();
        for &l in &lens {
            let (head, tail) = rest.into_split_at(CANARY + l).unwrap();
            marks.push(head.into_split_at(CANARY).unwrap().1);
            rest = tail;
        }
        gpu.studies().mark_visits_many(lanes, marks, &stream).unwrap();
        stream.synchronize().unwrap();
        let got = band.to_vec().unwrap();
        let mut at = 0;
        let mut ok = true;
        for &l in &lens {
            ok &= got[at..at + CANARY].iter().all(|&m| m == 0);
            ok &= got[at + CANARY..at + CANARY + l].iter().all(|&m| m == 1);
            at += CANARY + l;
        }
        ok &= got[at..].iter().all(|&m| m == 0);
        record("foreach_walk_exactly_once", &format!("lanes={lanes}"), total, ok);
        assert!(ok, "lanes={lanes}: a mark is not exactly 1 or a canary was written");
    }
}

/// The ceiling kernels do what they say: fill writes the value everywhere (and
/// only there), copy copies, read writes the sink exactly when the sum is the key.
#[test]
#[ignore = "needs a CUDA GPU"]
fn ceiling_kernels_are_exact() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(rand::random());
    for n in [0usize, 1, 5, 4099, 1 << 20] {
        let a: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let b: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        let mut band = gpu.alloc::<u32>(n + 2 * CANARY).unwrap();
        band.fill_bits(POISONS[0].into()).unwrap();
        gpu.studies().ceiling_fill(256, band.slice_mut(CANARY..CANARY + n).unwrap(), 7, &stream).unwrap();
        stream.synchronize().unwrap();
        let got = band.to_vec().unwrap();
        let fill_ok = got[CANARY..CANARY + n].iter().all(|&x| x == 7)
            && got[..CANARY].iter().chain(&got[CANARY + n..]).all(|&x| x == POISONS[0]);
        band.fill_bits(POISONS[0].into()).unwrap();
        gpu.studies().ceiling_copy(256, &da, band.slice_mut(CANARY..CANARY + n).unwrap(), &stream).unwrap();
        stream.synchronize().unwrap();
        let got = band.to_vec().unwrap();
        let copy_ok = got[CANARY..CANARY + n] == a[..]
            && got[..CANARY].iter().chain(&got[CANARY + n..]).all(|&x| x == POISONS[0]);
        let sum = a.iter().chain(&b).fold(0u32, |s, &x| s.wrapping_add(x));
        let mut sink = gpu.upload(&[0u32]).unwrap();
        gpu.studies().ceiling_read(256, &da, &db, &mut sink, sum.wrapping_add(1), &stream).unwrap();
        stream.synchronize().unwrap();
        let untouched = sink.to_vec().unwrap()[0] == 0;
        // Thread 0 sums the first group of 4 words of each input: with that sum
        // as the key, it (and, improbably, no other thread) writes the sink.
        let first = a.iter().take(4).chain(b.iter().take(4)).fold(0u32, |s, &x| s.wrapping_add(x));
        gpu.studies().ceiling_read(256, &da, &db, &mut sink, first, &stream).unwrap();
        stream.synchronize().unwrap();
        let hit = n < 4 || sink.to_vec().unwrap()[0] == first;
        let ok = fill_ok && copy_ok && untouched && hit;
        record(
            "ceiling_kernels",
            &format!("fill={fill_ok} copy={copy_ok} read_miss={untouched} read_hit={hit}"),
            n,
            ok,
        );
        assert!(ok, "n={n}: fill {fill_ok}, copy {copy_ok}, read miss {untouched}, read hit {hit}");
    }
    let mut c = gpu.alloc::<u32>(8).unwrap();
    let e = gpu.studies().ceiling_fill(256, c.slice_mut(1..).unwrap(), 0, &stream).unwrap_err();
    assert!(matches!(e, Error::Misaligned { required: 16, .. }), "{e}");
}
