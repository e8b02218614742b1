//! CPU tests of the norms' reference (`gpukern::reference::norms`, the bits
//! the GPU tests compare with): its error against f64 per operation and
//! dtype over the test shapes and every plan's order, held to the bounds the
//! README states; and the replay's structure (a split row and a whole row
//! agree within those bounds, a repeated replay gives the same bits).

use gpukern::half::{bf16, f16};
use gpukern::reference::norms as rn;
use gpukern::{Dtype, Element, Norm, NormOp, NormPlan, NormStrategy, Rows};
use rand::{Rng, SeedableRng};

/// Bound on the error in units of the last place of the output type (`y`
/// only; `add_rms_norm`'s `h` is one rounding), per operation: f32, then f16
/// and bf16 (their final rounding of an f32 result a few f32 ulps off).
/// Measured maxima are printed by `reference_error_against_f64`.
fn bound(op: NormOp, dtype: Dtype) -> f64 {
    let (f32b, narrow) = match op {
        NormOp::Rms | NormOp::AddRms => (8.0, 0.6),
        NormOp::Layer | NormOp::AddLayer => (16.0, 0.6),
        NormOp::Softmax => (8.0, 0.6),
        NormOp::LogSoftmax => (2.0, 0.6),
    };
    if dtype == Dtype::F32 {
        f32b
    } else {
        narrow
    }
}

/// Where the error is measured (see `ulp_error`): in ulps of the output, or
/// of `max(|output|, 1)` for the two operations whose outputs near zero come
/// from cancellation.
fn floor(op: NormOp) -> f64 {
    match op {
        NormOp::Layer | NormOp::AddLayer | NormOp::LogSoftmax => 1.0,
        _ => 0.0,
    }
}

fn plans(dtype: Dtype, cols: usize) -> Vec<NormPlan> {
    let mut p = vec![NormPlan::auto(dtype, cols)];
    p.push(NormPlan { strategy: NormStrategy::Split, block: 32, k: 1 });
    p.push(NormPlan { strategy: NormStrategy::Split, block: 512, k: 2 });
    p.retain(|p| p.check(NormOp::Rms, dtype, cols).is_ok());
    p
}

/// Max ulp error of `y` over rows of random values in ±`scale`.
fn max_error<T: Element>(op: NormOp, rows: usize, cols: usize, scale: f32, seed: u64) -> f64 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut gen = |n: usize, s: f32| -> Vec<T> { (0..n).map(|_| rn::narrow(rng.gen_range(-s..s))).collect() };
    let (x, r, w, b) = (gen(rows * cols, scale), gen(rows * cols, scale), gen(cols, 2.0), gen(cols, 2.0));
    let hop: Norm<&[T], ()> = match op {
        NormOp::Rms => Norm::rms(&w, 1e-6),
        NormOp::AddRms => Norm::add_rms(&r, (), &w, 1e-6),
        NormOp::Layer => Norm::layer(&w, &b, 1e-6),
        NormOp::AddLayer => Norm::add_layer(&r, (), &w, &b, 1e-6),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    let shape = Rows::contiguous(rows, cols);
    let exact = rn::norm_f64(hop, &x, shape);
    let mut worst = 0.0f64;
    for p in plans(T::DTYPE, cols) {
        let got = rn::norm(hop, &x, shape, p.order(T::DTYPE, cols));
        assert_eq!(got, rn::norm(hop, &x, shape, p.order(T::DTYPE, cols)), "a replay is deterministic");
        for (g, e) in got.y.iter().zip(&exact) {
            worst = worst.max(rn::ulp_error(*g, *e, floor(op)));
        }
    }
    worst
}

fn measure(dtype: Dtype, op: NormOp) -> f64 {
    let mut worst = 0.0f64;
    for (rows, cols, seed) in [(16, 1, 1), (16, 31, 2), (8, 1000, 3), (4, 4097, 4), (2, 40_000, 5)] {
        for scale in [4.0f32, 100.0] {
            let e = match dtype {
                Dtype::F32 => max_error::<f32>(op, rows, cols, scale, seed),
                Dtype::F16 => max_error::<f16>(op, rows, cols, scale.min(8.0), seed),
                Dtype::Bf16 => max_error::<bf16>(op, rows, cols, scale, seed),
            };
            worst = worst.max(e);
        }
    }
    worst
}

#[test]
fn reference_error_against_f64() {
    let mut failures = Vec::new();
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            let e = measure(dtype, op);
            println!("max error {:>13} {:>5}: {e:.3} ulp (bound {})", op.name(), dtype.name(), bound(op, dtype));
            if e > bound(op, dtype) {
                failures.push(format!("{} {}: {e} ulp", op.name(), dtype.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn split_and_whole_rows_agree_closely() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let cols = 10_000;
    let x: Vec<f32> = (0..cols).map(|_| rng.gen_range(-3.0f32..3.0)).collect();
    let w = vec![1.0f32; cols];
    let shape = Rows::contiguous(1, cols);
    for op in [Norm::rms(&w[..], 0.0), Norm::Softmax, Norm::layer(&w[..], &w[..], 0.0)] {
        let whole = rn::norm(op, &x, shape, NormPlan::auto(Dtype::F32, cols).order(Dtype::F32, cols));
        let split = NormPlan { strategy: NormStrategy::Split, block: 32, k: 1 };
        let parts = rn::norm(op, &x, shape, split.order(Dtype::F32, cols));
        for (a, b) in whole.y.iter().zip(&parts.y) {
            assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{:?}: {a} vs {b}", op.op());
        }
    }
}

#[test]
fn softmax_does_not_overflow_near_the_largest_values() {
    let x = [f16::MAX, f16::MAX, f16::from_f32(-65504.0), f16::from_f32(60000.0)];
    let y = rn::norm(Norm::Softmax, &x, Rows::contiguous(1, 4), NormPlan::auto(Dtype::F16, 4).order(Dtype::F16, 4)).y;
    assert_eq!(y.iter().map(|v| v.to_f32()).collect::<Vec<_>>(), [0.5, 0.5, 0.0, 0.0]);
}
