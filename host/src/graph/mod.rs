//! CUDA graphs, recorded in one place: the builder and its slots
//! ([`GraphBuilder`], [`Slot`], [`Graph`]), what it records of the library's
//! operations, the norms and user kernels, and the add graphs of the studies.

pub(crate) mod adds;
pub(crate) mod capture;
mod glu;
pub(crate) mod norms;
pub(crate) mod user;

pub use adds::AddGraph;
pub use capture::{Graph, GraphBuilder, Slot};
pub use user::{GraphArg, GraphArgs, GraphSlots};
