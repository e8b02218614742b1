//! Copies on a stream: host to device, device to host, device to device.
//! Each is ordered like a kernel (after other streams' work on the same
//! buffers, `raw/order.rs`). Host memory is any slice (the call returns once
//! the slice may be reused or read) or a [`PinnedVec`] (the copy is only
//! queued; the `PinnedVec` waits for it when the host touches it).

use std::sync::Arc;

use crate::buffer::{AsView, AsViewMut, Pod};
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
        let mut dst = dst.into_view_mut();
        let host = src.host_src();
        self.check_copy(&[Some(dst.owner()), host.1])?;
        let _live = self.shared().bind()?;
        raw::copy_to_device(host.0, &mut dst, self.raw()).map_err(|e| self.shared().fault_of(e))
    }

    /// Copies all of `src` into host memory `dst`, queued on this stream
    /// after the work queued before it. Into a slice or `Vec`, returns once
    /// the data is there; into a [`PinnedVec`], returns at once (reading the
    /// `PinnedVec` waits for it).
    ///
    /// Errors as [`Stream::copy_from_host`].
    pub fn copy_to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(&self, src: impl AsView<'a, T>, dst: &mut H) -> Result<()> {
        let src = src.into_view();
        let host = dst.host_dst();
        self.check_copy(&[Some(src.owner()), host.1])?;
        let _live = self.shared().bind()?;
        raw::copy_to_host(&src, host.0, self.raw()).map_err(|e| self.shared().fault_of(e))
    }

    /// Copies all of `src` into `dst` (device to device), queued on this
    /// stream; returns at once.
    ///
    /// Errors (nothing is queued): lengths differ; a view belongs to another
    /// `Gpu` handle, or to a device that was reset since.
    pub fn copy<'a, 'b, T: Pod>(&self, src: impl AsView<'a, T>, dst: impl AsViewMut<'b, T>) -> Result<()> {
        let (src, mut dst) = (src.into_view(), dst.into_view_mut());
        self.check_copy(&[Some(src.owner()), Some(dst.owner())])?;
        // Same context as the stream, so the liveness check below covers all three.
        let _live = self.shared().bind()?;
        raw::copy_async(&src, &mut dst, self.raw()).map_err(|e| self.shared().fault_of(e))
    }

    fn check_copy(&self, owners: &[Option<&Arc<crate::context::Shared>>]) -> Result<()> {
        if owners.iter().flatten().any(|g| !Arc::ptr_eq(g, self.shared())) {
            return Err(Error::ForeignHandle { kernel: "copy", what: "buffers" });
        }
        Ok(())
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
        let mut dst = dst.into_view_mut();
        let host = src.host_src();
        self.check_owners(&[Some(dst.owner()), host.1])?;
        let _live = self.shared.bind()?;
        raw::plain_htod(host.0, &mut dst).map_err(|e| self.shared.fault_of(e))
    }

    /// The plain driver copy `cuMemcpyDtoH` of all of `src` into `dst`: the
    /// baseline of [`Stream::copy_to_host`].
    pub fn cu_memcpy_to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(
        &self,
        src: impl AsView<'a, T>,
        dst: &mut H,
    ) -> Result<()> {
        let src = src.into_view();
        let host = dst.host_dst();
        self.check_owners(&[Some(src.owner()), host.1])?;
        let _live = self.shared.bind()?;
        raw::plain_dtoh(&src, host.0).map_err(|e| self.shared.fault_of(e))
    }

    /// The plain driver copy `cuMemcpyDtoD` (legacy stream; returns once
    /// queued, as the driver documents): the baseline of [`Stream::copy`].
    pub fn cu_memcpy<'a, 'b, T: Pod>(&self, src: impl AsView<'a, T>, dst: impl AsViewMut<'b, T>) -> Result<()> {
        let (src, mut dst) = (src.into_view(), dst.into_view_mut());
        self.check_owners(&[Some(src.owner()), Some(dst.owner())])?;
        let _live = self.shared.bind()?;
        raw::plain_dtod(&src, &mut dst).map_err(|e| self.shared.fault_of(e))
    }

    fn check_owners(&self, owners: &[Option<&Arc<crate::context::Shared>>]) -> Result<()> {
        if owners.iter().flatten().any(|g| !Arc::ptr_eq(g, &self.shared)) {
            return Err(Error::ForeignHandle { kernel: "cu_memcpy", what: "buffers" });
        }
        Ok(())
    }
}
