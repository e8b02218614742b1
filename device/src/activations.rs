//! The library's activations as lane rules: `exp`, `log`, `tanh`, `sigmoid`,
//! `silu`, `gelu` (erf form), `gelu_tanh`, `rsqrt` and `sqrt`, one [`Op`] each,
//! for every [`Elem`].
//!
//! **f32 lanes** apply the [`crate::math`] function: IEEE f32 operations and FMA
//! alone, so the host computes the device's bits (≤ 1 ulp; `math/README.md`).
//! A NaN result is the canonical NaN `0x7fff_ffff` on both (the rule replaces
//! any other payload: `lanes16::canonical_nan32`).
//!
//! **f16 and bf16 lanes are correctly rounded**, for every input, on both
//! sides, which is how host and device agree on every bit (`lanes16`): the
//! device takes a fast path on the SFU (`math::fast16`, with a proven relative
//! bound `E`) and keeps its result when `y(1 - E)` and `y(1 + E)` round to the
//! same 16-bit value; the few lanes that test cannot settle, or outside the
//! fast path's domain, take the slow path in one converged pass per warp. The
//! slow path, and the whole rule on the host, is the [`Activation::NARROW`]
//! function (`math::narrow`, ~2^-21, IEEE operations only) rounded once, with
//! the f16 inputs it misses listed and fixed ([`Activation::F16_FIXES`]);
//! every NaN result is `0x7fff` (the canonical 16-bit NaN).

mod glu;
mod lanes16;
// The fast paths' checks on every 16-bit input: here, beside the lanes they
// test (`math` is the lower module and imports nothing of `activations`).
#[cfg(test)]
mod fast16_tests;

use crate::lanes::{Elem, Op};
use crate::math::{self, fast16, fast16::Fast, fast16::Sfu};

pub use glu::{product, Glu};
pub use lanes16::{settle, slow16, NAN16};

/// An activation: its f32 function, its 16-bit fast path and slow path.
pub trait Activation: Copy {
    /// Lower-case name (the prefix of its kernels).
    const NAME: &'static str;
    /// The f32 function, the same on host and device.
    const F32: fn(f32) -> f32;
    /// The slow path's function (`math::narrow`, about 2^-21 relative, IEEE
    /// operations only, the same bits on host and device).
    const NARROW: fn(f32) -> f32;
    /// The f16 inputs whose [`Self::NARROW`] result rounds to the wrong f16,
    /// with the correctly rounded result (`(input bits, output bits)`; all of
    /// them, found by `activations::fast16_tests` over every input).
    const F16_FIXES: &'static [(u16, u16)];
    /// [`Self::F32`], called directly so the device build inlines it.
    fn f32(x: f32) -> f32;
    /// [`Self::NARROW`], called directly.
    fn narrow(x: f32) -> f32;
    /// The 16-bit fast path on the SFU instructions `S`.
    fn fast16<S: Sfu>(x: f32) -> Fast;
    /// The fast path is correctly rounded in f32 (`sqrt.rn`), so its one
    /// rounding to 16 bits needs no test.
    const EXACT: bool = false;
    /// Whether the f16 lanes take the SFU fast path and its rounding test;
    /// otherwise every lane runs the slow path (correctly rounded on every
    /// input as well). Set per function from one H200 run of both kernels at
    /// 2^28 (README of `math`): where the fast path's extra test and vote
    /// cost more than its shorter arithmetic saves, the narrow function alone
    /// is faster.
    const FAST_F16: bool = true;
    /// [`Self::FAST_F16`] for the bf16 lanes.
    const FAST_BF16: bool = true;
    /// `f(x) = x/2 + c·x² + …` with `c > 0` near 0 (silu and the GELUs): where
    /// `x/2` is below 2^-126 (bf16 inputs under 2^-125) it can be a bf16
    /// rounding midpoint, which the f32 function rounds to even; the exact
    /// value lies just above it, so the slow path rounds `x/2 + 2^-149`.
    const HALF_X_AT_ZERO: bool = false;
}

/// Declares the activations: a unit type per function, its [`Activation`]
/// facts and its lane rule for every [`Elem`].
macro_rules! activations {
    ($($(#[$doc:meta])* $ty:ident $name:literal => $f:path, $h:path, $fast:ident, [$($fix:expr),*] $({$($c:ident = $v:expr),*})?;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Default, Debug)]
        pub struct $ty;
        impl Activation for $ty {
            const NAME: &'static str = $name;
            const F32: fn(f32) -> f32 = $f;
            const NARROW: fn(f32) -> f32 = $h;
            const F16_FIXES: &'static [(u16, u16)] = &[$($fix),*];
            $($(const $c: bool = $v;)*)?
            #[inline(always)]
            fn f32(x: f32) -> f32 {
                $f(x)
            }
            #[inline(always)]
            fn narrow(x: f32) -> f32 {
                $h(x)
            }
            #[inline(always)]
            fn fast16<S: Sfu>(x: f32) -> Fast {
                fast16::$fast::<S>(x)
            }
        }
        impl<E: Elem> Op<E> for $ty {
            const INPUTS: u32 = 1;
            #[inline(always)]
            fn one(self, x: E::T, _: E::T) -> E::T {
                // The element's size picks the rule at compile time.
                if core::mem::size_of::<E::T>() == 4 {
                    E::narrow(lanes16::canonical_nan32(lanes16::f32_rule::<$ty>(E::widen(x))))
                } else {
                    lanes16::lanes::<E, $ty, 1>([x])[0]
                }
            }
            #[inline(always)]
            fn word(self, x: u32, y: u32) -> u32 {
                if core::mem::size_of::<E::T>() == 4 {
                    E::zip_word(x, y, |p, q| <Self as Op<E>>::one(self, p, q))
                } else {
                    let r = lanes16::lanes::<E, $ty, 2>([E::from_bits(x), E::from_bits(x >> 16)]);
                    E::bits(r[0]) | (E::bits(r[1]) << 16)
                }
            }
            #[inline(always)]
            fn pack(self, x: crate::pack::Pack16, y: crate::pack::Pack16) -> crate::pack::Pack16 {
                if core::mem::size_of::<E::T>() == 4 {
                    let w = |i: usize| <Self as Op<E>>::word(self, x.0[i], y.0[i]);
                    crate::pack::Pack16([w(0), w(1), w(2), w(3)])
                } else {
                    lanes16::pack::<E, $ty>(x)
                }
            }
        }
    )*};
}

activations! {
    /// `e^x`.
    Exp "exp" => math::exp, math::narrow::exp, exp, [(0x1f79, 0x3c07), (0x25cf, 0x3c17)];
    /// Natural logarithm (NaN below 0, -inf at ±0).
    Log "log" => math::log, math::narrow::log, log, [(0x1d78, 0xc53b), (0x358b, 0xbc3d), (0x396f, 0xb630), (0x423e, 0x3c8d)];
    /// Hyperbolic tangent.
    Tanh "tanh" => math::tanh, math::narrow::tanh, tanh, [(0x319b, 0x318d), (0xb19b, 0xb18d)]
        {FAST_F16 = false, FAST_BF16 = false};
    /// `1 / (1 + e^-x)`.
    Sigmoid "sigmoid" => math::sigmoid, math::narrow::sigmoid, sigmoid,
        [(0x1a00, 0x3801), (0x1f00, 0x3803), (0x2180, 0x3805), (0x9600, 0x37ff), (0x9b00, 0x37fd), (0xa1c0, 0x37f5)];
    /// `x · sigmoid(x)`.
    Silu "silu" => math::silu, math::narrow::silu, silu, [(0x0001, 0x0001), (0x1fbf, 0x1bc7), (0xc173, 0xb15d)]
        {HALF_X_AT_ZERO = true};
    /// `x/2 · (1 + erf(x/√2))`, the exact GELU.
    Gelu "gelu" => math::gelu, math::narrow::gelu, gelu, [(0x0001, 0x0001), (0x157c, 0x117d), (0x957c, 0x917b)]
        {HALF_X_AT_ZERO = true};
    /// `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`, GELU's tanh approximation.
    GeluTanh "gelu_tanh" => math::gelu_tanh, math::narrow::gelu_tanh, gelu_tanh,
        [(0x0001, 0x0001), (0x957c, 0x917b), (0xadf1, 0xa981), (0xb083, 0xac01), (0xb5a7, 0xb017)] {HALF_X_AT_ZERO = true};
    /// `1/√x`.
    Rsqrt "rsqrt" => math::rsqrt, math::narrow::rsqrt, rsqrt, [];
    /// `√x`, correctly rounded in f32.
    Sqrt "sqrt" => math::sqrt, math::sqrt, sqrt, [] {EXACT = true, FAST_F16 = false, FAST_BF16 = false};
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
            // 16-bit lanes are the slow path on the host: the narrow function
            // rounded once, fixed where listed.
            let e = math::narrow::exp(Bf16::widen(bits));
            let want = if e.is_nan() { NAN16 } else { Bf16::narrow(e) };
            assert_eq!(<Exp as Op<Bf16>>::one(Exp, bits, 0), want);
            let want = slow16::<F16, Tanh>(bits);
            assert_eq!(<Tanh as Op<F16>>::one(Tanh, bits, bits), want);
            if !math::narrow::tanh(f16_to_f32(bits)).is_nan() && !Tanh::F16_FIXES.iter().any(|f| f.0 == bits) {
                assert_eq!(want, f32_to_f16_rne(math::narrow::tanh(f16_to_f32(bits))));
            }
        }
        assert_eq!(<Sqrt as Op<F32>>::one(Sqrt, 2.0, 0.0).to_bits(), math::sqrt(2.0).to_bits());
        // A listed f16 input takes its fix.
        assert_eq!(<Exp as Op<F16>>::one(Exp, 0x1f79, 0), 0x3c07);
    }

    #[test]
    fn words_and_packs_apply_the_lane_rule_to_every_lane() {
        let x = crate::pack::Pack16([0x3c00_bc00, 0x7e00_0001, 0xfc00_4400, 0x8000_0000]);
        let p = <Silu as Op<F16>>::pack(Silu, x, x);
        for (i, (&w, &r)) in x.0.iter().zip(&p.0).enumerate() {
            for s in [0, 16] {
                let one = <Silu as Op<F16>>::one(Silu, (w >> s) as u16, 0);
                assert_eq!((r >> s) as u16, one, "word {i} lane {s}");
            }
            assert_eq!(<Silu as Op<F16>>::word(Silu, w, w), r);
        }
    }

    #[test]
    fn nan_results_are_canonical_in_every_dtype() {
        let payload = f32::from_bits(0xffc0_1234);
        assert_eq!(<Exp as Op<F32>>::one(Exp, payload, 0.0).to_bits(), 0x7fff_ffff);
        assert_eq!(<Log as Op<F32>>::one(Log, -1.0, 0.0).to_bits(), 0x7fff_ffff);
        assert_eq!(<Tanh as Op<F32>>::one(Tanh, f32::from_bits(0xff80_0001), 0.0).to_bits(), 0x7fff_ffff);
        for (b, h) in [(0xffc1u16, 0xfe01u16), (0x7f81, 0x7c01)] {
            assert_eq!(<Silu as Op<Bf16>>::one(Silu, b, 0), NAN16);
            assert_eq!(<Silu as Op<F16>>::one(Silu, h, 0), NAN16);
        }
        assert_eq!(<Rsqrt as Op<Bf16>>::one(Rsqrt, 0xbf80, 0), NAN16); // -1
        assert_eq!(<Sqrt as Op<F16>>::one(Sqrt, 0xbc00, 0), NAN16); // -1
    }

    #[test]
    fn names_find_their_functions() {
        assert_eq!(by_name("gelu_tanh").map(|f| f(1.0).to_bits()), Some(math::gelu_tanh(1.0).to_bits()));
        assert_eq!(by_name("sigmoid").map(|f| f(0.5).to_bits()), Some(math::sigmoid(0.5).to_bits()));
        assert!(by_name("neg").is_none());
    }

    /// CPU ns per call of the f32 rule and the 16-bit rule (the host's slow
    /// path), without and with the FMA copy; `--release --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, for the README"]
    fn cpu_ns_per_call() {
        use std::hint::black_box;
        use std::time::Instant;
        fn time(f: impl Fn(u32) -> u32) -> f64 {
            let n = 1u32 << 22;
            let t = Instant::now();
            let mut acc = 0u32;
            for i in 0..n {
                acc = acc.wrapping_add(f(black_box(i.wrapping_mul(0x9e37_79b9) >> 16)));
            }
            black_box(acc);
            t.elapsed().as_nanos() as f64 / n as f64
        }
        fn row<A: Activation + Op<F32> + Op<Bf16>>() {
            let x32 = |b: u32| f32::from_bits(0x3c00_0000 + (b << 12)) - 0.5;
            let plain = time(|b| A::f32(x32(b)).to_bits());
            let fma = time(|b| lanes16::f32_rule::<A>(x32(b)).to_bits());
            let bf = |b: u32| (b as u16 & 0x7fff) | 0x3c00;
            let plain16 = time(|b| lanes16::slow16_plain::<Bf16, A>(bf(b)) as u32);
            let fma16 = time(|b| slow16::<Bf16, A>(bf(b)) as u32);
            std::eprintln!("| {} | {plain:.1} | {fma:.1} | {plain16:.1} | {fma16:.1} |", A::NAME);
        }
        std::eprintln!("| function | f32 (libm fmaf) | f32 (FMA) | bf16 (libm fmaf) | bf16 (FMA) |");
        row::<Exp>();
        row::<Log>();
        row::<Tanh>();
        row::<Sigmoid>();
        row::<Silu>();
        row::<Gelu>();
        row::<GeluTanh>();
        row::<Rsqrt>();
        row::<Sqrt>();
    }
}
