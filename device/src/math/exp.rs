//! The exponential family: `exp`, `exp2`, `expm1`, and what is built on `e^x`:
//! `tanh`, `sigmoid`, `silu`, `gelu_tanh`.
//!
//! Shape: Cody–Waite reduction `x = k ln2 + r`, `|r| <= ln2/2` (the rounding of
//! `x log2e` to `k` by the 1.5·2^23 trick, `k` read from the bits), a degree-7
//! polynomial for `e^r` in Horner form on FMAs, and `2^k` built from the
//! exponent bits (two exact multiplies, so overflow and subnormal results are
//! rounded once). Coefficients: `device/tools/fit_math.py`.

use super::prim::{fma, pow2i, rcp_seed, scale2};

const LOG2E: f32 = core::f32::consts::LOG2_E;
/// ln2 split: 15 significant bits (products with |k| < 2^9 are exact), and the rest.
pub(crate) const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
pub(crate) const LN2_LO: f32 = 1.428_606_8e-6;
const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23

/// `(e^r - 1)/r` on |r| <= 0.3466, degree 6 (relative error of `e^r` 2^-29.3).
pub(crate) const EXP_P: [f32; 7] =
    [1.0, 0.5, 0.166_666_66, 0.041_666_273, 0.008_333_569, 0.001_394_590_7, 0.000_197_676_58];
/// `(2^r - 1)/r` on |r| <= 1/2, degree 6 (relative error 2^-28.7).
pub(crate) const EXP2_P: [f32; 7] =
    [0.693_147_2, 0.240_226_51, 0.055_504_102, 0.009_618_038, 0.001_333_393_5, 0.000_154_667_56, 1.519_615_4e-5];
/// `(e^r - 1 - r)/r^2` on |r| <= 0.3466, degree 5.
const EXPM1_Q: [f32; 6] = [0.5, 0.166_666_66, 0.041_666_362, 0.008_333_39, 0.001_394_062_5, 0.000_198_458_77];

#[inline(always)]
pub(crate) fn horner<const N: usize>(c: &[f32; N], x: f32) -> f32 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = fma(p, x, c[i]);
    }
    p
}

/// Cody–Waite: `x = k ln2 + r` with `k = rint(x log2e)`; `x` must be clamped to
/// |x| < 2^21. Returns `(r, k)`. NaN gives NaN `r` (and an arbitrary `k`).
#[inline(always)]
pub(crate) fn reduce(x: f32) -> (f32, i32) {
    let t = fma(x, LOG2E, MAGIC);
    let k = t.to_bits() as i32 - 0x4b40_0000;
    let kf = t - MAGIC;
    let r = fma(kf, -LN2_HI, x);
    (fma(kf, -LN2_LO, r), k)
}

/// `e^r` for the reduced `r`.
#[inline(always)]
pub(crate) fn exp_r(r: f32) -> f32 {
    exp_r_with(&EXP_P, r)
}

/// `e^r = 1 + r·c(r)` for the reduced `r`, `c` a polynomial of `(e^r - 1)/r`.
#[inline(always)]
fn exp_r_with<const N: usize>(c: &[f32; N], r: f32) -> f32 {
    fma(horner(c, r), r, 1.0)
}

/// Clamps into `[lo, hi]` keeping NaN (compare-and-select; `min`/`max` drop NaN).
#[inline(always)]
pub(crate) fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    clamp_below(if x > hi { hi } else { x }, lo)
}

/// `e^x`. Shape: clamp to [-104, 88.8], Cody–Waite reduction (2 FMAs), degree-7
/// polynomial (7 FMAs), two-step `2^k` scale; about 20 instructions, no branch.
/// Special values: NaN -> NaN, `exp(+inf) = +inf`, `exp(-inf) = +0`, overflow
/// to +inf above 88.72284, subnormal results rounded once, +0 below -103.97.
/// Max error: see `math/README.md` (exhaustive).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let (r, k) = reduce(clamp(x, -104.0, 88.8));
    scale2(exp_r(r), k)
}

/// `e^x` for `x <= 0` (and NaN, `-inf`), with the bits of [`exp`] there:
/// what softmax's terms `exp(v - max)` need, in 18 instructions instead of 24.
/// Shape: clamp below only (to -104, keeping NaN), the same reduction and
/// polynomial, and `2^k` (`k` in -150..=0) as `p · 2^(k + 64)` (exact: normal)
/// times `2^-64` (rounded once): the correctly rounded `p · 2^k`, as
/// `scale2`'s two steps give it. For `x > 0` the result is unspecified.
#[inline(always)]
pub fn exp_nonpos(x: f32) -> f32 {
    exp_nonpos_with(x, &EXP_P)
}

/// `(e^r - 1)/r` on |r| <= 0.3466, degree 3 (relative error of `e^r`
/// 2^-18.4): for results that are rounded to 16 bits.
const EXP_P16: [f32; 4] = [0.999_966_86, 0.500_030_16, 0.167_874_74, 0.041_513_842];

/// [`exp_nonpos`] with a degree-4 polynomial (15 instructions): relative error
/// below 2^-18 for results above 2^-126 (`exp_nonpos16_error` measures every
/// input), for values rounded to f16 or bf16 afterwards, where it adds at
/// most 2^-10 of their ulp (softmax's 16-bit terms). Special values as
/// [`exp_nonpos`]; for `x > 0` the result is unspecified.
#[inline(always)]
pub fn exp_nonpos16(x: f32) -> f32 {
    exp_nonpos_with(x, &EXP_P16)
}

/// `e^x`, `x <= 0`, with the polynomial `c` of `(e^r - 1)/r`.
#[inline(always)]
fn exp_nonpos_with<const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let (r, k) = reduce(clamp_below(x, -104.0));
    const TM64: f32 = f32::from_bits(0x1f80_0000); // 2^-64
    exp_r_with(c, r) * f32::from_bits(((k + 64 + 127) as u32) << 23) * TM64
}

/// `max(x, lo)` keeping NaN (compare-and-select).
#[inline(always)]
fn clamp_below(x: f32, lo: f32) -> f32 {
    if x < lo {
        lo
    } else {
        x
    }
}

/// `2^x`. Shape: clamp to [-152, 128.5], `k = rint(x)` (exact `r = x - k`,
/// |r| <= 1/2), degree-7 polynomial, two-step `2^k` scale. Special values as
/// [`exp`]; overflow at 128, underflow to +0 below -150.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    let x = clamp(x, -152.0, 128.5);
    let t = x + MAGIC;
    let k = t.to_bits() as i32 - 0x4b40_0000;
    let r = x - (t - MAGIC);
    scale2(fma(horner(&EXP2_P, r), r, 1.0), k)
}

/// `e^x - 1`, accurate near 0. Shape: Cody–Waite reduction, `e^r - 1 = r +
/// r^2 Q(r)` (degree-5 Q), then `2^k (e^r - 1) + (2^k - 1)` in one FMA (the last
/// exponent step `k = 128` is taken as `2 * 2^127`). Special values: NaN -> NaN,
/// `±0 -> ±0`, `+inf -> +inf`, `-inf -> -1`, subnormal inputs return themselves
/// (correctly rounded), overflow above 88.72284.
#[inline]
pub fn expm1(x: f32) -> f32 {
    let xc = clamp(x, -30.0, 88.8);
    let t = fma(xc, LOG2E, MAGIC);
    let k = t.to_bits() as i32 - 0x4b40_0000;
    let kf = t - MAGIC;
    let r1 = fma(kf, -LN2_HI, xc);
    let r = fma(kf, -LN2_LO, r1);
    let rl = fma(kf, -LN2_LO, r1 - r); // the rounding error of r (r1 - r is exact)
                                       // e^r - 1 = u + ul (Fast2Sum: |r| >= |r^2 Q|), so that its rounding is not
                                       // added to the final one.
    let w = fma(r * r, horner(&EXPM1_Q, r), rl);
    let u = r + w;
    let ul = (r - u) + w;
    let big = k == 128;
    let s = pow2i(if big { 127 } else { k });
    // 2^k (u + ul) + (2^k - 1): TwoSum of the two exact leading terms, then one
    // rounding of the sum with the small terms.
    let a = s - if big { 0.5 } else { 1.0 };
    // 2^k - 1 is inexact for k > 24 (a = 2^k) and k < -24 (a = -1): its error.
    let al = if k > 0 { (s - a) - 1.0 } else { s - (a + 1.0) };
    let b = s * u;
    let h = a + b;
    let bb = h - a;
    let l = (a - (h - bb)) + (b - bb);
    let t = h + fma(s, ul, l + al);
    let y = if big { t * 2.0 } else { t };
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// `n / (1 + e^{-|z|})`-style quotient shared by sigmoid, SiLU and the tanh-form
/// GELU. `z` comes as a pair `(z, zl)` (`zl = 0` unless `PAIR`). `e = e^{-|z|}` is
/// kept as a pair `(eh, el)`: `1 + r` and its exact residual plus `r^2 Q(r)`, so
/// no rounding of `e` reaches the result (the last sum is where a plain `exp`
/// loses its half ulp). The numerator is `a` for `z >= 0` and `a e` for `z < 0`,
/// carried scaled by 2^64 so that it stays normal; the denominator `1 + e` is an
/// exact pair; a reciprocal seed with one Newton step (2^-26) and one quotient
/// correction with both pairs give the quotient to about 2^-40 before its one
/// rounding. With `a = 1` it is the sigmoid, with `a = x` SiLU.
#[inline(always)]
fn logistic<const ONE: bool, const PAIR: bool>(z: f32, zl: f32, a: f32) -> f32 {
    let neg = z < 0.0;
    let az = f32::from_bits(z.to_bits() & 0x7fff_ffff);
    // Not clamped: for |z| > 120 (±inf included) the garbage below is replaced
    // by the final select, and NaN stays NaN.
    let nz = -az;
    let t = fma(nz, LOG2E, MAGIC);
    // Wrapping: k is garbage (and may overflow) for |z| > 120.
    let k = t.to_bits().wrapping_sub(0x4b40_0000);
    let kf = t - MAGIC;
    let r1 = fma(kf, -LN2_HI, nz); // exact
    let (r, rl) = if PAIR {
        // -|z| = nz + (the low part of z with the sign of -|z|), folded into r1.
        let nzl = if neg { zl } else { -zl };
        let u = r1 + nzl;
        let r = fma(kf, -LN2_LO, u);
        (r, fma(kf, -LN2_LO, u - r) + ((r1 - u) + nzl))
    } else {
        let r = fma(kf, -LN2_LO, r1);
        (r, fma(kf, -LN2_LO, r1 - r))
    };
    let (eh, el) = if PAIR {
        // e^{r + rl} = eh + el: 1 + r rounded, its exact residual, r^2 Q(r) +
        // rl (1 + r); then normalised (Fast2Sum), so that the low parts below
        // stay under an ulp and one quotient correction with `1/dh` suffices.
        let eh = 1.0 + r;
        let el = fma(r * r, horner(&EXPM1_Q, r), ((1.0 - eh) + r) + fma(rl, r, rl));
        let h = eh + el;
        (h, (eh - h) + el)
    } else {
        // Cheaper: the last FMA's rounding is kept (exact residual, as
        // 1 - eh is exact), the polynomial's own last rounding (<= 2^-25.5
        // relative, times r) is not.
        let p = horner(&EXP_P, r);
        let eh = fma(p, r, 1.0);
        (eh, fma(p, r, 1.0 - eh) + rl)
    };
    // 2^(k+64), normal: k >= -174 for |z| <= 120.
    let s = f32::from_bits(k.wrapping_add(64 + 127) << 23);
    let (bh, bl) = (eh * s, el * s); // e 2^64, exact
    const TM64: f32 = f32::from_bits(0x1f80_0000); // 2^-64
    let e = bh * TM64; // may be subnormal; then it is far below 1's ulp
    let dh = 1.0 + e;
    let dl = fma(bl, TM64, (1.0 - dh) + e);
    let (num, numl) = if neg { (bh, bl) } else { (1.0, 0.0) };
    let sc = if neg { TM64 } else { 1.0 };
    let (nh, nl) = if ONE {
        (num, numl)
    } else {
        let nh = num * a;
        (nh, fma(numl, a, fma(num, a, -nh)))
    };
    let y = rcp_seed(dh);
    let y = fma(y, fma(-dh, y, 1.0), y);
    let q0 = nh * y;
    let res = fma(-q0, dh, nh) + fma(-q0, dl, nl);
    let q = fma(res, y, q0) * sc;
    // |z| > 120 (±inf included): the quotient is `a` for z > 0 and under 2^-150
    // for z < 0 (+0 for the sigmoid, -0 for SiLU/GELU, whose `a = x < 0` there).
    // Selects, no branch; NaN fails the compare and stays NaN.
    let q = if az > 120.0 {
        if !neg {
            a
        } else if ONE {
            0.0
        } else {
            -0.0
        }
    } else {
        q
    };
    // SiLU/GELU: the result has the sign of `x` (this gives `-0` for `x = -0`).
    if ONE {
        q
    } else {
        f32::from_bits(q.to_bits() | (a.to_bits() & 0x8000_0000))
    }
}

/// The logistic function `1/(1 + e^{-x})` without IEEE division. Shape: one
/// `e^{-|x|}` as a pair (reduction with its low part, degree-7 polynomial whose
/// last FMA's residual is kept, exponent build), the denominator as an exact
/// pair, a reciprocal seed with one Newton step and one FMA quotient correction
/// on both pairs; branch-free, 49 PTX instructions. Max 0.78 ulp
/// (sampled). Special values: NaN -> NaN, `sigmoid(+inf) = 1`,
/// `sigmoid(-inf) = +0`, subnormal results below -87.3.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    logistic::<true, false>(x, 0.0, 1.0)
}

/// SiLU `x * sigmoid(x)`, computed as `x / (1 + e^{-x})` with the numerator
/// product kept as a pair (see [`sigmoid`]'s shape; branch-free, 55 PTX
/// instructions). Max 0.76 ulp (sampled). Special values: NaN -> NaN,
/// `silu(+inf) = +inf`, `silu(-inf) = -0`, `silu(±0) = ±0`.
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    logistic::<false, false>(x, 0.0, x)
}

/// The large-argument tanh, `1 - 2/(1 + e^{2|x|})` with
/// the denominator from one FMA `2^k (1 + p') + 1` and a corrected reciprocal.
#[inline(always)]
fn tanh_big(ax: f32) -> f32 {
    let (r, k) = reduce(2.0 * clamp(ax, 0.0, 9.5));
    let pm1 = horner(&EXP_P, r) * r; // e^r - 1
    let s = pow2i(k);
    let dh = fma(s, pm1, s + 1.0);
    let y = rcp_seed(dh);
    let y = fma(y, fma(-dh, y, 1.0), y);
    // 2/d with the residual of d itself ((s + 1) - dh is exact: Sterbenz).
    let dl = fma(s, pm1, (s + 1.0) - dh);
    let q0 = 2.0 * y;
    let res = fma(-q0, dh, 2.0) - q0 * dl;
    let q = fma(res, y, q0);
    1.0 - q
}

/// `(tanh x - x)/x^3` in `x^2` for |x| <= 0.625, degree 5.
pub(crate) const TANH_T: [f32; 6] =
    [-0.333_333_3, 0.133_332_06, -0.053_946_763, 0.021_700_701, -0.008_177_394, 0.002_142_958_3];

/// The hyperbolic tangent. Shape: `|x| < 0.625`: odd polynomial `x + x^3 T(x^2)`
/// (degree 13); otherwise `1 - 2/(1 + e^{2|x|})` (one exponential, a corrected
/// reciprocal); the sign copied back. Special values: NaN -> NaN, `±0 -> ±0`,
/// `±inf -> ±1`, subnormal inputs return themselves.
#[inline]
pub fn tanh(x: f32) -> f32 {
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let t = if ax < 0.625 {
        let x2 = ax * ax;
        fma(ax * x2, horner(&TANH_T, x2), ax)
    } else {
        tanh_big(ax)
    };
    f32::from_bits(t.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// The tanh-form GELU `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, computed
/// as `x / (1 + e^{-z})` with `z = 2 sqrt(2/pi) (x + 0.044715 x^3)` (the same
/// quotient as [`silu`]). `z` is formed as a pair (`x^2` exact, both constants
/// as pairs, `C1 + C3 x^2` by an ordered Fast2Sum): the result's relative error
/// is the absolute error of `z`, which in plain f32 grows with `|z|` (157 ulp
/// at x = -9.8). Max 0.61 ulp (sampled), 89 PTX instructions, branch-free.
/// Special values: NaN -> NaN, `+inf -> +inf`, `-inf -> -0`, `±0 -> ±0`.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const C1H: f32 = f32::from_bits(0x3fcc_422a); // 2 sqrt(2/pi), rounded
    const C1L: f32 = f32::from_bits(0xb342_bc9b); // 2 sqrt(2/pi) - C1H
    const C3H: f32 = f32::from_bits(0x3d92_2279); // 2 sqrt(2/pi) 0.044715, rounded
    const C3L: f32 = f32::from_bits(0x3124_d8b5); // its remainder
                                                  // |x| >= 16: the quotient is x (z > 120) or 0 (z < -120); clamping keeps x^2 finite.
    let xc = clamp(x, -16.0, 16.0);
    let x2 = xc * xc;
    let x2l = fma(xc, xc, -x2);
    let p = C3H * x2;
    let pl = fma(C3H, x2, -p);
    let uh = C1H + p;
    let (big, small) = (C1H.max(p), C1H.min(p));
    let ul = fma(C3H, x2l, fma(C3L, x2, pl + C1L)) + ((big - uh) + small);
    let zh = xc * uh;
    let zl = fma(xc, ul, fma(xc, uh, -zh));
    logistic::<false, true>(zh, zl, x)
}
