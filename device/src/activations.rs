//! The library's activations as lane rules: `exp`, `log`, `tanh`, `sigmoid`,
//! `silu`, `gelu` (erf form), `gelu_tanh`, `rsqrt` and `sqrt`, one [`Op`] each,
//! for every [`Elem`].
//!
//! Each lane widens to f32 (exact for every dtype), applies the [`crate::math`]
//! function and rounds once to the element type with [`Elem::narrow`]: the
//! integer round-to-nearest-even for bf16 in the portable module, the
//! hardware's `cvt.rn.bf16.f32` with `hopper::Bf16Sm90`, `cvt.rn.f16.f32` for
//! f16. The math functions are built from IEEE f32 operations and FMA alone, so
//! the same function run on the CPU gives the same bits: the host reference
//! (`gpukern::reference`) is this rule with [`Activation::F32`] on the host.
//! f16 and bf16 lanes apply the activation's [`Activation::NARROW`] function
//! instead (`math::narrow`: about 2^-21 relative, which one rounding to 16
//! bits hides, for a third to a half of the f32 function's instructions): every
//! bf16 input's result is the correctly rounded one, and all but 2–6 f16 inputs
//! per function (listed in `math/narrow_tests.rs`).

use crate::lanes::{Elem, Op};
use crate::math;

/// An activation: its f32 function, which every dtype's lane rule applies
/// between the exact widening and the one rounding.
pub trait Activation: Copy {
    /// Lower-case name (the prefix of its kernels).
    const NAME: &'static str;
    /// The f32 function, the same on host and device.
    const F32: fn(f32) -> f32;
    /// The function f16 and bf16 lanes apply (`math::narrow`: accurate to
    /// about 2^-21, which one rounding to 16 bits hides, and cheaper), the
    /// same on host and device too.
    const NARROW: fn(f32) -> f32;
}

/// Declares the activations: a unit type per function, its [`Activation`]
/// facts and its lane rule for every [`Elem`].
macro_rules! activations {
    ($($(#[$doc:meta])* $ty:ident $name:literal => $f:path, $h:path;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Default, Debug)]
        pub struct $ty;
        impl Activation for $ty {
            const NAME: &'static str = $name;
            const F32: fn(f32) -> f32 = $f;
            const NARROW: fn(f32) -> f32 = $h;
        }
        impl<E: Elem> Op<E> for $ty {
            const INPUTS: u32 = 1;
            #[inline(always)]
            fn one(self, x: E::T, _: E::T) -> E::T {
                // Called directly (not through `F32`) so the device build inlines
                // it; the element's size picks the function at compile time.
                if core::mem::size_of::<E::T>() == 4 {
                    E::narrow($f(E::widen(x)))
                } else {
                    E::narrow($h(E::widen(x)))
                }
            }
        }
    )*};
}

activations! {
    /// `e^x`.
    Exp "exp" => math::exp, math::narrow::exp;
    /// Natural logarithm (NaN below 0, -inf at ±0).
    Log "log" => math::log, math::narrow::log;
    /// Hyperbolic tangent.
    Tanh "tanh" => math::tanh, math::narrow::tanh;
    /// `1 / (1 + e^-x)`.
    Sigmoid "sigmoid" => math::sigmoid, math::narrow::sigmoid;
    /// `x · sigmoid(x)`.
    Silu "silu" => math::silu, math::narrow::silu;
    /// `x/2 · (1 + erf(x/√2))`, the exact GELU.
    Gelu "gelu" => math::gelu, math::narrow::gelu;
    /// `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`, GELU's tanh approximation.
    GeluTanh "gelu_tanh" => math::gelu_tanh, math::narrow::gelu_tanh;
    /// `1/√x`.
    Rsqrt "rsqrt" => math::rsqrt, math::narrow::rsqrt;
    /// `√x`, correctly rounded in f32.
    Sqrt "sqrt" => math::sqrt, math::sqrt;
}

/// The f32 function of the activation called `name`, if there is one (the
/// host's tables look the rules up by the names their kernels carry).
pub fn by_name(name: &str) -> Option<fn(f32) -> f32> {
    macro_rules! find {
        ($($ty:ident)*) => {$(if name == $ty::NAME { return Some($ty::F32); })*};
    }
    find!(Exp Log Tanh Sigmoid Silu Gelu GeluTanh Rsqrt Sqrt);
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::{f16_to_f32, f32_to_f16_rne};
    use crate::lanes::{Bf16, F16, F32};

    #[test]
    fn every_dtype_widens_applies_and_rounds_once() {
        for bits in (0..=u16::MAX).step_by(7) {
            let b = Bf16::widen(bits);
            // 16-bit lanes apply the narrow functions.
            assert_eq!(<Exp as Op<Bf16>>::one(Exp, bits, 0), Bf16::narrow(math::narrow::exp(b)));
            // On the host an f16 lane is its bits.
            let got = <Tanh as Op<F16>>::one(Tanh, bits, bits);
            assert_eq!(got, f32_to_f16_rne(math::narrow::tanh(f16_to_f32(bits))));
        }
        assert_eq!(<Sqrt as Op<F32>>::one(Sqrt, 2.0, 0.0).to_bits(), math::sqrt(2.0).to_bits());
    }

    #[test]
    fn names_find_their_functions() {
        assert_eq!(by_name("gelu_tanh").map(|f| f(1.0).to_bits()), Some(math::gelu_tanh(1.0).to_bits()));
        assert_eq!(by_name("sigmoid").map(|f| f(0.5).to_bits()), Some(math::sigmoid(0.5).to_bits()));
        assert!(by_name("neg").is_none());
    }
}
