//! Kernels resolved once, and what the driver reports about them.

use std::sync::OnceLock;

use cudarc::driver::sys as cu;

use super::{check, RawFn};
use crate::error::{Error, Result};

/// One attribute of a kernel.
fn func_attribute(func: RawFn, attr: cu::CUfunction_attribute) -> Result<i32> {
    let mut value = 0i32;
    // SAFETY: writes one integer.
    let r = unsafe { cu::cuFuncGetAttribute(&mut value, attr, func.0) };
    check(r).map_err(|source| Error::Driver { context: "cuFuncGetAttribute", source })?;
    Ok(value)
}

/// Per-kernel resources reported by the driver after JIT compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers: u32,
    /// Local (stack/spill) memory per thread, bytes.
    pub local_bytes: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Largest block this kernel can launch with.
    pub max_threads_per_block: u32,
}

/// A kernel resolved once, with its resources asked of the driver at most
/// once (they never change for a loaded module).
pub(crate) struct Kernel {
    pub(crate) func: RawFn,
    resources: OnceLock<KernelResources>,
}

impl Kernel {
    pub(crate) fn new(func: RawFn) -> Kernel {
        Kernel { func, resources: OnceLock::new() }
    }
    /// The driver's report, cached after the first call.
    pub(crate) fn resources(&self) -> Result<KernelResources> {
        if let Some(r) = self.resources.get() {
            return Ok(*r);
        }
        let r = kernel_resources(self.func)?;
        Ok(*self.resources.get_or_init(|| r))
    }
}

/// Registers, local memory, static shared memory and block limit of a kernel.
fn kernel_resources(f: RawFn) -> Result<KernelResources> {
    use cu::CUfunction_attribute as A;
    let get = |a: A| func_attribute(f, a).map(|v| v as u32);
    Ok(KernelResources {
        registers: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        local_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        shared_bytes: get(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        max_threads_per_block: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
    })
}

/// Most dynamic shared memory a block of device `ordinal` may use after opting in.
pub(crate) fn shared_per_block_optin(ordinal: usize) -> Result<u32> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let (mut dev, mut v): (cu::CUdevice, i32) = (0, 0);
    // SAFETY: each call writes one integer.
    check(unsafe { cu::cuDeviceGet(&mut dev, ordinal as i32) }).map_err(driver("cuDeviceGet"))?;
    // SAFETY: as above.
    check(unsafe {
        cu::cuDeviceGetAttribute(
            &mut v,
            cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            dev,
        )
    })
    .map_err(driver("cuDeviceGetAttribute"))?;
    Ok(v as u32)
}

/// Lets `func` use up to `bytes` of dynamic shared memory per block
/// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub(crate) fn set_max_dynamic_shared(func: RawFn, bytes: u32) -> Result<()> {
    // SAFETY: sets one attribute of a live function handle.
    let r = unsafe {
        cu::cuFuncSetAttribute(
            func.0,
            cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    };
    check(r).map_err(|source| Error::Driver { context: "cuFuncSetAttribute", source })
}

/// Resident blocks per SM for `func` at `block` threads and `shared` bytes of
/// dynamic shared memory per block.
pub(crate) fn occupancy(func: RawFn, block: u32, shared: usize) -> Result<u32> {
    let mut blocks = 0i32;
    // SAFETY: writes one integer.
    let r = unsafe { cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, func.0, block as i32, shared) };
    check(r).map_err(|source| Error::Driver { context: "cuOccupancyMaxActiveBlocksPerMultiprocessor", source })?;
    Ok(blocks as u32)
}
