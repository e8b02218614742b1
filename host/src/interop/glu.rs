//! [`crate::CudarcExt::glu_cudarc`] and [`crate::CudarcExt::glu_split_cudarc`]: the gated activations
//! on cudarc's buffers and stream (feature `cudarc`), for libraries built on
//! cudarc (candle). As the element-wise interop: the operands are cudarc's
//! own buffer types (sealed [`CudarcInput`] / [`CudarcOutput`]), every
//! context is checked before an address is taken, and cudarc's guards order
//! the stream after earlier writes and record this call's reads and write.

use cudarc::driver::CudaStream;
use kernels_gpu::glu::GluOp;

use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::interop::{input, output, CudarcInput, CudarcOutput, Fences};
use crate::launch::opts::Opts;
use crate::memory::buffer::Element;
use crate::norms::Rows;
use crate::ops::glu::{split_halves, GluRows};
use crate::raw;

impl Gpu {
    /// [`Gpu::glu`] on cudarc buffers, queued on a cudarc stream with the
    /// automatic choice ([`crate::Pdl::Auto`]): no copy, no synchronisation.
    /// The stream and every buffer must be of this device's primary context
    /// ([`Error::ForeignContext`] otherwise, nothing queued).
    pub(crate) fn cudarc_glu<T: Element>(
        &self,
        op: GluOp,
        gate: &impl CudarcInput<T>,
        up: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()> {
        let name = op.name();
        for ctx in [stream.context(), gate.cudarc_context(), up.cudarc_context(), out.cudarc_context()] {
            self.check_cudarc_context(name, ctx)?;
        }
        let mut guards = Fences::new(stream);
        let (g, u) = (input(self, gate, stream, &mut guards)?, input(self, up, stream, &mut guards)?);
        let o = output(self, out, stream, &mut guards)?;
        if g.len() != u.len() || g.len() != o.len() {
            return Err(Error::LengthMismatch { kernel: name, a: g.len(), b: u.len(), out: o.len() });
        }
        let shape = GluRows::flat(o.len());
        let queue = raw::Queue::untracked(stream.cu_stream());
        self.glu_on(op, g, u, o, shape, &Opts::auto(), crate::Pdl::Auto, queue).map(|_| ())
    }

    /// [`Gpu::glu`] with [`crate::GluIn::Split`] on cudarc buffers (as
    /// [`crate::CudarcExt::glu_cudarc`]).
    pub(crate) fn cudarc_glu_split<T: Element>(
        &self,
        op: GluOp,
        x: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        rows: Rows,
        stream: &CudaStream,
    ) -> Result<()> {
        let name = op.name();
        for ctx in [stream.context(), x.cudarc_context(), out.cudarc_context()] {
            self.check_cudarc_context(name, ctx)?;
        }
        let shape = GluRows::split(op, rows)?;
        let mut guards = Fences::new(stream);
        let (xv, o) = (input(self, x, stream, &mut guards)?, output(self, out, stream, &mut guards)?);
        let (g, u) = split_halves(op, xv, shape)?;
        let queue = raw::Queue::untracked(stream.cu_stream());
        self.glu_on(op, g, u, o, shape, &Opts::auto(), crate::Pdl::Auto, queue).map(|_| ())
    }
}
