//! Launch geometry shared by the kernels and the host.
//!
//! Every kernel of this crate walks its work with a grid-stride loop over *lane
//! groups*: group `g` covers elements `g * lanes .. g * lanes + lanes`. The host
//! derives the grid from the same `lanes` constant with [`grid_for`], so a grid
//! that is capped at [`MAX_GRID_X`] still covers every element.

/// Threads per block when the caller does not choose.
pub const DEFAULT_BLOCK: u32 = 256;

/// Largest block CUDA accepts on every architecture this crate targets.
pub const MAX_BLOCK: u32 = 1024;

/// Largest `gridDim.x` (2^31 - 1) on sm_30 and later.
pub const MAX_GRID_X: u32 = i32::MAX as u32;

/// Number of lane groups needed to cover `n` elements, `lanes` per group.
pub const fn groups(n: u64, lanes: u32) -> u64 {
    n.div_ceil(lanes as u64)
}

/// Blocks to launch so that every lane group of `n` elements gets a thread in the
/// first pass, capped at `max_grid` (the grid-stride loop covers the rest).
///
/// Returns 0 only when `n == 0`. `block` and `max_grid` must be non-zero.
pub const fn grid_for(n: u64, lanes: u32, block: u32, max_grid: u32) -> u32 {
    let blocks = groups(n, lanes).div_ceil(block as u64);
    if blocks > max_grid as u64 {
        max_grid
    } else {
        blocks as u32
    }
}

/// Blocks for the unrolled walk (`walk::for_each_unrolled`): one per tile of
/// `unroll × block` packs of `lanes` elements, the partial last tile included,
/// capped at `max_grid` (each block then takes every `max_grid`-th tile).
///
/// Returns 0 only when `n == 0`. `lanes`, `unroll`, `block` and `max_grid` must
/// be non-zero.
pub const fn unrolled_grid(n: u64, lanes: u32, unroll: u32, block: u32, max_grid: u32) -> u32 {
    let tile = lanes as u64 * unroll as u64 * block as u64;
    let blocks = n.div_ceil(tile);
    if blocks > max_grid as u64 {
        max_grid
    } else {
        blocks as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_every_group_in_one_pass_when_uncapped() {
        for &(n, lanes, block) in &[(1u64, 1u32, 256u32), (257, 1, 256), (9, 8, 32), (1 << 33, 4, 256)] {
            let grid = grid_for(n, lanes, block, MAX_GRID_X) as u64;
            assert!(grid * block as u64 * lanes as u64 >= n, "{n} {lanes} {block}");
            assert!((grid - 1) * (block as u64) * (lanes as u64) < n, "one block too many");
        }
    }

    #[test]
    fn unrolled_grid_has_a_block_per_tile_partial_included() {
        assert_eq!(unrolled_grid(0, 8, 2, 256, MAX_GRID_X), 0);
        assert_eq!(unrolled_grid(1, 8, 2, 256, MAX_GRID_X), 1);
        assert_eq!(unrolled_grid(4096, 8, 2, 256, MAX_GRID_X), 1);
        assert_eq!(unrolled_grid(4097, 8, 2, 256, MAX_GRID_X), 2);
        assert_eq!(unrolled_grid(1 << 40, 4, 4, 1024, 1000), 1000);
    }

    #[test]
    fn grid_is_capped_and_zero_for_empty_input() {
        assert_eq!(grid_for(0, 4, 256, MAX_GRID_X), 0);
        assert_eq!(grid_for(u64::MAX, 1, 32, MAX_GRID_X), MAX_GRID_X);
        assert_eq!(grid_for(1 << 20, 1, 32, 7), 7);
    }
}
