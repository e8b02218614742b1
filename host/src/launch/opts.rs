//! The options of one call ([`Opts`]), element-wise or norm, and what an
//! element-wise call launches ([`Plan`]). Every option defaults to the
//! automatic choice.

use kernels_gpu::ops::{OpKernel, OpKind, OpPattern};
use kernels_gpu::Dtype;

use crate::device::gpu::Gpu;
use crate::device::pdl::Pdl;
use crate::launch::operands::{split_for, AutoSplit};
use crate::launch::variant::LaunchShape;
use crate::norm_plan::NormPlan;

/// How one call launches: the one options value of the element-wise calls
/// (`*_opts`: [`crate::Gpu::binary_opts`], [`crate::Gpu::glu_opts`], …,
/// [`crate::Gpu::plan`]), of user operations
/// ([`crate::CustomUnary::run_opts`]) and of the norms ([`crate::Gpu::norm`],
/// [`crate::GraphBuilder::norm`], `CudarcExt::norm_cudarc`). [`Opts::default`]
/// (= [`Opts::auto`]) is the automatic choice, which the plain calls use.
/// Built by chaining: `Opts::auto().pattern(OpPattern::Scalar)`,
/// `Opts::auto().norm_plan(plan).pdl(Pdl::On)`.
///
/// How each field acts on each kind of call:
///
/// | field | element-wise call (a user operation alike) | norm |
/// |---|---|---|
/// | `pattern` | that kernel, launched plainly (no PDL twin); a user operation has `Scalar` and `Pack` only | `Scalar`: element accesses where 128-bit ones are possible (same bits, PDL decided as usual); `Pack` or `PackSm90`: an error |
/// | `shape` | that block and grid cap, launched plainly (no PDL twin) | an error (a norm's launch is its plan) |
/// | `pdl` | the PDL setting, used by the automatic choice only | the PDL setting, with or without `norm_plan` ([`NormPlan::uses_pdl`]) |
/// | `norm_plan` | ignored | that plan in place of the automatic one |
///
/// `pdl` `None` is the stream's setting ([`crate::Gpu::stream_with`]),
/// in a graph the builder's ([`crate::GraphBuilder::set_pdl`]), on a cudarc
/// stream [`Pdl::Auto`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Opts {
    /// The kernel's access pattern; `None`: chosen by alignment and size.
    pub pattern: Option<OpPattern>,
    /// Block size and grid cap (element-wise calls); `None`: the tuned ones.
    pub shape: Option<LaunchShape>,
    /// Programmatic dependent launch for this call (an element-wise call's
    /// automatic choice only: an explicit pattern or shape launches
    /// plainly); `None`: the stream's setting.
    pub pdl: Option<Pdl>,
    /// A norm's plan in place of the automatic one ([`NormPlan::auto_rows`]);
    /// element-wise calls ignore it.
    pub norm_plan: Option<NormPlan>,
}

impl Opts {
    /// The automatic choice (the default).
    pub fn auto() -> Opts {
        Opts::default()
    }

    /// This access pattern's kernel, e.g. `OpPattern::Scalar`, in place of
    /// the automatic choice (the add's rows are the seed's kernels).
    pub fn pattern(mut self, pattern: OpPattern) -> Opts {
        self.pattern = Some(pattern);
        self
    }

    /// This block size and grid cap in place of the tuned ones.
    pub fn shape(mut self, shape: LaunchShape) -> Opts {
        self.shape = Some(shape);
        self
    }

    /// This PDL setting for the call, in place of the stream's.
    pub fn pdl(mut self, pdl: Pdl) -> Opts {
        self.pdl = Some(pdl);
        self
    }

    /// This plan for a norm, in place of the automatic one (studies; the
    /// call errors when the plan cannot hold the rows).
    pub fn norm_plan(mut self, plan: NormPlan) -> Opts {
        self.norm_plan = Some(plan);
        self
    }
}

/// What one element-wise call launches ([`crate::Gpu::plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plan {
    /// The kernel that does the bulk of the work: the PDL twin
    /// (`<kernel>_pdl`) when that is what runs.
    pub kernel: &'static str,
    /// The scalar kernel and the number of elements it does first, when all
    /// operands are misaligned alike and the rest is done by `kernel`.
    pub head: Option<(&'static str, usize)>,
    /// True when `kernel` is launched with programmatic dependent launch.
    pub pdl: bool,
    /// For a norm, the plan it runs (strategy, block, …; `None` for every
    /// other call).
    pub norm: Option<NormPlan>,
}

impl Plan {
    /// One kernel over everything.
    pub(crate) fn one(kernel: &'static str) -> Plan {
        Plan { kernel, head: None, pdl: false, norm: None }
    }
}

/// What the automatic choice launches for a built-in operation.
pub(crate) enum OpChoice {
    /// The pack kernel's PDL twin.
    Twin(&'static OpKernel),
    /// The pack kernel, the scalar kernel, or both split.
    Split(AutoSplit),
}

impl Gpu {
    /// The PDL twin to launch instead of the automatic choice, when `pdl` says
    /// so for `n` elements at operand addresses `addrs` (all 16-byte aligned:
    /// the twins are 128-bit kernels, and a split head would be a second
    /// launch). `None`: launch as without PDL.
    pub(crate) fn pdl_choice(
        &self,
        pdl: Pdl,
        kind: OpKind,
        dtype: Dtype,
        n: usize,
        addrs: &[u64],
    ) -> Option<&'static OpKernel> {
        if n == 0 || !addrs.iter().all(|a| a % 16 == 0) {
            return None;
        }
        let k = crate::device::pdl::twin(kind, dtype)?;
        pdl.pays(self.info(), n, k.lanes()).then_some(k)
    }

    /// The automatic choice's decision for a built-in operation other than
    /// the add (whose plan is [`Gpu::add_decide`]).
    pub(crate) fn op_decide(
        &self,
        kind: OpKind,
        dtype: Dtype,
        n: usize,
        addrs: &[u64],
        pdl: Pdl,
        user: bool,
    ) -> OpChoice {
        match (!user).then(|| self.pdl_choice(pdl, kind, dtype, n, addrs)).flatten() {
            Some(k) => OpChoice::Twin(k),
            None => OpChoice::Split(split_for(addrs, n, dtype.size(), 16)),
        }
    }
}
