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
    // Up to 16 parameters (every typed kernel) without allocating.
    let mut small = [std::ptr::null_mut::<c_void>(); 16];
    let mut large = Vec::new();
    let params: &mut [*mut c_void] = if slots.len() <= small.len() {
        for (p, v) in small.iter_mut().zip(slots.iter_mut()) {
            *p = v.as_mut_ptr() as *mut c_void;
        }
        &mut small[..slots.len()]
    } else {
        large.extend(slots.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void));
        &mut large
    };
    // SAFETY: forwarded to the caller's contract; `slots` outlives the call,
    // which copies the values.
    unsafe { super::launch_overlapped(func, g, stream, params, pdl) }
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

/// Launches a typed kernel (`typed.rs`): [`launch_slots`] for a caller that
/// has checked what the contract below lists.
///
/// # Safety
/// `func` is the `.entry` of a `#[kernel]` whose manifest and parameter
/// sizes were checked against the markers the slots were packed by, in a
/// module loaded under `Gpu::load_ptx`'s contract (so the manifest is the
/// macro's and the body safe Rust, touching only the slices it is given);
/// every slice slot pair is the address and length of a live range of the
/// stream's context that stays allocated and unaliased by other work (outputs
/// written by nothing else) until the kernel finishes; the geometry and
/// shared memory are within the kernel's and the device's limits; `pdl` only
/// for an entry whose PTX was checked to wait first, on sm_90. `uses` are
/// the slices' allocations, ordered after other streams' work on them.
pub(crate) unsafe fn launch_typed(
    func: RawFn,
    g: Geometry3,
    stream: super::Queue<'_>,
    uses: &[Option<super::Use<'_>>],
    slots: &mut [[u8; 8]],
    pdl: bool,
) -> Result<()> {
    stream.order(uses)?;
    // SAFETY: the caller's contract is launch_slots' for this kernel: the
    // slots match its parameters, its slices are bounds-checked in the body,
    // so it touches only the ranges given; other streams' work on them
    // (`uses`, one per slice) is ordered before (above).
    unsafe { launch_slots(func, g, stream.handle(), slots, pdl) }
}
