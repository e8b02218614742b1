//! Copies: host to device, device to host and device to device, and the
//! page-locked host memory that lets a copy run asynchronously.
//!
//! A copy queued on a stream is ordered like a kernel (`Queue::order`). Host
//! memory comes in two kinds ([`Host`], [`HostMut`]): a plain slice, whose
//! borrow ends when the call returns, so the call waits for its copy (for
//! pageable memory the driver does most of that wait itself); and
//! [`PinnedHost`], this crate's page-locked memory, which carries a tracker
//! like device memory: the copy is only queued, and host access to the memory
//! waits for the streams that may still use it.

use std::alloc::Layout;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::sys as cu;

use super::{check, reads, writes, AnyBits, DevRead, DevWrite, PrimaryContext, Queue, Track, Use};
use crate::error::{Error, Result};

/// Host page size the registered memory is aligned to and rounded up to
/// (`cuMemHostRegister` wants whole pages on some platforms).
const PAGE: usize = 4096;

/// Page-locked host memory: allocated by Rust's allocator, registered with
/// the driver (`cuMemHostRegister`) in one context, so DMA reads and writes it
/// directly and copies from and to it run asynchronously. Unregistered and
/// freed on drop, after the streams that used it finished. Allocated by Rust
/// rather than by `cuMemHostAlloc` so that a reset of the context (which
/// frees the driver's allocations) cannot free memory the host still borrows:
/// after a reset only the registration is gone.
pub(crate) struct PinnedHost {
    ptr: NonNull<u8>,
    bytes: usize,
    layout: Layout,
    track: Track,
    ctx: Arc<PrimaryContext>,
}
// SAFETY: plain memory owned by this value; the host reaches it only through
// `as_ptr`/`as_mut_ptr` after waiting for the copies (`wait`), the device only
// through copies ordered by the tracker.
unsafe impl Send for PinnedHost {}
// SAFETY: as above.
unsafe impl Sync for PinnedHost {}

impl PinnedHost {
    /// `bytes` of zeroed page-locked memory registered in `ctx`.
    pub(crate) fn new(ctx: &Arc<PrimaryContext>, bytes: usize) -> Result<PinnedHost> {
        let size = bytes.max(1).checked_next_multiple_of(PAGE).ok_or(Error::HostOutOfMemory { bytes })?;
        let layout = Layout::from_size_align(size, PAGE).map_err(|_| Error::HostOutOfMemory { bytes })?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or(Error::HostOutOfMemory { bytes })?;
        let free = |e| {
            // SAFETY: allocated above with `layout`, not registered, freed once.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
            e
        };
        let live = ctx.bind().map_err(free)?;
        // SAFETY: `size` bytes of memory this value owns, registered once.
        check(unsafe { cu::cuMemHostRegister_v2(ptr.as_ptr() as *mut c_void, size, 0) })
            .map_err(|source| free(Error::Driver { context: "cuMemHostRegister", source }))?;
        drop(live);
        let track = Track::new(ptr.as_ptr() as u64, bytes);
        Ok(PinnedHost { ptr, bytes, layout, track, ctx: ctx.clone() })
    }

    /// Bytes asked for.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Waits for the copies that write the memory (all copies, with
    /// `writers_only == false`), then gives its first byte: the host may read
    /// it (write it) while `self` stays borrowed as the call's receiver was.
    /// After a reset there is nothing to wait for (the context's queues died
    /// with it).
    fn wait(&self, writers_only: bool) -> Result<()> {
        match self.ctx.bind() {
            Ok(_live) => {
                self.track.wait_host(writers_only).map_err(|source| Error::KernelFault { kernel: None, source })
            }
            Err(Error::DeviceReset { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The memory as `len` elements of `T` for the host to read, once no
    /// copy writes it. Errors when `len` elements do not fit.
    pub(crate) fn as_slice<T: AnyBits>(&self, len: usize) -> Result<&[T]> {
        self.fits::<T>(len)?;
        self.wait(true)?;
        // SAFETY: in bounds and aligned (a page-aligned start; checked above);
        // zeroed at allocation, and every bit pattern is a `T`; no copy writes
        // it now (waited for), and none can be queued while `self` is borrowed
        // shared (copies into it take `&mut`).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const T, len) })
    }

    /// As [`PinnedHost::as_slice`], writable, once no copy uses it.
    pub(crate) fn as_mut_slice<T: AnyBits>(&mut self, len: usize) -> Result<&mut [T]> {
        self.fits::<T>(len)?;
        self.wait(false)?;
        self.track.forget();
        // SAFETY: as above, and no copy reads it either (waited for all).
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut T, len) })
    }

    fn fits<T>(&self, len: usize) -> Result<()> {
        match len.checked_mul(std::mem::size_of::<T>()) {
            Some(b) if b <= self.bytes => Ok(()),
            _ => Err(Error::OutOfBounds { start: 0, end: len, len: self.bytes / std::mem::size_of::<T>().max(1) }),
        }
    }

    /// The whole memory as an operand a copy reads or writes.
    fn as_use(&self, write: bool) -> Option<Use<'_>> {
        Use::of_range(&self.track, self.ptr.as_ptr() as u64, self.bytes, write)
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        let free = match self.ctx.bind() {
            // Copies may still read or write it: wait, then unregister. A
            // wait that fails (a fault) leaks rather than free memory a DMA
            // might still touch.
            Ok(_live) => {
                self.track.wait_host(false).is_ok()
                    // SAFETY: registered in this live, current context, once.
                    && check(unsafe { cu::cuMemHostUnregister(self.ptr.as_ptr() as *mut c_void) }).is_ok()
            }
            // The reset destroyed the queues and the registration.
            Err(Error::DeviceReset { .. }) => true,
            Err(_) => false,
        };
        if free {
            // SAFETY: allocated with `layout`, no longer registered or used.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
        }
    }
}

/// Host memory a copy reads.
pub(crate) enum Host<'a, T> {
    /// Any slice: the copy is waited for before the call returns.
    Slice(&'a [T]),
    /// This crate's page-locked memory holding `len` elements: only queued.
    Pinned(&'a PinnedHost, usize),
}

/// Host memory a copy writes.
pub(crate) enum HostMut<'a, T> {
    /// Any slice: the copy is waited for before the call returns.
    Slice(&'a mut [T]),
    /// This crate's page-locked memory holding `len` elements: only queued.
    Pinned(&'a mut PinnedHost, usize),
}

fn same_len(direction: &'static str, src: usize, dst: usize) -> Result<()> {
    if src != dst {
        return Err(Error::CopyLength { direction, src, dst });
    }
    Ok(())
}

/// Host to device copy of `src` into all of `dst`, queued on `q` after the
/// other streams' work on either.
pub(crate) fn copy_to_device<T: AnyBits>(src: Host<'_, T>, dst: &mut impl DevWrite<T>, q: Queue<'_>) -> Result<()> {
    let (ptr, len, pinned) = match &src {
        Host::Slice(s) => (s.as_ptr() as *const c_void, s.len(), None),
        Host::Pinned(p, len) => (p.ptr.as_ptr() as *const c_void, *len, Some(*p)),
    };
    same_len("host to device", len, dst.len())?;
    if let Some(p) = pinned {
        p.fits::<T>(len)?;
    }
    let bytes = len * std::mem::size_of::<T>();
    q.order(&[writes(dst), pinned.and_then(|p| p.as_use(false))])?;
    // SAFETY: dst is a live device range of `bytes`; `ptr` holds `bytes`
    // (a slice of that length, or pinned memory checked above) that stays
    // unwritten until the copy is done (a borrowed slice: waited for below;
    // pinned memory: host writes wait for it).
    check(unsafe { cu::cuMemcpyHtoDAsync_v2(dst.addr(), ptr, bytes, q.handle()) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoDAsync", source })?;
    match src {
        Host::Slice(_) => q.synchronize(),
        Host::Pinned(..) => Ok(()),
    }
}

/// Device to host copy of all of `src` into `dst`, queued on `q` after the
/// other streams' work on either.
pub(crate) fn copy_to_host<T: AnyBits>(src: &impl DevRead<T>, dst: HostMut<'_, T>, q: Queue<'_>) -> Result<()> {
    let (ptr, len, pinned) = match dst {
        HostMut::Slice(s) => (s.as_mut_ptr() as *mut c_void, s.len(), None),
        HostMut::Pinned(p, len) => (p.ptr.as_ptr() as *mut c_void, len, Some(&*p)),
    };
    same_len("device to host", src.len(), len)?;
    if let Some(p) = pinned {
        p.fits::<T>(len)?;
    }
    let bytes = len * std::mem::size_of::<T>();
    q.order(&[reads(src), pinned.and_then(|p| p.as_use(true))])?;
    // SAFETY: src is a live device range of `bytes`; `ptr` holds `bytes`
    // that nothing else reads or writes until the copy is done (a borrowed
    // `&mut` slice: waited for below; pinned memory, borrowed `&mut` for the
    // call: host access waits for the copy), and every bit pattern is a
    // valid T (AnyBits).
    check(unsafe { cu::cuMemcpyDtoHAsync_v2(ptr, src.addr(), bytes, q.handle()) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoHAsync", source })?;
    match pinned {
        None => q.synchronize(),
        Some(_) => Ok(()),
    }
}

/// Device to device copy between views of equal length, on a stream.
pub(crate) fn copy_async<T: AnyBits>(src: &impl DevRead<T>, dst: &mut impl DevWrite<T>, q: Queue<'_>) -> Result<()> {
    same_len("device to device", src.len(), dst.len())?;
    let bytes = dst.len() * std::mem::size_of::<T>();
    q.order(&[reads(src), writes(dst)])?;
    // SAFETY: both are live device ranges of `bytes`; `&mut` on dst excludes
    // overlap; other streams' work on them is ordered before (above).
    check(unsafe { cu::cuMemcpyDtoDAsync_v2(dst.addr(), src.addr(), bytes, q.handle()) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoDAsync", source })
}

/// Host to device copy of a whole view on the legacy stream (synchronous
/// for the host slice: it may be reused on return).
pub(crate) fn upload<T: AnyBits>(dst: &mut impl DevWrite<T>, src: &[T]) -> Result<()> {
    same_len("host to device", src.len(), dst.len())?;
    let bytes = std::mem::size_of_val(src);
    // The copy's last DMA may still run when it returns (pageable memory).
    if let Some(t) = dst.track() {
        t.note_legacy();
    }
    // SAFETY: dst is a live device range of exactly `bytes`; src is a host slice of it.
    check(unsafe { cu::cuMemcpyHtoD_v2(dst.addr(), src.as_ptr() as *const c_void, bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoD", source })
}

/// Device to host copy of a whole view on the legacy stream (synchronous).
pub(crate) fn download<T: AnyBits>(dst: &mut [T], src: &impl DevRead<T>) -> Result<()> {
    same_len("device to host", src.len(), dst.len())?;
    let bytes = std::mem::size_of_val(dst);
    // SAFETY: src is a live device range of `bytes`; dst is a host slice of that size,
    // and every bit pattern is a valid T (AnyBits).
    check(unsafe { cu::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, src.addr(), bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoH", source })
}

/// The plain driver copy from host memory into a device range
/// (`cuMemcpyHtoD`, synchronous, on the legacy stream): the baseline the
/// report measures this crate's copies against.
pub(crate) fn plain_htod<T: AnyBits>(src: Host<'_, T>, dst: &mut impl DevWrite<T>) -> Result<()> {
    let (ptr, len) = match src {
        Host::Slice(s) => (s.as_ptr() as *const c_void, s.len()),
        Host::Pinned(p, len) => {
            p.fits::<T>(len)?;
            p.wait(true)?;
            (p.ptr.as_ptr() as *const c_void, len)
        }
    };
    same_len("host to device", len, dst.len())?;
    if let Some(t) = dst.track() {
        t.note_legacy();
    }
    // SAFETY: dst is a live device range of the bytes copied, exclusively
    // borrowed; `ptr` holds them, borrowed for this call, and no copy writes
    // them (pinned memory: waited for above).
    check(unsafe { cu::cuMemcpyHtoD_v2(dst.addr(), ptr, len * std::mem::size_of::<T>()) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoD", source })
}

/// The plain driver copy from a device range into host memory
/// (`cuMemcpyDtoH`, synchronous, legacy stream): the baseline.
pub(crate) fn plain_dtoh<T: AnyBits>(src: &impl DevRead<T>, dst: HostMut<'_, T>) -> Result<()> {
    let (ptr, len) = match dst {
        HostMut::Slice(s) => (s.as_mut_ptr() as *mut c_void, s.len()),
        HostMut::Pinned(p, len) => {
            p.fits::<T>(len)?;
            p.wait(false)?;
            (p.ptr.as_ptr() as *mut c_void, len)
        }
    };
    same_len("device to host", src.len(), len)?;
    // SAFETY: src is a live device range of the bytes copied; `ptr` holds
    // them, exclusively borrowed for this synchronous call, and no copy uses
    // them (pinned memory: waited for above); every bit pattern is a T.
    check(unsafe { cu::cuMemcpyDtoH_v2(ptr, src.addr(), len * std::mem::size_of::<T>()) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoH", source })
}

/// The plain driver copy between device ranges (`cuMemcpyDtoD`, legacy
/// stream): the baseline of device-to-device copies.
pub(crate) fn plain_dtod<T: AnyBits>(src: &impl DevRead<T>, dst: &mut impl DevWrite<T>) -> Result<()> {
    same_len("device to device", src.len(), dst.len())?;
    let bytes = dst.len() * std::mem::size_of::<T>();
    // The copy runs on the legacy stream after this returns: the frees of
    // both sides wait for it (the source's too, which it still reads).
    for t in [src.track(), dst.track()].into_iter().flatten() {
        t.note_legacy();
    }
    // SAFETY: both live device ranges of `bytes`; `&mut` on dst excludes
    // overlap; neither is freed before the legacy stream is done (above).
    check(unsafe { cu::cuMemcpyDtoD_v2(dst.addr(), src.addr(), bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoD", source })
}
