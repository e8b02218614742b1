//! The norm kernels' device code: one generic row function, instantiated per
//! (family, dtype, K) in `entries.rs`. The order it reduces in is the one
//! the parent module describes; `super::order` holds the arithmetic it shares
//! with the CPU reference.

use gpukern_device::lanes::Elem;
use gpukern_device::pack::{load128, store128, Pack16};
use gpukern_device::{sync_threads, thread, warp};

use super::cluster::{cluster_sync, exchange};
use super::order::{self, max_det, softmax_shift, softmax_term, sq_step};
use super::{Family, FLAG_ALT, FLAG_VEC, FLAG_WARP, MODE_APPLY, MODE_FULL, MODE_MASK, MODE_STATS, PART_WORDS};

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
fn unroll<const U: usize>(mut f: impl FnMut(usize)) {
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
fn each_lane<E: Elem>(f: impl FnMut(usize)) {
    if E::LANES == 4 {
        unroll::<4>(f)
    } else {
        unroll::<8>(f)
    }
}

/// Lane `l`'s bits in a pack.
#[inline(always)]
fn lane_bits<E: Elem>(p: &Pack16, l: usize) -> u32 {
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
unsafe fn load_chunk<E: Elem>(base: *const E::T, e0: u32, end: u32, vec: bool, out: &mut [f32; 8]) {
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
unsafe fn store_chunk<E: Elem>(base: *mut E::T, e0: u32, end: u32, vec: bool, vals: &[f32; 8]) {
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
fn reduce(v: f32, op: impl Fn(f32, f32) -> f32, id: f32, g: u32, slot: usize) -> f32 {
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
fn add(p: f32, q: f32) -> f32 {
    p + q
}

/// This thread's valid elements (the first `valid(j)` lanes of chunk `j`)
/// folded by `f` from `init`, in index order; a whole chunk without a check
/// per lane.
#[inline(always)]
fn fold<E: Elem, const K: usize>(
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

/// One row group's work (see the parent module for the order).
///
/// # Safety
/// The host's plan: `x` (and `r`) hold `rows` rows of `cols` elements every
/// `xp`, `y` (and `h`) every `yp`, `w` (and `b`) `cols` elements, `part`
/// `rows · segments · PART_WORDS` f32 in the split modes; with `FLAG_VEC` every
/// pointer and pitch is 16-byte aligned; a 1-D block of 32·w threads; `seg` a
/// multiple of the chunk covering each group's segment in `K` chunks per thread.
#[inline(always)]
pub(super) unsafe fn norm<E: Elem, const K: usize, const CLUSTER: bool>(fam: Family, a: Args<E::T>) {
    let (tid, _) = thread::thread_xy();
    let (bx, s) = thread::block_xy();
    let (bdim, _) = thread::block_dim_xy();
    let (_, segs) = thread::grid_dim_xy();
    let (warp_mode, vec, alt) = (a.flags & FLAG_WARP != 0, a.flags & FLAG_VEC != 0, a.flags & FLAG_ALT != 0);
    let mode = a.flags & MODE_MASK;
    let g = if warp_mode { 32 } else { bdim };
    let row = if warp_mode { bx * (bdim / 32) + tid / 32 } else { bx };
    let t = if warp_mode { tid % 32 } else { tid };
    let active = row < a.rows;
    let lanes = E::LANES as u32;
    let start = s * a.seg;
    let end = start + order::seg_len(s, a.seg, a.cols);
    // Wrapping: an inactive row's address is formed but never used.
    let xrow = a.x.wrapping_add(row as usize * a.xp as usize);
    let rrow = a.r.wrapping_add(row as usize * a.xp as usize);
    let yrow = a.y.wrapping_add(row as usize * a.yp as usize);
    let hrow = a.h.wrapping_add(row as usize * a.yp as usize);
    let e0 = #[inline(always)]
    |j: usize| start + (t + j as u32 * g) * lanes;
    let has = #[inline(always)]
    |j: usize| active && e0(j) < end;
    // Valid lanes of chunk j (0 for an inactive row).
    let ok = #[inline(always)]
    |j: usize| if has(j) { (end - e0(j)).min(lanes) } else { 0 };
    let residual = fam == Family::Rms && alt;
    // A 16-bit output: softmax's short exponential (`order::softmax_term`).
    let short = E::LANES == 8;

    let mut v = [[0.0f32; 8]; K];
    unroll::<K>(
        #[inline(always)]
        |j| {
            if has(j) {
                // SAFETY: the row's chunk, inside the plan's ranges.
                unsafe { load_chunk::<E>(xrow, e0(j), end, vec, &mut v[j]) };
                if residual {
                    let mut r = [0.0f32; 8];
                    // SAFETY: as above, for the residual.
                    unsafe { load_chunk::<E>(rrow, e0(j), end, vec, &mut r) };
                    each_lane::<E>(
                        #[inline(always)]
                        |l| v[j][l] = E::widen(E::narrow(v[j][l] + r[l])),
                    );
                    if mode != MODE_APPLY {
                        // SAFETY: this thread's chunk of h.
                        unsafe { store_chunk::<E>(hrow, e0(j), end, vec, &v[j]) };
                    }
                }
            }
        },
    );

    // The row's statistics, and the segment's max (softmax's segment factors).
    let (stats, seg_max) = if mode != MODE_APPLY {
        let seg_stats = match fam {
            Family::Rms => (reduce(fold::<E, K>(&v, ok, 0.0, sq_step), add, 0.0, g, 0), 0.0),
            Family::Layer => {
                let sum = reduce(fold::<E, K>(&v, ok, 0.0, add), add, 0.0, g, 0);
                let mean = order::mean_of(sum, end - start);
                (
                    mean,
                    reduce(
                        fold::<E, K>(
                            &v,
                            ok,
                            0.0,
                            #[inline(always)]
                            |p, q| sq_step(p, q - mean),
                        ),
                        add,
                        0.0,
                        g,
                        1,
                    ),
                )
            }
            Family::Softmax => {
                let m = reduce(fold::<E, K>(&v, ok, f32::NEG_INFINITY, max_det), max_det, f32::NEG_INFINITY, g, 0);
                let sh = softmax_shift(m);
                let z = if !alt && mode == MODE_FULL {
                    // Softmax's output is term · (1/Z) (a cluster's: term · its
                    // segment's factor): keep the terms, sum them.
                    unroll::<K>(
                        #[inline(always)]
                        |j| {
                            each_lane::<E>(
                                #[inline(always)]
                                |l| v[j][l] = softmax_term(v[j][l], sh, short),
                            )
                        },
                    );
                    fold::<E, K>(&v, ok, 0.0, add)
                } else {
                    fold::<E, K>(
                        &v,
                        ok,
                        0.0,
                        #[inline(always)]
                        |p, q| p + softmax_term(q, sh, short),
                    )
                };
                (m, reduce(z, add, 0.0, g, 1))
            }
        };
        if CLUSTER {
            // SAFETY: every block of the cluster is one row's segment
            // (FLAG_WARP off, cluster = grid.y = segments: the host's plan).
            (unsafe { exchange(fam, seg_stats, t, segs, a.seg, a.cols) }, seg_stats.0)
        } else if mode == MODE_STATS {
            if active && t == 0 {
                let p = a.part.wrapping_add((row as usize * segs as usize + s as usize) * PART_WORDS);
                // SAFETY: this segment's words of `part`, written by this thread alone.
                unsafe {
                    *p = seg_stats.0;
                    *p.add(1) = seg_stats.1;
                }
            }
            return;
        } else {
            (seg_stats, seg_stats.0)
        }
    } else {
        let p = a.part.wrapping_add(row as usize * segs as usize * PART_WORDS) as *const f32;
        // SAFETY: the row's segments' words, written by the first pass; read
        // only for an active row.
        let part = #[inline(always)]
        |q: u32| unsafe {
            if active {
                (*p.add(q as usize * PART_WORDS), *p.add(q as usize * PART_WORDS + 1))
            } else {
                (0.0, 0.0)
            }
        };
        (order::combine(fam, segs, a.seg, a.cols, part), part(s).0)
    };

    let f = order::factors(fam, alt, stats, a.cols, a.eps);
    let f = if segs > 1 { order::segment_factors(fam, alt, seg_max, f) } else { f };
    let kept_terms = fam == Family::Softmax && !alt && mode == MODE_FULL;
    unroll::<K>(
        #[inline(always)]
        |j| {
            if has(j) {
                let (mut wv, mut bv, mut o) = ([1.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
                if fam != Family::Softmax {
                    // SAFETY: the weight's columns of this chunk.
                    unsafe { load_chunk::<E>(a.w, e0(j), end, vec, &mut wv) };
                }
                if fam == Family::Layer {
                    // SAFETY: the bias's columns of this chunk.
                    unsafe { load_chunk::<E>(a.b, e0(j), end, vec, &mut bv) };
                }
                each_lane::<E>(
                    #[inline(always)]
                    |l| {
                        o[l] = if kept_terms {
                            v[j][l] * f.1
                        } else {
                            order::output(fam, alt, v[j][l], f, wv[l], bv[l], short)
                        };
                    },
                );
                // SAFETY: this thread's chunk of y.
                unsafe { store_chunk::<E>(yrow, e0(j), end, vec, &o) };
            }
        },
    );
    if CLUSTER {
        cluster_sync();
    }
}
