//! The plain driver copies, the baseline the report measures gpukern's
//! copies against.

use crate::error::Result;
use crate::memory::buffer::{AsView, AsViewMut, Pod};
use crate::memory::copy::{device_to_device, to_device, to_host, Via};
use crate::memory::pinned::{HostDst, HostSrc};

impl super::Studies<'_> {
    /// The plain driver copy `cuMemcpyHtoD` (synchronous, legacy stream) of
    /// `src` into all of `dst`: the baseline of [`crate::DeviceVec::copy_from`] from host memory.
    pub fn cu_memcpy_to_device<'a, T: Pod, H: HostSrc<T> + ?Sized>(
        &self,
        src: &H,
        dst: impl AsViewMut<'a, T>,
    ) -> Result<()> {
        to_device(&self.shared, Via::Plain, src, dst)
    }

    /// The plain driver copy `cuMemcpyDtoH` of all of `src` into `dst`: the
    /// baseline of [`crate::HostCopyFrom::copy_from`].
    pub fn cu_memcpy_to_host<'a, T: Pod, H: HostDst<T> + ?Sized>(
        &self,
        src: impl AsView<'a, T>,
        dst: &mut H,
    ) -> Result<()> {
        to_host(&self.shared, Via::Plain, src, dst)
    }

    /// The plain driver copy `cuMemcpyDtoD` (legacy stream; returns once
    /// queued, as the driver documents): the baseline of [`crate::DeviceVec::copy_from`].
    pub fn cu_memcpy<'a, 'b, T: Pod>(&self, src: impl AsView<'a, T>, dst: impl AsViewMut<'b, T>) -> Result<()> {
        device_to_device(&self.shared, Via::Plain, src, dst)
    }
}
