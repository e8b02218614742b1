//! The logarithms `log`, `log2`, `log1p`, and `pow` on a log2 kept as a pair.
//!
//! Shape: `x = 2^e m` with `m` in [2/3, 4/3) read from the bits (subnormals
//! scaled by 2^23 first), `f = m - 1` exact, `log(1+f) = f + f^2 Q(f)` with a
//! degree-9 `Q` (|f| <= 1/3), then `e ln2` added in two parts.

use super::exp::{horner, EXP2_P, LN2_HI, LN2_LO};
use super::prim::{fma, scale2};

/// `(log1p(f) - f)/f^2` on |f| <= 1/3, degree 9.
const LOG_Q: [f32; 10] = [
    -0.5,
    0.333_333_37,
    -0.249_996_48,
    0.199_994_18,
    -0.166_843_06,
    0.143_088_74,
    -0.121_446_61,
    0.107_102_036,
    -0.130_350_35,
    0.121_613_29,
];
/// `(log2(1+f) - f/ln2)/f^2` on |f| <= 1/3, degree 9, coefficients rounded greedily.
const LOG2_Q: [f32; 10] = [
    -0.7213476,
    0.48089838,
    -0.36066574,
    0.28853354,
    -0.24080792,
    0.2063603,
    -0.17386541,
    0.15522513,
    -0.19377442,
    0.17311415,
];
/// `(ln(1+f) - f + f^2/2 - f^3/3)/f^4` on |f| <= 1/3, degree 9 (pow's log2 pair).
const POW_R: [f32; 10] = [
    -0.25000006,
    0.2000001,
    -0.16666003,
    0.14284766,
    -0.12524746,
    0.11141451,
    -0.0959376,
    0.08644861,
    -0.11308919,
    0.106915206,
];
const C1H: f32 = core::f32::consts::LOG2_E;
const C1L: f32 = 1.925_963e-8; // 1/ln2 - C1H

/// `(e, f)` with `x = 2^e (1 + f)`, `f` in [-1/3, 1/3); `x` positive and finite.
#[inline(always)]
fn split(x: f32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x };
    let ix = xs.to_bits();
    let e = (ix.wrapping_sub(0x3f2a_aaab) as i32) >> 23;
    let m = f32::from_bits(ix.wrapping_sub((e << 23) as u32));
    ((e - if sub { 23 } else { 0 }) as f32, m - 1.0)
}

/// The special values shared by the logarithms of `x` outside (0, inf):
/// `log(±0) = -inf`, negative -> NaN, `+inf -> +inf`, NaN -> NaN.
#[cold]
#[inline(never)]
fn log_special(x: f32) -> f32 {
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 {
        f32::NAN
    } else {
        x + x
    }
}

/// The natural logarithm. Shape: exponent/mantissa split (integer ops), degree-9
/// polynomial (10 FMAs), `e ln2` in two FMAs. Special values: `log(±0) = -inf`,
/// `log(x<0) = NaN`, `log(+inf) = +inf`, `log(1) = +0`, NaN -> NaN; subnormal
/// inputs exact (scaled by 2^23).
#[inline]
pub fn log(x: f32) -> f32 {
    if !(x > 0.0 && x < f32::INFINITY) {
        return log_special(x);
    }
    let (e, f) = split(x);
    let lp = fma(f * f, horner(&LOG_Q, f), f);
    fma(e, LN2_HI, fma(e, LN2_LO, lp))
}

/// The base-2 logarithm. Shape: the split of [`log`], `e + f (1/ln2)_hi` as an
/// exact pair (the product by FMA, the sum by Fast2Sum), and `f^2 Q(f)` with a
/// log2-fitted degree-9 `Q` and `f^2` exact as a pair (its rounding cost 0.2
/// ulp just above x = 4/3, where the result sits low in its binade); the low
/// terms summed first, one final rounding. Max 0.78 ulp (all 2^32 inputs).
/// Exact for powers of two. Special values as [`log`].
#[inline]
pub fn log2(x: f32) -> f32 {
    if !(x > 0.0 && x < f32::INFINITY) {
        return log_special(x);
    }
    let (e, f) = split(x);
    let a = f * C1H;
    let al = fma(f, C1H, -a);
    let f2 = f * f;
    let f2l = fma(f, f, -f2);
    let q = horner(&LOG2_Q, f);
    let s = e + a;
    let sl = (e - s) + a;
    let lo = fma(f, C1L, al) + sl;
    s + fma(f2, q, fma(f2l, q, lo))
}

/// `log(1 + x)`, accurate near 0. Shape: for |x| < 1/3 the polynomial on `x`
/// itself; otherwise the split of `u = 1 + x` plus the rounding correction
/// `(x - (u - 1))/u` (one IEEE division, off the small-argument path). Special
/// values: `log1p(-1) = -inf`, `x < -1` -> NaN, `+inf -> +inf`, `±0 -> ±0`,
/// NaN -> NaN, subnormal inputs return themselves.
#[inline]
pub fn log1p(x: f32) -> f32 {
    if !(x > -1.0 && x < f32::INFINITY) {
        return log_special(x + 1.0);
    }
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    if ax < 1.0 / 3.0 {
        if ax < 1e-30 {
            return x;
        }
        return fma(x * x, horner(&LOG_Q, x), x);
    }
    let u = 1.0 + x;
    let c = (x - (u - 1.0)) / u;
    let (e, f) = split(u);
    // e ln2_hi + f (exact product; Fast2Sum: |f| < 1/3 < ln2 unless e = 0, when
    // it is exact anyway) kept as a pair, the small terms added, one rounding.
    let p = e * LN2_HI;
    let s = p + f;
    let sl = (p - s) + f;
    s + (fma(f * f, horner(&LOG_Q, f), fma(e, LN2_LO, c)) + sl)
}

/// `|x|` (finite, > 0) -> `log2 |x|` as a pair `(h, l)`, about 2^-33 relative
/// (pow's `y log2 x` reaches 150 in magnitude: its absolute error must stay
/// near 2^-25). `ln(1+f) = f - f^2/2 + f^3 (1/3 + f R(f))`: `f - f^2/2` exact as
/// a pair (f^2 exact, Fast2Sum), `1/3 + f R` with its rounding error, the f^3
/// product as a pair, then times `1/ln2` as a pair and `e` added by Fast2Sum.
#[inline(always)]
fn log2_pair(x: f32) -> (f32, f32) {
    const THIRD_H: f32 = 0.333_333_34;
    const THIRD_L: f32 = -9.934_108e-9;
    let (e, f) = split(x);
    let f2 = f * f;
    let f2l = fma(f, f, -f2);
    let (h2, h2l) = (0.5 * f2, 0.5 * f2l);
    let g = f - h2; // |f| >= f^2/2: Fast2Sum
    let gl = ((f - g) - h2) - h2l;
    let f3 = f2 * f;
    let f3l = fma(f2, f, -f3) + f2l * f;
    let rr = horner(&POW_R, f);
    let u = fma(f, rr, THIRD_H);
    let ul = fma(f, rr, THIRD_H - u) + THIRD_L; // THIRD_H - u is exact (Sterbenz)
    let t = f3 * u;
    let tl = fma(f3, u, -t) + fma(f3, ul, f3l * u);
    let s = g + t; // |g| >= |t|
    let sl = ((g - s) + t) + (gl + tl);
    // (s + sl) / ln2, then + e.
    let p = s * C1H;
    let pl = fma(s, C1H, -p) + fma(s, C1L, sl * C1H);
    let h = e + p; // exact when e == 0; otherwise |p| < |e| and Fast2Sum applies
    let l = ((e - h) + p) + pl;
    let hh = h + l;
    (hh, (h - hh) + l)
}

/// True when `y` (finite) is an integer; `.1` is true when it is an odd one.
#[inline(always)]
fn int_parity(y: f32) -> (bool, bool) {
    let ay = f32::from_bits(y.to_bits() & 0x7fff_ffff);
    if ay >= 16_777_216.0 {
        return (true, false);
    }
    let t = (ay + 8_388_608.0) - 8_388_608.0; // rint for ay < 2^23
    let is_int = if ay >= 8_388_608.0 { true } else { t == ay };
    let odd = is_int && ((ay as u32) & 1) == 1;
    (is_int, odd)
}

/// `x^y` (C99 `powf`). Shape: `log2|x|` as a pair to about 2^-33 (see
/// `log2_pair`), `y log2|x|` as a pair, then `2^t` (reduction with the low part
/// folded in, degree-7 polynomial, two-step scale); sign from the parity of an
/// integer `y`. Max 0.87 ulp on 2M random pairs, 1.03 at 16 fixed exponents
/// (sampled). Special values (C99 F.10.4.4):
/// `pow(x, ±0) = 1` and `pow(1, y) = 1` even for NaN, NaN otherwise propagates,
/// `pow(±0, y<0)` = ±inf for odd integer `y` else +inf, `pow(±0, y>0)` = ±0 for
/// odd integer `y` else +0, `pow(-1, ±inf) = 1`, `|x| < 1` / `> 1` with ±inf
/// `y` give +0 or +inf, `pow(-inf, y)` and `pow(+inf, y)` by the sign and
/// parity of `y`, negative finite `x` with non-integer `y` gives NaN.
pub fn pow(x: f32, y: f32) -> f32 {
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let ay = f32::from_bits(y.to_bits() & 0x7fff_ffff);
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x != x || y != y {
        return x + y;
    }
    let (is_int, odd) = if ay == f32::INFINITY { (true, false) } else { int_parity(y) };
    let neg = x.to_bits() >> 31 == 1 && odd;
    if ay == f32::INFINITY {
        return if ax == 1.0 {
            1.0
        } else if (ax < 1.0) == (y < 0.0) {
            f32::INFINITY
        } else {
            0.0
        };
    }
    if ax == 0.0 || ax == f32::INFINITY {
        let big = (ax == 0.0) == (y < 0.0);
        let r = if big { f32::INFINITY } else { 0.0 };
        return if neg { -r } else { r };
    }
    if x < 0.0 && !is_int {
        return f32::NAN;
    }
    let (h, l) = log2_pair(ax);
    let th = y * h;
    let tl = fma(y, h, -th) + y * l;
    // Far outside the range the result is inf or 0 whatever the low part (which
    // may then be several units, and 2^tl out of the polynomial's range).
    let big = !(-300.0..=300.0).contains(&th);
    let tl = if big { 0.0 } else { tl };
    let th = if th > 300.0 {
        300.0
    } else if th < -300.0 {
        -300.0
    } else {
        th
    };
    let t = th + 12_582_912.0;
    let k = t.to_bits() as i32 - 0x4b40_0000;
    let r = (th - (t - 12_582_912.0)) + tl;
    let k = if k > 200 {
        200
    } else if k < -200 {
        -200
    } else {
        k
    };
    let v = scale2(fma(horner(&EXP2_P, r), r, 1.0), k);
    if neg {
        -v
    } else {
        v
    }
}
