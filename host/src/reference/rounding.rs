//! [`ReferenceOps`]: how the CPU reference computes in each element type,
//! below both the operations (`ops`) and the 16-bit activations (`act16`),
//! which use it and not each other's modules.

use half::{bf16, f16};

use super::{bf16_bits_to_f64, f16_bits_to_f64, f64_to_bf16_bits, f64_to_f16_bits, ReferenceAdd};

/// The element-wise library's operations, correctly rounded (module docs): f32
/// through the host's own IEEE f32 operations, f16 and bf16 in f64 (exact for
/// the products, and for sums and quotients rounded twice with 53 >= 2p + 2
/// bits, which equals rounding once) and then rounded here.
pub trait ReferenceOps: ReferenceAdd {
    /// The exact value.
    fn to_f64(self) -> f64;
    /// `x` rounded once to `Self`, to nearest even.
    fn round_from(x: f64) -> Self;
    /// One arithmetic operation: `native` on f32, `wide` in f64 then rounded.
    fn arith(x: Self, y: Self, native: fn(f32, f32) -> f32, wide: fn(f64, f64) -> f64) -> Self {
        let _ = native;
        Self::round_from(wide(x.to_f64(), y.to_f64()))
    }
}

impl ReferenceOps for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn round_from(x: f64) -> f32 {
        x as f32
    }
    fn arith(x: f32, y: f32, native: fn(f32, f32) -> f32, _: fn(f64, f64) -> f64) -> f32 {
        native(x, y)
    }
}

impl ReferenceOps for f16 {
    fn to_f64(self) -> f64 {
        f16_bits_to_f64(self.to_bits())
    }
    fn round_from(x: f64) -> f16 {
        f16::from_bits(f64_to_f16_bits(x))
    }
}

impl ReferenceOps for bf16 {
    fn to_f64(self) -> f64 {
        bf16_bits_to_f64(self.to_bits())
    }
    fn round_from(x: f64) -> bf16 {
        bf16::from_bits(f64_to_bf16_bits(x))
    }
}
