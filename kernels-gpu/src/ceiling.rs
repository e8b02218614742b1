//! Where the ceiling is: a pure read, a pure write and a copy, each with one
//! 128-bit access per 16 bytes and the same grid-stride walk as the add kernels.
//!
//! An add reads two streams and writes one. These kernels measure each side
//! alone on the same machine, so the report can say how close add comes to what
//! the memory system gives a kernel that only reads, only writes, or copies.
//! They work on `u32` words: the arithmetic is irrelevant, only the bytes count.

/// Entry points: `ceiling_read(a, b, n, sink, key)` sums two arrays and keeps the
/// result only if it equals `key` (so the loads cannot be optimised away, and in
/// practice nothing is written); `ceiling_fill(c, n, value)` writes `value`
/// everywhere; `ceiling_copy(a, c, n)` copies.
pub const CEILING: [&str; 3] = ["ceiling_read", "ceiling_fill", "ceiling_copy"];

/// Words per lane group (one 128-bit access).
pub const CEILING_LANES: u32 = 4;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use gpukern_device::for_each_group;
    use gpukern_device::pack::{load128, store128, Pack16};

    /// Sums `a[i] + b[i]` over all `i < n` (wrapping) and writes the sum to `sink`
    /// only when it equals `key`.
    ///
    /// # Safety
    /// `a`, `b` hold `n` words, 16-byte aligned; `sink` is one writable word.
    ///
    /// # Parameters
    /// `a`, `b`: inputs; `n`: words; `sink`: where an improbable result goes;
    /// `key`: the value that would be written.
    ///
    /// # Thread mapping
    /// Grid-stride over groups of 4 words (one 128-bit load per operand).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn ceiling_read(a: *const u32, b: *const u32, n: u64, sink: *mut u32, key: u32) {
        let (pa, pb) = (a as *const Pack16, b as *const Pack16);
        // Both closures add to it; a Cell lets them share it.
        let acc = core::cell::Cell::new(0u32);
        for_each_group::<4>(
            n,
            |g| {
                // SAFETY: group g lies below n.
                let (x, y) = unsafe { (*pa.add(g as usize), *pb.add(g as usize)) };
                for k in 0..4 {
                    acc.set(acc.get().wrapping_add(x.0[k]).wrapping_add(y.0[k]));
                }
            },
            |first| {
                for i in first..n {
                    // SAFETY: i < n.
                    acc.set(
                        acc.get()
                            .wrapping_add(unsafe { *a.add(i as usize) })
                            .wrapping_add(unsafe { *b.add(i as usize) }),
                    );
                }
            },
        );
        if acc.get() == key {
            // SAFETY: sink is one writable word.
            unsafe { *sink = key };
        }
    }

    /// Writes `value` to all `n` words of `c`.
    ///
    /// # Safety
    /// `c` holds `n` writable words, 16-byte aligned.
    ///
    /// # Parameters
    /// `c`: output; `n`: words; `value`: what to write.
    ///
    /// # Thread mapping
    /// Grid-stride over groups of 4 words (one 128-bit store).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn ceiling_fill(c: *mut u32, n: u64, value: u32) {
        let pc = c as *mut Pack16;
        for_each_group::<4>(
            n,
            // SAFETY: group g lies below n.
            |g| unsafe { *pc.add(g as usize) = Pack16([value; 4]) },
            |first| {
                for i in first..n {
                    // SAFETY: i < n.
                    unsafe { *c.add(i as usize) = value };
                }
            },
        );
    }

    /// Copies `n` words from `a` to `c`.
    ///
    /// # Safety
    /// `a` and `c` hold `n` words, 16-byte aligned, not overlapping.
    ///
    /// # Parameters
    /// `a`: source; `c`: destination; `n`: words.
    ///
    /// # Thread mapping
    /// Grid-stride over groups of 4 words (one 128-bit load and store).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn ceiling_copy(a: *const u32, c: *mut u32, n: u64) {
        let (pa, pc) = (a as *const Pack16, c as *mut Pack16);
        for_each_group::<4>(
            n,
            // SAFETY: group g lies below n. Spelled out: a plain move of the pack
            // compiles to two 64-bit accesses.
            |g| unsafe { store128(pc.add(g as usize), load128(pa.add(g as usize))) },
            |first| {
                for i in first..n {
                    // SAFETY: i < n.
                    unsafe { *c.add(i as usize) = *a.add(i as usize) };
                }
            },
        );
    }
}
