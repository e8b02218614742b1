//! The activations' reference. f32: the device crate's lane rule run here
//! (`gpukern_device::math`, IEEE operations and FMA only, so the GPU's bits;
//! NaN results the canonical `0x7fff_ffff`). f16 and bf16: the correctly
//! rounded value, the f64 function (`math::check::FUNCTIONS`) rounded once,
//! NaN results `0x7fff`; written independently of the kernels' 16-bit rule,
//! which the GPU tests compare with it bit for bit. The 2^16 results of each
//! function and type are tabulated on first use.

use std::sync::OnceLock;

use gpukern_device::activations::{Exp, Gelu, GeluTanh, Log, Rsqrt, Sigmoid, Silu, Sqrt, Tanh, NAN16};
use gpukern_device::lanes::{Op, F32};
use kernels_gpu::ops::UnaryOp;
use kernels_gpu::Dtype;

use super::rounding::ReferenceOps;

/// The f64 function of an activation.
fn f64_function(op: UnaryOp) -> fn(f64) -> f64 {
    let name = op.name();
    gpukern_device::math::check::FUNCTIONS.iter().find(|r| r.0 == name).map(|r| r.2).expect("an f64 reference")
}

/// The correctly rounded 16-bit result of `op` at the input `bits` of `T`.
fn correctly_rounded<T: ReferenceOps>(op: UnaryOp, bits: u32) -> u16 {
    let v = f64_function(op)(T::from_bits32(bits).to_f64());
    if v.is_nan() {
        NAN16
    } else {
        T::round_from(v).to_bits32() as u16
    }
}

/// The activations in [`UnaryOp::ACTIVATIONS`] order, 16-bit tables per dtype.
type Tables = [OnceLock<Box<[u16]>>; 9];
static F16_TABLES: Tables = [const { OnceLock::new() }; 9];
static BF16_TABLES: Tables = [const { OnceLock::new() }; 9];

/// `op(x)` for an activation `op` (module docs).
pub(super) fn activation<T: ReferenceOps>(op: UnaryOp, x: T) -> T {
    let f32_rule = |x: f32| match op {
        UnaryOp::Exp => <Exp as Op<F32>>::one(Exp, x, x),
        UnaryOp::Log => <Log as Op<F32>>::one(Log, x, x),
        UnaryOp::Tanh => <Tanh as Op<F32>>::one(Tanh, x, x),
        UnaryOp::Sigmoid => <Sigmoid as Op<F32>>::one(Sigmoid, x, x),
        UnaryOp::Silu => <Silu as Op<F32>>::one(Silu, x, x),
        UnaryOp::Gelu => <Gelu as Op<F32>>::one(Gelu, x, x),
        UnaryOp::GeluTanh => <GeluTanh as Op<F32>>::one(GeluTanh, x, x),
        UnaryOp::Rsqrt => <Rsqrt as Op<F32>>::one(Rsqrt, x, x),
        UnaryOp::Sqrt => <Sqrt as Op<F32>>::one(Sqrt, x, x),
        _ => unreachable!("{op:?} is not an activation"),
    };
    let tables = match T::DTYPE {
        Dtype::F32 => return T::from_bits32(f32_rule(f32::from_bits(x.to_bits32())).to_bits()),
        Dtype::F16 => &F16_TABLES,
        Dtype::Bf16 => &BF16_TABLES,
    };
    let i = UnaryOp::ACTIVATIONS.iter().position(|&a| a == op).expect("an activation");
    let table = tables[i].get_or_init(|| (0..1u32 << 16).map(|b| correctly_rounded::<T>(op, b)).collect());
    T::from_bits32(table[x.to_bits32() as usize] as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// The f64 functions are accurate to a few f64 ulps; none of the 2^16
    /// inputs of either type lands within 2^-40 (relative) of a rounding
    /// boundary, so rounding them once gives the correctly rounded result.
    /// Except where the value is known exactly enough: silu and the GELUs
    /// below 2^-60 are `x/2` plus a positive `c·x²` (`math::check` nudges
    /// `x/2` up for them, and `x/2` may be a bf16 midpoint).
    #[test]
    fn f64_references_are_far_from_every_16_bit_rounding_boundary() {
        fn check<T: ReferenceOps>(op: UnaryOp) -> Vec<u32> {
            let f = f64_function(op);
            (0..1u32 << 16)
                .filter(|&b| {
                    let v = f(T::from_bits32(b).to_f64());
                    let (lo, hi) =
                        (T::round_from(v * (1.0 - 2f64.powi(-40))), T::round_from(v * (1.0 + 2f64.powi(-40))));
                    let tiny = T::from_bits32(b).to_f64().abs() < 2f64.powi(-60);
                    let half_x = matches!(op, UnaryOp::Silu | UnaryOp::Gelu | UnaryOp::GeluTanh) && tiny;
                    v.is_finite() && v != 0.0 && !half_x && lo.to_bits32() != hi.to_bits32()
                })
                .collect()
        }
        for op in UnaryOp::ACTIVATIONS {
            let (h, b) = (check::<f16>(op), check::<bf16>(op));
            assert!(h.is_empty() && b.is_empty(), "{op:?}: f16 {h:04x?}, bf16 {b:04x?}");
        }
    }

    /// The device crate's 16-bit lane rules (the host's are the slow path)
    /// equal this reference on every input, NaN bits included.
    #[test]
    fn lane_rules_are_correctly_rounded_for_every_16_bit_input() {
        use gpukern_device::lanes::{Bf16, F16};
        fn lane<E: gpukern_device::lanes::Elem<T = u16>, A: Op<E>>(a: A, x: u16) -> u16 {
            a.one(x, x)
        }
        macro_rules! each {
            ($($op:ident),*) => {$(
                for b in 0..=u16::MAX {
                    let (h, w) = (lane::<F16, _>($op, b), activation(UnaryOp::$op, f16::from_bits(b)).to_bits());
                    assert_eq!(h, w, "{} f16 {b:#06x}", stringify!($op));
                    let (g, w) = (lane::<Bf16, _>($op, b), activation(UnaryOp::$op, bf16::from_bits(b)).to_bits());
                    assert_eq!(g, w, "{} bf16 {b:#06x}", stringify!($op));
                }
            )*};
        }
        each!(Exp, Log, Tanh, Sigmoid, Silu, Gelu, GeluTanh, Rsqrt, Sqrt);
    }
}
