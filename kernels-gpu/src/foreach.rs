//! Many adds in one launch (a "foreach" add, in the sense of PyTorch's
//! `multi_tensor_apply`): a list of operand triples of different lengths, one
//! dtype per launch, described by a table in device memory.
//!
//! Each triple is cut into chunks of [`MANY_CHUNK`] elements; chunks are numbered
//! across the list (triple `t` owns chunks `first_chunk[t] ..`). Block `b` takes
//! chunks `b, b + gridDim, …`, finds the owning triple by binary search over
//! `first_chunk`, and its threads walk the chunk in 128-bit lane groups when all
//! three operands of the triple are 16-byte aligned, element by element
//! otherwise. Nothing depends on the other triples, so lengths and alignments
//! may differ freely. The visit markers `mark_visits_many_*` walk the same way.

/// One operand triple as the kernel reads it (40 bytes, `#[repr(C)]`): device
/// addresses of `a`, `b`, `c`, the element count, and the number of the triple's
/// first chunk in the whole list. Triples with `n = 0` must be left out.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManyDesc {
    /// Address of the first input.
    pub a: u64,
    /// Address of the second input.
    pub b: u64,
    /// Address of the output.
    pub c: u64,
    /// Elements in each of the three.
    pub n: u64,
    /// Sum of the chunk counts of the triples before this one.
    pub first_chunk: u64,
}

/// Elements one block handles per step. A multiple of 8, so that every chunk of
/// an aligned triple starts 16-byte aligned for every dtype.
pub const MANY_CHUNK: u64 = 4096;

/// Threads per block of the foreach kernels.
pub const MANY_BLOCK: u32 = 256;

/// Entry points `(meta, tensors: u32, chunks: u64)`, by dtype (f32, f16, bf16).
pub const ADD_MANY: [&str; 3] = ["add_many_f32", "add_many_f16", "add_many_bf16"];

/// Visit markers of the foreach walk, as (entry point, lanes): `(meta, tensors,
/// chunks)` with each triple's `c` pointing at i32 marks; each visit adds 1.
pub const MARK_MANY: [(&str, u32); 2] = [("mark_visits_many_4", 4), ("mark_visits_many_8", 8)];

/// Chunks of a triple of `n` elements.
pub const fn chunks(n: u64) -> u64 {
    n.div_ceil(MANY_CHUNK)
}

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use super::{ManyDesc, MANY_CHUNK};
    use crate::pack::{Bf16Add, F16Add, F32Add, Pack16, PackAdd};
    use core::arch::nvptx;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// The foreach walk. `group(d, g)` handles lane group `g` (elements `g·LANES ..
    /// g·LANES + LANES`) of triple `d`, all three operands 16-byte aligned;
    /// `one(d, i)` handles element `i`.
    ///
    /// # Safety
    /// `meta` holds `tensors >= 1` descriptors, `first_chunk` increasing from 0,
    /// each `n >= 1`, and `chunks` is the total chunk count.
    #[inline(always)]
    unsafe fn walk_many<const LANES: u64>(
        meta: *const ManyDesc,
        tensors: u32,
        chunks: u64,
        mut group: impl FnMut(&ManyDesc, u64),
        mut one: impl FnMut(&ManyDesc, u64),
    ) {
        // SAFETY: special registers.
        let (t, step, mut j, grid) = unsafe {
            (
                nvptx::_thread_idx_x() as u64,
                nvptx::_block_dim_x() as u64,
                nvptx::_block_idx_x() as u64,
                nvptx::_grid_dim_x() as u64,
            )
        };
        while j < chunks {
            // The last triple whose first chunk is at or before j owns chunk j.
            let (mut lo, mut hi) = (0u32, tensors);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                // SAFETY: mid < tensors.
                if unsafe { (*meta.add(mid as usize)).first_chunk } <= j {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            // SAFETY: lo < tensors.
            let d = unsafe { *meta.add(lo as usize) };
            let start = (j - d.first_chunk) * MANY_CHUNK;
            let end = if d.n < start + MANY_CHUNK { d.n } else { start + MANY_CHUNK };
            if (d.a | d.b | d.c) % 16 == 0 {
                let groups = (end - start).div_ceil(LANES);
                let mut g = t;
                while g < groups {
                    let first = start + g * LANES;
                    if first + LANES <= end {
                        group(&d, first / LANES);
                    } else {
                        for i in first..end {
                            one(&d, i);
                        }
                    }
                    g += step;
                }
            } else {
                let mut i = start + t;
                while i < end {
                    one(&d, i);
                    i += step;
                }
            }
            j += grid;
        }
    }

    /// `c = a + b` for every triple of the table.
    #[inline(always)]
    unsafe fn add_many<O: PackAdd>(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        // SAFETY (both closures): the walk passes groups and indices below the
        // triple's n; the table's contract makes the addresses valid for n
        // elements, and groups are only passed for 16-byte aligned triples.
        unsafe {
            match O::LANES {
                4 => walk_many::<4>(meta, tensors, chunks, |d, g| pack::<O>(d, g), |d, i| one::<O>(d, i)),
                _ => walk_many::<8>(meta, tensors, chunks, |d, g| pack::<O>(d, g), |d, i| one::<O>(d, i)),
            }
        }
    }

    #[inline(always)]
    fn pack<O: PackAdd>(d: &ManyDesc, g: u64) {
        let (a, b, c) = (d.a as *const Pack16, d.b as *const Pack16, d.c as *mut Pack16);
        // SAFETY: see add_many.
        unsafe { *c.add(g as usize) = O::pack(*a.add(g as usize), *b.add(g as usize)) };
    }

    #[inline(always)]
    fn one<O: PackAdd>(d: &ManyDesc, i: u64) {
        let (a, b, c) = (d.a as *const O::T, d.b as *const O::T, d.c as *mut O::T);
        // SAFETY: see add_many.
        unsafe { *c.add(i as usize) = O::one(*a.add(i as usize), *b.add(i as usize)) };
    }

    /// Adds every triple of `meta` (f32).
    ///
    /// # Safety
    /// `meta` holds `tensors >= 1` descriptors as [`ManyDesc`] says, in device
    /// memory; each triple's operands hold `n` f32, outputs overlap nothing.
    ///
    /// # Parameters
    /// `meta`: the table; `tensors`: its length; `chunks`: the total chunk count.
    ///
    /// # Thread mapping
    /// Block `b` takes chunks `b, b + gridDim, …`; thread `t` takes lane groups
    /// `t, t + blockDim, …` of the chunk.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_f32(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        unsafe { add_many::<F32Add>(meta, tensors, chunks) }
    }

    /// As `add_many_f32`, for f16.
    ///
    /// # Safety
    /// As `add_many_f32`, with f16 operands.
    ///
    /// # Parameters
    /// As `add_many_f32`.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_f16(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        unsafe { add_many::<F16Add>(meta, tensors, chunks) }
    }

    /// As `add_many_f32`, for bf16 (as `u16` bits).
    ///
    /// # Safety
    /// As `add_many_f32`, with bf16 operands.
    ///
    /// # Parameters
    /// As `add_many_f32`.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_bf16(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        unsafe { add_many::<Bf16Add>(meta, tensors, chunks) }
    }

    #[inline(always)]
    unsafe fn mark_many<const LANES: u64>(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        let visit = |d: &ManyDesc, i: u64| {
            // SAFETY: c holds n i32 marks and i < n.
            unsafe { AtomicU32::from_ptr((d.c as *mut u32).add(i as usize)) }.fetch_add(1, Ordering::Relaxed);
        };
        // SAFETY: forwarded contract.
        unsafe {
            walk_many::<LANES>(
                meta,
                tensors,
                chunks,
                |d, g| {
                    for k in 0..LANES {
                        visit(d, g * LANES + k);
                    }
                },
                visit,
            )
        }
    }

    /// The foreach walk with 4-element groups (f32), adding 1 to the i32 mark of
    /// every element visited; each triple's `c` points at its marks.
    ///
    /// # Safety
    /// As `add_many_f32`, with `c` holding `n` i32 marks nothing else touches.
    ///
    /// # Parameters
    /// As `add_many_f32`.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_many_4(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        unsafe { mark_many::<4>(meta, tensors, chunks) }
    }

    /// As `mark_visits_many_4`, with 8-element groups (f16, bf16).
    ///
    /// # Safety
    /// As `mark_visits_many_4`.
    ///
    /// # Parameters
    /// As `add_many_f32`.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_many_8(meta: *const ManyDesc, tensors: u32, chunks: u64) {
        unsafe { mark_many::<8>(meta, tensors, chunks) }
    }
}
