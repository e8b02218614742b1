//! Copies on a stream: host to device, device to host, device to device.
//! Each is ordered like a kernel (after other streams' work on the same
//! buffers, `raw/order.rs`). Host memory is any slice (the call returns once
//! the slice may be reused or read) or a [`PinnedVec`] (the copy is only
//! queued; the `PinnedVec` waits for it when the host touches it).

use std::sync::Arc;

use crate::buffer::{AsView, AsViewMut, Pod};
use crate::context::Shared;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream};
use crate::pinned::{HostDst, HostSrc, PinnedVec};
use crate::raw;

impl Gpu {
    /// `len` zeroed elements of page-locked host memory, for asynchronous
    /// copies at the bus's full rate ([`PinnedVec`]).
    ///
    /// Errors: the host cannot allocate ([`Error::HostOutOfMemory`]) or the
    /// driver cannot page-lock the memory.
    pub fn alloc_pinned<T: Pod>(&self, len: usize) -> Result<PinnedVec<T>> {
        PinnedVec::alloc(self.shared.clone(), len)
    }
}

impl Stream {
    /// Copies host memory `src` into all of `dst`, queued on this stream.
    /// From a slice or `Vec`, returns once the copy is done; from a
    /// [`PinnedVec`], returns at once (writing the `PinnedVec` waits for it).
    ///
    /// Errors (nothing is queued): lengths differ ([`Error::CopyLength`]); `dst`
    /// or the `PinnedVec` belongs to another `Gpu` handle; the device was reset.
    /// A kernel fault met by the copy comes back as [`Error::KernelFault`].
    pub fn copy_from_host<'a, T: Pod, H: HostSrc<T> + ?Sized>(
        &self,
        src: &H,
        dst: impl AsViewMut<'a, T>,
    ) -> Result<()> {
        to_device(self.shared(), Via::Stream(self), src, dst)
    }

    /// Copies all of `src` into host memory `dst`, queued on this stream
    /// after the work queued before it. Into a slice or `Vec`, returns once
    /// the data is there; into a [`PinnedVec`], returns at once (reading the
    /// `PinnedVec` waits for it).
    ///
    /// Errors as [`Stream::copy_from_host`].
    pub fn copy_to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(&self, src: impl AsView<'a, T>, dst: &mut H) -> Result<()> {
        to_host(self.shared(), Via::Stream(self), src, dst)
    }

    /// Copies all of `src` into `dst` (device to device), queued on this
    /// stream; returns at once.
    ///
    /// Errors (nothing is queued): lengths differ; a view belongs to another
    /// `Gpu` handle, or to a device that was reset since.
    pub fn copy<'a, 'b, T: Pod>(&self, src: impl AsView<'a, T>, dst: impl AsViewMut<'b, T>) -> Result<()> {
        device_to_device(self.shared(), Via::Stream(self), src, dst)
    }
}

impl crate::Studies<'_> {
    /// The plain driver copy `cuMemcpyHtoD` (synchronous, legacy stream) of
    /// `src` into all of `dst`: the baseline of [`Stream::copy_from_host`].
    pub fn cu_memcpy_to_device<'a, T: Pod, H: HostSrc<T> + ?Sized>(
        &self,
        src: &H,
        dst: impl AsViewMut<'a, T>,
    ) -> Result<()> {
        to_device(&self.shared, Via::Plain, src, dst)
    }

    /// The plain driver copy `cuMemcpyDtoH` of all of `src` into `dst`: the
    /// baseline of [`Stream::copy_to_host`].
    pub fn cu_memcpy_to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(
        &self,
        src: impl AsView<'a, T>,
        dst: &mut H,
    ) -> Result<()> {
        to_host(&self.shared, Via::Plain, src, dst)
    }

    /// The plain driver copy `cuMemcpyDtoD` (legacy stream; returns once
    /// queued, as the driver documents): the baseline of [`Stream::copy`].
    pub fn cu_memcpy<'a, 'b, T: Pod>(&self, src: impl AsView<'a, T>, dst: impl AsViewMut<'b, T>) -> Result<()> {
        device_to_device(&self.shared, Via::Plain, src, dst)
    }
}

/// Which copy: this crate's, on a stream, or the plain driver copy on the
/// legacy stream (the report's baseline).
#[derive(Clone, Copy)]
enum Via<'s> {
    Stream(&'s Stream),
    Plain,
}

/// Refuses memory of another `Gpu` than `shared` (the stream is `shared`'s).
fn check_owners(shared: &Arc<Shared>, owners: &[Option<&Arc<Shared>>]) -> Result<()> {
    if owners.iter().flatten().any(|g| !Arc::ptr_eq(g, shared)) {
        return Err(Error::ForeignHandle { kernel: "copy", what: "buffers" });
    }
    Ok(())
}

fn to_device<'a, T: Pod, H: HostSrc<T> + ?Sized>(
    shared: &Arc<Shared>,
    via: Via<'_>,
    src: &H,
    dst: impl AsViewMut<'a, T>,
) -> Result<()> {
    let (mut dst, host) = (dst.into_view_mut(), src.host_src());
    check_owners(shared, &[Some(dst.owner()), host.1])?;
    // Same context as the stream, so the liveness check covers all of them.
    let _live = shared.bind()?;
    match via {
        Via::Stream(s) => raw::copy_to_device(host.0, &mut dst, s.raw()),
        Via::Plain => raw::plain_htod(host.0, &mut dst),
    }
    .map_err(|e| shared.fault_of(e))
}

fn to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(
    shared: &Arc<Shared>,
    via: Via<'_>,
    src: impl AsView<'a, T>,
    dst: &mut H,
) -> Result<()> {
    let (src, host) = (src.into_view(), dst.host_dst());
    check_owners(shared, &[Some(src.owner()), host.1])?;
    let _live = shared.bind()?;
    match via {
        Via::Stream(s) => raw::copy_to_host(&src, host.0, s.raw()),
        Via::Plain => raw::plain_dtoh(&src, host.0),
    }
    .map_err(|e| shared.fault_of(e))
}

fn device_to_device<'a, 'b, T: Pod>(
    shared: &Arc<Shared>,
    via: Via<'_>,
    src: impl AsView<'a, T>,
    dst: impl AsViewMut<'b, T>,
) -> Result<()> {
    let (src, mut dst) = (src.into_view(), dst.into_view_mut());
    check_owners(shared, &[Some(src.owner()), Some(dst.owner())])?;
    let _live = shared.bind()?;
    match via {
        Via::Stream(s) => raw::copy_async(&src, &mut dst, s.raw()),
        Via::Plain => raw::plain_dtod(&src, &mut dst),
    }
    .map_err(|e| shared.fault_of(e))
}
