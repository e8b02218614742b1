//! The escape hatch's parameters: [`Arg`], [`Launch`], and the checks
//! [`Module::launch`], the escape hatch, makes first (the launch itself is
//! `raw::launch_slots`).

use crate::device::gpu::Stream;
use crate::device::names::intern;
use crate::error::{Error, Result};
use crate::memory::buffer::{View, ViewMut};
use crate::raw::{self, RawFn};
use crate::user::module::Module;

/// One parameter of a kernel launched through [`Module::launch`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A device address (`*const T` / `*mut T` in the kernel).
    Ptr(u64),
    /// `u64`.
    U64(u64),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
}

impl Arg {
    /// The address of a view's first element.
    pub fn view<T: crate::Pod>(v: &View<'_, T>) -> Arg {
        Arg::Ptr(v.addr())
    }
    /// The address of a mutable view's first element.
    pub fn view_mut<T: crate::Pod>(v: &ViewMut<'_, T>) -> Arg {
        Arg::Ptr(v.addr())
    }
}

/// Grid, block and dynamic shared memory of a [`Module::launch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks, x y z (each at least 1).
    pub grid: (u32, u32, u32),
    /// Threads per block, x y z (at least 1, at most 1024 in all).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

/// The threads a launch starts (grid × block, saturating): what PDL's
/// `pays` weighs for a typed kernel.
pub(crate) fn threads_of(l: &Launch) -> usize {
    let dims = [l.grid.0, l.grid.1, l.grid.2, l.block.0, l.block.1, l.block.2];
    dims.iter().fold(1usize, |t, &d| t.saturating_mul(d as usize))
}

impl Module {
    /// Checks a raw launch's geometry and stream before the unsafe part.
    pub(crate) fn check_launch(&self, name: &str, l: &Launch, stream: &Stream) -> Result<RawFn> {
        let gpu = &self.inner.gpu;
        let _live = gpu.shared.bind()?;
        let interned = intern(name);
        let name = interned.text;
        gpu.check_stream_owned(name, stream)?;
        check_geometry(name, l, 1024)?;
        let f = self.inner.raw.function(name).map_err(|source| Error::MissingKernel { kernel: name, source })?;
        gpu.shared.note_user_kernel(interned);
        Ok(f)
    }
}

impl Module {
    /// Launches kernel `name` of this module with `args`, on `stream`: the
    /// escape hatch for kernels that are not `elementwise!` operations.
    ///
    /// Checked here: the kernel exists, the stream is of this module's `Gpu`,
    /// the block has 1..=1024 threads and the grid is within the hardware's
    /// limits. A fault shows up as [`Error::KernelFault`] naming this kernel at
    /// the next synchronisation.
    ///
    /// # Safety
    /// Nothing else can be checked, so the caller promises that:
    /// * `args` match the kernel's parameters in number, order and type
    ///   (`Arg::Ptr` for each pointer, `Arg::U64` for `u64`, …);
    /// * every address points into memory of this `Gpu` that stays allocated
    ///   until the kernel has finished (keep the buffers alive and do not
    ///   touch them from the host until the stream is synchronised);
    /// * with this grid and block the kernel reads and writes only inside
    ///   those allocations, writes no memory another operation reads or
    ///   writes concurrently, and uses at most `shared_bytes` of dynamic
    ///   shared memory.
    pub unsafe fn launch(&self, name: &str, l: Launch, args: &[Arg], stream: &Stream) -> Result<()> {
        let func = self.check_launch(name, &l, stream)?;
        // Each argument's bytes, from the start of an 8-byte slot.
        let mut slots: Vec<[u8; 8]> = args
            .iter()
            .map(|a| {
                let mut v = [0u8; 8];
                match *a {
                    Arg::Ptr(x) | Arg::U64(x) => v.copy_from_slice(&x.to_ne_bytes()),
                    Arg::U32(x) => v[..4].copy_from_slice(&x.to_ne_bytes()),
                    Arg::I32(x) => v[..4].copy_from_slice(&x.to_ne_bytes()),
                    Arg::F32(x) => v[..4].copy_from_slice(&x.to_ne_bytes()),
                }
                v
            })
            .collect();
        let g = raw::Geometry3 { grid: l.grid, block: l.block, shared_bytes: l.shared_bytes };
        // Held to the launch: a reset on another thread waits for it, so the
        // function and the stream stay live.
        let _live = self.inner.gpu.shared.bind()?;
        // SAFETY: the caller's contract is launch_slots' (this is an unsafe
        // fn); the geometry, kernel and stream were checked above, and the
        // context is live for the call (the guard).
        unsafe { raw::launch_slots(func, g, stream.raw().handle(), &mut slots, false) }
    }
}

/// The grid and block of a launch within the hardware's limits, the block at
/// most `max_threads` (the kernel's limit).
pub(crate) fn check_geometry(name: &'static str, l: &Launch, max_threads: u32) -> Result<()> {
    let (b, g) = (l.block, l.grid);
    let threads = b.0 as u64 * b.1 as u64 * b.2 as u64;
    let max = max_threads.min(1024);
    if b.0 == 0 || b.1 == 0 || b.2 == 0 || threads > max as u64 || b.1 > 1024 || b.2 > 64 {
        return Err(Error::BlockSize { kernel: name, block: threads.min(u32::MAX as u64) as u32, max });
    }
    if g.0 == 0 || g.1 == 0 || g.2 == 0 || g.0 > i32::MAX as u32 || g.1 > 65535 || g.2 > 65535 {
        return Err(Error::Shape { kernel: name, detail: format!("grid {g:?} outside 1..=(2^31-1, 65535, 65535)") });
    }
    Ok(())
}
