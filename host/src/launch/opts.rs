//! The options of one element-wise call ([`Opts`]) and what the call
//! launches ([`Plan`]). Every option defaults to the automatic choice.

use kernels_gpu::ops::{OpKernel, OpKind, OpPattern};
use kernels_gpu::Dtype;

use crate::device::gpu::Gpu;
use crate::device::pdl::Pdl;
use crate::launch::operands::{split_for, AutoSplit};
use crate::launch::variant::LaunchShape;

/// How one element-wise call launches; [`Opts::default`] (= [`Opts::auto`])
/// is the automatic choice, which the plain calls ([`crate::Gpu::binary`],
/// …) use. Built by chaining: `Opts::auto().pattern(OpPattern::Scalar)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Opts {
    /// The kernel's access pattern; `None`: chosen by alignment and size.
    pub pattern: Option<OpPattern>,
    /// Block size and grid cap; `None`: the tuned ones.
    pub shape: Option<LaunchShape>,
    /// Programmatic dependent launch for this call (automatic choice only;
    /// an explicit pattern launches plainly); `None`: the stream's setting.
    pub pdl: Option<Pdl>,
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
}

impl Plan {
    /// One kernel over everything.
    pub(crate) fn one(kernel: &'static str) -> Plan {
        Plan { kernel, head: None, pdl: false }
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
