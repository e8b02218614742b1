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
#[cfg_attr(target_feature = "sm_90", allow(unused_imports, unused_macros))]
pub(super) mod inline_kernels {
    use super::{ManyDesc, ManyInline, INLINE_MAX};
    use core::arch::asm;
    use core::mem::offset_of;
    use gpukern_device::lanes::{Add, Bf16, Elem, Op, F16, F32};

    /// The list in the kernel's parameter space, read by address.
    ///
    /// Read as a Rust value, the list cost about 200 instructions per warp
    /// before any work: LLVM loads the parameter only at constant offsets
    /// (a run-time index copies all 1424 bytes to local memory), so the owner
    /// had to be found by a scan with constant indices, and LLVM hoisted every
    /// one of the scan's loads (160 descriptor words, 32 starts) to the
    /// kernel's entry. ncu on the H200, ten f32 triples of 2^10: 16,240 warp
    /// instructions against 7,040 for torch's `multi_tensor_apply_kernel`,
    /// 4.1 µs against 2.9. PTX lets a kernel read its parameters through
    /// their address (`mov` of the parameter's name, then `ld.param` from a
    /// register), which is an indexed constant-bank load in the machine code:
    /// a binary search over `starts` and one descriptor, with run-time indices.
    pub(in crate::foreach) struct ParamList {
        /// Address of the `ManyInline` parameter in the parameter space (set
        /// only by `param_list!`).
        pub(in crate::foreach) base: u64,
    }

    /// The [`ParamList`] of entry point `$entry`, whose first parameter is the
    /// list (named `<entry>_param_0` in the PTX).
    macro_rules! param_list {
        ($entry:ident) => {{
            let base: u64;
            // SAFETY: the address of this entry's own parameter (no memory access).
            unsafe {
                ::core::arch::asm!(
                    concat!("mov.u64 {0}, ", stringify!($entry), "_param_0;"),
                    out(reg64) base,
                    options(pure, nomem, nostack)
                )
            };
            ParamList { base }
        }};
    }
    // The PDL twins (sm_90 build) use it too.
    #[allow(unused_imports)]
    pub(in crate::foreach) use param_list;

    impl ParamList {
        /// The u64 at byte `off` of the list.
        ///
        /// # Safety
        /// `off + 8 <= size_of::<ManyInline>()`, 8-byte aligned.
        #[inline(always)]
        unsafe fn u64_at(&self, off: usize) -> u64 {
            let v: u64;
            // SAFETY: a read inside the parameter (per the contract). Not
            // `pure`: LLVM must neither hoist nor merge these reads.
            unsafe {
                asm!("ld.param.u64 {0}, [{1}];", out(reg64) v, in(reg64) self.base + off as u64, options(readonly, nostack))
            };
            v
        }

        /// The u32 at byte `off` of the list.
        ///
        /// # Safety
        /// `off + 4 <= size_of::<ManyInline>()`, 4-byte aligned.
        #[inline(always)]
        unsafe fn u32_at(&self, off: usize) -> u32 {
            let v: u32;
            // SAFETY: as `u64_at`.
            unsafe {
                asm!("ld.param.u32 {0}, [{1}];", out(reg32) v, in(reg64) self.base + off as u64, options(readonly, nostack))
            };
            v
        }

        /// Total chunk count.
        #[inline(always)]
        pub(in crate::foreach) fn chunks(&self) -> u64 {
            // SAFETY: the field's offset.
            unsafe { self.u64_at(offset_of!(ManyInline, chunks)) }
        }

        /// The owner of chunk `j < chunks`: the last triple whose first chunk
        /// is at most `j`, by binary search (`starts[0]` is 0, unused entries
        /// `u32::MAX`, above every chunk).
        #[inline(always)]
        pub(in crate::foreach) fn owner(&self, j: u64) -> ManyDesc {
            let mut k = 0usize;
            let mut half = INLINE_MAX / 2;
            while half > 0 {
                // SAFETY: k + half < INLINE_MAX.
                if unsafe { self.u32_at(offset_of!(ManyInline, starts) + 4 * (k + half)) } as u64 <= j {
                    k += half;
                }
                half /= 2;
            }
            let at = offset_of!(ManyInline, descs) + k * core::mem::size_of::<ManyDesc>();
            // SAFETY: descriptor k < INLINE_MAX, its fields' offsets.
            unsafe {
                ManyDesc {
                    a: self.u64_at(at + offset_of!(ManyDesc, a)),
                    b: self.u64_at(at + offset_of!(ManyDesc, b)),
                    c: self.u64_at(at + offset_of!(ManyDesc, c)),
                    n: self.u64_at(at + offset_of!(ManyDesc, n)),
                    first_chunk: self.u64_at(at + offset_of!(ManyDesc, first_chunk)),
                }
            }
        }
    }

    const _: () = assert!(INLINE_MAX.is_power_of_two(), "the binary search halves INLINE_MAX");

    #[inline(always)]
    pub(in crate::foreach) unsafe fn add_inline<E: Elem, O: Op<E> + Default>(list: &ParamList) {
        // SAFETY: forwarded; the owner lookup replaces the table in memory.
        unsafe { super::super::kernels::walk_chunks::<E, O>(list.chunks(), |j| list.owner(j)) }
    }

    /// Adds every triple of a short list passed by value (f32).
    ///
    /// # Safety
    /// `list` holds `1..=INLINE_MAX` triples as `ManyDesc` says (each `n >= 1`,
    /// `first_chunk` increasing from 0, `chunks` the total), whose operands hold
    /// `n` f32 each; outputs overlap nothing.
    ///
    /// # Parameters
    /// `list`: the triples, by value (read through its address).
    ///
    /// # Thread mapping
    /// As `add_many_f32`.
    #[cfg(not(target_feature = "sm_90"))]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_many_inline_f32(_list: ManyInline) {
        let list = param_list!(add_many_inline_f32);
        // SAFETY: forwarded; the list is this entry's parameter.
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
    pub unsafe extern "ptx-kernel" fn add_many_inline_f16(_list: ManyInline) {
        let list = param_list!(add_many_inline_f16);
        // SAFETY: forwarded; the list is this entry's parameter.
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
    pub unsafe extern "ptx-kernel" fn add_many_inline_bf16(_list: ManyInline) {
        let list = param_list!(add_many_inline_bf16);
        // SAFETY: forwarded; the list is this entry's parameter.
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
