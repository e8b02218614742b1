//! Many adds in one launch (a "foreach" add, in the sense of PyTorch's
//! `multi_tensor_apply`): a list of operand triples of different lengths, one
//! dtype per launch, described by a table in device memory.
//!
//! Each triple is cut into chunks of [`MANY_CHUNK`] elements; chunks are numbered
//! across the list (triple `t` owns chunks `first_chunk[t] ..`). Block `b` takes
//! chunks `b, b + gridDim, …`, finds the owning triple (one load from a per-chunk
//! `owners` array for a table in device memory; for a short list passed by
//! value, [`ManyInline`], a binary search of its `starts` read through the
//! parameter's address), and its threads walk the chunk in
//! 128-bit lane groups when all three operands of the triple are 16-byte
//! aligned, element by element otherwise. Nothing depends on the other triples, so lengths and alignments
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

/// Entry points `(meta, owners: *const u32, chunks: u64)`, by dtype (f32, f16, bf16).
pub const ADD_MANY: [&str; 3] = ["add_many_f32", "add_many_f16", "add_many_bf16"];

/// Visit markers of the foreach walk, as (entry point, lanes): `(meta, owners,
/// chunks)` with each triple's `c` pointing at i32 marks; each visit adds 1.
pub const MARK_MANY: [(&str, u32); 2] = [("mark_visits_many_4", 4), ("mark_visits_many_8", 8)];

/// Chunks of a triple of `n` elements.
pub const fn chunks(n: u64) -> u64 {
    n.div_ceil(MANY_CHUNK)
}

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

/// The walks, in both builds; the entry points below in the portable module,
/// their PDL twins (`pdl.rs`) in the sm_90 one.
#[cfg(target_arch = "nvptx64")]
#[cfg_attr(target_feature = "sm_90", allow(dead_code, unused_imports))]
pub(crate) mod kernels {
    use super::{ManyDesc, MANY_BLOCK, MANY_CHUNK};
    use core::arch::nvptx;
    use core::sync::atomic::{AtomicU32, Ordering};
    use gpukern_device::lanes::{Add, Bf16, Elem, Op, F16, F32};
    use gpukern_device::patterns::range;
    use gpukern_device::walk::for_each_in_range;

    /// Lane groups per thread in a whole chunk at the launch's block size:
    /// 4 for f32, 2 for f16 and bf16.
    pub(super) const fn per_thread(lanes: u64) -> usize {
        (MANY_CHUNK / (lanes * MANY_BLOCK as u64)) as usize
    }

    /// The foreach walk over `chunks` chunks; `owner(j)` gives the triple that
    /// owns chunk `j`, and `chunk(d, start, end, t, step)` does elements
    /// `start..end` of triple `d` with thread `t` of the block's `step`.
    #[inline(always)]
    pub(super) fn walk(
        chunks: u64,
        owner: impl Fn(u64) -> ManyDesc,
        mut chunk: impl FnMut(&ManyDesc, u64, u64, u64, u64),
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
            let d = owner(j);
            let start = (j - d.first_chunk) * MANY_CHUNK;
            let end = if d.n < start + MANY_CHUNK { d.n } else { start + MANY_CHUNK };
            chunk(&d, start, end, t, step);
            j += grid;
        }
    }

    /// The owner of chunk `j` in a table in device memory: `owners[j]` names it.
    ///
    /// # Safety
    /// `owners` holds `chunks` indices below the table's length; `meta` the table.
    #[inline(always)]
    unsafe fn table_owner(meta: *const ManyDesc, owners: *const u32, j: u64) -> ManyDesc {
        // SAFETY: per the contract.
        unsafe { *meta.add(*owners.add(j as usize) as usize) }
    }

    /// The add walk for any dtype, given the owner lookup: each chunk is the
    /// `range` pattern (loads first in a whole chunk of an aligned triple).
    ///
    /// # Safety
    /// `owner` returns valid triples (see `ManyDesc`) for every chunk below `chunks`.
    #[inline(always)]
    pub(super) unsafe fn walk_chunks<E: Elem, O: Op<E> + Default>(chunks: u64, owner: impl Fn(u64) -> ManyDesc) {
        let chunk = |d: &ManyDesc, start: u64, end: u64, t: u64, step: u64| {
            let (a, b, c) = (d.a as *const E::T, d.b as *const E::T, d.c as *mut E::T);
            // SAFETY: the triple holds n >= end elements per operand; chunks
            // start at multiples of MANY_CHUNK, a multiple of every lane count.
            unsafe {
                match per_thread(E::LANES) {
                    4 => range::<E, O, 4>(O::default(), a, b, c, start, end, t, step),
                    _ => range::<E, O, 2>(O::default(), a, b, c, start, end, t, step),
                }
            }
        };
        walk(chunks, owner, chunk);
    }

    /// `c = a + b` for every triple of the table.
    #[inline(always)]
    pub(super) unsafe fn add_many<E: Elem, O: Op<E> + Default>(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        // SAFETY: the table's contract makes every owner valid.
        unsafe { walk_chunks::<E, O>(chunks, |j| table_owner(meta, owners, j)) }
    }

    /// Adds every triple of `meta` (f32).
    ///
    /// # Safety
    /// `meta` holds descriptors as [`ManyDesc`] says, in device memory, and
    /// `owners[j]` is the index of the descriptor owning chunk `j < chunks`; each
    /// triple's operands hold `n` f32, outputs overlap nothing.
    ///
    /// # Parameters
    /// `meta`: the table; `owners`: chunk to triple; `chunks`: the total chunk count.
    ///
    /// # Thread mapping
    /// Block `b` takes chunks `b, b + gridDim, …`; thread `t` takes lane groups
    /// `t, t + blockDim, …` of the chunk.
    #[cfg(not(target_feature = "sm_90"))]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_f32(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { add_many::<F32, Add>(meta, owners, chunks) }
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
    #[cfg(not(target_feature = "sm_90"))]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_f16(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { add_many::<F16, Add>(meta, owners, chunks) }
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
    #[cfg(not(target_feature = "sm_90"))]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_bf16(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { add_many::<Bf16, Add>(meta, owners, chunks) }
    }

    #[inline(always)]
    unsafe fn mark_many<const LANES: u64, const U: usize>(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        let visit = |d: &ManyDesc, i: u64| {
            // SAFETY: c holds n i32 marks and i < n.
            unsafe { AtomicU32::from_ptr((d.c as *mut u32).add(i as usize)) }.fetch_add(1, Ordering::Relaxed);
        };
        let chunk = |d: &ManyDesc, start: u64, end: u64, t: u64, step: u64| {
            let aligned = (d.a | d.b | d.c) % 16 == 0;
            for_each_in_range::<LANES, U>(
                start,
                end,
                t,
                step,
                aligned,
                |g, step| {
                    for k in 0..U as u64 {
                        for l in 0..LANES {
                            visit(d, (g + k * step) * LANES + l);
                        }
                    }
                },
                |g| {
                    for l in 0..LANES {
                        visit(d, g * LANES + l);
                    }
                },
                |i| visit(d, i),
            )
        };
        // SAFETY: forwarded contract.
        walk(chunks, |j| unsafe { table_owner(meta, owners, j) }, chunk)
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
    #[cfg(not(target_feature = "sm_90"))]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_many_4(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { mark_many::<4, { per_thread(4) }>(meta, owners, chunks) }
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
    #[cfg(not(target_feature = "sm_90"))]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn mark_visits_many_8(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { mark_many::<8, { per_thread(8) }>(meta, owners, chunks) }
    }
}

mod inline;
pub use inline::{ManyInline, ADD_MANY_INLINE, INLINE_MAX};
mod pdl;
pub use pdl::{ADD_MANY_INLINE_PDL, ADD_MANY_PDL};
