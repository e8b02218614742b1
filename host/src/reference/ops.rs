//! The element-wise library's operations on the CPU: the reference the GPU
//! tests and the report compare every kernel with, bit for bit.
//!
//! The activations in f16 and bf16 are correctly rounded too (the f64
//! function rounded once, `act16`); in f32 their reference is the kernels' own
//! rule, `gpukern_device::math` run here, which the math's IEEE-and-FMA-only
//! construction makes bit-for-bit what the GPU computes (≤ 1 ulp: `math::check`
//! and `host/tests/gpu_math.rs` measure it). Every NaN result of an activation
//! is the canonical NaN (`0x7fff_ffff`, `0x7fff`).

use kernels_gpu::ops::{BinaryOp, OpKind, UnaryOp};

use super::rounding::ReferenceOps;

/// IEEE 754-2019 `minimum` (`less`) or `maximum`: NaN if either is NaN, and
/// -0 < +0.
fn extremum(x: f64, y: f64, less: bool) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == y {
        // Equal values, or zeros of both signs: the sign decides.
        return if x.is_sign_negative() == less { x } else { y };
    }
    if (x < y) == less {
        x
    } else {
        y
    }
}

/// `op(x, y)`, correctly rounded.
pub fn binary_one<T: ReferenceOps>(op: BinaryOp, x: T, y: T) -> T {
    match op {
        BinaryOp::Add => T::reference_add(x, y),
        BinaryOp::Sub => T::arith(x, y, |p, q| p - q, |p, q| p - q),
        BinaryOp::Mul => T::arith(x, y, |p, q| p * q, |p, q| p * q),
        BinaryOp::Div => T::arith(x, y, |p, q| p / q, |p, q| p / q),
        BinaryOp::Min => T::round_from(extremum(x.to_f64(), y.to_f64(), true)),
        BinaryOp::Max => T::round_from(extremum(x.to_f64(), y.to_f64(), false)),
    }
}

/// `op(x)`: exact for the sign-bit operations; for an activation, the f32
/// lane rule in f32 and the correctly rounded value in f16 and bf16
/// (`act16`).
pub fn unary_one<T: ReferenceOps>(op: UnaryOp, x: T) -> T {
    let v = x.to_f64();
    match op {
        UnaryOp::Neg => T::round_from(-v),
        UnaryOp::Abs => T::round_from(v.abs()),
        UnaryOp::Relu if v.is_nan() || v > 0.0 => x,
        UnaryOp::Relu => T::round_from(0.0),
        _ => super::act16::activation(op, x),
    }
}

/// `alpha·x + beta·y` with the scales rounded once to `T` and each product and
/// the sum rounded.
pub fn axpby_one<T: ReferenceOps>(alpha: f32, x: T, beta: f32, y: T) -> T {
    let (alpha, beta) = (T::round_from(alpha as f64), T::round_from(beta as f64));
    let mul = |s: T, v: T| T::arith(s, v, |p, q| p * q, |p, q| p * q);
    T::arith(mul(alpha, x), mul(beta, y), |p, q| p + q, |p, q| p + q)
}

/// Element-wise reference of any operation: `b` for two-input kinds, `scales`
/// for axpby. Panics if the lengths differ or an operand is missing (test helper).
pub fn map<T: ReferenceOps>(kind: OpKind, a: &[T], b: Option<&[T]>, scales: (f32, f32)) -> Vec<T> {
    let second = |i: usize| b.expect("this operation needs b")[i];
    if let Some(b) = b {
        assert_eq!(a.len(), b.len(), "reference::map needs equal lengths");
    }
    (0..a.len())
        .map(|i| match kind {
            OpKind::Binary(op) => binary_one(op, a[i], second(i)),
            OpKind::Unary(op) => unary_one(op, a[i]),
            OpKind::Axpby => axpby_one(scales.0, a[i], scales.1, second(i)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::buffer::Element;
    use half::{bf16, f16};
    use rand::{Rng, SeedableRng};

    /// The device's lane rules for the narrow formats (hardware f16 through
    /// `half`'s f32 path; bf16 through the kernel crate's f32 helpers), replayed
    /// on the CPU, against the f64 reference, on random bits. `GPUKERN_EXHAUSTIVE=1`
    /// checks all 2^32 pairs instead (minutes on all cores).
    #[test]
    fn narrow_ops_through_f32_agree_with_the_reference() {
        use kernels_gpu::bits::{bf16_to_f32, f32_to_bf16_rne};
        use rayon::prelude::*;
        let f16_via_f32 = |op: BinaryOp, a: u16, b: u16| {
            let (x, y) = (f16::from_bits(a).to_f32(), f16::from_bits(b).to_f32());
            f16::from_f32(match op {
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                _ => x / y,
            })
        };
        let bf16_via_f32 = |op: BinaryOp, a: u16, b: u16| {
            let (x, y) = (bf16_to_f32(a), bf16_to_f32(b));
            bf16::from_bits(f32_to_bf16_rne(match op {
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                _ => x / y,
            }))
        };
        let check = |op: BinaryOp, a: u16, b: u16| {
            let (h, r) = (f16_via_f32(op, a, b), binary_one(op, f16::from_bits(a), f16::from_bits(b)));
            assert!(h.same_as(r), "f16 {op:?} {a:#06x} {b:#06x}: {:#06x} vs {:#06x}", h.to_bits(), r.to_bits());
            let (g, r) = (bf16_via_f32(op, a, b), binary_one(op, bf16::from_bits(a), bf16::from_bits(b)));
            assert!(g.same_as(r), "bf16 {op:?} {a:#06x} {b:#06x}: {:#06x} vs {:#06x}", g.to_bits(), r.to_bits());
        };
        let ops = [BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];
        if std::env::var_os("GPUKERN_EXHAUSTIVE").is_some() {
            (0..=u16::MAX)
                .into_par_iter()
                .for_each(|a| (0..=u16::MAX).for_each(|b| ops.iter().for_each(|&op| check(op, a, b))));
            return;
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for _ in 0..1_000_000 {
            let (a, b): (u16, u16) = (rng.gen(), rng.gen());
            ops.iter().for_each(|&op| check(op, a, b));
        }
    }

    /// The f32 activations' reference is the device crate's lane rule (the
    /// same `Op` the kernels instantiate), on f32 samples, and each op's
    /// function is the table's; NaN results are canonical in every type.
    #[test]
    fn activations_are_the_lane_rules_in_f32_and_canonical_nan_everywhere() {
        use gpukern_device::activations::*;
        use gpukern_device::lanes::{Op, F32};
        fn lane<A: Op<F32>>(a: A, x: f32) -> f32 {
            a.one(x, x)
        }
        macro_rules! each {
            ($($op:ident $ty:ident),*) => {$(
                let op = UnaryOp::$op;
                assert_eq!(op.activation().map(|f| f(0.75).to_bits()), Some($ty::F32(0.75).to_bits()), "{op:?}");
                for i in 0..100_000u32 {
                    let x = f32::from_bits(i.wrapping_mul(0x9e37_79b9));
                    assert_eq!(lane($ty, x).to_bits(), unary_one(op, x).to_bits(), "{op:?} f32 {x:e}");
                }
            )*};
        }
        each!(Exp Exp, Log Log, Tanh Tanh, Sigmoid Sigmoid, Silu Silu, Gelu Gelu, GeluTanh GeluTanh, Rsqrt Rsqrt, Sqrt Sqrt);
        assert_eq!(unary_one(UnaryOp::Exp, bf16::ONE), bf16::from_f64(std::f64::consts::E));
        assert_eq!(unary_one(UnaryOp::Sqrt, 4.0f32), 2.0);
        assert_eq!(unary_one(UnaryOp::Log, -1.0f32).to_bits(), 0x7fff_ffff);
        assert_eq!(unary_one(UnaryOp::Tanh, f32::from_bits(0xffc0_0001)).to_bits(), 0x7fff_ffff);
        assert_eq!(unary_one(UnaryOp::Log, f16::from_f32(-1.0)).to_bits(), 0x7fff);
        assert_eq!(unary_one(UnaryOp::Silu, bf16::NAN).to_bits(), 0x7fff);
    }

    #[test]
    fn min_max_and_sign_ops_follow_ieee_2019() {
        use BinaryOp::{Max, Min};
        let (pz, nz, nan) = (0.0f32, -0.0f32, f32::NAN);
        assert_eq!(binary_one(Min, pz, nz).to_bits(), nz.to_bits());
        assert_eq!(binary_one(Min, nz, pz).to_bits(), nz.to_bits());
        assert_eq!(binary_one(Max, nz, pz).to_bits(), pz.to_bits());
        assert_eq!(binary_one(Max, pz, nz).to_bits(), pz.to_bits());
        assert!(binary_one(Min, nan, 1.0).is_nan() && binary_one(Max, 1.0, nan).is_nan());
        assert_eq!(binary_one(Min, -1.0f32, 2.0), -1.0);
        assert_eq!(binary_one(Max, -1.0f32, 2.0), 2.0);
        assert_eq!(unary_one(UnaryOp::Relu, nz).to_bits(), 0);
        assert_eq!(unary_one(UnaryOp::Relu, -3.0f32).to_bits(), 0);
        assert_eq!(unary_one(UnaryOp::Relu, 3.0f32), 3.0);
        assert!(unary_one(UnaryOp::Relu, nan).is_nan());
        assert_eq!(unary_one(UnaryOp::Neg, pz).to_bits(), nz.to_bits());
        assert_eq!(unary_one(UnaryOp::Abs, f16::from_f32(-2.5)), f16::from_f32(2.5));
        // axpby rounds each step: 0.1·3 in f16 is not 0.3 rounded once.
        let (x, y) = (f16::from_f32(3.0), f16::from_f32(1.0));
        let want = f16::from_f32(f16::from_f32(f16::from_f32(0.1).to_f32() * 3.0).to_f32() + 1.0);
        assert_eq!(axpby_one(0.1, x, 1.0, y), want);
    }
}
