//! Block-wide collectives over a 1-D block of any size (1..=1024 threads):
//! [`reduce`], [`reduce_all`], [`inclusive_scan`], [`exclusive_scan`], and
//! the [`sum`]/[`min`]/[`max`] conveniences, for any [`BlockValue`] (u32, i32,
//! u64, f32, or your own 8-byte-or-smaller type) and any associative
//! operation `op(a, b)`.
//!
//! ```ignore
//! // In a kernel: every thread of the block calls it, with its own value.
//! // SAFETY: no thread of the block returns or branches around these calls.
//! let prefix = unsafe { block::exclusive_scan(x, |a: u32, b| a + b, 0) };
//! let total = unsafe { block::reduce_all(x, u32::max) };
//! ```
//!
//! # Rules (the `# Safety` of every collective)
//! * **Every thread of the block calls, with the same function and `op`**
//!   (uniform control flow), and the block's threads call the same sequence
//!   of collectives: the calls share one scratch in shared memory, ordered by
//!   barriers (`barrier.sync`) that count threads, not call sites. A thread
//!   that skips a call (an early `return`, a branch on the thread index) lets
//!   the others pass a barrier before the scratch is written, or write it
//!   while they still read it: a data race, undefined behaviour. That is why
//!   the collectives are `unsafe fn`s. A thread without data passes an
//!   identity of `op` (0 for a sum, the largest value for a min, ...) instead
//!   of skipping.
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

use crate::sync::sync_threads;

mod value;
pub use value::{BlockNum, BlockValue, LaneMask};

crate::static_shared!(
    /// The managed scratch: slots 0..32 hold each warp's total, slots 32..64
    /// the running totals over warps (see `core_scan`).
    gpukern_block_scratch: [u64; 64]
);

/// Where this thread is: its warp, its lane, and the warp's lanes present.
#[derive(Clone, Copy)]
struct Geom {
    lane: u32,
    warp: u32,
    warps: u32,
    /// Lanes present in this warp (32 except in a partial last warp).
    lanes: u32,
    /// Member mask of those lanes.
    mask: LaneMask,
}

#[inline(always)]
fn geom() -> Geom {
    let (t, _) = crate::thread::thread_xy();
    let (b, _) = crate::thread::block_dim_xy();
    let warp = t / 32;
    let lanes = (b - warp * 32).min(32);
    Geom { lane: t % 32, warp, warps: b.div_ceil(32), lanes, mask: LaneMask::lanes(lanes) }
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
///
/// # Safety
/// The public collectives' contract: every thread of the 1-D block calls, in
/// the same sequence of collectives. The comments below rest on it.
#[inline(always)]
unsafe fn core_scan<T: BlockValue>(x: T, op: &impl Fn(T, T) -> T, want_total: bool) -> Scan<T> {
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
/// use [`reduce_all`] to rely on that).
///
/// # Safety
/// Every thread of the block calls, with the same `op`, in the same sequence
/// of collectives; the block is 1-D (the module's rules).
#[inline(always)]
pub unsafe fn reduce<T: BlockValue>(x: T, op: impl Fn(T, T) -> T) -> T {
    // SAFETY: the caller's contract is this one.
    unsafe { reduce_all(x, op) }
}

/// As [`reduce`], with the result in every thread.
///
/// # Safety
/// As [`reduce`].
#[inline(always)]
pub unsafe fn reduce_all<T: BlockValue>(x: T, op: impl Fn(T, T) -> T) -> T {
    // SAFETY: the caller's contract is core_scan's.
    unsafe { core_scan(x, &op, true).total }
}

/// Thread `t` gets `x₀ op x₁ op … op x_t` (its own value included).
///
/// # Safety
/// As [`reduce`].
#[inline(always)]
pub unsafe fn inclusive_scan<T: BlockValue>(x: T, op: impl Fn(T, T) -> T) -> T {
    // SAFETY: the caller's contract is core_scan's.
    let s = unsafe { core_scan(x, &op, false) };
    match s.before {
        Some(b) => op(b, s.warp),
        None => s.warp,
    }
}

/// Thread `t` gets `init op x₀ op … op x_{t-1}`: thread 0 gets `init`. With
/// `init` an identity of `op` (0 for a sum), that is the plain exclusive scan;
/// another `init` offsets every result.
///
/// # Safety
/// As [`reduce`].
#[inline(always)]
pub unsafe fn exclusive_scan<T: BlockValue>(x: T, op: impl Fn(T, T) -> T, init: T) -> T {
    // SAFETY: the caller's contract is core_scan's.
    let s = unsafe { core_scan(x, &op, false) };
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

/// Declares the [`BlockNum`] conveniences, each a collective above with the
/// type's own operation.
macro_rules! conveniences {
    ($($(#[$doc:meta])* $name:ident = |$x:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// As [`reduce`].
        #[inline(always)]
        pub unsafe fn $name<T: BlockNum>($x: T) -> T {
            // SAFETY: the caller's contract is the collective's.
            unsafe { $body }
        }
    )*};
}

conveniences! {
    /// The block's sum, in every thread (integers wrap; an f32 sum rounds at
    /// each step of the tree: lanes in Kogge-Stone order, then the warps'
    /// totals).
    sum = |x| reduce_all(x, T::sum_op);
    /// The block's smallest value, in every thread (f32: see [`BlockNum`]).
    min = |x| reduce_all(x, T::min_op);
    /// The block's largest value, in every thread (f32: see [`BlockNum`]).
    max = |x| reduce_all(x, T::max_op);
    /// Inclusive prefix sum (see [`sum`] for the rounding).
    inclusive_sum = |x| inclusive_scan(x, T::sum_op);
    /// Exclusive prefix sum: thread 0 gets `T::ZERO`.
    exclusive_sum = |x| exclusive_scan(x, T::sum_op, T::ZERO);
}
