//! The unsafe edge: every driver call and every kernel launch of the crate.
//!
//! Unsafe blocks live here (and in `interop.rs`, feature `cudarc`). Each
//! function checks what makes its own unsafe block sound (lengths against the
//! views it is given, alignment against the kernel's needs) instead of
//! trusting its caller, so that the safe API above cannot produce undefined
//! behaviour or an out-of-range write. Every resource (memory, module, stream,
//! events, graph) is a type of this module that frees itself on drop, only
//! while the context it was made in is live.
//!
//! `raw` builds on `crate::error` alone: nothing above it is imported here
//! (`xtask/tests/layering.rs` checks it).

use std::ffi::{c_void, CStr};
use std::os::raw::c_char;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use cudarc::driver::sys as cu;

use crate::error::{DriverError, Error, Result};

mod add;
mod context;
mod copy;
mod driver;
mod fill;
mod glu;
mod graph;
mod kernel;
mod launch;
mod many;
mod map;
mod math;
mod norms;
mod order;
mod pipeline;
mod studies;
mod user;

pub(crate) use add::*;
pub(crate) use context::*;
pub(crate) use copy::*;
pub(crate) use driver::*;
pub(crate) use fill::fill_bits;
pub(crate) use glu::*;
pub(crate) use graph::*;
pub use kernel::KernelResources;
pub(crate) use kernel::{occupancy, shared_per_block_optin, Kernel};
pub(crate) use launch::*;
pub(crate) use many::*;
pub(crate) use map::*;
pub(crate) use math::*;
pub(crate) use norms::*;
pub(crate) use order::{reads, writes, Queue, Track, Use};
pub(crate) use pipeline::*;
pub(crate) use studies::*;
pub(crate) use user::*;

/// Turns a `CUresult` into a [`DriverError`] with the driver's own name and text.
pub(crate) fn check(result: cu::CUresult) -> Result<(), DriverError> {
    if result == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const c_char = std::ptr::null();
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: both calls only write a pointer to a static string, or leave it null.
    unsafe {
        cu::cuGetErrorName(result, &mut name);
        cu::cuGetErrorString(result, &mut text);
    }
    let read = |p: *const c_char, fallback: String| {
        if p.is_null() {
            fallback
        } else {
            // SAFETY: the driver returned a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    Err(DriverError {
        code: result as u32,
        name: read(name, format!("CUresult {}", result as u32)),
        message: read(text, "unknown error".into()),
    })
}

/// Plain data that device bytes may be copied into: every bit pattern is a
/// valid value and there is no padding. Sealed by being declared here, in a
/// private module; `buffer::Pod` builds on it.
///
/// # Safety
/// Implement only for types with the property above.
pub unsafe trait AnyBits: Copy + Send + Sync + 'static {}

// SAFETY: IEEE binary formats and integers: every bit pattern is a value, no padding.
unsafe impl AnyBits for f32 {}
// SAFETY: as above (a 16-bit IEEE format).
unsafe impl AnyBits for half::f16 {}
// SAFETY: as above (the top half of an f32).
unsafe impl AnyBits for half::bf16 {}
// SAFETY: integers.
unsafe impl AnyBits for u8 {}
// SAFETY: integers.
unsafe impl AnyBits for u16 {}
// SAFETY: integers.
unsafe impl AnyBits for u32 {}
// SAFETY: integers.
unsafe impl AnyBits for u64 {}
// SAFETY: integers.
unsafe impl AnyBits for i32 {}
// SAFETY: the other integers and f64 (typed kernels take every `KernelElem`):
// every bit pattern is a value, no padding.
unsafe impl AnyBits for i8 {}
// SAFETY: as above.
unsafe impl AnyBits for i16 {}
// SAFETY: as above.
unsafe impl AnyBits for i64 {}
// SAFETY: as above.
unsafe impl AnyBits for f64 {}
// SAFETY: integers and byte arrays, `#[repr(C)]` with no padding (512 bytes:
// eight u32, then 480 bytes).
unsafe impl AnyBits for gpukern_device::debug::AssertRecord {}

/// A range of device memory raw may read: its address and its length in
/// elements of `T`, and the tracker of the allocation it lies in. Implemented
/// by `buffer`'s views and buffers, whose borrows keep the memory alive while
/// raw uses it; raw checks lengths and alignment against what each launch
/// needs, orders the launch after other streams' work on the allocation
/// (`order.rs`), and trusts the range itself.
///
/// # Safety
/// For as long as the implementing value is borrowed, `addr()..addr() +
/// len() * size_of::<T>()` is device memory of one live allocation in the
/// context the work is queued in, and holds valid `T`s; the methods return
/// the same values on every call. `track()` is that allocation's tracker; it
/// is `None` only for memory this crate did not allocate, whose ordering
/// across streams the creator of the value promised (`from_raw_parts`).
pub(crate) unsafe trait DevRead<T> {
    /// Device address of the first element.
    fn addr(&self) -> u64;
    /// Elements.
    fn len(&self) -> usize;
    /// The allocation's tracker (`None`: foreign memory).
    fn track(&self) -> Option<&Track>;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A range raw may write.
///
/// # Safety
/// As [`DevRead`], and the range is exclusively borrowed: no other live value
/// reads or writes it while this one is borrowed, so an output never aliases
/// an input.
pub(crate) unsafe trait DevWrite<T>: DevRead<T> {}

/// A resolved kernel handle. CUDA function handles may be used from any thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawFn(pub(crate) cu::CUfunction);
// SAFETY: a CUfunction is an immutable driver handle, valid on every thread that
// has its context current; the driver synchronises its use.
unsafe impl Send for RawFn {}
// SAFETY: as above.
unsafe impl Sync for RawFn {}

/// Allocations of this process alive now, and their bytes (the leak test
/// counts these, not the device's free memory, which other processes move).
static LIVE: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// (allocations, bytes) of device memory this process holds through [`alloc`].
#[cfg(feature = "test-hooks")]
pub(crate) fn live_allocations() -> (usize, usize) {
    (LIVE[0].load(AtomicOrdering::Relaxed), LIVE[1].load(AtomicOrdering::Relaxed))
}

/// An allocation of device memory, freed on drop while its context is live
/// (after a reset the driver already freed it, and the address may belong to
/// a newer allocation). Only [`alloc`] makes one, so every free is of memory
/// this crate allocated, once. The free waits for the work queued on it: on
/// every stream that used it (the last one waits for the others, then the
/// host for it) and, when an asynchronous legacy-stream operation (a fill,
/// an upload) touched it, for the legacy stream; then `cuMemFree` frees idle
/// memory. No free relies on `cuMemFree` synchronising by itself.
pub(crate) struct DeviceAlloc {
    addr: u64,
    bytes: usize,
    track: Track,
    ctx: Arc<PrimaryContext>,
}

impl DeviceAlloc {
    /// Device address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }
    /// Which streams used the allocation.
    pub(crate) fn track(&self) -> &Track {
        &self.track
    }
    /// The whole allocation as an operand a launch reads (a table of raw's own).
    pub(crate) fn as_input(&self) -> Option<Use<'_>> {
        Use::of_range(&self.track, self.addr, self.bytes, false)
    }
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        LIVE[0].fetch_sub(1, AtomicOrdering::Relaxed);
        LIVE[1].fetch_sub(self.bytes, AtomicOrdering::Relaxed);
        // A context broken by a fault may refuse; dropping never panics. A
        // free that cannot wait (a fault) leaks rather than free in-use memory.
        let Ok(_live) = self.ctx.bind() else { return };
        let waited = match self.track.last_stream() {
            Ok(Some(last)) => last.synchronize().is_ok(),
            Ok(None) => true,
            Err(_) => false,
        };
        // SAFETY: waits for the legacy stream's queued work (no handle).
        let legacy =
            !self.track.legacy_used() || check(unsafe { cu::cuStreamSynchronize(std::ptr::null_mut()) }).is_ok();
        if waited && legacy {
            // SAFETY: memory `alloc` made in this live, current context, idle
            // (waited for above), freed once.
            let _ = unsafe { cu::cuMemFree_v2(self.addr) };
        }
    }
}

/// Page-locked host memory mapped into the device's address space (zero
/// copy): written by kernels, read by the host even after a fault, when no
/// copy from the device can run any more. Freed on drop while its context is
/// live.
pub(crate) struct MappedHost {
    host: *mut u8,
    dev: u64,
    bytes: usize,
    ctx: Arc<PrimaryContext>,
}
// SAFETY: plain memory owned by this value; reads and writes go through
// volatile copies of plain data.
unsafe impl Send for MappedHost {}
// SAFETY: as above; `read` copies out whole, and nothing else touches it.
unsafe impl Sync for MappedHost {}

impl MappedHost {
    /// `bytes` of zeroed, mapped host memory in `ctx`.
    pub(crate) fn new(ctx: &Arc<PrimaryContext>, bytes: usize) -> Result<MappedHost> {
        let _live = ctx.bind()?;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer; DEVICEMAP maps it into the device.
        check(unsafe { cu::cuMemHostAlloc(&mut host, bytes, cu::CU_MEMHOSTALLOC_DEVICEMAP) })
            .map_err(|source| Error::Driver { context: "cuMemHostAlloc", source })?;
        // Owned from here, so an error below frees it.
        let mut m = MappedHost { host: host as *mut u8, dev: 0, bytes, ctx: ctx.clone() };
        // SAFETY: `host` holds `bytes`.
        unsafe { std::ptr::write_bytes(m.host, 0, bytes) };
        // SAFETY: a mapped allocation of this context; writes one address.
        check(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut m.dev, host, 0) })
            .map_err(|source| Error::Driver { context: "cuMemHostGetDevicePointer", source })?;
        Ok(m)
    }
    /// The device address of the first byte.
    pub(crate) fn device_addr(&self) -> u64 {
        self.dev
    }
    /// A copy of the first `size_of::<T>()` bytes, read as `T` (volatile:
    /// kernels write them behind the compiler's back). `None` when `T` does
    /// not fit, or once a reset of the device has begun: the reset frees
    /// this memory (`cuMemHostAlloc` memory belongs to the context).
    pub(crate) fn read<T: AnyBits>(&self) -> Option<T> {
        if std::mem::size_of::<T>() > self.bytes || !(self.host as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return None;
        }
        // Counted in without a driver call: a context that faulted must
        // still give its record, and no reset can free it while this is held.
        let _live = self.ctx.enter().ok()?;
        // SAFETY: in bounds and aligned (checked); allocated (the context is
        // live and no reset can begin while `_live` is held); every bit
        // pattern is a T.
        Some(unsafe { std::ptr::read_volatile(self.host as *const T) })
    }
}

impl Drop for MappedHost {
    fn drop(&mut self) {
        if let Ok(_live) = self.ctx.bind() {
            // SAFETY: memory cuMemHostAlloc made in this live context, freed once.
            let _ = unsafe { cu::cuMemFreeHost(self.host as *mut c_void) };
        }
    }
}

/// Allocates `bytes` of device memory in `ctx`.
pub(crate) fn alloc(ctx: &Arc<PrimaryContext>, bytes: usize) -> Result<DeviceAlloc> {
    let _live = ctx.bind()?;
    let mut ptr: cu::CUdeviceptr = 0;
    // SAFETY: writes one device pointer.
    check(unsafe { cu::cuMemAlloc_v2(&mut ptr, bytes.max(1)) }).map_err(|source| {
        if source.code == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32 {
            Error::OutOfMemory { bytes, source }
        } else {
            Error::Driver { context: "cuMemAlloc", source }
        }
    })?;
    LIVE[0].fetch_add(1, AtomicOrdering::Relaxed);
    LIVE[1].fetch_add(bytes, AtomicOrdering::Relaxed);
    Ok(DeviceAlloc { addr: ptr, bytes, track: Track::new(ptr, bytes), ctx: ctx.clone() })
}

/// Free and total device memory of the current context's device, in bytes.
pub(crate) fn mem_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two integers.
    check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) })
        .map_err(|source| Error::Driver { context: "cuMemGetInfo", source })?;
    Ok((free, total))
}

/// The CUDA version the driver supports, e.g. 13000 for 13.0.
pub(crate) fn driver_version() -> Result<i32> {
    let mut v = 0i32;
    // SAFETY: writes one integer.
    check(unsafe { cu::cuDriverGetVersion(&mut v) })
        .map_err(|source| Error::Driver { context: "cuDriverGetVersion", source })?;
    Ok(v)
}
