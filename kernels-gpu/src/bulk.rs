//! Add with Hopper's bulk-copy engine: tiles of both inputs are moved into shared
//! memory by `cp.async.bulk` (one instruction per operand per tile, issued by one
//! thread), completion is signalled on a shared-memory barrier (`mbarrier` with a
//! transaction count), and every thread then adds 16-byte packs out of shared
//! memory and stores them with 128-bit `st.global`.
//!
//! What changes from the 128-bit kernels: loads no longer cost one instruction
//! per 16 bytes per thread, and a block keeps `stages` tiles in flight at once, so
//! the bytes in flight per SM are set by the tile size and the stage count
//! instead of by registers and occupancy.
//!
//! # The walk
//! `n` elements are `n / tile` whole tiles plus a remainder. Block `b` of a grid
//! of `G` takes tiles `b, b + G, …` ([`crate::device::block_tiles`]), each through
//! a ring of `stages` shared-memory slots: the leader thread issues the copies of
//! the next `stages` tiles ahead, every thread waits for a slot's barrier, adds
//! the packs it owns ([`crate::device::for_each_pack_in_tile`]), and after a
//! block barrier the slot is refilled. The remainder (less than one tile) is done
//! with the same grid-stride lane-group walk as the 128-bit kernels. The visit
//! marker `mark_visits_tiles_*` walks the same way.
//!
//! # Shared memory
//! `[barriers: BARRIER_BYTES][slot 0: A tile, B tile][slot 1: …]…`, so a launch
//! needs [`shared_bytes`] of dynamic shared memory. Tile sizes are multiples of
//! 16 bytes and the operands 16-byte aligned, as `cp.async.bulk` requires.

/// Bytes reserved in front of the tiles for the stage barriers (8 bytes each),
/// rounded to 128 so that tiles start 128-byte aligned.
pub const BARRIER_BYTES: u32 = 128;

/// Most stages a launch may use (one 8-byte barrier each in [`BARRIER_BYTES`]).
pub const MAX_STAGES: u32 = BARRIER_BYTES / 8;

/// Dynamic shared memory of one block: the barriers and `stages` slots of two
/// `tile_bytes` tiles.
pub const fn shared_bytes(tile_bytes: u32, stages: u32) -> u64 {
    BARRIER_BYTES as u64 + 2 * stages as u64 * tile_bytes as u64
}

/// Blocks to launch for `n` elements: one per whole tile, or enough threads for
/// the remainder's lane groups if that is more, capped at `max_grid`. 0 only for
/// `n = 0`.
pub const fn grid_for(n: u64, elem_bytes: u32, tile_bytes: u32, block: u32, max_grid: u32) -> u32 {
    let tile = (tile_bytes / elem_bytes) as u64;
    let tiles = n / tile;
    let rest = n - tiles * tile;
    let rest_blocks = crate::launch::grid_for(rest, 16 / elem_bytes, block, max_grid) as u64;
    let blocks = if tiles > rest_blocks { tiles } else { rest_blocks };
    if blocks > max_grid as u64 {
        max_grid
    } else {
        blocks as u32
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod kernels {
    use super::BARRIER_BYTES;
    use crate::device::{block_tiles, for_each_group, for_each_pack_in_tile, is_block_leader, shared, sync_threads};
    use crate::hopper::{
        bulk_load, fence_barrier_init, mbar_arrive_expect_tx, mbar_init, mbar_inval, mbar_wait, shared_addr,
    };
    use crate::pack::{Bf16Add, F16Add, F32Add, Pack16, PackAdd};

    /// The bulk-copy add over any dtype (see the module docs for the walk).
    ///
    /// # Safety
    /// `a`, `b`, `c` hold `n` elements each, 16-byte aligned, `c` not overlapping
    /// the inputs; `tile_bytes` is a non-zero multiple of 16 below 2^19; `1 <= stages
    /// <= MAX_STAGES`; the launch gives `shared_bytes(tile_bytes, stages)` of dynamic
    /// shared memory and a 1-D block.
    #[inline(always)]
    unsafe fn bulk_add<O: PackAdd>(a: *const O::T, b: *const O::T, c: *mut O::T, n: u64, tile_bytes: u32, stages: u32) {
        let elem = core::mem::size_of::<O::T>() as u64;
        let tile = tile_bytes as u64 / elem; // elements per tile
        let packs = tile_bytes as u64 / 16;
        let tiles = n / tile;
        let smem = shared::<Pack16>() as *mut u8;
        let bars = shared_addr(smem);
        let bar = |s: u32| bars + 8 * s;
        // Slot s: A at data(s), B at data(s) + tile_bytes.
        // SAFETY: the launch provides shared_bytes(tile_bytes, stages) bytes.
        let data = |s: u32| unsafe { smem.add((BARRIER_BYTES + 2 * s * tile_bytes) as usize) };
        let (first, stride, count) = block_tiles(tiles);
        let leader = is_block_leader();
        if leader {
            for s in 0..stages {
                // SAFETY: the barrier area holds MAX_STAGES 8-byte barriers.
                unsafe { mbar_init(bar(s), 1) };
            }
            fence_barrier_init();
        }
        sync_threads();
        // Leader only: issue the copies of the block's j-th tile into slot j % stages.
        let issue = |j: u64| {
            let s = (j % stages as u64) as u32;
            let off = ((first + j * stride) * tile_bytes as u64) as usize;
            let dst = shared_addr(data(s));
            // SAFETY: tile first + j·stride < tiles lies inside a and b; the slot is
            // free (its previous tile was consumed before the block barrier that
            // precedes this call); the barrier expects both copies' bytes.
            unsafe {
                mbar_arrive_expect_tx(bar(s), 2 * tile_bytes);
                bulk_load(dst, (a as *const u8).add(off), tile_bytes, bar(s));
                bulk_load(dst + tile_bytes, (b as *const u8).add(off), tile_bytes, bar(s));
            }
        };
        if leader {
            let mut j = 0;
            while j < count && j < stages as u64 {
                issue(j);
                j += 1;
            }
        }
        let (mut s, mut parity) = (0u32, 0u32);
        let mut j = 0u64;
        while j < count {
            // SAFETY: bar(s) was initialised above; its phase completes when both
            // tiles of the block's j-th tile have landed.
            unsafe { mbar_wait(bar(s), parity) };
            // SAFETY: slot s holds two tiles; the block's j-th tile lies inside c.
            let (sa, sb) = (data(s) as *const Pack16, unsafe { data(s).add(tile_bytes as usize) } as *const Pack16);
            // SAFETY: as above.
            let out = unsafe { c.add(((first + j * stride) * tile) as usize) } as *mut Pack16;
            for_each_pack_in_tile(packs, |p| {
                // SAFETY: p < packs: inside the landed slot and inside c's tile.
                unsafe { *out.add(p as usize) = O::pack(*sa.add(p as usize), *sb.add(p as usize)) };
            });
            // Every thread is done reading slot s before it is refilled.
            sync_threads();
            if leader && j + (stages as u64) < count {
                issue(j + stages as u64);
            }
            s += 1;
            if s == stages {
                s = 0;
                parity ^= 1;
            }
            j += 1;
        }
        if leader {
            for s in 0..stages {
                // SAFETY: every wait has returned (the last block barrier follows
                // the last wait) and no copy is outstanding.
                unsafe { mbar_inval(bar(s)) };
            }
        }
        // The remainder, after the last whole tile: 128-bit lane groups, grid-stride.
        let base = tiles * tile;
        // SAFETY: base <= n.
        let (ra, rb, rc) = unsafe { (a.add(base as usize), b.add(base as usize), c.add(base as usize)) };
        walk_rest::<O>(ra, rb, rc, n - base);
    }

    /// The remainder walk: 128-bit groups of `O::LANES`, then element by element.
    #[inline(always)]
    fn walk_rest<O: PackAdd>(a: *const O::T, b: *const O::T, c: *mut O::T, n: u64) {
        let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
        match O::LANES {
            4 => for_each_group::<4>(
                n,
                // SAFETY: group g lies below n (16-byte aligned: base is a whole number of tiles).
                |g| unsafe { *pc.add(g as usize) = O::pack(*pa.add(g as usize), *pb.add(g as usize)) },
                |first| tail::<O>(a, b, c, first, n),
            ),
            _ => for_each_group::<8>(
                n,
                // SAFETY: as above.
                |g| unsafe { *pc.add(g as usize) = O::pack(*pa.add(g as usize), *pb.add(g as usize)) },
                |first| tail::<O>(a, b, c, first, n),
            ),
        }
    }

    #[inline(always)]
    fn tail<O: PackAdd>(a: *const O::T, b: *const O::T, c: *mut O::T, first: u64, n: u64) {
        for i in first..n {
            // SAFETY: i < n.
            unsafe { *c.add(i as usize) = O::one(*a.add(i as usize), *b.add(i as usize)) };
        }
    }

    /// f32 add through the bulk-copy engine.
    ///
    /// # Safety
    /// As `bulk_add`: 16-byte aligned operands of `n` f32, `c` not overlapping,
    /// `tile_bytes` a multiple of 16, `1 <= stages <= MAX_STAGES`, and
    /// `shared_bytes(tile_bytes, stages)` of dynamic shared memory.
    ///
    /// # Parameters
    /// `a`, `b`: inputs; `c`: output; `n`: elements; `tile_bytes`: bytes per operand
    /// per tile; `stages`: tiles in flight per block.
    ///
    /// # Thread mapping
    /// Block `b` owns tiles `b, b + gridDim, …`; thread `t` adds packs `t, t +
    /// blockDim, …` of each; the remainder is walked grid-stride in lane groups.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f32_bulk(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        n: u64,
        tile_bytes: u32,
        stages: u32,
    ) {
        unsafe { bulk_add::<F32Add>(a, b, c, n, tile_bytes, stages) }
    }

    /// f16 add through the bulk-copy engine (`add.rn.f16x2` on the packs).
    ///
    /// # Safety
    /// As `add_f32_bulk`, with f16 elements.
    ///
    /// # Parameters
    /// As `add_f32_bulk`.
    ///
    /// # Thread mapping
    /// As `add_f32_bulk`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f16_bulk(
        a: *const f16,
        b: *const f16,
        c: *mut f16,
        n: u64,
        tile_bytes: u32,
        stages: u32,
    ) {
        unsafe { bulk_add::<F16Add>(a, b, c, n, tile_bytes, stages) }
    }

    /// bf16 add through the bulk-copy engine (each element added in f32, rounded once).
    ///
    /// # Safety
    /// As `add_f32_bulk`, with bf16 elements (as `u16` bits).
    ///
    /// # Parameters
    /// As `add_f32_bulk`.
    ///
    /// # Thread mapping
    /// As `add_f32_bulk`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_bf16_bulk(
        a: *const u16,
        b: *const u16,
        c: *mut u16,
        n: u64,
        tile_bytes: u32,
        stages: u32,
    ) {
        unsafe { bulk_add::<Bf16Add>(a, b, c, n, tile_bytes, stages) }
    }
}
