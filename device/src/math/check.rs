//! Host-only measurement helpers: ulp error against an f64 reference, the table
//! of every one-input function with its reference, and the bf16/f16 correctly
//! rounded counts over all 2^16 inputs. The GPU tests reuse these.

use std::vec::Vec;

/// The error of `got` in units of the last place of the f32 nearest `want`
/// (the f32 ulp at `want`'s binade, 2^-149 below 2^-126). Both NaN: 0; one NaN:
/// infinity; `want` outside the f32 range compares with the rounded infinity.
pub fn ulp_error(got: f32, want: f64) -> f64 {
    if got.is_nan() || want.is_nan() {
        return if got.is_nan() && want.is_nan() { 0.0 } else { f64::INFINITY };
    }
    let w32 = want as f32;
    if got.is_infinite() || w32.is_infinite() {
        return if got == w32 {
            0.0
        } else if w32.is_infinite() {
            // want rounds to inf, got finite: measure against 2^128.
            (got as f64 - want.signum() * 2f64.powi(128)).abs() / 2f64.powi(104)
        } else {
            f64::INFINITY
        };
    }
    let aw = want.abs();
    let e = if aw < f32::MIN_POSITIVE as f64 { -126 } else { ((aw.to_bits() >> 52) as i32 & 0x7ff) - 1023 };
    (got as f64 - want).abs() / 2f64.powi(e.clamp(-126, 127) - 23)
}

/// True when `got` is `want` rounded to nearest f32 (NaN equals NaN).
pub fn correctly_rounded(got: f32, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got.to_bits() == (want as f32).to_bits()
}

/// `1/(1 + e^{-x})` in f64.
pub fn sigmoid_f64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The f64 error function: its Maclaurin series below 2.5, `1 - erfc` above.
pub fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    if x == 0.0 || x.is_nan() {
        return x;
    }
    if a >= 2.5 {
        return (1.0 - erfc_pos(a, a * a)).copysign(x);
    }
    let (x2, mut term, mut sum, mut n) = (x * x, x, x, 0.0);
    loop {
        n += 1.0;
        term *= -x2 / n;
        let t = term / (2.0 * n + 1.0);
        sum += t;
        if t.abs() < 1e-18 * sum.abs() || n > 200.0 {
            break;
        }
    }
    sum * core::f64::consts::FRAC_2_SQRT_PI
}

/// `erfc(z)` for `z >= 2.5` with `z2 = z^2` given (exact when the caller can):
/// the Laplace continued fraction, 40 + 2000/z^2 terms.
fn erfc_pos(z: f64, z2: f64) -> f64 {
    let n = (40.0 + 2000.0 / z2) as i32;
    let mut f = z;
    for k in (1..=n).rev() {
        f = z + (k as f64 * 0.5) / f;
    }
    (-z2).exp() / (f * core::f64::consts::PI.sqrt())
}

/// `erfc(z)` in f64, any sign.
pub fn erfc_f64(z: f64) -> f64 {
    if z >= 2.5 {
        erfc_pos(z, z * z)
    } else {
        1.0 - erf_f64(z)
    }
}

/// GELU (erf form) in f64: `0.5 x erfc(-x/sqrt2)`, the tail with `x^2/2` exact.
pub fn gelu_f64(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return -0.0; // the limit (the product -inf * 0 would be NaN)
    }
    let z = x.abs() * core::f64::consts::FRAC_1_SQRT_2;
    if x >= 0.0 || z < 2.5 {
        0.5 * x * (1.0 + erf_f64(x * core::f64::consts::FRAC_1_SQRT_2))
    } else {
        0.5 * x * erfc_pos(z, x * x * 0.5)
    }
}

/// GELU (tanh form) in f64, as the equivalent `x/(1 + e^{-2a})`,
/// `a = sqrt(2/pi)(x + 0.044715 x^3)` (no cancellation in `1 + tanh a`).
pub fn gelu_tanh_f64(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return -0.0; // the limit (-inf / inf would be NaN)
    }
    let a = (2.0 / core::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x / (1.0 + (-2.0 * a).exp())
}

/// `x/2 + c·x²` (`c > 0`: silu, both GELUs) for `|x| < 2^-60`, as `x/2`
/// nudged up by `|x|·2^-45`: in f64 the `c·x²` term is lost there, and where
/// `x/2` is a midpoint of the target format (`x` subnormal) the rounding would
/// tie; the nudge lies below every f32 or 16-bit rounding gap, as `c·x²` does.
fn half_x_near_zero(x: f64, f: fn(f64) -> f64) -> f64 {
    if x != 0.0 && x.abs() < 2f64.powi(-60) {
        0.5 * x + x.abs() * 2f64.powi(-45)
    } else {
        f(x)
    }
}

/// One row of [`FUNCTIONS`]: name, the f32 function, its f64 reference.
pub type Row = (&'static str, fn(f32) -> f32, fn(f64) -> f64);

/// The math functions as the host runs them in sweeps: on an x86-64 CPU with
/// FMA, a copy compiled with the instruction (runtime detection), else the
/// plain build, whose `mul_add` is libm's software `fmaf` (correctly rounded
/// too: the same bits, 5–10 times slower).
mod fma_copy {
    macro_rules! copies {
        ($($f:ident)*) => {$(
            pub fn $f(x: f32) -> f32 {
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "fma")]
                    unsafe fn with_fma(x: f32) -> f32 {
                        crate::math::$f(x)
                    }
                    if std::is_x86_feature_detected!("fma") {
                        // SAFETY: the CPU has the FMA instructions.
                        return unsafe { with_fma(x) };
                    }
                }
                crate::math::$f(x)
            }
        )*};
    }
    copies!(exp exp2 expm1 log log2 log1p tanh sigmoid silu erf gelu gelu_tanh sin cos rsqrt rcp sqrt);
}

/// Every one-input function of [`crate::math`] with its f64 reference.
pub const FUNCTIONS: &[Row] = &[
    ("exp", fma_copy::exp, f64::exp),
    ("exp2", fma_copy::exp2, f64::exp2),
    ("expm1", fma_copy::expm1, f64::exp_m1),
    ("log", fma_copy::log, f64::ln),
    ("log2", fma_copy::log2, f64::log2),
    ("log1p", fma_copy::log1p, f64::ln_1p),
    ("tanh", fma_copy::tanh, f64::tanh),
    ("sigmoid", fma_copy::sigmoid, sigmoid_f64),
    // -inf: the limit -0 (the product -inf * 0 would be NaN).
    ("silu", fma_copy::silu, |x| {
        half_x_near_zero(x, |x| if x == f64::NEG_INFINITY { -0.0 } else { x * sigmoid_f64(x) })
    }),
    ("erf", fma_copy::erf, erf_f64),
    ("gelu", fma_copy::gelu, |x| half_x_near_zero(x, gelu_f64)),
    ("gelu_tanh", fma_copy::gelu_tanh, |x| half_x_near_zero(x, gelu_tanh_f64)),
    ("sin", fma_copy::sin, f64::sin),
    ("cos", fma_copy::cos, f64::cos),
    ("rsqrt", fma_copy::rsqrt, |x| 1.0 / x.sqrt()),
    ("rcp", fma_copy::rcp, |x| 1.0 / x),
    ("sqrt", fma_copy::sqrt, f64::sqrt),
];

/// `v` rounded once, to nearest even, to a binary format with `p` significand
/// bits, minimum normal exponent `emin` and largest finite value `max`.
fn round_to(v: f64, p: i32, emin: i32, max: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let e = ((((v.abs().to_bits() >> 52) & 0x7ff) as i32) - 1023).max(emin);
    let quantum = 2f64.powi(e - p + 1);
    let r = (v / quantum).round_ties_even() * quantum;
    if r.abs() > max {
        f64::INFINITY.copysign(v)
    } else {
        r
    }
}

const BF16_MAX: f64 = 3.3895313892515355e38; // (2 - 2^-7) 2^127
const F16_MAX: f64 = 65504.0;

/// bf16 bits widened to f32 (exact).
pub fn bf16_value(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// binary16 bits widened to f32 (exact), decoded from the fields.
pub fn f16_value(b: u16) -> f32 {
    let s = if b & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((b >> 10) & 0x1f) as i32;
    let m = (b & 0x3ff) as f32;
    s * match e {
        0 => m * 2f32.powi(-24),
        31 if m == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        _ => (1024.0 + m) * 2f32.powi(e - 25),
    }
}

fn share(
    f: fn(f32) -> f32,
    r: fn(f64) -> f64,
    widen: fn(u16) -> f32,
    p: i32,
    emin: i32,
    max: f64,
) -> (u32, u32, Vec<u16>) {
    let mut exceptions = Vec::new();
    for b in 0..=u16::MAX {
        let x = widen(b);
        let got = round_to(f(x) as f64, p, emin, max);
        let want = round_to(r(x as f64), p, emin, max);
        if !(got == want || (got.is_nan() && want.is_nan())) {
            exceptions.push(b);
        }
    }
    (65536 - exceptions.len() as u32, 65536, exceptions)
}

/// Over all 2^16 bf16 inputs: the f32 function on the widened input rounded
/// once to bf16 (nearest even), against the f64 reference rounded once to bf16
/// (NaN equals NaN). Returns `(correct, total, inputs that differ)`.
pub fn correctly_rounded_share_bf16(f: fn(f32) -> f32, r: fn(f64) -> f64) -> (u32, u32, Vec<u16>) {
    share(f, r, bf16_value, 8, -126, BF16_MAX)
}

/// As [`correctly_rounded_share_bf16`] for binary16 (11-bit significand,
/// subnormals below 2^-14).
pub fn correctly_rounded_share_f16(f: fn(f32) -> f32, r: fn(f64) -> f64) -> (u32, u32, Vec<u16>) {
    share(f, r, f16_value, 11, -14, F16_MAX)
}

/// `v` rounded once to bf16, as an f64 (NaN stays NaN).
pub fn round_bf16(v: f64) -> f64 {
    round_to(v, 8, -126, BF16_MAX)
}

/// `v` rounded once to binary16, as an f64 (NaN stays NaN).
pub fn round_f16(v: f64) -> f64 {
    round_to(v, 11, -14, F16_MAX)
}
