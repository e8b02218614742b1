//! The 16-bit activations' fast paths: the SFU's approximate instructions
//! (`ex2`, `rcp`, `lg2`, `rsqrt` `.approx.ftz.f32`) with a proven relative
//! error bound, for a rounding test (Ziv's): if `y(1 - E)` and `y(1 + E)` round
//! to the same f16/bf16, that value is the correctly rounded result, since the
//! exact value lies between them and rounding is monotone. Inputs the test
//! cannot settle, or outside a function's domain, take the slow path
//! (`activations`: the [`super::narrow`] function plus its list of fixes).
//!
//! The input is an f16 or bf16 value widened to f32 (at most 11 significant
//! bits, so `x²` is exact). Domain tests use `&`, not `&&`: LLVM keeps
//! short-circuits as branches.
//!
//! Each function returns a [`Fast`]: the f32 value, the two factors `1 ∓ E`
//! and whether the input is in the domain where the bound holds. The bounds,
//! step by step, are in `math/README.md` ("16-bit activations: fast path and
//! rounding test"); `U` below is 2^-24, the unit roundoff of f32. The code is
//! generic over [`Sfu`] so the host tests run it with a pessimistic model of
//! the instructions (`fast16_tests.rs`); the device runs `Hw`.

// `(a <= x) & (x <= b)`, not `(a..=b).contains(&x)`: no short-circuit.
#![allow(clippy::manual_range_contains)]

use super::exp::{horner, TANH_T};
use super::prim::fma;

/// The approximate SFU instructions, each with the documented bound (PTX ISA,
/// "Floating Point Instructions"): `ex2` within 2 ulp of the correctly rounded
/// result, `rcp` 1 ulp, `lg2` 2^-22 absolute on (0.5, 2) and 2^-22 relative
/// elsewhere, `rsqrt` 2^-22.9 relative. `.ftz`: subnormal inputs and results
/// are zero, which every domain below excludes.
pub trait Sfu {
    /// ≈ 2^x.
    fn ex2(x: f32) -> f32;
    /// ≈ 1/x.
    fn rcp(x: f32) -> f32;
    /// ≈ log2 x.
    fn lg2(x: f32) -> f32;
    /// ≈ 1/√x.
    fn rsqrt(x: f32) -> f32;
}

/// The hardware's instructions.
#[cfg(target_arch = "nvptx64")]
pub struct Hw;

#[cfg(target_arch = "nvptx64")]
macro_rules! sfu_asm {
    ($($f:ident $ins:literal;)*) => {$(
        #[inline(always)]
        fn $f(x: f32) -> f32 {
            let d: f32;
            // SAFETY: a pure register-to-register instruction.
            unsafe {
                core::arch::asm!(concat!($ins, " {0}, {1};"), out(reg32) d, in(reg32) x,
                    options(pure, nomem, nostack, preserves_flags))
            };
            d
        }
    )*};
}

#[cfg(target_arch = "nvptx64")]
impl Sfu for Hw {
    sfu_asm! {
        ex2 "ex2.approx.ftz.f32";
        rcp "rcp.approx.ftz.f32";
        lg2 "lg2.approx.ftz.f32";
        rsqrt "rsqrt.approx.ftz.f32";
    }
}

/// A fast result: `y` within a relative `E` of the exact value when `ok`;
/// the test rounds `y·lo` and `fma(y, hi, y)` (`lo = 1 - E` exact, `hi = E`:
/// a product keeps `y = -0` negative, and `fma(-0, E, -0) = -0` too).
#[derive(Clone, Copy, Debug)]
pub struct Fast {
    /// The value.
    pub y: f32,
    /// `1 - E`.
    pub lo: f32,
    /// `E`.
    pub hi: f32,
    /// The input is in the domain where the bound holds.
    pub ok: bool,
}

/// f32's unit roundoff, 2^-24.
pub const U: f32 = 5.960_464_5e-8;

/// `(1 - E, E)` for `E = k·U`, both exact in f32. `k` is `e + 2` rounded up,
/// `e` the proven bound in U: the two roundings of the test's own products
/// need `E ≥ e + U` plus terms of order `eU` (README).
const fn bound(k: u32) -> (f32, f32) {
    let e = k as f32 * U;
    (1.0 - e, e)
}

impl Fast {
    #[inline(always)]
    fn new(y: f32, (lo, hi): (f32, f32), ok: bool) -> Fast {
        Fast { y, lo, hi, ok }
    }
}

const LOG2E: f32 = core::f32::consts::LOG2_E;
/// log2(e) - LOG2E.
const LOG2E_LO: f32 = f32::from_bits(0x32a5_7060);
const LN2: f32 = core::f32::consts::LN_2;

/// `e^x` for `x·log2e` in [-125, 128): `t = x·log2e` rounded, its error
/// `c` exactly from an FMA (plus the constant's low part), `2^t` on the SFU and
/// the factor `2^c ≈ 1 + c ln2` folded in by one FMA. Relative error ≤ 6.01 U
/// (README).
#[inline(always)]
fn exp_core<S: Sfu>(x: f32) -> f32 {
    let t = x * LOG2E;
    let c = fma(x, LOG2E_LO, fma(x, LOG2E, -t));
    let p = S::ex2(t);
    fma(p, c * LN2, p)
}

/// `(a, la, ha)` when `|v| < lim`, else `(b, lb, hb)`: a branch-free choice
/// of a branch's value and bounds. On the device spelled as `setp` and
/// `selp` in assembly: LLVM otherwise sinks each side's instructions into a
/// branch of its own, which diverges where the lanes of a warp differ.
#[inline(always)]
fn choose(v: f32, lim: f32, a: (f32, (f32, f32)), b: (f32, (f32, f32))) -> (f32, (f32, f32)) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (y, l, h): (f32, f32, f32);
        // SAFETY: register-to-register instructions only.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; setp.lt.f32 p, {v}, {lim}; selp.b32 {y}, {a}, {b}, p; \
                 selp.b32 {l}, {la}, {lb}, p; selp.b32 {h}, {ha}, {hb}, p; }}",
                v = in(reg32) abs(v), lim = in(reg32) lim, a = in(reg32) a.0, b = in(reg32) b.0,
                la = in(reg32) a.1 .0, lb = in(reg32) b.1 .0, ha = in(reg32) a.1 .1, hb = in(reg32) b.1 .1,
                y = out(reg32) y, l = out(reg32) l, h = out(reg32) h,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        (y, (l, h))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if abs(v) < lim {
            a
        } else {
            b
        }
    }
}

/// `|x|` with the sign bit cleared.
#[inline(always)]
fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// Zero or normal: the bf16 subnormals (f16 inputs are all normal f32) go to
/// the slow path in the functions whose result is about `x/2`, which would be
/// an f32 subnormal, rounded absolutely (the bounds here are relative). Two
/// integer operations; LLVM turns the float comparisons into more.
#[inline(always)]
fn zero_or_normal(x: f32) -> bool {
    (x.to_bits() & 0x7fff_ffff).wrapping_sub(1) >= 0x007f_ffff
}

/// `e^x`: ≤ 6.01 U, E = 9 U. Domain [-86.5, 88.5] (results normal).
#[inline(always)]
pub fn exp<S: Sfu>(x: f32) -> Fast {
    Fast::new(exp_core::<S>(x), bound(9), (x >= -86.5) & (x <= 88.5))
}

/// `1/(1 + e^{-x})`: `e` ≤ 6.01 U, `1 + e` one rounding, `rcp` 1.5 ulp (3 U):
/// ≤ 10.02 U, E = 13 U. Domain |x| ≤ 86.5.
#[inline(always)]
pub fn sigmoid<S: Sfu>(x: f32) -> Fast {
    Fast::new(S::rcp(1.0 + exp_core::<S>(-x)), bound(13), abs(x) <= 86.5)
}

/// `x·sigmoid(x)`: ≤ 11.02 U, E = 14 U. Domain |x| ≤ 86.5, zero
/// or normal.
#[inline(always)]
pub fn silu<S: Sfu>(x: f32) -> Fast {
    let ax = abs(x);
    Fast::new(x * S::rcp(1.0 + exp_core::<S>(-x)), bound(14), (ax <= 86.5) & zero_or_normal(x))
}

/// tanh: below 0.625 the f32 function's odd polynomial (IEEE operations only,
/// ≤ 0.932 ulp over all f32 inputs: ≤ 1.87 U, E = 4 U); above,
/// `(1 - e)/(1 + e)` with `e = e^{-2|x|}` ≤ 0.2866: ≤ 9.81 U, E = 12 U.
/// Domain |x| ≤ 9. The sign copied back. A bf16 subnormal `x` gives `y = x`
/// exactly (`x³` underflows), which is its correctly rounded tanh, and `y(1 ∓
/// E)` are within 2^-148 of it, far inside its bf16 rounding interval.
#[inline(always)]
pub fn tanh<S: Sfu>(x: f32) -> Fast {
    let ax = abs(x);
    let x2 = ax * ax;
    let small = fma(ax * x2, horner(&TANH_T, x2), ax);
    let e = exp_core::<S>(-2.0 * ax);
    let big = (1.0 - e) * S::rcp(1.0 + e);
    let (t, b) = choose(ax, 0.625, (small, bound(4)), (big, bound(12)));
    let y = f32::from_bits(t.to_bits() | (x.to_bits() & 0x8000_0000));
    Fast::new(y, b, ax <= 9.0)
}

/// GELU's tanh form, `x/(1 + 2^a)` with `a = -x(A + Bx²)` in base 2. `x²` is
/// exact for 16-bit inputs; `A + Bx²` carries ≤ 1.33 U (one FMA, the constants'
/// roundings), so `a` is off by ≤ 1.33 U·|a| and `2^a` by ≤ 0.92 U·|a| more
/// than `exp_core`'s 6.01 U: ≤ 11.02 U + 0.92 U·|a|. E = 15 U + 1 U·|t|,
/// rounded outwards. Domain |x| ≤ 9 (|a| ≤ 95.8), zero or normal.
#[inline(always)]
pub fn gelu_tanh<S: Sfu>(x: f32) -> Fast {
    const A: f32 = f32::from_bits(0x4013_5761); // 2√(2/π)·log2e
    const B: f32 = f32::from_bits(0x3dd2_d3e8); // A·0.044715
    let ax = abs(x);
    let p = fma(B, x * x, A);
    let t = -x * p;
    let c = fma(-x, p, -t);
    let e = S::ex2(t);
    let e = fma(e, c * LN2, e);
    let y = x * S::rcp(1.0 + e);
    // 1 ∓ (14 U + U|t|), the FMA's rounding (≤ U/2) covered by the 2 U margin.
    let (lo0, hi0) = bound(15);
    let (lo, hi) = (fma(-U, abs(t), lo0), fma(U, abs(t), hi0));
    Fast { y, lo, hi, ok: (ax <= 9.0) & zero_or_normal(x) }
}

/// `(log1p(f) - f)/f^2` on |f| ≤ 1/3 ([`super::narrow`]'s degree 6).
use super::narrow::{GELU_K, LOG_Q};

/// `ln x`: on (2/3, 4/3) the narrow function's polynomial in `f = x - 1`
/// (exact; IEEE operations only; ≤ 4.18 U over every 16-bit input there,
/// `fast16_tests.rs`: E = 7 U); elsewhere `lg2(x)·ln2`: `lg2` ≤ 2^-22
/// absolute with `|log2 x| ≥ 0.415` there (≤ 9.64 U relative), 2^-22 relative
/// outside (0.5, 2), the constant 0.05 U and the product U: ≤ 10.7 U, E = 13 U. Domain: normal and finite, `x > 0`.
#[inline(always)]
pub fn log<S: Sfu>(x: f32) -> Fast {
    let f = x - 1.0;
    let near = fma(f * f, horner(&LOG_Q, f), f);
    let far = S::lg2(x) * LN2;
    let (y, b) = choose(f, 0.333_333, (near, bound(7)), (far, bound(13)));
    Fast::new(y, b, (x >= f32::MIN_POSITIVE) & (x <= f32::MAX))
}

/// `1/√x`: 2^-22.9 (2.15 U), E = 6 U (the tests' model rounds its perturbed
/// value once more: 3.15 U). Domain: normal and finite, `x > 0`.
#[inline(always)]
pub fn rsqrt<S: Sfu>(x: f32) -> Fast {
    Fast::new(S::rsqrt(x), bound(6), (x >= f32::MIN_POSITIVE) & (x <= f32::MAX))
}

/// `√x`: `sqrt.rn` is correctly rounded in f32 and 24 ≥ 2·11 + 2, so one more
/// rounding to 16 bits is correct for every input (E = 0). Domain `x ≥ 0`
/// (NaN and negative inputs take the slow path, which returns the canonical NaN).
#[inline(always)]
pub fn sqrt<S: Sfu>(x: f32) -> Fast {
    Fast::new(super::sqrt(x), bound(0), x >= 0.0)
}

/// The exact GELU `xΦ(x)` in the slow path's shape: `Φ(-t) = e^{-t²/2}K(s)`,
/// `t = |x|`, `s = 3/(3 + t) - 1/2`, `K` the narrow function's degree-9 fit
/// (2^-22.7), then `xΦ(-t)` below 0 and `x(1 - Φ(-t))` above. `t²` is exact
/// for 16-bit inputs, `e^{-t²/2}` is `exp_core` (6.01 U), the reciprocal
/// `rcp` plus one Newton step (≤ 1.1 U). E = 16 U: the measured
/// maximum over every input and every model setting is in the README.
/// Domain |x| ≤ 12.5 (results normal), zero or normal.
#[inline(always)]
pub fn gelu<S: Sfu>(x: f32) -> Fast {
    let t = abs(x);
    let e = exp_core::<S>(-0.5 * (t * t));
    let d = 3.0 + t;
    let r = S::rcp(d);
    let r = fma(r, fma(-d, r, 1.0), r);
    let p = e * horner(&GELU_K, fma(3.0, r, -0.5));
    let y = x * if x < 0.0 { p } else { 1.0 - p };
    Fast::new(y, bound(16), (t <= 12.5) & zero_or_normal(x))
}
