//! The 16-byte pack and its spelled-out global loads and stores (plain, `.cs`,
//! `.nc`, `.L2::256B`), shared by every 128-bit access pattern
//! (`crate::patterns`, the bulk-copy and foreach walks). What is computed on a
//! pack lives in [`crate::lanes`]. Only [`Pack16`] and [`unrolled`] exist on the
//! host; the loads and stores are device code.

/// 16 bytes, 16-byte aligned: reading one through a pointer gives `ld.*.v4.b32`.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Pack16(pub [u32; 4]);

/// One 128-bit global load with the instruction `$ld` (e.g. `ld.global.cs.v4.u32`),
/// the generic address converted to the global window first, as the ISA asks.
#[cfg(target_arch = "nvptx64")]
macro_rules! ld128 {
    ($ld:literal, $p:expr, $($opt:ident),*) => {{
        let (x0, x1, x2, x3): (u32, u32, u32, u32);
        core::arch::asm!(
            concat!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ", $ld, " {{{0}, {1}, {2}, {3}}}, [g]; }}"),
            out(reg32) x0, out(reg32) x1, out(reg32) x2, out(reg32) x3,
            p = in(reg64) $p,
            options($($opt),*),
        );
        Pack16([x0, x1, x2, x3])
    }};
}

/// One 128-bit global store with the instruction `$st` (e.g. `st.global.cs.v4.u32`).
#[cfg(target_arch = "nvptx64")]
macro_rules! st128 {
    ($st:literal, $p:expr, $v:expr) => {{
        let v: Pack16 = $v;
        core::arch::asm!(
            concat!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ", $st, " [g], {{{0}, {1}, {2}, {3}}}; }}"),
            in(reg32) v.0[0], in(reg32) v.0[1], in(reg32) v.0[2], in(reg32) v.0[3],
            p = in(reg64) $p,
            options(nostack, preserves_flags),
        );
    }};
}

/// One 128-bit global load, spelled out: a plain `*p` of a [`Pack16`] that is only
/// moved (never computed on) may be split into two 64-bit loads.
///
/// # Safety
/// `p` points to 16 readable, 16-byte aligned bytes of global memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load128(p: *const Pack16) -> Pack16 {
    // SAFETY: per the contract.
    unsafe { ld128!("ld.global.v4.u32", p, readonly, nostack, preserves_flags) }
}

/// One 128-bit global store, spelled out (see [`load128`]).
///
/// # Safety
/// `p` points to 16 writable, 16-byte aligned bytes of global memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store128(p: *mut Pack16, v: Pack16) {
    // SAFETY: per the contract.
    unsafe { st128!("st.global.v4.u32", p, v) }
}

/// One 128-bit global load marked evict-first (`ld.global.cs.v4`).
///
/// # Safety
/// As [`load128`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load128_cs(p: *const Pack16) -> Pack16 {
    // SAFETY: per the contract.
    unsafe { ld128!("ld.global.cs.v4.u32", p, readonly, nostack, preserves_flags) }
}

/// One 128-bit global store marked evict-first (`st.global.cs.v4`).
///
/// # Safety
/// As [`store128`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store128_cs(p: *mut Pack16, v: Pack16) {
    // SAFETY: per the contract.
    unsafe { st128!("st.global.cs.v4.u32", p, v) }
}

/// Calls `f(0) … f(U - 1)` with constant arguments, so arrays indexed by `k` stay
/// in registers (a loop the compiler leaves rolled would index them at run time
/// and move them to local memory).
#[inline(always)]
pub fn unrolled<const U: usize>(mut f: impl FnMut(usize)) {
    match U {
        2 => {
            f(0);
            f(1);
        }
        4 => {
            f(0);
            f(1);
            f(2);
            f(3);
        }
        _ => (0..U).for_each(f),
    }
}

/// One 128-bit load through the non-coherent path, `ld.global.nc.v4`, with the
/// `.L2::256B` prefetch hint when `L2` (sm_80 and later only).
///
/// # Safety
/// `p` points to 16 readable, 16-byte aligned bytes of global memory that no
/// one writes during the kernel.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load128_nc<const L2: bool>(p: *const Pack16) -> Pack16 {
    // SAFETY: per the contract.
    unsafe {
        if L2 {
            ld128!("ld.global.nc.L2::256B.v4.u32", p, pure, readonly, nostack, preserves_flags)
        } else {
            ld128!("ld.global.nc.v4.u32", p, pure, readonly, nostack, preserves_flags)
        }
    }
}
