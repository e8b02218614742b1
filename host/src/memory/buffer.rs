//! Typed device memory: owned [`DeviceVec`]s and borrowed [`View`]/[`ViewMut`] ranges.
//!
//! A view borrows its buffer, so the borrow checker guarantees the memory outlives
//! every use of the view, and that an output view never aliases an input. A
//! view also carries its allocation's tracker (`raw::Track`): work queued on
//! one stream is ordered after other streams' work on the same buffer, so a
//! borrow that ends when a call returns is enough even while the kernel runs
//! on (see `raw/order.rs`).

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::device::context::Shared;
use crate::error::{Error, Result};
pub use crate::memory::element::{Element, Pod};
use crate::raw::{self, DevRead, DevWrite, Track};

/// Resolves a range against a length, or says why it does not fit.
pub(crate) fn bounds(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::OutOfBounds { start, end, len });
    }
    Ok((start, end))
}

/// An owned array of `T` in device memory. Freed on drop, once the work queued
/// on it (on any stream) is done.
///
/// Fresh buffers hold unspecified bits. Work queued on one stream waits for
/// earlier work on it queued on another, so no kernel reads what another
/// stream may still write, or writes what it may still read. `Send + Sync`: any thread may use it, and
/// the owning [`crate::Gpu`]'s context is made current for each operation.
///
/// ```no_run
/// # fn f(gpu: &gpukern::Gpu) -> gpukern::Result<()> {
/// let (x, mut y) = (gpu.upload(&[1.0f32, -2.0])?, gpu.alloc::<f32>(2)?);
/// gpu.unary(gpukern::UnaryOp::Neg, &x, &mut y, &gpu.stream()?)?;
/// assert_eq!(y.to_vec()?, [-1.0, 2.0]); // ordered after the kernel
/// # Ok(()) }
/// ```
pub struct DeviceVec<T: Pod> {
    /// Freed on drop (while the context is live).
    _mem: raw::DeviceAlloc,
    addr: u64,
    len: usize,
    gpu: Arc<Shared>,
    _t: PhantomData<T>,
}

impl<T: Pod> DeviceVec<T> {
    pub(crate) fn alloc(gpu: Arc<Shared>, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or(Error::OutOfBounds {
            start: 0,
            end: len,
            len: usize::MAX / std::mem::size_of::<T>(),
        })?;
        let mem = raw::alloc(&gpu.ctx, bytes).map_err(|e| gpu.fault_of(e))?;
        Ok(Self { addr: mem.addr(), _mem: mem, len, gpu, _t: PhantomData })
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device address of the first element.
    pub fn device_addr(&self) -> u64 {
        self.addr
    }
    /// The whole buffer, read-only.
    pub fn view(&self) -> View<'_, T> {
        View { addr: self.addr, len: self.len, gpu: &self.gpu, track: Some(self._mem.track()), _t: PhantomData }
    }
    /// The whole buffer, writable.
    pub fn view_mut(&mut self) -> ViewMut<'_, T> {
        ViewMut { addr: self.addr, len: self.len, gpu: &self.gpu, track: Some(self._mem.track()), _t: PhantomData }
    }
    /// A read-only sub-range, e.g. `buf.slice(3..)` (an unaligned start is allowed).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<View<'_, T>> {
        self.view().slice(range)
    }
    /// A writable sub-range.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<ViewMut<'_, T>> {
        self.view_mut().into_slice(range)
    }
    /// Copies the whole buffer to a new host vector (waits for the copy).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.view().to_vec()
    }
    /// Overwrites the whole buffer from a host slice of the same length,
    /// waiting for the copy (as `<[T]>::copy_from_slice`); on a stream:
    /// [`DeviceVec::copy_from`].
    pub fn copy_from_slice(&mut self, src: &[T]) -> Result<()> {
        self.view_mut().copy_from_slice(src)
    }
    /// Sets every element to the bit pattern `bits` (e.g. a poison value):
    /// see [`ViewMut::fill_bits`].
    pub fn fill_bits(&mut self, bits: u64) -> Result<()> {
        self.view_mut().fill_bits(bits)
    }
    /// Sets every element to `value`: see [`ViewMut::fill`].
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.view_mut().fill(value)
    }
}

impl<T: Pod> std::fmt::Debug for DeviceVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceVec<{}>({} @ {:#x})", std::any::type_name::<T>(), self.len, self.addr)
    }
}

/// A read-only range of device memory borrowed from a [`DeviceVec`].
///
/// ```no_run
/// # use gpukern::{DeviceVec as D, Gpu, Stream}; fn f(gpu: &Gpu, x: &D<f32>, y: &mut D<f32>, s: &Stream) -> gpukern::Result<()> {
/// let tail = x.slice(1..)?; // a View of all but the first element
/// gpu.unary(gpukern::UnaryOp::Abs, tail, y.slice_mut(..tail.len())?, s)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct View<'a, T: Pod> {
    addr: u64,
    len: usize,
    gpu: &'a Arc<Shared>,
    /// `None` for foreign memory (`from_raw_parts`).
    track: Option<&'a Track>,
    _t: PhantomData<&'a [T]>,
}

impl<'a, T: Pod> View<'a, T> {
    /// A sub-range of this view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<View<'a, T>> {
        let (s, e) = bounds(range, self.len)?;
        Ok(View { addr: self.addr + (s * std::mem::size_of::<T>()) as u64, len: e - s, ..*self })
    }
    /// Copies to a new host vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let _live = self.gpu.bind()?;
        let mut out = vec![T::ZERO; self.len];
        raw::download(&mut out, self).map_err(|e| self.gpu.fault_of(e))?;
        Ok(out)
    }
    /// This view as an operand an operation reads, for as long as `'a`
    /// (`None`: foreign memory, or empty).
    pub(crate) fn use_as_input(&self) -> Option<raw::Use<'a>> {
        self.use_of(false)
    }

    /// A view of a range this crate already checked, untracked: for work
    /// queued where ordering is done by the caller (a graph's capture, whose
    /// buffers are ordered when the graph launches).
    ///
    /// # Safety
    /// `addr .. addr + len·size_of::<T>()` lies in memory of `gpu`'s context
    /// that is borrowed (shared or exclusively) for all of `'a`; work queued
    /// through the view is ordered against other streams by the caller.
    pub(crate) unsafe fn from_checked(gpu: &'a Arc<Shared>, addr: u64, len: usize) -> Self {
        View { addr, len, gpu, track: None, _t: PhantomData }
    }
}

/// A writable range of device memory borrowed exclusively from a [`DeviceVec`].
///
/// ```no_run
/// # fn f(gpu: &gpukern::Gpu, x: &gpukern::DeviceVec<f32>, s: &gpukern::Stream) -> gpukern::Result<()> {
/// let mut y = gpu.alloc::<f32>(x.len())?;
/// let (mut lo, hi) = y.view_mut().into_split_at(x.len() / 2)?; // disjoint halves
/// gpu.unary(gpukern::UnaryOp::Neg, x.slice(..lo.len())?, &mut lo, s)?;
/// gpu.unary(gpukern::UnaryOp::Relu, x.slice(lo.len()..)?, hi, s)?;
/// # Ok(()) }
/// ```
pub struct ViewMut<'a, T: Pod> {
    addr: u64,
    len: usize,
    gpu: &'a Arc<Shared>,
    /// `None` for foreign memory (`from_raw_parts`).
    track: Option<&'a Track>,
    _t: PhantomData<&'a mut [T]>,
}

impl<'a, T: Pod> ViewMut<'a, T> {
    /// Reborrows as read-only.
    pub fn as_view(&self) -> View<'_, T> {
        View { addr: self.addr, len: self.len, gpu: self.gpu, track: self.track, _t: PhantomData }
    }
    /// The same range, writable, for as long as `&mut self` (no checks, no
    /// driver call): pass a `ViewMut` to a call and keep it for the next one.
    pub fn reborrow(&mut self) -> ViewMut<'_, T> {
        ViewMut { addr: self.addr, len: self.len, gpu: self.gpu, track: self.track, _t: PhantomData }
    }
    /// Reborrows as a shorter writable view (the borrow keeps `self` locked).
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<ViewMut<'_, T>> {
        self.reborrow().into_slice(range)
    }
    /// Consumes the view, keeping `range` of it.
    fn into_slice(self, range: impl RangeBounds<usize>) -> Result<ViewMut<'a, T>> {
        let (s, e) = bounds(range, self.len)?;
        Ok(ViewMut { addr: self.addr + (s * std::mem::size_of::<T>()) as u64, len: e - s, ..self })
    }
    /// Splits into two disjoint writable views at `mid`.
    pub fn split_at_mut(&mut self, mid: usize) -> Result<(ViewMut<'_, T>, ViewMut<'_, T>)> {
        self.reborrow().into_split_at(mid)
    }
    /// Consumes the view and splits it into two disjoint views at `mid` that keep
    /// the original borrow (so both can outlive this call).
    pub fn into_split_at(self, mid: usize) -> Result<(ViewMut<'a, T>, ViewMut<'a, T>)> {
        if mid > self.len {
            return Err(Error::OutOfBounds { start: mid, end: self.len, len: self.len });
        }
        let size = std::mem::size_of::<T>() as u64;
        let (gpu, track) = (self.gpu, self.track);
        let head = ViewMut { addr: self.addr, len: mid, gpu, track, _t: PhantomData };
        let tail = ViewMut { addr: self.addr + mid as u64 * size, len: self.len - mid, gpu, track, _t: PhantomData };
        Ok((head, tail))
    }

    /// Overwrites from a host slice of the same length, waiting for the copy;
    /// on a stream: [`ViewMut::copy_from`].
    pub fn copy_from_slice(&mut self, src: &[T]) -> Result<()> {
        let _live = self.gpu.bind()?;
        raw::upload(self, src).map_err(|e| self.gpu.fault_of(e))
    }
    /// Sets every element to the bit pattern `bits`, of the element's
    /// width: each element, read as an unsigned integer of its size, is
    /// `bits` (`fill_bits(1)` on `u64` gives 1, on `f32` the bits
    /// `0x0000_0001`). Asynchronous on the legacy stream, which the
    /// library's streams are ordered with.
    ///
    /// Errors: `bits` does not fit the element ([`Error::FillBits`]: it is
    /// never truncated; for a generic element type, [`ViewMut::fill`] with
    /// a value); the device was reset.
    pub fn fill_bits(&mut self, bits: u64) -> Result<()> {
        let _live = self.gpu.bind()?;
        raw::fill_bits(self, bits).map_err(|e| self.gpu.fault_of(e))
    }
    /// Sets every element to `value` (its bits, as [`ViewMut::fill_bits`]).
    pub fn fill(&mut self, value: T) -> Result<()> {
        // The value's bytes as the little-endian integer a memset writes
        // back as those bytes (elements are at most 8 bytes).
        self.fill_bits(u64::from_le_bytes(raw::slot_of(&value)))
    }
    /// This view as an operand an operation writes, for as long as `'a`.
    pub(crate) fn use_as_output(&self) -> Option<raw::Use<'a>> {
        self.use_of(true)
    }

    /// A writable view of a range this crate already checked, untracked (as
    /// [`View::from_checked`]).
    ///
    /// # Safety
    /// `addr .. addr + len·size_of::<T>()` lies in memory of `gpu`'s context
    /// that is exclusively borrowed for all of `'a`, and no other live view
    /// writes it while this one is used; work queued through the view is
    /// ordered against other streams by the caller.
    pub(crate) unsafe fn from_checked(gpu: &'a Arc<Shared>, addr: u64, len: usize) -> Self {
        ViewMut { addr, len, gpu, track: None, _t: PhantomData }
    }
}

/// Things that can be read as a view: `&DeviceVec<T>`, `View<T>`, `&View<T>`
/// and `&ViewMut<T>` (read-only while borrowed).
pub trait AsView<'a, T: Pod> {
    /// The read-only view.
    fn into_view(self) -> View<'a, T>;
}

impl<'a, T: Pod> AsView<'a, T> for &'a View<'_, T> {
    fn into_view(self) -> View<'a, T> {
        *self
    }
}

impl<'a, T: Pod> AsView<'a, T> for &'a ViewMut<'_, T> {
    fn into_view(self) -> View<'a, T> {
        self.as_view()
    }
}

impl<'a, T: Pod> AsView<'a, T> for &'a DeviceVec<T> {
    fn into_view(self) -> View<'a, T> {
        self.view()
    }
}

impl<'a, T: Pod> AsView<'a, T> for View<'a, T> {
    fn into_view(self) -> View<'a, T> {
        self
    }
}

/// Things that can be written as a view: `&mut DeviceVec<T>`, `ViewMut<T>`
/// and `&mut ViewMut<T>` (a [`ViewMut::reborrow`]).
pub trait AsViewMut<'a, T: Pod> {
    /// The writable view.
    fn into_view_mut(self) -> ViewMut<'a, T>;
}

impl<'a, T: Pod> AsViewMut<'a, T> for &'a mut ViewMut<'_, T> {
    fn into_view_mut(self) -> ViewMut<'a, T> {
        self.reborrow()
    }
}

impl<'a, T: Pod> AsViewMut<'a, T> for &'a mut DeviceVec<T> {
    fn into_view_mut(self) -> ViewMut<'a, T> {
        self.view_mut()
    }
}

impl<'a, T: Pod> AsViewMut<'a, T> for ViewMut<'a, T> {
    fn into_view_mut(self) -> ViewMut<'a, T> {
        self
    }
}

// What raw may read and write: the views and buffers of this module.
// SAFETY (all five): a view is made only from a live DeviceVec's range, with
// its allocation's tracker (or by the unsafe `from_raw_parts`, whose contract
// says the same and orders the memory itself; or by `from_checked`, whose
// caller orders it), and borrows it for 'a, so the range stays allocated;
// views and buffers never change their address, length or tracker; a ViewMut
// or `&mut DeviceVec` is the only access to its range while borrowed (slices
// of one buffer never overlap).
// (`View`'s and `ViewMut`'s `DevRead`: in `views_share!` below.)

// SAFETY: as above.
unsafe impl<T: Pod> DevWrite<T> for ViewMut<'_, T> {}

// SAFETY: as above.
unsafe impl<T: Pod> DevRead<T> for DeviceVec<T> {
    fn addr(&self) -> u64 {
        self.addr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn track(&self) -> Option<&Track> {
        Some(self._mem.track())
    }
}

// SAFETY: as above.
unsafe impl<T: Pod> DevWrite<T> for DeviceVec<T> {}

/// What `View` and `ViewMut` share: their range, owner and tracker, and
/// raw's `DevRead` over them (one definition for both).
macro_rules! views_share {
    ($($view:ident),*) => {$(
        impl<'a, T: Pod> $view<'a, T> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }
            /// True when empty.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }
            /// Device address of the first element.
            pub fn addr(&self) -> u64 {
                self.addr
            }
            /// The `Gpu` handle whose context owns the memory.
            pub(crate) fn owner(&self) -> &'a Arc<Shared> {
                self.gpu
            }
            /// The range as an operand (`None`: foreign memory, or empty).
            fn use_of(&self, write: bool) -> Option<raw::Use<'a>> {
                raw::Use::of_range(self.track?, self.addr, self.len * std::mem::size_of::<T>(), write)
            }
        }

        // SAFETY: as above (the views' contract).
        unsafe impl<T: Pod> DevRead<T> for $view<'_, T> {
            fn addr(&self) -> u64 {
                self.addr
            }
            fn len(&self) -> usize {
                self.len
            }
            fn track(&self) -> Option<&Track> {
                self.track
            }
        }
    )*};
}
views_share!(View, ViewMut);
