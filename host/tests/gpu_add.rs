//! Bit-exact GPU checks of every add variant against the CPU reference.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{
    check_all_sizes, check_explicit, check_variant, gpu, marks_problem, record, walk_failures, Data, Launch, CANARY,
};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::{Dtype, Error, LaunchShape, Variant};
use rand::SeedableRng;

macro_rules! variant_tests {
    ($($test:ident => $v:expr),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $test() {
            check_variant(stringify!($test), $v, LaunchShape::default());
        }
    )*};
}

variant_tests! {
    v1_add_f32_is_bit_exact => Variant::F32,
    v2_add_f32x4_is_bit_exact => Variant::F32x4,
    v3_add_f16_is_bit_exact => Variant::F16,
    v4_add_f16x2_is_bit_exact => Variant::F16x2,
    v5_add_f16x8_is_bit_exact => Variant::F16x8,
    v6_add_f16x8_pack_is_bit_exact => Variant::F16x8Pack,
    add_bf16_is_bit_exact => Variant::Bf16,
    add_bf16x2_is_bit_exact => Variant::Bf16x2,
    add_bf16x8_pack_is_bit_exact => Variant::Bf16x8Pack,
    add_f32x4_cs_is_bit_exact => Variant::F32x4Cs,
    add_f16x8_cs_is_bit_exact => Variant::F16x8Cs,
    add_bf16x8_cs_is_bit_exact => Variant::Bf16x8Cs,
    add_f32x4_u2_is_bit_exact => Variant::F32x4U2,
    add_f32x4_u4_is_bit_exact => Variant::F32x4U4,
    add_f16x8_u2_is_bit_exact => Variant::F16x8U2,
    add_f16x8_u4_is_bit_exact => Variant::F16x8U4,
    add_bf16x8_u2_is_bit_exact => Variant::Bf16x8U2,
    add_bf16x8_u4_is_bit_exact => Variant::Bf16x8U4,
    add_f32x4_nc_is_bit_exact => Variant::F32x4Nc,
    add_f16x8_nc_is_bit_exact => Variant::F16x8Nc,
    add_bf16x8_nc_is_bit_exact => Variant::Bf16x8Nc,
    add_f32x4_l2_is_bit_exact => Variant::F32x4L2,
    add_f16x8_l2_is_bit_exact => Variant::F16x8L2,
    add_bf16x8_l2_is_bit_exact => Variant::Bf16x8L2,
    add_f32_bulk_is_bit_exact => Variant::F32Bulk,
    add_f16_bulk_is_bit_exact => Variant::F16Bulk,
    add_bf16_bulk_is_bit_exact => Variant::Bf16Bulk,
    add_f32_bulk_st_is_bit_exact => Variant::F32BulkSt,
    add_f16_bulk_st_is_bit_exact => Variant::F16BulkSt,
    add_bf16_bulk_st_is_bit_exact => Variant::Bf16BulkSt,
}

/// A captured graph of adds gives the same bits as single launches.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_replay_is_bit_exact() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let n = 100_003;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(rand::random());
    let (a, b) = common::inputs::<f16>(Data::Random, n, &mut rng);
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mut out = gpu.alloc::<f16>(n).unwrap();
    out.fill(f16::from_bits(common::POISONS[0] as u16)).unwrap();
    {
        let ops = vec![(da.view(), db.view(), out.view_mut())];
        let graph = gpu.studies().add_graph(Variant::F16x8Pack, LaunchShape::default(), ops, 10).unwrap();
        assert_eq!(graph.launches(), 10);
        graph.launch(&stream).unwrap();
        graph.launch(&stream).unwrap();
        stream.synchronize().unwrap();
    }
    let ok = reference::first_mismatch(&out.to_vec().unwrap(), &reference::add(&a, &b)).is_none();
    record("graph_replay", "f16x8_pack x10 x2", n, ok);
    assert!(ok);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_choice_is_bit_exact_for_every_dtype() {
    check_all_sizes::<f32>("auto_f32", Launch::Auto);
    check_all_sizes::<f16>("auto_f16", Launch::Auto);
    check_all_sizes::<bf16>("auto_bf16", Launch::Auto);
}

/// Block sizes from 1 to 1024 and grids capped far below what n needs: the
/// grid-stride loops must still cover every element exactly once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn odd_blocks_and_capped_grids_cover_every_element() {
    let cfgs = [
        LaunchShape { block: 1, max_grid: 3 },
        LaunchShape { block: 32, max_grid: 1 },
        LaunchShape { block: 100, max_grid: 7 },
        LaunchShape::with_block(1024),
        LaunchShape::with_block(96),
    ];
    let mut failures = Vec::new();
    for v in Variant::ALL.into_iter().filter(|&v| common::runs_here("odd_blocks_and_capped_grids", v)) {
        for cfg in cfgs {
            for n in [0usize, 1, 9, 4097, 100_003] {
                let r = check_explicit(v, cfg, n, Data::Random);
                record("odd_blocks_and_capped_grids", &format!("{v} {cfg:?}"), n, r.is_ok());
                failures.extend(r.err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Views starting 0..16 elements into their buffers, independently per operand:
/// explicit vector variants refuse misaligned operands by name, and the automatic
/// choice stays bit-exact (peeling a head or falling back).
fn misaligned_views<T: ReferenceAdd>() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let n = 10_007usize;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(rand::random());
    let (a, b) = common::inputs::<T>(Data::Random, n + 16, &mut rng);
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mut out = gpu.alloc::<T>(n + 32).unwrap();
    let mut cases = 0;
    for (oa, ob, oc) in (0..16).map(|o| (o, o, o)).chain([(0, 1, 0), (0, 0, 3), (4, 0, 8), (8, 8, 0), (2, 6, 10)]) {
        let (va, vb) = (da.slice(oa..oa + n).unwrap(), db.slice(ob..ob + n).unwrap());
        // Explicit widest variant: error unless all three are aligned for it.
        let widest = Variant::widest(T::DTYPE);
        let aligned = |off: usize| (off * T::DTYPE.size()).is_multiple_of(widest.align());
        let r = gpu.studies().add(widest, va, vb, out.slice_mut(oc..oc + n).unwrap(), &stream);
        match (aligned(oa) && aligned(ob) && aligned(oc), r) {
            (true, Ok(())) => {}
            (false, Err(Error::Misaligned { operand, required, .. })) => {
                let first_bad = if !aligned(oa) {
                    "a"
                } else if !aligned(ob) {
                    "b"
                } else {
                    "out"
                };
                assert_eq!(operand, first_bad);
                assert_eq!(required, widest.align());
            }
            (al, r) => panic!("{widest} offsets ({oa},{ob},{oc}) aligned={al}: unexpected {r:?}"),
        }
        // Automatic choice: always works, bit-exact, and writes only its range.
        out.fill(T::from_bits32(common::POISONS[0])).unwrap();
        gpu.binary(gpukern::BinaryOp::Add, va, vb, out.slice_mut(oc..oc + n).unwrap(), &stream).unwrap();
        stream.synchronize().unwrap();
        let got = out.to_vec().unwrap();
        let want = reference::add(&a[oa..oa + n], &b[ob..ob + n]);
        let ok = reference::first_mismatch(&got[oc..oc + n], &want).is_none();
        let poison = T::from_bits32(common::POISONS[0]);
        let untouched = got[..oc].iter().chain(&got[oc + n..]).all(|x| x.same_as(poison));
        record("misaligned_views", &format!("{:?} offsets ({oa},{ob},{oc})", T::DTYPE), n, ok && untouched);
        assert!(ok, "auto at offsets ({oa},{ob},{oc}) is not bit-exact");
        assert!(untouched, "auto at offsets ({oa},{ob},{oc}) wrote outside its output view");
        cases += 1;
    }
    assert_eq!(cases, 21);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_views_f32() {
    misaligned_views::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_views_f16() {
    misaligned_views::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_views_bf16() {
    misaligned_views::<bf16>();
}

/// The walk every add kernel uses, for each lane width and launch settings from
/// one thread in one block up, at sizes around every group, warp and block edge:
/// each element is visited exactly once and nothing outside is touched.
#[test]
#[ignore = "needs a CUDA GPU"]
fn grid_stride_walk_visits_every_index_exactly_once() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let cfgs = [
        LaunchShape::default(),
        LaunchShape { block: 1, max_grid: 1 },
        LaunchShape { block: 1, max_grid: 3 },
        LaunchShape { block: 32, max_grid: 1 },
        LaunchShape { block: 100, max_grid: 7 },
        LaunchShape::with_block(1024),
    ];
    let sizes = [0usize, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 127, 128, 129, 255, 256, 257, 4095, 4096, 4097, 100_003];
    let mut band = gpu.alloc::<i32>(100_003 + 2 * CANARY).unwrap();
    let mut failures = Vec::new();
    for (_, lanes) in kernels_gpu::verify::MARK_VISITS {
        for cfg in cfgs {
            let what = format!("lanes={lanes} {cfg:?}");
            failures.extend(walk_failures(&mut band, &stream, "walk_visits_exactly_once", &what, &sizes, |m| {
                gpu.studies().mark_visits(lanes, cfg, m, &stream)
            }));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The check must notice a double visit: mark twice.
    let n = 4097;
    band.fill_bits(0).unwrap();
    for _ in 0..2 {
        gpu.studies()
            .mark_visits(8, LaunchShape::default(), band.slice_mut(CANARY..CANARY + n).unwrap(), &stream)
            .unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(marks_problem(&band.to_vec().unwrap(), n).as_deref(), Some("element 0 visited 2 times"));
    // Bad settings are errors, not launches.
    let e = gpu.studies().mark_visits(3, LaunchShape::default(), band.view_mut(), &stream).unwrap_err();
    assert_eq!(e.to_string(), "mark_visits: lanes = 3; must be 1, 2, 4 or 8");
    let e = gpu.studies().mark_visits(1, LaunchShape::with_block(0), band.view_mut(), &stream).unwrap_err();
    assert!(matches!(e, Error::BlockSize { kernel: "mark_visits_1", .. }), "{e}");
}

/// The unrolled kernels' walk (tiles of U × block packs, the partial tile pack by
/// pack, the last elements by thread 0 of its block) at clamped and full grids:
/// every index exactly once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn unrolled_walk_visits_every_index_exactly_once() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let cfgs = [
        LaunchShape::default(),
        LaunchShape { block: 1, max_grid: 1 },
        LaunchShape { block: 32, max_grid: 3 },
        LaunchShape { block: 100, max_grid: 7 },
        LaunchShape::with_block(128),
        LaunchShape::with_block(1024),
    ];
    let sizes = [0usize, 1, 3, 4, 7, 8, 9, 15, 17, 255, 2047, 2048, 2049, 4095, 4096, 4097, 8193, 65_541, 100_003];
    let mut band = gpu.alloc::<i32>(100_003 + 2 * CANARY).unwrap();
    let mut failures = Vec::new();
    for (_, lanes, unroll) in kernels_gpu::verify::MARK_UNROLLED {
        for cfg in cfgs {
            let what = format!("lanes={lanes} unroll={unroll} {cfg:?}");
            failures.extend(walk_failures(&mut band, &stream, "unrolled_walk_exactly_once", &what, &sizes, |m| {
                gpu.studies().mark_visits_unrolled(lanes, unroll, cfg, m, &stream)
            }));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A second pass must show as 2, and bad settings are errors.
    band.fill_bits(0).unwrap();
    for _ in 0..2 {
        let marks = band.slice_mut(CANARY..CANARY + 4097).unwrap();
        gpu.studies().mark_visits_unrolled(8, 2, LaunchShape::default(), marks, &stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(marks_problem(&band.to_vec().unwrap(), 4097).as_deref(), Some("element 0 visited 2 times"));
    let e = gpu.studies().mark_visits_unrolled(8, 3, LaunchShape::default(), band.view_mut(), &stream).unwrap_err();
    assert_eq!(e.to_string(), "mark_visits_unrolled: lanes = 8, unroll = 3; must be 4 or 8, and 2 or 4");
}

/// Several threads, each with its own stream on the one shared Gpu, run mixed
/// variants at once and all get exact results.
#[test]
#[ignore = "needs a CUDA GPU"]
fn concurrent_streams_on_one_context() {
    std::thread::scope(|s| {
        for t in 0..6 {
            s.spawn(move || {
                let here = Variant::ALL.into_iter().filter(|&v| common::runs_here("concurrent_streams", v));
                for (i, v) in here.cycle().skip(t).take(30).enumerate() {
                    let n = 100_000 + 37 * i + t;
                    let r = check_explicit(v, LaunchShape::default(), n, Data::Random);
                    record("concurrent_streams", &format!("thread {t} {v}"), n, r.is_ok());
                    r.unwrap();
                }
            });
        }
    });
}

/// README example, as a test.
#[test]
#[ignore = "needs a CUDA GPU"]
fn readme_example_adds_two_f16_vectors() {
    let gpu = gpukern::Gpu::new(0).unwrap();
    let a: Vec<f16> = (0..1000).map(|i| f16::from_f32(i as f32 * 0.5)).collect();
    let b: Vec<f16> = (0..1000).map(|i| f16::from_f32(1.0 - i as f32)).collect();
    let c = gpukern::blocking::binary(&gpu, gpukern::BinaryOp::Add, &a, &b).unwrap();
    assert_eq!(reference::first_mismatch(&c, &reference::add(&a, &b)), None);
    assert_eq!(c[10], f16::from_f32(-4.0));
}

/// The automatic choice on sm_90 takes the bulk variant for large aligned
/// operands and stays exact; small ones keep the 128-bit kernels.
#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_takes_bulk_for_large_aligned_adds() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    for dtype in Dtype::ALL {
        let n = gpukern::AutoPlan::BULK_MIN + 77;
        if !common::bulk_store_checked() && gpukern::AutoPlan::new(dtype, n, gpu.info().has_sm90()).variant.bulk_store()
        {
            continue;
        }
        let r = match dtype {
            Dtype::F32 => check_auto::<f32>(&gpu, &stream, n),
            Dtype::F16 => check_auto::<f16>(&gpu, &stream, n),
            Dtype::Bf16 => check_auto::<bf16>(&gpu, &stream, n),
        };
        let want = gpukern::AutoPlan::new(dtype, n, gpu.info().has_sm90()).variant;
        assert!(
            !gpu.info().has_sm90() || dtype == Dtype::Bf16 || want.is_bulk(),
            "large f32/f16 adds take a bulk kernel on sm_90"
        );
        record("auto_bulk", &format!("{dtype:?} chose {r}"), n, r == want);
        assert_eq!(r, want);
        let small = gpukern::AutoPlan::new(dtype, 1000, gpu.info().has_sm90()).variant;
        let packed_bf16 = gpu.info().has_sm90() && dtype == Dtype::Bf16;
        assert_eq!(small, if packed_bf16 { Variant::Bf16x8Sm90 } else { Variant::widest(dtype) });
    }
}

fn check_auto<T: ReferenceAdd>(gpu: &gpukern::Gpu, stream: &gpukern::Stream, n: usize) -> Variant {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(rand::random());
    let (a, b) = common::inputs::<T>(Data::Random, n, &mut rng);
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mut c = gpu.alloc::<T>(n).unwrap();
    // The plan of the call, asked apart (the stream's PDL setting included):
    // its kernel, or the kernel whose PDL twin runs.
    let add = gpukern::Call::binary(gpukern::BinaryOp::Add, &da, &db, &c);
    let plan = gpu.plan(add, stream, &gpukern::Opts::auto()).unwrap();
    gpu.binary(gpukern::BinaryOp::Add, &da, &db, &mut c, stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(reference::first_mismatch(&c.to_vec().unwrap(), &reference::add(&a, &b)), None);
    assert_eq!(plan.pdl, plan.kernel.ends_with("_pdl"), "{plan:?}");
    Variant::from_name(plan.kernel.trim_end_matches("_pdl")).expect("an add kernel")
}
