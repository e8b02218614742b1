//! The norms on the CPU: [`norm`] replays a plan's reduction order
//! ([`NormOrder`]: the per-thread folds, each warp's butterfly, the warps in
//! order, the segments in order) with the kernels' own arithmetic
//! (`kernels_gpu::norms::order`, compiled for the host), so it gives the GPU's
//! bits. [`norm_f64`] computes the same operations in f64, for measuring
//! the error ([`ulp_error`]).

use kernels_gpu::bits::{bf16_to_f32, f16_to_f32, f32_to_bf16_rne, f32_to_f16_rne};
use kernels_gpu::norms::order::{self, max_det, softmax_shift, softmax_term, sq_step};
use kernels_gpu::norms::Family;
use kernels_gpu::Dtype;

use crate::memory::buffer::Element;
use crate::norm_plan::{NormOp, NormOrder};
use crate::norms::{Norm, NormParts, Rows};

/// The host operands' old type: [`Norm`] of slices, `h` `()` (returned).
#[deprecated(note = "use Norm<&[T], ()> (Norm::rms(&w[..], eps), Norm::add_rms(&r[..], (), &w[..], eps), …)")]
#[doc(hidden)]
pub type HostNorm<'a, T> = Norm<&'a [T], ()>;

/// (weight, bias, residual, eps) of a host norm.
type Host<'a, T> = (Option<&'a [T]>, Option<&'a [T]>, Option<&'a [T]>, f32);

/// The operands of `op` by role.
fn parts<'a, T>(op: &Norm<&'a [T], ()>) -> Host<'a, T> {
    let NormParts { weight, bias, residual, eps, .. } = (*op).into_parts();
    (weight, bias, residual, eps)
}

/// Exact widening to f32.
pub fn widen<T: Element>(x: T) -> f32 {
    let b = x.to_bits32();
    match T::DTYPE {
        Dtype::F32 => f32::from_bits(b),
        Dtype::F16 => f16_to_f32(b as u16),
        Dtype::Bf16 => bf16_to_f32(b as u16),
    }
}

/// Rounding to `T`, once, to nearest even.
pub fn narrow<T: Element>(x: f32) -> T {
    T::from_bits32(match T::DTYPE {
        Dtype::F32 => x.to_bits(),
        Dtype::F16 => f32_to_f16_rne(x) as u32,
        Dtype::Bf16 => f32_to_bf16_rne(x) as u32,
    })
}

/// What [`norm`] returns: `y` (and `add_rms_norm`'s `h`), rows back to back.
#[derive(Clone, Debug, PartialEq)]
pub struct NormOut<T> {
    /// `rows · cols` outputs.
    pub y: Vec<T>,
    /// `rows · cols` sums, for `add_rms_norm`.
    pub h: Option<Vec<T>>,
}

/// `op` over 32 lanes as the warp butterfly computes it; lane 0's result.
fn butterfly(w: &[f32], op: &impl Fn(f32, f32) -> f32) -> f32 {
    let mut a: [f32; 32] = w.try_into().expect("a warp");
    for m in [16, 8, 4, 2, 1] {
        let old = a;
        for (i, v) in a.iter_mut().enumerate() {
            *v = op(old[i], old[i ^ m]);
        }
    }
    a[0]
}

/// A group's combination by `op` of its threads' values (`vals.len()` a
/// multiple of 32): each warp's butterfly; with several warps, their totals
/// padded to 32 with `id` and a second butterfly.
fn group(vals: &[f32], op: impl Fn(f32, f32) -> f32, id: f32) -> f32 {
    let mut warps: Vec<f32> = vals.chunks(32).map(|w| butterfly(w, &op)).collect();
    if warps.len() == 1 {
        return warps[0];
    }
    warps.resize(32, id);
    butterfly(&warps, &op)
}

/// `op` over one segment in the plan's order: each thread folds its elements
/// (from `init`, in index order), then [`group`].
fn segment(v: &[f32], o: NormOrder, init: f32, step: impl Fn(f32, f32) -> f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    // The second butterfly pads with the fold's identity.
    let (g, l) = (o.group as usize, o.lanes as usize);
    let threads: Vec<f32> = (0..g)
        .map(|t| {
            let elems = (t * l..v.len()).step_by(g * l).flat_map(|c| c..(c + l).min(v.len()));
            elems.fold(init, |acc, i| step(acc, v[i]))
        })
        .collect();
    group(&threads, op, init)
}

/// The two statistics of one segment (see `kernels_gpu::norms::order::combine`).
fn seg_stats(family: Family, v: &[f32], o: NormOrder, short: bool) -> (f32, f32) {
    let add = |p: f32, q: f32| p + q;
    match family {
        Family::Rms => (segment(v, o, 0.0, sq_step, add), 0.0),
        Family::Layer => {
            let mean = order::mean_of(segment(v, o, 0.0, add, add), v.len() as u32);
            (mean, segment(v, o, 0.0, |p, q| sq_step(p, q - mean), add))
        }
        Family::Softmax => {
            let m = segment(v, o, f32::NEG_INFINITY, max_det, max_det);
            let sh = softmax_shift(m);
            (m, segment(v, o, 0.0, |p, q| p + softmax_term(q, sh, short), add))
        }
    }
}

/// The operation over `rows` rows of `x` (row `i` at `x[i · x_pitch ..]`; the
/// residual of `add_rms_norm` in the same layout), in the order of `o`, with
/// the GPU's bits. `y` and `h` come back contiguous (`y_pitch` is ignored):
/// the operands are slices and `h` is `()`, e.g.
/// `Norm::add_rms(&residual[..], (), &weight[..], 1e-6)`.
///
/// # Panics
/// When a slice is shorter than the rows need (a test's mistake).
pub fn norm<T: Element>(op: Norm<&[T], ()>, x: &[T], rows: Rows, o: NormOrder) -> NormOut<T> {
    let (family, alt) = op.op().family();
    let (weight, bias, residual, eps) = parts(&op);
    let cols = rows.cols;
    let mut y = Vec::with_capacity(rows.rows * cols);
    let mut hs = residual.map(|_| Vec::with_capacity(rows.rows * cols));
    let o = NormOrder { seg: o.seg.min(cols.max(1) as u32), ..o };
    let short = T::DTYPE != Dtype::F32;
    for i in 0..rows.rows {
        let row = &x[i * rows.x_pitch..][..cols];
        let mut v: Vec<f32> = row.iter().map(|&e| widen(e)).collect();
        if let (Some(r), Some(hs)) = (residual, hs.as_mut()) {
            for (k, e) in v.iter_mut().enumerate() {
                let h: T = narrow(*e + widen(r[i * rows.x_pitch + k]));
                hs.push(h);
                *e = widen(h);
            }
        }
        let parts: Vec<(f32, f32)> = v.chunks(o.seg as usize).map(|s| seg_stats(family, s, o, short)).collect();
        let segs = parts.len() as u32;
        let stats = order::combine(family, segs, o.seg, cols as u32, |s| parts[s as usize]);
        let f = order::factors(family, alt, stats, cols as u32, eps);
        let fs: Vec<(f32, f32)> = parts.iter().map(|p| order::segment_factors(family, alt, p.0, f)).collect();
        for (c, &e) in v.iter().enumerate() {
            let w = weight.map_or(1.0, |w| widen(w[c]));
            let b = bias.map_or(0.0, |b| widen(b[c]));
            let f = if segs > 1 { fs[c / o.seg as usize] } else { f };
            y.push(narrow(order::output(family, alt, e, f, w, b, short)));
        }
    }
    NormOut { y, h: hs }
}

/// The operation in f64 from the same inputs (`add_rms_norm` from the
/// rounded `h`, as the GPU normalises it): the reference [`ulp_error`]
/// measures against. Rows back to back.
pub fn norm_f64<T: Element>(op: Norm<&[T], ()>, x: &[T], rows: Rows) -> Vec<f64> {
    let (weight, bias, residual, eps) = parts(&op);
    let (n, eps) = (rows.cols as f64, eps as f64);
    let mut out = Vec::with_capacity(rows.rows * rows.cols);
    for i in 0..rows.rows {
        let at = |k: usize| {
            let e = x[i * rows.x_pitch + k];
            match residual {
                Some(r) => widen(narrow::<T>(widen(e) + widen(r[i * rows.x_pitch + k]))) as f64,
                None => widen(e) as f64,
            }
        };
        let v: Vec<f64> = (0..rows.cols).map(at).collect();
        let w = |c: usize| weight.map_or(1.0, |w| widen(w[c]) as f64);
        let b = |c: usize| bias.map_or(0.0, |b| widen(b[c]) as f64);
        let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = v.iter().map(|e| (e - max).exp()).sum();
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|e| (e - mean) * (e - mean)).sum::<f64>() / n;
        let ms = v.iter().map(|e| e * e).sum::<f64>() / n;
        for (c, e) in v.iter().enumerate() {
            out.push(match op.op() {
                NormOp::Rms | NormOp::AddRms => e / (ms + eps).sqrt() * w(c),
                NormOp::Layer | NormOp::AddLayer => (e - mean) / (var + eps).sqrt() * w(c) + b(c),
                NormOp::Softmax => (e - max).exp() / z,
                NormOp::LogSoftmax => (e - max) - z.ln(),
            });
        }
    }
    out
}

/// `|got - want|` in units of the last place of `T` at `max(|want|, floor)`
/// (subnormal spacing below the normal range): with `floor = 0` the error in
/// ulps of the result, with `floor = 1` an absolute error in ulps of 1 below
/// 1 (where LayerNorm's and log-softmax's outputs lose digits to
/// cancellation in every implementation). 0 when both are NaN or equal
/// infinities, infinite when only one is NaN or infinite.
pub fn ulp_error<T: Element>(got: T, want: f64, floor: f64) -> f64 {
    let g = widen(got) as f64;
    if g.is_nan() || want.is_nan() {
        return if g.is_nan() && want.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if g.is_infinite() || want.is_infinite() {
        return if g == want { 0.0 } else { f64::INFINITY };
    }
    let (man, emin) = match T::DTYPE {
        Dtype::F32 => (23, -126),
        Dtype::F16 => (10, -14),
        Dtype::Bf16 => (7, -126),
    };
    let at = want.abs().max(floor);
    let e = if at == 0.0 { emin } else { (at.log2().floor() as i32).max(emin) };
    (g - want).abs() / 2f64.powi(e - man)
}
