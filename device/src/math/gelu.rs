//! The erf-form GELU, `x Φ(x)`, to within 1 ulp: `-t Φ(-t)` below zero and
//! `x - t Φ(-t)` above (`t = |x|`), with
//!
//! `t Φ(-t) = 2^k e^ρ · (t v) G(v)`, `-t²/2 = k ln2 + ρ`, `v = 1/(3 + t)`,
//! `G = (3 + t) e^{t²/2} Φ(-t)` (0.49 … 1.5, a degree-10 polynomial in
//! `v - GC`, fit 2^-29.5 on t ∈ [0, 13.2]).
//!
//! Every factor is carried as a pair up to the one final rounding: `t²` and the
//! reduction `ρ = r + rl` exact to 2^-40, `e^ρ - 1 = r + r²/2 + b` with `r²`
//! exact and only the small `b` rounded, `v = y1 + dv` (`y1` the rounded
//! reciprocal, `u = y1 - GC` exact, `dv` its residual, `G(v) ≈ G(u) + G'·dv`
//! with a linear `G'`), the last two Horner steps of `G` as pairs, `t v` as a
//! pair. The negative side is `-(2^k A (1 + pm1))` rounded once (then scaled
//! into the subnormals: a second rounding there, after a first that is 2^-24 of
//! the result, at most half a subnormal ulp just below 2^-126); the
//! positive side `x - 2^k A`, an exact pair, plus the rest. Max 0.953 ulp over
//! all 2^32 inputs, at -1.85186 (README). Branch-free on the GPU (selects).

use super::exp::{horner, LN2_HI, LN2_LO};
use super::prim::{fma, pow2i, rcp_seed};

const LOG2E: f32 = core::f32::consts::LOG2_E;
const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
/// `(e^r - 1 - r - r²/2)/r³` on |r| <= ln2/2 (the `expm1` fit's tail).
const EXP_Q1: [f32; 5] = [0.166_666_66, 0.041_666_362, 0.008_333_39, 0.001_394_062_5, 0.000_198_458_77];
/// The centre of `G`'s variable: a multiple of 2^-25 at most 3/16, so that
/// `y1 - GC` is exact for `y1` in [1/16, 1/2] (t ≤ 13), and where `G` is
/// within 2^-36 of an f32 (`G0`).
const GC: f32 = 0.187_475_53;
const G0: f32 = 0.796_350_24;
const G1: f32 = 3.413_336_5;
/// `G`'s coefficients of degree 2 to 10 in `u = v - GC`.
const G2: [f32; 9] =
    [8.877_981, 8.855_845, -18.802_586, -45.826_916, 84.101_81, 203.267_56, -596.583_3, -630.672_06, 3_318.457];
/// `G'` (with respect to `v`) as `D0 + D1 u`: only multiplies the residual `dv`
/// (2^-23.5 relative), so 2^-5 relative is enough.
const D0: f32 = 3.581_853_2;
const D1: f32 = 17.638_899;
/// The clamp: above it the negative side is below 2^-150 (-0) and the
/// positive side is `x`.
const TMAX: f32 = 14.5;

/// GELU, erf form: `x Φ(x) = x/2 (1 + erf(x/√2))`. Shape above (module doc).
/// Special values: NaN -> NaN, `+inf -> +inf`, `-inf -> -0`, `±0 -> ±0`;
/// |x| < 2^-100: `x/2` rounded as the exact `x/2 + x²/√(2π)` is (toward +inf on
/// the subnormal ties); results underflow to -0 below about -14.2.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    let t = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let t = if t > TMAX { TMAX } else { t };
    // -t²/2 = k ln2 + r + rl: t² = h + l exact, kf LN2_HI exact, r1 exact.
    let h = t * t;
    let l = fma(t, t, -h);
    let tk = fma(h, -0.5 * LOG2E, MAGIC);
    let k = tk.to_bits() as i32 - 0x4b40_0000;
    let kf = tk - MAGIC;
    let r1 = fma(-0.5, h, kf * -LN2_HI);
    let c = fma(-0.5, l, kf * -LN2_LO);
    let r = r1 + c;
    let rl = (r1 - r) + c;
    // e^{r + rl} - 1 = r + hr + b: hr = r²/2 rounded, b the rest (with r²'s
    // exact residual and rl), |b| < 0.009.
    let rr = r * r;
    let hr = 0.5 * rr;
    let b = fma(rr * r, horner(&EXP_Q1, r), fma(0.5, fma(r, r, -rr), rl));
    // v = 1/(3 + t) = y1 + dv: 3 + t = d + dl exact, y1 the refined seed,
    // e its exact residual; u = y1 - GC exact, ul its rounding where t > 13.
    let d = 3.0 + t;
    let dl = t - (d - 3.0);
    let y0 = rcp_seed(d);
    let y1 = fma(y0, fma(-d, y0, 1.0), y0);
    let e = fma(-dl, y1, fma(-d, y1, 1.0));
    let u = y1 - GC;
    let ul = y1 - (GC + u);
    let dv = fma(y1, e, ul);
    // t v = p + pw.
    let p = t * y1;
    let pw = fma(p, e, fma(t, y1, -p));
    // G(v) = gh + gl: the last two Horner steps as pairs (the subtractions
    // are exact: both partial sums stay within a factor 2 of their constant).
    let p2 = horner(&G2, u);
    let p1 = fma(u, p2, G1);
    let p1l = fma(u, p2, G1 - p1);
    let gh = fma(u, p1, G0);
    let gl = fma(fma(u, D1, D0), dv, fma(u, p1l, fma(u, p1, G0 - gh)));
    // A = t K = (p + pw)(gh + gl) = a + al.
    let a = p * gh;
    let al = fma(pw, gh, fma(p, gl, fma(p, gh, -a)));
    // A e^ρ = a + w (w: everything but a, one rounding of size <= 0.41 a).
    let w = fma(a, r, fma(a, hr, fma(a, b, fma(al, r + hr, al))));
    // 2^k as 2^k1 2^(k - k1), k1 >= -120 (so that 2^k1 a is normal).
    let k1 = if k < -120 { -120 } else { k };
    let s1 = pow2i(k1);
    let sk = s1 * a;
    // |x| < 2^-100: x/2, with the tie of a subnormal x/2 broken as x/2 + x²/√(2π) breaks it.
    let tiny = t < f32::from_bits(0x0d80_0000);
    let xm = x * if t < f32::from_bits(0x0100_0000) { 0.499_999_97 } else { 0.5 };
    // Both sides, then selects (no branch): the negative side rounded once
    // before its exact (or subnormal) scaling; the positive side as
    // `x - 2^k (a + w)` with `x - sk` an exact pair (Fast2Sum, x >= sk).
    let neg = -(fma(s1, w, sk) * pow2i(k - k1));
    let hi = x - sk;
    let lo = (x - hi) - sk;
    let pos = hi + fma(-s1, w, lo);
    let pos = if x > TMAX { x } else { pos }; // +inf (lo is NaN there)
    let sign = x.to_bits() & 0x8000_0000 != 0;
    let y = if sign { neg } else { pos };
    let y_tiny = if sign { xm } else { x - xm };
    if tiny {
        y_tiny
    } else {
        y
    }
}
