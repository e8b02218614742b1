//! The driver's context, module, stream and event calls, through cudarc's
//! bindings with the library loaded at run time (`dynamic-loading`): nothing
//! links against libcuda, so the crates build, and everything that needs no GPU
//! runs, on machines without a driver or a CUDA toolkit.

use std::ffi::{c_void, CString};

use super::{check, RawFn};
use crate::error::{DriverError, Error, Result};
use cudarc::driver::sys as cu;

fn driver(context: &'static str) -> impl Fn(DriverError) -> Error {
    move |source| Error::Driver { context, source }
}

/// Loads libcuda and initialises the driver. Without a driver library this is
/// [`Error::NoDevice`] with one line that says so, never a panic.
pub(crate) fn init() -> Result<()> {
    // SAFETY: tries to open the library by its usual names; no other effect.
    if !unsafe { cu::is_culib_present() } {
        return Err(Error::NoDevice(
            "the NVIDIA driver library (libcuda.so.1) is not installed here; run the GPU work on a machine with an NVIDIA driver (e.g. `cargo xtask bundle`, then `bundle/run.sh test` there)".into(),
        ));
    }
    // SAFETY: cuInit(0) has no preconditions and may be called repeatedly.
    check(unsafe { cu::cuInit(0) }).map_err(|e| Error::NoDevice(format!("cuInit failed: {e}")))
}

/// Devices the driver sees.
pub(crate) fn device_count() -> Result<usize> {
    let mut n = 0i32;
    // SAFETY: writes one integer.
    check(unsafe { cu::cuDeviceGetCount(&mut n) })
        .map_err(|e| Error::NoDevice(format!("cuDeviceGetCount failed: {e}")))?;
    Ok(n as usize)
}

/// The device handle of ordinal `index`.
pub(crate) fn device(index: usize) -> Result<cu::CUdevice> {
    let mut d: cu::CUdevice = 0;
    // SAFETY: writes one handle.
    check(unsafe { cu::cuDeviceGet(&mut d, index as i32) }).map_err(driver("cuDeviceGet"))?;
    Ok(d)
}

/// One integer attribute of a device.
pub(crate) fn device_attribute(dev: cu::CUdevice, attr: cu::CUdevice_attribute) -> Result<i32> {
    let mut v = 0i32;
    // SAFETY: writes one integer.
    check(unsafe { cu::cuDeviceGetAttribute(&mut v, attr, dev) }).map_err(driver("cuDeviceGetAttribute"))?;
    Ok(v)
}

/// The device's name and total memory in bytes.
pub(crate) fn device_name_and_memory(dev: cu::CUdevice) -> Result<(String, u64)> {
    let mut name = [0 as std::os::raw::c_char; 256];
    // SAFETY: writes at most 256 bytes, NUL-terminated.
    check(unsafe { cu::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, dev) })
        .map_err(driver("cuDeviceGetName"))?;
    // SAFETY: NUL-terminated within the buffer.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let mut bytes = 0usize;
    // SAFETY: writes one integer.
    check(unsafe { cu::cuDeviceTotalMem_v2(&mut bytes, dev) }).map_err(driver("cuDeviceTotalMem"))?;
    Ok((name, bytes as u64))
}

/// A retained primary context of one device; released on drop.
pub(crate) struct PrimaryContext {
    pub(crate) dev: cu::CUdevice,
    pub(crate) ctx: cu::CUcontext,
}
// SAFETY: a context handle may be made current on any thread.
unsafe impl Send for PrimaryContext {}
// SAFETY: as above; the driver synchronises its use.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains the device's primary context (shared with cudarc and the runtime
    /// API in the same process) and makes it current.
    pub(crate) fn retain(dev: cu::CUdevice) -> Result<PrimaryContext> {
        let mut ctx: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one handle; released in Drop.
        check(unsafe { cu::cuDevicePrimaryCtxRetain(&mut ctx, dev) }).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let p = PrimaryContext { dev, ctx };
        p.set_current()?;
        Ok(p)
    }
    /// Makes it the calling thread's current context.
    pub(crate) fn set_current(&self) -> Result<()> {
        // SAFETY: a live context handle (retained by self).
        check(unsafe { cu::cuCtxSetCurrent(self.ctx) }).map_err(driver("cuCtxSetCurrent"))
    }
    /// Waits for all work of the calling thread's current context (this one,
    /// once bound); a kernel fault is reported here.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: no preconditions beyond a current context.
        check(unsafe { cu::cuCtxSynchronize() })
    }
    /// Destroys every allocation, module and stream of the primary context.
    /// Whether the device can then be used again is the driver's call: driver
    /// 580 keeps an illegal-address fault for the rest of the process. Every
    /// handle made in it before is dead afterwards (the callers' generation check).
    pub(crate) fn reset(&self) -> Result<()> {
        // SAFETY: resets the device's primary context; the library's handles
        // into it are marked dead before any use (context::Shared::is_live).
        check(unsafe { cu::cuDevicePrimaryCtxReset_v2(self.dev) }).map_err(driver("cuDevicePrimaryCtxReset"))
    }
    #[cfg(feature = "cudarc")]
    pub(crate) fn as_raw(&self) -> cu::CUcontext {
        self.ctx
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `retain`.
        let _ = unsafe { cu::cuDevicePrimaryCtxRelease_v2(self.dev) };
    }
}

/// A loaded module; unloaded on drop unless its context was reset (then the
/// driver already destroyed it).
pub(crate) struct RawModule {
    pub(crate) module: cu::CUmodule,
}
// SAFETY: module handles may be used from any thread with the context current.
unsafe impl Send for RawModule {}
// SAFETY: as above.
unsafe impl Sync for RawModule {}

impl RawModule {
    /// JIT-loads PTX text into the current context.
    pub(crate) fn load(ptx: &str) -> Result<RawModule> {
        let text = CString::new(ptx).map_err(|_| {
            Error::PtxLoad(DriverError {
                code: 218,
                name: "CUDA_ERROR_INVALID_PTX".into(),
                message: "the PTX text holds a NUL byte".into(),
            })
        })?;
        let mut module: cu::CUmodule = std::ptr::null_mut();
        // SAFETY: a NUL-terminated image; writes one handle.
        check(unsafe { cu::cuModuleLoadData(&mut module, text.as_ptr() as *const c_void) }).map_err(Error::PtxLoad)?;
        Ok(RawModule { module })
    }
    /// A kernel of the module by name.
    pub(crate) fn function(&self, name: &str) -> Result<RawFn, DriverError> {
        let c = CString::new(name).map_err(|_| DriverError {
            code: 500,
            name: "CUDA_ERROR_NOT_FOUND".into(),
            message: "name holds a NUL byte".into(),
        })?;
        let mut f: cu::CUfunction = std::ptr::null_mut();
        // SAFETY: a live module; writes one handle.
        check(unsafe { cu::cuModuleGetFunction(&mut f, self.module, c.as_ptr()) })?;
        Ok(RawFn(f))
    }
    /// The bytes of a module global, copied to the host; `None` when the module
    /// has no global of that name.
    pub(crate) fn read_global(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let Ok(c) = CString::new(name) else { return Ok(None) };
        let (mut ptr, mut bytes): (cu::CUdeviceptr, usize) = (0, 0);
        // SAFETY: a live module; writes an address and a size.
        let r = unsafe { cu::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.module, c.as_ptr()) };
        if r == cu::CUresult::CUDA_ERROR_NOT_FOUND {
            return Ok(None);
        }
        check(r).map_err(driver("cuModuleGetGlobal"))?;
        let mut out = vec![0u8; bytes];
        // SAFETY: the global is `bytes` long; out is a host buffer of that size.
        check(unsafe { cu::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, ptr, bytes) })
            .map_err(driver("cuMemcpyDtoH"))?;
        Ok(Some(out))
    }
    /// Unloads it (only while its context is live).
    pub(crate) fn unload(&self) {
        // SAFETY: a live module, unloaded once (its owner's Drop).
        let _ = unsafe { cu::cuModuleUnload(self.module) };
    }
}

/// A stream handle.
#[derive(Debug)]
pub(crate) struct RawStream(pub(crate) cu::CUstream);
// SAFETY: streams may be used from any thread with their context current.
unsafe impl Send for RawStream {}
// SAFETY: as above; the driver synchronises queueing.
unsafe impl Sync for RawStream {}

impl RawStream {
    /// A new blocking stream (ordered with the legacy default stream, which the
    /// synchronous copies and fills use).
    pub(crate) fn create() -> Result<RawStream> {
        let mut s: cu::CUstream = std::ptr::null_mut();
        // SAFETY: writes one handle; flags 0 is CU_STREAM_DEFAULT (blocking).
        check(unsafe { cu::cuStreamCreate(&mut s, 0) }).map_err(driver("cuStreamCreate"))?;
        Ok(RawStream(s))
    }
    /// Waits for its work; a kernel fault is reported here.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: a live stream.
        check(unsafe { cu::cuStreamSynchronize(self.0) })
    }
    /// Destroys it (only while its context is live).
    pub(crate) fn destroy(&self) {
        // SAFETY: a live stream, destroyed once (its owner's Drop).
        let _ = unsafe { cu::cuStreamDestroy_v2(self.0) };
    }
}

/// Two timing events, created once and recorded many times.
#[derive(Debug)]
pub(crate) struct RawEvents(cu::CUevent, cu::CUevent);
// SAFETY: event handles may be used from any thread with their context current;
// the owner serialises their use.
unsafe impl Send for RawEvents {}

impl RawEvents {
    pub(crate) fn create() -> Result<RawEvents> {
        let (mut start, mut stop): (cu::CUevent, cu::CUevent) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: each writes one handle.
        check(unsafe { cu::cuEventCreate(&mut start, 0) }).map_err(driver("cuEventCreate"))?;
        // SAFETY: as above.
        if let Err(e) = check(unsafe { cu::cuEventCreate(&mut stop, 0) }) {
            // SAFETY: created above.
            unsafe { cu::cuEventDestroy_v2(start) };
            return Err(Error::Driver { context: "cuEventCreate", source: e });
        }
        Ok(RawEvents(start, stop))
    }

    /// Device time between the two events queued around `work` on `stream`, in ms.
    pub(crate) fn time(&self, stream: cu::CUstream, work: impl FnOnce() -> Result<()>) -> Result<f32> {
        // SAFETY: live events and stream.
        check(unsafe { cu::cuEventRecord(self.0, stream) }).map_err(driver("cuEventRecord"))?;
        work()?;
        // SAFETY: as above.
        check(unsafe { cu::cuEventRecord(self.1, stream) }).map_err(driver("cuEventRecord"))?;
        // SAFETY: a recorded event.
        check(unsafe { cu::cuEventSynchronize(self.1) })
            .map_err(|source| Error::KernelFault { kernel: None, source })?;
        let mut ms = 0f32;
        // SAFETY: both recorded and complete; writes one float.
        check(unsafe { cu::cuEventElapsedTime_v2(&mut ms, self.0, self.1) }).map_err(driver("cuEventElapsedTime"))?;
        Ok(ms)
    }

    /// Destroys both (only while their context is live).
    pub(crate) fn destroy(&self) {
        // SAFETY: live events, destroyed once (their owner's Drop).
        unsafe {
            cu::cuEventDestroy_v2(self.0);
            cu::cuEventDestroy_v2(self.1);
        }
    }
}
