//! What the CPU and GPU tests share: the kinds, the data (special values
//! first), windows at a start offset inside a larger tensor.
#![allow(dead_code)] // each test binary uses its part

use candle_core::{Device, Tensor, WithDType};
use gpukern::{BinaryOp, OpKind, UnaryOp};
use gpukern_candle as gc;
use rand::{Rng, SeedableRng};

/// Every operation the crate wraps: gpukern's own lists.
pub const UNARY: [UnaryOp; 12] = UnaryOp::ALL;
pub const BINARY: [BinaryOp; 6] = BinaryOp::ALL;

/// Every kind the crate exposes, with axpby's scales.
pub fn kinds() -> Vec<(OpKind, (f32, f32))> {
    let mut k: Vec<_> = UNARY.iter().map(|&op| (OpKind::Unary(op), (1.0, 1.0))).collect();
    k.extend(BINARY.iter().map(|&op| (OpKind::Binary(op), (1.0, 1.0))));
    k.push((OpKind::Axpby, (0.75, -1.5)));
    k
}

/// `n` values: the special ones (zeros of both signs, infinities, NaN, a
/// subnormal, the largest finite) first, then random ones over a wide range.
pub fn data<T: WithDType>(n: usize, seed: u64) -> Vec<T> {
    let special = [0.0, -0.0, 1.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-41, -3e38, 65504.0, 0.5];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| match special.get(i) {
            Some(&v) => T::from_f64(v),
            None if i % 3 == 0 => T::from_f64(rng.gen_range(-1e4..1e4)),
            None => T::from_f64(rng.gen_range(-12.0..12.0)),
        })
        .collect()
}

/// `rows × cols` values at row `skip` of a `(rows + skip + 1) × cols` tensor:
/// a contiguous window that starts at an offset, with rows before and after.
pub fn window<T: WithDType>(rows: usize, cols: usize, skip: usize, seed: u64) -> (Tensor, Vec<T>) {
    window_on(&Device::Cpu, rows, cols, skip, seed)
}

/// [`window`] on `device`.
pub fn window_on<T: WithDType>(device: &Device, rows: usize, cols: usize, skip: usize, seed: u64) -> (Tensor, Vec<T>) {
    let all = data::<T>((rows + skip + 1) * cols, seed);
    let whole = Tensor::from_vec(all.clone(), (rows + skip + 1, cols), device).unwrap();
    let t = whole.narrow(0, skip, rows).unwrap();
    assert_eq!(t.layout().start_offset(), skip * cols);
    (t, all[skip * cols..(skip + rows) * cols].to_vec())
}

pub fn run(kind: OpKind, scales: (f32, f32), a: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    match kind {
        OpKind::Unary(op) => gc::unary(op, a),
        OpKind::Binary(op) => gc::binary(op, a, b),
        OpKind::Axpby => gc::axpby(scales.0, a, scales.1, b),
    }
}

/// `op` into `out` by its `_into` form.
pub fn run_into(kind: OpKind, scales: (f32, f32), a: &Tensor, b: &Tensor, out: &Tensor) -> candle_core::Result<()> {
    match kind {
        OpKind::Unary(op) => gc::unary_into(op, a, out),
        OpKind::Binary(op) => gc::binary_into(op, a, b, out),
        OpKind::Axpby => gc::axpby_into(scales.0, a, scales.1, b, out),
    }
}
