//! The library's operations on device buffers: element-wise (`binary`,
//! `unary`, `axpby`, `apply`), the add family and foreach adds, gated
//! activations ([`GluIn`]), the math sweeps, and the blocking conveniences
//! ([`blocking`]).

pub(crate) mod add;
pub mod blocking;
pub(crate) mod elementwise;
pub(crate) mod glu;
pub(crate) mod many;
pub(crate) mod math;
pub(crate) mod plan;

pub use glu::GluIn;
pub use many::{AddManyPlan, Triple};
pub use plan::Call;
