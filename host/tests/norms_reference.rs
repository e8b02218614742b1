//! CPU tests of the norms' reference (`gpukern::reference::norms`, the bits
//! the GPU tests compare with): its error against f64 per operation and
//! dtype on rows of 1 to 40,000 elements, drawn on a grid and with full
//! precision, over every plan's order, held to the bounds of
//! `norms_error::bound` (the longest rows: `norms_bounds.rs`); and the
//! replay's structure (a split row and a whole row agree closely, a
//! repeated replay gives the same bits).

mod norms_error;

use gpukern::half::f16;
use gpukern::reference::norms as rn;
use gpukern::{Dtype, Norm, NormOp, NormPlan, NormStrategy, Rows};
use rand::{Rng, SeedableRng};

/// `(rows, cols, seed)`: the short rows.
const SHAPES: [(usize, usize, u64); 5] = [(16, 1, 1), (16, 31, 2), (8, 1000, 3), (4, 4097, 4), (2, 40_000, 5)];

fn check(ops: &[NormOp]) {
    let failures: Vec<String> =
        ops.iter().flat_map(|&op| norms_error::check(op, |_| SHAPES.to_vec(), |_| true)).collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn rms_norm_error_against_f64() {
    check(&[NormOp::Rms, NormOp::AddRms]);
}

#[test]
fn layer_norm_error_against_f64() {
    check(&[NormOp::Layer, NormOp::AddLayer]);
}

#[test]
fn softmax_error_against_f64() {
    check(&[NormOp::Softmax, NormOp::LogSoftmax]);
}

#[test]
fn a_replay_is_deterministic() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let cols = 4097;
    let x: Vec<f32> = norms_error::draw(&mut rng, cols, (-4.0, 4.0), norms_error::Draw::Full);
    let shape = Rows::contiguous(1, cols);
    for p in norms_error::plans(Dtype::F32, cols) {
        let o = p.order(Dtype::F32, cols);
        assert_eq!(rn::norm(Norm::Softmax, &x, shape, o), rn::norm(Norm::Softmax, &x, shape, o));
    }
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

#[test]
fn f32_softmax_error_in_100_is_the_rounding_of_x_minus_max() {
    use norms_error::{measure, Case, Draw};
    let case = Case { op: NormOp::Softmax, rows: 4, cols: 1000, range: (-100.0, 100.0), draw: Draw::Full, seed: 6 };
    let w = measure::<f32>(&[NormPlan::auto(Dtype::F32, 1000)], case)[0];
    // Against f64 from the exact inputs: tens of ulps; from the rounded
    // `x - max`: a few.
    assert!(w.err > 40.0 && w.kept < 5.0, "{w:?}");
    let grid = measure::<f32>(&[NormPlan::auto(Dtype::F32, 1000)], Case { draw: Draw::Grid, ..case })[0];
    assert!(grid.err < 5.0, "on the grid x - max is exact: {grid:?}");
}
