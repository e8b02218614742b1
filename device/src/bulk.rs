//! The bulk-copy walk (sm_90): an element-wise operation through Hopper's bulk-copy engine: tiles of both inputs are moved into shared
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
//! of `G` takes tiles `b, b + G, …` (`crate::block_tiles`), each through
//! a ring of `stages` shared-memory slots: the leader thread issues the copies of
//! the next `stages` tiles ahead, every thread waits for a slot's barrier, adds
//! the packs it owns (`crate::for_each_pack_in_tile`), and after a
//! block barrier the slot is refilled. The remainder (less than one tile) is done
//! with the same grid-stride lane-group walk as the 128-bit kernels. The visit
//! marker `mark_visits_tiles_*` walks the same way.
//!
//! # Writing back
//! The `add_*_bulk` kernels store the sums with 128-bit `st.global` straight from
//! registers. The `add_*_bulk_st` kernels write them into an output tile in
//! shared memory instead, and the leader copies that tile out with one
//! `cp.async.bulk` shared → global (after `fence.proxy.async` and a block
//! barrier), waiting for the copy to have read the tile before the slot is used
//! again; the question they answer is whether the copy engine also writes faster.
//!
//! # Shared memory
//! `[barriers: BARRIER_BYTES][slot 0: A tile, B tile(, C tile)][slot 1: …]…`, so
//! a launch needs [`shared_bytes`] of dynamic shared memory. Tile sizes are
//! multiples of 16 bytes and the operands 16-byte aligned, as `cp.async.bulk`
//! requires.

/// Bytes reserved in front of the tiles for the stage barriers (8 bytes each),
/// rounded to 128 so that tiles start 128-byte aligned.
pub const BARRIER_BYTES: u32 = 128;

/// Most stages a launch may use (one 8-byte barrier each in [`BARRIER_BYTES`]).
pub const MAX_STAGES: u32 = BARRIER_BYTES / 8;

/// Dynamic shared memory of one block: the barriers and `stages` slots of two
/// `tile_bytes` input tiles, plus an output tile per slot when the kernel writes
/// back with bulk copies (`bulk_store`).
pub const fn shared_bytes(tile_bytes: u32, stages: u32, bulk_store: bool) -> u64 {
    let tiles = if bulk_store { 3 } else { 2 };
    BARRIER_BYTES as u64 + tiles * stages as u64 * tile_bytes as u64
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use walk::bulk_map;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod walk {
    use super::BARRIER_BYTES;
    use crate::hopper::{
        bulk_load, bulk_store, bulk_wait_read, fence_async_shared, fence_barrier_init, mbar_arrive_expect_tx,
        mbar_init, mbar_inval, mbar_wait, shared_addr,
    };
    use crate::lanes::{Elem, Op};
    use crate::pack::Pack16;
    use crate::{block_tiles, dynamic_shared, for_each_pack_in_tile, is_block_leader, sync_threads};

    /// The bulk-copy walk of a two-input operation over any dtype (see the module
    /// docs for the walk).
    ///
    /// # Safety
    /// `a`, `b`, `c` hold `n` elements each, 16-byte aligned, `c` not overlapping
    /// the inputs; `tile_bytes` is a non-zero multiple of 16, at most 2^18; `1 <= stages
    /// <= MAX_STAGES`; the launch gives `shared_bytes(tile_bytes, stages, bulk_store)` of dynamic
    /// shared memory and a 1-D block.
    #[inline(always)]
    pub unsafe fn bulk_map<E: Elem, O: Op<E> + Default, const STORE: bool>(
        a: *const E::T,
        b: *const E::T,
        c: *mut E::T,
        n: u64,
        tile_bytes: u32,
        stages: u32,
    ) {
        let elem = core::mem::size_of::<E::T>() as u64;
        let tile = tile_bytes as u64 / elem; // elements per tile
        let packs = tile_bytes as u64 / 16;
        let tiles = n / tile;
        let smem = dynamic_shared::<Pack16>() as *mut u8;
        let bars = shared_addr(smem);
        let bar = |s: u32| bars + 8 * s;
        // Slot s: A at data(s), B at data(s) + tile_bytes (C after B with STORE).
        let slot = if STORE { 3 * tile_bytes } else { 2 * tile_bytes };
        // SAFETY: the launch provides shared_bytes(tile_bytes, stages, STORE) bytes.
        let data = |s: u32| unsafe { smem.add((BARRIER_BYTES + s * slot) as usize) };
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
            // SAFETY: the output tile of the slot (STORE only).
            let sc = unsafe { data(s).add(2 * tile_bytes as usize) } as *mut Pack16;
            for_each_pack_in_tile(packs, |p| {
                // SAFETY: p < packs: inside the landed slot, and inside c's tile or
                // the slot's output tile, which no bulk store reads any more (the
                // leader waited for it before the last block barrier).
                unsafe {
                    let sum = O::default().pack(*sa.add(p as usize), *sb.add(p as usize));
                    *(if STORE { sc } else { out }).add(p as usize) = sum;
                }
            });
            if STORE {
                fence_async_shared();
            }
            // Every thread is done reading slot s (and writing its output tile)
            // before it is refilled or copied out.
            sync_threads();
            if leader {
                if STORE {
                    // SAFETY: the output tile is complete and visible to the copy
                    // engine (fences and barrier above); c's tile is this block's.
                    unsafe { bulk_store(out as *mut u8, shared_addr(sc), tile_bytes) };
                    bulk_wait_read();
                }
                if j + (stages as u64) < count {
                    issue(j + stages as u64);
                }
            }
            if STORE && j + 1 < count {
                // Nobody writes an output tile again before the leader has seen
                // the last copy read it.
                sync_threads();
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
        // The remainder, after the last whole tile: 128-bit lane groups, grid-stride,
        // in the walk's 32-bit loop alone (less than one tile, so every index
        // fits). With both index widths inlined here ptxas scheduled the tile
        // loop above differently and add_f32_bulk_st lost 1.6% at 2^28 (739.6
        // µs against 727.7, measured in one run on an H200); out of line (a
        // call) it lost 3.7%.
        let base = tiles * tile;
        // SAFETY: base <= n.
        let (ra, rb, rc) = unsafe { (a.add(base as usize), b.add(base as usize), c.add(base as usize)) };
        // SAFETY: the rest of the operands, 16-byte aligned (whole tiles before it).
        unsafe { crate::patterns::pack_within::<E, O>(O::default(), ra, rb, rc, n - base) };
    }
}
