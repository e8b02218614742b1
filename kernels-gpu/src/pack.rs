//! Device-side building blocks shared by every 128-bit access pattern: the
//! 16-byte pack, the packed arithmetic on it, and the per-dtype add as a type.
//!
//! An access pattern (one 128-bit load per operand per thread, a bulk-copied tile,
//! the multi-tensor walk) is written once over [`PackAdd`]; the dtype-specific
//! part, how to add two packs and two single elements, lives here.

use crate::bits::bf16_add;
use core::arch::nvptx::{f16x2, f16x2_add};
use core::mem::transmute;

/// 16 bytes, 16-byte aligned: reading one through a pointer gives `ld.*.v4.b32`.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Pack16(pub [u32; 4]);

/// Two f16 in a word, added with one `add.rn.f16x2`.
#[inline(always)]
pub fn half2_add(x: u32, y: u32) -> u32 {
    // SAFETY: f16x2 and u32 have the same size; every bit pattern is a valid f16x2.
    unsafe { transmute::<f16x2, u32>(f16x2_add(transmute::<u32, f16x2>(x), transmute::<u32, f16x2>(y))) }
}

/// Two bf16 in a word, each widened to f32, added and rounded once.
#[inline(always)]
pub fn bf16x2_add(x: u32, y: u32) -> u32 {
    let lo = bf16_add(x as u16, y as u16) as u32;
    let hi = bf16_add((x >> 16) as u16, (y >> 16) as u16) as u32;
    lo | (hi << 16)
}

/// The add of one dtype, on a whole 16-byte pack and on one element.
pub trait PackAdd {
    /// The element as the kernels see it (`f32`, `f16`, bf16 as `u16` bits).
    type T: Copy;
    /// Elements per 16-byte pack.
    const LANES: u64 = (16 / core::mem::size_of::<Self::T>()) as u64;
    /// Lane-wise sum of two packs.
    fn pack(x: Pack16, y: Pack16) -> Pack16;
    /// Sum of two elements (tails).
    fn one(x: Self::T, y: Self::T) -> Self::T;
}

/// f32: four `add.rn.f32`.
pub struct F32Add;
/// f16: four `add.rn.f16x2`.
pub struct F16Add;
/// bf16: eight adds in f32, each rounded once to bf16.
pub struct Bf16Add;

impl PackAdd for F32Add {
    type T = f32;
    #[inline(always)]
    fn pack(x: Pack16, y: Pack16) -> Pack16 {
        let s = |i: usize| (f32::from_bits(x.0[i]) + f32::from_bits(y.0[i])).to_bits();
        Pack16([s(0), s(1), s(2), s(3)])
    }
    #[inline(always)]
    fn one(x: f32, y: f32) -> f32 {
        x + y
    }
}

impl PackAdd for F16Add {
    type T = f16;
    #[inline(always)]
    fn pack(x: Pack16, y: Pack16) -> Pack16 {
        let s = |i: usize| half2_add(x.0[i], y.0[i]);
        Pack16([s(0), s(1), s(2), s(3)])
    }
    #[inline(always)]
    fn one(x: f16, y: f16) -> f16 {
        x + y
    }
}

impl PackAdd for Bf16Add {
    type T = u16;
    #[inline(always)]
    fn pack(x: Pack16, y: Pack16) -> Pack16 {
        let s = |i: usize| bf16x2_add(x.0[i], y.0[i]);
        Pack16([s(0), s(1), s(2), s(3)])
    }
    #[inline(always)]
    fn one(x: u16, y: u16) -> u16 {
        bf16_add(x, y)
    }
}

/// One 128-bit global load, spelled out: a plain `*p` of a [`Pack16`] that is only
/// moved (never computed on) may be split into two 64-bit loads.
///
/// # Safety
/// `p` points to 16 readable, 16-byte aligned bytes of global memory.
#[inline(always)]
pub unsafe fn load128(p: *const Pack16) -> Pack16 {
    let (x0, x1, x2, x3): (u32, u32, u32, u32);
    // SAFETY: per the contract; the generic address is converted to the global window.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.v4.u32 {{{0}, {1}, {2}, {3}}}, [g]; }}",
            out(reg32) x0, out(reg32) x1, out(reg32) x2, out(reg32) x3,
            p = in(reg64) p,
            options(readonly, nostack, preserves_flags),
        );
    }
    Pack16([x0, x1, x2, x3])
}

/// One 128-bit global store, spelled out (see [`load128`]).
///
/// # Safety
/// `p` points to 16 writable, 16-byte aligned bytes of global memory.
#[inline(always)]
pub unsafe fn store128(p: *mut Pack16, v: Pack16) {
    // SAFETY: per the contract.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; st.global.v4.u32 [g], {{{0}, {1}, {2}, {3}}}; }}",
            in(reg32) v.0[0], in(reg32) v.0[1], in(reg32) v.0[2], in(reg32) v.0[3],
            p = in(reg64) p,
            options(nostack, preserves_flags),
        );
    }
}
