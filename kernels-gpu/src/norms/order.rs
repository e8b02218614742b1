//! The arithmetic the norm kernels and the CPU reference share, compiled on
//! both sides so that it has one definition and the same bits: the
//! deterministic max, each family's per-element steps, the combination of
//! segment statistics in segment order, and the final per-row factors. Only
//! IEEE operations rounded once (`+ - * /`, `fma`, `sqrt`) and
//! `gpukern_device::math::{exp, exp_nonpos, exp_nonpos16, log}`, `max` (IEEE maxNum; same
//! bits on host and device up to the sign of a zero max, see [`max_det`]).

use gpukern_device::math::{exp, exp_nonpos, exp_nonpos16, fma, log, sqrt};

use super::Family;

/// The max softmax uses: IEEE maxNum (`max.f32` on the GPU, `f32::max` on the
/// host): a NaN operand is ignored unless both are NaN. Which zero the max
/// of `-0.0` and `+0.0` is may differ between the two, and between the two
/// lanes of a butterfly; nothing depends on it: the max only enters `exp(v -
/// max)` (the same for either zero) and, canonicalised to `+0.0` by
/// [`factors`], log-softmax's `v - max`.
#[inline(always)]
pub fn max_det(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// Sum of squares step: `fma(v, v, acc)`.
#[inline(always)]
pub fn sq_step(acc: f32, v: f32) -> f32 {
    fma(v, v, acc)
}

/// The shift softmax's terms subtract: the max `m`, or `0` when `m` is
/// `-inf` (a segment all `-inf` or NaN), so that [`softmax_term`] never
/// forms `-inf - -inf`.
#[inline(always)]
pub fn softmax_shift(m: f32) -> f32 {
    if m == f32::NEG_INFINITY {
        0.0
    } else {
        m
    }
}

/// Softmax's term `exp(v - shift)` for `shift = softmax_shift(m)`, `m` the max
/// of the values `v` belongs to (so `v - shift <= 0` or NaN: the
/// `exp_nonpos` domain). `short` (the output is f16 or bf16): with
/// `exp_nonpos16` (2^-18.4 relative; three FMAs fewer), else `exp_nonpos`
/// (the bits of `exp`). `-inf` gives `0`, also when `m` is `-inf` (a segment
/// all `-inf` adds nothing; a row all `-inf` still ends in NaN, through
/// `1 / 0 · 0` in the output).
#[inline(always)]
pub fn softmax_term(v: f32, shift: f32, short: bool) -> f32 {
    if short {
        exp_nonpos16(v - shift)
    } else {
        exp_nonpos(v - shift)
    }
}

/// Elements of segment `s` of a row of `cols` cut every `seg`.
#[inline(always)]
pub fn seg_len(s: u32, seg: u32, cols: u32) -> u32 {
    let start = s * seg;
    if cols - start < seg {
        cols - start
    } else {
        seg
    }
}

/// LayerNorm's mean of a segment: `sum / n`.
#[inline(always)]
pub fn mean_of(sum: f32, n: u32) -> f32 {
    sum / n as f32
}

/// The row's two numbers before the factors: Rms `(Σx², 0)`, Layer `(mean,
/// M2)`, Softmax `(max, Σ exp(x - max))`, combined from `segs` segments whose
/// statistics `part(s)` gives, in segment order. One segment is returned as is.
#[inline(always)]
pub fn combine(family: Family, segs: u32, seg: u32, cols: u32, part: impl Fn(u32) -> (f32, f32)) -> (f32, f32) {
    let first = part(0);
    if segs == 1 {
        return first;
    }
    match family {
        Family::Rms => {
            let mut ss = first.0;
            let mut s = 1;
            while s < segs {
                ss += part(s).0;
                s += 1;
            }
            (ss, 0.0)
        }
        Family::Layer => {
            // Chan et al.'s pairwise update, left to right.
            let (mut mean, mut m2, mut n) = (first.0, first.1, seg_len(0, seg, cols) as f32);
            let mut s = 1;
            while s < segs {
                let (mb, m2b) = part(s);
                let nb = seg_len(s, seg, cols) as f32;
                let nn = n + nb;
                let d = mb - mean;
                mean = fma(d, nb / nn, mean);
                m2 = (m2 + m2b) + (d * d) * ((n * nb) / nn);
                n = nn;
                s += 1;
            }
            (mean, m2)
        }
        Family::Softmax => {
            let mut m = first.0;
            let mut s = 1;
            while s < segs {
                m = max_det(m, part(s).0);
                s += 1;
            }
            let mut z = 0.0f32;
            let mut s = 0;
            while s < segs {
                let (ms, zs) = part(s);
                // A segment all -inf has zs = 0 and ms = -inf: it adds 0 unless
                // the whole row is -inf (then NaN, as in one segment).
                z += zs * exp(ms - m);
                s += 1;
            }
            (m, z)
        }
    }
}

/// The per-row factors from the combined numbers: Rms `(1/sqrt(Σx²/n + eps),
/// 0)`, Layer `(mean, 1/sqrt(M2/n + eps))`, Softmax `(max, 1/Z)` or, for
/// log-softmax (`alt`), `(max, log Z)`.
#[inline(always)]
pub fn factors(family: Family, alt: bool, stats: (f32, f32), cols: u32, eps: f32) -> (f32, f32) {
    let n = cols as f32;
    match family {
        Family::Rms => (1.0 / sqrt(stats.0 / n + eps), 0.0),
        Family::Layer => (stats.0, 1.0 / sqrt(stats.1 / n + eps)),
        // `+ 0.0`: a zero max is `+0.0` (see `max_det`).
        Family::Softmax if alt => (stats.0 + 0.0, log(stats.1)),
        Family::Softmax => (stats.0, 1.0 / stats.1),
    }
}

/// A segment's factors for [`output`] from the row's `f`, for a row of
/// several segments: softmax's `(m_s, exp(m_s - m) · (1/Z))` (`m_s` the
/// segment's max: its terms are `exp(v - m_s)`, which the cluster kernels
/// keep in registers from their statistics, and the split's second pass
/// computes alike); `f` itself otherwise. For one segment (`m_s = m`) the
/// same bits as `f` (`exp(0) = 1`), NaN staying NaN.
#[inline(always)]
pub fn segment_factors(family: Family, alt: bool, m_s: f32, f: (f32, f32)) -> (f32, f32) {
    if family == Family::Softmax && !alt {
        (m_s, exp(m_s - f.0) * f.1)
    } else {
        f
    }
}

/// One output element in f32 (before rounding to the dtype) from the value
/// `v`, the row's factors `f`, and the column's weight and bias (`1`, `0`
/// where the family has none); `short`: the output is f16 or bf16 (see
/// [`softmax_term`]).
#[inline(always)]
pub fn output(family: Family, alt: bool, v: f32, f: (f32, f32), w: f32, b: f32, short: bool) -> f32 {
    match family {
        Family::Rms => (v * f.0) * w,
        Family::Layer => fma((v - f.0) * f.1, w, b),
        Family::Softmax if alt => (v - f.0) - f.1,
        // The term the one-pass kernels keep in registers, times 1/Z (or
        // the segment's factor, `segment_factors`).
        Family::Softmax => softmax_term(v, softmax_shift(f.0), short) * f.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_det_skips_nan() {
        assert_eq!(max_det(-0.0, 0.0), 0.0);
        assert_eq!(max_det(f32::NAN, 1.0), 1.0);
        assert_eq!(max_det(1.0, f32::NAN), 1.0);
        assert!(max_det(f32::NAN, f32::NAN).is_nan());
        assert_eq!(max_det(f32::NEG_INFINITY, -3.0), -3.0);
    }

    #[test]
    fn a_zero_max_is_positive_for_log_softmax() {
        for m in [0.0f32, -0.0] {
            assert_eq!(factors(Family::Softmax, true, (m, 1.0), 1, 0.0).0.to_bits(), 0);
        }
    }

    #[test]
    fn softmax_terms_of_minus_infinity_are_zero() {
        for short in [false, true] {
            assert_eq!(softmax_term(f32::NEG_INFINITY, softmax_shift(f32::NEG_INFINITY), short).to_bits(), 0);
            assert_eq!(softmax_term(f32::NEG_INFINITY, softmax_shift(2.0), short).to_bits(), 0);
            assert!(softmax_term(f32::NAN, softmax_shift(f32::NEG_INFINITY), short).is_nan());
            assert_eq!(softmax_term(1.5, softmax_shift(1.5), short), 1.0);
        }
    }

    #[test]
    fn one_segment_is_returned_as_is() {
        for f in Family::ALL {
            assert_eq!(combine(f, 1, 10, 10, |_| (2.5, 7.0)), (2.5, 7.0));
        }
    }

    #[test]
    fn layer_combination_matches_the_whole_row() {
        // Segments [1, 2, 3] and [4, 5]: mean 3, M2 = 10.
        let parts = [(2.0f32, 2.0f32), (4.5, 0.5)];
        let (mean, m2) = combine(Family::Layer, 2, 3, 5, |s| parts[s as usize]);
        assert!((mean - 3.0).abs() < 1e-6 && (m2 - 10.0).abs() < 1e-5, "{mean} {m2}");
    }

    #[test]
    fn softmax_combination_rescales_and_skips_masked_segments() {
        let parts = [(0.0f32, 2.0f32), (f32::NEG_INFINITY, 0.0), (1.0, 1.0)];
        let (m, z) = combine(Family::Softmax, 3, 4, 12, |s| parts[s as usize]);
        assert_eq!(m, 1.0);
        assert_eq!(z, 2.0 * exp(-1.0) + 1.0);
        let masked = [(f32::NEG_INFINITY, 0.0f32); 2];
        assert!(combine(Family::Softmax, 2, 4, 8, |s| masked[s as usize]).1.is_nan());
    }

    #[test]
    fn segment_factors_of_one_segment_are_the_row_factors() {
        for m in [0.0f32, -3.5, 2e30] {
            let f = factors(Family::Softmax, false, (m, 7.0), 4, 0.0);
            assert_eq!(segment_factors(Family::Softmax, false, m, f), f);
        }
        assert_eq!(segment_factors(Family::Softmax, false, -1.0, (0.0, 0.5)), (-1.0, exp(-1.0) * 0.5));
        assert_eq!(segment_factors(Family::Softmax, true, -1.0, (0.0, 0.5)), (0.0, 0.5));
    }

    #[test]
    fn segment_lengths_cover_the_row() {
        assert_eq!((0..3).map(|s| seg_len(s, 4, 10)).collect::<std::vec::Vec<_>>(), [4, 4, 2]);
    }
}
