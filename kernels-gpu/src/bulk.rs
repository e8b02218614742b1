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
//! of `G` takes tiles `b, b + G, …` (`device::block_tiles`), each through
//! a ring of `stages` shared-memory slots: the leader thread issues the copies of
//! the next `stages` tiles ahead, every thread waits for a slot's barrier, adds
//! the packs it owns (`device::for_each_pack_in_tile`), and after a
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
    use crate::device::{block_tiles, for_each_pack_in_tile, is_block_leader, shared, sync_threads};
    use crate::hopper::{
        bulk_load, bulk_store, bulk_wait_read, fence_async_shared, fence_barrier_init, mbar_arrive_expect_tx,
        mbar_init, mbar_inval, mbar_wait, shared_addr,
    };
    use crate::lanes::{Add, Bf16, Elem, Op, F16, F32};
    use crate::pack::Pack16;
    use crate::patterns::{pack, NC_L2, PLAIN};

    /// The bulk-copy walk of a two-input operation over any dtype (see the module
    /// docs for the walk).
    ///
    /// # Safety
    /// `a`, `b`, `c` hold `n` elements each, 16-byte aligned, `c` not overlapping
    /// the inputs; `tile_bytes` is a non-zero multiple of 16 below 2^19; `1 <= stages
    /// <= MAX_STAGES`; the launch gives `shared_bytes(tile_bytes, stages)` of dynamic
    /// shared memory and a 1-D block.
    #[inline(always)]
    unsafe fn bulk_map<E: Elem, O: Op<E> + Default, const STORE: bool>(
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
        let smem = shared::<Pack16>() as *mut u8;
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
        // The remainder, after the last whole tile: 128-bit lane groups, grid-stride.
        let base = tiles * tile;
        // SAFETY: base <= n.
        let (ra, rb, rc) = unsafe { (a.add(base as usize), b.add(base as usize), c.add(base as usize)) };
        // SAFETY: the rest of the operands, 16-byte aligned (whole tiles before it).
        unsafe { pack::<E, O, PLAIN>(O::default(), ra, rb, rc, n - base) };
    }

    /// Declares the bulk-copy entry points, one generic definition each.
    macro_rules! bulk_kernels {
        ($($name:ident: $e:ident, $store:literal, $what:literal;)*) => {$(
            #[doc = concat!("Add through the bulk-copy engine: ", $what, ".")]
            ///
            /// # Safety
            /// 16-byte aligned operands of `n` elements, `c` not overlapping the
            /// inputs; `tile_bytes` a non-zero multiple of 16 up to 2^18; `1 <= stages
            /// <= MAX_STAGES`; `shared_bytes(tile_bytes, stages, bulk_store)` of
            /// dynamic shared memory; a 1-D block.
            ///
            /// # Parameters
            /// `a`, `b`: inputs; `c`: output; `n`: elements; `tile_bytes`: bytes per
            /// operand per tile; `stages`: tiles in flight per block.
            ///
            /// # Thread mapping
            /// Block `b` owns tiles `b, b + gridDim, …`; thread `t` adds packs `t, t +
            /// blockDim, …` of each; the remainder is walked grid-stride in lane groups.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $name(
                a: *const <$e as Elem>::T,
                b: *const <$e as Elem>::T,
                c: *mut <$e as Elem>::T,
                n: u64,
                tile_bytes: u32,
                stages: u32,
            ) {
                unsafe { bulk_map::<$e, Add, $store>(a, b, c, n, tile_bytes, stages) }
            }
        )*};
    }

    /// Declares the `.L2::256B` load-hint kernels (they need sm_80, so they live
    /// in this module).
    macro_rules! l2_kernels {
        ($($name:ident: $e:ident;)*) => {$(
            /// 128-bit pack add whose loads are `ld.global.nc.L2::256B.v4`: what
            /// changed from `add_*_nc` is the hint to fetch 256-byte L2 sectors.
            ///
            /// # Safety
            /// 16-byte aligned operands of `n` elements, not written by anyone
            /// during the launch; `c` overlaps neither input.
            ///
            /// # Parameters
            /// `a`, `b`: inputs; `c`: output; `n`: elements.
            ///
            /// # Thread mapping
            /// One pack per thread, grid-stride (as V2/V6).
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $name(a: *const <$e as Elem>::T, b: *const <$e as Elem>::T, c: *mut <$e as Elem>::T, n: u64) {
                unsafe { pack::<$e, Add, NC_L2>(Add, a, b, c, n) }
            }
        )*};
    }

    l2_kernels! {
        add_f32x4_l2: F32;
        add_f16x8_l2: F16;
        add_bf16x8_l2: Bf16;
    }

    bulk_kernels! {
        add_f32_bulk: F32, false, "f32, 128-bit stores from registers";
        add_f16_bulk: F16, false, "f16 (`add.rn.f16x2`), 128-bit stores from registers";
        add_bf16_bulk: Bf16, false, "bf16 (added in f32, rounded once), 128-bit stores from registers";
        add_f32_bulk_st: F32, true, "f32, written back by bulk copies too";
        add_f16_bulk_st: F16, true, "f16, written back by bulk copies too";
        add_bf16_bulk_st: Bf16, true, "bf16, written back by bulk copies too";
    }
}
