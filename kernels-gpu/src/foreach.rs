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
    use super::{ManyDesc, MANY_BLOCK, MANY_CHUNK};
    use core::arch::nvptx;
    use core::sync::atomic::{AtomicU32, Ordering};
    use gpukern_device::lanes::{Add, Bf16, Elem, Op, F16, F32};
    use gpukern_device::pack::{load128, unrolled, Pack16};

    /// Lane groups per thread in a whole chunk at the launch's block size:
    /// 4 for f32, 2 for f16 and bf16.
    pub(super) const fn per_thread(lanes: u64) -> u64 {
        MANY_CHUNK / (lanes * MANY_BLOCK as u64)
    }

    /// The foreach walk over `chunks` chunks; `owner(j)` gives the triple that
    /// owns chunk `j`. In a whole chunk of an aligned triple, with the launch's
    /// block of [`MANY_BLOCK`](super::MANY_BLOCK) threads, `whole(d, g, step)`
    /// handles thread `t`'s [`per_thread`] groups `g, g + step, …` (so they can
    /// all be loaded before any is stored). Otherwise `group(d, g)` handles lane
    /// group `g` (elements `g·LANES .. g·LANES + LANES`) of triple `d`, all three
    /// operands 16-byte aligned, and `one(d, i)` element `i`.
    #[inline(always)]
    pub(super) fn walk<const LANES: u64>(
        chunks: u64,
        owner: impl Fn(u64) -> ManyDesc,
        mut whole: impl FnMut(&ManyDesc, u64, u64),
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
                if end - start == MANY_CHUNK && step * per_thread(LANES) * LANES == MANY_CHUNK {
                    whole(&d, start / LANES + t, step);
                } else {
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
        let whole = |d: &ManyDesc, g: u64, step: u64| packs::<E, O>(d, g, step);
        match E::LANES {
            4 => walk::<4>(chunks, owner, whole, |d, g| pack::<E, O>(d, g), |d, i| one::<E, O>(d, i)),
            _ => walk::<8>(chunks, owner, whole, |d, g| pack::<E, O>(d, g), |d, i| one::<E, O>(d, i)),
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

    /// Groups `g, g + step, …` ([`per_thread`] of them) of a whole chunk: every
    /// load before the first store, so the thread waits for memory once per
    /// chunk instead of once per group.
    #[inline(always)]
    fn packs<E: Elem, O: Op<E> + Default>(d: &ManyDesc, g: u64, step: u64) {
        let u = per_thread(E::LANES) as usize;
        let (a, b, c) = (d.a as *const Pack16, d.b as *const Pack16, d.c as *mut Pack16);
        let (mut xs, mut ys) = ([Pack16([0; 4]); 4], [Pack16([0; 4]); 4]);
        unrolled::<4>(|k| {
            if k < u {
                let p = (g + k as u64 * step) as usize;
                // SAFETY: see add_many; the chunk is whole, so every group lies below n.
                unsafe { (xs[k], ys[k]) = (load128(a.add(p)), load128(b.add(p))) };
            }
        });
        unrolled::<4>(|k| {
            if k < u {
                let p = (g + k as u64 * step) as usize;
                // SAFETY: as above.
                unsafe { *c.add(p) = O::default().pack(xs[k], ys[k]) };
            }
        });
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
            |d, g, step| {
                for k in 0..per_thread(LANES) {
                    for l in 0..LANES {
                        visit(d, (g + k * step) * LANES + l);
                    }
                }
            },
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
    /// `first_chunk` of each triple as u32, `u32::MAX` at and after `tensors`:
    /// what the owner scan compares.
    pub starts: [u32; INLINE_MAX],
    /// The triples; entries at and after `tensors` are unused.
    pub descs: [ManyDesc; INLINE_MAX],
    /// Triples in use, 1..=INLINE_MAX.
    pub tensors: u32,
    /// Total chunk count.
    pub chunks: u64,
}

impl ManyInline {
    /// The list of `descs` with `chunks` chunks in all, or `None` when it does
    /// not fit: more than [`INLINE_MAX`] triples, or `chunks >= u32::MAX`.
    pub fn new(descs: &[ManyDesc], chunks: u64) -> Option<ManyInline> {
        if descs.len() > INLINE_MAX || chunks >= u32::MAX as u64 {
            return None;
        }
        let mut list = ManyInline {
            starts: [u32::MAX; INLINE_MAX],
            descs: [ManyDesc::default(); INLINE_MAX],
            tensors: descs.len() as u32,
            chunks,
        };
        list.descs[..descs.len()].copy_from_slice(descs);
        for (s, d) in list.starts.iter_mut().zip(descs) {
            *s = d.first_chunk as u32;
        }
        Some(list)
    }
}

/// Entry points of the inline-list kernels `(list: ManyInline)`, by dtype.
pub const ADD_MANY_INLINE: [&str; 3] = ["add_many_inline_f32", "add_many_inline_f16", "add_many_inline_bf16"];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod inline_kernels {
    use super::{ManyDesc, ManyInline, INLINE_MAX};
    use gpukern_device::lanes::{Add, Bf16, Elem, Op, F16, F32};

    /// The owner of chunk `j` by a scan with constant indices (every parameter
    /// load at a fixed offset; a run-time index would copy the list to local
    /// memory, and so does a search whose leaves LLVM merges into one load).
    /// The scan compares the compact `starts` (two 64-byte lines of the
    /// parameter bank) rather than the 40-byte descriptors. Each step is still
    /// one dependent load and branch: ncu measured 3.58 µs against torch's 2.85
    /// for ten triples of 2^10 f32 (before `starts`), and the report showed no
    /// gain from `starts` at that shape.
    /// Unused entries start at `u32::MAX`, so the scan stops before them.
    #[inline(always)]
    fn owner(list: &ManyInline, j: u64) -> ManyDesc {
        macro_rules! scan {
            ($($k:literal)*) => {{
                let mut d = list.descs[0];
                $(
                    if list.starts[$k] as u64 > j {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_list_marks_unused_entries_and_refuses_what_does_not_fit() {
        let d = ManyDesc { a: 16, b: 32, c: 48, n: 5000, first_chunk: 0 };
        let e = ManyDesc { first_chunk: 2, ..d };
        let list = ManyInline::new(&[d, e], 4).unwrap();
        assert_eq!((list.tensors, list.chunks), (2, 4));
        assert_eq!(list.descs[..2], [d, e]);
        assert_eq!(list.starts[..3], [0, 2, u32::MAX]);
        assert!(list.starts[2..].iter().all(|&u| u == u32::MAX));
        assert!(ManyInline::new(&[d; 33], 33).is_none());
        assert!(ManyInline::new(&[d], 1 << 32).is_none());
    }
}
