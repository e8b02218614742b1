//! The walks: how the threads of a grid divide `n` elements among themselves.
//!
//! * [`for_each_group`]: the grid-stride walk over lane groups that every
//!   per-thread kernel uses; any grid covers every element exactly once.
//! * [`for_each_unrolled`]: `U` packs per thread, whole tiles by block, every
//!   load of a tile before its first store (the unrolled kernels).
//! * [`block_tiles`] and [`for_each_pack_in_tile`]: the tiled walk, whole tiles
//!   by block and 16-byte packs within a tile by thread (the bulk-copy kernels).
//! * [`for_each_in_range`]: one block over one range of elements (the foreach
//!   kernels' chunks).

use core::arch::nvptx;

use crate::thread::{global_thread, grid_threads};

/// The index width of a walk: `u32` when every index the walk forms fits (most
/// launches: fewer than 2^32 groups), `u64` otherwise. 64-bit index arithmetic
/// costs two instructions per add or compare and more per shift; in a launch
/// where each thread handles one or two groups that overhead was most of the
/// instructions a warp issued (ncu, n = 2^20).
pub trait Index:
    Copy + Ord + core::ops::Add<Output = Self> + core::ops::Mul<Output = Self> + core::ops::AddAssign
{
    /// `x`, which the caller has checked to fit.
    fn of(x: u64) -> Self;
    /// Widened back to 64 bits (free for `u64`, one zero-extension for `u32`).
    fn wide(self) -> u64;
}

impl Index for u32 {
    #[inline(always)]
    fn of(x: u64) -> Self {
        x as u32
    }
    #[inline(always)]
    fn wide(self) -> u64 {
        self as u64
    }
}

impl Index for u64 {
    #[inline(always)]
    fn of(x: u64) -> Self {
        x
    }
    #[inline(always)]
    fn wide(self) -> u64 {
        self
    }
}

/// True when every value up to `bound` fits the 32-bit walk.
#[inline(always)]
fn fits_u32(bound: u64) -> bool {
    bound <= u32::MAX as u64
}

/// Walks the lane groups of `n` elements, `LANES` per group, with a grid-stride loop.
///
/// Group `g` covers `g * LANES .. g * LANES + LANES`. `full(g)` handles a group that
/// lies wholly below `n`; `tail(first)` handles the one partial group at the end,
/// element by element from `first` up to `n`. Every element is visited exactly
/// once whatever the grid size.
///
/// The loop tests one bound per group. The partial group, if any, is group
/// `n / LANES`: the one thread whose sequence holds that index leaves the loop
/// exactly there, so `g == n / LANES` after the loop picks it out. Indices are
/// 32-bit whenever `n + gridDim * blockDim * LANES` fits in 32 bits (any
/// element index the walk could form), so every `n` below about 2^32 takes the
/// 32-bit path and every `n` above takes the 64-bit one.
#[inline(always)]
pub fn for_each_group<const LANES: u64>(n: u64, full: impl FnMut(u64), tail: impl FnMut(u64)) {
    let stride = grid_threads();
    if fits_u32(n.saturating_add(stride * LANES)) {
        groups::<u32, LANES>(n, stride, full, tail)
    } else {
        groups::<u64, LANES>(n, stride, full, tail)
    }
}

/// [`for_each_group`] for an `n` known to be small (below 2^31 minus the grid's
/// threads times `LANES`; the bulk kernels' remainder, under one tile): the
/// 32-bit loop alone.
#[inline(always)]
pub fn for_each_group_within<const LANES: u64>(n: u64, full: impl FnMut(u64), tail: impl FnMut(u64)) {
    groups::<u32, LANES>(n, grid_threads(), full, tail)
}

#[inline(always)]
fn groups<I: Index, const LANES: u64>(n: u64, stride: u64, mut full: impl FnMut(u64), mut tail: impl FnMut(u64)) {
    let whole = I::of(n / LANES);
    let stride = I::of(stride);
    let mut g = I::of(global_thread());
    while g < whole {
        full(g.wide());
        g += stride;
    }
    if g == whole && n % LANES != 0 {
        tail(whole.wide() * LANES);
    }
}

/// The unrolled walk: tiles of `U × blockDim` packs of `LANES` elements, one tile
/// per block and step (block `b` of a grid of `G` takes tiles `b, b + G, …`);
/// in a tile thread `t` owns packs `t, t + blockDim, …, t + (U-1)·blockDim`, so
/// each of its `U` loads is one coalesced warp access.
///
/// `whole(p)` gets this thread's `U` pack indices of a tile that lies wholly
/// below `n`. The one block whose sequence reaches the partial last tile hands
/// each of its packs below `n / LANES` to `part(p)`, and its thread 0 calls
/// `tail(first)` for the elements after the last whole pack. No division: a
/// tile is whole when its end is at most `n / LANES`. Launch
/// `ceil(n / (U · blockDim · LANES))` blocks (fewer is correct, just slower).
#[inline(always)]
pub fn for_each_unrolled<const U: usize, const LANES: u64>(
    n: u64,
    whole: impl FnMut([u64; U]),
    part: impl FnMut(u64),
    tail: impl FnMut(u64),
) {
    // SAFETY: special registers.
    let (grid, block) = unsafe { (nvptx::_grid_dim_x() as u64, nvptx::_block_dim_x() as u64) };
    // Largest pack index formed: a tile start below packs + (grid + 1) tiles;
    // bounded in elements, as `for_each_group`, so n >= 2^32 walks in 64 bits.
    if fits_u32(n.saturating_add((grid + 1) * U as u64 * block * LANES)) {
        unrolled::<u32, U, LANES>(n, whole, part, tail)
    } else {
        unrolled::<u64, U, LANES>(n, whole, part, tail)
    }
}

#[inline(always)]
fn unrolled<I: Index, const U: usize, const LANES: u64>(
    n: u64,
    mut whole: impl FnMut([u64; U]),
    mut part: impl FnMut(u64),
    mut tail: impl FnMut(u64),
) {
    // SAFETY: special registers.
    let (t, block, b, grid) =
        unsafe { (nvptx::_thread_idx_x(), nvptx::_block_dim_x(), nvptx::_block_idx_x(), nvptx::_grid_dim_x()) };
    let (t, block) = (I::of(t as u64), I::of(block as u64));
    let per_tile = I::of(U as u64) * block;
    let packs = I::of(n / LANES);
    let step = I::of(grid as u64) * per_tile;
    let mut start = I::of(b as u64) * per_tile;
    let mut k_th = [0u64; U];
    while start + per_tile <= packs {
        let mut p = start + t;
        for slot in k_th.iter_mut() {
            *slot = p.wide();
            p += block;
        }
        whole(k_th);
        start += step;
    }
    // Only the block holding the partial tile stops at or below `packs`.
    if start <= packs {
        let mut p = start + t;
        for _ in 0..U {
            if p < packs {
                part(p.wide());
            }
            p += block;
        }
        if t == I::of(0) && n % LANES != 0 {
            tail(packs.wide() * LANES);
        }
    }
}

/// The tiles of one block in the tiled walk: of `tiles` whole tiles, block `b` of
/// a grid of `G` takes `b, b + G, b + 2G, …`. Returns (first tile, stride, how
/// many). The count depends only on the block, so loops over it may hold block
/// barriers.
#[inline(always)]
pub fn block_tiles(tiles: u64) -> (u64, u64, u64) {
    // SAFETY: special registers.
    let (b, g) = unsafe { (nvptx::_block_idx_x() as u64, nvptx::_grid_dim_x() as u64) };
    let count = if b < tiles { (tiles - b).div_ceil(g) } else { 0 };
    (b, g, count)
}

/// Calls `f(p)` for the packs `p < packs` of one tile that this thread owns:
/// thread `t` of the block takes `t, t + blockDim, …`, so a warp touches 32
/// consecutive packs per step.
#[inline(always)]
pub fn for_each_pack_in_tile(packs: u64, mut f: impl FnMut(u64)) {
    // SAFETY: special registers.
    let (t, step) = unsafe { (nvptx::_thread_idx_x() as u64, nvptx::_block_dim_x() as u64) };
    let mut p = t;
    while p < packs {
        f(p);
        p += step;
    }
}

/// The block walk over one range `start..end` of elements, shared by the
/// block's threads (the foreach kernels' walk within a chunk): thread `t` of
/// `step` threads.
///
/// When `aligned` (all operands 16-byte aligned at element 0) and the range
/// holds exactly `U` lane groups per thread, `whole(g, step)` gets this
/// thread's groups `g, g + step, …` (`U` of them, so all can be loaded before
/// any is stored). Otherwise an aligned range goes by lane groups — `group(g)`
/// for whole groups (elements `g·LANES ..`), `one(i)` for the elements of a
/// partial last one — and an unaligned range element by element, `one(i)`,
/// thread `t` taking `start + t, start + t + step, …`. Every element of the
/// range is visited exactly once. `start` is a multiple of `LANES` when
/// `aligned`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn for_each_in_range<const LANES: u64, const U: usize>(
    start: u64,
    end: u64,
    t: u64,
    step: u64,
    aligned: bool,
    mut whole: impl FnMut(u64, u64),
    mut group: impl FnMut(u64),
    mut one: impl FnMut(u64),
) {
    if !aligned {
        let mut i = start + t;
        while i < end {
            one(i);
            i += step;
        }
    } else if end - start == U as u64 * step * LANES {
        whole(start / LANES + t, step);
    } else {
        let groups = (end - start).div_ceil(LANES);
        let mut g = t;
        while g < groups {
            let first = start + g * LANES;
            if first + LANES <= end {
                group(first / LANES);
            } else {
                for i in first..end {
                    one(i);
                }
            }
            g += step;
        }
    }
}
