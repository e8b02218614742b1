//! Atomics on global memory (relaxed, device scope), as the PTX `atom` and
//! `red` instructions. For integer types `core::sync::atomic` also works on the
//! device (`AtomicU64::from_ptr`); these add f32 and the forms kernels reach for.
//!
//! # Safety (every function)
//! `p` points to a live, naturally aligned value in global memory that every
//! other access during the kernel reaches only atomically.

use core::arch::asm;

/// `atom.global.add.u32`: adds `v` to `*p`, returns the old value.
#[inline(always)]
pub unsafe fn atomic_add_u32(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: per the module contract.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; atom.global.add.u32 {o}, [g], {v}; }}", p = in(reg64) p, v = in(reg32) v, o = out(reg32) old, options(nostack))
    };
    old
}

/// `atom.global.add.u64`: adds `v` to `*p`, returns the old value.
#[inline(always)]
pub unsafe fn atomic_add_u64(p: *mut u64, v: u64) -> u64 {
    let old: u64;
    // SAFETY: per the module contract.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; atom.global.add.u64 {o}, [g], {v}; }}", p = in(reg64) p, v = in(reg64) v, o = out(reg64) old, options(nostack))
    };
    old
}

/// `atom.global.add.f32`: adds `v` to `*p` (rounded to nearest even; the order
/// of concurrent adds, and so the rounding, is not fixed), returns the old value.
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, v: f32) -> f32 {
    let old: f32;
    // SAFETY: per the module contract.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; atom.global.add.f32 {o}, [g], {v}; }}", p = in(reg64) p, v = in(reg32) v, o = out(reg32) old, options(nostack))
    };
    old
}

/// `atom.global.max.u32`: `*p = max(*p, v)`, returns the old value.
#[inline(always)]
pub unsafe fn atomic_max_u32(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: per the module contract.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; atom.global.max.u32 {o}, [g], {v}; }}", p = in(reg64) p, v = in(reg32) v, o = out(reg32) old, options(nostack))
    };
    old
}

/// `atom.global.cas.b32`: writes `new` if `*p == expected`; returns the old value.
#[inline(always)]
pub unsafe fn atomic_cas_u32(p: *mut u32, expected: u32, new: u32) -> u32 {
    let old: u32;
    // SAFETY: per the module contract.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; atom.global.cas.b32 {o}, [g], {e}, {n}; }}", p = in(reg64) p, e = in(reg32) expected, n = in(reg32) new, o = out(reg32) old, options(nostack))
    };
    old
}
