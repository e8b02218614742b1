//! Two operations of our own, written once as lane rules and instantiated for
//! f32 and bf16 by `gpukern_device::elementwise!`:
//!
//! * `silu(x) = x / (1 + e^-x)`, unary: the library's own lane rule
//!   (`gpukern_device::activations::Silu`, the one the built-in `silu` runs),
//!   so the same code path and speed: in f32 `gpukern_device::math::silu`
//!   (≤ 1 ulp, IEEE operations and FMA, the same bits on the CPU); in bf16
//!   correctly rounded for every input (on the GPU a fast path on the SFU with
//!   a rounding test and a converged slow path; on the CPU the slow path).
//!   Tested below against f64.
//! * `block_sum`, a typed kernel (`#[gpukern_macros::kernel(pdl)]`): each
//!   block sums a grid-stride share of `x` with `gpukern_device::block::sum`
//!   and writes its total to `partial[blockIdx]`; a second launch of one block
//!   sums the partials. `pdl`: in the sm_90 build the second launch may start
//!   while the first finishes (programmatic dependent launch).
//! * `scale`, a typed kernel with a scalar parameter: `y[i] = k·x[i]`, one
//!   rounding (the host's graph test records it between the operations).
//!
//! build.rs of the host crate builds this crate twice, for sm_70 and sm_90;
//! the sm_90 module also holds each operation's PDL twins (`elementwise!`).
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

use gpukern_device::activations::Silu as Library;
use gpukern_device::lanes::{Bf16, Elem, Op, F32};
use gpukern_device::pack::Pack16;
use gpukern_device::Params;

/// SiLU in f32: the library's `gpukern_device::math::silu` (FMA and integer
/// operations only, no division, the same bits on the CPU and the GPU).
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    gpukern_device::math::silu(x)
}

#[derive(Clone, Copy, Default)]
pub struct Silu;

/// The library's rule, every width: one lane, a word, a 16-byte pack (where
/// the 16-bit fast path works on eight lanes at once).
impl<E: Elem> Op<E> for Silu {
    const INPUTS: u32 = 1;
    #[inline(always)]
    fn one(self, x: E::T, y: E::T) -> E::T {
        <Library as Op<E>>::one(Library, x, y)
    }
    #[inline(always)]
    fn word(self, x: u32, y: u32) -> u32 {
        <Library as Op<E>>::word(Library, x, y)
    }
    #[inline(always)]
    fn pack(self, x: Pack16, y: Pack16) -> Pack16 {
        <Library as Op<E>>::pack(Library, x, y)
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

/// Block `b` writes the sum of its grid-stride share of `x` to `partial[b]`
/// (one partial per block: launch at most `partial.len()` blocks of a 1-D
/// grid). 16-byte packs when `x` is 16-byte aligned, four sums per thread in
/// flight; then the block's threads combine with `block::sum`.
#[gpukern_macros::kernel(pdl)]
pub fn block_sum(x: &[f32], partial: &mut [f32]) {
    use gpukern_device::pack::Pack16;
    use gpukern_device::{block, global_thread, grid_threads};
    let (t, step) = (global_thread() as usize, grid_threads() as usize);
    let mut acc = [0.0f32; 4];
    let mut scalar_from = 0;
    if (x.as_ptr() as usize).is_multiple_of(16) {
        let packs = x.len() / 4;
        let p = x.as_ptr() as *const Pack16;
        let mut i = t;
        while i < packs {
            // SAFETY: pack i lies within x (i < len / 4) and is 16-byte aligned.
            let v = unsafe { gpukern_device::pack::load128(p.add(i)) };
            for (k, a) in acc.iter_mut().enumerate() {
                *a += f32::from_bits(v.0[k]);
            }
            i += step;
        }
        scalar_from = packs * 4;
    }
    let mut i = scalar_from + t;
    while i < x.len() {
        acc[0] += x[i];
        i += step;
    }
    // SAFETY: every thread of the block reaches this call once: nothing above
    // returns early, and the loops above end in every thread.
    let total = unsafe { block::sum((acc[0] + acc[1]) + (acc[2] + acc[3])) };
    if gpukern_device::is_block_leader() {
        partial.set(gpukern_device::block_xy().0 as usize, total);
    }
}

/// `y[i] = k·x[i]` over the first `min(x.len(), y.len())` elements, in a
/// grid-stride loop (any grid covers them).
#[gpukern_macros::kernel]
pub fn scale(x: &[f32], y: &mut [f32], k: f32) {
    let (t, step) = (gpukern_device::global_thread() as usize, gpukern_device::grid_threads() as usize);
    let n = x.len().min(y.len());
    let mut i = t;
    while i < n {
        y.set(i, k * x[i]);
        i += step;
    }
}

/// Writes through `p`: with `p = 0` the kernel faults on purpose (the host
/// program's fault-and-reset test).
///
/// # Safety
/// `p` is writable, or the caller wants the fault.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn write_one(p: *mut u32) {
    // SAFETY: this function's contract: `p` is writable, or the fault is wanted.
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
    fn silu_f32_is_within_the_math_bound_of_f64() {
        let mut worst = 0.0f64;
        let mut x = -100.0f32;
        while x < 100.0 {
            let exact = (x as f64) / (1.0 + (-(x as f64)).exp());
            if exact.abs() > 1e-37 {
                worst = worst.max(ulps(cpu::silu_f32(x), exact));
            }
            x += 0.000_731;
        }
        // The library's measured bound for silu (device/src/math/README.md).
        assert!(worst <= 1.0, "worst error {worst} ulp");
    }

    #[test]
    fn typed_signatures_carry_the_parameter_names_on_the_host() {
        use gpukern_device::kernel::{input, output, scalar, KernelSig};
        assert_eq!(<super::block_sum as KernelSig>::PARAM_NAMES, ["x", "partial"]);
        assert_eq!(<super::scale as KernelSig>::PARAM_NAMES, ["x", "y", "k"]);
        assert_eq!(<super::scale as KernelSig>::PARAMS, [input::<f32>(), output::<f32>(), scalar::<f32>()]);
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
    fn silu_bf16_is_correctly_rounded_everywhere() {
        use gpukern_device::math::check;
        // Against the f64 SiLU rounded once to bf16: every one of the 2^16
        // inputs, NaN as the canonical 0x7fff.
        let silu64 = check::FUNCTIONS.iter().find(|r| r.0 == "silu").expect("silu").2;
        for bits in 0..=u16::MAX {
            let want = check::round_bf16(silu64(bf16_to_f32(bits) as f64));
            let want = if want.is_nan() { 0x7fff } else { f32_to_bf16_rne(want as f32) };
            assert_eq!(cpu::silu_bf16(bits), want, "{bits:#06x}");
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
