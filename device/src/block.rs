//! Block-wide collectives over a 1-D block of any size (1..=1024 threads):
//! [`reduce`], [`reduce_all`], [`inclusive_scan`], [`exclusive_scan`], and
//! the [`sum`]/[`min`]/[`max`] conveniences, for any [`BlockValue`] (u32, i32,
//! u64, f32, or your own 8-byte-or-smaller type) and any associative
//! operation `op(a, b)`.
//!
//! ```ignore
//! // In a kernel: every thread of the block calls it, with its own value.
//! let prefix = block::exclusive_scan(x, |a: u32, b| a + b, 0);
//! let total = block::reduce_all(x, u32::max);
//! ```
//!
//! # Rules
//! * **Every thread of the block calls, with the same function and `op`**
//!   (uniform control flow): the calls contain barriers (`bar.sync`) and
//!   warp shuffles, and a thread that skips one hangs or corrupts the block. A
//!   thread without data passes an identity of `op` (0 for a sum, the largest
//!   value for a min, ...). This is a logic error, not Rust undefined behaviour, so the
//!   functions are safe (as [`sync_threads`](crate::sync_threads) is).
//! * The block is 1-D (`blockDim.y == blockDim.z == 1`); a last warp with
//!   fewer than 32 threads is fine (its shuffles name only the lanes present).
//! * `op` must be associative; it need not be commutative: values are always
//!   combined in thread order (`op(earlier, later)`). A floating-point sum is
//!   not associative, so its bits depend on the tree (documented per call).
//!
//! # Cost and scratch
//! A warp scans its 32 values with 5 shuffles; with more than one warp, each
//! warp's total goes through shared memory. That scratch is managed here: 64
//! slots of 8 bytes (512 bytes of static shared memory, `.shared` symbol
//! `gpukern_block_scratch`), shared by every call. Each call costs two block
//! barriers when the block has more than 32 threads and none otherwise, and
//! back-to-back calls are safe without a barrier of yours (the comment on
//! `core_scan` says why two are enough).

use core::arch::asm;

use crate::sync::sync_threads;

crate::static_shared!(
    /// The managed scratch: slots 0..32 hold each warp's total, slots 32..64
    /// the running totals over warps (see `core_scan`).
    gpukern_block_scratch: [u64; 64]
);

/// A value the block collectives can move between threads: `Copy`, at most 8
/// bytes and 8-byte aligned (a scratch slot), exchanged between lanes of a
/// warp with `shfl.sync`.
///
/// `mask` is the warp's member mask: exactly the lanes that execute the call
/// (the collectives pass the lanes present). A type of your own implements
/// these by shuffling its 32-bit words with `u32`'s implementation, as `u64`
/// does.
pub trait BlockValue: Copy {
    /// `shfl.sync.up`: the value of lane `lane - delta` (this lane's own below `delta`).
    fn shfl_up(self, delta: u32, mask: u32) -> Self;
    /// `shfl.sync.down`: the value of lane `lane + delta`, or this lane's own
    /// when that is past `clamp` (the last lane to read from).
    fn shfl_down(self, delta: u32, clamp: u32, mask: u32) -> Self;
    /// `shfl.sync.idx`: the value of lane `src`.
    fn shfl_idx(self, src: u32, mask: u32) -> Self;
}

/// One `shfl.sync` of 32 bits; `$mode` is up, down or idx.
macro_rules! shfl32 {
    ($mode:literal, $v:expr, $b:expr, $c:expr, $mask:expr) => {{
        let r: u32;
        // SAFETY: a register exchange between the lanes of `mask`, which the
        // callers keep to the lanes present and calling; no memory is touched.
        // Not `pure`: the compiler must neither drop nor merge a collective.
        unsafe {
            asm!(
                concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {b}, {c}, {m};"),
                r = out(reg32) r, v = in(reg32) $v, b = in(reg32) $b, c = in(reg32) $c, m = in(reg32) $mask,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }};
}

impl BlockValue for u32 {
    #[inline(always)]
    fn shfl_up(self, delta: u32, mask: u32) -> Self {
        shfl32!("up", self, delta, 0u32, mask)
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32, clamp: u32, mask: u32) -> Self {
        shfl32!("down", self, delta, clamp, mask)
    }
    #[inline(always)]
    fn shfl_idx(self, src: u32, mask: u32) -> Self {
        shfl32!("idx", self, src, 31u32, mask)
    }
}

/// Implements [`BlockValue`] for a 32-bit type through its bits.
macro_rules! via_u32 {
    ($t:ty, $to:expr, $from:expr) => {
        impl BlockValue for $t {
            #[inline(always)]
            fn shfl_up(self, delta: u32, mask: u32) -> Self {
                $from($to(self).shfl_up(delta, mask))
            }
            #[inline(always)]
            fn shfl_down(self, delta: u32, clamp: u32, mask: u32) -> Self {
                $from($to(self).shfl_down(delta, clamp, mask))
            }
            #[inline(always)]
            fn shfl_idx(self, src: u32, mask: u32) -> Self {
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
    fn shfl_up(self, delta: u32, mask: u32) -> Self {
        join((self as u32).shfl_up(delta, mask), ((self >> 32) as u32).shfl_up(delta, mask))
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32, clamp: u32, mask: u32) -> Self {
        join((self as u32).shfl_down(delta, clamp, mask), ((self >> 32) as u32).shfl_down(delta, clamp, mask))
    }
    #[inline(always)]
    fn shfl_idx(self, src: u32, mask: u32) -> Self {
        join((self as u32).shfl_idx(src, mask), ((self >> 32) as u32).shfl_idx(src, mask))
    }
}

#[inline(always)]
fn join(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

/// The element types with built-in sum, min and max ([`sum`], [`min`],
/// [`max`] and their scans): u32, i32, u64 (wrapping sums) and f32.
///
/// f32: the sum is `add.rn.f32` in the block's tree order (see [`sum`]);
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

/// Where this thread is: its warp, its lane, and the warp's lanes present.
#[derive(Clone, Copy)]
struct Geom {
    lane: u32,
    warp: u32,
    warps: u32,
    /// Lanes present in this warp (32 except in a partial last warp).
    lanes: u32,
    /// Member mask of those lanes.
    mask: u32,
}

#[inline(always)]
fn geom() -> Geom {
    let (t, _) = crate::thread::thread_xy();
    let (b, _) = crate::thread::block_dim_xy();
    let warp = t / 32;
    let lanes = (b - warp * 32).min(32);
    Geom {
        lane: t % 32,
        warp,
        warps: b.div_ceil(32),
        lanes,
        mask: if lanes == 32 { u32::MAX } else { (1 << lanes) - 1 },
    }
}

/// Inclusive scan over the lanes present of this warp (Kogge-Stone over
/// `shfl.sync.up`: a lane only ever reads lanes below it, which are present).
#[inline(always)]
fn warp_inclusive<T: BlockValue>(mut x: T, op: &impl Fn(T, T) -> T, g: Geom) -> T {
    // A counted loop, not `for d in [1, 2, 4, 8, 16]`: that array may stay in
    // local memory when the loop is not unrolled.
    let mut d = 1;
    while d < 32 {
        let y = x.shfl_up(d, g.mask);
        if g.lane >= d {
            x = op(y, x);
        }
        d *= 2;
    }
    x
}

/// What every collective is made of.
struct Scan<T> {
    /// Inclusive scan within the warp.
    warp: T,
    /// The earlier warps' total, for warps after the first.
    before: Option<T>,
    /// The block's total, if asked for.
    total: T,
}

/// Slot `i` of the scratch as a `*mut T`.
#[inline(always)]
fn slot<T>(i: u32) -> *mut T {
    const { assert!(size_of::<T>() <= 8 && align_of::<T>() <= 8, "a BlockValue fits an 8-byte slot") };
    // SAFETY: i < 64 at every call below.
    unsafe { gpukern_block_scratch().cast::<u64>().add(i as usize).cast() }
}

/// The block scan every collective is built on.
///
/// 1. Each warp scans its lanes (`warp`); the last lane present writes the
///    warp's total to slot `w` (A); **barrier 1**.
/// 2. Warp 0 (whole whenever there are 2+ warps) reads slots `0..warps`, scans
///    them, and writes the running totals to slots `32 + w` (B); **barrier 2**.
/// 3. Warp `w > 0` reads its prefix from B[`w - 1`]; the total is B[`warps - 1`].
///
/// Why two barriers suffice with back-to-back calls: the next call writes A
/// only after its writer passed barrier 2 of this call, which warp 0 reached
/// after its reads of A; and it writes B only after barrier 1 of the next
/// call, which every reader of B reaches after its read. With one warp, no
/// scratch and no barrier: the total is the last lane's, by `shfl.sync.idx`.
#[inline(always)]
fn core_scan<T: BlockValue>(x: T, op: &impl Fn(T, T) -> T, want_total: bool) -> Scan<T> {
    let g = geom();
    let warp = warp_inclusive(x, op, g);
    if g.warps == 1 {
        let total = if want_total { warp.shfl_idx(g.lanes - 1, g.mask) } else { warp };
        return Scan { warp, before: None, total };
    }
    if g.lane == g.lanes - 1 {
        // SAFETY: slot w < 32 is this warp's alone until barrier 1.
        unsafe { slot::<T>(g.warp).write(warp) };
    }
    sync_threads();
    if g.warp == 0 {
        // Lanes past the last warp scan their own value: they only feed lanes
        // above them, whose results are never written.
        // SAFETY: slots 0..warps were written before barrier 1.
        let t = if g.lane < g.warps { unsafe { slot::<T>(g.lane).read() } } else { warp };
        let run = warp_inclusive(t, op, g);
        if g.lane < g.warps {
            // SAFETY: slot 32 + lane is written by this lane alone; its last
            // readers (previous call) passed barrier 1.
            unsafe { slot::<T>(32 + g.lane).write(run) };
        }
    }
    sync_threads();
    // SAFETY: B was written before barrier 2 and is not written again before
    // the next call's barrier 1.
    let before = if g.warp > 0 { Some(unsafe { slot::<T>(32 + g.warp - 1).read() }) } else { None };
    let total = if want_total { unsafe { slot::<T>(32 + g.warps - 1).read() } } else { warp };
    Scan { warp, before, total }
}

/// The combination of every thread's `x` by `op`, in thread order. The result
/// is promised in thread 0 only (other threads get the same value today, but
/// use [`reduce_all`] to rely on that). Every thread of the block must call
/// (see the module's rules).
#[inline(always)]
pub fn reduce<T: BlockValue>(x: T, op: impl Fn(T, T) -> T) -> T {
    reduce_all(x, op)
}

/// As [`reduce`], with the result in every thread.
#[inline(always)]
pub fn reduce_all<T: BlockValue>(x: T, op: impl Fn(T, T) -> T) -> T {
    core_scan(x, &op, true).total
}

/// Thread `t` gets `x₀ op x₁ op … op x_t` (its own value included). Every
/// thread of the block must call.
#[inline(always)]
pub fn inclusive_scan<T: BlockValue>(x: T, op: impl Fn(T, T) -> T) -> T {
    let s = core_scan(x, &op, false);
    match s.before {
        Some(b) => op(b, s.warp),
        None => s.warp,
    }
}

/// Thread `t` gets `init op x₀ op … op x_{t-1}`: thread 0 gets `init`. With
/// `init` an identity of `op` (0 for a sum), that is the plain exclusive scan;
/// another `init` offsets every result. Every thread of the block must call.
#[inline(always)]
pub fn exclusive_scan<T: BlockValue>(x: T, op: impl Fn(T, T) -> T, init: T) -> T {
    let s = core_scan(x, &op, false);
    let g = geom();
    // The lane below's inclusive value: every lane present shuffles.
    let prev = s.warp.shfl_up(1, g.mask);
    let r = match s.before {
        Some(b) => op(init, b),
        None => init,
    };
    if g.lane > 0 {
        op(r, prev)
    } else {
        r
    }
}

/// The block's sum, in every thread (integers wrap; an f32 sum rounds at each
/// step of the tree: lanes in Kogge-Stone order, then the warps' totals).
#[inline(always)]
pub fn sum<T: BlockNum>(x: T) -> T {
    reduce_all(x, T::sum_op)
}

/// The block's smallest value, in every thread (f32: see [`BlockNum`]).
#[inline(always)]
pub fn min<T: BlockNum>(x: T) -> T {
    reduce_all(x, T::min_op)
}

/// The block's largest value, in every thread (f32: see [`BlockNum`]).
#[inline(always)]
pub fn max<T: BlockNum>(x: T) -> T {
    reduce_all(x, T::max_op)
}

/// Inclusive prefix sum (see [`sum`] for the rounding).
#[inline(always)]
pub fn inclusive_sum<T: BlockNum>(x: T) -> T {
    inclusive_scan(x, T::sum_op)
}

/// Exclusive prefix sum: thread 0 gets `T::ZERO`.
#[inline(always)]
pub fn exclusive_sum<T: BlockNum>(x: T) -> T {
    exclusive_scan(x, T::sum_op, T::ZERO)
}
