//! The primary context, the liveness of every handle made in it, and the
//! reset that ends it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys as cu;

use super::check;
use super::driver::{device, driver};
use crate::error::{DriverError, Error, Result};

/// One word per device ordinal, shared by every context handle of the
/// device: the generation in the high 32 bits (even: live; odd: a reset is
/// under way; each reset adds 2), the calls in flight in the low 32 bits. A
/// call counts itself in with one `fetch_add` (no lock) and is refused when
/// the generation is not its handle's; a reset makes the generation odd, waits
/// for the calls in flight to leave, then resets. So no call of this crate
/// can pass its liveness check and then reach a destroyed handle.
fn state_of(index: usize) -> Arc<AtomicU64> {
    static STATES: OnceLock<Mutex<HashMap<usize, Arc<AtomicU64>>>> = OnceLock::new();
    let mut m = STATES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    m.entry(index).or_default().clone()
}

const CALLS: u64 = (1 << 32) - 1;
const GENERATION: u64 = 1 << 32;

/// A retained primary context of one device; released on drop. Every raw
/// resource (memory, module, stream, events, graph) holds an `Arc` of the
/// context it was made in and frees itself on drop only while that context
/// is live and current, so no free of a stale handle can reach the driver.
pub(crate) struct PrimaryContext {
    dev: cu::CUdevice,
    ctx: cu::CUcontext,
    /// The device's word (see [`state_of`]), and the generation this was
    /// retained in.
    state: Arc<AtomicU64>,
    born: u64,
}
// SAFETY: a context handle may be made current on any thread; the fields
// other than the handle are immutable or atomic.
unsafe impl Send for PrimaryContext {}
// SAFETY: as above.
unsafe impl Sync for PrimaryContext {}

/// A call in flight on a live context: while it exists, no reset of the
/// device can begin (a reset waits for it to drop). Held across the liveness
/// check and every driver call that uses a handle of the context.
#[must_use = "the context is only guaranteed live while the guard is held"]
pub(crate) struct Live<'a>(&'a AtomicU64);

impl Drop for Live<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

impl PrimaryContext {
    /// Retains the primary context of device `index` (shared with cudarc and the
    /// runtime API in the same process) and makes it current.
    pub(crate) fn retain(index: usize) -> Result<Arc<PrimaryContext>> {
        let dev = device(index)?;
        let state = state_of(index);
        let born = state.load(Ordering::Acquire) >> 32;
        if born % 2 == 1 {
            return Err(Error::DeviceReset { what: "Gpu (the device is being reset)" });
        }
        let mut ctx: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one handle; released in Drop.
        check(unsafe { cu::cuDevicePrimaryCtxRetain(&mut ctx, dev) }).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let p = Arc::new(PrimaryContext { dev, ctx, state, born });
        drop(p.bind()?);
        Ok(p)
    }

    /// Counts a call in and makes this context the calling thread's current
    /// one, if it is not already (one cheap query instead of a set on every
    /// call; another library may have changed it, so nothing is cached).
    /// Refuses a context that was reset, or is being reset:
    /// [`Error::DeviceReset`]. Hold the guard until the driver calls that use
    /// the context's handles have returned.
    pub(crate) fn bind(&self) -> Result<Live<'_>> {
        let live = self.enter()?;
        let mut current: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one handle.
        check(unsafe { cu::cuCtxGetCurrent(&mut current) }).map_err(driver("cuCtxGetCurrent"))?;
        if current != self.ctx {
            // SAFETY: a live context handle (retained by self; no reset can
            // begin while `live` is held).
            check(unsafe { cu::cuCtxSetCurrent(self.ctx) }).map_err(driver("cuCtxSetCurrent"))?;
        }
        Ok(live)
    }

    /// Counts a call in without touching the driver: while the guard is
    /// held no reset of the device can begin, so memory a reset frees (the
    /// mapped assert record, say) stays allocated. Refuses a context that was
    /// reset, or is being reset ([`Error::DeviceReset`]). For host-side reads
    /// that need no current context ([`PrimaryContext::bind`] adds that).
    pub(crate) fn enter(&self) -> Result<Live<'_>> {
        let before = self.state.fetch_add(1, Ordering::Acquire);
        let live = Live(&self.state);
        if before >> 32 != self.born {
            return Err(Error::DeviceReset { what: "Gpu" });
        }
        Ok(live)
    }

    /// Waits for all work of the calling thread's current context (this one,
    /// once bound); a kernel fault is reported here.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: no preconditions beyond a current context.
        check(unsafe { cu::cuCtxSynchronize() })
    }

    /// Marks every handle of the device dead, waits for the calls of this
    /// crate in flight on it to return, then destroys every allocation, module
    /// and stream of the primary context. Refused ([`Error::DeviceReset`])
    /// when this handle is dead already (another reset came first). Whether
    /// the device can then be used again is the driver's call: driver 580
    /// keeps an illegal-address fault for the rest of the process.
    ///
    /// Must not be called while the calling thread holds a [`Live`] guard of
    /// the device (it would wait for itself); no closure this crate runs
    /// holds one.
    ///
    /// # Safety
    /// The primary context is shared with every other user of the device in
    /// this process (cudarc, the CUDA runtime, other libraries): their memory,
    /// modules and streams are destroyed too, behind their backs. The caller
    /// promises that no such resource is used again after this call.
    pub(crate) unsafe fn reset(&self) -> Result<()> {
        // From even (live) to odd (resetting), only from this handle's own
        // generation: every later call of any handle is refused from here.
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            if word >> 32 != self.born {
                return Err(Error::DeviceReset { what: "Gpu" });
            }
            match self.state.compare_exchange_weak(word, word + GENERATION, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        // Calls that passed their check before the mark finish first (a
        // refused one leaves at once).
        while self.state.load(Ordering::Acquire) & CALLS != 0 {
            std::thread::yield_now();
        }
        // SAFETY: resets the device's primary context; no call of this crate
        // is in flight on it, none can start, and other users of the context
        // are the caller's promise.
        let r = check(unsafe { cu::cuDevicePrimaryCtxReset_v2(self.dev) }).map_err(driver("cuDevicePrimaryCtxReset"));
        // Even again: contexts retained from now on are live, older ones dead.
        self.state.fetch_add(GENERATION, Ordering::AcqRel);
        r
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
