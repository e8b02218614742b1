//! `erf`: a polynomial below 0.82, above it `1 - e^{-x^2} erfcx(x)` with
//! `erfcx` a polynomial in `2/(2+x)`. (The erf-form GELU is in `gelu.rs`.)

use super::exp::{horner, reduce, EXP_P};
use super::prim::{fma, pow2i, rcp_seed};

/// `erf(x)/x - 1` in `x^2` for |x| <= ERF_T, degree 6.
const ERF_E: [f32; 7] =
    [0.128_379_17, -0.376_126_3, 0.112_836_11, -0.026_853_826, 0.005_184_421_3, -0.000_791_472_5, 7.199_496e-5];
/// `e^{x^2} erfc(x)` in `v = 2/(2+x) - ERFC_C` for x in [0.8, 4], degree 7.
/// `ERFC_C` (near the middle of the range) is where `erfcx` is within 2^-36
/// of an f32, so that the constant term's rounding does not bound the fit.
const ERFC_K: [f32; 8] =
    [0.284_964_74, 0.920_910_66, 1.030_114_4, 0.637_269_4, 0.021_685_038, -0.231_776_77, -0.025_495_997, 0.121_055_51];
const ERFC_C: f32 = 0.533_325_2;
/// The switch: below it the polynomial's Horner roundings (x^2 near 1) and
/// above it the tail's (erfc near 0.2) both stay under 0.3 ulp.
const ERF_T: f32 = 0.82;

/// The error function. Shape: |x| < 0.82: `x + x E(x^2)` (degree-13 odd
/// polynomial, 7 FMAs); otherwise `1 - 2^k erfcx(x) (1 + pm1)` with
/// `e^{-x^2} = 2^k (1 + pm1)` from `x^2` exact as a pair (degree-7 exponential
/// polynomial), `erfcx` a degree-7 polynomial in `2/(2+|x|)` (a corrected
/// reciprocal), and `1 - 2^k erfcx` an exact pair so that only the last sum
/// rounds at the scale of the result; clamped at |x| = 4 where erf rounds to
/// ±1. Max 0.80 ulp (all 2^32 inputs). Special values: NaN -> NaN, `±0 -> ±0`,
/// `±inf -> ±1`, subnormal inputs correctly rounded.
#[inline]
pub fn erf(x: f32) -> f32 {
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    if ax < ERF_T {
        return fma(x, horner(&ERF_E, x * x), x);
    }
    let t = if ax > 4.0 { 4.0 } else { ax };
    let q = t * t;
    let ql = fma(t, t, -q);
    let (r, k) = reduce(-q);
    let r = r - ql;
    // e^{-x^2} = 2^k (1 + pm1).
    let pm1 = horner(&EXP_P, r) * r;
    // v = 2/(2+t) - ERFC_C: 2 + t and its exact rounding error (t <= 4), a
    // corrected reciprocal, one quotient correction; s0 - ERFC_C is exact (Sterbenz).
    let d = 2.0 + t;
    let dl = t - (d - 2.0);
    let y = rcp_seed(d);
    let y = fma(y, fma(-d, y, 1.0), y);
    let s0 = 2.0 * y;
    let v = fma(fma(-s0, d, 2.0) - s0 * dl, y, s0 - ERFC_C);
    let kk = horner(&ERFC_K, v);
    // erf = 1 - 2^k K (1 + pm1): 1 - 2^k K as an exact pair (h, hl), so that
    // neither the product's nor e^{-x^2}'s rounding reaches the result.
    let sk = pow2i(k) * kk;
    let h = 1.0 - sk;
    let hl = (1.0 - h) - sk;
    let v = h + fma(-sk, pm1, hl);
    f32::from_bits(v.to_bits() | (x.to_bits() & 0x8000_0000))
}
