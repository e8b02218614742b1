//! Which memory and streams a [`Gpu`] may use: the owner checks of every
//! operation, and views of memory this crate did not allocate
//! ([`View::from_raw_parts`], [`ViewMut::from_raw_parts`]). Apart from
//! `buffer.rs` and `gpu.rs`, since they need both (`gpu` builds on `buffer`,
//! so `buffer` must not import `gpu`).

use std::sync::Arc;

use crate::device::context::Shared;
use crate::device::gpu::{Gpu, Stream};
use crate::error::{Error, Result};
use crate::memory::buffer::{Pod, View, ViewMut};

impl Gpu {
    /// Refuses buffers or a stream of another `Gpu` handle: their device
    /// pointers and stream belong to another context, where a launch would fault.
    pub(crate) fn check_owned<'s>(
        &self,
        kernel: &'static str,
        buffers: impl IntoIterator<Item = &'s Arc<Shared>>,
        stream: &Stream,
    ) -> Result<()> {
        self.check_buffers_owned(kernel, buffers)?;
        self.check_stream_owned(kernel, stream)
    }

    /// The buffer half of [`Gpu::check_owned`] (for work captured before a stream exists).
    pub(crate) fn check_buffers_owned<'s>(
        &self,
        kernel: &'static str,
        buffers: impl IntoIterator<Item = &'s Arc<Shared>>,
    ) -> Result<()> {
        if buffers.into_iter().any(|g| !Arc::ptr_eq(g, &self.shared)) {
            return Err(Error::ForeignHandle { kernel, what: "buffers" });
        }
        Ok(())
    }

    /// The stream half of [`Gpu::check_owned`].
    pub(crate) fn check_stream_owned(&self, kernel: &'static str, stream: &Stream) -> Result<()> {
        if !Arc::ptr_eq(stream.shared(), &self.shared) {
            return Err(Error::ForeignHandle { kernel, what: "stream" });
        }
        Ok(())
    }
}

impl<'a, T: Pod> View<'a, T> {
    /// A view of `len` elements of `T` at device address `addr`, memory this
    /// crate did not allocate (another library's buffer, a raw allocation).
    ///
    /// Errors when `addr` is null or not aligned for `T`, or `len` bytes would
    /// wrap the address space.
    ///
    /// Such a view is not ordered across streams by this crate (it knows
    /// nothing of the memory's other users): the caller orders it, as the
    /// contract says.
    ///
    /// # Safety
    /// For all of `'a` and until the work queued through the view has finished:
    /// `addr .. addr + len·size_of::<T>()` is device memory allocated in `gpu`'s
    /// context (the device's primary context: memory of `cuMemAlloc` there, or
    /// of cudarc, PyTorch and others that use it), stays allocated, and is not
    /// written by anything else; and work queued through the view is ordered
    /// after every earlier write of the range on other streams (all its work
    /// on one stream, or the caller's events, as cudarc's guards do).
    pub unsafe fn from_raw_parts(gpu: &'a Gpu, addr: u64, len: usize) -> Result<Self> {
        let (addr, len) = raw_range::<T>(addr, len)?;
        // SAFETY: the caller's contract is `from_checked`'s and more.
        Ok(unsafe { View::from_checked(&gpu.shared, addr, len) })
    }
}

impl<'a, T: Pod> ViewMut<'a, T> {
    /// A writable view of `len` elements of `T` at device address `addr`, memory
    /// this crate did not allocate. Errors as [`View::from_raw_parts`].
    ///
    /// # Safety
    /// As [`View::from_raw_parts`], and nothing else reads or writes the range
    /// for all of `'a` and until the work queued through the view has finished;
    /// work queued through the view is ordered after every earlier read and
    /// write of the range on other streams.
    pub unsafe fn from_raw_parts(gpu: &'a Gpu, addr: u64, len: usize) -> Result<Self> {
        let (addr, len) = raw_range::<T>(addr, len)?;
        // SAFETY: the caller's contract is `from_checked`'s and more.
        Ok(unsafe { ViewMut::from_checked(&gpu.shared, addr, len) })
    }
}

/// Checks a foreign device range: non-null, aligned for `T`, no wrap-around.
fn raw_range<T>(addr: u64, len: usize) -> Result<(u64, usize)> {
    let size = std::mem::size_of::<T>() as u64;
    let bytes = (len as u64).checked_mul(size).and_then(|b| addr.checked_add(b));
    if addr == 0 || !addr.is_multiple_of(std::mem::align_of::<T>() as u64) || bytes.is_none() {
        return Err(Error::Shape {
            kernel: "from_raw_parts",
            detail: format!("{len} elements at {addr:#x}: null, misaligned for the element type, or wrapping"),
        });
    }
    Ok((addr, len))
}
