//! The 16-bit lane rules: correctly rounded on host and device.
//!
//! Device: every lane takes the fast path (`math::fast16`) and the rounding
//! test; a lane the test cannot settle sets a bit in a per-thread mask. Then,
//! while any thread of the warp still has a bit set (`vote.any` over the
//! threads active here), every one of them runs the slow path once on its
//! lowest flagged lane (lanes chosen by selects: no local memory) and clears
//! that bit. So the slow path runs converged, as many times as the most
//! flagged lanes of one thread, and not at all in most warps.
//!
//! Host: the slow path on every lane; it is correctly rounded for every input
//! (`activations/fast16_tests.rs` checks all 2^16 of each type against f64), so it is
//! what the device's fast path, when the test accepts it, also returns.

use super::Activation;
use crate::lanes::Elem;
use crate::pack::Pack16;

/// The canonical 16-bit NaN every NaN result becomes (what the GPU's
/// conversions produce).
pub const NAN16: u16 = 0x7fff;

/// An f32 lane's result with every NaN made the canonical `0x7fff_ffff`,
/// on both targets: PTX arithmetic returns that NaN, but the math functions
/// copy signs with integer operations (tanh, erf) and return constant NaNs,
/// and the host's arithmetic keeps input payloads. On the device one
/// `mul.rn.f32` by 1 (exact for every other value, -0 and subnormals
/// included; a NaN operand gives `0x7fff_ffff`, CUDA Programming Guide,
/// "Floating-Point Standard"), in assembly so that LLVM cannot drop it; on the
/// host a compare and select.
#[inline(always)]
pub fn canonical_nan32(y: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: a pure register-to-register instruction.
        unsafe {
            core::arch::asm!("mul.rn.f32 {0}, {1}, 0f3F800000;", out(reg32) d, in(reg32) y,
                options(pure, nomem, nostack, preserves_flags))
        };
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if y.is_nan() {
            f32::from_bits(0x7fff_ffff)
        } else {
            y
        }
    }
}

/// `A`'s f32 function; on an x86-64 host with FMA, a copy compiled with the
/// instruction (runtime detection): `f32::mul_add` is correctly rounded either
/// way, but without the target feature it is libm's software `fmaf`, 10–20
/// times slower. The same bits, so the same rule.
#[inline(always)]
pub fn f32_rule<A: Activation>(x: f32) -> f32 {
    #[cfg(all(not(target_arch = "nvptx64"), target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the FMA instructions (checked just above).
        return unsafe { host_fma::f32_rule::<A>(x) };
    }
    A::f32(x)
}

/// The host's FMA copies of the rules (`f32_rule`, `slow16`).
#[cfg(all(not(target_arch = "nvptx64"), target_arch = "x86_64"))]
mod host_fma {
    use super::Activation;
    use crate::lanes::Elem;

    /// # Safety
    /// The CPU must have FMA.
    #[target_feature(enable = "fma")]
    pub unsafe fn f32_rule<A: Activation>(x: f32) -> f32 {
        A::f32(x)
    }

    /// # Safety
    /// The CPU must have FMA.
    #[target_feature(enable = "fma")]
    pub unsafe fn slow16<E: Elem, A: Activation>(x: E::T) -> E::T {
        super::slow16_in::<E, A>(x)
    }
}

/// The slow path: the activation's narrow function on the widened input,
/// rounded once, NaN made canonical, and the listed f16 inputs fixed.
/// Correctly rounded for every f16 and bf16 input. Out of line on the device:
/// it runs rarely, and inlined it would make the pack kernels' lane code too
/// large for LLVM to inline it into the walk.
#[inline(always)]
pub fn slow16<E: Elem, A: Activation>(x: E::T) -> E::T {
    #[cfg(all(not(target_arch = "nvptx64"), target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the FMA instructions (checked just above).
        return unsafe { host_fma::slow16::<E, A>(x) };
    }
    slow16_in::<E, A>(x)
}

/// [`slow16`] without the host's FMA copy (for the CPU timing).
#[cfg(all(test, not(target_arch = "nvptx64")))]
pub(super) fn slow16_plain<E: Elem, A: Activation>(x: E::T) -> E::T {
    slow16_in::<E, A>(x)
}

#[inline(always)]
fn slow16_in<E: Elem, A: Activation>(x: E::T) -> E::T {
    let w = E::widen(x);
    let mut y = A::narrow(w);
    let a = w.to_bits() & 0x7fff_ffff;
    if A::HALF_X_AT_ZERO && a != 0 && a < 0x0100_0000 {
        // x/2 is an f32 subnormal, exactly (`Activation::HALF_X_AT_ZERO`).
        y = w * 0.5 + f32::from_bits(1);
    }
    let mut r = E::bits(E::narrow(y));
    if y.is_nan() {
        r = NAN16 as u32;
    }
    if E::INF == 0x7c00 {
        let b = E::bits(x);
        for &(i, o) in A::F16_FIXES {
            if b == i as u32 {
                r = o as u32;
            }
        }
    }
    E::from_bits(r)
}

/// `N` lanes of activation `A`, correctly rounded (module docs).
#[inline(always)]
pub fn lanes<E: Elem, A: Activation, const N: usize>(x: [E::T; N]) -> [E::T; N] {
    #[cfg(target_arch = "nvptx64")]
    {
        device::lanes::<E, A, N>(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.map(slow16::<E, A>)
    }
}

/// A 16-byte pack of 16-bit lanes.
#[inline(always)]
pub fn pack<E: Elem, A: Activation>(x: Pack16) -> Pack16 {
    #[cfg(target_arch = "nvptx64")]
    {
        device::pack::<E, A>(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        pack_lanes::<E, A>(x)
    }
}

/// [`pack`] through [`lanes`]: the host's (the lanes one by one).
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
fn pack_lanes<E: Elem, A: Activation>(x: Pack16) -> Pack16 {
    let w = x.0;
    let l = lanes::<E, A, 8>([
        E::from_bits(w[0]),
        E::from_bits(w[0] >> 16),
        E::from_bits(w[1]),
        E::from_bits(w[1] >> 16),
        E::from_bits(w[2]),
        E::from_bits(w[2] >> 16),
        E::from_bits(w[3]),
        E::from_bits(w[3] >> 16),
    ]);
    let j = |i: usize| E::bits(l[2 * i]) | (E::bits(l[2 * i + 1]) << 16);
    Pack16([j(0), j(1), j(2), j(3)])
}

/// The rounding test of one lane: the fast value's 16-bit rounding, and
/// whether it is proven correct (`y(1 - E)` and `y(1 + E)` round alike, in the
/// domain). Generic over the SFU so the host tests run it on a model.
#[inline(always)]
pub fn settle<E: Elem, A: Activation, S: crate::math::fast16::Sfu>(x: E::T) -> (E::T, bool) {
    let f = A::fast16::<S>(E::widen(x));
    if A::EXACT {
        return (E::narrow(f.y), f.ok);
    }
    let lo = E::narrow(f.y * f.lo);
    let hi = E::narrow(crate::math::fma(f.y, f.hi, f.y));
    (lo, f.ok & (E::bits(lo) == E::bits(hi)))
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{settle, slow16, Activation};
    use crate::lanes::Elem;
    use crate::math::fast16::Hw;
    use crate::pack::Pack16;

    /// Whether `E`'s lanes of `A` take the fast path
    /// ([`Activation::FAST_F16`], [`Activation::FAST_BF16`]).
    #[inline(always)]
    fn fast<E: Elem, A: Activation>() -> bool {
        if E::INF == 0x7c00 {
            A::FAST_F16
        } else {
            A::FAST_BF16
        }
    }

    /// True on every thread executing this when `p` holds on one of them:
    /// `vote.any` over `activemask` (the threads here, whatever the control
    /// flow around; a thread's own `p` is always counted).
    #[inline(always)]
    fn any_here(p: bool) -> bool {
        let r: u32;
        // SAFETY: `activemask` names exactly the threads executing this
        // instruction together, so the vote's member mask is valid in any
        // control flow; no memory is touched.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p, q; .reg .b32 m; activemask.b32 m; setp.ne.u32 p, {1}, 0; \
                 vote.sync.any.pred q, p, m; selp.u32 {0}, 1, 0, q; }}",
                out(reg32) r, in(reg32) p as u32,
                options(nomem, nostack, preserves_flags),
            );
        }
        r != 0
    }

    /// `$body` for `$i` = 0, 1, … while below `$n` (at most 8), spelled out:
    /// LLVM does not unroll a loop this long by itself, and a loop indexing
    /// the lanes would keep them in local memory.
    macro_rules! each_lane {
        ($n:expr, $i:ident => $body:block) => {
            each_lane!(@ $n, $i, $body, 0 1 2 3 4 5 6 7)
        };
        (@ $n:expr, $i:ident, $body:block, $($k:literal)*) => {
            $(if $k < $n {
                let $i: usize = $k;
                $body
            })*
        };
    }

    /// A 16-byte pack: as [`lanes`], but with the input and the results
    /// kept as the pack's four words through the slow loop (8 registers
    /// instead of 16 live beside the slow path's own; 16 more registers cost
    /// the kernels a third of their resident threads).
    #[inline(always)]
    pub(super) fn pack<E: Elem, A: Activation>(x: Pack16) -> Pack16 {
        if !fast::<E, A>() {
            let mut out = [0u32; 4];
            each_lane!(8, i => {
                let r = E::bits(slow16::<E, A>(E::from_bits(x.0[i / 2] >> (16 * (i % 2)))));
                out[i / 2] |= (r & 0xffff) << (16 * (i % 2));
            });
            return Pack16(out);
        }
        let mut out = [0u32; 4];
        let mut mask = 0u32;
        each_lane!(8, i => {
            let (r, sure) = settle::<E, A, Hw>(E::from_bits(x.0[i / 2] >> (16 * (i % 2))));
            out[i / 2] |= (E::bits(r) & 0xffff) << (16 * (i % 2));
            mask |= if sure { 0 } else { 1 << i };
        });
        while any_here(mask != 0) {
            let low = mask & mask.wrapping_neg(); // 0 when this thread has none
                                                  // The flagged lane's half-word mask within each word (selects,
                                                  // no indexing: an indexed array would live in local memory).
            let half = |k: usize| {
                let lo = 0u32.wrapping_sub((low >> (2 * k)) & 1) & 0xffff;
                let hi = 0u32.wrapping_sub((low >> (2 * k + 1)) & 1) & 0xffff_0000;
                lo | hi
            };
            let mut xj = 0u32;
            for k in 0..4 {
                let m = half(k);
                let v = x.0[k] & m;
                xj |= v | (v >> 16);
            }
            let r = E::bits(slow16::<E, A>(E::from_bits(xj & 0xffff))) & 0xffff;
            for k in 0..4 {
                let m = half(k);
                out[k] = (out[k] & !m) | ((r | (r << 16)) & m);
            }
            mask &= !low;
        }
        Pack16(out)
    }

    #[inline(always)]
    pub(super) fn lanes<E: Elem, A: Activation, const N: usize>(x: [E::T; N]) -> [E::T; N] {
        const { assert!(N <= 8) };
        if !fast::<E, A>() {
            return x.map(slow16::<E, A>);
        }
        let mut out = [0u32; N];
        let mut mask = 0u32;
        each_lane!(N, i => {
            let (r, sure) = settle::<E, A, Hw>(x[i]);
            out[i] = E::bits(r);
            mask |= if sure { 0 } else { 1 << i };
        });
        // Converged: every thread here iterates while any has a flagged lane.
        // The lane is picked and written back with masks.
        while any_here(mask != 0) {
            let low = mask & mask.wrapping_neg(); // 0 when this thread has none
            let pick = |i: usize| 0u32.wrapping_sub((low >> i) & 1);
            let mut xj = 0u32;
            each_lane!(N, i => {
                xj |= E::bits(x[i]) & pick(i);
            });
            let r = E::bits(slow16::<E, A>(E::from_bits(xj)));
            each_lane!(N, i => {
                out[i] = (out[i] & !pick(i)) | (r & pick(i));
            });
            mask &= !low;
        }
        out.map(E::from_bits)
    }
}
