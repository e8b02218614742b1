//! A ring of shared-memory slots filled by the bulk-copy engine, for
//! persistent blocks that walk many items (rows, row segments, tiles): while
//! the block works on item `j`, the copies of items `j + 1 … j + stages - 1`
//! are already in flight, so HBM stays busy through the block's reductions
//! and stores. One `mbarrier` per slot with a transaction count: the leader
//! arrives once with the bytes it is about to copy (`Ring::expect`), issues
//! the copies (`Ring::load`), and the phase completes when they have landed.
//!
//! # Layout and phases
//! Dynamic shared memory is `[barriers: RING_BARRIER_BYTES][slot 0][slot 1]…`,
//! [`ring_shared_bytes`] in all. Item `j` of the walk lives in slot `j %
//! stages`, and its fill is phase `j / stages` of that slot's barrier, so the
//! parity a wait needs follows from `j` alone (no state to carry). A slot is
//! refilled only after every thread has read it and passed a block barrier
//! (`Ring::walk` does this), which is also what makes the refill's writes
//! (by the async proxy) safe after the threads' ordinary reads.
//!
//! The host sizes the launch with [`ring_shared_bytes`]; the kernel recovers
//! the stage count from the launch's dynamic shared memory ([`ring_stages`]),
//! so the two cannot disagree. Only the sm_90 build has `Ring`.

/// Bytes in front of the slots for the barriers (8 bytes each), so that slots
/// start 128-byte aligned.
pub const RING_BARRIER_BYTES: u32 = 128;

/// Most slots a ring may have (one barrier each in [`RING_BARRIER_BYTES`]).
pub const RING_MAX_STAGES: u32 = RING_BARRIER_BYTES / 8;

/// Dynamic shared memory of a ring of `stages` slots of `slot_bytes`.
pub const fn ring_shared_bytes(slot_bytes: u32, stages: u32) -> u64 {
    RING_BARRIER_BYTES as u64 + stages as u64 * slot_bytes as u64
}

/// The stages a launch with `dynamic_bytes` of dynamic shared memory gives a
/// ring of `slot_bytes` slots (0: not even one slot fits), at most
/// [`RING_MAX_STAGES`].
pub const fn ring_stages(dynamic_bytes: u32, slot_bytes: u32) -> u32 {
    if slot_bytes == 0 || dynamic_bytes < RING_BARRIER_BYTES {
        return 0;
    }
    let s = (dynamic_bytes - RING_BARRIER_BYTES) / slot_bytes;
    if s > RING_MAX_STAGES {
        RING_MAX_STAGES
    } else {
        s
    }
}

/// A slot's size for `bytes` of payload: rounded up to 128 bytes (at least
/// 128), so that every slot of the ring starts 128-byte aligned and a ring
/// always has a size.
pub const fn ring_slot_bytes(bytes: u64) -> u64 {
    let b = bytes.div_ceil(128) * 128;
    if b == 0 {
        128
    } else {
        b
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use device::Ring;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod device {
    use super::{ring_stages, RING_BARRIER_BYTES};
    use crate::hopper::shared_addr;
    use crate::hopper::{bulk_load, fence_barrier_init, mbar_arrive_expect_tx, mbar_init, mbar_inval, mbar_wait};
    use crate::{dynamic_shared, is_block_leader, sync_threads};

    /// The ring over this block's dynamic shared memory (see the module docs).
    #[derive(Clone, Copy)]
    pub struct Ring {
        base: *mut u8,
        bars: u32,
        slot_bytes: u32,
        stages: u32,
    }

    /// Bytes of dynamic shared memory this launch gave the block
    /// (`%dynamic_smem_size`).
    #[inline(always)]
    pub fn dynamic_shared_bytes() -> u32 {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {0}, %dynamic_smem_size;", out(reg32) r, options(pure, nomem, nostack)) };
        r
    }

    impl Ring {
        /// The ring of `slot_bytes` slots (a multiple of 128, see
        /// [`super::ring_slot_bytes`]) over this block's dynamic shared
        /// memory, as many stages as the launch gave room for (up to
        /// [`super::RING_MAX_STAGES`]; 0 when not even one fits: the caller
        /// checks [`Ring::stages`]). Every thread of the block makes the same
        /// ring; nothing is touched yet.
        #[inline(always)]
        pub fn new(slot_bytes: u32) -> Ring {
            let base = dynamic_shared::<[u8; 16]>() as *mut u8;
            Ring { base, bars: shared_addr(base), slot_bytes, stages: ring_stages(dynamic_shared_bytes(), slot_bytes) }
        }

        /// Slots in the ring.
        #[inline(always)]
        pub fn stages(&self) -> u32 {
            self.stages
        }

        #[inline(always)]
        fn bar(&self, j: u32) -> u32 {
            self.bars + 8 * (j % self.stages)
        }

        /// The slot item `j` lands in (generic address, 128-byte aligned).
        #[inline(always)]
        pub fn slot(&self, j: u32) -> *mut u8 {
            let off = RING_BARRIER_BYTES as usize + (j % self.stages) as usize * self.slot_bytes as usize;
            self.base.wrapping_add(off)
        }

        /// The leader initialises the barriers; the caller makes a block
        /// barrier follow before any thread uses the ring ([`Ring::walk`]
        /// does both).
        ///
        /// # Safety
        /// [`Ring::stages`] ≥ 1, the barrier area is not in use, and only one
        /// thread of the block calls it.
        #[inline(always)]
        pub unsafe fn init(&self) {
            let mut s = 0;
            while s < self.stages {
                // SAFETY: 8-byte aligned barriers inside the barrier area.
                unsafe { mbar_init(self.bars + 8 * s, 1) };
                s += 1;
            }
            fence_barrier_init();
        }

        /// Arms item `j`'s fill: one arrival and `bytes` to land (the sum of
        /// the [`Ring::load`]s that follow for `j`, at most 2^20 - 1).
        ///
        /// # Safety
        /// The ring is initialised; one thread arms each item once, after
        /// every thread finished with item `j - stages` (a block barrier), and
        /// issues exactly `bytes` of loads for it.
        #[inline(always)]
        pub unsafe fn expect(&self, j: u32, bytes: u32) {
            // SAFETY: per the contract.
            unsafe { mbar_arrive_expect_tx(self.bar(j), bytes) }
        }

        /// Copies `bytes` from global `src` to `offset` bytes into item `j`'s slot.
        ///
        /// # Safety
        /// As [`Ring::expect`] for item `j`; `src` is readable global memory of
        /// `bytes` bytes, 16-byte aligned, `bytes` and `offset` multiples of
        /// 16, `offset + bytes` ≤ the slot.
        #[inline(always)]
        pub unsafe fn load(&self, j: u32, offset: u32, src: *const u8, bytes: u32) {
            let dst = shared_addr(self.slot(j)) + offset;
            // SAFETY: per the contract.
            unsafe { bulk_load(dst, src, bytes, self.bar(j)) }
        }

        /// The 16 bytes at `offset` in item `j`'s slot (`ld.shared.v4`).
        ///
        /// # Safety
        /// Item `j` was waited for by this thread and its slot not yet
        /// released (see [`Ring::walk`]); `offset` is a multiple of 16 inside
        /// the bytes its fill wrote.
        #[inline(always)]
        pub unsafe fn read128(&self, j: u32, offset: u32) -> crate::pack::Pack16 {
            let a = shared_addr(self.slot(j)) + offset;
            let (x, y, z, w): (u32, u32, u32, u32);
            // SAFETY: per the contract: landed bytes of this block's slot.
            // Not `nomem`: it stays after the wait that made them visible.
            unsafe {
                core::arch::asm!(
                    "ld.shared.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                    out(reg32) x, out(reg32) y, out(reg32) z, out(reg32) w, in(reg32) a,
                    options(readonly, nostack, preserves_flags),
                )
            };
            crate::pack::Pack16([x, y, z, w])
        }

        /// Waits until item `j`'s fill has landed (acquire: its bytes are
        /// visible to this thread after it).
        ///
        /// # Safety
        /// The ring is initialised and item `j` was armed (or will be, by the
        /// walk's order); item `j - 2·stages`'s phase was waited for by this
        /// thread (phases are told apart by parity only).
        #[inline(always)]
        pub unsafe fn wait(&self, j: u32) {
            // SAFETY: per the contract.
            unsafe { mbar_wait(self.bar(j), (j / self.stages) & 1) }
        }

        /// The walk of a persistent block over its `count` items: the leader
        /// initialises the ring and `fill(j)`s the first `stages` items; then
        /// for each item every thread waits for it, `read(j)`s what it
        /// needs of the slot ([`Ring::read128`], into registers), the block syncs, the leader
        /// `fill(j + stages)`s the freed slot, and every thread `finish(j,
        /// read's value)`es (reductions, stores) while the next fills fly.
        /// At the end the leader retires the barriers. Every thread of the
        /// block calls it with the same `count`.
        ///
        /// # Safety
        /// [`Ring::stages`] ≥ 1 (the launch gave room for a slot); `fill(j)`
        /// arms item `j` (`Ring::expect`) and issues exactly that many bytes
        /// of [`Ring::load`] for it, under their contracts; `read` only reads
        /// item `j`'s slot (its landed bytes), and neither `finish` nor
        /// anything else touches the ring's memory.
        #[inline(always)]
        pub unsafe fn walk<R>(
            &self,
            count: u32,
            fill: impl Fn(u32),
            mut read: impl FnMut(u32) -> R,
            mut finish: impl FnMut(u32, R),
        ) {
            let leader = is_block_leader();
            if leader {
                // SAFETY: stages ≥ 1 (contract); this thread alone.
                unsafe { self.init() };
                let mut j = 0;
                while j < count && j < self.stages {
                    fill(j);
                    j += 1;
                }
            }
            sync_threads();
            let mut j = 0;
            while j < count {
                // SAFETY: initialised before the barrier above; item j was
                // armed (first fills, or the refill after item j - stages'
                // barrier, which this thread waited for: its phases come in order).
                unsafe { self.wait(j) };
                let r = read(j);
                // Every thread has read slot j % stages (and finished item j -
                // 1 entirely) before the slot is refilled.
                sync_threads();
                if leader && j + self.stages < count {
                    fill(j + self.stages);
                }
                finish(j, r);
                j += 1;
            }
            if leader {
                let mut s = 0;
                while s < self.stages {
                    // SAFETY: every filled item was waited for by every thread
                    // before the block barrier after its read, and the leader
                    // passed the last of those: no wait is pending, no copy in
                    // flight, and nothing arrives any more.
                    unsafe { mbar_inval(self.bars + 8 * s) };
                    s += 1;
                }
            }
        }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use device::dynamic_shared_bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_follow_the_launch() {
        assert_eq!(ring_stages(ring_shared_bytes(8192, 3) as u32, 8192), 3);
        assert_eq!(ring_stages(ring_shared_bytes(8192, 3) as u32 + 8191, 8192), 3);
        assert_eq!(ring_stages(100, 8192), 0);
        assert_eq!(ring_stages(1 << 20, 128), RING_MAX_STAGES);
        assert_eq!(ring_stages(1 << 20, 0), 0);
        assert_eq!(ring_slot_bytes(0), 128);
        assert_eq!(ring_slot_bytes(1), 128);
        assert_eq!(ring_slot_bytes(8192), 8192);
        assert_eq!(ring_slot_bytes(8200), 8320);
    }
}
