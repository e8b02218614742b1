//! The one launch of every element-wise kernel: the library's add variants,
//! its element-wise operations (bulk-copy adds included) and the
//! `elementwise!` operations of user modules all share the signature
//! `(a, [b,] c, n: u64, tail…)`, fixed by `gpukern_device::elementwise`'s
//! entry points and the kernels-gpu macros built on the same patterns.

use std::ffi::c_void;

use super::{arg, launch_overlapped, reads, writes, AnyBits, DevRead, DevWrite, Geometry3, Queue, RawFn};
use crate::error::{Error, Result};

/// What an element-wise kernel takes after `(a, [b,] c, n)`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Tail {
    /// Nothing: the library's add, binary and unary kernels.
    None,
    /// Two `f32`: axpby's `(alpha, beta)` and every `elementwise!` kernel's
    /// parameters.
    Scalars(f32, f32),
    /// The bulk-copy kernels' tiling, two `u32`; the launch gives the shared
    /// memory the tiling needs.
    Tiling(BulkLaunch),
}

/// Tiling of a bulk-copy launch and the device's shared-memory limit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BulkLaunch {
    pub tile_bytes: u32,
    pub stages: u32,
    pub bulk_store: bool,
    pub shared_limit: u32,
}

/// One element-wise launch, made from a kernel table (`kernels_gpu::add`,
/// `kernels_gpu::ops`) or a user module's manifest, which fix `inputs` and
/// `tail` for the kernel `func`.
pub(crate) struct MapLaunch {
    pub name: &'static str,
    pub func: RawFn,
    /// 2 when the kernel reads `b`, else 1.
    pub inputs: u32,
    pub tail: Tail,
    pub grid: u32,
    pub block: u32,
    /// Byte alignment every operand must have.
    pub align: usize,
    /// Launch with programmatic dependent launch: only for a kernel that waits
    /// (`griddepcontrol.wait`) before touching memory, on sm_90 (the PDL twins
    /// of `kernels_gpu::ops::PDL_KERNELS`; the host's plan sets it).
    pub pdl: bool,
}

/// Launches an element-wise kernel over all `n = a.len()` elements. The one
/// place the operands are checked: `b` is given exactly when the kernel reads
/// one, `b` and `out` hold `n` elements too, every view meets the alignment,
/// and a bulk kernel's tiling is valid. The walks then touch indices `< n`
/// only, whatever the grid. Queued after other streams' work on the
/// operands (`order.rs`).
///
/// # Safety
/// `l.func` is an element-wise entry point declared with
/// `gpukern_device::ew_entry!` (`(a, [b,] c, n, tail)`, walking `n` elements
/// with `l.align`-aligned accesses), with `l.inputs` inputs and the tail
/// `l.tail`, from a module of the stream's context: a row of the library's
/// tables, or a user operation whose module's manifest declared it (loaded
/// under `Gpu::load_ptx`'s contract). With `l.pdl`, its PTX waits first
/// (`griddepcontrol.wait`) and the device is sm_90.
pub(crate) unsafe fn launch_map<T: AnyBits, R: DevRead<T>>(
    l: &MapLaunch,
    a: &R,
    b: Option<&R>,
    out: &mut impl DevWrite<T>,
    stream: Queue<'_>,
) -> Result<()> {
    let n = a.len();
    if (l.inputs == 2) != b.is_some() {
        return Err(Error::WrongOperands { kernel: l.name, detail: "the operands do not match the kernel's inputs" });
    }
    check_elementwise(l.name, l.align, a, b, out, n)?;
    let mut shared = 0u32;
    if let Tail::Tiling(t) = l.tail {
        shared = check_tiling(l.name, l.align, t)?;
    }
    if n == 0 || l.grid == 0 {
        return Ok(());
    }
    let (mut pa, mut pb, mut pc, mut pn) = (a.addr(), b.map_or(0, |b| b.addr()), out.addr(), n as u64);
    let (mut s0, mut s1) = match l.tail {
        Tail::Scalars(x, y) => (x.to_bits(), y.to_bits()),
        Tail::Tiling(t) => (t.tile_bytes, t.stages),
        Tail::None => (0, 0),
    };
    // (a, [b,] c, n, [s0, s1]): every 4-byte tail value is passed by its bits.
    let mut params: [*mut c_void; 6] = [std::ptr::null_mut(); 6];
    let mut count = 0;
    let mut push = |p: *mut c_void| {
        params[count] = p;
        count += 1;
    };
    push(arg(&mut pa));
    if b.is_some() {
        push(arg(&mut pb));
    }
    push(arg(&mut pc));
    push(arg(&mut pn));
    if !matches!(l.tail, Tail::None) {
        push(arg(&mut s0));
        push(arg(&mut s1));
    }
    let g = Geometry3 { grid: (l.grid, 1, 1), block: (l.block, 1, 1), shared_bytes: shared };
    stream.order(&[reads(a), b.and_then(reads), writes(out)])?;
    // SAFETY: the table or manifest that made `l` fixes the kernel's parameters
    // as (ptr, [ptr,] ptr, u64, [4-byte, 4-byte]), which `params` follows; a,
    // b and out hold n elements, aligned as the kernel needs (checked above),
    // out is exclusively borrowed (DevWrite), and the walks write indices < n
    // only; a bulk kernel gets a valid tiling and its shared memory. `l.pdl`
    // is set only for the PDL twins, which wait before any access. Earlier
    // work of other streams on a, b and out is ordered before (above).
    unsafe { launch_overlapped(l.func, g, stream.handle(), &mut params[..count], l.pdl) }
}

/// What makes an element-wise launch over `n` elements sound, and what the
/// API promises: `a`, `b` (when the kernel reads it) and `out` hold exactly
/// `n` elements, and each address meets the kernel's alignment `align`.
pub(super) fn check_elementwise<T, R: DevRead<T>>(
    name: &'static str,
    align: usize,
    a: &R,
    b: Option<&R>,
    out: &impl DevWrite<T>,
    n: usize,
) -> Result<()> {
    match b {
        Some(b) if a.len() != n || b.len() != n || out.len() != n => {
            return Err(Error::LengthMismatch { kernel: name, a: a.len(), b: b.len(), out: out.len() });
        }
        None if a.len() != n || out.len() != n => {
            return Err(Error::UnaryLengthMismatch { kernel: name, a: a.len(), out: out.len() });
        }
        _ => {}
    }
    let addrs = [("a", Some(a.addr())), ("b", b.map(|b| b.addr())), ("out", Some(out.addr()))];
    for (operand, addr) in addrs.into_iter().filter_map(|(o, a)| a.map(|a| (o, a))) {
        let offset = addr % align as u64;
        if offset != 0 {
            return Err(Error::Misaligned { kernel: name, operand, addr, offset, required: align });
        }
    }
    Ok(())
}

/// What the bulk kernels' contract needs of the tiling, checked here so that
/// no caller can launch them outside it; returns the shared bytes it needs.
fn check_tiling(name: &'static str, align: usize, t: BulkLaunch) -> Result<u32> {
    let shared = kernels_gpu::bulk::shared_bytes(t.tile_bytes, t.stages, t.bulk_store);
    let valid = t.tile_bytes != 0
        && t.tile_bytes.is_multiple_of(16)
        && t.tile_bytes <= 1 << 18
        && (1..=kernels_gpu::bulk::MAX_STAGES).contains(&t.stages)
        && shared <= t.shared_limit as u64
        && align >= 16;
    if !valid {
        let detail = format!("invalid bulk tiling {} B x {}", t.tile_bytes, t.stages);
        return Err(Error::Shape { kernel: name, detail });
    }
    Ok(shared as u32)
}
