//! Row reductions along the last dimension: RMSNorm, the fused residual add
//! with RMSNorm, LayerNorm, softmax and log-softmax, in f32, f16 and bf16
//! with f32 accumulation ([`Gpu::norm`]).
//!
//! Rows are described by [`Rows`]: `rows` rows of `cols` elements, the input
//! rows every `x_pitch` elements and the output rows every `y_pitch`, so a
//! slice of a larger tensor (any element offset, any row stride at least the
//! row length) needs no copy. Each plan ([`NormPlan`]) reduces in one fixed
//! order ([`crate::NormOrder`]): results never change from run to run, and
//! [`crate::reference::norms`] replays the order on the CPU bit for bit.
//!
//! ```no_run
//! use gpukern::{Gpu, Norm, Opts, Rows};
//! let gpu = Gpu::new(0)?;
//! let s = gpu.stream()?;
//! let x = gpu.upload(&vec![1.0f32; 8 * 4096])?;
//! let w = gpu.upload(&vec![1.0f32; 4096])?;
//! let mut y = gpu.alloc::<f32>(8 * 4096)?;
//! gpu.norm(Norm::rms(w.view(), 1e-6), &x, &mut y, Rows::contiguous(8, 4096), &Opts::auto(), &s)?;
//! # Ok::<(), gpukern::Error>(())
//! ```

mod launch;

use kernels_gpu::ops::OpPattern;

use crate::device::gpu::{Gpu, Stream};
use crate::error::{Error, Result};
use crate::launch::opts::Opts;
use crate::memory::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::norm_plan::{NormOp, NormPlan};
use crate::raw::{self, NormIo, NormSpans};

/// A norm: the operation and its operands beside `x` and `y`, one type for
/// every path, generic in how an operand is held: `R` an operand it reads
/// (weight, bias, residual), `W` the one it writes (`h` of
/// [`Norm::AddRms`] and [`Norm::AddLayer`]).
///
/// | path | `R` | `W` |
/// |---|---|---|
/// | a stream, [`Gpu::norm`] | [`View<'a, T>`] | [`ViewMut<'a, T>`] |
/// | a graph, [`crate::GraphBuilder::norm`] | [`crate::Slot<T>`] | [`crate::Slot<T>`] (the default, `W = R`) |
/// | cudarc buffers, `Gpu::norm_cudarc` (feature `cudarc`) | `&dyn CudarcInput<T>` | `&mut dyn CudarcOutput<T>` |
/// | the CPU, [`crate::reference::norms::norm`] | `&[T]` | `()` (the reference returns `h`) |
///
/// Built with the constructors ([`Norm::rms`], [`Norm::add_rms`],
/// [`Norm::layer`]) or the variants; [`Norm::map`] changes how the operands
/// are held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Norm<R, W = R> {
    /// `y = x / sqrt(mean(x²) + eps) · weight`.
    Rms {
        /// `cols` elements.
        weight: R,
        /// Added to the mean square.
        eps: f32,
    },
    /// `h = x + residual` (rounded to `T`), then `y = rms_norm(h)`: the
    /// transformer block's pattern. `residual` has the input layout, `h` the
    /// output layout.
    AddRms {
        /// Added to `x`.
        residual: R,
        /// Receives `x + residual`.
        h: W,
        /// `cols` elements.
        weight: R,
        /// Added to the mean square.
        eps: f32,
    },
    /// `y = (x - mean) / sqrt(var + eps) · weight + bias` (biased variance).
    Layer {
        /// `cols` elements.
        weight: R,
        /// `cols` elements.
        bias: R,
        /// Added to the variance.
        eps: f32,
    },
    /// `h = x + residual` (rounded to `T`), then `y = layer_norm(h)`: the
    /// LayerNorm twin of [`Norm::AddRms`] (pre-norm transformer blocks with
    /// LayerNorm). `residual` has the input layout, `h` the output layout.
    AddLayer {
        /// Added to `x`.
        residual: R,
        /// Receives `x + residual`.
        h: W,
        /// `cols` elements.
        weight: R,
        /// `cols` elements.
        bias: R,
        /// Added to the variance.
        eps: f32,
    },
    /// `y = exp(x - max) / Σ exp(x - max)`.
    Softmax,
    /// `y = (x - max) - log Σ exp(x - max)`.
    LogSoftmax,
}

/// A norm's operands by role (each `None` where the operation has none).
pub(crate) struct NormParts<R, W> {
    pub op: NormOp,
    pub weight: Option<R>,
    pub bias: Option<R>,
    pub residual: Option<R>,
    pub h: Option<W>,
    pub eps: f32,
}

impl<R, W> Norm<R, W> {
    /// [`Norm::Rms`].
    pub fn rms(weight: R, eps: f32) -> Self {
        Norm::Rms { weight, eps }
    }

    /// [`Norm::AddRms`]: `h` receives `x + residual`.
    pub fn add_rms(residual: R, h: W, weight: R, eps: f32) -> Self {
        Norm::AddRms { residual, h, weight, eps }
    }

    /// [`Norm::Layer`].
    pub fn layer(weight: R, bias: R, eps: f32) -> Self {
        Norm::Layer { weight, bias, eps }
    }

    /// [`Norm::AddLayer`]: `h` receives `x + residual`.
    pub fn add_layer(residual: R, h: W, weight: R, bias: R, eps: f32) -> Self {
        Norm::AddLayer { residual, h, weight, bias, eps }
    }

    /// The operation's name.
    pub fn op(&self) -> NormOp {
        match self {
            Norm::Rms { .. } => NormOp::Rms,
            Norm::AddRms { .. } => NormOp::AddRms,
            Norm::Layer { .. } => NormOp::Layer,
            Norm::AddLayer { .. } => NormOp::AddLayer,
            Norm::Softmax => NormOp::Softmax,
            Norm::LogSoftmax => NormOp::LogSoftmax,
        }
    }

    /// The same operation with its operands borrowed.
    pub fn as_ref(&self) -> Norm<&R, &W> {
        match self {
            Norm::Rms { weight, eps } => Norm::Rms { weight, eps: *eps },
            Norm::AddRms { residual, h, weight, eps } => Norm::AddRms { residual, h, weight, eps: *eps },
            Norm::Layer { weight, bias, eps } => Norm::Layer { weight, bias, eps: *eps },
            Norm::AddLayer { residual, h, weight, bias, eps } => {
                Norm::AddLayer { residual, h, weight, bias, eps: *eps }
            }
            Norm::Softmax => Norm::Softmax,
            Norm::LogSoftmax => Norm::LogSoftmax,
        }
    }

    /// The same operation with each read operand through `read` (in the
    /// order residual, weight, bias) and `h` through `write`, e.g. from
    /// [`crate::DeviceVec`]s to their views.
    pub fn map<R2, W2>(self, read: impl FnMut(R) -> R2, write: impl FnOnce(W) -> W2) -> Norm<R2, W2> {
        let (mut read, write) = (read, write);
        let never = self.try_map::<_, _, std::convert::Infallible>(|r| Ok(read(r)), |w| Ok(write(w)));
        match never {
            Ok(n) => n,
        }
    }

    /// [`Norm::map`] through fallible conversions: the first error.
    pub(crate) fn try_map<R2, W2, E>(
        self,
        mut read: impl FnMut(R) -> std::result::Result<R2, E>,
        write: impl FnOnce(W) -> std::result::Result<W2, E>,
    ) -> std::result::Result<Norm<R2, W2>, E> {
        Ok(match self {
            Norm::Rms { weight, eps } => Norm::Rms { weight: read(weight)?, eps },
            Norm::AddRms { residual, h, weight, eps } => {
                let residual = read(residual)?;
                Norm::AddRms { residual, weight: read(weight)?, h: write(h)?, eps }
            }
            Norm::Layer { weight, bias, eps } => Norm::Layer { weight: read(weight)?, bias: read(bias)?, eps },
            Norm::AddLayer { residual, h, weight, bias, eps } => {
                let residual = read(residual)?;
                let (weight, bias) = (read(weight)?, read(bias)?);
                Norm::AddLayer { residual, weight, bias, h: write(h)?, eps }
            }
            Norm::Softmax => Norm::Softmax,
            Norm::LogSoftmax => Norm::LogSoftmax,
        })
    }

    /// The operands by role.
    pub(crate) fn into_parts(self) -> NormParts<R, W> {
        let op = self.op();
        let p = NormParts { op, weight: None, bias: None, residual: None, h: None, eps: 0.0 };
        match self {
            Norm::Rms { weight, eps } => NormParts { weight: Some(weight), eps, ..p },
            Norm::AddRms { residual, h, weight, eps } => {
                NormParts { weight: Some(weight), residual: Some(residual), h: Some(h), eps, ..p }
            }
            Norm::Layer { weight, bias, eps } => NormParts { weight: Some(weight), bias: Some(bias), eps, ..p },
            Norm::AddLayer { residual, h, weight, bias, eps } => {
                let (weight, bias, residual, h) = (Some(weight), Some(bias), Some(residual), Some(h));
                NormParts { weight, bias, residual, h, eps, ..p }
            }
            Norm::Softmax | Norm::LogSoftmax => p,
        }
    }
}

/// The row layout: `rows` rows of `cols` elements, input row `i` at `x[i ·
/// x_pitch ..]`, output row `i` at `y[i · y_pitch ..]` (a view holds at least
/// `(rows - 1) · pitch + cols` elements; what lies between rows is neither
/// read nor written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rows {
    /// Rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Elements from one input row to the next (at least `cols`).
    pub x_pitch: usize,
    /// Elements from one output row to the next (at least `cols`).
    pub y_pitch: usize,
}

impl Rows {
    /// Rows stored back to back, in and out.
    pub const fn contiguous(rows: usize, cols: usize) -> Rows {
        Rows { rows, cols, x_pitch: cols, y_pitch: cols }
    }
}

/// Longest row: its length is exact in f32 (the divisions by `n`).
pub const MAX_COLS: usize = 1 << 24;

impl Gpu {
    /// Queues `op` over the rows of `x` into `y` on `stream` and returns the
    /// plan it ran. Empty (`rows` or `cols` 0): nothing queued. Of `opts`
    /// ([`Opts`]): `norm_plan` (a plan instead of the automatic one),
    /// `pattern` `OpPattern::Scalar` (element accesses, same bits) and `pdl`
    /// (`None`: the stream's setting; whether the PDL twin runs:
    /// [`NormPlan::uses_pdl`]).
    ///
    /// Errors, with nothing queued: `cols` above [`MAX_COLS`] or `rows` at or
    /// above 2^31; a pitch below `cols`; a view shorter than its rows need;
    /// a weight or bias whose length is not `cols`; an operand not aligned to
    /// its element; a plan that cannot hold the rows; a launch shape or a
    /// pattern other than `Scalar` in `opts`; buffers or stream of another
    /// `Gpu`.
    pub fn norm<'a, T: Element>(
        &self,
        op: Norm<View<'a, T>, ViewMut<'a, T>>,
        x: impl AsView<'a, T>,
        y: impl AsViewMut<'a, T>,
        rows: Rows,
        opts: &Opts,
        stream: &Stream,
    ) -> Result<NormPlan> {
        self.check_stream_owned(op.op().name(), stream)?;
        let opts = opts.pdl(opts.pdl.unwrap_or(stream.pdl()));
        self.norm_on(op, x.into_view(), y.into_view_mut(), rows, &opts, stream.raw())
    }

    /// [`Gpu::norm`] on a raw stream of this `Gpu`'s context (the caller
    /// checked the stream), PDL as `opts.pdl` says ([`NormPlan::uses_pdl`]):
    /// the caller resolved it (the call's, else its stream's or builder's
    /// setting; `None` is [`crate::Pdl::Auto`]).
    pub(crate) fn norm_on<'a, T: Element>(
        &self,
        op: Norm<View<'a, T>, ViewMut<'a, T>>,
        x: View<'a, T>,
        mut y: ViewMut<'a, T>,
        rows: Rows,
        opts: &Opts,
        stream: raw::Queue<'_>,
    ) -> Result<NormPlan> {
        let pdl = opts.pdl.unwrap_or_default();
        let NormParts { op: kind, weight, bias, residual, mut h, eps } = op.into_parts();
        let owners = [Some(x.owner()), Some(y.owner()), weight.map(|v| v.owner()), bias.map(|v| v.owner())];
        let owners = owners.into_iter().chain([residual.map(|v| v.owner()), h.as_ref().map(|v| v.owner())]);
        self.check_buffers_owned(kind.name(), owners.flatten())?;
        let span = |v: &View<'a, T>| (v.addr(), v.len());
        let spans = NormSpans {
            x: span(&x),
            r: residual.as_ref().map(span),
            w: weight.as_ref().map(span),
            b: bias.as_ref().map(span),
            y: (y.addr(), y.len()),
            h: h.as_ref().map(|h| (h.addr(), h.len())),
        };
        let p = self.norm_prepare::<T>(kind, eps, &spans, rows, opts, pdl)?;
        let Some(l) = p.launch else { return Ok(p.plan) };
        let io = NormIo { x: &x, r: residual.as_ref(), w: weight.as_ref(), b: bias.as_ref(), y: &mut y, h: h.as_mut() };
        let _live = self.shared.bind()?;
        // SAFETY: `l.func` was resolved by the name `norm_prepare` chose from
        // this Gpu's own modules (the norms table of kernels-gpu): a cluster
        // kernel only on sm_90, where that module is loaded, and a PDL twin
        // (`l.pdl`) only where `Pdl::pays` saw sm_90.
        unsafe { raw::launch_norm(&l, p.family, io, stream) }?;
        Ok(p.plan)
    }
}

/// What a norm takes of `opts`: its plan (`None`: the automatic one) and
/// whether it keeps to element accesses (`pattern` `Scalar`). Errors for
/// what a norm has no use for: a launch shape, a 128-bit pattern.
pub(crate) fn norm_settings(op: NormOp, opts: &Opts) -> Result<(Option<NormPlan>, bool)> {
    let bad = |detail: &str| Err(Error::Shape { kernel: op.name(), detail: detail.to_string() });
    if opts.shape.is_some() {
        return bad("a norm takes no launch shape (its launch is its plan: Opts::norm_plan)");
    }
    match opts.pattern {
        None => Ok((opts.norm_plan, false)),
        Some(OpPattern::Scalar) => Ok((opts.norm_plan, true)),
        Some(_) => bad("a norm takes only the Scalar pattern (128-bit accesses are the default where aligned)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::variant::LaunchShape;
    use crate::norm_plan::NormStrategy;

    #[test]
    fn a_norm_takes_its_plan_and_the_scalar_pattern_and_refuses_the_rest() {
        let plan = NormPlan { strategy: NormStrategy::Block, block: 128, k: 2 };
        assert_eq!(norm_settings(NormOp::Rms, &Opts::auto()).unwrap(), (None, false));
        assert_eq!(norm_settings(NormOp::Rms, &Opts::auto().norm_plan(plan)).unwrap(), (Some(plan), false));
        let scalar = Opts::auto().pattern(OpPattern::Scalar).norm_plan(plan);
        assert_eq!(norm_settings(NormOp::Layer, &scalar).unwrap(), (Some(plan), true));
        for bad in [Opts::auto().shape(LaunchShape::with_block(256)), Opts::auto().pattern(OpPattern::Pack)] {
            let e = norm_settings(NormOp::Softmax, &bad).unwrap_err();
            assert!(matches!(e, Error::Shape { kernel: "softmax", .. }), "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn one_norm_type_maps_between_paths() {
        let w = [1.0f32, 2.0];
        let host: Norm<&[f32], ()> = Norm::add_rms(&w[..1], (), &w[..], 0.5);
        let lens = host.map(|r| r.len(), |()| 7usize);
        assert_eq!(lens, Norm::AddRms { residual: 1, h: 7, weight: 2, eps: 0.5 });
        assert_eq!(lens.op(), NormOp::AddRms);
        let p = Norm::<usize>::layer(3, 4, 0.1).into_parts();
        assert_eq!((p.weight, p.bias, p.residual, p.h, p.eps), (Some(3), Some(4), None, None, 0.1));
        assert_eq!(Norm::<u8>::Softmax.as_ref().op(), NormOp::Softmax);
    }
}
