//! [`Gpu::norm_cudarc`]: the norms on cudarc's buffers and stream (feature
//! `cudarc`), for libraries built on cudarc (candle).
//!
//! The operands are cudarc's own buffer types only, through the sealed
//! [`CudarcInput`] / [`CudarcOutput`] of the element-wise interop, so the call
//! is safe: every address and length is a range cudarc allocated. As there,
//! each operand's context and the stream's are checked before any address is
//! taken, and cudarc's guards order the stream after earlier writes and record
//! this call's reads and writes when they drop, after the launch is queued.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::interop::{input, output, CudarcInput, CudarcOutput, Fences};
use crate::memory::buffer::Element;
use crate::norms::{Norm, NormOptions, NormPlan, Rows};
use crate::raw;

/// The operation and its operands beside `x` and `y`, as cudarc buffers
/// (`CudaSlice`, `CudaView`, `CudaViewMut`): [`Norm`]'s shape.
pub enum CudarcNorm<'a, T> {
    /// [`Norm::Rms`].
    Rms { weight: &'a dyn CudarcInput<T>, eps: f32 },
    /// [`Norm::AddRms`]: `h` receives `x + residual`.
    AddRms {
        residual: &'a dyn CudarcInput<T>,
        h: &'a mut dyn CudarcOutput<T>,
        weight: &'a dyn CudarcInput<T>,
        eps: f32,
    },
    /// [`Norm::Layer`].
    Layer { weight: &'a dyn CudarcInput<T>, bias: &'a dyn CudarcInput<T>, eps: f32 },
    /// [`Norm::Softmax`].
    Softmax,
    /// [`Norm::LogSoftmax`].
    LogSoftmax,
}

impl Gpu {
    /// [`Gpu::norm`] on cudarc buffers, queued on a cudarc stream: no copy and
    /// no synchronisation. The stream and every buffer must be of this
    /// device's primary context ([`crate::Error::ForeignContext`] otherwise,
    /// nothing queued); the other errors are [`Gpu::norm`]'s. Returns the plan
    /// that ran.
    pub fn norm_cudarc<T: Element>(
        &self,
        op: CudarcNorm<'_, T>,
        x: &impl CudarcInput<T>,
        y: &mut impl CudarcOutput<T>,
        rows: Rows,
        opts: NormOptions,
        stream: &CudaStream,
    ) -> Result<NormPlan> {
        let name = op.name();
        // The stream and every operand in this Gpu's context, before any address is taken.
        self.check_cudarc_context(name, stream.context())?;
        self.check_cudarc_context(name, x.cudarc_context())?;
        self.check_cudarc_context(name, y.cudarc_context())?;
        for ctx in op.contexts() {
            self.check_cudarc_context(name, ctx)?;
        }
        // The guards make `stream` wait for earlier writes now and record this
        // call's reads and writes when they drop, after the launch is queued.
        let mut guards = Fences::new(stream);
        let xv = input(self, x, stream, &mut guards)?;
        let op = match op {
            CudarcNorm::Rms { weight, eps } => Norm::Rms { weight: input(self, weight, stream, &mut guards)?, eps },
            CudarcNorm::AddRms { residual, h, weight, eps } => Norm::AddRms {
                residual: input(self, residual, stream, &mut guards)?,
                weight: input(self, weight, stream, &mut guards)?,
                h: output(self, h, stream, &mut guards)?,
                eps,
            },
            CudarcNorm::Layer { weight, bias, eps } => Norm::Layer {
                weight: input(self, weight, stream, &mut guards)?,
                bias: input(self, bias, stream, &mut guards)?,
                eps,
            },
            CudarcNorm::Softmax => Norm::Softmax,
            CudarcNorm::LogSoftmax => Norm::LogSoftmax,
        };
        let yv = output(self, y, stream, &mut guards)?;
        // A cudarc stream has no PDL setting of ours: the automatic one, as the
        // element-wise interop's.
        let opts = NormOptions { pdl: Some(opts.pdl.unwrap_or_default()), ..opts };
        self.norm_on(op, xv, yv, rows, opts, raw::Queue::untracked(stream.cu_stream()))
    }
}

impl<T> CudarcNorm<'_, T> {
    /// The operation's name.
    fn name(&self) -> &'static str {
        match self {
            CudarcNorm::Rms { .. } => "rms_norm",
            CudarcNorm::AddRms { .. } => "add_rms_norm",
            CudarcNorm::Layer { .. } => "layer_norm",
            CudarcNorm::Softmax => "softmax",
            CudarcNorm::LogSoftmax => "log_softmax",
        }
    }
    /// The contexts of the operands beside `x` and `y`.
    fn contexts(&self) -> Vec<&Arc<CudaContext>> {
        match self {
            CudarcNorm::Rms { weight, .. } => vec![weight.cudarc_context()],
            CudarcNorm::AddRms { residual, h, weight, .. } => {
                vec![residual.cudarc_context(), h.cudarc_context(), weight.cudarc_context()]
            }
            CudarcNorm::Layer { weight, bias, .. } => vec![weight.cudarc_context(), bias.cudarc_context()],
            CudarcNorm::Softmax | CudarcNorm::LogSoftmax => vec![],
        }
    }
}
