//! What a norm is and how it runs, without its operands: the operations by
//! name ([`NormOp`]) and the plans ([`NormPlan`], [`NormStrategy`],
//! [`NormOrder`]). A module of its own below `opts` (an [`crate::Opts`]
//! carries a plan) and `norms` (the calls), so neither depends on the other.

mod plan;
pub use plan::{NormOrder, NormPlan, NormStrategy};

use kernels_gpu::norms::Family;

/// The operations by name, without operands (reports, the CPU reference,
/// [`NormPlan::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormOp {
    /// [`crate::Norm::Rms`].
    Rms,
    /// [`crate::Norm::AddRms`].
    AddRms,
    /// [`crate::Norm::Layer`].
    Layer,
    /// [`crate::Norm::AddLayer`].
    AddLayer,
    /// [`crate::Norm::Softmax`].
    Softmax,
    /// [`crate::Norm::LogSoftmax`].
    LogSoftmax,
}

impl NormOp {
    /// Every operation.
    pub const ALL: [NormOp; 6] =
        [NormOp::Rms, NormOp::AddRms, NormOp::Layer, NormOp::AddLayer, NormOp::Softmax, NormOp::LogSoftmax];
    /// Name as in the report (`rms_norm`, `add_rms_norm`, …).
    pub const fn name(self) -> &'static str {
        match self {
            NormOp::Rms => "rms_norm",
            NormOp::AddRms => "add_rms_norm",
            NormOp::Layer => "layer_norm",
            NormOp::AddLayer => "add_layer_norm",
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
            NormOp::AddLayer => (Family::Layer, true),
            NormOp::Softmax => (Family::Softmax, false),
            NormOp::LogSoftmax => (Family::Softmax, true),
        }
    }
}
