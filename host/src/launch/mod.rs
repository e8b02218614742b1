//! How a call launches: its options ([`Opts`]) and plan ([`Plan`]), the
//! tuned automatic choices ([`AutoPlan`]), launch shapes ([`LaunchShape`])
//! and the seed's add variants, and the element-wise operands' checks.

pub(crate) mod operands;
pub(crate) mod opts;
pub(crate) mod tuning;
pub(crate) mod variant;

pub use opts::{Opts, Plan};
pub use tuning::{AutoPlan, BulkConfig};
pub use variant::{LaunchShape, Variant};
