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
//! through a raw pointer instead.

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
/// Every bit pattern is a valid value, there is no padding, and `CODE` is
/// unique to the type's layout (the host trusts a matching code to mean a
/// matching layout).
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

/// The parameter list of a typed kernel, as types: a tuple of [`In`], [`Out`]
/// markers and scalar [`Scalar`]s, from which the host library derives the
/// launch's argument types.
pub trait KernelSig: 'static {
    /// The entry point's name.
    const NAME: &'static str;
    /// The parameters, in order.
    const PARAMS: &'static [Param];
    /// The parameters as marker types (`(InArg<f32>, OutArg<f32>, Scalar<f32>)`).
    type Params;
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
pub struct Out<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: PhantomData<&'a [T]>,
}

impl<'a, T: Copy> Out<'a, T> {
    /// The output at `ptr` of `len` elements.
    ///
    /// # Safety
    /// `ptr .. ptr + len` is writable memory of `T`s that nothing else reads
    /// or writes during the kernel but the threads of this launch, for `'a`.
    #[inline(always)]
    pub unsafe fn from_raw(ptr: *mut T, len: u64) -> Self {
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
    /// Writes `v` at `i`; an `i` out of range traps the kernel (the host sees
    /// a fault naming it). Two threads writing the same element race: the
    /// value left is one of theirs, as in CUDA.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        if i >= self.len {
            crate::debug::assert_failed("Out::set: index out of range", file!(), line!())
        }
        // SAFETY: i < len (checked); the range is writable per from_raw.
        unsafe { self.ptr.add(i).write(v) }
    }
    /// Reads back element `i` (what this or another thread wrote before a
    /// barrier that orders them); out of range traps.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        if i >= self.len {
            crate::debug::assert_failed("Out::get: index out of range", file!(), line!())
        }
        // SAFETY: as in `set`.
        unsafe { self.ptr.add(i).read() }
    }
    /// The first element's address, for code that proves its own bounds.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}
