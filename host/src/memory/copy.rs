//! Copies on a stream: host to device, device to host, device to device.
//! Each is ordered like a kernel (after other streams' work on the same
//! buffers, `raw/order.rs`). Host memory is any slice (the call returns once
//! the slice may be reused or read) or a [`PinnedVec`] (the copy is only
//! queued; the `PinnedVec` waits for it when the host touches it).

use std::sync::Arc;

use crate::device::context::Shared;
use crate::device::gpu::Stream;
use crate::error::{Error, Result};
use crate::memory::buffer::{AsView, AsViewMut, DeviceVec, Pod, View, ViewMut};
use crate::memory::pinned::{HostDst, HostSrc, PinnedVec};
use crate::raw;

impl<T: Pod> DeviceVec<T> {
    /// Copies all of `src` into this buffer, queued on `stream`, destination
    /// first as in `<[T]>::copy_from_slice`. `src` is device memory
    /// (`&DeviceVec`, `View`, `&View`, `&ViewMut`: returns at once) or host
    /// memory (`&[T]`, `&Vec<T>`: returns once the copy is done;
    /// `&PinnedVec`: returns at once, and writing the `PinnedVec` waits for
    /// the copy).
    ///
    /// ```no_run
    /// # fn f(gpu: &gpukern::Gpu) -> gpukern::Result<()> {
    /// let stream = gpu.stream()?;
    /// let (mut a, mut b) = (gpu.alloc::<f32>(4)?, gpu.alloc::<f32>(4)?);
    /// a.copy_from(&[1.0, 2.0, 3.0, 4.0], &stream)?; // host to device
    /// b.copy_from(&a, &stream)?; // device to device
    /// b.slice_mut(..2)?.copy_from(a.slice(2..)?, &stream)?; // views
    /// let mut host = vec![0.0f32; 4];
    /// gpukern::HostCopyFrom::copy_from(&mut host[..], &b, &stream)?; // device to host
    /// # Ok(()) }
    /// ```
    ///
    /// Errors (nothing is queued): lengths differ ([`Error::CopyLength`]); a
    /// buffer, view or `PinnedVec` belongs to another `Gpu` handle than the
    /// stream; the device was reset. A kernel fault met by a copy from host
    /// memory comes back as [`Error::KernelFault`].
    pub fn copy_from<'s>(&mut self, src: impl CopySrc<'s, T>, stream: &Stream) -> Result<()> {
        src.copy_into(self.view_mut(), stream)
    }
}

impl<T: Pod> ViewMut<'_, T> {
    /// Copies all of `src` into this view, queued on `stream`: as
    /// [`DeviceVec::copy_from`].
    pub fn copy_from<'s>(&mut self, src: impl CopySrc<'s, T>, stream: &Stream) -> Result<()> {
        src.copy_into(self.reborrow(), stream)
    }
}

impl<T: Pod> PinnedVec<T> {
    /// Copies all of device memory `src` (`&DeviceVec`, `View`, `&View`,
    /// `&ViewMut`) into this `PinnedVec`, queued on `stream`; returns at once
    /// (reading the `PinnedVec` waits for the copy). Errors as
    /// [`DeviceVec::copy_from`].
    pub fn copy_from<'s>(&mut self, src: impl AsView<'s, T>, stream: &Stream) -> Result<()> {
        to_host(stream.shared(), Via::Stream(stream), src, self)
    }
}

/// `copy_from` for host slices (and `Vec`s, through `[T]`): device memory
/// into ordinary host memory, destination first. A trait because `[T]` is
/// not this crate's type: bring it in scope (`use gpukern::HostCopyFrom;`).
pub trait HostCopyFrom<T: Pod> {
    /// Copies all of device memory `src` (`&DeviceVec`, `View`, `&View`,
    /// `&ViewMut`) into this slice, queued on `stream` after the work queued
    /// before it; returns once the data is here. Errors as
    /// [`DeviceVec::copy_from`].
    fn copy_from<'s>(&mut self, src: impl AsView<'s, T>, stream: &Stream) -> Result<()>;
}

impl<T: Pod> HostCopyFrom<T> for [T] {
    fn copy_from<'s>(&mut self, src: impl AsView<'s, T>, stream: &Stream) -> Result<()> {
        to_host(stream.shared(), Via::Stream(stream), src, self)
    }
}

/// What [`DeviceVec::copy_from`] and [`ViewMut::copy_from`] read: device
/// memory (`&DeviceVec<T>`, `View<T>`, `&View<T>`, `&ViewMut<T>`) or host
/// memory (`&[T]`, `&[T; N]`, `&Vec<T>`, `&PinnedVec<T>`).
pub trait CopySrc<'a, T: Pod> {
    /// Queues the copy of all of `self` into `dst` on `stream` (opaque).
    #[doc(hidden)]
    fn copy_into(self, dst: ViewMut<'_, T>, stream: &Stream) -> Result<()>;
}

/// `CopySrc` for device memory (anything [`AsView`]).
macro_rules! device_src {
    ($($ty:ty),*) => {$(
        impl<'a, T: Pod> CopySrc<'a, T> for $ty {
            fn copy_into(self, dst: ViewMut<'_, T>, stream: &Stream) -> Result<()> {
                device_to_device(stream.shared(), Via::Stream(stream), self, dst)
            }
        }
    )*};
}
device_src!(&'a DeviceVec<T>, View<'a, T>, &'a View<'_, T>, &'a ViewMut<'_, T>);

/// `CopySrc` for host memory (anything [`HostSrc`]).
macro_rules! host_src {
    ($($ty:ty $(, $n:ident)?);*) => {$(
        impl<'a, T: Pod $(, const $n: usize)?> CopySrc<'a, T> for &'a $ty {
            fn copy_into(self, dst: ViewMut<'_, T>, stream: &Stream) -> Result<()> {
                to_device(stream.shared(), Via::Stream(stream), &self[..], dst)
            }
        }
    )*};
}
host_src!([T]; [T; N], N; Vec<T>);

impl<'a, T: Pod> CopySrc<'a, T> for &'a PinnedVec<T> {
    fn copy_into(self, dst: ViewMut<'_, T>, stream: &Stream) -> Result<()> {
        to_device(stream.shared(), Via::Stream(stream), self, dst)
    }
}

/// The stream forms of the copies, source first: replaced by `copy_from`
/// on the destination.
impl Stream {
    /// Copies host memory `src` into all of `dst`, queued on this stream.
    #[deprecated(note = "use dst.copy_from(&src, &stream)")]
    pub fn copy_from_host<'a, T: Pod, H: HostSrc<T> + ?Sized>(
        &self,
        src: &H,
        dst: impl AsViewMut<'a, T>,
    ) -> Result<()> {
        to_device(self.shared(), Via::Stream(self), src, dst)
    }

    /// Copies all of `src` into host memory `dst`, queued on this stream.
    #[deprecated(note = "use dst.copy_from(&src, &stream) (slices: `use gpukern::HostCopyFrom`)")]
    pub fn copy_to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(&self, src: impl AsView<'a, T>, dst: &mut H) -> Result<()> {
        to_host(self.shared(), Via::Stream(self), src, dst)
    }

    /// Copies all of `src` into `dst` (device to device), queued on this stream.
    #[deprecated(note = "use dst.copy_from(&src, &stream)")]
    pub fn copy<'a, 'b, T: Pod>(&self, src: impl AsView<'a, T>, dst: impl AsViewMut<'b, T>) -> Result<()> {
        device_to_device(self.shared(), Via::Stream(self), src, dst)
    }
}

/// Which copy: this crate's, on a stream, or the plain driver copy on the
/// legacy stream (the report's baseline).
#[derive(Clone, Copy)]
pub(crate) enum Via<'s> {
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

pub(crate) fn to_device<'a, T: Pod, H: HostSrc<T> + ?Sized>(
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

pub(crate) fn to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(
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

pub(crate) fn device_to_device<'a, 'b, T: Pod>(
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
