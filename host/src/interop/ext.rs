//! [`CudarcExt`]: gpukern's operations on cudarc's buffers and streams
//! (feature `cudarc`), for libraries built on cudarc, such as candle. The
//! methods live on a trait of their own, so that `Gpu`'s own surface is the
//! library's; `use gpukern::CudarcExt` brings them into scope.
//!
//! Every call takes cudarc's own buffer types (the sealed
//! [`CudarcInput`] / [`CudarcOutput`]), checks that the stream and every
//! buffer are of this `Gpu`'s context before an address is taken
//! ([`Error::ForeignContext`](crate::Error::ForeignContext) otherwise,
//! nothing queued), and queues on the cudarc stream with the automatic choice
//! ([`Pdl::Auto`](crate::Pdl::Auto)): no copy, no synchronisation. cudarc's
//! guards order the stream after earlier uses of the buffers and record this
//! call's reads and writes ([`crate::interop`]'s ordering notes).
//!
//! ```no_run
//! use gpukern::{BinaryOp, CudarcExt, Gpu, UnaryOp};
//! let gpu = Gpu::new(0)?;
//! let ctx = cudarc::driver::CudaContext::new(0).expect("cudarc context");
//! let stream = ctx.default_stream();
//! let a = stream.clone_htod(&[1.0f32, -2.0, 3.0]).expect("upload");
//! let mut out = stream.alloc_zeros::<f32>(3).expect("alloc");
//! gpu.binary_cudarc(BinaryOp::Add, &a, &a, &mut out, &stream)?;
//! gpu.unary_cudarc(UnaryOp::Relu, &a, &mut out, &stream)?;
//! # Ok::<(), gpukern::Error>(())
//! ```

use cudarc::driver::{CudaSlice, CudaStream};
use kernels_gpu::glu::GluOp;
use kernels_gpu::ops::{BinaryOp, OpKind, UnaryOp};

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::interop::norms::CudarcNorm;
use crate::interop::{CudarcInput, CudarcOutput};
use crate::launch::opts::Opts;
use crate::memory::buffer::Element;
use crate::norm_plan::NormPlan;
use crate::norms::Rows;

mod sealed {
    /// Only [`crate::Gpu`] implements the extension.
    pub trait Sealed {}
    impl Sealed for crate::Gpu {}
}

/// gpukern's operations on cudarc buffers (`CudaSlice`, `CudaView`,
/// `CudaViewMut`), queued on a cudarc stream of this device's primary
/// context (module docs). Sealed: implemented for [`Gpu`] only.
pub trait CudarcExt: sealed::Sealed {
    /// `out = op(a, b)` ([`Gpu::binary`]'s operation and choice). Errors
    /// (nothing queued): lengths differ; a stream or buffer of another
    /// context. What it launches: [`Gpu::plan`] of the same operands on a
    /// new stream (a cudarc stream counts as [`crate::Pdl::Auto`]).
    fn binary_cudarc<T: Element>(
        &self,
        op: BinaryOp,
        a: &impl CudarcInput<T>,
        b: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()>;

    /// `out = op(a)` ([`Gpu::unary`]). Errors as [`CudarcExt::binary_cudarc`].
    fn unary_cudarc<T: Element>(
        &self,
        op: UnaryOp,
        a: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()>;

    /// `out = alpha·a + beta·b` ([`Gpu::axpby`]). Errors as
    /// [`CudarcExt::binary_cudarc`].
    fn axpby_cudarc<T: Element>(
        &self,
        alpha: f32,
        a: &impl CudarcInput<T>,
        beta: f32,
        b: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()>;

    /// `out = act(gate) · up` element by element ([`Gpu::glu`] with
    /// [`GluIn::Pair`](crate::GluIn::Pair)). Errors as
    /// [`CudarcExt::binary_cudarc`].
    fn glu_cudarc<T: Element>(
        &self,
        op: GluOp,
        gate: &impl CudarcInput<T>,
        up: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()>;

    /// `out = act(gate) · up` over rows `[gate | up]` of `x` ([`Gpu::glu`]
    /// with [`GluIn::Split`](crate::GluIn::Split): the same rows and
    /// errors).
    fn glu_split_cudarc<T: Element>(
        &self,
        op: GluOp,
        x: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        rows: Rows,
        stream: &CudaStream,
    ) -> Result<()>;

    /// [`Gpu::norm`] on cudarc buffers, queued on a cudarc stream: no copy and
    /// no synchronisation. The operands are a [`Norm`](crate::Norm) of cudarc buffers
    /// (`CudaSlice`, `CudaView`, `CudaViewMut`; [`CudarcNorm`](crate::CudarcNorm)):
    /// `Norm::rms(&weight, eps)`, `Norm::add_rms(&residual, &mut h, &weight,
    /// eps)`, …. The stream and
    /// every buffer must be of this device's primary context
    /// ([`crate::Error::ForeignContext`] otherwise, nothing queued); the
    /// other errors are [`Gpu::norm`]'s. `opts` as there, its `pdl` `None`
    /// here [`crate::Pdl::Auto`] (a cudarc stream has no setting of ours).
    /// Returns the plan that ran.
    fn norm_cudarc<T: Element>(
        &self,
        op: CudarcNorm<'_, T>,
        x: &impl CudarcInput<T>,
        y: &mut impl CudarcOutput<T>,
        rows: Rows,
        opts: &Opts,
        stream: &CudaStream,
    ) -> Result<NormPlan>;

    /// Queues the one-thread spin kernel
    /// ([`Studies::spin`](crate::Studies::spin)) for `ns` nanoseconds: a
    /// timing harness on another library's stream puts it before its first
    /// event, so that the events time the GPU's work while the host queues
    /// the calls. It touches no memory. Errors: a stream of another context.
    fn spin_cudarc(&self, stream: &CudaStream, ns: u64) -> Result<()>;
}

impl CudarcExt for Gpu {
    fn binary_cudarc<T: Element>(
        &self,
        op: BinaryOp,
        a: &impl CudarcInput<T>,
        b: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()> {
        self.cudarc_map(OpKind::Binary(op), a, Some(b), out, None, stream)
    }

    fn unary_cudarc<T: Element>(
        &self,
        op: UnaryOp,
        a: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()> {
        self.cudarc_map(OpKind::Unary(op), a, None::<&CudaSlice<T>>, out, None, stream)
    }

    fn axpby_cudarc<T: Element>(
        &self,
        alpha: f32,
        a: &impl CudarcInput<T>,
        beta: f32,
        b: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()> {
        self.cudarc_map(OpKind::Axpby, a, Some(b), out, Some((alpha, beta)), stream)
    }

    fn glu_cudarc<T: Element>(
        &self,
        op: GluOp,
        gate: &impl CudarcInput<T>,
        up: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        stream: &CudaStream,
    ) -> Result<()> {
        self.cudarc_glu(op, gate, up, out, stream)
    }

    fn glu_split_cudarc<T: Element>(
        &self,
        op: GluOp,
        x: &impl CudarcInput<T>,
        out: &mut impl CudarcOutput<T>,
        rows: Rows,
        stream: &CudaStream,
    ) -> Result<()> {
        self.cudarc_glu_split(op, x, out, rows, stream)
    }

    fn norm_cudarc<T: Element>(
        &self,
        op: CudarcNorm<'_, T>,
        x: &impl CudarcInput<T>,
        y: &mut impl CudarcOutput<T>,
        rows: Rows,
        opts: &Opts,
        stream: &CudaStream,
    ) -> Result<NormPlan> {
        self.cudarc_norm(op, x, y, rows, opts, stream)
    }

    fn spin_cudarc(&self, stream: &CudaStream, ns: u64) -> Result<()> {
        self.check_cudarc_context("spin", stream.context())?;
        // The stream is of this Gpu's context (checked above); the borrow
        // keeps it alive for the call.
        self.spin_on(crate::raw::Queue::untracked(stream.cu_stream()), ns)
    }
}
