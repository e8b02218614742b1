//! The values the block collectives move: [`BlockValue`] (shuffles through
//! a [`LaneMask`] only the collectives make) and [`BlockNum`] (the built-in
//! sums, mins and maxes).

use core::arch::asm;

/// A warp's member mask for `shfl.sync`: the lanes of this warp that exist
/// (32, or fewer in a partial last warp). Only this module makes one, and
/// always with the calling lane in it: `shfl.sync` is undefined behaviour when
/// the executing lane is not in its mask, so a mask from safe code could
/// otherwise name any lanes.
#[derive(Clone, Copy)]
pub struct LaneMask(u32);

impl LaneMask {
    /// The first `lanes` lanes (1..=32); the collectives pass the lanes present.
    #[inline(always)]
    pub(super) fn lanes(lanes: u32) -> LaneMask {
        LaneMask(if lanes == 32 { u32::MAX } else { (1 << lanes) - 1 })
    }
    /// The mask's bits (bit `i`: lane `i`).
    #[inline(always)]
    pub fn bits(self) -> u32 {
        self.0
    }
}

/// A value the block collectives can move between threads: `Copy`, at most 8
/// bytes and 8-byte aligned (a scratch slot), exchanged between lanes of a
/// warp with `shfl.sync`.
///
/// `mask` is the warp's member mask (the lanes present, this one among them).
/// A type of your own implements these by shuffling its 32-bit words with
/// `u32`'s implementation, as `u64` does. Outside a collective the shuffles
/// are as defined as [`crate::warp`]'s: a lane of the mask that does not take
/// part makes the others wait, and a value read from a lane that is not
/// running is unspecified bits, never undefined behaviour.
pub trait BlockValue: Copy {
    /// `shfl.sync.up`: the value of lane `lane - delta` (this lane's own below `delta`).
    fn shfl_up(self, delta: u32, mask: LaneMask) -> Self;
    /// `shfl.sync.down`: the value of lane `lane + delta`, or this lane's own
    /// when that is past `clamp` (the last lane to read from).
    fn shfl_down(self, delta: u32, clamp: u32, mask: LaneMask) -> Self;
    /// `shfl.sync.idx`: the value of lane `src`.
    fn shfl_idx(self, src: u32, mask: LaneMask) -> Self;
}

/// One `shfl.sync` of 32 bits; `$mode` is up, down or idx.
macro_rules! shfl32 {
    ($mode:literal, $v:expr, $b:expr, $c:expr, $mask:expr) => {{
        let r: u32;
        // SAFETY: a register exchange between the lanes of `mask`, a
        // `LaneMask`, which holds the executing lane; defined in divergent
        // code on sm_70+ (see `BlockValue`); no memory is touched. Not
        // `pure`: the compiler must neither drop nor merge a collective.
        unsafe {
            asm!(
                concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {b}, {c}, {m};"),
                r = out(reg32) r, v = in(reg32) $v, b = in(reg32) $b, c = in(reg32) $c, m = in(reg32) $mask.0,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }};
}

impl BlockValue for u32 {
    #[inline(always)]
    fn shfl_up(self, delta: u32, mask: LaneMask) -> Self {
        shfl32!("up", self, delta, 0u32, mask)
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32, clamp: u32, mask: LaneMask) -> Self {
        shfl32!("down", self, delta, clamp, mask)
    }
    #[inline(always)]
    fn shfl_idx(self, src: u32, mask: LaneMask) -> Self {
        shfl32!("idx", self, src, 31u32, mask)
    }
}

/// Implements [`BlockValue`] for a 32-bit type through its bits.
macro_rules! via_u32 {
    ($t:ty, $to:expr, $from:expr) => {
        impl BlockValue for $t {
            #[inline(always)]
            fn shfl_up(self, delta: u32, mask: LaneMask) -> Self {
                $from($to(self).shfl_up(delta, mask))
            }
            #[inline(always)]
            fn shfl_down(self, delta: u32, clamp: u32, mask: LaneMask) -> Self {
                $from($to(self).shfl_down(delta, clamp, mask))
            }
            #[inline(always)]
            fn shfl_idx(self, src: u32, mask: LaneMask) -> Self {
                $from($to(self).shfl_idx(src, mask))
            }
        }
    };
}

via_u32!(i32, |x: i32| x as u32, |x: u32| x as i32);
via_u32!(f32, f32::to_bits, f32::from_bits);

/// Two 32-bit shuffles: the low word, then the high word.
impl BlockValue for u64 {
    #[inline(always)]
    fn shfl_up(self, delta: u32, mask: LaneMask) -> Self {
        join((self as u32).shfl_up(delta, mask), ((self >> 32) as u32).shfl_up(delta, mask))
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32, clamp: u32, mask: LaneMask) -> Self {
        join((self as u32).shfl_down(delta, clamp, mask), ((self >> 32) as u32).shfl_down(delta, clamp, mask))
    }
    #[inline(always)]
    fn shfl_idx(self, src: u32, mask: LaneMask) -> Self {
        join((self as u32).shfl_idx(src, mask), ((self >> 32) as u32).shfl_idx(src, mask))
    }
}

#[inline(always)]
fn join(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

/// The element types with built-in sum, min and max ([`sum`](super::sum), [`min`](super::min),
/// [`max`](super::max) and their scans): u32, i32, u64 (wrapping sums) and f32.
///
/// f32: the sum is `add.rn.f32` in the block's tree order (see [`sum`](super::sum));
/// min and max order `-0.0` below `+0.0` and ignore a NaN operand (as
/// `fminf`/`fmaxf`): the result is NaN only when every value is.
pub trait BlockNum: BlockValue {
    /// Identity of the sum (`0`; `+0.0` for f32, the value thread 0 of an
    /// exclusive sum gets).
    const ZERO: Self;
    /// Identity of the max: the smallest value (`-inf` for f32).
    const LOWEST: Self;
    /// Identity of the min: the largest value (`+inf` for f32).
    const HIGHEST: Self;
    /// The sum's operation.
    fn sum_op(self, o: Self) -> Self;
    /// The min's operation.
    fn min_op(self, o: Self) -> Self;
    /// The max's operation.
    fn max_op(self, o: Self) -> Self;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl BlockNum for $t {
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn sum_op(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn min_op(self, o: Self) -> Self { Ord::min(self, o) }
            #[inline(always)]
            fn max_op(self, o: Self) -> Self { Ord::max(self, o) }
        }
    )*};
}
int_num!(u32, i32, u64);

impl BlockNum for f32 {
    const ZERO: Self = 0.0;
    const LOWEST: Self = f32::NEG_INFINITY;
    const HIGHEST: Self = f32::INFINITY;
    #[inline(always)]
    fn sum_op(self, o: Self) -> Self {
        self + o
    }
    // Written out rather than `f32::min` (LLVM's minnum leaves the sign of an
    // equal pair of zeros open), so every thread and the CPU reference agree
    // bit for bit.
    #[inline(always)]
    fn min_op(self, o: Self) -> Self {
        if o.is_nan() || self < o || (self == o && self.is_sign_negative()) {
            self
        } else {
            o
        }
    }
    #[inline(always)]
    fn max_op(self, o: Self) -> Self {
        if o.is_nan() || self > o || (self == o && self.is_sign_positive()) {
            self
        } else {
            o
        }
    }
}
