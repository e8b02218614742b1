//! Bit-exact GPU checks of every add variant against the CPU reference.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{check_all_sizes, check_explicit, check_variant, gpu, record, Data, Launch};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::{Error, LaunchConfig, Variant};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

macro_rules! variant_tests {
    ($($test:ident => $v:expr),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $test() {
            check_variant(stringify!($test), $v, LaunchConfig::default());
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
    out.fill_bits(common::POISONS[0]).unwrap();
    {
        let ops = vec![(da.view(), db.view(), out.view_mut())];
        let graph = gpu.add_graph(Variant::F16x8Pack, LaunchConfig::default(), ops, 10).unwrap();
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
        LaunchConfig { block: 1, max_grid: 3 },
        LaunchConfig { block: 32, max_grid: 1 },
        LaunchConfig { block: 100, max_grid: 7 },
        LaunchConfig::with_block(1024),
        LaunchConfig::with_block(96),
    ];
    let mut failures = Vec::new();
    for v in Variant::ALL {
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
        let r = gpu.add(widest, va, vb, out.slice_mut(oc..oc + n).unwrap(), &stream);
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
        out.fill_bits(common::POISONS[0]).unwrap();
        gpu.add_auto(va, vb, out.slice_mut(oc..oc + n).unwrap(), &stream).unwrap();
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

/// n > 2^31: every variant of the dtype, checked in full on the device against an
/// uploaded CPU reference, and at the first, middle and last million on the host.
fn huge<T: ReferenceAdd>() {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n: usize = (1 << 31) + (1 << 20) + 3;
    let gpu = gpu();
    let bytes = n * T::DTYPE.size();
    let (free, _) = gpu.mem_info().unwrap();
    if free < 4 * bytes + (1 << 30) {
        // Reported, never counted as a pass in the record.
        record(
            "huge",
            &format!("{:?} SKIPPED: {} GiB free, {} GiB needed", T::DTYPE, free >> 30, (4 * bytes) >> 30),
            n,
            false,
        );
        eprintln!("SKIP huge {:?}: needs {} bytes, {} free", T::DTYPE, 4 * bytes, free);
        return;
    }
    let seed: u64 = rand::random();
    let chunk = 1 << 22;
    let gen = |salt: u64| -> Vec<T> {
        let mut v = vec![T::from_bits32(0); n];
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
    let mut want = vec![T::from_bits32(0); n];
    want.par_chunks_mut(chunk).enumerate().for_each(|(i, w)| {
        let s = i * chunk;
        for (j, x) in w.iter_mut().enumerate() {
            *x = T::reference_add(a[s + j], b[s + j]);
        }
    });
    let stream = gpu.stream().unwrap();
    let (da, db, dwant) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap(), gpu.upload(&want).unwrap());
    drop((a, b));
    let mut out = gpu.alloc::<T>(n).unwrap();
    let million = 1 << 20;
    for v in Variant::of_dtype(T::DTYPE) {
        out.fill_bits(common::POISONS[0]).unwrap();
        gpu.add(v, &da, &db, &mut out, &stream).unwrap();
        stream.synchronize().unwrap();
        let bad = gpu.count_mismatches(out.view(), dwant.view(), &stream).unwrap();
        let mut spot_ok = true;
        for start in [0, n / 2, n - million] {
            let got = out.slice(start..start + million).unwrap().to_vec().unwrap();
            spot_ok &= reference::first_mismatch(&got, &want[start..start + million]).is_none();
        }
        record("huge", &format!("{v} device mismatches={bad} spot_ok={spot_ok}"), n, bad == 0 && spot_ok);
        assert_eq!(bad, 0, "{v}: {bad} mismatching elements at n = {n}");
        assert!(spot_ok, "{v}: host spot check failed at n = {n}");
    }
    // The comparison kernel itself must notice a difference.
    out.slice_mut(n - 1..n).unwrap().copy_from(&[T::from_bits32(want[n - 1].to_bits32() ^ 1)]).unwrap();
    assert_eq!(gpu.count_mismatches(out.view(), dwant.view(), &stream).unwrap(), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_over_2_31_f32() {
    huge::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_over_2_31_f16() {
    huge::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_over_2_31_bf16() {
    huge::<bf16>();
}

/// Several threads, each with its own stream on the one shared Gpu, run mixed
/// variants at once and all get exact results.
#[test]
#[ignore = "needs a CUDA GPU"]
fn concurrent_streams_on_one_context() {
    std::thread::scope(|s| {
        for t in 0..6 {
            s.spawn(move || {
                for (i, v) in Variant::ALL.into_iter().cycle().skip(t).take(12).enumerate() {
                    let n = 100_000 + 37 * i + t;
                    let r = check_explicit(v, LaunchConfig::default(), n, Data::Random);
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
    let c = gpu.add_host(&a, &b).unwrap();
    assert_eq!(reference::first_mismatch(&c, &reference::add(&a, &b)), None);
    assert_eq!(c[10], f16::from_f32(-4.0));
}
