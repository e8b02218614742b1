//! Kernels resolved once, and what the driver reports about them.

use std::sync::{Arc, OnceLock};

use cudarc::driver::sys as cu;

use super::{check, PrimaryContext, RawFn};
use crate::error::{DriverError, Error, Result};

/// One attribute of a kernel. The caller holds the guard of the kernel's
/// context, made current ([`PrimaryContext::bind`]): the driver answers for
/// the current context.
fn func_attribute(func: RawFn, attr: cu::CUfunction_attribute) -> Result<i32> {
    let mut value = 0i32;
    // SAFETY: writes one integer; a function handle of a live context (the
    // caller's guard).
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
/// once (they never change for a loaded module). Holds the context it was
/// resolved in: every driver call about it is made there, under that
/// context's guard and with it current, on whatever thread asks (a thread
/// with no current context would get an error, or another context's answer).
pub(crate) struct Kernel {
    pub(crate) func: RawFn,
    ctx: Arc<PrimaryContext>,
    resources: OnceLock<KernelResources>,
}

impl Kernel {
    /// `func`, a function of a module loaded in `ctx`.
    pub(crate) fn new(func: RawFn, ctx: &Arc<PrimaryContext>) -> Kernel {
        Kernel { func, ctx: ctx.clone(), resources: OnceLock::new() }
    }
    /// The driver's report, cached after the first call.
    pub(crate) fn resources(&self) -> Result<KernelResources> {
        if let Some(r) = self.resources.get() {
            return Ok(*r);
        }
        let r = {
            let _live = self.ctx.bind()?;
            kernel_resources(self.func)?
        };
        Ok(*self.resources.get_or_init(|| r))
    }
    /// Lets the kernel use up to `bytes` of dynamic shared memory per block
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub(crate) fn set_max_dynamic_shared(&self, bytes: u32) -> Result<()> {
        let _live = self.ctx.bind()?;
        // SAFETY: sets one attribute of a function handle of this live,
        // current context.
        let r = unsafe {
            cu::cuFuncSetAttribute(
                self.func.0,
                cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes.min(i32::MAX as u32) as i32,
            )
        };
        check(r).map_err(|source| Error::Driver { context: "cuFuncSetAttribute", source })
    }
}

/// Registers, local memory, static shared memory and block limit of a
/// kernel, under the caller's guard. A block limit of 0 (no launch could
/// run) is never a real kernel's: it is refused as the driver's error
/// rather than reported as `BlockSize { max: 0 }` later.
fn kernel_resources(f: RawFn) -> Result<KernelResources> {
    use cu::CUfunction_attribute as A;
    let get = |a: A| func_attribute(f, a).map(|v| v.max(0) as u32);
    let r = KernelResources {
        registers: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        local_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        shared_bytes: get(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        max_threads_per_block: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
    };
    if r.max_threads_per_block == 0 {
        let source = DriverError {
            code: cu::CUresult::CUDA_ERROR_INVALID_VALUE as u32,
            name: "CUDA_ERROR_INVALID_VALUE".into(),
            message: "the driver reported a block limit of 0 threads for a loaded kernel".into(),
        };
        return Err(Error::Driver { context: "cuFuncGetAttribute", source });
    }
    Ok(r)
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

/// Resident blocks per SM for `func` at `block` threads and `shared` bytes of
/// dynamic shared memory per block.
pub(crate) fn occupancy(func: RawFn, block: u32, shared: usize) -> Result<u32> {
    let mut blocks = 0i32;
    // SAFETY: writes one integer.
    let r = unsafe { cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, func.0, block as i32, shared) };
    check(r).map_err(|source| Error::Driver { context: "cuOccupancyMaxActiveBlocksPerMultiprocessor", source })?;
    Ok(blocks as u32)
}
