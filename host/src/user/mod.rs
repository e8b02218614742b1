//! Your own kernels: modules built by gpukern-build ([`BuiltPtx`],
//! [`Module`]), their element-wise operations ([`CustomUnary`],
//! [`CustomBinary`]) and typed kernels ([`TypedKernel`]), with the
//! signature checks and the launch path they share.

pub(crate) mod built;
pub(crate) mod custom;
pub(crate) mod launch;
pub(crate) mod module;
pub(crate) mod signature;
pub(crate) mod typed;

pub use built::BuiltPtx;
pub use custom::{CustomBinary, CustomUnary};
pub use launch::{Arg, Launch};
pub use module::{CustomPattern, Module};
pub use typed::{ArgSlots, HostArg, HostArgs, HostElem, ParamList, ParamOf, TypedKernel};
