//! The escape hatch's launch: any kernel, any parameters, under the caller's
//! contract (`Module::launch` in `user_launch.rs` checks what it can first).

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::RawFn;
use crate::error::Result;

/// Grid, block and dynamic shared memory of a 3-D launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry3 {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

/// Launches `func` with one 8-byte slot per parameter, each holding the
/// parameter's bytes from the start (a 4-byte value in the first four).
///
/// # Safety
/// The slots must match the kernel's parameters in number, order and type;
/// every address among them must point into memory of the stream's context
/// that stays allocated until the kernel finishes; with this geometry the
/// kernel must read and write only inside those allocations, race with no
/// other work, and use at most `shared_bytes` of dynamic shared memory. With
/// `pdl`, as [`super::launch_overlapped`] adds: the kernel waits
/// (`griddepcontrol.wait`) before it touches memory, and the device is sm_90.
pub(crate) unsafe fn launch_slots(
    func: RawFn,
    g: Geometry3,
    stream: cu::CUstream,
    slots: &mut [[u8; 8]],
    pdl: bool,
) -> Result<()> {
    let mut params: Vec<*mut c_void> = slots.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void).collect();
    // SAFETY: forwarded to the caller's contract; `slots` outlives the call,
    // which copies the values.
    unsafe { super::launch_overlapped(func, g, stream, &mut params, pdl) }
}

/// The 8-byte slot of one scalar parameter: its bytes from the start.
pub(crate) fn slot_of<T: super::AnyBits>(v: &T) -> [u8; 8] {
    let mut slot = [0u8; 8];
    let n = std::mem::size_of::<T>().min(8);
    // SAFETY: reads the first n <= size_of::<T>() bytes of a live T; every
    // byte of an AnyBits type is initialised (no padding).
    let bytes = unsafe { std::slice::from_raw_parts(v as *const T as *const u8, n) };
    slot[..n].copy_from_slice(bytes);
    slot
}

/// Launches a typed kernel (`typed.rs`) whose manifest and `.entry`
/// parameter list were checked at load against the slots' layout, with every
/// slice a live, owned range and its length (outputs exclusive borrows), and
/// the geometry and shared memory checked against the device and the kernel.
/// `uses` are the slices' allocations. Only `TypedKernel::launch` calls it, after those checks; `pdl` only for a
/// `#[kernel(pdl)]` entry whose PTX was checked to wait first, on sm_90.
pub(crate) fn launch_typed(
    func: RawFn,
    g: Geometry3,
    stream: super::Queue<'_>,
    uses: &[Option<super::Use<'_>>],
    slots: &mut [[u8; 8]],
    pdl: bool,
) -> Result<()> {
    stream.order(uses)?;
    // SAFETY: per the checks listed above: the slots match the parameters in
    // number, order and size; every address is a live range of the stream's
    // context for as long as its borrow lasts (the caller synchronises before
    // freeing, as for every launch of this crate); the kernel's slices are
    // bounds-checked, so it touches only those ranges; other streams' work
    // on them (`uses`, one per slice) is ordered before (above).
    unsafe { launch_slots(func, g, stream.handle(), slots, pdl) }
}
