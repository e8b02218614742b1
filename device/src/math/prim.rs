//! The primitives: `fma` and `sqrt` (one IEEE rounding on both targets), the
//! reciprocal and the fast division built from them, `rsqrt`, and the integer
//! exponent scaling every function here ends with.

/// `a * b + c` with one rounding (IEEE fusedMultiplyAdd): `fma.rn.f32` on the
/// GPU, `f32::mul_add` (correctly rounded, stable std) on the host.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: a pure register-to-register instruction.
        unsafe {
            core::arch::asm!("fma.rn.f32 {0}, {1}, {2}, {3};", out(reg32) d, in(reg32) a, in(reg32) b, in(reg32) c,
                options(pure, nomem, nostack, preserves_flags))
        };
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// The correctly rounded square root: `sqrt.rn.f32` on the GPU, `f32::sqrt` on the host.
/// `sqrt(-0) = -0`, negative or NaN gives NaN, `sqrt(inf) = inf`.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: a pure register-to-register instruction.
        unsafe {
            core::arch::asm!("sqrt.rn.f32 {0}, {1};", out(reg32) d, in(reg32) x,
                options(pure, nomem, nostack, preserves_flags))
        };
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// 2^k for `k` in -126..=127, built from the exponent field.
#[inline(always)]
pub(crate) fn pow2i(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `p * 2^k` for `k` in -252..=254 with one rounding when `p * 2^(k >> 1)` is
/// normal: two exact-exponent multiplies, so results that overflow give inf and
/// subnormal results are rounded once.
#[inline(always)]
pub(crate) fn scale2(p: f32, k: i32) -> f32 {
    let k1 = k >> 1;
    p * pow2i(k1) * pow2i(k - k1)
}

/// A reciprocal seed good to about 2^-12.9 relative for `|x|` in [2^-126, 2^125]
/// (measured on [1, 2]): the bit-trick seed (2^-4.3 relative) and one cubic
/// Newton step (3 FMAs). Not for
/// zero, inf, NaN, subnormals or `|x| > 2^125`.
#[inline(always)]
pub(crate) fn rcp_seed(x: f32) -> f32 {
    let y = f32::from_bits(0x7ef3_11c3u32.wrapping_sub(x.to_bits()));
    let e = fma(-x, y, 1.0);
    fma(y, fma(e, e, e), y)
}

/// The reciprocal's main path, `|x|` in [2^-126, 2^125]: seed, a second cubic step
/// and a final Newton correction.
#[inline(always)]
fn rcp_main(x: f32) -> f32 {
    let y = rcp_seed(x);
    let e = fma(-x, y, 1.0);
    let y = fma(y, fma(e, e, e), y);
    let e = fma(-x, y, 1.0);
    fma(y, e, y)
}

/// `1/x` without `div.rn.f32`: a bit-trick seed, two cubic Newton steps and a
/// final Newton correction (1 integer op and 8 FMAs on the main path).
///
/// Max error 0.5 ulp + a hair on the main path (measured exhaustively over all
/// 2^32 inputs: see `math/README.md`). Inputs outside `[2^-126, 2^125]` in
/// magnitude take a rarely taken branch: `±0 -> ±inf`, `±inf -> ±0`, NaN -> NaN,
/// subnormals and huge values are scaled by 2^±24 (results that are subnormal
/// are rounded twice, within 1 ulp).
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    let a = x.to_bits() & 0x7fff_ffff;
    if a.wrapping_sub(0x0080_0000) < 0x7e00_0000 - 0x0080_0000 {
        return rcp_main(x);
    }
    rcp_edge(x)
}

#[inline(never)]
#[cold]
fn rcp_edge(x: f32) -> f32 {
    let a = x.to_bits() & 0x7fff_ffff;
    let sign = x.to_bits() & 0x8000_0000;
    if a > 0x7f80_0000 {
        x + x
    } else if a == 0x7f80_0000 {
        f32::from_bits(sign)
    } else if a == 0 {
        f32::from_bits(sign | 0x7f80_0000)
    } else if a < 0x0080_0000 {
        rcp_main(x * 16777216.0) * 16777216.0
    } else {
        rcp_main(x * (1.0 / 16777216.0)) * (1.0 / 16777216.0)
    }
}

/// `a / b` from [`rcp`] and one FMA residual correction: `q = a*rcp(b)`,
/// `q + (a - q*b)*rcp(b)`. Max error 1 ulp (correctly rounded on all but a few
/// inputs, sampled) while `|b|` is in [2^-126, 2^126] and `a/b` and `a*rcp(b)`
/// stay normal (no overflow, no result below 2^-125; a subnormal `a` is scaled
/// so that the residual is exact); outside that
/// domain use `/`. Special values: as IEEE division when `b` is 0, inf or NaN.
#[inline(always)]
pub fn div_fast(a: f32, b: f32) -> f32 {
    // Below 2^-100 the residual would be subnormal (inexact, 1.24 ulp): scale
    // `a` by 2^32 and the quotient back (exact while the quotient is normal).
    let tiny = f32::from_bits(a.to_bits() & 0x7fff_ffff) < f32::from_bits(0x0d80_0000);
    let a = if tiny { a * f32::from_bits(0x4f80_0000) } else { a };
    let y = rcp(b);
    let q = a * y;
    let r = fma(-q, b, a);
    let q2 = fma(r, y, q) * if tiny { f32::from_bits(0x2f80_0000) } else { 1.0 };
    // inf/NaN operands: the residual is NaN, keep the plain product.
    if q2 == q2 {
        q2
    } else {
        q
    }
}

/// `1/sqrt(x)`: the correctly rounded `sqrt`, its exact residual `x - s^2`, the
/// reciprocal and one combined correction `y (1 + e - (x - s^2) y^2 / 2)`.
/// Max 1 ulp (see README). `rsqrt(±0) = ±inf`, `rsqrt(inf) = +0`, negative or
/// NaN gives NaN; subnormal inputs are exact inputs of `sqrt` and need no scaling.
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    if !(x > 0.0 && x < f32::INFINITY) {
        return rcp(sqrt(x));
    }
    // Below 2^-100 the residual x - s^2 would be subnormal (and lose bits):
    // scale x by 2^64 (exact) and the result by 2^32.
    let tiny = x < f32::from_bits(0x0d80_0000); // 2^-100
    let xs = if tiny { x * f32::from_bits(0x5f80_0000) } else { x };
    let s = sqrt(xs);
    let y = rcp_main(s);
    let ds = fma(-s, s, xs);
    let e = fma(-s, y, 1.0);
    let c = fma(-0.5 * ds * y, y, e);
    fma(y, c, y) * if tiny { f32::from_bits(0x4f80_0000) } else { 1.0 }
}
