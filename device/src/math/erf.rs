//! `erf` and the erf-form GELU, both on one tail: `Phi(-u) = e^{-u^2/2} K(s)`
//! with `s = 3/(3 + u)` and `K` a degree-12 polynomial in `s` (relative error
//! 2^-26 for `u` in [0, 14]); the square in the exponent is kept exact as a pair.

use super::exp::{exp_r, horner, reduce};
use super::prim::{fma, rcp_seed, scale2};

/// `Phi(-u) e^{u^2/2}` as a polynomial in `s = 3/(3+u)`, u in [0, 14].
const TAIL_K: [f32; 13] = [
    -8.987_978e-7,
    0.133_010_5,
    0.132_541_13,
    0.122_041_29,
    0.066_652_84,
    0.136_511_5,
    -0.234_817_15,
    0.467_744_35,
    -0.689_012_05,
    0.580_480_5,
    -0.280_853_57,
    0.073_977_28,
    -0.008_275_692,
];
/// `erf(x)/x - 1` in `x^2` for |x| <= 1, degree 7.
const ERF_E: [f32; 8] = [
    0.128_379_17,
    -0.376_126_38,
    0.112_837_83,
    -0.026_865_445,
    0.005_221_075,
    -0.000_848_471_1,
    0.000_112_705_45,
    -9.680_137e-6,
];

/// `e^{-(qh + ql)} K(3/(3+u)) = m 2^k`, returned as `(m, k)`; `qh <= 110`.
#[inline(always)]
fn tail(qh: f32, ql: f32, u: f32) -> (f32, i32) {
    let (r, k) = reduce(-qh);
    let p = exp_r(r - ql);
    // s = 3/(3+u) with the sum kept as a pair and one quotient correction.
    let d = 3.0 + u;
    let dd = d - u;
    let dl = (3.0 - dd) + (u - (d - dd));
    let y = rcp_seed(d);
    let y = fma(y, fma(-d, y, 1.0), y);
    let s0 = 3.0 * y;
    let s = fma(fma(-s0, d, 3.0) - s0 * dl, y, s0);
    (p * horner(&TAIL_K, s), k)
}

/// The error function. Shape: |x| < 1: `x + x E(x^2)` (degree-15 odd
/// polynomial, 9 FMAs); otherwise `1 - 2 e^{-x^2} K(3/(3 + sqrt2 |x|))` with
/// `x^2` exact as a pair (one exponential, a corrected reciprocal, a degree-12
/// polynomial), clamped at |x| = 4 where erf rounds to ±1. Special values:
/// NaN -> NaN, `±0 -> ±0`, `±inf -> ±1`, subnormal inputs correctly rounded.
#[inline]
pub fn erf(x: f32) -> f32 {
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    if ax < 1.0 {
        return fma(x, horner(&ERF_E, x * x), x);
    }
    let t = if ax > 4.0 { 4.0 } else { ax };
    let q = t * t;
    let ql = fma(t, t, -q);
    let (m, k) = tail(q, ql, core::f32::consts::SQRT_2 * t);
    let v = 1.0 - scale2(2.0 * m, k);
    f32::from_bits(v.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// GELU, erf form: `x Phi(x) = 0.5 x (1 + erf(x/sqrt2))`, computed as
/// `x - |x| Phi(-|x|)` for `x >= 0` and `-|x| Phi(-|x|)` for `x < 0`, with
/// `Phi(-t) = e^{-t^2/2} K(3/(3+t))` (exact `t^2/2`, one exponential, a
/// corrected reciprocal, degree-12 polynomial): branch-free, one path for every
/// input. Special values: NaN -> NaN, `+inf -> +inf`, `-inf -> -0`, `±0 -> ±0`;
/// results underflow to -0 below about -14.2.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    let t = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let t = if t > 15.0 { 15.0 } else { t };
    let tt = t * t;
    let q = 0.5 * tt;
    let ql = 0.5 * fma(t, t, -tt);
    let (m, k) = tail(q, ql, t);
    let tail = scale2(t * m, k);
    if x.to_bits() & 0x8000_0000 == 0 {
        x - tail
    } else {
        -tail
    }
}
