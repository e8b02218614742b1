//! The walks: how the threads of a grid divide `n` elements among themselves.
//!
//! * [`for_each_group`]: the grid-stride walk over lane groups that every
//!   per-thread kernel uses; any grid covers every element exactly once.
//! * [`block_tiles`] and [`for_each_pack_in_tile`]: the tiled walk, whole tiles
//!   by block and 16-byte packs within a tile by thread (the unrolled and
//!   bulk-copy kernels).

use core::arch::nvptx;

use crate::thread::{global_thread, grid_threads};

/// Walks the lane groups of `n` elements, `LANES` per group, with a grid-stride loop.
///
/// Group `g` covers `g * LANES .. g * LANES + LANES`. `full(g)` handles a group that
/// lies wholly below `n`; `tail(first)` handles the one partial group at the end,
/// element by element from `first` up to `n`. Every element is visited exactly
/// once whatever the grid size.
#[inline(always)]
pub fn for_each_group<const LANES: u64>(n: u64, mut full: impl FnMut(u64), mut tail: impl FnMut(u64)) {
    let full_groups = n / LANES;
    let all_groups = n.div_ceil(LANES);
    let stride = grid_threads();
    let mut g = global_thread();
    while g < all_groups {
        if g < full_groups {
            full(g);
        } else {
            tail(g * LANES);
        }
        g += stride;
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
