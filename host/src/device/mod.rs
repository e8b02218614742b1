//! The device: [`Gpu`] (a device with every kernel resolved), [`Stream`],
//! the context they share, kernel names, and programmatic dependent launch
//! ([`Pdl`]). Every other folder builds on this one.

pub(crate) mod context;
pub(crate) mod gpu;
pub(crate) mod names;
pub(crate) mod pdl;

pub use gpu::{device_count, kernel_names, sm90_kernel_names, DeviceInfo, Gpu, KernelResources, Stream, PTX, PTX_SM90};
pub use pdl::Pdl;
