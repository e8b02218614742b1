//! The element types: what a lane of f32, f16 and bf16 is, how it widens to
//! f32 and rounds back once, and how words and packs hold lanes.

use crate::bits::bf16_to_f32;
#[cfg(not(target_arch = "nvptx64"))]
use crate::bits::{f16_to_f32, f32_to_f16_rne};

/// An element type as the kernels see it.
pub trait Elem: 'static {
    /// The lane type (`f32`; [`Half`] for f16: the native `f16` on the device,
    /// its `u16` bits on the host; bf16 as `u16` bits).
    type T: Copy;
    /// Elements per 16-byte pack.
    const LANES: u64 = (16 / core::mem::size_of::<Self::T>()) as u64;
    /// The sign bit of one lane.
    const SIGN: u32;
    /// The bits of +infinity (NaNs are above it, sign masked off).
    const INF: u32;
    /// A lane's bits, zero-extended.
    fn bits(x: Self::T) -> u32;
    /// A lane from bits (truncated to the width).
    fn from_bits(x: u32) -> Self::T;
    /// Exact widening to f32.
    fn widen(x: Self::T) -> f32;
    /// Rounding to the element type, once, to nearest even.
    fn narrow(x: f32) -> Self::T;
    /// Two lanes of a 16-bit type rounded by [`Elem::narrow`] and packed in
    /// a word, `lo` in the low half (bf16 in sm_90 builds: one instruction).
    #[inline(always)]
    fn narrow_pair(lo: f32, hi: f32) -> u32 {
        Self::bits(Self::narrow(lo)) | (Self::bits(Self::narrow(hi)) << 16)
    }
    /// `f` on each lane of two 32-bit words (one lane for f32, two otherwise).
    fn zip_word(x: u32, y: u32, f: impl Fn(Self::T, Self::T) -> Self::T) -> u32;
    /// A word with `x` in every lane.
    fn splat(x: Self::T) -> u32;
}

/// IEEE binary32.
pub struct F32;
/// IEEE binary16.
pub struct F16;

/// The lane type of [`F16`] on the device: the native `f16` (the `.rn` and
/// packed `f16x2` instructions).
#[cfg(target_arch = "nvptx64")]
pub type Half = f16;
/// The lane type of [`F16`] on the host: its bits, since Rust's `f16` is not
/// stable; arithmetic goes through f32, rounded once.
#[cfg(not(target_arch = "nvptx64"))]
pub type Half = u16;
/// bfloat16, carried as its bits.
pub struct Bf16;

impl Elem for F32 {
    type T = f32;
    const SIGN: u32 = 0x8000_0000;
    const INF: u32 = 0x7f80_0000;
    #[inline(always)]
    fn bits(x: f32) -> u32 {
        x.to_bits()
    }
    #[inline(always)]
    fn from_bits(x: u32) -> f32 {
        f32::from_bits(x)
    }
    #[inline(always)]
    fn widen(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn narrow(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn zip_word(x: u32, y: u32, f: impl Fn(f32, f32) -> f32) -> u32 {
        f(f32::from_bits(x), f32::from_bits(y)).to_bits()
    }
    #[inline(always)]
    fn splat(x: f32) -> u32 {
        x.to_bits()
    }
}

/// Splits a word into its low and high 16-bit lanes, applies `f` to each pair and
/// joins the results.
#[inline(always)]
fn zip16(x: u32, y: u32, f: impl Fn(u16, u16) -> u16) -> u32 {
    let lo = f(x as u16, y as u16) as u32;
    let hi = f((x >> 16) as u16, (y >> 16) as u16) as u32;
    lo | (hi << 16)
}

#[cfg(target_arch = "nvptx64")]
impl Elem for F16 {
    type T = f16;
    const SIGN: u32 = 0x8000;
    const INF: u32 = 0x7c00;
    #[inline(always)]
    fn bits(x: f16) -> u32 {
        x.to_bits() as u32
    }
    #[inline(always)]
    fn from_bits(x: u32) -> f16 {
        f16::from_bits(x as u16)
    }
    #[inline(always)]
    fn widen(x: f16) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn narrow(x: f32) -> f16 {
        x as f16
    }
    #[inline(always)]
    fn zip_word(x: u32, y: u32, f: impl Fn(f16, f16) -> f16) -> u32 {
        zip16(x, y, |p, q| f(f16::from_bits(p), f16::from_bits(q)).to_bits())
    }
    #[inline(always)]
    fn splat(x: f16) -> u32 {
        (x.to_bits() as u32) * 0x1_0001
    }
}

/// A 16-bit format carried as its bits: the lane rules widen and round with
/// the format's own conversions (bf16 everywhere, f16 on the host).
macro_rules! bits16_elem {
    ($e:ty, $inf:literal, $widen:path, $narrow:path $(, $pair:path)?) => {
        impl Elem for $e {
            type T = u16;
            const SIGN: u32 = 0x8000;
            const INF: u32 = $inf;
            #[inline(always)]
            fn bits(x: u16) -> u32 {
                x as u32
            }
            #[inline(always)]
            fn from_bits(x: u32) -> u16 {
                x as u16
            }
            #[inline(always)]
            fn widen(x: u16) -> f32 {
                $widen(x)
            }
            #[inline(always)]
            fn narrow(x: f32) -> u16 {
                $narrow(x)
            }
            $(
                #[inline(always)]
                fn narrow_pair(lo: f32, hi: f32) -> u32 {
                    $pair(lo, hi)
                }
            )?
            #[inline(always)]
            fn zip_word(x: u32, y: u32, f: impl Fn(u16, u16) -> u16) -> u32 {
                zip16(x, y, f)
            }
            #[inline(always)]
            fn splat(x: u16) -> u32 {
                (x as u32) * 0x1_0001
            }
        }
    };
}

#[cfg(not(target_arch = "nvptx64"))]
bits16_elem!(F16, 0x7c00, f16_to_f32, f32_to_f16_rne);
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
bits16_elem!(Bf16, 0x7f80, bf16_to_f32, bf16_narrow, crate::bits::f32x2_to_bf16x2_cvt);
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
bits16_elem!(Bf16, 0x7f80, bf16_to_f32, bf16_narrow);

/// bf16 rounding to nearest even: in sm_90 builds the hardware's
/// `cvt.rn.bf16.f32` (one instruction; for every non-NaN input the same bits
/// as the integer rounding, and NaN stays NaN), elsewhere the integer rounding
/// (sm_70 has no bf16 conversion; the host). So a user's bf16 operation built
/// for sm_90 rounds as cheaply as the library's `hopper::Bf16Sm90` lanes
/// (both through `bits::f32_to_bf16_cvt`).
#[inline(always)]
fn bf16_narrow(x: f32) -> u16 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        crate::bits::f32_to_bf16_cvt(x)
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    {
        crate::bits::f32_to_bf16_rne(x)
    }
}
