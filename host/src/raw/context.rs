//! The primary context and the liveness of every handle made in it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys as cu;

use super::check;
use super::driver::{device, driver};
use crate::error::{DriverError, Error, Result};

/// Reset counts per device ordinal, shared by every context handle of the
/// device: a handle made before the latest reset of its device is dead (its
/// memory, modules and streams were destroyed with the context). Looked up
/// once per context handle, so liveness checks take no lock.
fn generation_of(index: usize) -> Arc<AtomicU64> {
    static RESETS: OnceLock<Mutex<HashMap<usize, Arc<AtomicU64>>>> = OnceLock::new();
    let mut m = RESETS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    m.entry(index).or_default().clone()
}

/// A retained primary context of one device; released on drop. Every raw
/// resource (memory, module, stream, events, graph) holds an `Arc` of the
/// context it was made in and frees itself on drop only while that context
/// is live and current, so no free of a stale handle can reach the driver.
pub(crate) struct PrimaryContext {
    dev: cu::CUdevice,
    ctx: cu::CUcontext,
    /// The device's reset count, and its value when this was retained.
    resets: Arc<AtomicU64>,
    born: u64,
}
// SAFETY: a context handle may be made current on any thread; the fields
// other than the handle are immutable or atomic.
unsafe impl Send for PrimaryContext {}
// SAFETY: as above.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains the primary context of device `index` (shared with cudarc and the
    /// runtime API in the same process) and makes it current.
    pub(crate) fn retain(index: usize) -> Result<Arc<PrimaryContext>> {
        let dev = device(index)?;
        let resets = generation_of(index);
        let born = resets.load(Ordering::Acquire);
        let mut ctx: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one handle; released in Drop.
        check(unsafe { cu::cuDevicePrimaryCtxRetain(&mut ctx, dev) }).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let p = Arc::new(PrimaryContext { dev, ctx, resets, born });
        p.bind()?;
        Ok(p)
    }

    /// False once the device was reset after this was retained.
    pub(crate) fn is_live(&self) -> bool {
        self.resets.load(Ordering::Acquire) == self.born
    }

    /// Makes this context the calling thread's current one, if it is not
    /// already (one cheap query instead of a set on every call; another
    /// library may have changed it, so nothing is cached). Refuses a context
    /// that was reset: [`Error::DeviceReset`].
    pub(crate) fn bind(&self) -> Result<()> {
        if !self.is_live() {
            return Err(Error::DeviceReset { what: "Gpu" });
        }
        let mut current: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one handle.
        check(unsafe { cu::cuCtxGetCurrent(&mut current) }).map_err(driver("cuCtxGetCurrent"))?;
        if current == self.ctx {
            return Ok(());
        }
        // SAFETY: a live context handle (retained by self, not reset).
        check(unsafe { cu::cuCtxSetCurrent(self.ctx) }).map_err(driver("cuCtxSetCurrent"))
    }

    /// Waits for all work of the calling thread's current context (this one,
    /// once bound); a kernel fault is reported here.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: no preconditions beyond a current context.
        check(unsafe { cu::cuCtxSynchronize() })
    }

    /// Marks every handle of the device dead, then destroys every allocation,
    /// module and stream of the primary context. Whether the device can then
    /// be used again is the driver's call: driver 580 keeps an illegal-address
    /// fault for the rest of the process.
    ///
    /// # Safety
    /// The primary context is shared with every other user of the device in
    /// this process (cudarc, the CUDA runtime, other libraries): their memory,
    /// modules and streams are destroyed too, behind their backs. The caller
    /// promises that no such resource is used again after this call.
    pub(crate) unsafe fn reset(&self) -> Result<()> {
        // This library's handles die first, so none of them frees or uses a
        // handle the driver may hand out again.
        self.resets.fetch_add(1, Ordering::AcqRel);
        // SAFETY: resets the device's primary context; other users' resources
        // are the caller's promise.
        check(unsafe { cu::cuDevicePrimaryCtxReset_v2(self.dev) }).map_err(driver("cuDevicePrimaryCtxReset"))
    }

    #[cfg(feature = "cudarc")]
    pub(crate) fn as_raw(&self) -> cu::CUcontext {
        self.ctx
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `retain` (a reset does not undo it).
        let _ = unsafe { cu::cuDevicePrimaryCtxRelease_v2(self.dev) };
    }
}
