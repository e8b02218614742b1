//! Typed kernels: the data behind `#[gpukern_macros::kernel]`.
//!
//! A kernel written as `#[kernel] pub fn scale(x: &[f32], y: &mut [f32], k: f32)`
//! gets, on every target, a type `scale` implementing [`KernelSig`]: its name
//! and its parameter list, the one source of the signature. On nvptx64 the
//! macro also emits the entry point (each slice passed as pointer and length)
//! and a manifest global `gpukern_kernel_<name>` holding the same list, which
//! the host checks when it loads the kernel. Inside the kernel an input slice
//! is a `&[T]` (indexing is bounds-checked; a failed check traps) and an
//! output is an [`Out`], written with [`Out::set`] (bounds-checked too).
//!
//! Outputs are not `&mut [T]` on the device: every thread of the grid would
//! hold one to the same memory, which Rust's aliasing rules forbid, and the
//! compiler may then move or add stores. [`Out`] writes one element at a time
//! instead, as a relaxed atomic store, so that two threads writing the same
//! element (or one writing while another reads it back) is not a data race:
//! the element ends up holding one of the values, as in CUDA, and safe code
//! cannot cause undefined behaviour through an `Out`.

use core::marker::PhantomData;

/// First word of every typed-kernel manifest ("gpkk").
pub const KERNEL_MAGIC: u32 = 0x6770_6b6b;
/// Version of the manifest layout: magic, version, parameter count, then
/// (kind, element) per parameter.
pub const KERNEL_VERSION: u32 = 1;

/// How a parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ParamKind {
    /// A read-only slice: a pointer and a `u64` length.
    In = 1,
    /// A written slice ([`Out`]): a pointer and a `u64` length.
    Out = 2,
    /// A value.
    Scalar = 3,
}

/// One parameter: its kind and its element type's code ([`KernelElem::CODE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// How it is passed.
    pub kind: ParamKind,
    /// The element type's code.
    pub elem: u32,
    /// The element type's size in bytes.
    pub size: u32,
}

impl Param {
    /// The words of this parameter in a manifest.
    pub const fn words(self) -> [u32; 2] {
        [self.kind as u32, self.elem]
    }
}

/// An element type a typed kernel may take: plain data with a code the
/// manifest records.
///
/// # Safety
/// Every bit pattern is a valid value, there is no padding, the size is 1, 2,
/// 4 or 8 bytes and the alignment equals it ([`Out`] stores it as one integer
/// of that size), and `CODE` is unique to the type's layout (the host trusts
/// a matching code to mean a matching layout).
pub unsafe trait KernelElem: Copy + 'static {
    /// The manifest code.
    const CODE: u32;
}

macro_rules! kernel_elems {
    ($($t:ty = $code:literal),*) => {$(
        // SAFETY: a primitive number type; the codes below are distinct.
        unsafe impl KernelElem for $t {
            const CODE: u32 = $code;
        }
    )*};
}
kernel_elems!(f32 = 1, f64 = 2, u32 = 3, i32 = 4, u64 = 5, i64 = 6, u16 = 7, i16 = 8, u8 = 9, i8 = 10);

/// bfloat16 in a typed kernel's signature (carried as its bits; the host
/// passes `half::bf16`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Bf16Bits(pub u16);
// SAFETY: a u16 with its own code.
unsafe impl KernelElem for Bf16Bits {
    const CODE: u32 = 11;
}

/// IEEE binary16 in a typed kernel's signature (carried as its bits; the host
/// passes `half::f16`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct F16Bits(pub u16);
// SAFETY: a u16 with its own code.
unsafe impl KernelElem for F16Bits {
    const CODE: u32 = 12;
}

/// A typed kernel's name and parameters, as values and as the markers the host derives its arguments from.
pub trait KernelSig: 'static {
    /// The entry point's name.
    const NAME: &'static str;
    /// The parameters, in order.
    const PARAMS: &'static [Param];
    /// The parameters as marker types (`(InArg<f32>, OutArg<f32>, Scalar<f32>)`).
    type Params;
    /// The parameters' names as written (`#[kernel]`; empty if hand-written), for host errors; not in any PTX.
    const PARAM_NAMES: &'static [&'static str] = &[];
}

/// Marker of a read-only slice parameter in [`KernelSig::Params`].
pub struct InArg<T>(PhantomData<T>);
/// Marker of a written slice parameter in [`KernelSig::Params`].
pub struct OutArg<T>(PhantomData<T>);
/// Marker of a value parameter in [`KernelSig::Params`].
pub struct Scalar<T>(PhantomData<T>);

/// The [`Param`] of a read-only slice of `T`.
pub const fn input<T: KernelElem>() -> Param {
    Param { kind: ParamKind::In, elem: T::CODE, size: core::mem::size_of::<T>() as u32 }
}
/// The [`Param`] of a written slice of `T`.
pub const fn output<T: KernelElem>() -> Param {
    Param { kind: ParamKind::Out, elem: T::CODE, size: core::mem::size_of::<T>() as u32 }
}
/// The [`Param`] of a value of type `T`.
pub const fn scalar<T: KernelElem>() -> Param {
    Param { kind: ParamKind::Scalar, elem: T::CODE, size: core::mem::size_of::<T>() as u32 }
}

/// A kernel's output slice: written element by element, each index checked.
///
/// [`set`](Out::set) is a relaxed atomic store at GPU scope
/// (`st.relaxed.gpu.global`) and [`get`](Out::get) a relaxed load: any number
/// of threads may write and read any elements, in any control flow, without a
/// data race. Cost against a plain store (`st.global`): the same one `STG`
/// instruction per element, marked `.STRONG.GPU` in SASS (a store that goes to
/// L2, where global stores go anyway on sm_70 and later), so a coalesced
/// write runs at the same speed; what is lost is the compiler's freedom to
/// merge a thread's adjacent stores into one vector store or to drop one that
/// is overwritten. A kernel that proves each element has one writer can use
/// [`set_exclusive`](Out::set_exclusive), a plain store.
pub struct Out<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: PhantomData<&'a [T]>,
}

impl<'a, T: KernelElem> Out<'a, T> {
    /// The output at `ptr` of `len` elements.
    ///
    /// # Safety
    /// `ptr .. ptr + len` is global memory (device or mapped host memory, at
    /// its generic address), aligned for `T`, writable, and for `'a` no one
    /// but the threads of this launch accesses it, and they only through this
    /// `Out` (or with atomic accesses of their own).
    #[inline(always)]
    pub unsafe fn from_raw(ptr: *mut T, len: u64) -> Self {
        const { assert!(matches!(size_of::<T>(), 1 | 2 | 4 | 8) && align_of::<T>() == size_of::<T>()) };
        Out { ptr, len: len as usize, _life: PhantomData }
    }
    /// Elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Writes `v` at `i` (a relaxed atomic store); an `i` out of range traps
    /// the kernel (the host sees an assert naming it). Two threads writing the
    /// same element leave one of their values.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        crate::gpu_assert!(i < self.len, "Out::set: index out of range");
        // SAFETY: i < len (checked); the range is global memory aligned for T
        // that others touch only atomically (from_raw's contract).
        unsafe { relaxed::store(self.ptr.add(i), v) }
    }
    /// Writes `v` at `i` with a plain store (`st.global`), which the compiler
    /// may merge with neighbours; `i` out of range traps.
    ///
    /// # Safety
    /// No other thread reads or writes element `i` during the launch.
    #[inline(always)]
    pub unsafe fn set_exclusive(&self, i: usize, v: T) {
        crate::gpu_assert!(i < self.len, "Out::set_exclusive: index out of range");
        // SAFETY: i < len; element i is this thread's alone (the contract).
        unsafe { self.ptr.add(i).write(v) }
    }
    /// Reads element `i` back (a relaxed atomic load): what this thread wrote,
    /// or what another wrote before a barrier that orders them; out of range
    /// traps.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        crate::gpu_assert!(i < self.len, "Out::get: index out of range");
        // SAFETY: as in `set`.
        unsafe { relaxed::load(self.ptr.add(i)) }
    }
    /// The first element's address, for code that proves its own bounds and
    /// its own freedom from races.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

/// Relaxed atomic accesses of 1, 2, 4 or 8 bytes: PTX on the device, Rust's
/// atomics on the host (where kernel code is unit-tested).
mod relaxed {
    use super::KernelElem;
    use core::mem::{size_of, transmute_copy};

    /// Stores `v` at `p`, relaxed, GPU scope.
    ///
    /// # Safety
    /// `p` is valid global memory aligned for `T`, accessed concurrently only
    /// atomically.
    #[inline(always)]
    pub(super) unsafe fn store<T: KernelElem>(p: *mut T, v: T) {
        // SAFETY: each branch is taken only for its size (a constant), so
        // the transmutes copy exactly `size_of::<T>()` bytes of a type with no
        // padding; the address is valid per the contract.
        unsafe {
            match size_of::<T>() {
                1 => st::<u8>(p.cast(), transmute_copy(&v)),
                2 => st::<u16>(p.cast(), transmute_copy(&v)),
                4 => st::<u32>(p.cast(), transmute_copy(&v)),
                _ => st::<u64>(p.cast(), transmute_copy(&v)),
            }
        }
    }

    /// Loads `p`, relaxed, GPU scope.
    ///
    /// # Safety
    /// As [`store`].
    #[inline(always)]
    pub(super) unsafe fn load<T: KernelElem>(p: *const T) -> T {
        // SAFETY: as in `store`; every bit pattern is a valid T.
        unsafe {
            match size_of::<T>() {
                1 => transmute_copy(&ld::<u8>(p.cast())),
                2 => transmute_copy(&ld::<u16>(p.cast())),
                4 => transmute_copy(&ld::<u32>(p.cast())),
                _ => transmute_copy(&ld::<u64>(p.cast())),
            }
        }
    }

    /// The unsigned integers of 1, 2, 4 and 8 bytes.
    pub(super) trait Word: Copy {
        /// Relaxed store. # Safety: as [`store`].
        unsafe fn st(p: *mut Self, v: Self);
        /// Relaxed load. # Safety: as [`store`].
        unsafe fn ld(p: *const Self) -> Self;
    }

    #[inline(always)]
    unsafe fn st<W: Word>(p: *mut W, v: W) {
        // SAFETY: the caller's contract.
        unsafe { W::st(p, v) }
    }

    #[inline(always)]
    unsafe fn ld<W: Word>(p: *const W) -> W {
        // SAFETY: the caller's contract.
        unsafe { W::ld(p) }
    }

    /// `st.relaxed.gpu.global.b<N>` / `ld.relaxed.gpu.global.b<N>` (the
    /// generic address converted to the global window), or on the host the
    /// matching `Atomic*` with `Relaxed`.
    macro_rules! word {
        ($($w:ty, $atomic:ident, $bits:literal, $reg:ident, $r:ty;)*) => {$(
            #[cfg(target_arch = "nvptx64")]
            impl Word for $w {
                #[inline(always)]
                unsafe fn st(p: *mut $w, v: $w) {
                    // SAFETY: p is global memory aligned for the word (the
                    // caller's contract); a relaxed store races with nothing.
                    unsafe {
                        core::arch::asm!(
                            concat!("{{ .reg .b64 g; cvta.to.global.u64 g, {p}; st.relaxed.gpu.global.b", $bits, " [g], {v}; }}"),
                            p = in(reg64) p, v = in($reg) v as $r, options(nostack, preserves_flags),
                        )
                    }
                }
                #[inline(always)]
                unsafe fn ld(p: *const $w) -> $w {
                    let r: $r;
                    // SAFETY: as in `st`.
                    unsafe {
                        core::arch::asm!(
                            concat!("{{ .reg .b64 g; cvta.to.global.u64 g, {p}; ld.relaxed.gpu.global.b", $bits, " {r}, [g]; }}"),
                            p = in(reg64) p, r = out($reg) r, options(nostack, preserves_flags, readonly),
                        )
                    }
                    r as $w
                }
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl Word for $w {
                #[inline(always)]
                unsafe fn st(p: *mut $w, v: $w) {
                    // SAFETY: p is valid and aligned, accessed concurrently
                    // only atomically (the caller's contract).
                    unsafe { core::sync::atomic::$atomic::from_ptr(p).store(v, core::sync::atomic::Ordering::Relaxed) }
                }
                #[inline(always)]
                unsafe fn ld(p: *const $w) -> $w {
                    // SAFETY: as in `st`.
                    unsafe { core::sync::atomic::$atomic::from_ptr(p.cast_mut()).load(core::sync::atomic::Ordering::Relaxed) }
                }
            }
        )*};
    }

    word! {
        u8, AtomicU8, "8", reg16, u16;
        u16, AtomicU16, "16", reg16, u16;
        u32, AtomicU32, "32", reg32, u32;
        u64, AtomicU64, "64", reg64, u64;
    }
}
