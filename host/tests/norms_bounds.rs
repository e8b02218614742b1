//! The norms' error bounds (`norms_error::bound`) on the longest rows: one
//! row of each long length per operation, dtype and plan, up to
//! `gpukern::MAX_COLS` (2^24). Seconds per row on the CPU: ignored, run in
//! release by `cargo xtask ci` (`cargo test --release -p gpukern --test
//! norms_bounds -- --ignored`).

mod norms_error;

use gpukern::{Dtype, NormOp, NormPlan, NormStrategy, MAX_COLS};

/// The first row length `NormPlan::auto` splits (`2^18 + 1` for f32, `2^19
/// + 1` for f16 and bf16: past a cluster of 16 blocks).
fn first_split(dtype: Dtype) -> usize {
    let split = |n| NormPlan::auto(dtype, n).strategy == NormStrategy::Split;
    let n = (1..=24).map(|e| 1usize << e).find(|&n| split(n + 1)).expect("a split length");
    assert!(!split(n), "{n}");
    n + 1
}

/// One row of each long length: the first split, 2^20, 2^20 + 1 (a short
/// last segment) and `MAX_COLS`.
fn shapes(dtype: Dtype) -> Vec<(usize, usize, u64)> {
    [first_split(dtype), 1 << 20, (1 << 20) + 1, MAX_COLS].into_iter().zip(11..).map(|(c, s)| (1, c, s)).collect()
}

fn check(op: NormOp) {
    let failures = norms_error::check(op, shapes, |cols| cols <= 1 << 20);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
#[ignore = "long rows: run in release (cargo xtask ci runs it)"]
fn rms_norm_long_rows() {
    check(NormOp::Rms);
}

#[test]
#[ignore = "long rows: run in release (cargo xtask ci runs it)"]
fn add_rms_norm_long_rows() {
    check(NormOp::AddRms);
}

#[test]
#[ignore = "long rows: run in release (cargo xtask ci runs it)"]
fn layer_norm_long_rows() {
    check(NormOp::Layer);
}

#[test]
#[ignore = "long rows: run in release (cargo xtask ci runs it)"]
fn add_layer_norm_long_rows() {
    check(NormOp::AddLayer);
}

#[test]
#[ignore = "long rows: run in release (cargo xtask ci runs it)"]
fn softmax_long_rows() {
    check(NormOp::Softmax);
}

#[test]
#[ignore = "long rows: run in release (cargo xtask ci runs it)"]
fn log_softmax_long_rows() {
    check(NormOp::LogSoftmax);
}
