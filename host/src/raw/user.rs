//! Launches of user-module kernels: the element-wise ABI of
//! `gpukern_device::elementwise!`, checked, and the unsafe escape hatch
//! [`Module::launch`] for any kernel.

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::{arg, check, check_elementwise, launch, AnyBits, DevRead, DevWrite, RawFn};
use crate::error::{Error, Result};
use crate::gpu::Stream;
use crate::module::Module;
use crate::user_launch::{Arg, Launch};

/// One element-wise launch of a user module.
pub(crate) struct CustomLaunch {
    pub name: &'static str,
    pub func: RawFn,
    /// Binary `(a, b, c, n, p0, p1)`, else unary `(a, c, n, p0, p1)`: what the
    /// module's manifest declared, which the macro's entry points take.
    pub binary: bool,
    pub grid: u32,
    pub block: u32,
    /// Byte alignment the kernel's accesses need.
    pub align: usize,
}

/// Launches a user element-wise kernel over the first `n` elements, after
/// checking that `b` is given exactly for binary kernels, that every view holds
/// `n` elements and meets the alignment: the macro's walks then touch indices
/// `< n` only, whatever the grid.
pub(crate) fn launch_custom<T: AnyBits, R: DevRead<T>>(
    l: &CustomLaunch,
    a: &R,
    b: Option<&R>,
    out: &mut impl DevWrite<T>,
    n: usize,
    params: [f32; 2],
    stream: cu::CUstream,
) -> Result<()> {
    if l.binary != b.is_some() {
        return Err(Error::WrongOperands { op: l.name, detail: "operands do not match the manifest's kind" });
    }
    check_elementwise(l.name, l.align, a, b, out, n)?;
    if n == 0 || l.grid == 0 {
        return Ok(());
    }
    let (mut pa, mut pb, mut pc, mut pn) = (a.addr(), b.map_or(0, |b| b.addr()), out.addr(), n as u64);
    let (mut p0, mut p1) = (params[0], params[1]);
    if l.binary {
        let mut p = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn), arg(&mut p0), arg(&mut p1)];
        // SAFETY: the manifest says binary, so the entry points are the macro's
        // (ptr, ptr, ptr, u64, f32, f32); a, b, out hold n elements aligned as
        // the walk needs, out is exclusively borrowed, and the walk writes
        // indices < n only.
        unsafe { launch(l.func, l.grid, l.block, stream, &mut p) }
    } else {
        let mut p = [arg(&mut pa), arg(&mut pc), arg(&mut pn), arg(&mut p0), arg(&mut p1)];
        // SAFETY: unary: (ptr, ptr, u64, f32, f32); otherwise as above.
        unsafe { launch(l.func, l.grid, l.block, stream, &mut p) }
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
        // Each argument's value, 8 bytes of room, and a pointer to it.
        let mut values: Vec<[u8; 8]> = args
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
        let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void).collect();
        // SAFETY: forwarded to the caller's contract; the geometry and stream
        // were checked above, and `values` outlives the call, which copies them.
        let r = unsafe {
            cu::cuLaunchKernel(
                func.0,
                l.grid.0,
                l.grid.1,
                l.grid.2,
                l.block.0,
                l.block.1,
                l.block.2,
                l.shared_bytes,
                stream.raw(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r).map_err(|source| Error::Driver { context: "cuLaunchKernel", source })
    }
}
