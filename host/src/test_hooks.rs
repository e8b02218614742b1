//! Test support (feature `test-hooks`, hidden from the docs): what the
//! library's own tests need and users do not. Not part of the API.

use crate::device::gpu::{Gpu, Stream};
use crate::error::Result;
use crate::raw;

/// (allocations, bytes) of device memory this process holds through this
/// crate now, every `Gpu` together (the leak test counts these rather than
/// the device's free memory, which other processes move).
pub fn live_allocations() -> (usize, usize) {
    raw::live_allocations()
}

/// Launches a kernel that dereferences null, to check that faults come back
/// as [`Error::KernelFault`](crate::Error::KernelFault) at the next
/// synchronisation. The context is unusable afterwards.
pub fn launch_faulting_kernel(gpu: &Gpu, stream: &Stream) -> Result<()> {
    let _live = gpu.shared.bind()?;
    // SAFETY: the kernel is the one `ADD_F32` names, resolved by that name from
    // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
    // table fixes its parameter list as this launch passes it).
    unsafe { raw::launch_faulting(gpu.shared.func(kernels_gpu::add::ADD_F32.name)?, stream.raw()) }
}
