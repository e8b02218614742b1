//! Where a thread is: its indices in the block and the grid, as the special
//! registers give them. Products are taken in 64 bits so that no block index times
//! block size can overflow, whatever the grid.

use core::arch::nvptx;

/// Index of this thread in the whole grid (x dimension), in 64 bits.
#[inline(always)]
pub fn global_thread() -> u64 {
    // SAFETY: reading special registers has no preconditions.
    unsafe { nvptx::_block_idx_x() as u64 * nvptx::_block_dim_x() as u64 + nvptx::_thread_idx_x() as u64 }
}

/// Threads in the whole grid (x dimension): the stride of a grid-stride loop.
#[inline(always)]
pub fn grid_threads() -> u64 {
    // SAFETY: as above.
    unsafe { nvptx::_grid_dim_x() as u64 * nvptx::_block_dim_x() as u64 }
}

/// Thread index within the block, x and y.
#[inline(always)]
pub fn thread_xy() -> (u32, u32) {
    // SAFETY: special registers.
    unsafe { (nvptx::_thread_idx_x(), nvptx::_thread_idx_y()) }
}

/// Block index within the grid, x and y.
#[inline(always)]
pub fn block_xy() -> (u32, u32) {
    // SAFETY: special registers.
    unsafe { (nvptx::_block_idx_x(), nvptx::_block_idx_y()) }
}

/// Threads per block, x and y.
#[inline(always)]
pub fn block_dim_xy() -> (u32, u32) {
    // SAFETY: special registers.
    unsafe { (nvptx::_block_dim_x(), nvptx::_block_dim_y()) }
}

/// Blocks in the grid, x and y.
#[inline(always)]
pub fn grid_dim_xy() -> (u32, u32) {
    // SAFETY: special registers.
    unsafe { (nvptx::_grid_dim_x(), nvptx::_grid_dim_y()) }
}

/// This thread's lane in its warp (0..32), for a 1-D block.
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_xy().0 % 32
}

/// This thread's warp in its block, for a 1-D block.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_xy().0 / 32
}

/// Thread (0, 0) of the block: the one that issues bulk copies and owns barriers.
#[inline(always)]
pub fn is_block_leader() -> bool {
    // SAFETY: special registers.
    unsafe { nvptx::_thread_idx_x() == 0 && nvptx::_thread_idx_y() == 0 }
}

/// Row-major index `r·cols + c`, in 64 bits (rows·cols can exceed 2^32).
#[inline(always)]
pub fn at(r: u32, cols: u32, c: u32) -> usize {
    r as usize * cols as usize + c as usize
}
