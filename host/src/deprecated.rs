//! The names removed since def71dd, kept for one release as deprecated shims
//! that forward to their replacements (CHANGELOG.md, "Migrating"). Hidden
//! from the docs; each one's note names what to use.

use kernels_gpu::ops::{BinaryOp, OpKind, OpPattern, UnaryOp};
use kernels_gpu::Dtype;

use crate::device::gpu::{Gpu, KernelResources, Stream};
use crate::device::pdl::Pdl;
use crate::error::Result;
use crate::graph::capture::Slot;
use crate::launch::opts::Opts;
use crate::launch::tuning::AutoPlan;
use crate::launch::variant::{LaunchShape, Variant};
use crate::memory::buffer::{AsView, AsViewMut, Element};
use crate::norm_plan::NormPlan;
use crate::norms::Norm;

/// The launch settings' old name.
#[deprecated(note = "use LaunchShape (same fields)")]
pub type LaunchConfig = LaunchShape;

/// A norm's old options; [`Opts`] carries them now (`From` converts).
#[deprecated(note = "use Opts: Opts::auto().norm_plan(plan).pattern(OpPattern::Scalar).pdl(pdl), passed as &opts")]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NormOptions {
    /// [`Opts::norm_plan`]'s plan.
    pub plan: Option<NormPlan>,
    /// `pattern: Some(OpPattern::Scalar)`.
    pub scalar: bool,
    /// [`Opts::pdl`]'s setting.
    pub pdl: Option<Pdl>,
}

#[allow(deprecated)]
impl From<NormOptions> for Opts {
    fn from(o: NormOptions) -> Opts {
        let opts = Opts { norm_plan: o.plan, pdl: o.pdl, ..Opts::auto() };
        if o.scalar {
            opts.pattern(OpPattern::Scalar)
        } else {
            opts
        }
    }
}

/// The graph's old norm operand type: [`Norm`] of [`Slot`]s.
#[deprecated(note = "use Norm<Slot<T>> (Norm::rms(w, eps), …)")]
#[doc(hidden)]
pub type NormSlots<T> = Norm<Slot<T>>;

/// Options of the old `_with` forms: a pattern and a launch shape.
fn with(pattern: OpPattern, shape: LaunchShape) -> Opts {
    Opts::auto().pattern(pattern).shape(shape)
}

#[doc(hidden)]
impl Gpu {
    /// `out = a + b`, the automatic choice.
    #[deprecated(note = "use gpu.binary(BinaryOp::Add, a, b, out, &stream)")]
    pub fn add_auto<'a, T: Element>(
        &self,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.binary(BinaryOp::Add, a, b, out, stream)
    }

    /// `out = a + b` with a launch shape.
    #[deprecated(note = "use gpu.binary_opts(BinaryOp::Add, a, b, out, &stream, &Opts::auto().shape(shape))")]
    pub fn add_auto_with<'a, T: Element>(
        &self,
        shape: LaunchShape,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.binary_opts(BinaryOp::Add, a, b, out, stream, &Opts::auto().shape(shape))
    }

    /// `a + b` of host slices.
    #[deprecated(note = "use gpukern::blocking::binary(&gpu, BinaryOp::Add, a, b)")]
    pub fn add_host<T: Element>(&self, a: &[T], b: &[T]) -> Result<Vec<T>> {
        crate::ops::blocking::binary(self, BinaryOp::Add, a, b)
    }

    /// `op(a, b)` of host slices.
    #[deprecated(note = "use gpukern::blocking::binary(&gpu, op, a, b)")]
    pub fn binary_host<T: Element>(&self, op: BinaryOp, a: &[T], b: &[T]) -> Result<Vec<T>> {
        crate::ops::blocking::binary(self, op, a, b)
    }

    /// `op(a)` of a host slice.
    #[deprecated(note = "use gpukern::blocking::unary(&gpu, op, a)")]
    pub fn unary_host<T: Element>(&self, op: UnaryOp, a: &[T]) -> Result<Vec<T>> {
        crate::ops::blocking::unary(self, op, a)
    }

    /// `alpha·a + beta·b` of host slices.
    #[deprecated(note = "use gpukern::blocking::axpby(&gpu, alpha, a, beta, b)")]
    pub fn axpby_host<T: Element>(&self, alpha: f32, a: &[T], beta: f32, b: &[T]) -> Result<Vec<T>> {
        crate::ops::blocking::axpby(self, alpha, a, beta, b)
    }

    /// Number of CUDA devices.
    #[deprecated(note = "use gpukern::device_count()")]
    pub fn device_count() -> Result<usize> {
        crate::device::gpu::device_count()
    }

    /// Page-locked host memory.
    #[deprecated(note = "use PinnedVec::new(&gpu, len)")]
    pub fn alloc_pinned<T: crate::memory::buffer::Pod>(&self, len: usize) -> Result<crate::PinnedVec<T>> {
        crate::PinnedVec::new(self, len)
    }

    /// A foreach add with its table uploaded once.
    #[deprecated(note = "use AddManyPlan::new(&gpu, ops)")]
    pub fn add_many_plan<'a, T: Element>(&self, ops: Vec<crate::Triple<'a, T>>) -> Result<crate::AddManyPlan<'a>> {
        crate::AddManyPlan::new(self, ops)
    }

    /// The add variant the automatic add runs.
    #[deprecated(note = "use gpu.plan(Call::binary(BinaryOp::Add, &a, &b, &out), &stream, &Opts::auto())")]
    pub fn auto_choice(&self, dtype: Dtype, n: usize, addrs: &[u64]) -> Variant {
        if addrs.iter().all(|x| x % 16 == 0) {
            AutoPlan::new(dtype, n, self.info().has_sm90()).variant
        } else {
            Variant::widest_for(dtype, addrs)
        }
    }

    /// The kernel the automatic choice runs, on a stream without PDL.
    #[deprecated(note = "use gpu.plan(Call::elementwise(kind, dtype, n, addrs), &stream, &Opts::auto())?.kernel")]
    pub fn op_choice(&self, kind: OpKind, dtype: Dtype, n: usize, addrs: &[u64]) -> Result<&'static str> {
        self.plan_op(kind, dtype, n, addrs, &Opts::auto(), Pdl::Off).map(|p| p.kernel)
    }

    /// `out = op(a, b)` with a pattern and a launch shape.
    #[deprecated(note = "use gpu.binary_opts(op, a, b, out, &stream, &Opts::auto().pattern(p).shape(s))")]
    #[allow(clippy::too_many_arguments)]
    pub fn binary_with<'a, T: Element>(
        &self,
        op: BinaryOp,
        pattern: OpPattern,
        shape: LaunchShape,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.binary_opts(op, a, b, out, stream, &with(pattern, shape))
    }

    /// `out = op(a)` with a pattern and a launch shape.
    #[deprecated(note = "use gpu.unary_opts(op, a, out, &stream, &Opts::auto().pattern(p).shape(s))")]
    pub fn unary_with<'a, T: Element>(
        &self,
        op: UnaryOp,
        pattern: OpPattern,
        shape: LaunchShape,
        a: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.unary_opts(op, a, out, stream, &with(pattern, shape))
    }

    /// `out = alpha·a + beta·b` with a pattern and a launch shape.
    #[deprecated(note = "use gpu.axpby_opts(alpha, a, beta, b, out, &stream, &Opts::auto().pattern(p).shape(s))")]
    #[allow(clippy::too_many_arguments)]
    pub fn axpby_with<'a, T: Element>(
        &self,
        pattern: OpPattern,
        shape: LaunchShape,
        alpha: f32,
        a: impl AsView<'a, T>,
        beta: f32,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.axpby_opts(alpha, a, beta, b, out, stream, &with(pattern, shape))
    }

    /// Registers, local memory and limits of one kernel.
    #[deprecated(note = "use gpu.studies().kernel_resources(name)")]
    pub fn kernel_resources(&self, name: &'static str) -> Result<KernelResources> {
        self.studies().kernel_resources(name)
    }

    /// Resident blocks per SM.
    #[deprecated(note = "use gpu.studies().blocks_per_sm(name, block)")]
    pub fn blocks_per_sm(&self, name: &'static str, block: u32) -> Result<u32> {
        self.studies().blocks_per_sm(name, block)
    }

    /// Resident blocks per SM with dynamic shared memory.
    #[deprecated(note = "use gpu.studies().blocks_per_sm_with_shared(name, block, shared)")]
    pub fn blocks_per_sm_with_shared(&self, name: &'static str, block: u32, shared: usize) -> Result<u32> {
        self.studies().blocks_per_sm_with_shared(name, block, shared)
    }

    /// Launches the empty kernel once.
    #[deprecated(note = "use gpu.studies().launch_empty(&stream)")]
    pub fn launch_empty(&self, stream: &Stream) -> Result<()> {
        self.studies().launch_empty(stream)
    }

    /// Queues a one-thread kernel that busy-waits `ns` nanoseconds.
    #[deprecated(note = "use gpu.studies().spin(&stream, ns)")]
    pub fn spin(&self, stream: &Stream, ns: u64) -> Result<()> {
        self.studies().spin(stream, ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)]
    fn old_norm_options_convert_to_opts() {
        use crate::norm_plan::NormStrategy;
        let plan = NormPlan { strategy: NormStrategy::Warp, block: 256, k: 1 };
        let old = NormOptions { plan: Some(plan), scalar: true, pdl: Some(Pdl::On) };
        let new = Opts::auto().norm_plan(plan).pattern(OpPattern::Scalar).pdl(Pdl::On);
        assert_eq!(Opts::from(old), new);
        assert_eq!(Opts::from(NormOptions::default()), Opts::auto());
    }
}
