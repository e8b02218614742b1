//! The element types device memory holds: [`Pod`] (any bit pattern is a value)
//! and [`Element`] (the types the kernels compute on: f32, `half::f16`,
//! `half::bf16`), with the bit-level equality the tests and references use.

use half::{bf16, f16};
use kernels_gpu::Dtype;

use crate::raw;

mod sealed {
    pub trait Sealed {}
}

/// Plain data that can live in device memory: any bit pattern is a valid value.
pub trait Pod: raw::AnyBits + sealed::Sealed {
    /// The all-zero-bits value.
    const ZERO: Self;
}

/// An element type the kernels compute on.
pub trait Element: Pod + PartialEq + std::fmt::Debug {
    /// The kernels' dtype for this type.
    const DTYPE: Dtype;
    /// Raw bits, zero-extended.
    fn to_bits32(self) -> u32;
    /// From raw bits (truncated to the type's width).
    fn from_bits32(bits: u32) -> Self;
    /// True for any NaN encoding.
    fn is_nan_value(self) -> bool;
    /// Verification equality: identical bits, or both NaN (any payload). Unlike
    /// `==`, this tells -0.0 from +0.0 and accepts NaN = NaN.
    fn same_as(self, other: Self) -> bool {
        self.to_bits32() == other.to_bits32() || (self.is_nan_value() && other.is_nan_value())
    }
}

macro_rules! pod {
    ($($t:ty = $zero:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl Pod for $t {
            const ZERO: Self = $zero;
        }
    )*};
}
pod!(
    f32 = 0.0,
    f64 = 0.0,
    f16 = f16::ZERO,
    bf16 = bf16::ZERO,
    u8 = 0,
    i8 = 0,
    u16 = 0,
    i16 = 0,
    u32 = 0,
    i32 = 0,
    u64 = 0,
    i64 = 0
);

impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn to_bits32(self) -> u32 {
        self.to_bits()
    }
    fn from_bits32(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}

impl Element for f16 {
    const DTYPE: Dtype = Dtype::F16;
    fn to_bits32(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits32(bits: u32) -> Self {
        f16::from_bits(bits as u16)
    }
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}

impl Element for bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    fn to_bits32(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits32(bits: u32) -> Self {
        bf16::from_bits(bits as u16)
    }
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}
