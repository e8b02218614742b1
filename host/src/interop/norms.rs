//! [`crate::CudarcExt::norm_cudarc`]: the norms on cudarc's buffers and stream (feature
//! `cudarc`), for libraries built on cudarc (candle).
//!
//! The operands are cudarc's own buffer types only, through the sealed
//! [`CudarcInput`] / [`CudarcOutput`] of the element-wise interop, so the call
//! is safe: every address and length is a range cudarc allocated. As there,
//! each operand's context and the stream's are checked before any address is
//! taken, and cudarc's guards order the stream after earlier writes and record
//! this call's reads and writes when they drop, after the launch is queued.

use cudarc::driver::CudaStream;

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::interop::{input, output, CudarcInput, CudarcOutput, Fences};
use crate::launch::opts::Opts;
use crate::memory::buffer::Element;
use crate::norm_plan::NormPlan;
use crate::norms::{Norm, Rows};
use crate::raw;

/// [`Norm`] of cudarc buffers, the operands [`crate::CudarcExt::norm_cudarc`] takes:
/// read operands as `&dyn CudarcInput<T>`, `h` as `&mut dyn
/// CudarcOutput<T>`, so operands of different cudarc types (a `CudaSlice`
/// weight, a `CudaView` residual) mix. Built in the call's argument the
/// constructors coerce (`gpu.norm_cudarc(Norm::rms(&w, eps), …)`); a norm
/// built beforehand names this type: `let op: CudarcNorm<f32> =
/// Norm::rms(&w, eps);`.
pub type CudarcNorm<'a, T> = Norm<&'a dyn CudarcInput<T>, &'a mut dyn CudarcOutput<T>>;

impl Gpu {
    /// [`crate::CudarcExt::norm_cudarc`].
    pub(crate) fn cudarc_norm<T: Element>(
        &self,
        op: CudarcNorm<'_, T>,
        x: &impl CudarcInput<T>,
        y: &mut impl CudarcOutput<T>,
        rows: Rows,
        opts: &Opts,
        stream: &CudaStream,
    ) -> Result<NormPlan> {
        let name = op.op().name();
        // The stream and every operand in this Gpu's context, before any address is taken.
        self.check_cudarc_context(name, stream.context())?;
        self.check_cudarc_context(name, x.cudarc_context())?;
        self.check_cudarc_context(name, y.cudarc_context())?;
        let p = op.as_ref().into_parts();
        let reads = [p.residual, p.weight, p.bias].into_iter().flatten().map(|r| r.cudarc_context());
        for ctx in reads.chain(p.h.map(|h| h.cudarc_context())) {
            self.check_cudarc_context(name, ctx)?;
        }
        // The guards make `stream` wait for earlier writes now and record this
        // call's reads and writes when they drop, after the launch is queued.
        let mut guards = Fences::new(stream);
        let xv = input(self, x, stream, &mut guards)?;
        let guards = std::cell::RefCell::new(guards);
        let op = op.try_map(
            |r| input(self, r, stream, &mut guards.borrow_mut()),
            |h| output(self, h, stream, &mut guards.borrow_mut()),
        )?;
        let mut guards = guards.into_inner();
        let yv = output(self, y, stream, &mut guards)?;
        // A cudarc stream has no PDL setting of ours: the automatic one, as the
        // element-wise interop's.
        let opts = opts.pdl(opts.pdl.unwrap_or_default());
        self.norm_on(op, xv, yv, rows, &opts, raw::Queue::untracked(stream.cu_stream()))
    }
}
