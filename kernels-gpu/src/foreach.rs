//! Many adds in one launch (a "foreach" add, in the sense of PyTorch's
//! `multi_tensor_apply`): a list of operand triples of different lengths, one
//! dtype per launch, described by a table in device memory.
//!
//! Each triple is cut into chunks of [`MANY_CHUNK`] elements; chunks are numbered
//! across the list (triple `t` owns chunks `first_chunk[t] ..`). Block `b` takes
//! chunks `b, b + gridDim, …`, finds the owning triple (one load from a per-chunk
//! `owners` array for a table in device memory; a scan of the parameters for a
//! short list passed by value, [`ManyInline`]), and its threads walk the chunk in
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

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub(crate) mod kernels {
    use super::{ManyDesc, MANY_CHUNK};
    use core::arch::nvptx;
    use core::sync::atomic::{AtomicU32, Ordering};
    use gpukern_device::lanes::{Add, Bf16, Elem, Op, F16, F32};
    use gpukern_device::pack::Pack16;

    /// The foreach walk over `chunks` chunks; `owner(j)` gives the triple that
    /// owns chunk `j`. `group(d, g)` handles lane group `g` (elements `g·LANES ..
    /// g·LANES + LANES`) of triple `d`, all three operands 16-byte aligned;
    /// `one(d, i)` handles element `i`.
    #[inline(always)]
    pub(super) fn walk<const LANES: u64>(
        chunks: u64,
        owner: impl Fn(u64) -> ManyDesc,
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
            let d = owner(j);
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

    /// The owner of chunk `j` in a table in device memory: `owners[j]` names it.
    ///
    /// # Safety
    /// `owners` holds `chunks` indices below the table's length; `meta` the table.
    #[inline(always)]
    unsafe fn table_owner(meta: *const ManyDesc, owners: *const u32, j: u64) -> ManyDesc {
        // SAFETY: per the contract.
        unsafe { *meta.add(*owners.add(j as usize) as usize) }
    }

    /// The add walk for any dtype, given the owner lookup.
    ///
    /// # Safety
    /// `owner` returns valid triples (see `ManyDesc`) for every chunk below `chunks`.
    #[inline(always)]
    pub(super) unsafe fn walk_chunks<E: Elem, O: Op<E> + Default>(chunks: u64, owner: impl Fn(u64) -> ManyDesc) {
        match E::LANES {
            4 => walk::<4>(chunks, owner, |d, g| pack::<E, O>(d, g), |d, i| one::<E, O>(d, i)),
            _ => walk::<8>(chunks, owner, |d, g| pack::<E, O>(d, g), |d, i| one::<E, O>(d, i)),
        }
    }

    /// `c = a + b` for every triple of the table.
    #[inline(always)]
    unsafe fn add_many<E: Elem, O: Op<E> + Default>(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        // SAFETY: the table's contract makes every owner valid.
        unsafe { walk_chunks::<E, O>(chunks, |j| table_owner(meta, owners, j)) }
    }

    // SAFETY (pack, one): the walk passes groups and indices below the triple's
    // n, and groups only for 16-byte aligned triples; the triple's contract
    // makes its addresses valid for n elements.
    #[inline(always)]
    fn pack<E: Elem, O: Op<E> + Default>(d: &ManyDesc, g: u64) {
        let (a, b, c) = (d.a as *const Pack16, d.b as *const Pack16, d.c as *mut Pack16);
        // SAFETY: see add_many.
        unsafe { *c.add(g as usize) = O::default().pack(*a.add(g as usize), *b.add(g as usize)) };
    }

    #[inline(always)]
    fn one<E: Elem, O: Op<E> + Default>(d: &ManyDesc, i: u64) {
        let (a, b, c) = (d.a as *const E::T, d.b as *const E::T, d.c as *mut E::T);
        // SAFETY: see add_many.
        unsafe { *c.add(i as usize) = O::default().one(*a.add(i as usize), *b.add(i as usize)) };
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
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_bf16(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { add_many::<Bf16, Add>(meta, owners, chunks) }
    }

    #[inline(always)]
    unsafe fn mark_many<const LANES: u64>(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        let visit = |d: &ManyDesc, i: u64| {
            // SAFETY: c holds n i32 marks and i < n.
            unsafe { AtomicU32::from_ptr((d.c as *mut u32).add(i as usize)) }.fetch_add(1, Ordering::Relaxed);
        };
        walk::<LANES>(
            chunks,
            // SAFETY: forwarded contract.
            |j| unsafe { table_owner(meta, owners, j) },
            |d, g| {
                for k in 0..LANES {
                    visit(d, g * LANES + k);
                }
            },
            visit,
        )
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
    pub unsafe extern "ptx-kernel" fn mark_visits_many_4(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { mark_many::<4>(meta, owners, chunks) }
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
    pub unsafe extern "ptx-kernel" fn mark_visits_many_8(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
        unsafe { mark_many::<8>(meta, owners, chunks) }
    }
}

/// Most triples [`ManyInline`] carries.
pub const INLINE_MAX: usize = 32;

/// A short list passed by value as the kernel's parameter, so a launch needs no
/// table in device memory (and no copy before it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManyInline {
    /// The triples; entries at and after `tensors` are ignored.
    pub descs: [ManyDesc; INLINE_MAX],
    /// Triples in use, 1..=INLINE_MAX.
    pub tensors: u32,
    /// Total chunk count.
    pub chunks: u64,
}

/// Entry points of the inline-list kernels `(list: ManyInline)`, by dtype.
pub const ADD_MANY_INLINE: [&str; 3] = ["add_many_inline_f32", "add_many_inline_f16", "add_many_inline_bf16"];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod inline_kernels {
    use super::{ManyDesc, ManyInline, INLINE_MAX};
    use gpukern_device::lanes::{Add, Bf16, Elem, Op, F16, F32};

    /// The owner of chunk `j` by a scan with constant indices (every parameter
    /// load at a fixed offset; a run-time index would copy the list to local
    /// memory). `first_chunk` increases, so the scan stops at the first triple
    /// past `j`: a block reads only the entries up to its own.
    #[inline(always)]
    fn owner(list: &ManyInline, j: u64) -> ManyDesc {
        // Written out with literal indices: a loop with an early exit is kept as
        // a loop, whose run-time index copies the list to local memory.
        macro_rules! scan {
            ($($k:literal)*) => {{
                let mut d = list.descs[0];
                $(
                    if $k >= list.tensors || list.descs[$k].first_chunk > j {
                        return d;
                    }
                    d = list.descs[$k];
                )*
                d
            }};
        }
        scan!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    }

    const _: () = assert!(INLINE_MAX == 32, "the scan above lists indices 1..32");

    #[inline(always)]
    unsafe fn add_inline<E: Elem, O: Op<E> + Default>(list: &ManyInline) {
        // SAFETY: forwarded; the owner lookup replaces the table in memory.
        unsafe { super::kernels::walk_chunks::<E, O>(list.chunks, |j| owner(list, j)) }
    }

    /// Adds every triple of a short list passed by value (f32).
    ///
    /// # Safety
    /// `list` holds `1..=INLINE_MAX` triples as `ManyDesc` says (each `n >= 1`,
    /// `first_chunk` increasing from 0, `chunks` the total), whose operands hold
    /// `n` f32 each; outputs overlap nothing.
    ///
    /// # Parameters
    /// `list`: the triples, by value.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_inline_f32(list: ManyInline) {
        unsafe { add_inline::<F32, Add>(&list) }
    }

    /// As `add_many_inline_f32`, for f16.
    ///
    /// # Safety
    /// As `add_many_inline_f32`, with f16 operands.
    ///
    /// # Parameters
    /// As `add_many_inline_f32`.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_inline_f16(list: ManyInline) {
        unsafe { add_inline::<F16, Add>(&list) }
    }

    /// As `add_many_inline_f32`, for bf16.
    ///
    /// # Safety
    /// As `add_many_inline_f32`, with bf16 operands.
    ///
    /// # Parameters
    /// As `add_many_inline_f32`.
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_inline_bf16(list: ManyInline) {
        unsafe { add_inline::<Bf16, Add>(&list) }
    }

    const _: () = assert!(core::mem::size_of::<ManyInline>() <= 4096, "kernel parameters are limited to 4 KiB");
}
