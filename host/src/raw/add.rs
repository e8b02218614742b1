//! Launches of the add family (per-thread, unrolled, load-hint and bulk-copy
//! kernels), the verification kernels (mismatch counters, visit markers, the
//! deliberate fault) and the ceiling kernels.

use std::ffi::c_void;

use super::{arg, launch, need, reads, writes, AnyBits, Queue, RawFn};
use super::{DevRead, DevWrite};
use crate::error::{Error, Result};

/// Launches a mismatch counter `(x, y, n, counter)`: adds to `counter[0]` the
/// number of elements that differ (NaN equal to NaN).
///
/// # Safety
/// `func` is a mismatch counter of `kernels_gpu::verify` for `T`, taking
/// `(x, y, n, counter)` (pointers and a `u64`), from a module of the stream's context.
pub(crate) unsafe fn launch_mismatch_count<T: AnyBits>(
    func: RawFn,
    grid: u32,
    block: u32,
    x: &impl DevRead<T>,
    y: &impl DevRead<T>,
    counter: &mut impl DevWrite<u64>,
    stream: Queue<'_>,
) -> Result<()> {
    if x.len() != y.len() || counter.len() != 1 {
        let detail = format!("x has {} elements, y {}, the counter {} (needs 1)", x.len(), y.len(), counter.len());
        return Err(Error::Shape { kernel: "count_mismatches", detail });
    }
    if x.is_empty() {
        return Ok(());
    }
    stream.order(&[reads(x), reads(y), writes(counter)])?;
    let (mut px, mut py, mut pn, mut pc) = (x.addr(), y.addr(), x.len() as u64, counter.addr());
    let mut params = [
        &mut px as *mut u64 as *mut c_void,
        &mut py as *mut u64 as *mut c_void,
        &mut pn as *mut u64 as *mut c_void,
        &mut pc as *mut u64 as *mut c_void,
    ];
    // SAFETY: the counters take (ptr, ptr, u64, ptr); x and y are live for n
    // elements, counter is one exclusively borrowed u64 (8-byte aligned by cuMemAlloc).
    unsafe { launch(func, grid, block, stream.handle(), &mut params) }
}

/// Launches a visit marker `(marks, n)` over all of `marks`.
///
/// # Safety
/// `func` is a visit marker of `kernels_gpu::verify` taking `(marks, n)`,
/// whose walk writes only `marks[..n]`, from a module of the stream's context.
pub(crate) unsafe fn launch_mark_visits(
    func: RawFn,
    grid: u32,
    block: u32,
    marks: &mut impl DevWrite<i32>,
    stream: Queue<'_>,
) -> Result<()> {
    if marks.is_empty() || grid == 0 {
        return Ok(());
    }
    stream.order(&[writes(marks)])?;
    let (mut pm, mut pn) = (marks.addr(), marks.len() as u64);
    let mut params = [arg(&mut pm), arg(&mut pn)];
    // SAFETY: the markers take (ptr, u64); marks is exclusively borrowed, holds n
    // 4-byte aligned elements (views of i32 buffers always are), and the walk
    // touches indices < n only.
    unsafe { launch(func, grid, block, stream.handle(), &mut params) }
}

/// Launches the empty kernel (no parameters).
///
/// # Safety
/// `func` is a kernel of the stream's context that takes no parameters and
/// touches no memory (`kernels_gpu::verify::EMPTY`).
pub(crate) unsafe fn launch_empty(func: RawFn, stream: Queue<'_>) -> Result<()> {
    // SAFETY: the empty kernel takes no parameters and touches no memory.
    unsafe { launch(func, 1, 1, stream.handle(), &mut []) }
}

/// Launches the spin kernel for `ns` nanoseconds (one thread).
///
/// # Safety
/// `func` is a kernel of the stream's context that takes one `u64` and
/// touches no memory (`kernels_gpu::verify::SPIN`).
pub(crate) unsafe fn launch_spin(func: RawFn, ns: u64, stream: Queue<'_>) -> Result<()> {
    let mut pns = ns;
    let mut params = [&mut pns as *mut u64 as *mut c_void];
    // SAFETY: the spin kernel takes one u64 and touches no memory.
    unsafe { launch(func, 1, 1, stream.handle(), &mut params) }
}

/// Test-only: launches an add kernel on a null output so that it faults, to check
/// that faults surface as errors at the next synchronisation.
///
/// # Safety
/// `func` is an add kernel `(a, b, c, n)` of the stream's context; it is
/// launched on null pointers so that it faults in the device, as the test wants.
#[cfg(feature = "test-hooks")]
pub(crate) unsafe fn launch_faulting(func: RawFn, stream: Queue<'_>) -> Result<()> {
    let (mut pa, mut pb, mut pc, mut pn) = (0u64, 0u64, 0u64, 1024u64);
    let mut params = [
        &mut pa as *mut u64 as *mut c_void,
        &mut pb as *mut u64 as *mut c_void,
        &mut pc as *mut u64 as *mut c_void,
        &mut pn as *mut u64 as *mut c_void,
    ];
    // SAFETY: a null device pointer faults inside the kernel (an illegal-address
    // error in the CUDA context); no host memory is involved.
    unsafe { launch(func, 4, 256, stream.handle(), &mut params) }
}

/// The ceiling kernels' operands (`u32` words, 16-byte aligned).
pub(crate) enum Ceiling<'v> {
    /// `ceiling_read(a, b, n, sink, key)`
    Read { a: &'v dyn DevRead<u32>, b: &'v dyn DevRead<u32>, sink: &'v mut dyn DevWrite<u32>, key: u32 },
    /// `ceiling_fill(c, n, value)`
    Fill { c: &'v mut dyn DevWrite<u32>, value: u32 },
    /// `ceiling_copy(a, c, n)`
    Copy { a: &'v dyn DevRead<u32>, c: &'v mut dyn DevWrite<u32> },
}

/// Launches a ceiling kernel; checks lengths, 16-byte alignment and the sink.
///
/// # Safety
/// `func` is the ceiling kernel `op` names (`kernels_gpu::ceiling`, its
/// parameter list as in [`Ceiling`]) from a module of the stream's context.
pub(crate) unsafe fn launch_ceiling(
    name: &'static str,
    func: RawFn,
    block: u32,
    op: Ceiling<'_>,
    stream: Queue<'_>,
) -> Result<()> {
    let (addrs, n): (Vec<u64>, usize) = match &op {
        Ceiling::Read { a, b, sink, .. } => {
            need(name, "sink", sink.len(), 1)?;
            if a.len() != b.len() {
                return Err(Error::Shape { kernel: name, detail: format!("a has {} words, b {}", a.len(), b.len()) });
            }
            (vec![a.addr(), b.addr()], a.len())
        }
        Ceiling::Fill { c, .. } => (vec![c.addr()], c.len()),
        Ceiling::Copy { a, c } => {
            if a.len() != c.len() {
                return Err(Error::Shape { kernel: name, detail: format!("a has {} words, c {}", a.len(), c.len()) });
            }
            (vec![a.addr(), c.addr()], a.len())
        }
    };
    if let Some(&addr) = addrs.iter().find(|&&x| x % 16 != 0) {
        return Err(Error::Misaligned { kernel: name, operand: "operand", addr, offset: addr % 16, required: 16 });
    }
    let grid = kernels_gpu::launch::grid_for(
        n as u64,
        kernels_gpu::ceiling::CEILING_LANES,
        block,
        kernels_gpu::launch::MAX_GRID_X,
    );
    if grid == 0 {
        return Ok(());
    }
    let mut pn = n as u64;
    match &op {
        Ceiling::Read { a, b, sink, .. } => stream.order(&[reads(*a), reads(*b), writes(&**sink)])?,
        Ceiling::Fill { c, .. } => stream.order(&[writes(&**c)])?,
        Ceiling::Copy { a, c } => stream.order(&[reads(*a), writes(&**c)])?,
    }
    // SAFETY (all arms): parameter lists match ceiling.rs; every view holds n
    // words, 16-byte aligned (checked above); outputs are exclusive borrows; the
    // sink holds one word.
    unsafe {
        match op {
            Ceiling::Read { a, b, sink, mut key } => {
                let (mut pa, mut pb, mut ps) = (a.addr(), b.addr(), sink.addr());
                launch(
                    func,
                    grid,
                    block,
                    stream.handle(),
                    &mut [arg(&mut pa), arg(&mut pb), arg(&mut pn), arg(&mut ps), arg(&mut key)],
                )
            }
            Ceiling::Fill { c, mut value } => {
                let mut pc = c.addr();
                launch(func, grid, block, stream.handle(), &mut [arg(&mut pc), arg(&mut pn), arg(&mut value)])
            }
            Ceiling::Copy { a, c } => {
                let (mut pa, mut pc) = (a.addr(), c.addr());
                launch(func, grid, block, stream.handle(), &mut [arg(&mut pa), arg(&mut pc), arg(&mut pn)])
            }
        }
    }
}

/// Launches a tiled-walk visit marker `(marks, n, tile)`.
///
/// # Safety
/// `func` is a tiled-walk visit marker of `kernels_gpu::verify` taking
/// `(marks, n, tile)`, from a module of the stream's context.
pub(crate) unsafe fn launch_mark_tiles(
    func: RawFn,
    grid: u32,
    block: u32,
    tile: u64,
    lanes: u32,
    marks: &mut impl DevWrite<i32>,
    stream: Queue<'_>,
) -> Result<()> {
    if tile == 0 || !tile.is_multiple_of(lanes as u64) {
        return Err(Error::Shape {
            kernel: "mark_visits_tiles",
            detail: format!("tile of {tile} elements; must be a non-zero multiple of {lanes}"),
        });
    }
    if marks.is_empty() || grid == 0 {
        return Ok(());
    }
    stream.order(&[writes(marks)])?;
    let (mut pm, mut pn, mut pt) = (marks.addr(), marks.len() as u64, tile);
    let mut params = [arg(&mut pm), arg(&mut pn), arg(&mut pt)];
    // SAFETY: the markers take (ptr, u64, u64); marks is exclusively borrowed and
    // holds n aligned i32; the walk touches indices < n only; tile is a non-zero
    // multiple of the pack width, as the walk assumes.
    unsafe { launch(func, grid, block, stream.handle(), &mut params) }
}
