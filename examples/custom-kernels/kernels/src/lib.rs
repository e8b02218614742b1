//! Two operations of our own, written once as lane rules and instantiated for
//! f32 and bf16 by `gpukern_device::elementwise!`:
//!
//! * `silu(x) = x / (1 + e^-x)`, unary. `e^x` is computed here (core has no
//!   `exp` on the device) by range reduction and a polynomial, in f32; for bf16
//!   the input is widened to f32, and the f32 result rounded once to bf16.
//!   Not one IEEE operation, so not correctly rounded: the bound, tested
//!   below against f64 wherever the result is a normal f32, is 8 ulp of f32 (6.9 seen)
//!   (and one bf16 rounding on top for bf16).
//! * `relu_axpy(a, b) = max(alpha·a + b, 0)`, binary with two scalars
//!   (`alpha`, and `beta` which scales `b`): each product and the sum rounded
//!   once in f32 (no fused multiply-add), the result rounded once to the
//!   element type. Every step is one IEEE operation, so the GPU and any correct
//!   CPU evaluation agree bit for bit.
//!
//! The same code runs on the CPU (this crate is also an `rlib`), which is what
//! the host program compares the GPU with.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

// The host build of the cdylib needs a panic handler: std's. (The device build
// takes gpukern-device's.)
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use gpukern_device::lanes::{Bf16, Elem, Op, F32};
use gpukern_device::Params;

/// `e^x` in f32: `x = k·ln2 + r` with `|r| <= ln2/2` (ln2 split in two so
/// `k·ln2_hi` is exact), a degree-7 Taylor polynomial for `e^r`, then the
/// exponent `k` put in by bits. Saturates to +inf above 88.72 and to +0 below
/// -103.97; NaN gives NaN.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75; // 11 significant bits of ln 2
    const LN2_LO: f32 = 1.428_606_8e-6; // ln 2 - LN2_HI
    if x > 88.72 {
        return f32::INFINITY;
    }
    if x < -103.97 {
        return 0.0;
    }
    let t = x * LOG2E;
    let k = (if t >= 0.0 { t + 0.5 } else { t - 0.5 }) as i32; // NaN -> 0
    let kf = k as f32;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    // e^r, Horner: 1 + r + r²/2! + … + r⁷/7!
    let mut p = 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // 2^k in two steps, so k down to -150 and up to 128 stay representable.
    let (k1, k2) = (k / 2, k - k / 2);
    let two = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    p * two(k1) * two(k2)
}

/// `x / (1 + e^-x)` in f32; for negative `x` as `x·e^x / (1 + e^x)`, so that
/// `e^-x` never overflows where the result is still a normal number.
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    if x >= 0.0 || x.is_nan() {
        return x / (1.0 + exp_f32(-x)); // NaN stays NaN; +inf gives +inf
    }
    let e = exp_f32(x);
    if e == 0.0 {
        return -0.0; // x below -103.97 (or -inf): the result rounds to -0
    }
    x * e / (1.0 + e)
}

/// SiLU: unary.
#[derive(Clone, Copy, Default)]
pub struct Silu;

impl<E: Elem> Op<E> for Silu {
    const INPUTS: u32 = 1;
    #[inline(always)]
    fn one(self, x: E::T, _: E::T) -> E::T {
        E::narrow(silu_f32(E::widen(x)))
    }
}

impl<E: Elem> Params<E> for Silu {
    fn from_params(_: [f32; 2]) -> Self {
        Silu
    }
}

/// `max(alpha·a + beta·b, 0)` with NaN kept.
#[derive(Clone, Copy)]
pub struct ReluAxpy {
    /// Scale of `a`.
    pub alpha: f32,
    /// Scale of `b`.
    pub beta: f32,
}

/// The rule in f32: three roundings (two products, the sum), then relu.
#[inline(always)]
pub fn relu_axpy_f32(alpha: f32, a: f32, beta: f32, b: f32) -> f32 {
    let s = alpha * a + beta * b;
    // `s > 0` is false for NaN: keep NaN, send every other non-positive to +0.
    if s > 0.0 || s.is_nan() {
        s
    } else {
        0.0
    }
}

impl<E: Elem> Op<E> for ReluAxpy {
    #[inline(always)]
    fn one(self, x: E::T, y: E::T) -> E::T {
        E::narrow(relu_axpy_f32(self.alpha, E::widen(x), self.beta, E::widen(y)))
    }
}

impl<E: Elem> Params<E> for ReluAxpy {
    fn from_params(p: [f32; 2]) -> Self {
        ReluAxpy { alpha: p[0], beta: p[1] }
    }
}

gpukern_device::elementwise! {
    unary silu = Silu: [F32, Bf16];
    binary relu_axpy = ReluAxpy: [F32, Bf16];
}

/// Writes through `p`: with `p = 0` the kernel faults on purpose (the host
/// program's fault-and-reset test).
///
/// # Safety
/// `p` is writable, or the caller wants the fault.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn write_one(p: *mut u32) {
    unsafe { core::ptr::write_volatile(p, 1) };
}

/// The CPU rules for the host: the same code as the kernels' lanes.
pub mod cpu {
    use super::*;

    /// SiLU of an f32 lane.
    pub fn silu_f32(x: f32) -> f32 {
        <Silu as Op<F32>>::one(Silu, x, x)
    }
    /// SiLU of a bf16 lane (its bits).
    pub fn silu_bf16(x: u16) -> u16 {
        <Silu as Op<Bf16>>::one(Silu, x, x)
    }
    /// relu_axpy of f32 lanes.
    pub fn relu_axpy_f32(alpha: f32, beta: f32, a: f32, b: f32) -> f32 {
        <ReluAxpy as Op<F32>>::one(ReluAxpy { alpha, beta }, a, b)
    }
    /// relu_axpy of bf16 lanes (bits).
    pub fn relu_axpy_bf16(alpha: f32, beta: f32, a: u16, b: u16) -> u16 {
        <ReluAxpy as Op<Bf16>>::one(ReluAxpy { alpha, beta }, a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::cpu;
    use gpukern_device::bits::{bf16_to_f32, f32_to_bf16_rne};

    /// Distance in f32 ulps (same sign, finite).
    fn ulps(a: f32, b: f64) -> f64 {
        let r = b as f32;
        let ulp = (f32::from_bits(r.abs().to_bits() + 1) - r.abs()) as f64;
        ((a as f64) - b).abs() / ulp
    }

    #[test]
    fn silu_f32_is_within_8_ulp_of_f64() {
        let mut worst = 0.0f64;
        let mut x = -100.0f32;
        while x < 100.0 {
            let exact = (x as f64) / (1.0 + (-(x as f64)).exp());
            if exact.abs() > 1e-37 {
                worst = worst.max(ulps(cpu::silu_f32(x), exact));
            }
            x += 0.000_731;
        }
        assert!(worst <= 8.0, "worst error {worst} ulp");
    }

    #[test]
    fn silu_special_values() {
        assert!(cpu::silu_f32(f32::NAN).is_nan());
        assert_eq!(cpu::silu_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(cpu::silu_f32(f32::NEG_INFINITY).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cpu::silu_f32(0.0).to_bits(), 0);
        assert_eq!(cpu::silu_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cpu::silu_f32(-200.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cpu::silu_f32(200.0), 200.0);
    }

    #[test]
    fn silu_bf16_is_the_f32_rule_rounded_once_and_within_one_bf16_ulp() {
        for bits in 0..=u16::MAX {
            let x = bf16_to_f32(bits);
            let got = cpu::silu_bf16(bits);
            assert_eq!(got, f32_to_bf16_rne(cpu::silu_f32(x)), "{bits:#06x}");
            if x.is_finite() && x.abs() > 1e-30 && x.abs() < 80.0 {
                let exact = (x as f64) / (1.0 + (-(x as f64)).exp());
                let g = bf16_to_f32(got) as f64;
                assert!((g - exact).abs() <= exact.abs() * 2f64.powi(-8) * 1.01, "{x}: {g} vs {exact}");
            }
        }
    }

    #[test]
    fn relu_axpy_matches_an_independent_f64_reference_bit_for_bit() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            f32::from_bits((seed >> 32) as u32)
        };
        for _ in 0..200_000 {
            let (alpha, beta, a, b) = (next(), next(), next(), next());
            // f64 holds each product of two f32 exactly; rounding each step to
            // f32 is then the IEEE f32 operation (and 53 >= 2·24 + 2 makes the
            // f64 sum rounded to f32 the correctly rounded f32 sum).
            let s = (((alpha as f64) * (a as f64)) as f32 as f64 + ((beta as f64) * (b as f64)) as f32 as f64) as f32;
            let want = if s > 0.0 || s.is_nan() { s } else { 0.0 };
            let got = cpu::relu_axpy_f32(alpha, beta, a, b);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{alpha} {a} {beta} {b}");
        }
    }
}
