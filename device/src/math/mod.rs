//! STUB (throwaway, replaced by the `wt-math` branch): the signatures of
//! `gpukern_device::math` with naive bodies built from IEEE f32 operations, so
//! that the activations and their tests compile before the real module lands.
#![allow(missing_docs, clippy::excessive_precision)]

#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 || x == f32::INFINITY {
        return x;
    }
    let mut y = f32::from_bits((x.to_bits() >> 1) + 0x1fc0_0000);
    for _ in 0..4 {
        y = 0.5 * (y + x / y);
    }
    y
}

#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    1.0 / x
}

#[inline(always)]
pub fn div_fast(a: f32, b: f32) -> f32 {
    a / b
}

#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    1.0 / sqrt(x)
}

#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > 128.0 {
        return f32::INFINITY;
    }
    if x < -150.0 {
        return 0.0;
    }
    let k = (x + 0.5 * if x < 0.0 { -1.0 } else { 1.0 }) as i32;
    let r = (x - k as f32) * core::f32::consts::LN_2;
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r / 720.0)))));
    let (k1, k2) = (k / 2, k - k / 2);
    p * f32::from_bits(((k1 + 127) as u32) << 23) * f32::from_bits(((k2 + 127) as u32) << 23)
}

#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp2(x * core::f32::consts::LOG2_E)
}

#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    exp(x) - 1.0
}

#[inline(always)]
pub fn log2(x: f32) -> f32 {
    log(x) * core::f32::consts::LOG2_E
}

#[inline(always)]
pub fn log(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x == f32::INFINITY {
        return x;
    }
    let (mut bits, mut e) = (x.to_bits(), 0i32);
    if bits < 0x0080_0000 {
        bits = (x * 16777216.0).to_bits();
        e = -24;
    }
    e += ((bits >> 23) as i32) - 127;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let t = 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 / 9.0))));
    t + e as f32 * core::f32::consts::LN_2
}

#[inline(always)]
pub fn log1p(x: f32) -> f32 {
    log(1.0 + x)
}

#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    if x > 10.0 {
        return 1.0;
    }
    if x < -10.0 {
        return -1.0;
    }
    let e = exp(2.0 * x);
    (e - 1.0) / (e + 1.0)
}

#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let (s, a) = if x < 0.0 { (-1.0, -x) } else { (1.0, x) };
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    s * (1.0 - p * exp(-a * a))
}

#[inline(always)]
fn reduce(x: f32) -> f32 {
    let tau = 2.0 * core::f32::consts::PI;
    let k = (x / tau) as i32 as f32;
    x - k * tau
}

#[inline(always)]
pub fn sin(x: f32) -> f32 {
    let r = reduce(x);
    let r2 = r * r;
    r * (1.0 - r2 / 6.0 * (1.0 - r2 / 20.0 * (1.0 - r2 / 42.0 * (1.0 - r2 / 72.0))))
}

#[inline(always)]
pub fn cos(x: f32) -> f32 {
    let r = reduce(x);
    let r2 = r * r;
    1.0 - r2 / 2.0 * (1.0 - r2 / 12.0 * (1.0 - r2 / 30.0 * (1.0 - r2 / 56.0)))
}

#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x * sigmoid(x)
}

#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * core::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + tanh(0.797_884_6 * (x + 0.044715 * x * x * x)))
}

#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    exp2(y * log2(x))
}

/// Host-only accuracy helpers.
#[cfg(not(target_arch = "nvptx64"))]
pub mod check {
    extern crate std;

    /// Error of `got` in ulps of f32 at `want`.
    pub fn ulp_error(got: f32, want: f64) -> f64 {
        if got.is_nan() && want.is_nan() {
            return 0.0;
        }
        if got as f64 == want {
            return 0.0;
        }
        let w = want as f32;
        let e = if w == 0.0 { -149 } else { (w.abs().log2().floor() as i32).max(-126) - 23 };
        ((got as f64 - want) / 2f64.powi(e)).abs()
    }

    type F = (&'static str, fn(f32) -> f32, fn(f64) -> f64);

    /// Every one-input function with its f64 reference.
    pub const FUNCTIONS: &[F] = &[
        ("exp", super::exp, |x| x.exp()),
        ("log", super::log, |x| x.ln()),
        ("tanh", super::tanh, |x| x.tanh()),
        ("sqrt", super::sqrt, |x| x.sqrt()),
    ];
}
