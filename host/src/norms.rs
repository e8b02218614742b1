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

#[cfg(feature = "cudarc")]
mod cudarc;
mod plan;
#[cfg(feature = "cudarc")]
pub use cudarc::CudarcNorm;
pub use plan::{NormOrder, NormPlan, NormStrategy};

use kernels_gpu::norms::{chunk_lanes, cluster_kernel, norm_kernel, Family, FLAG_ALT, FLAG_VEC, FLAG_WARP};

use crate::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream};
use crate::raw::{self, NormIo, NormLaunch};

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
        self.norm_on(op, x.into_view(), y.into_view_mut(), rows, opts, stream.raw())
    }

    /// [`Gpu::norm`] on a raw stream of this `Gpu`'s context (the caller
    /// checked the stream).
    pub(crate) fn norm_on<'a, T: Element>(
        &self,
        op: Norm<'a, T>,
        x: View<'a, T>,
        mut y: ViewMut<'a, T>,
        rows: Rows,
        opts: NormOptions,
        stream: raw::Queue<'_>,
    ) -> Result<NormPlan> {
        let kind = op.op();
        let name = kind.name();
        let (family, alt) = kind.family();
        // The device's block limit of each kernel (its registers decide it).
        // The kernel of a plan (a cluster kernel only where the sm_90 module
        // is loaded) and its block limit (its registers decide it).
        let kernel_of = |p: NormPlan| match p.strategy {
            NormStrategy::Cluster => cluster_kernel(family, T::DTYPE, p.k).filter(|_| self.info().has_sm90()),
            _ => norm_kernel(family, T::DTYPE, p.k).map(|n| n.name),
        };
        let max_block = |p: NormPlan| {
            let r = kernel_of(p).and_then(|n| self.shared.kernel(n).ok()?.resources().ok());
            r.map_or(0, |r| r.max_threads_per_block)
        };
        // A cluster of more than 8 blocks (a non-portable size) only where the
        // device can place one (any failure: not chosen).
        let placeable = |p: NormPlan| {
            let segs = p.order(T::DTYPE, rows.cols).segments(rows.cols as u32);
            let fits = || {
                let _live = self.shared.bind().ok()?;
                raw::max_active_clusters(self.shared.func(kernel_of(p)?).ok()?, p.block, segs).ok()
            };
            p.strategy != NormStrategy::Cluster || segs <= 8 || fits().is_some_and(|c| c > 0)
        };
        let launchable = |p: NormPlan| p.block <= max_block(p) && placeable(p);
        let plan = opts.plan.unwrap_or_else(|| NormPlan::auto_within(T::DTYPE, rows.cols, launchable));
        let bad = |detail: String| Err(Error::Shape { kernel: name, detail });
        if rows.cols > MAX_COLS || rows.rows >= 1 << 31 {
            return bad(format!("{} rows of {} elements: at most 2^31 - 1 rows of 2^24", rows.rows, rows.cols));
        }
        if rows.x_pitch < rows.cols || rows.y_pitch < rows.cols {
            return bad(format!("pitches {} and {} below the row length {}", rows.x_pitch, rows.y_pitch, rows.cols));
        }
        let (mut weight, mut bias, mut residual, mut h, mut eps) = (None, None, None, None, 0.0);
        match op {
            Norm::Rms { weight: w, eps: e } => (weight, eps) = (Some(w), e),
            Norm::AddRms { residual: r, h: hh, weight: w, eps: e } => {
                (weight, residual, h, eps) = (Some(w), Some(r), Some(hh), e)
            }
            Norm::Layer { weight: w, bias: b, eps: e } => (weight, bias, eps) = (Some(w), Some(b), e),
            Norm::Softmax | Norm::LogSoftmax => {}
        }
        for (what, v) in [("weight", &weight), ("bias", &bias)] {
            if let Some(v) = v.filter(|v| v.len() != rows.cols) {
                return bad(format!("{what} has {} elements, the rows {}", v.len(), rows.cols));
            }
        }
        let owners = [Some(x.owner()), Some(y.owner()), weight.map(|v| v.owner()), bias.map(|v| v.owner())];
        let owners = owners.into_iter().chain([residual.map(|v| v.owner()), h.as_ref().map(|v| v.owner())]);
        self.check_buffers_owned(name, owners.flatten())?;
        plan.check(name, T::DTYPE, rows.cols)?;
        let Some(kernel) = kernel_of(plan) else {
            let has = format!("{}.{}", self.info().compute_capability.0, self.info().compute_capability.1);
            return Err(Error::Unsupported { kernel: "norm (cluster plan)", needs: "9.0", has });
        };
        let max = max_block(plan);
        if plan.block > max {
            return Err(Error::BlockSize { kernel: name, block: plan.block, max });
        }
        if rows.rows == 0 || rows.cols == 0 {
            return Ok(plan);
        }
        let order = plan.order(T::DTYPE, rows.cols);
        let lanes = chunk_lanes(T::DTYPE);
        let aligned = |a: u64| a.is_multiple_of(16);
        let mut addrs = vec![x.addr(), y.addr()];
        addrs.extend([weight, bias, residual].iter().flatten().map(|v| v.addr()));
        addrs.extend(h.as_ref().map(|v| v.addr()));
        let pitches = rows.x_pitch.is_multiple_of(lanes as usize) && rows.y_pitch.is_multiple_of(lanes as usize);
        let vec = !opts.scalar && pitches && addrs.into_iter().all(aligned);
        let warp = plan.strategy == NormStrategy::Warp;
        let flags = if warp { FLAG_WARP } else { 0 } | if vec { FLAG_VEC } else { 0 } | if alt { FLAG_ALT } else { 0 };
        let l = NormLaunch {
            name: kernel,
            func: self.shared.func(kernel)?,
            cluster: plan.strategy == NormStrategy::Cluster,
            block: plan.block,
            rows_per_block: if warp { plan.block / 32 } else { 1 },
            segs: order.segments(rows.cols as u32),
            seg: order.seg,
            flags,
            rows: rows.rows as u32,
            cols: rows.cols as u32,
            x_pitch: rows.x_pitch as u64,
            y_pitch: rows.y_pitch as u64,
            eps,
            lanes,
        };
        let io = NormIo { x: &x, r: residual.as_ref(), w: weight.as_ref(), b: bias.as_ref(), y: &mut y, h: h.as_mut() };
        let _live = self.shared.bind()?;
        // SAFETY: `l.func` was resolved by the plan's kernel name from this
        // Gpu's own modules (the norms table of kernels-gpu), and a cluster
        // plan is chosen only on sm_90, where that module is loaded.
        unsafe { raw::launch_norm(&l, family, io, stream) }?;
        Ok(plan)
    }
}
