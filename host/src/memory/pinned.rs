//! Page-locked host memory ([`PinnedVec`]) and the host memory a copy takes
//! ([`HostSrc`], [`HostDst`]: slices, `Vec`s and `PinnedVec`s).

use std::marker::PhantomData;
use std::sync::Arc;

use crate::device::context::Shared;
use crate::error::Result;
use crate::memory::buffer::Pod;
use crate::raw;

/// Host memory that copies reach by DMA directly (page-locked, registered
/// with the driver): copies from and to it run asynchronously, at the bus's
/// full rate, where copies of ordinary (pageable) memory go through the
/// driver's staging buffers and block the host.
///
/// Copies into it ([`PinnedVec::copy_from`]) are only queued; reading
/// it ([`PinnedVec::as_slice`]) waits for them, and writing it
/// ([`PinnedVec::as_mut_slice`]) waits for the copies that read it too. Freed
/// on drop, after the copies that use it. Made by [`PinnedVec::new`],
/// zeroed.
///
/// Once a reset of the device has begun ([`crate::Gpu::reset`]), copies
/// queued before it can no longer be waited for: a `PinnedVec` a copy wrote
/// (for `as_mut_slice`: used at all) since it was last waited for refuses
/// access with [`crate::Error::DeviceReset`], and its drop leaks the memory
/// rather than free it under a transfer that may still run. One no copy used
/// stays readable and writable, and is freed.
pub struct PinnedVec<T: Pod> {
    mem: raw::PinnedHost,
    len: usize,
    gpu: Arc<Shared>,
    _t: PhantomData<T>,
}

impl<T: Pod> PinnedVec<T> {
    /// `len` zeroed elements of page-locked host memory, registered with
    /// `gpu`'s context, for asynchronous copies at the bus's full rate.
    ///
    /// Errors: the host cannot allocate ([`crate::Error::HostOutOfMemory`])
    /// or the driver cannot page-lock the memory.
    ///
    /// ```no_run
    /// use gpukern::{Gpu, PinnedVec};
    /// let gpu = Gpu::new(0)?;
    /// let s = gpu.stream()?;
    /// let d = gpu.upload(&[1.0f32, 2.0, 3.0])?;
    /// let mut host = PinnedVec::<f32>::new(&gpu, 3)?;
    /// host.copy_from(&d, &s)?; // queued: returns at once
    /// assert_eq!(host.as_slice()?, &[1.0, 2.0, 3.0]); // waits for the copy
    /// # Ok::<(), gpukern::Error>(())
    /// ```
    pub fn new(gpu: &crate::Gpu, len: usize) -> Result<Self> {
        Self::alloc(gpu.shared.clone(), len)
    }

    pub(crate) fn alloc(gpu: Arc<Shared>, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>());
        let bytes = bytes.ok_or(crate::Error::HostOutOfMemory { bytes: usize::MAX })?;
        Ok(PinnedVec { mem: raw::PinnedHost::new(&gpu.ctx, bytes)?, len, gpu, _t: PhantomData })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, once the copies queued into them are done (a fault in
    /// one comes back as [`crate::Error::KernelFault`]; a reset of the
    /// device under way or done as [`crate::Error::DeviceReset`] when a copy
    /// wrote them, see the type's docs).
    pub fn as_slice(&self) -> Result<&[T]> {
        self.mem.as_slice(self.len).map_err(|e| self.gpu.fault_of(e))
    }

    /// The elements, writable, once every copy queued from or into them is done.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        let len = self.len;
        self.mem.as_mut_slice(len).map_err(|e| self.gpu.fault_of(e))
    }
}

impl<T: Pod> std::fmt::Debug for PinnedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedVec<{}>({} elements, {} bytes)", std::any::type_name::<T>(), self.len, self.mem.bytes())
    }
}

/// Host memory a copy reads: `[T]`, `Vec<T>` or a [`PinnedVec`]. Sealed.
pub trait HostSrc<T: Pod> {
    /// How the copy reaches it (opaque).
    #[doc(hidden)]
    fn host_src(&self) -> HostRef<'_, T>;
}

/// Host memory a copy writes: `[T]`, `Vec<T>` or a [`PinnedVec`]. Sealed.
pub trait HostDst<T: Pod> {
    /// How the copy reaches it (opaque).
    #[doc(hidden)]
    fn host_dst(&mut self) -> HostMut<'_, T>;
}

/// Opaque: host memory a copy reads.
#[doc(hidden)]
pub struct HostRef<'a, T>(pub(crate) raw::Host<'a, T>, pub(crate) Option<&'a Arc<Shared>>);

/// Opaque: host memory a copy writes.
#[doc(hidden)]
pub struct HostMut<'a, T>(pub(crate) raw::HostMut<'a, T>, pub(crate) Option<&'a Arc<Shared>>);

impl<T: Pod> HostSrc<T> for [T] {
    fn host_src(&self) -> HostRef<'_, T> {
        HostRef(raw::Host::Slice(self), None)
    }
}

impl<T: Pod> HostSrc<T> for Vec<T> {
    fn host_src(&self) -> HostRef<'_, T> {
        HostRef(raw::Host::Slice(self), None)
    }
}

impl<T: Pod> HostSrc<T> for PinnedVec<T> {
    fn host_src(&self) -> HostRef<'_, T> {
        HostRef(raw::Host::Pinned(&self.mem, self.len), Some(&self.gpu))
    }
}

impl<T: Pod> HostDst<T> for [T] {
    fn host_dst(&mut self) -> HostMut<'_, T> {
        HostMut(raw::HostMut::Slice(self), None)
    }
}

impl<T: Pod> HostDst<T> for Vec<T> {
    fn host_dst(&mut self) -> HostMut<'_, T> {
        HostMut(raw::HostMut::Slice(self), None)
    }
}

impl<T: Pod> HostDst<T> for PinnedVec<T> {
    fn host_dst(&mut self) -> HostMut<'_, T> {
        HostMut(raw::HostMut::Pinned(&mut self.mem, self.len), Some(&self.gpu))
    }
}
