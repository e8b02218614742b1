//! The norm kernels' device code: the per-chunk and group primitives, and
//! the row function of the kernels that load rows from global memory,
//! instantiated per (family, dtype, K) in `entries.rs`. The order it reduces
//! in is the one the parent module describes; `super::row` holds the work
//! once a row is in registers, `super::order` the arithmetic it shares with
//! the CPU reference.

use gpukern_device::lanes::Elem;
use gpukern_device::pack::{load128, store128, Pack16};
use gpukern_device::{sync_threads, thread, warp};

use super::order;
use super::row::{finish, load_global, Place};
use super::{Family, FLAG_WARP};

gpukern_device::static_shared!(
    /// The warps' totals of the group reductions: 32 slots per reduction of
    /// one launch (at most 2), so no slot is written twice and one barrier
    /// per reduction is enough.
    norm_scratch: [f32; 64]
);

/// A launch's parameters.
#[derive(Clone, Copy)]
pub(super) struct Args<T> {
    pub(super) x: *const T,
    pub(super) r: *const T,
    pub(super) w: *const T,
    pub(super) b: *const T,
    pub(super) y: *mut T,
    pub(super) h: *mut T,
    pub(super) part: *mut f32,
    pub(super) rows: u32,
    pub(super) cols: u32,
    pub(super) xp: u64,
    pub(super) yp: u64,
    pub(super) eps: f32,
    pub(super) flags: u32,
    pub(super) seg: u32,
}

/// `f(0) … f(U - 1)` with constant arguments (1, 2, 4 or 8), so the register
/// arrays they index stay in registers.
#[inline(always)]
pub(super) fn unroll<const U: usize>(mut f: impl FnMut(usize)) {
    f(0);
    if U >= 2 {
        f(1);
    }
    if U >= 4 {
        f(2);
        f(3);
    }
    if U >= 8 {
        f(4);
        f(5);
        f(6);
        f(7);
    }
}

/// `f(l)` for each lane of a 16-byte chunk of `E`.
#[inline(always)]
pub(super) fn each_lane<E: Elem>(f: impl FnMut(usize)) {
    if E::LANES == 4 {
        unroll::<4>(f)
    } else {
        unroll::<8>(f)
    }
}

/// Lane `l`'s bits in a pack.
#[inline(always)]
pub(super) fn lane_bits<E: Elem>(p: &Pack16, l: usize) -> u32 {
    if E::LANES == 4 {
        p.0[l]
    } else {
        (p.0[l / 2] >> (16 * (l % 2))) & 0xffff
    }
}

/// Reads the chunk at `base + e0` into `out` (widened), lanes past `end` left.
///
/// # Safety
/// `base + e0 .. base + min(e0 + L, end)` is readable; with `vec`, `base + e0`
/// is 16-byte aligned.
#[inline(always)]
pub(super) unsafe fn load_chunk<E: Elem>(base: *const E::T, e0: u32, end: u32, vec: bool, out: &mut [f32; 8]) {
    let lanes = E::LANES as u32;
    if vec && e0 + lanes <= end {
        // SAFETY: per the contract; a whole aligned chunk.
        let p = unsafe { load128(base.add(e0 as usize) as *const Pack16) };
        each_lane::<E>(
            #[inline(always)]
            |l| out[l] = E::widen(E::from_bits(lane_bits::<E>(&p, l))),
        );
    } else {
        each_lane::<E>(
            #[inline(always)]
            |l| {
                if e0 + (l as u32) < end {
                    // SAFETY: inside the readable range.
                    out[l] = E::widen(unsafe { *base.add(e0 as usize + l) });
                }
            },
        );
    }
}

/// Writes `vals` (rounded once to `E`) to the chunk at `base + e0`, up to `end`.
///
/// # Safety
/// As [`load_chunk`], writable, and no other thread writes those elements.
#[inline(always)]
pub(super) unsafe fn store_chunk<E: Elem>(base: *mut E::T, e0: u32, end: u32, vec: bool, vals: &[f32; 8]) {
    let lanes = E::LANES as u32;
    if vec && e0 + lanes <= end {
        let mut p = Pack16([0; 4]);
        unroll::<4>(
            #[inline(always)]
            |w| {
                p.0[w] = if E::LANES == 4 {
                    E::bits(E::narrow(vals[w]))
                } else {
                    E::narrow_pair(vals[2 * w], vals[2 * w + 1])
                }
            },
        );
        // SAFETY: per the contract; a whole aligned chunk.
        unsafe { store128(base.add(e0 as usize) as *mut Pack16, p) };
    } else {
        each_lane::<E>(
            #[inline(always)]
            |l| {
                if e0 + (l as u32) < end {
                    // SAFETY: inside the writable range.
                    unsafe { *base.add(e0 as usize + l) = E::narrow(vals[l]) };
                }
            },
        );
    }
}

/// The group's combination of every thread's `v` by `op` (see the parent
/// module): the warp butterfly; for a group of several warps (the block),
/// each warp's total through scratch `slot`, then a second butterfly over the
/// warps' totals, padded to 32 with `id`. Every thread of the block calls it,
/// with the same `g` and `slot`.
#[inline(always)]
pub(super) fn reduce(v: f32, op: impl Fn(f32, f32) -> f32, id: f32, g: u32, slot: usize) -> f32 {
    let v = butterfly(v, &op);
    if g == 32 {
        return v;
    }
    let sh = norm_scratch() as *mut f32;
    let (tid, _) = thread::thread_xy();
    let base = slot * 32;
    if tid % 32 == 0 {
        // SAFETY: slot * 32 + warp < 64: g ≤ 1024 and slot ≤ 1; this lane alone
        // writes it, once per launch.
        unsafe { *sh.add(base + (tid / 32) as usize) = v };
    }
    sync_threads();
    let lane = tid % 32;
    // SAFETY: the warps' slots, written before the barrier and never again in
    // this launch; lanes past the last warp read nothing.
    let t = if lane < g / 32 { unsafe { *sh.add(base + lane as usize) } } else { id };
    butterfly(t, &op)
}

/// `op` over the warp's 32 values: lane `i` folds `op(own, lane i^m)` for
/// masks 16, 8, 4, 2, 1 (a counted loop, as `warp::warp_sum_f32`).
#[inline(always)]
fn butterfly(mut v: f32, op: &impl Fn(f32, f32) -> f32) -> f32 {
    let mut m = 16;
    while m > 0 {
        v = op(v, f32::from_bits(warp::shfl_xor(v.to_bits(), m)));
        m /= 2;
    }
    v
}

/// `p + q` (a function, so that every sum is the same `add.rn.f32`).
#[inline(always)]
pub(super) fn add(p: f32, q: f32) -> f32 {
    p + q
}

/// This thread's valid elements (the first `valid(j)` lanes of chunk `j`)
/// folded by `f` from `init`, in index order; a whole chunk without a check
/// per lane.
#[inline(always)]
pub(super) fn fold<E: Elem, const K: usize>(
    v: &[[f32; 8]; K],
    valid: impl Fn(usize) -> u32,
    init: f32,
    f: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut acc = init;
    unroll::<K>(
        #[inline(always)]
        |j| {
            let n = valid(j);
            if n == E::LANES as u32 {
                each_lane::<E>(
                    #[inline(always)]
                    |l| acc = f(acc, v[j][l]),
                )
            } else {
                each_lane::<E>(
                    #[inline(always)]
                    |l| acc = if (l as u32) < n { f(acc, v[j][l]) } else { acc },
                )
            }
        },
    );
    acc
}

/// One row group's work (see the parent module for the order): the place
/// from the block's indices, the row from global memory, then [`finish`].
///
/// # Safety
/// As [`finish`], with a grid of (row groups, segments) and the group a warp
/// (`FLAG_WARP`, `block / 32` rows per block) or the block.
#[inline(always)]
pub(super) unsafe fn norm<E: Elem, const K: usize, const CLUSTER: bool>(fam: Family, a: Args<E::T>) {
    let (tid, _) = thread::thread_xy();
    let (bx, s) = thread::block_xy();
    let (bdim, _) = thread::block_dim_xy();
    let (_, segs) = thread::grid_dim_xy();
    let warp_mode = a.flags & FLAG_WARP != 0;
    let row = if warp_mode { bx * (bdim / 32) + tid / 32 } else { bx };
    let start = s * a.seg;
    let p = Place {
        t: if warp_mode { tid % 32 } else { tid },
        g: if warp_mode { 32 } else { bdim },
        row,
        s,
        segs,
        active: row < a.rows,
        start,
        end: start + order::seg_len(s, a.seg, a.cols),
    };
    let mut v = [[0.0f32; 8]; K];
    // SAFETY: forwarded: the host's plan.
    unsafe {
        load_global::<E, K>(fam, &a, &p, &mut v);
        finish::<E, K, CLUSTER>(fam, &a, &p, &mut v);
    }
}
