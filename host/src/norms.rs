//! Row reductions along the last dimension: RMSNorm, the fused residual add
//! with RMSNorm, LayerNorm, softmax and log-softmax, in f32, f16 and bf16
//! with f32 accumulation ([`Gpu::norm`]).
//!
//! Rows are described by [`Rows`]: `rows` rows of `cols` elements, the input
//! rows every `x_pitch` elements and the output rows every `y_pitch`, so a
//! slice of a larger tensor (any element offset, any row stride at least the
//! row length) needs no copy. Each plan ([`NormPlan`]) reduces in one fixed
//! order ([`NormOrder`]): results never change from run to run, and
//! [`crate::reference::norms`] replays the order on the CPU bit for bit.
//!
//! ```no_run
//! use gpukern::{Gpu, Norm, NormOptions, Rows};
//! let gpu = Gpu::new(0)?;
//! let s = gpu.stream()?;
//! let x = gpu.upload(&vec![1.0f32; 8 * 4096])?;
//! let w = gpu.upload(&vec![1.0f32; 4096])?;
//! let mut y = gpu.alloc::<f32>(8 * 4096)?;
//! let op = Norm::Rms { weight: w.view(), eps: 1e-6 };
//! gpu.norm(op, &x, &mut y, Rows::contiguous(8, 4096), NormOptions::default(), &s)?;
//! # Ok::<(), gpukern::Error>(())
//! ```

mod launch;
mod plan;
pub use plan::{NormOrder, NormPlan, NormStrategy};

use kernels_gpu::norms::Family;

use crate::device::gpu::{Gpu, Stream};
use crate::device::pdl::Pdl;
use crate::error::Result;
use crate::memory::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::raw::{self, NormIo, NormSpans};

/// The operation and the operands beside `x` and `y` it reads or writes.
pub enum Norm<'a, T: Element> {
    /// `y = x / sqrt(mean(x²) + eps) · weight`.
    Rms {
        /// `cols` elements.
        weight: View<'a, T>,
        /// Added to the mean square.
        eps: f32,
    },
    /// `h = x + residual` (rounded to `T`), then `y = rms_norm(h)`: the
    /// transformer block's pattern. `residual` has the input layout, `h` the
    /// output layout.
    AddRms {
        /// Added to `x`.
        residual: View<'a, T>,
        /// Receives `x + residual`.
        h: ViewMut<'a, T>,
        /// `cols` elements.
        weight: View<'a, T>,
        /// Added to the mean square.
        eps: f32,
    },
    /// `y = (x - mean) / sqrt(var + eps) · weight + bias` (biased variance).
    Layer {
        /// `cols` elements.
        weight: View<'a, T>,
        /// `cols` elements.
        bias: View<'a, T>,
        /// Added to the variance.
        eps: f32,
    },
    /// `y = exp(x - max) / Σ exp(x - max)`.
    Softmax,
    /// `y = (x - max) - log Σ exp(x - max)`.
    LogSoftmax,
}

/// The operations by name, without operands (reports, the CPU reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormOp {
    /// [`Norm::Rms`].
    Rms,
    /// [`Norm::AddRms`].
    AddRms,
    /// [`Norm::Layer`].
    Layer,
    /// [`Norm::Softmax`].
    Softmax,
    /// [`Norm::LogSoftmax`].
    LogSoftmax,
}

impl NormOp {
    /// Every operation.
    pub const ALL: [NormOp; 5] = [NormOp::Rms, NormOp::AddRms, NormOp::Layer, NormOp::Softmax, NormOp::LogSoftmax];
    /// Name as in the report (`rms_norm`, `add_rms_norm`, …).
    pub const fn name(self) -> &'static str {
        match self {
            NormOp::Rms => "rms_norm",
            NormOp::AddRms => "add_rms_norm",
            NormOp::Layer => "layer_norm",
            NormOp::Softmax => "softmax",
            NormOp::LogSoftmax => "log_softmax",
        }
    }
    /// The kernel family and whether its variant flag is set.
    pub(crate) const fn family(self) -> (Family, bool) {
        match self {
            NormOp::Rms => (Family::Rms, false),
            NormOp::AddRms => (Family::Rms, true),
            NormOp::Layer => (Family::Layer, false),
            NormOp::Softmax => (Family::Softmax, false),
            NormOp::LogSoftmax => (Family::Softmax, true),
        }
    }
}

impl<T: Element> Norm<'_, T> {
    /// The operation's name.
    pub fn op(&self) -> NormOp {
        match self {
            Norm::Rms { .. } => NormOp::Rms,
            Norm::AddRms { .. } => NormOp::AddRms,
            Norm::Layer { .. } => NormOp::Layer,
            Norm::Softmax => NormOp::Softmax,
            Norm::LogSoftmax => NormOp::LogSoftmax,
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

/// Overrides for studies; the default is the automatic plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NormOptions {
    /// A plan instead of [`NormPlan::auto`].
    pub plan: Option<NormPlan>,
    /// Element accesses even where 128-bit ones are possible (same bits).
    pub scalar: bool,
    /// Programmatic dependent launch for this call ([`Gpu::norm_pdl`]: the
    /// PDL twin, the same bits); `None`: the stream's setting (a graph's:
    /// the builder's).
    pub pdl: Option<Pdl>,
}

/// Longest row: its length is exact in f32 (the divisions by `n`).
pub const MAX_COLS: usize = 1 << 24;

impl Gpu {
    /// Queues `op` over the rows of `x` into `y` on `stream` and returns the
    /// plan it ran. Empty (`rows` or `cols` 0): nothing queued.
    ///
    /// Errors, with nothing queued: `cols` above [`MAX_COLS`] or `rows` at or
    /// above 2^31; a pitch below `cols`; a view shorter than its rows need;
    /// a weight or bias whose length is not `cols`; an operand not aligned to
    /// its element; a plan that cannot hold the rows; buffers or stream of
    /// another `Gpu`.
    pub fn norm<'a, T: Element>(
        &self,
        op: Norm<'a, T>,
        x: impl AsView<'a, T>,
        y: impl AsViewMut<'a, T>,
        rows: Rows,
        opts: NormOptions,
        stream: &Stream,
    ) -> Result<NormPlan> {
        self.check_stream_owned(op.op().name(), stream)?;
        let opts = NormOptions { pdl: Some(opts.pdl.unwrap_or(stream.pdl())), ..opts };
        self.norm_on(op, x.into_view(), y.into_view_mut(), rows, opts, stream.raw())
    }

    /// [`Gpu::norm`] on a raw stream of this `Gpu`'s context (the caller
    /// checked the stream), PDL as `opts.pdl` says ([`Gpu::norm_pdl`]): the
    /// caller resolved it (the call's, else its stream's or builder's
    /// setting; `None` is [`Pdl::Auto`]).
    pub(crate) fn norm_on<'a, T: Element>(
        &self,
        op: Norm<'a, T>,
        x: View<'a, T>,
        mut y: ViewMut<'a, T>,
        rows: Rows,
        opts: NormOptions,
        stream: raw::Queue<'_>,
    ) -> Result<NormPlan> {
        let (kind, pdl) = (op.op(), opts.pdl.unwrap_or_default());
        let (mut weight, mut bias, mut residual, mut h, mut eps) = (None, None, None, None, 0.0);
        match op {
            Norm::Rms { weight: w, eps: e } => (weight, eps) = (Some(w), e),
            Norm::AddRms { residual: r, h: hh, weight: w, eps: e } => {
                (weight, residual, h, eps) = (Some(w), Some(r), Some(hh), e)
            }
            Norm::Layer { weight: w, bias: b, eps: e } => (weight, bias, eps) = (Some(w), Some(b), e),
            Norm::Softmax | Norm::LogSoftmax => {}
        }
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
