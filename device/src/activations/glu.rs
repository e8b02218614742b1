//! The gated activations' lane rule: `act(gate) · up`, with `act` an
//! [`Activation`]'s f32 function (the same one the f32 activation kernels
//! apply), the product rounded once to the element type.
//!
//! f32 lanes: `act(g) · u` is one IEEE multiplication, so one rounding.
//!
//! f16 and bf16 lanes: both operands widen exactly; `a = act(g)` is the f32
//! function's value; the exact product `a · u` is then rounded once to 16 bits
//! ([`product`]). Rounding the f32 product `a ⊗ u` to 16 bits would round
//! twice, and differ where `a ⊗ u` lands on a 16-bit midpoint that the exact
//! product misses. So the f32 product is rounded to odd first: when it is
//! inexact and its last bit is even, it moves one ulp towards the exact value
//! (the sign of the error `fma(a, u, -a ⊗ u)`). A value rounded to odd with at
//! least two bits more than the target rounds to nearest-even as the exact
//! value would (f32 keeps 24 bits; f16 needs 11, bf16 8, and f32's subnormals
//! are 2^-149 apart against f16's 2^-24 and bf16's 2^-133). The FMA's error is
//! exact only while the product is at least about 2^-103; below 2^-96 (zero
//! included) the direction comes from the exact product in f64 instead (48
//! bits: exact), a branch that real data almost never takes.
//!
//! Every NaN result is canonical: `0x7fff_ffff` in f32, `0x7fff` in 16 bits.

use core::marker::PhantomData;

use super::lanes16::{canonical_nan32, f32_rule};
use super::{Activation, NAN16};
use crate::lanes::{Elem, Op};
use crate::math::fma;

/// Below this magnitude the FMA's error term may not be exact (module docs).
const TINY: f32 = f32::from_bits(0x0f80_0000); // 2^-96

/// `act(gate) · up` for the activation `A`, as a two-input [`Op`]: `x` is the
/// gate, `y` the up projection.
#[derive(Clone, Copy, Default, Debug)]
pub struct Glu<A>(PhantomData<A>);

impl<A> Glu<A> {
    /// The rule.
    pub const fn new() -> Self {
        Glu(PhantomData)
    }
}

/// One ulp towards the exact product `a · u` from its f32 rounding `p`: `1`
/// (magnitude up), `-1` (down, as a wrapping add to the bits), `0` if `p` is
/// exact, infinite from an infinite operand, or NaN.
// Not `e != 0.0` (clippy's double_comparisons): that is true for a NaN `e`.
#[allow(clippy::double_comparisons)]
#[inline(always)]
fn towards_exact(a: f32, u: f32, p: f32) -> u32 {
    if p.abs() >= TINY {
        // The error of the rounded product, exact here; NaN (an infinite
        // operand) compares false both ways and leaves `p` alone.
        let e = fma(a, u, -p);
        if (e > 0.0 && p > 0.0) || (e < 0.0 && p < 0.0) {
            1
        } else if e > 0.0 || e < 0.0 {
            u32::MAX
        } else {
            0
        }
    } else {
        // 24 × 24 bits: the f64 product is exact, and `p` widens exactly.
        let (exact, q) = (a as f64 * u as f64, p as f64);
        if exact == q || exact.is_nan() {
            0
        } else if exact.abs() > q.abs() {
            1
        } else {
            u32::MAX
        }
    }
}

/// `a · u` rounded once to `E` (module docs), NaN canonical.
#[inline(always)]
pub fn product<E: Elem>(a: f32, u: f32) -> E::T {
    let p = a * u;
    if core::mem::size_of::<E::T>() == 4 {
        return E::narrow(canonical_nan32(p));
    }
    if p.is_nan() {
        return E::from_bits(NAN16 as u32);
    }
    let bits = p.to_bits();
    // Round to odd: only an even last bit can sit on a 16-bit midpoint.
    let odd = if bits & 1 == 0 { bits.wrapping_add(towards_exact(a, u, p)) } else { bits };
    E::narrow(f32::from_bits(odd))
}

impl<E: Elem, A: Activation> Op<E> for Glu<A> {
    #[inline(always)]
    fn one(self, gate: E::T, up: E::T) -> E::T {
        product::<E>(f32_rule::<A>(E::widen(gate)), E::widen(up))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activations::{Gelu, Silu};
    use crate::bits::{bf16_to_f32, f16_to_f32, f32_to_bf16_rne, f32_to_f16_rne};
    use crate::lanes::{Bf16, F16, F32};

    /// Products whose f32 rounding is a 16-bit midpoint while the exact
    /// product is not: `a = m / u` rounded, for midpoints `m` of consecutive
    /// 16-bit values `lo`, `lo + 1`; the right result is the side the exact
    /// (f64) product lies on, where rounding the f32 product again would tie
    /// to even. Normal results (the FMA's error) and bf16 subnormal ones (the
    /// f64 branch) both.
    fn midpoints<E: Elem<T = u16>>(lows: impl Iterator<Item = u16>, us: &[f32]) -> u32 {
        let mut exercised = 0;
        for lo in lows {
            let m = (E::widen(lo) as f64 + E::widen(lo + 1) as f64) / 2.0;
            for &u in us {
                let a = (m / u as f64) as f32;
                let exact = a as f64 * u as f64;
                if (a * u).abs() as f64 != m.abs() || exact.abs() == m.abs() {
                    continue;
                }
                exercised += 1;
                let want = (if exact.abs() > m.abs() { lo + 1 } else { lo }) | ((exact < 0.0) as u16 * 0x8000);
                assert_eq!(product::<E>(a, u), want, "lo {lo:#06x} a {a:e} u {u:e}");
            }
        }
        exercised
    }

    #[test]
    fn products_on_16_bit_midpoints_round_once() {
        let us = [3.0f32, -5.0, 7.0, 11.0, -13.0, 0.3];
        assert!(midpoints::<Bf16>((0x0080..0x7f00).step_by(5), &us) > 1000);
        assert!(midpoints::<F16>((0x0001..0x7b00).step_by(3), &us) > 1000);
        // bf16 subnormal results from an inexact f32 subnormal product.
        let tiny = [3.0 * f32::from_bits(0x2b80_0000), -7.0 * f32::from_bits(0x2b00_0000)];
        assert!(midpoints::<Bf16>(0x0001..0x007e, &tiny) > 10);
    }

    #[test]
    fn special_values_keep_nan_infinity_and_the_sign_of_zero() {
        assert_eq!(product::<F32>(f32::NAN, 1.0).to_bits(), 0x7fff_ffff);
        assert_eq!(product::<Bf16>(f32::INFINITY, 0.0), NAN16);
        assert_eq!(product::<F16>(1.0, f32::NAN), NAN16);
        assert_eq!(product::<Bf16>(-0.0, 3.0), 0x8000);
        assert_eq!(product::<F16>(0.0, -3.0), 0x8000);
        assert_eq!(product::<Bf16>(f32::INFINITY, 2.0), 0x7f80);
        assert_eq!(product::<Bf16>(f32::MAX, 2.0), 0x7f80);
        assert_eq!(product::<F16>(65504.0, 2.0), 0x7c00);
        // Tiny products: the f64 branch, subnormal and underflowing results.
        let t = f32::from_bits(1); // 2^-149
        assert_eq!(product::<Bf16>(t, 0.75), f32_to_bf16_rne(0.0));
        assert_eq!(product::<Bf16>(f32::from_bits(0x0080_0001), 0.5), f32_to_bf16_rne(f32::from_bits(0x0040_0000)));
        assert_eq!(product::<F16>(1e-30, -1e-10), 0x8000);
    }

    #[test]
    fn the_lane_rule_is_the_activation_then_the_product() {
        for g in (0..=u16::MAX).step_by(97) {
            for u in [0x3f80u16, 0xc0a0, 0x0001, 0x7f7f] {
                let a = Silu::f32(bf16_to_f32(g));
                assert_eq!(<Glu<Silu> as Op<Bf16>>::one(Glu::new(), g, u), product::<Bf16>(a, bf16_to_f32(u)));
                let a = Gelu::f32(f16_to_f32(g));
                let want = product::<F16>(a, f16_to_f32(u));
                assert_eq!(<Glu<Gelu> as Op<F16>>::one(Glu::new(), g, u), want);
                if !a.is_nan() && (a * f16_to_f32(u)).is_finite() && want != NAN16 {
                    // Away from midpoints it is the plain rounding.
                    let plain = f32_to_f16_rne(a * f16_to_f32(u));
                    assert!(plain.abs_diff(want) <= 1, "{g:#06x} {u:#06x}");
                }
            }
        }
        let x = Glu::<Silu>::new();
        assert_eq!(<Glu<Silu> as Op<F32>>::one(x, 2.0, 3.0).to_bits(), (Silu::f32(2.0) * 3.0).to_bits());
    }
}
