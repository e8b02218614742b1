//! The driver's context, module, stream and event calls, through cudarc's
//! bindings with the library loaded at run time (`fallback-dynamic-loading`):
//! nothing links against libcuda, so the crates build, and everything that needs
//! no GPU runs, on machines without a driver or a CUDA toolkit. In a build that
//! also has candle's `cuda` feature cudarc links libcuda instead
//! (`dynamic-linking`); see the README's build modes.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::{check, PrimaryContext, RawFn};
use crate::error::{DriverError, Error, Result};
use cudarc::driver::sys as cu;

pub(super) fn driver(context: &'static str) -> impl Fn(DriverError) -> Error {
    move |source| Error::Driver { context, source }
}

/// Loads libcuda and initialises the driver. Without a driver library this is
/// [`Error::NoDevice`] with one line that says so, never a panic.
pub(crate) fn init() -> Result<()> {
    if !culib_present() {
        return Err(Error::NoDevice(
            "the NVIDIA driver library (libcuda.so.1) is not installed here; run this program on a machine with an NVIDIA GPU and its driver (gpukern loads libcuda at run time, so the same binary works there)".into(),
        ));
    }
    // SAFETY: cuInit(0) has no preconditions and may be called repeatedly.
    check(unsafe { cu::cuInit(0) }).map_err(|e| Error::NoDevice(format!("cuInit failed: {e}")))
}

/// Whether libcuda opens by its usual names. Our own probe: cudarc's
/// `is_culib_present` exists only with `dynamic-loading`, and a build with
/// candle links libcuda instead (`dynamic-linking`), where this is always true
/// because the program could not have started otherwise.
fn culib_present() -> bool {
    const NAMES: &[&str] = if cfg!(windows) { &["nvcuda.dll"] } else { &["libcuda.so.1", "libcuda.so"] };
    NAMES.iter().any(|&name| {
        // SAFETY: loading libcuda runs only its initialisers, which have no
        // preconditions; the handle is closed at once.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
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

/// A loaded module; unloaded on drop unless its context was reset (then the
/// driver already destroyed it, and the handle may name a newer module).
pub(crate) struct RawModule {
    module: cu::CUmodule,
    ctx: Arc<PrimaryContext>,
}
// SAFETY: module handles may be used from any thread with the context current.
unsafe impl Send for RawModule {}
// SAFETY: as above.
unsafe impl Sync for RawModule {}

impl RawModule {
    /// JIT-loads PTX text into `ctx`.
    pub(crate) fn load(ctx: &Arc<PrimaryContext>, ptx: &str) -> Result<RawModule> {
        let _live = ctx.bind()?;
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
        Ok(RawModule { module, ctx: ctx.clone() })
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
    /// Writes `value` into the module's `u64` global `name`; false when the
    /// module has no such global (a module built without the device crate's
    /// debug support), or it is not 8 bytes.
    pub(crate) fn write_global_u64(&self, name: &str, value: u64) -> Result<bool> {
        let Ok(c) = CString::new(name) else { return Ok(false) };
        let (mut ptr, mut bytes): (cu::CUdeviceptr, usize) = (0, 0);
        let _live = self.ctx.bind()?;
        // SAFETY: a live module; writes an address and a size.
        let r = unsafe { cu::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.module, c.as_ptr()) };
        if r == cu::CUresult::CUDA_ERROR_NOT_FOUND || (r == cu::CUresult::CUDA_SUCCESS && bytes != 8) {
            return Ok(false);
        }
        check(r).map_err(driver("cuModuleGetGlobal"))?;
        // SAFETY: the global is 8 bytes (checked); the source is one u64 on the stack.
        check(unsafe { cu::cuMemcpyHtoD_v2(ptr, &value as *const u64 as *const c_void, 8) })
            .map_err(driver("cuMemcpyHtoD"))?;
        Ok(true)
    }
    /// The bytes of a module global, copied to the host; `None` when the module
    /// has no global of that name.
    pub(crate) fn read_global(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let Ok(c) = CString::new(name) else { return Ok(None) };
        let (mut ptr, mut bytes): (cu::CUdeviceptr, usize) = (0, 0);
        let _live = self.ctx.bind()?;
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
}

impl Drop for RawModule {
    fn drop(&mut self) {
        if let Ok(_live) = self.ctx.bind() {
            // A kernel of this module may still be queued (a launch, a graph
            // replay): the driver does not promise to wait for it, so wait
            // for the whole context first. Where that fails (a fault, which
            // the next call reports; another thread's graph capture), the
            // module stays loaded: a leak, never code unloaded under a kernel.
            // SAFETY: the context is live and current (the guard).
            if unsafe { cu::cuCtxSynchronize() } == cu::CUresult::CUDA_SUCCESS {
                // SAFETY: a module of this live, current context, unloaded
                // once, after everything queued in the context has finished.
                let _ = unsafe { cu::cuModuleUnload(self.module) };
            }
        }
    }
}

/// A stream; destroyed on drop while its context is live. Carries one event,
/// recorded when another stream must wait for the work queued here so far
/// ([`RawStream::wait_for`], the cross-stream ordering of `order.rs`).
pub(crate) struct RawStream {
    stream: cu::CUstream,
    mark: cu::CUevent,
    ctx: Arc<PrimaryContext>,
}
// SAFETY: streams and events may be used from any thread with their context
// current; the driver synchronises queueing and recording.
unsafe impl Send for RawStream {}
// SAFETY: as above.
unsafe impl Sync for RawStream {}

impl RawStream {
    /// A new blocking stream (ordered with the legacy default stream, which the
    /// synchronous copies and fills use).
    pub(crate) fn create(ctx: &Arc<PrimaryContext>) -> Result<Arc<RawStream>> {
        let _live = ctx.bind()?;
        let mut mark: cu::CUevent = std::ptr::null_mut();
        let no_timing = cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        // SAFETY: writes one handle.
        check(unsafe { cu::cuEventCreate(&mut mark, no_timing) }).map_err(driver("cuEventCreate"))?;
        let mut s: cu::CUstream = std::ptr::null_mut();
        // SAFETY: writes one handle; flags 0 is CU_STREAM_DEFAULT (blocking).
        if let Err(e) = check(unsafe { cu::cuStreamCreate(&mut s, 0) }) {
            // SAFETY: created above, destroyed once.
            unsafe { cu::cuEventDestroy_v2(mark) };
            return Err(Error::Driver { context: "cuStreamCreate", source: e });
        }
        Ok(Arc::new(RawStream { stream: s, mark, ctx: ctx.clone() }))
    }
    /// The driver's handle, for queueing work.
    pub(crate) fn handle(&self) -> cu::CUstream {
        self.stream
    }
    /// Waits for its work; a kernel fault is reported here.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: a live stream.
        check(unsafe { cu::cuStreamSynchronize(self.stream) })
    }
    /// Makes the work queued on this stream from now on wait for the work
    /// queued on `other` so far: `other`'s event recorded now, then waited
    /// for. Two threads may record the same event at once; each wait then
    /// takes a record at least as late as its own, which covers what it needs.
    pub(crate) fn wait_for(&self, other: &RawStream) -> Result<()> {
        let _live = self.ctx.bind()?;
        // SAFETY: a live event and stream of this context (both streams are
        // of one device's primary context: the callers check owners).
        check(unsafe { cu::cuEventRecord(other.mark, other.stream) }).map_err(driver("cuEventRecord"))?;
        // SAFETY: as above; the wait takes the event's state at this call.
        check(unsafe { cu::cuStreamWaitEvent(self.stream, other.mark, 0) }).map_err(driver("cuStreamWaitEvent"))
    }
}

impl Drop for RawStream {
    fn drop(&mut self) {
        if let Ok(_live) = self.ctx.bind() {
            // SAFETY: a stream and an event of this live context, destroyed
            // once (the driver finishes queued work first).
            unsafe {
                cu::cuStreamDestroy_v2(self.stream);
                cu::cuEventDestroy_v2(self.mark);
            }
        }
    }
}

/// Two timing events, created once and recorded many times; destroyed on
/// drop while their context is live.
pub(crate) struct RawEvents(cu::CUevent, cu::CUevent, Arc<PrimaryContext>);
// SAFETY: event handles may be used from any thread with their context current;
// the owner serialises their use.
unsafe impl Send for RawEvents {}

impl RawEvents {
    pub(crate) fn create(ctx: &Arc<PrimaryContext>) -> Result<RawEvents> {
        let _live = ctx.bind()?;
        let (mut start, mut stop): (cu::CUevent, cu::CUevent) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: each writes one handle.
        check(unsafe { cu::cuEventCreate(&mut start, 0) }).map_err(driver("cuEventCreate"))?;
        // SAFETY: as above.
        if let Err(e) = check(unsafe { cu::cuEventCreate(&mut stop, 0) }) {
            // SAFETY: created above.
            unsafe { cu::cuEventDestroy_v2(start) };
            return Err(Error::Driver { context: "cuEventCreate", source: e });
        }
        Ok(RawEvents(start, stop, ctx.clone()))
    }

    /// Device time between the two events queued around `work` on `stream`, in ms.
    /// No call is counted in while `work` runs (it may be anything).
    pub(crate) fn time(&self, stream: cu::CUstream, work: impl FnOnce() -> Result<()>) -> Result<f32> {
        {
            let _live = self.2.bind()?;
            // SAFETY: live events and stream.
            check(unsafe { cu::cuEventRecord(self.0, stream) }).map_err(driver("cuEventRecord"))?;
        }
        work()?;
        let _live = self.2.bind()?;
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
}

impl Drop for RawEvents {
    fn drop(&mut self) {
        if let Ok(_live) = self.2.bind() {
            // SAFETY: events of this live context, destroyed once.
            unsafe {
                cu::cuEventDestroy_v2(self.0);
                cu::cuEventDestroy_v2(self.1);
            }
        }
    }
}
