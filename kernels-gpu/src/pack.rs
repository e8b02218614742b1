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

/// One 128-bit global load with the instruction `$ld` (e.g. `ld.global.cs.v4.u32`),
/// the generic address converted to the global window first, as the ISA asks.
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
#[inline(always)]
pub unsafe fn load128(p: *const Pack16) -> Pack16 {
    // SAFETY: per the contract.
    unsafe { ld128!("ld.global.v4.u32", p, readonly, nostack, preserves_flags) }
}

/// One 128-bit global store, spelled out (see [`load128`]).
///
/// # Safety
/// `p` points to 16 writable, 16-byte aligned bytes of global memory.
#[inline(always)]
pub unsafe fn store128(p: *mut Pack16, v: Pack16) {
    // SAFETY: per the contract.
    unsafe { st128!("st.global.v4.u32", p, v) }
}

/// One 128-bit global load marked evict-first (`ld.global.cs.v4`).
///
/// # Safety
/// As [`load128`].
#[inline(always)]
pub unsafe fn load128_cs(p: *const Pack16) -> Pack16 {
    // SAFETY: per the contract.
    unsafe { ld128!("ld.global.cs.v4.u32", p, readonly, nostack, preserves_flags) }
}

/// One 128-bit global store marked evict-first (`st.global.cs.v4`).
///
/// # Safety
/// As [`store128`].
#[inline(always)]
pub unsafe fn store128_cs(p: *mut Pack16, v: Pack16) {
    // SAFETY: per the contract.
    unsafe { st128!("st.global.cs.v4.u32", p, v) }
}

/// Calls `f(0) … f(U - 1)` with constant arguments, so arrays indexed by `k` stay
/// in registers (a loop the compiler leaves rolled would index them at run time
/// and move them to local memory).
#[inline(always)]
fn unrolled<const U: usize>(mut f: impl FnMut(usize)) {
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

/// The unrolled tile walk of the `add_*_u2` / `add_*_u4` kernels: each block takes
/// whole tiles of `U × blockDim` packs (block `b` takes tiles `b, b + gridDim, …`),
/// each thread loads all `U` of its packs of both inputs before it adds and
/// stores any, then the remainder goes in 128-bit lane groups, grid-stride.
/// Within a tile, thread `t` owns packs `t, t + blockDim, …`: the walk of the bulk
/// kernels and of `mark_visits_tiles_*` with a tile of `U × blockDim` packs.
///
/// # Safety
/// `a`, `b`, `c` hold `n` elements, 16-byte aligned; `c` overlaps neither input.
#[inline(always)]
pub unsafe fn tile_add<O: PackAdd, const U: usize>(a: *const O::T, b: *const O::T, c: *mut O::T, n: u64) {
    use crate::device::{block_tiles, for_each_group};
    // SAFETY: special registers.
    let (t, block) = unsafe { (core::arch::nvptx::_thread_idx_x() as u64, core::arch::nvptx::_block_dim_x() as u64) };
    let packs = U as u64 * block;
    let tile = packs * O::LANES;
    let tiles = n / tile;
    let (first, stride, count) = block_tiles(tiles);
    let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
    for j in 0..count {
        let base = (first + j * stride) * packs + t;
        let (mut xs, mut ys) = ([Pack16([0; 4]); U], [Pack16([0; 4]); U]);
        unrolled::<U>(|k| {
            let p = (base + k as u64 * block) as usize;
            // SAFETY: the tile is whole, so every pack of it lies below n. Spelled
            // out: array elements that are only moved may be split into 64-bit loads.
            unsafe { (xs[k], ys[k]) = (load128(pa.add(p)), load128(pb.add(p))) };
        });
        unrolled::<U>(|k| {
            let p = (base + k as u64 * block) as usize;
            // SAFETY: as above.
            unsafe { *pc.add(p) = O::pack(xs[k], ys[k]) };
        });
    }
    let done = tiles * tile;
    // SAFETY: done <= n.
    let (ra, rb, rc) = unsafe { (a.add(done as usize), b.add(done as usize), c.add(done as usize)) };
    let (qa, qb, qc) = (ra as *const Pack16, rb as *const Pack16, rc as *mut Pack16);
    let rest = n - done;
    let tail = |first: u64| {
        for i in first..rest {
            // SAFETY: i < rest.
            unsafe { *rc.add(i as usize) = O::one(*ra.add(i as usize), *rb.add(i as usize)) };
        }
    };
    // SAFETY (both arms): group g lies below rest; 16-byte aligned since done is
    // a whole number of tiles.
    let group = |g: u64| unsafe { *qc.add(g as usize) = O::pack(*qa.add(g as usize), *qb.add(g as usize)) };
    match O::LANES {
        4 => for_each_group::<4>(rest, group, tail),
        _ => for_each_group::<8>(rest, group, tail),
    }
}

/// One 128-bit load through the non-coherent path, `ld.global.nc.v4`, with the
/// `.L2::256B` prefetch hint when `L2` (sm_80 and later only).
///
/// # Safety
/// `p` points to 16 readable, 16-byte aligned bytes of global memory that no
/// one writes during the kernel.
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

/// The V2/V6 walk (one pack per thread, grid-stride) with non-coherent loads.
///
/// # Safety
/// `a`, `b`, `c` hold `n` elements, 16-byte aligned; nobody writes `a` or `b`
/// during the kernel; `c` overlaps neither.
#[inline(always)]
pub unsafe fn hinted_add<O: PackAdd, const L2: bool>(a: *const O::T, b: *const O::T, c: *mut O::T, n: u64) {
    use crate::device::for_each_group;
    let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
    // SAFETY: group g lies below n.
    let group = |g: u64| unsafe {
        let (x, y) = (load128_nc::<L2>(pa.add(g as usize)), load128_nc::<L2>(pb.add(g as usize)));
        *pc.add(g as usize) = O::pack(x, y);
    };
    let tail = |first: u64| {
        for i in first..n {
            // SAFETY: i < n.
            unsafe { *c.add(i as usize) = O::one(*a.add(i as usize), *b.add(i as usize)) };
        }
    };
    match O::LANES {
        4 => for_each_group::<4>(n, group, tail),
        _ => for_each_group::<8>(n, group, tail),
    }
}
