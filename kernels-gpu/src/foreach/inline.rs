//! The foreach add's short lists passed by value ([`ManyInline`]), so a launch
//! needs no table in device memory (and no copy before it).

use super::ManyDesc;

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

#[cfg(target_arch = "nvptx64")]
#[cfg_attr(target_feature = "sm_90", allow(unused_imports))]
pub(super) mod inline_kernels {
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
    pub(in crate::foreach) unsafe fn add_inline<E: Elem, O: Op<E> + Default>(list: &ManyInline) {
        // SAFETY: forwarded; the owner lookup replaces the table in memory.
        unsafe { super::super::kernels::walk_chunks::<E, O>(list.chunks, |j| owner(list, j)) }
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
    #[cfg(not(target_feature = "sm_90"))]
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
    #[cfg(not(target_feature = "sm_90"))]
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
    #[cfg(not(target_feature = "sm_90"))]
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
