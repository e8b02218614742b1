//! The element types and the operations, written once: what one lane, one
//! 32-bit word and one 16-byte pack of an operation compute, for every dtype.
//!
//! An access pattern (`crate::patterns`, the bulk-copy walk, the foreach walk)
//! is generic over an [`Elem`] and an [`Op`] on it; a new operation is one type
//! here with its lane rule, and the patterns give it every access width.
//!
//! How the narrow formats compute (every result rounded once):
//! * f16: `add`, `sub`, `mul` use the hardware's `.rn` f16 instructions (packed
//!   `f16x2` on words); `div` widens to f32, divides with `div.rn.f32` and rounds
//!   once to f16. That is correctly rounded: the f32 quotient is the exact one
//!   rounded to 24 bits, and 24 >= 2·11 + 2, so rounding it again to 11 bits gives
//!   the same as rounding the exact quotient once (the GPU tests check all 2^32
//!   pairs). On the host, where Rust's `f16` is not stable, an f16 lane is its
//!   bits ([`Half`] is `u16`) and every operation goes through f32 and rounds
//!   once ([`crate::bits::f32_to_f16_rne`]): correctly rounded by the same
//!   argument, so the same bits as the device's `.rn` instructions.
//! * bf16: every arithmetic op widens both operands to f32 (exact), computes one
//!   IEEE f32 operation and rounds once to bf16, which is correctly rounded by the
//!   same argument (24 >= 2·8 + 2).
//! * `min`/`max` are IEEE 754-2019 `minimum`/`maximum`: a NaN operand gives NaN,
//!   and -0 is below +0. `neg`/`abs` flip or clear the sign bit (NaN included);
//!   `relu` gives +0 for every negative input and -0, and keeps NaN.

#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx::{f16x2, f16x2_add, f16x2_mul, f16x2_sub};
#[cfg(target_arch = "nvptx64")]
use core::mem::transmute;

use crate::bits::{bf16_to_f32, f32_to_bf16_rne};
use crate::pack::Pack16;

mod elem;
pub use elem::{Bf16, Elem, Half, F16, F32};

/// An element-wise operation on one dtype: a lane rule, and the word and pack
/// rules that default to it (overridden where a packed instruction exists).
/// Unary operations take `y = x` and never read a second operand.
pub trait Op<E: Elem>: Copy {
    /// Operands read per element: 2, or 1 for unary operations.
    const INPUTS: u32 = 2;
    /// One lane.
    fn one(self, x: E::T, y: E::T) -> E::T;
    /// One 32-bit word of lanes.
    #[inline(always)]
    fn word(self, x: u32, y: u32) -> u32 {
        E::zip_word(x, y, |p, q| self.one(p, q))
    }
    /// One 16-byte pack: four words.
    #[inline(always)]
    fn pack(self, x: Pack16, y: Pack16) -> Pack16 {
        let w = |i: usize| self.word(x.0[i], y.0[i]);
        Pack16([w(0), w(1), w(2), w(3)])
    }
}

/// Two f16 in a word through one packed instruction.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn half2(x: u32, y: u32, f: unsafe fn(f16x2, f16x2) -> f16x2) -> u32 {
    // SAFETY: f16x2 and u32 have the same size and every bit pattern is valid for
    // both; the packed intrinsics have no preconditions.
    unsafe { transmute::<f16x2, u32>(f(transmute::<u32, f16x2>(x), transmute::<u32, f16x2>(y))) }
}

/// Declares an arithmetic op: its f32 and f16 lane expressions (hardware `.rn`
/// instructions), the packed f16 word instruction when there is one, and bf16 by
/// way of f32, rounded once.
macro_rules! arithmetic {
    ($(#[$doc:meta])* $name:ident, $op:tt, $half2:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        pub struct $name;
        impl Op<F32> for $name {
            #[inline(always)]
            fn one(self, x: f32, y: f32) -> f32 {
                x $op y
            }
        }
        impl Op<F16> for $name {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn one(self, x: f16, y: f16) -> f16 {
                x $op y
            }
            // The host's lanes are bits: through f32, rounded once (correctly
            // rounded, as the device's `.rn` f16 instruction).
            #[cfg(not(target_arch = "nvptx64"))]
            #[inline(always)]
            fn one(self, x: u16, y: u16) -> u16 {
                F16::narrow(F16::widen(x) $op F16::widen(y))
            }
            // On the device, one packed `.rn` instruction per word; on the
            // host, the lane rule (the same rounding).
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn word(self, x: u32, y: u32) -> u32 {
                half2(x, y, $half2)
            }
        }
        impl Op<Bf16> for $name {
            #[inline(always)]
            fn one(self, x: u16, y: u16) -> u16 {
                // For `+` this is `bits::bf16_add`, which the CPU tests check.
                f32_to_bf16_rne(bf16_to_f32(x) $op bf16_to_f32(y))
            }
        }
    };
}

arithmetic!(
    /// `x + y`.
    Add, +, f16x2_add
);
arithmetic!(
    /// `x - y`.
    Sub, -, f16x2_sub
);
arithmetic!(
    /// `x * y`.
    Mul, *, f16x2_mul
);

/// `x / y`: f32 `div.rn.f32`; f16 and bf16 through f32, rounded once.
#[derive(Clone, Copy, Default)]
pub struct Div;
impl<E: Elem> Op<E> for Div {
    #[inline(always)]
    fn one(self, x: E::T, y: E::T) -> E::T {
        E::narrow(E::widen(x) / E::widen(y))
    }
}

/// IEEE `minimum` on f32: NaN if either is NaN; -0 below +0.
#[inline(always)]
fn minimum(x: f32, y: f32) -> f32 {
    if x < y {
        x
    } else if y < x {
        y
    } else if x == y {
        // Equal: the same bits, or zeros of both signs (OR keeps the minus).
        f32::from_bits(x.to_bits() | y.to_bits())
    } else {
        x + y // unordered: a NaN operand, returned quiet
    }
}

/// IEEE `maximum` on f32: NaN if either is NaN; +0 above -0.
#[inline(always)]
fn maximum(x: f32, y: f32) -> f32 {
    if x > y {
        x
    } else if y > x {
        y
    } else if x == y {
        f32::from_bits(x.to_bits() & y.to_bits())
    } else {
        x + y
    }
}

/// `minimum(x, y)`, compared in f32 (exact for every dtype).
#[derive(Clone, Copy, Default)]
pub struct Min;
impl<E: Elem> Op<E> for Min {
    #[inline(always)]
    fn one(self, x: E::T, y: E::T) -> E::T {
        E::narrow(minimum(E::widen(x), E::widen(y)))
    }
}

/// `maximum(x, y)`, compared in f32.
#[derive(Clone, Copy, Default)]
pub struct Max;
impl<E: Elem> Op<E> for Max {
    #[inline(always)]
    fn one(self, x: E::T, y: E::T) -> E::T {
        E::narrow(maximum(E::widen(x), E::widen(y)))
    }
}

/// `-x`: the sign bit flipped, on whole words at once.
#[derive(Clone, Copy, Default)]
pub struct Neg;
impl<E: Elem> Op<E> for Neg {
    const INPUTS: u32 = 1;
    #[inline(always)]
    fn one(self, x: E::T, _: E::T) -> E::T {
        E::from_bits(E::bits(x) ^ E::SIGN)
    }
    #[inline(always)]
    fn word(self, x: u32, _: u32) -> u32 {
        x ^ E::splat(E::from_bits(E::SIGN))
    }
}

/// `|x|`: the sign bit cleared.
#[derive(Clone, Copy, Default)]
pub struct Abs;
impl<E: Elem> Op<E> for Abs {
    const INPUTS: u32 = 1;
    #[inline(always)]
    fn one(self, x: E::T, _: E::T) -> E::T {
        E::from_bits(E::bits(x) & !E::SIGN)
    }
    #[inline(always)]
    fn word(self, x: u32, _: u32) -> u32 {
        x & !E::splat(E::from_bits(E::SIGN))
    }
}

/// `max(x, 0)` with NaN kept: +0 for every input with the sign bit set.
#[derive(Clone, Copy, Default)]
pub struct Relu;
impl<E: Elem> Op<E> for Relu {
    const INPUTS: u32 = 1;
    #[inline(always)]
    fn one(self, x: E::T, _: E::T) -> E::T {
        let b = E::bits(x);
        let negative_not_nan = b & E::SIGN != 0 && b & !E::SIGN <= E::INF;
        E::from_bits(if negative_not_nan { 0 } else { b })
    }
}

/// `alpha·x + beta·y`, each product and the sum rounded to the element type
/// (no fused multiply-add); `alpha`, `beta` already rounded to it.
pub struct Axpby<E: Elem> {
    /// Scale of `x`.
    pub alpha: E::T,
    /// Scale of `y`.
    pub beta: E::T,
}

// Not derived: a derive would ask `E: Copy` of the marker type.
impl<E: Elem> Clone for Axpby<E> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E: Elem> Copy for Axpby<E> {}

impl<E: Elem> Axpby<E> {
    /// The op with f32 scales rounded once to the element type.
    #[inline(always)]
    pub fn new(alpha: f32, beta: f32) -> Self {
        Axpby { alpha: E::narrow(alpha), beta: E::narrow(beta) }
    }
}

impl<E: Elem> Op<E> for Axpby<E>
where
    Add: Op<E>,
    Mul: Op<E>,
{
    #[inline(always)]
    fn one(self, x: E::T, y: E::T) -> E::T {
        Add.one(Mul.one(self.alpha, x), Mul.one(self.beta, y))
    }
    #[inline(always)]
    fn word(self, x: u32, y: u32) -> u32 {
        Add.word(Mul.word(E::splat(self.alpha), x), Mul.word(E::splat(self.beta), y))
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    extern crate std;

    use super::*;
    use crate::bits::{f16_is_nan, f16_to_f32};

    /// The f16 (bits) nearest to `v`, ties to even, found by searching the
    /// positive f16 (monotone in their bits): independent of the f32 path.
    fn nearest_f16(v: f64) -> u16 {
        let s = if v.is_sign_negative() { 0x8000 } else { 0 };
        let m = v.abs();
        if m >= 65520.0 {
            return s | 0x7c00;
        }
        let (mut lo, mut hi) = (0u16, 0x7bff);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if f16_to_f32(mid) as f64 <= m {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        let below = f16_to_f32(lo) as f64;
        let above = if lo == 0x7bff { 65536.0 } else { f16_to_f32(lo + 1) as f64 };
        let up = m - below > above - m || (m - below == above - m && lo & 1 == 1);
        s | if up { lo + 1 } else { lo }
    }

    /// The host's f16 `add`, `sub`, `mul` (through f32, rounded once) give the
    /// correctly rounded result: every pair of 48 special values (zeros,
    /// subnormals, the normal edges, the largest finite, infinities, NaNs) and
    /// 300,000 pseudo-random pairs, against the exact f64 result rounded by
    /// search. `div` likewise, against f64's quotient (53 >= 2·11 + 2).
    #[test]
    fn host_f16_arithmetic_is_correctly_rounded() {
        let specials: [u16; 24] = [
            0x0000, 0x0001, 0x0002, 0x0003, 0x01ff, 0x0200, 0x03ff, 0x0400, 0x0401, 0x07ff, 0x0800, 0x3bff, 0x3c00,
            0x3c01, 0x3e00, 0x4000, 0x5bff, 0x7800, 0x7bfe, 0x7bff, 0x7c00, 0x7c01, 0x7e00, 0x7fff,
        ];
        let mut pairs = std::vec::Vec::new();
        for &a in &specials {
            for &b in &specials {
                for (x, y) in [(a, b), (a | 0x8000, b), (a, b | 0x8000), (a | 0x8000, b | 0x8000)] {
                    pairs.push((x, y));
                }
            }
        }
        let mut r = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            pairs.push((r as u16, (r >> 32) as u16));
        }
        for (x, y) in pairs {
            let (a, b) = (f16_to_f32(x) as f64, f16_to_f32(y) as f64);
            let cases: [(u16, f64, &str); 4] = [
                (<Add as Op<F16>>::one(Add, x, y), a + b, "add"),
                (<Sub as Op<F16>>::one(Sub, x, y), a - b, "sub"),
                (<Mul as Op<F16>>::one(Mul, x, y), a * b, "mul"),
                (<Div as Op<F16>>::one(Div, x, y), a / b, "div"),
            ];
            for (got, exact, op) in cases {
                if exact.is_nan() {
                    assert!(f16_is_nan(got), "{op} {x:#06x} {y:#06x} -> {got:#06x}");
                } else {
                    assert_eq!(got, nearest_f16(exact), "{op} {x:#06x} {y:#06x} (exact {exact:e})");
                }
            }
        }
    }

    /// The words and packs of the host's f16 lanes: two lanes per word.
    #[test]
    fn host_f16_words_apply_the_lane_rule_to_both_halves() {
        // Low lanes 2 and 1, high lanes 1 and -2: sums 3 (low) and -1 (high).
        let (x, y) = (0x3c00_4000u32, 0xc000_3c00u32);
        assert_eq!(<Add as Op<F16>>::word(Add, x, y), 0xbc00_4200);
        assert_eq!(<Neg as Op<F16>>::word(Neg, x, x), 0xbc00_c000);
        assert_eq!(F16::splat(0x3c00), 0x3c00_3c00);
    }
}
