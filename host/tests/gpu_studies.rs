//! GPU checks of the seed-003 families: matrix product (against f64), counting
//! (exact), strided copy and transpose (exact), fusion (bit-exact against the
//! unfused kernels and the CPU).

mod common;

use common::{gpu, record};
use gpukern::{CountVariant, Error, MatmulVariant, TransposeVariant, Variant};
use rand::{Rng, SeedableRng};

fn rng() -> rand::rngs::SmallRng {
    rand::rngs::SmallRng::seed_from_u64(rand::random())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matmul_matches_f64_reference() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut r = rng();
    let mut failures = Vec::new();
    // Under compute-sanitizer (run.sh sanitize) the 4096³ product would take hours.
    let sanitizing = std::env::var_os("GPUKERN_SANITIZE").is_some();
    for (m, n, k) in [(1, 1, 1), (17, 33, 65), (64, 64, 64), (100, 37, 129), (257, 511, 33), (4096, 4096, 4096)] {
        if sanitizing && m * n * k > 1 << 27 {
            continue;
        }
        let a: Vec<f32> = (0..m * k).map(|_| r.gen_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..k * n).map(|_| r.gen_range(-1.0..1.0)).collect();
        let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        // Every row for small shapes; 16 random full rows of the 4096³ product.
        let rows: Vec<usize> =
            if m * n * k > 1 << 27 { (0..16).map(|_| r.gen_range(0..m)).collect() } else { (0..m).collect() };
        for &v in MatmulVariant::ALL {
            let mut dc = gpu.alloc::<f32>(m * n).unwrap();
            dc.fill_bits(0x7fc0_dead).unwrap(); // NaN poison: any unwritten element fails the norm
            gpu.studies()
                .matmul(v, da.view(), db.view(), dc.view_mut(), (m as u32, n as u32, k as u32), &stream)
                .unwrap();
            stream.synchronize().unwrap();
            let c = dc.to_vec().unwrap();
            let err = gpukern::reference::matmul_rel_error(&a, &b, &c, (m, n, k), &rows);
            let ok = err <= 1e-5;
            record("matmul", &format!("{v:?} {m}x{n}x{k} rel_err={err:.2e}"), m * n, ok);
            if !ok {
                failures.push(format!("{v:?} {m}x{n}x{k}: relative error {err:.3e} > 1e-5"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matmul_rejects_short_operands() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let (a, b) = (gpu.upload(&[1.0f32; 6]).unwrap(), gpu.upload(&[1.0f32; 6]).unwrap());
    let mut c = gpu.alloc::<f32>(3).unwrap();
    let e =
        gpu.studies().matmul(MatmulVariant::Tiled16, a.view(), b.view(), c.view_mut(), (2, 2, 3), &stream).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    assert_eq!(e.to_string(), "matmul_tiled16: c has 3 elements, needs 4");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn count_eq_is_exact_at_every_match_rate() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut r = rng();
    let key = 7;
    for n in [0usize, 1, 1000, (1 << 20) + 7, 1 << 24] {
        for rate in [0.0, 0.01, 1.0] {
            let x: Vec<i32> = (0..n).map(|_| if r.gen_bool(rate) { key } else { r.gen_range(8..1_000_000) }).collect();
            let want = x.iter().filter(|&&v| v == key).count() as u64;
            let dx = gpu.upload(&x).unwrap();
            for &v in CountVariant::ALL {
                let got = gpu.studies().count_eq(v, dx.view(), key, &stream).unwrap();
                record("count_eq", &format!("{v:?} rate={rate}"), n, got == want);
                assert_eq!(got, want, "{v:?} n={n} rate={rate}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_copy_copies_every_element_at_every_stride() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let n = 1 << 20;
    let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dsrc = gpu.upload(&src).unwrap();
    let mut dst = gpu.alloc::<f32>(n).unwrap();
    // 65_535 (the largest, one grid row per column) over the first 16 · 65_535
    // elements; the rest of dst must keep its poison.
    for stride in [1u64, 2, 4, 8, 16, 32, 65_535] {
        let len = n - n % stride as usize;
        dst.fill_bits(0xdead_beef).unwrap();
        gpu.studies().copy_strided(dsrc.slice(..len).unwrap(), dst.slice_mut(..len).unwrap(), stride, &stream).unwrap();
        stream.synchronize().unwrap();
        let got = dst.to_vec().unwrap();
        let ok = got[..len] == src[..len] && got[len..].iter().all(|x| x.to_bits() == 0xdead_beef);
        record("copy_strided", &format!("stride {stride}"), len, ok);
        assert!(ok, "stride {stride}");
    }
    let e = gpu
        .studies()
        .copy_strided(dsrc.slice(..1 << 17).unwrap(), dst.slice_mut(..1 << 17).unwrap(), 1 << 16, &stream)
        .unwrap_err();
    assert_eq!(e.to_string(), "copy_strided: stride 65536 must be at most 65535 (one grid row per column)");
    let e =
        gpu.studies().copy_strided(dsrc.slice(..10).unwrap(), dst.slice_mut(..10).unwrap(), 3, &stream).unwrap_err();
    assert_eq!(e.to_string(), "copy_strided: stride 3 must be at least 1 and divide n = 10");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transpose_is_exact_for_any_shape() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    for (rows, cols) in [(1usize, 1usize), (31, 33), (32, 32), (1000, 517), (4096, 4096)] {
        let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let mut want = vec![0.0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                want[c * rows + r] = input[r * cols + c];
            }
        }
        let din = gpu.upload(&input).unwrap();
        let mut dout = gpu.alloc::<f32>(rows * cols + 64).unwrap();
        for &v in TransposeVariant::ALL {
            dout.fill_bits(0xdead_beef).unwrap();
            gpu.studies()
                .transpose(v, din.view(), dout.slice_mut(..rows * cols).unwrap(), (rows as u32, cols as u32), &stream)
                .unwrap();
            stream.synchronize().unwrap();
            let got = dout.to_vec().unwrap();
            let ok = got[..rows * cols] == want[..] && got[rows * cols..].iter().all(|x| x.to_bits() == 0xdead_beef);
            record("transpose", &format!("{v:?} {rows}x{cols}"), rows * cols, ok);
            assert!(ok, "{v:?} {rows}x{cols}");
        }
    }
}

/// Fused and unfused give the same bits, and both equal the CPU with each
/// operation rounded once (no FMA anywhere).
#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_kernels_match_unfused_bit_for_bit() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut r = rng();
    let n = (1 << 20) + 3;
    let special = [0.0f32, -0.0, f32::MIN_POSITIVE, 1e-45, f32::MAX, f32::INFINITY, f32::NAN, 1.0, -3.5];
    let gen = |r: &mut rand::rngs::SmallRng| -> Vec<f32> {
        (0..n).map(|i| if i < 81 { special[i % 9] } else { r.gen_range(-1e3f32..1e3) }).collect()
    };
    let (a, b) = (gen(&mut r), gen(&mut r));
    let alpha = 1.000_000_1f32;
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let (mut t, mut unfused, mut fused) =
        (gpu.alloc::<f32>(n).unwrap(), gpu.alloc::<f32>(n).unwrap(), gpu.alloc::<f32>(n).unwrap());
    let same =
        |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()));

    // (a + b) * alpha
    gpu.studies().add(Variant::F32, &da, &db, &mut t, &stream).unwrap();
    gpu.studies().scale(t.view(), alpha, unfused.view_mut(), &stream).unwrap();
    gpu.studies().add_scale(da.view(), db.view(), alpha, fused.view_mut(), &stream).unwrap();
    stream.synchronize().unwrap();
    let cpu: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (x + y) * alpha).collect();
    let (u, f) = (unfused.to_vec().unwrap(), fused.to_vec().unwrap());
    record("fusion", "add_scale fused == unfused == cpu", n, same(&u, &f) && same(&f, &cpu));
    assert!(same(&u, &f), "add_scale: fused differs from unfused");
    assert!(same(&f, &cpu), "add_scale: differs from the CPU");

    // alpha * x + b
    gpu.studies().scale(da.view(), alpha, t.view_mut(), &stream).unwrap();
    gpu.studies().add(Variant::F32, &t, &db, &mut unfused, &stream).unwrap();
    gpu.studies().saxpy(alpha, da.view(), db.view(), fused.view_mut(), &stream).unwrap();
    stream.synchronize().unwrap();
    let cpu: Vec<f32> = a.iter().zip(&b).map(|(x, y)| alpha * x + y).collect();
    let (u, f) = (unfused.to_vec().unwrap(), fused.to_vec().unwrap());
    record("fusion", "saxpy fused == unfused == cpu", n, same(&u, &f) && same(&f, &cpu));
    assert!(same(&u, &f), "saxpy: fused differs from unfused");
    assert!(same(&f, &cpu), "saxpy: differs from the CPU");
}
