//! One row's (or segment's) work once its values are in registers: the
//! residual of `add_rms_norm`, the statistics in the order the parent module
//! describes (or a split's passes, or a cluster's exchange), and the output.
//! Shared by the kernels that load rows from global memory (`device::norm`)
//! and the pipelined ones that load them from shared memory (`pipe`), so
//! both reduce in one order with one definition.

use gpukern_device::lanes::Elem;

use super::cluster::{cluster_sync, exchange};
use super::device::{add, each_lane, fold, load_chunk, reduce, store_chunk, unroll, Args};
use super::order::{self, max_det, softmax_shift, softmax_term, sq_step};
use super::{has_residual, Family, FLAG_ALT, FLAG_VEC, MODE_APPLY, MODE_FULL, MODE_MASK, MODE_STATS, PART_WORDS};

/// Where a thread's work lies: its group (`g` threads, `t` its index in it),
/// the row, the segment `s` of `segs`, the segment's elements `start..end`.
#[derive(Clone, Copy)]
pub(super) struct Place {
    pub(super) t: u32,
    pub(super) g: u32,
    pub(super) row: u32,
    pub(super) s: u32,
    pub(super) segs: u32,
    pub(super) active: bool,
    pub(super) start: u32,
    pub(super) end: u32,
}

impl Place {
    /// The first element of this thread's chunk `j`.
    #[inline(always)]
    pub(super) fn e0<E: Elem>(&self, j: usize) -> u32 {
        self.start + (self.t + j as u32 * self.g) * E::LANES as u32
    }
    /// Whether chunk `j` holds elements of an active row.
    #[inline(always)]
    pub(super) fn has<E: Elem>(&self, j: usize) -> bool {
        self.active && self.e0::<E>(j) < self.end
    }
    /// Valid lanes of chunk `j` (0 for an inactive row).
    #[inline(always)]
    pub(super) fn ok<E: Elem>(&self, j: usize) -> u32 {
        if self.has::<E>(j) {
            (self.end - self.e0::<E>(j)).min(E::LANES as u32)
        } else {
            0
        }
    }
    /// Row `row`'s element 0 of an operand of pitch `pitch` (wrapping: an
    /// inactive row's address is formed but never used).
    #[inline(always)]
    pub(super) fn base<P>(&self, p: *const P, pitch: u64) -> *const P {
        p.wrapping_add(self.row as usize * pitch as usize)
    }
}

/// `add_rms_norm`'s step on chunk `j` once `v` holds x and `r` the residual:
/// `v = round(x + r)`, written to `h` unless this is a split's second pass.
///
/// # Safety
/// The chunk lies in an active row of the plan's `h` (see [`finish`]).
#[inline(always)]
pub(super) unsafe fn residual<E: Elem>(a: &Args<E::T>, p: &Place, j: usize, v: &mut [f32; 8], r: &[f32; 8]) {
    each_lane::<E>(
        #[inline(always)]
        |l| v[l] = E::widen(E::narrow(v[l] + r[l])),
    );
    if a.flags & MODE_MASK != MODE_APPLY {
        let vec = a.flags & FLAG_VEC != 0;
        // SAFETY: this thread's chunk of h.
        unsafe { store_chunk::<E>(p.base(a.h, a.yp) as *mut E::T, p.e0::<E>(j), p.end, vec, v) };
    }
}

/// Loads this thread's chunks of its row from global memory into `v` (and
/// applies the residual).
///
/// # Safety
/// As [`finish`].
#[inline(always)]
pub(super) unsafe fn load_global<E: Elem, const K: usize>(
    fam: Family,
    a: &Args<E::T>,
    p: &Place,
    v: &mut [[f32; 8]; K],
) {
    let vec = a.flags & FLAG_VEC != 0;
    let with_residual = has_residual(fam, a.flags);
    let (xrow, rrow) = (p.base(a.x, a.xp), p.base(a.r, a.xp));
    unroll::<K>(
        #[inline(always)]
        |j| {
            if p.has::<E>(j) {
                // SAFETY: the row's chunk, inside the plan's ranges.
                unsafe { load_chunk::<E>(xrow, p.e0::<E>(j), p.end, vec, &mut v[j]) };
                if with_residual {
                    let mut r = [0.0f32; 8];
                    // SAFETY: as above, for the residual; then this chunk of h.
                    unsafe {
                        load_chunk::<E>(rrow, p.e0::<E>(j), p.end, vec, &mut r);
                        residual::<E>(a, p, j, &mut v[j], &r);
                    }
                }
            }
        },
    );
}

/// The statistics and the output of this thread's row (segment) from `v`,
/// its values (after the residual), in the parent module's order.
///
/// # Safety
/// The host's plan: `x` (and `r`) hold `rows` rows of `cols` elements every
/// `xp`, `y` (and `h`) every `yp`, `w` (and `b`) `cols` elements, `part`
/// `rows · segments · PART_WORDS` f32 in the split modes; with `FLAG_VEC` every
/// pointer and pitch is 16-byte aligned; `p` is this thread's place in a
/// group of `p.g` threads (32, or the whole 1-D block), every thread of
/// which calls this with the same `g`; `K` chunks per thread cover the
/// segment; with `CLUSTER` every block of the cluster is one row's segment.
#[inline(always)]
pub(super) unsafe fn finish<E: Elem, const K: usize, const CLUSTER: bool>(
    fam: Family,
    a: &Args<E::T>,
    p: &Place,
    v: &mut [[f32; 8]; K],
) {
    let (vec, alt) = (a.flags & FLAG_VEC != 0, a.flags & FLAG_ALT != 0);
    let mode = a.flags & MODE_MASK;
    let (g, t, row, s, segs) = (p.g, p.t, p.row, p.s, p.segs);
    let ok = #[inline(always)]
    |j: usize| p.ok::<E>(j);
    // A 16-bit output: softmax's short exponential (`order::softmax_term`).
    let short = E::LANES == 8;

    // The row's statistics, and the segment's max (softmax's segment factors).
    let (stats, seg_max) = if mode != MODE_APPLY {
        let seg_stats = match fam {
            Family::Rms => (reduce(fold::<E, K>(v, ok, 0.0, sq_step), add, 0.0, g, 0), 0.0),
            Family::Layer => {
                let sum = reduce(fold::<E, K>(v, ok, 0.0, add), add, 0.0, g, 0);
                let mean = order::mean_of(sum, p.end - p.start);
                let dev = #[inline(always)]
                |q: f32, x: f32| sq_step(q, x - mean);
                (mean, reduce(fold::<E, K>(v, ok, 0.0, dev), add, 0.0, g, 1))
            }
            Family::Softmax => {
                let m = reduce(fold::<E, K>(v, ok, f32::NEG_INFINITY, max_det), max_det, f32::NEG_INFINITY, g, 0);
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
                    fold::<E, K>(v, ok, 0.0, add)
                } else {
                    let term = #[inline(always)]
                    |q: f32, x: f32| q + softmax_term(x, sh, short);
                    fold::<E, K>(v, ok, 0.0, term)
                };
                (m, reduce(z, add, 0.0, g, 1))
            }
        };
        if CLUSTER {
            // SAFETY: every block of the cluster is one row's segment
            // (FLAG_WARP off, cluster = grid.y = segments: the host's plan).
            (unsafe { exchange(fam, seg_stats, t, segs, a.seg, a.cols) }, seg_stats.0)
        } else if mode == MODE_STATS {
            if p.active && t == 0 {
                let q = a.part.wrapping_add((row as usize * segs as usize + s as usize) * PART_WORDS);
                // SAFETY: this segment's words of `part`, written by this thread alone.
                unsafe {
                    *q = seg_stats.0;
                    *q.add(1) = seg_stats.1;
                }
            }
            return;
        } else {
            (seg_stats, seg_stats.0)
        }
    } else {
        let q = a.part.wrapping_add(row as usize * segs as usize * PART_WORDS) as *const f32;
        // SAFETY: the row's segments' words, written by the first pass; read
        // only for an active row.
        let part = #[inline(always)]
        |i: u32| unsafe {
            if p.active {
                (*q.add(i as usize * PART_WORDS), *q.add(i as usize * PART_WORDS + 1))
            } else {
                (0.0, 0.0)
            }
        };
        (order::combine(fam, segs, a.seg, a.cols, part), part(s).0)
    };

    let f = order::factors(fam, alt, stats, a.cols, a.eps);
    let f = if segs > 1 { order::segment_factors(fam, alt, seg_max, f) } else { f };
    let kept_terms = fam == Family::Softmax && !alt && mode == MODE_FULL;
    let yrow = p.base(a.y, a.yp) as *mut E::T;
    unroll::<K>(
        #[inline(always)]
        |j| {
            if p.has::<E>(j) {
                let e0 = p.e0::<E>(j);
                let (mut wv, mut bv, mut o) = ([1.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
                if fam != Family::Softmax {
                    // SAFETY: the weight's columns of this chunk.
                    unsafe { load_chunk::<E>(a.w, e0, p.end, vec, &mut wv) };
                }
                if fam == Family::Layer {
                    // SAFETY: the bias's columns of this chunk.
                    unsafe { load_chunk::<E>(a.b, e0, p.end, vec, &mut bv) };
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
                unsafe { store_chunk::<E>(yrow, e0, p.end, vec, &o) };
            }
        },
    );
    if CLUSTER {
        cluster_sync();
    }
}
