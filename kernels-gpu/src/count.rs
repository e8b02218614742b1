//! Count the elements equal to a key: `*counter += |{ i < n : x[i] == key }|`.
//!
//! The seed's atomics study: one global atomic per match (contention grows with
//! the match rate), a shared-memory block reduction with one atomic per block,
//! and a warp-shuffle reduction with one atomic per block. Figure of merit: GB/s
//! of input read (and the time at 0%, 1% and 100% matches).

/// Threads per block for every count kernel (the reductions assume it).
pub const COUNT_THREADS: u32 = 256;
/// Dynamic shared memory of the block-reduction variant (one u32 per thread).
pub const BLOCK_SHARED_BYTES: u32 = COUNT_THREADS * 4;
/// Dynamic shared memory of the warp variant (one u32 per warp).
pub const WARP_SHARED_BYTES: u32 = COUNT_THREADS / 32 * 4;

/// Kernel names: naive atomics, block reduction, warp-shuffle reduction.
pub const COUNT: [&str; 3] = ["count_eq_atomic", "count_eq_block", "count_eq_warp"];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use super::*;
    use core::sync::atomic::{AtomicU64, Ordering};
    use gpukern_device::warp::shfl_down;
    use gpukern_device::{dynamic_shared, for_each_group, sync_threads, thread_xy};

    #[inline(always)]
    unsafe fn add_global(counter: *mut u64, v: u64) {
        // SAFETY: the caller guarantees an aligned, live u64 counter.
        unsafe { AtomicU64::from_ptr(counter) }.fetch_add(v, Ordering::Relaxed);
    }

    /// Naive: every matching element does its own `atomicAdd` on the one global
    /// counter, so all matches serialise on one address.
    ///
    /// # Safety
    /// `x` holds `n` i32; `counter` is one 8-byte aligned u64.
    ///
    /// # Parameters
    /// `x`: data. `n`: length. `key`: the value counted. `counter`: accumulator.
    ///
    /// # Thread mapping
    /// Grid-stride, one element per step.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn count_eq_atomic(x: *const i32, n: u64, key: i32, counter: *mut u64) {
        // SAFETY: i < n.
        for_each_group::<1>(
            n,
            |i| unsafe {
                if *x.add(i as usize) == key {
                    add_global(counter, 1);
                }
            },
            |_| {},
        );
    }

    /// Per-thread count over the grid-stride range.
    #[inline(always)]
    fn local_count(x: *const i32, n: u64, key: i32) -> u32 {
        let mut c = 0u32;
        // SAFETY: i < n.
        for_each_group::<1>(n, |i| unsafe { c += (*x.add(i as usize) == key) as u32 }, |_| {});
        c
    }

    /// Block reduction (the seed's): what changed from naive is that each thread
    /// counts privately, the block sums the 256 counts with a tree in shared
    /// memory, and only thread 0 touches the global counter: one atomic per block.
    ///
    /// # Safety
    /// As naive; launch with `COUNT_THREADS` threads and `BLOCK_SHARED_BYTES` of
    /// dynamic shared memory.
    ///
    /// # Parameters
    /// As naive.
    ///
    /// # Thread mapping
    /// Grid-stride counting, then a shared-memory tree over the block.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn count_eq_block(x: *const i32, n: u64, key: i32, counter: *mut u64) {
        let (t, _) = thread_xy();
        let s = dynamic_shared::<u32>();
        // SAFETY: t < 256 slots.
        unsafe { *s.add(t as usize) = local_count(x, n, key) };
        sync_threads();
        let mut half = COUNT_THREADS / 2;
        while half > 0 {
            if t < half {
                // SAFETY: t + half < 256.
                unsafe { *s.add(t as usize) += *s.add((t + half) as usize) };
            }
            sync_threads();
            half /= 2;
        }
        if t == 0 {
            // SAFETY: slot 0 holds the block's sum; counter per the contract.
            unsafe {
                let total = *s;
                if total != 0 {
                    add_global(counter, total as u64);
                }
            }
        }
    }

    /// Warp shuffle: what changed from the block reduction is that each warp sums
    /// its 32 counts in registers with `shfl.sync.down` (no shared memory, no
    /// barrier), lane 0 of each warp parks the warp's sum in shared memory, and the
    /// first warp sums those: still one atomic per block.
    ///
    /// # Safety
    /// As naive; launch with `COUNT_THREADS` threads and `WARP_SHARED_BYTES` of
    /// dynamic shared memory.
    ///
    /// # Parameters
    /// As naive.
    ///
    /// # Thread mapping
    /// Grid-stride counting; warp w reduces threads 32w..32w+32.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn count_eq_warp(x: *const i32, n: u64, key: i32, counter: *mut u64) {
        let (t, _) = thread_xy();
        let (lane, warp) = (t % 32, t / 32);
        let mut v = local_count(x, n, key);
        for d in [16, 8, 4, 2, 1] {
            v += shfl_down(v, d);
        }
        let s = dynamic_shared::<u32>();
        if lane == 0 {
            // SAFETY: warp < 8 slots.
            unsafe { *s.add(warp as usize) = v };
        }
        sync_threads();
        if warp == 0 {
            // SAFETY: lane < 8 reads a parked sum; other lanes add zero.
            let mut w = if lane < COUNT_THREADS / 32 { unsafe { *s.add(lane as usize) } } else { 0 };
            for d in [16, 8, 4, 2, 1] {
                w += shfl_down(w, d);
            }
            if lane == 0 && w != 0 {
                // SAFETY: per the contract.
                unsafe { add_global(counter, w as u64) };
            }
        }
    }
}
