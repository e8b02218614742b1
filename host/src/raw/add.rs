//! Launches of the add family (per-thread, unrolled, load-hint and bulk-copy
//! kernels), the verification kernels (mismatch counters, visit markers, the
//! deliberate fault) and the ceiling kernels.

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::{arg, launch, launch_2d, need, AnyBits, Geometry, RawFn};
use super::{DevRead, DevWrite};
use crate::error::{Error, Result};

/// Geometry of one binary element-wise launch; made by `add.rs` from the variant.
pub(crate) struct BinaryLaunch {
    pub name: &'static str,
    pub func: RawFn,
    pub grid: u32,
    pub block: u32,
    /// Byte alignment the kernel's accesses need.
    pub align: usize,
    /// For the bulk-copy kernels, which take the tiling as two extra parameters.
    pub bulk: Option<BulkLaunch>,
}

/// Tiling of a bulk-copy launch and the device's shared-memory limit.
pub(crate) struct BulkLaunch {
    pub tile_bytes: u32,
    pub stages: u32,
    pub bulk_store: bool,
    pub shared_limit: u32,
}

/// Launches an add-shaped kernel `(a, b, out, n: u64)` over the first `n` elements.
///
/// Checks the three views hold at least `n` elements and meet `align`, so the
/// kernel reads and writes only inside them.
pub(crate) fn launch_binary<T: AnyBits>(
    l: &BinaryLaunch,
    a: &impl DevRead<T>,
    b: &impl DevRead<T>,
    out: &mut impl DevWrite<T>,
    n: usize,
    stream: cu::CUstream,
) -> Result<()> {
    if a.len() < n || b.len() < n || out.len() < n {
        return Err(Error::LengthMismatch { variant: l.name, a: a.len(), b: b.len(), out: out.len() });
    }
    for (operand, addr) in [("a", a.addr()), ("b", b.addr()), ("out", out.addr())] {
        let offset = addr % l.align as u64;
        if offset != 0 {
            return Err(Error::Misaligned { variant: l.name, operand, addr, offset, required: l.align });
        }
    }
    if n == 0 || l.grid == 0 {
        return Ok(());
    }
    let (mut pa, mut pb, mut pc, mut pn) = (a.addr(), b.addr(), out.addr(), n as u64);
    if let Some(BulkLaunch { tile_bytes: tile, stages, bulk_store, shared_limit: limit }) = l.bulk {
        // What the bulk kernels' contract needs of the tiling, checked here
        // again so that no caller can launch them outside it.
        let shared = kernels_gpu::bulk::shared_bytes(tile, stages, bulk_store);
        let valid = tile != 0
            && tile.is_multiple_of(16)
            && tile <= 1 << 18
            && (1..=kernels_gpu::bulk::MAX_STAGES).contains(&stages)
            && shared <= limit as u64;
        if !valid || l.align < 16 {
            return Err(Error::Shape { kernel: l.name, detail: format!("invalid bulk tiling {tile} B x {stages}") });
        }
        let (mut pt, mut ps) = (tile, stages);
        let mut params = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn), arg(&mut pt), arg(&mut ps)];
        let g = Geometry { grid: (l.grid, 1), block: (l.block, 1), shared_bytes: shared as u32 };
        // SAFETY: the bulk kernels take (ptr, ptr, ptr, u64, u32, u32); the views
        // hold n elements, 16-byte aligned (checked above), out is exclusive; the
        // tiling is valid and the launch gives the shared memory it needs. The
        // kernels touch indices < n only, whatever the grid.
        return unsafe { launch_2d(l.func, g, stream, &mut params) };
    }
    let mut params = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn)];
    // SAFETY: every other add kernel takes (ptr, ptr, ptr, u64); the views are
    // live for n elements, aligned as the kernel needs, and out is exclusively
    // borrowed; the kernel touches indices < n only, whatever the grid.
    unsafe { launch(l.func, l.grid, l.block, stream, &mut params) }
}

/// Launches a mismatch counter `(x, y, n, counter)`: adds to `counter[0]` the
/// number of elements that differ (NaN equal to NaN).
pub(crate) fn launch_mismatch_count<T: AnyBits>(
    func: RawFn,
    grid: u32,
    block: u32,
    x: &impl DevRead<T>,
    y: &impl DevRead<T>,
    counter: &mut impl DevWrite<u64>,
    stream: cu::CUstream,
) -> Result<()> {
    if x.len() != y.len() || counter.len() != 1 {
        return Err(Error::CopyLength { host: x.len(), device: y.len() });
    }
    if x.is_empty() {
        return Ok(());
    }
    let (mut px, mut py, mut pn, mut pc) = (x.addr(), y.addr(), x.len() as u64, counter.addr());
    let mut params = [
        &mut px as *mut u64 as *mut c_void,
        &mut py as *mut u64 as *mut c_void,
        &mut pn as *mut u64 as *mut c_void,
        &mut pc as *mut u64 as *mut c_void,
    ];
    // SAFETY: the counters take (ptr, ptr, u64, ptr); x and y are live for n
    // elements, counter is one exclusively borrowed u64 (8-byte aligned by cuMemAlloc).
    unsafe { launch(func, grid, block, stream, &mut params) }
}

/// Launches a visit marker `(marks, n)` over all of `marks`.
pub(crate) fn launch_mark_visits(
    func: RawFn,
    grid: u32,
    block: u32,
    marks: &mut impl DevWrite<i32>,
    stream: cu::CUstream,
) -> Result<()> {
    if marks.is_empty() || grid == 0 {
        return Ok(());
    }
    let (mut pm, mut pn) = (marks.addr(), marks.len() as u64);
    let mut params = [arg(&mut pm), arg(&mut pn)];
    // SAFETY: the markers take (ptr, u64); marks is exclusively borrowed, holds n
    // 4-byte aligned elements (views of i32 buffers always are), and the walk
    // touches indices < n only.
    unsafe { launch(func, grid, block, stream, &mut params) }
}

/// Launches the empty kernel (no parameters).
pub(crate) fn launch_empty(func: RawFn, stream: cu::CUstream) -> Result<()> {
    // SAFETY: the empty kernel takes no parameters and touches no memory.
    unsafe { launch(func, 1, 1, stream, &mut []) }
}

/// Launches the spin kernel for `ns` nanoseconds (one thread).
pub(crate) fn launch_spin(func: RawFn, ns: u64, stream: cu::CUstream) -> Result<()> {
    let mut pns = ns;
    let mut params = [&mut pns as *mut u64 as *mut c_void];
    // SAFETY: the spin kernel takes one u64 and touches no memory.
    unsafe { launch(func, 1, 1, stream, &mut params) }
}

/// Test-only: launches an add kernel on a null output so that it faults, to check
/// that faults surface as errors at the next synchronisation.
#[cfg(feature = "test-hooks")]
pub(crate) fn launch_faulting(func: RawFn, stream: cu::CUstream) -> Result<()> {
    let (mut pa, mut pb, mut pc, mut pn) = (0u64, 0u64, 0u64, 1024u64);
    let mut params = [
        &mut pa as *mut u64 as *mut c_void,
        &mut pb as *mut u64 as *mut c_void,
        &mut pc as *mut u64 as *mut c_void,
        &mut pn as *mut u64 as *mut c_void,
    ];
    // SAFETY: a null device pointer faults inside the kernel (an illegal-address
    // error in the CUDA context); no host memory is involved.
    unsafe { launch(func, 4, 256, stream, &mut params) }
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
pub(crate) fn launch_ceiling(
    name: &'static str,
    func: RawFn,
    block: u32,
    op: Ceiling<'_>,
    stream: cu::CUstream,
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
        return Err(Error::Misaligned { variant: name, operand: "operand", addr, offset: addr % 16, required: 16 });
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
                    stream,
                    &mut [arg(&mut pa), arg(&mut pb), arg(&mut pn), arg(&mut ps), arg(&mut key)],
                )
            }
            Ceiling::Fill { c, mut value } => {
                let mut pc = c.addr();
                launch(func, grid, block, stream, &mut [arg(&mut pc), arg(&mut pn), arg(&mut value)])
            }
            Ceiling::Copy { a, c } => {
                let (mut pa, mut pc) = (a.addr(), c.addr());
                launch(func, grid, block, stream, &mut [arg(&mut pa), arg(&mut pc), arg(&mut pn)])
            }
        }
    }
}

/// Launches a tiled-walk visit marker `(marks, n, tile)`.
pub(crate) fn launch_mark_tiles(
    func: RawFn,
    grid: u32,
    block: u32,
    tile: u64,
    lanes: u32,
    marks: &mut impl DevWrite<i32>,
    stream: cu::CUstream,
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
    let (mut pm, mut pn, mut pt) = (marks.addr(), marks.len() as u64, tile);
    let mut params = [arg(&mut pm), arg(&mut pn), arg(&mut pt)];
    // SAFETY: the markers take (ptr, u64, u64); marks is exclusively borrowed and
    // holds n aligned i32; the walk touches indices < n only; tile is a non-zero
    // multiple of the pack width, as the walk assumes.
    unsafe { launch(func, grid, block, stream, &mut params) }
}
