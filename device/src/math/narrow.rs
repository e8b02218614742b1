//! The activations for results rounded to f16 or bf16: f32 functions from FMA,
//! integer and IEEE-rounded operations only (the same bits on host and device,
//! like the rest of [`crate::math`]), accurate to about 2^-21 relative instead
//! of the ≤ 1 ulp (2^-24) of the f32 functions, and therefore cheaper: lower
//! polynomial degrees, no pair arithmetic, one Newton step on a bit-seeded
//! reciprocal instead of a corrected quotient, no branch.
//!
//! A 16-bit element moves 2 bytes each way, so at memory speed an H200 has
//! about 28 thread-instructions per element for everything (unpacking,
//! converting, the function, packing); the f32 functions cost 24–89.
//!
//! Why 2^-21 is enough: an f32 result with relative error ε rounds to the
//! correctly rounded bf16 (8-bit significand) or f16 (11-bit) value unless the
//! exact value lies within ε of a rounding boundary of the narrow type; over
//! all 2^16 inputs of each type the exhaustive test (`narrow_tests.rs`) counts
//! the inputs where that happens and lists each one.

use super::exp::{clamp, horner, reduce};
use super::prim::{fma, pow2i, rcp_seed, scale2};

/// `(e^r - 1)/r` on |r| <= ln2/2, degree 5 (relative error of `e^r` 2^-25.8).
const EXP_P: [f32; 6] = [1.0, 0.499_999_94, 0.166_664_32, 0.041_668_002, 0.008_374_162, 0.001_384_364_6];
/// `(e^r - 1 - r)/r^2` on |r| <= ln2/2, degree 3 (2^-21.1 of `e^r - 1`).
const EXPM1_Q: [f32; 4] = [0.499_994, 0.166_668_31, 0.041_872_598, 0.008_338_071];
/// `(log1p(f) - f)/f^2` on |f| <= 1/3, degree 6 (2^-22.3 of `log1p f`).
pub(crate) const LOG_Q: [f32; 7] =
    [-0.499_999_6, 0.333_367_35, -0.250_063_2, 0.198_181_69, -0.164_408_25, 0.169_905_59, -0.152_667_34];

/// `1/d` for `d` in [1, 2^100): the bit seed with its cubic step (2^-12.9),
/// then one Newton step (2^-25.8). No special values: callers keep `d` there.
#[inline(always)]
fn rcp_fast(d: f32) -> f32 {
    let y = rcp_seed(d);
    fma(y, fma(-d, y, 1.0), y)
}

/// `e^x` to about 2^-22: clamp, Cody–Waite, degree-5 polynomial, two-step
/// scale (subnormal results rounded once). NaN -> NaN, -inf -> +0, +inf -> +inf.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let (r, k) = reduce(clamp(x, -104.0, 88.8));
    scale2(fma(horner(&EXP_P, r), r, 1.0), k)
}

/// `e^{-a}` for `a >= 0` (NaN kept), the sigmoid family's core. With
/// `k` in [-150, 0], `2^k p` is `(2^{k+24} p)·2^-24`: the first factor is a
/// normal power of two, the second multiply rounds a subnormal result once;
/// 4 instructions where [`scale2`] takes 9.
#[inline(always)]
fn exp_neg(a: f32) -> f32 {
    let (r, k) = reduce(-clamp(a, 0.0, 104.0));
    fma(horner(&EXP_P, r), r, 1.0) * pow2i(k + 24) * f32::from_bits(0x3380_0000)
}

/// `1/(1 + e^{-x})`: `e = e^{-|x|}`, `s = 1/(1 + e)`, then `s` or `e·s` by
/// the sign. NaN -> NaN, ±inf -> 1, +0.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    let e = exp_neg(f32::from_bits(x.to_bits() & 0x7fff_ffff));
    let s = rcp_fast(1.0 + e);
    if x < 0.0 {
        e * s
    } else {
        s
    }
}

/// `x·sigmoid(x)`; -inf -> -0 (the limit; `-inf·0` would be NaN).
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    let y = x * sigmoid(x);
    if x < -200.0 {
        -0.0
    } else {
        y
    }
}

/// `e^a - 1` for `a` in [0, 20] (the caller clamps): `2^k (r + r²Q(r)) + 2^k - 1`,
/// with no cancellation for `k = 0` and none possible for `k >= 1`.
#[inline(always)]
fn expm1_pos(a: f32) -> f32 {
    let (r, k) = reduce(a);
    let p = fma(r * r, horner(&EXPM1_Q, r), r);
    let s = pow2i(k);
    fma(s, p, s - 1.0)
}

/// `tanh x = t/(t + 2)` with `t = e^{2|x|} - 1`, the sign copied back; `|x|`
/// clamped at 10, where `t/(t + 2)` rounds to 1 in f32 (tanh rounds to 1 in
/// every 16-bit type from 4.5). NaN -> NaN,
/// ±0 -> ±0, ±inf -> ±1.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = clamp(f32::from_bits(x.to_bits() & 0x7fff_ffff), 0.0, 10.0);
    let t = expm1_pos(a + a);
    let y = t * rcp_fast(t + 2.0);
    f32::from_bits(y.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// `ln x`: the bits split `x = 2^e m` with `m` in [2/3, 4/3) (inputs below
/// 2^-126, bf16's subnormals, scaled by 2^23 first), `f = m - 1`,
/// `f + f²Q(f) + e ln2`. NaN and x < 0 -> NaN, ±0 -> -inf, +inf -> +inf.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    // m in [2/3, 4/3): move the exponent so the significand lands there.
    let bits = xs.to_bits().wrapping_sub(0x3f2a_aaab);
    let e = (bits as i32 >> 23) - if tiny { 23 } else { 0 };
    let m = f32::from_bits((bits & 0x007f_ffff).wrapping_add(0x3f2a_aaab));
    let f = m - 1.0;
    let y = fma(f * f, horner(&LOG_Q, f), f);
    let y = fma(e as f32, super::exp::LN2_HI, fma(e as f32, super::exp::LN2_LO, y));
    if x > 0.0 && x < f32::INFINITY {
        y
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// `1/√x` from the bits: the seed `0x5f37_5a86 - bits/2` (3.4%), three
/// Newton steps `y(3/2 - (x/2)y²)` (2^-4.9 → 2^-9.2 → 2^-17.8 → 2^-34), no
/// square root or division; bf16's subnormals scaled by 2^24 first. Special
/// values from the bits: ±0 -> ±inf, +inf -> +0, x < 0 and NaN -> NaN.
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 16_777_216.0 } else { x }; // 2^24
    let h = 0.5 * xs;
    let mut y = f32::from_bits(0x5f37_5a86u32.wrapping_sub(xs.to_bits() >> 1));
    for _ in 0..3 {
        y *= fma(-h * y, y, 1.5);
    }
    let y = y * if tiny { 4096.0 } else { 1.0 }; // 2^12
    if x > 0.0 && x < f32::INFINITY {
        y
    } else if x == 0.0 {
        f32::from_bits(x.to_bits() | 0x7f80_0000)
    } else if x == f32::INFINITY {
        0.0
    } else {
        f32::NAN
    }
}

/// GELU's tanh form, `x·sigmoid(2z)`, `z = √(2/π)(x + 0.044715x³)`:
/// `2z = x(C1 + C3x²)` then [`sigmoid`]'s shape. -inf -> -0, +inf -> +inf.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const C1: f32 = 1.595_769_1; // 2√(2/π)
    const C3: f32 = 0.071_354_82; // 2√(2/π)·0.044715
    let z2 = x * fma(C3, x * x, C1);
    let e = exp_neg(f32::from_bits(z2.to_bits() & 0x7fff_ffff));
    let s = rcp_fast(1.0 + e);
    let y = x * if z2 < 0.0 { e * s } else { s };
    if x < -200.0 {
        -0.0
    } else {
        y
    }
}

/// `K(s)` with `s = 3/(3 + t) - 1/2` in [-0.324, 0.5]: `e^{t²/2}Φ(-t)` for
/// `t` in [0, 14], degree 9 (relative error 2^-22.7 after rounding to f32).
pub(crate) const GELU_K: [f32; 10] = [
    0.121_513_95,
    0.412_805_23,
    0.492_900_13,
    0.369_706_33,
    0.098_113_135,
    -0.092_945_8,
    -0.062_960_55,
    0.043_454_1,
    0.029_579_24,
    -0.027_480_086,
];

/// The exact GELU `xΦ(x)`: `Φ(-t) = e^{-t²/2}K(t)` for `t = |x|` (`t²` as an
/// exact pair, its low part folded into the exponential's argument), then
/// `xΦ(-t)` for `x < 0` and `x(1 - Φ(-t))` above. -inf -> -0, +inf -> +inf.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    let t = clamp(f32::from_bits(x.to_bits() & 0x7fff_ffff), 0.0, 14.0);
    let h = t * t;
    let l = fma(t, t, -h);
    // e^{-(h + l)/2} = e^{-h/2} (1 - l/2), |l/2| <= 2^-19.
    let e = exp_neg(0.5 * h) * fma(-0.5, l, 1.0);
    let s = fma(3.0, rcp_fast(3.0 + t), -0.5);
    let p = e * horner(&GELU_K, s);
    // x(1 - p), not x - xp: +inf stays +inf (1 - p is exact to 2^-24 here).
    let y = x * if x < 0.0 { p } else { 1.0 - p };
    if x < -200.0 {
        -0.0
    } else {
        y
    }
}
