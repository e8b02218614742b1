//! Device-side verification and the launch-floor probe.
//!
//! `count_mismatch_*` compare two arrays bit for bit, treating any two NaNs as
//! equal, and add the number of differing elements to a 64-bit counter. They let
//! the host check arrays too large to copy back cheaply (n > 2^31).

/// Entry-point names of the mismatch counters, by dtype (f32, f16, bf16).
pub const COUNT_MISMATCH: [&str; 3] = ["count_mismatch_f32", "count_mismatch_f16", "count_mismatch_bf16"];

/// Entry point of the empty kernel used to measure launch overhead.
pub const EMPTY: &str = "empty_kernel";

/// Entry point of the spin kernel: keeps the GPU busy for a given time, so that
/// timing events queued behind it measure kernels, not the host's launch path.
pub const SPIN: &str = "spin_kernel";

/// Threads per block for the mismatch counters.
pub const COUNT_BLOCK: u32 = 256;

/// Visit markers, as (entry point, lanes per group): the add kernels' grid-stride
/// walk over lane groups, with each visit of element `i` adding 1 to `marks[i]`.
/// After one launch a correct walk leaves every mark at exactly 1, which is how
/// the tests prove that a grid capped at its limit still covers every index once.
pub const MARK_VISITS: [(&str, u32); 4] =
    [("mark_visits_1", 1), ("mark_visits_2", 2), ("mark_visits_4", 4), ("mark_visits_8", 8)];

/// Visit markers of the bulk kernels' tiled walk, as (entry point, lanes):
/// `(marks, n, tile)` with `tile` elements per tile (`tile_bytes / element size`
/// of the add kernel it stands for) and `lanes` elements per 16-byte pack.
pub const MARK_TILES: [(&str, u32); 2] = [("mark_visits_tiles_4", 4), ("mark_visits_tiles_8", 8)];

/// Visit markers of the unrolled kernels' walk (`add_*_u2`, `add_*_u4`), as
/// (entry point, lanes per pack, packs per thread per tile): `(marks, n)`,
/// launched with `launch::unrolled_grid`.
pub const MARK_UNROLLED: [(&str, u32, u32); 4] = [
    ("mark_visits_unrolled_4x2", 4, 2),
    ("mark_visits_unrolled_4x4", 4, 4),
    ("mark_visits_unrolled_8x2", 8, 2),
    ("mark_visits_unrolled_8x4", 8, 4),
];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    use gpukern_device::bits::{bf16_is_nan, f16_is_nan, f32_is_nan};
    use gpukern_device::{block_tiles, for_each_group, for_each_pack_in_tile, for_each_unrolled};

    #[inline(always)]
    unsafe fn count<T: Copy>(x: *const T, y: *const T, n: u64, counter: *mut u64, same: impl Fn(T, T) -> bool) {
        let mut local = 0u64;
        for_each_group::<1>(
            n,
            |i| unsafe {
                if !same(*x.add(i as usize), *y.add(i as usize)) {
                    local += 1;
                }
            },
            |_| {},
        );
        if local != 0 {
            // SAFETY: the caller guarantees counter is a valid, 8-byte aligned u64.
            unsafe { AtomicU64::from_ptr(counter) }.fetch_add(local, Ordering::Relaxed);
        }
    }

    /// Adds to `*counter` the number of `i < n` where `x[i]` and `y[i]` differ in
    /// bits, unless both are NaN.
    ///
    /// # Safety
    /// `x`, `y` point to `n` valid f32 bit patterns; `counter` to one aligned `u64`.
    ///
    /// # Parameters
    /// `x`, `y`: arrays to compare. `n`: element count. `counter`: accumulator.
    ///
    /// # Thread mapping
    /// Grid-stride, one element per step; one atomic per thread that saw a mismatch.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn count_mismatch_f32(x: *const u32, y: *const u32, n: u64, counter: *mut u64) {
        unsafe { count(x, y, n, counter, |p, q| p == q || (f32_is_nan(p) && f32_is_nan(q))) }
    }

    /// As `count_mismatch_f32`, for f16 bit patterns.
    ///
    /// # Safety
    /// As `count_mismatch_f32` with 16-bit elements.
    ///
    /// # Parameters
    /// As `count_mismatch_f32`.
    ///
    /// # Thread mapping
    /// As `count_mismatch_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn count_mismatch_f16(x: *const u16, y: *const u16, n: u64, counter: *mut u64) {
        unsafe { count(x, y, n, counter, |p, q| p == q || (f16_is_nan(p) && f16_is_nan(q))) }
    }

    /// As `count_mismatch_f32`, for bf16 bit patterns.
    ///
    /// # Safety
    /// As `count_mismatch_f32` with 16-bit elements.
    ///
    /// # Parameters
    /// As `count_mismatch_f32`.
    ///
    /// # Thread mapping
    /// As `count_mismatch_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn count_mismatch_bf16(x: *const u16, y: *const u16, n: u64, counter: *mut u64) {
        unsafe { count(x, y, n, counter, |p, q| p == q || (bf16_is_nan(p) && bf16_is_nan(q))) }
    }

    /// The walk of `for_each_group::<LANES>` over `n` elements, adding 1 to the
    /// mark of every element it visits. Atomic, so that two visits of one element
    /// always show as 2, even when they race.
    #[inline(always)]
    unsafe fn mark<const LANES: u64>(marks: *mut u32, n: u64) {
        // SAFETY: the caller guarantees `marks` holds n aligned u32; i < n below.
        let visit = |i: u64| unsafe { AtomicU32::from_ptr(marks.add(i as usize)) }.fetch_add(1, Ordering::Relaxed);
        for_each_group::<LANES>(
            n,
            |g| {
                for k in 0..LANES {
                    visit(g * LANES + k);
                }
            },
            |first| {
                for i in first..n {
                    visit(i);
                }
            },
        );
    }

    /// Adds 1 to `marks[i]` for every element `i < n` the one-lane walk visits.
    ///
    /// # Safety
    /// `marks` points to `n` 4-byte aligned u32 that nothing else touches during
    /// the launch.
    ///
    /// # Parameters
    /// `marks`: per-element visit counters. `n`: element count.
    ///
    /// # Thread mapping
    /// As the scalar add kernels: grid-stride over elements, one per step.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_1(marks: *mut u32, n: u64) {
        unsafe { mark::<1>(marks, n) }
    }

    /// As `mark_visits_1`, walking groups of 2 (the f16x2 and bf16x2 kernels).
    ///
    /// # Safety
    /// As `mark_visits_1`.
    ///
    /// # Parameters
    /// As `mark_visits_1`.
    ///
    /// # Thread mapping
    /// Grid-stride over groups of 2 elements; the partial last group element by element.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_2(marks: *mut u32, n: u64) {
        unsafe { mark::<2>(marks, n) }
    }

    /// As `mark_visits_1`, walking groups of 4 (the f32x4 kernels).
    ///
    /// # Safety
    /// As `mark_visits_1`.
    ///
    /// # Parameters
    /// As `mark_visits_1`.
    ///
    /// # Thread mapping
    /// Grid-stride over groups of 4 elements; the partial last group element by element.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_4(marks: *mut u32, n: u64) {
        unsafe { mark::<4>(marks, n) }
    }

    /// As `mark_visits_1`, walking groups of 8 (the f16x8 and bf16x8 kernels).
    ///
    /// # Safety
    /// As `mark_visits_1`.
    ///
    /// # Parameters
    /// As `mark_visits_1`.
    ///
    /// # Thread mapping
    /// Grid-stride over groups of 8 elements; the partial last group element by element.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_8(marks: *mut u32, n: u64) {
        unsafe { mark::<8>(marks, n) }
    }

    /// The unrolled kernels' walk (`for_each_unrolled::<U, LANES>`), adding 1 to
    /// the mark of every element it visits.
    #[inline(always)]
    unsafe fn mark_unrolled<const U: usize, const LANES: u64>(marks: *mut u32, n: u64) {
        // SAFETY: the caller guarantees `marks` holds n aligned u32; i < n below.
        let visit = |i: u64| unsafe { AtomicU32::from_ptr(marks.add(i as usize)) }.fetch_add(1, Ordering::Relaxed);
        let pack = |p: u64| {
            for k in 0..LANES {
                visit(p * LANES + k);
            }
        };
        for_each_unrolled::<U, LANES>(
            n,
            |ps| {
                for p in ps {
                    pack(p);
                }
            },
            pack,
            |first| {
                for i in first..n {
                    visit(i);
                }
            },
        );
    }

    /// Declares the unrolled walk's markers.
    macro_rules! mark_unrolled {
        ($($name:ident: $u:literal x $lanes:literal;)*) => {$(
            #[doc = concat!("Adds 1 to `marks[i]` for every `i < n` the unrolled walk visits with ", stringify!($lanes), "-element packs, ", stringify!($u), " per thread per tile.")]
            ///
            /// # Safety
            /// As `mark_visits_1`.
            ///
            /// # Parameters
            /// As `mark_visits_1`.
            ///
            /// # Thread mapping
            #[doc = concat!("As the unrolled add kernels with ", stringify!($u), " packs per thread (`add_*_u", stringify!($u), "`).")]
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $name(marks: *mut u32, n: u64) {
                unsafe { mark_unrolled::<$u, $lanes>(marks, n) }
            }
        )*};
    }

    mark_unrolled! {
        mark_visits_unrolled_4x2: 2 x 4;
        mark_visits_unrolled_4x4: 4 x 4;
        mark_visits_unrolled_8x2: 2 x 8;
        mark_visits_unrolled_8x4: 4 x 8;
    }

    /// The bulk kernels' walk (`crate::bulk`): whole tiles by block, packs of
    /// `LANES` by thread inside a tile, then the remainder in lane groups.
    #[inline(always)]
    unsafe fn mark_tiles<const LANES: u64>(marks: *mut u32, n: u64, tile: u64) {
        // SAFETY: the caller guarantees `marks` holds n aligned u32; i < n below.
        let visit = |i: u64| unsafe { AtomicU32::from_ptr(marks.add(i as usize)) }.fetch_add(1, Ordering::Relaxed);
        let tiles = n / tile;
        let (first, stride, count) = block_tiles(tiles);
        for j in 0..count {
            let start = (first + j * stride) * tile;
            for_each_pack_in_tile(tile / LANES, |p| {
                for k in 0..LANES {
                    visit(start + p * LANES + k);
                }
            });
        }
        let base = tiles * tile;
        for_each_group::<LANES>(
            n - base,
            |g| {
                for k in 0..LANES {
                    visit(base + g * LANES + k);
                }
            },
            |first| {
                for i in first..n - base {
                    visit(base + i);
                }
            },
        );
    }

    /// Adds 1 to `marks[i]` for every `i < n` the tiled walk of the f32 bulk
    /// kernel visits with `tile` elements per tile.
    ///
    /// # Safety
    /// As `mark_visits_1`; `tile` is a non-zero multiple of 4.
    ///
    /// # Parameters
    /// `marks`, `n`: as `mark_visits_1`; `tile`: elements per tile.
    ///
    /// # Thread mapping
    /// As `add_f32_bulk`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_tiles_4(marks: *mut u32, n: u64, tile: u64) {
        unsafe { mark_tiles::<4>(marks, n, tile) }
    }

    /// As `mark_visits_tiles_4`, with 8-element packs (the f16 and bf16 bulk kernels).
    ///
    /// # Safety
    /// As `mark_visits_1`; `tile` is a non-zero multiple of 8.
    ///
    /// # Parameters
    /// As `mark_visits_tiles_4`.
    ///
    /// # Thread mapping
    /// As `add_f16_bulk`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_tiles_8(marks: *mut u32, n: u64, tile: u64) {
        unsafe { mark_tiles::<8>(marks, n, tile) }
    }

    /// Does nothing: launching it measures the launch floor.
    ///
    /// # Safety
    /// None needed.
    ///
    /// # Parameters
    /// None.
    ///
    /// # Thread mapping
    /// Any.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn empty_kernel() {}

    /// Busy-waits until `ns` nanoseconds have passed on the GPU's global timer.
    ///
    /// # Safety
    /// None needed; touches no memory.
    ///
    /// # Parameters
    /// `ns`: how long to spin.
    ///
    /// # Thread mapping
    /// Launch with one thread.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn spin_kernel(ns: u64) {
        let now = || {
            let t: u64;
            // SAFETY: reads a special register.
            unsafe {
                core::arch::asm!("mov.u64 {0}, %globaltimer;", out(reg64) t, options(nomem, nostack, preserves_flags))
            };
            t
        };
        let start = now();
        while now().wrapping_sub(start) < ns {}
    }
}
