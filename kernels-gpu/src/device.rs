//! Device-only plumbing: thread indexing, the grid-stride walk, the panic handler.

use core::arch::nvptx;

/// Index of this thread in the whole grid (x dimension), in 64 bits so that no
/// product of block index and block size can overflow.
#[inline(always)]
pub fn global_thread() -> u64 {
    // SAFETY: reading special registers has no preconditions.
    unsafe { nvptx::_block_idx_x() as u64 * nvptx::_block_dim_x() as u64 + nvptx::_thread_idx_x() as u64 }
}

/// Threads in the whole grid: the stride of a grid-stride loop.
#[inline(always)]
pub fn grid_threads() -> u64 {
    // SAFETY: as above.
    unsafe { nvptx::_grid_dim_x() as u64 * nvptx::_block_dim_x() as u64 }
}

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

/// The tiles of one block in the tiled walk (the bulk-copy kernels and their
/// visit marker): of `tiles` whole tiles, block `b` of a grid of `G` takes
/// `b, b + G, b + 2G, …`. Returns (first tile, stride, how many). The count depends
/// only on the block, so loops over it may hold block barriers.
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

/// Thread 0 of the block (the one that issues bulk copies and owns barriers).
#[cfg_attr(not(target_feature = "sm_90"), allow(dead_code))]
#[inline(always)]
pub fn is_block_leader() -> bool {
    // SAFETY: special registers.
    unsafe { nvptx::_thread_idx_x() == 0 && nvptx::_thread_idx_y() == 0 }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: trap aborts the kernel; the host sees a launch failure at sync.
    unsafe { nvptx::trap() }
}

/// Thread index within the block, x and y.
#[inline(always)]
pub fn thread_xy() -> (u32, u32) {
    // SAFETY: special registers.
    unsafe { (nvptx::_thread_idx_x(), nvptx::_thread_idx_y()) }
}

/// Block index, x and y.
#[inline(always)]
pub fn block_xy() -> (u32, u32) {
    // SAFETY: special registers.
    unsafe { (nvptx::_block_idx_x(), nvptx::_block_idx_y()) }
}

/// `__syncthreads()`: every thread of the block must reach it.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier; callers keep it in uniform control flow.
    unsafe { nvptx::_syncthreads() }
}

/// The block's dynamic shared memory (size set at launch), as `*mut T`.
#[inline(always)]
pub fn shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// `shfl.sync.down.b32` over the full warp.
#[inline(always)]
pub fn shfl_down(v: u32, delta: u32) -> u32 {
    let r: u32;
    // SAFETY: all 32 lanes call it (full mask); no memory is touched.
    unsafe {
        core::arch::asm!("shfl.sync.down.b32 {0}, {1}, {2}, 31, -1;", out(reg32) r, in(reg32) v, in(reg32) delta, options(nomem, nostack, preserves_flags));
    }
    r
}

/// Row-major index `r·cols + c`, in 64 bits (rows·cols can exceed 2^32).
#[inline(always)]
pub fn at(r: u32, cols: u32, c: u32) -> usize {
    r as usize * cols as usize + c as usize
}
