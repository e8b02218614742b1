//! The foreach (`add_many`) launches: operand triples, tables in device memory
//! or in the kernel's parameters.

use std::ffi::c_void;

use std::sync::{Arc, Mutex};

use cudarc::driver::sys as cu;
use kernels_gpu::foreach::{ManyDesc, ManyInline};

use super::{alloc, arg, check, launch_overlapped, DeviceAlloc, Geometry3, PrimaryContext, RawFn};
use super::{DevRead, DevWrite, Queue, Use};
use crate::error::{Error, Result};

/// One triple of a foreach launch, made only from views by [`many_operand`] or
/// [`many_marks`], so its addresses are valid for `n` elements while those views live.
pub(crate) struct ManyOperand<'a> {
    a: u64,
    b: u64,
    c: u64,
    n: u64,
    /// The views' allocations, ordered across streams at each launch.
    uses: [Option<Use<'a>>; 3],
}

/// A foreach triple from views; errors unless the three lengths agree.
/// `uses` are the three views' allocations for as long as `'a` (the views'
/// `use_as_input`/`use_as_output`: the borrows here are shorter).
pub(crate) fn many_operand<'a, T>(
    name: &'static str,
    a: &impl DevRead<T>,
    b: &impl DevRead<T>,
    c: &impl DevWrite<T>,
    uses: [Option<Use<'a>>; 3],
) -> Result<ManyOperand<'a>> {
    if a.len() != b.len() || a.len() != c.len() {
        return Err(Error::LengthMismatch { kernel: name, a: a.len(), b: b.len(), out: c.len() });
    }
    Ok(ManyOperand { a: a.addr(), b: b.addr(), c: c.addr(), n: a.len() as u64, uses })
}

/// A foreach "triple" for the visit marker: the marks stand in for all three.
/// `uses`: the marks' allocation, as for [`many_operand`].
pub(crate) fn many_marks<'a>(marks: &impl DevWrite<i32>, uses: Option<Use<'a>>) -> ManyOperand<'a> {
    let (addr, n) = (marks.addr(), marks.len() as u64);
    ManyOperand { a: addr, b: addr, c: addr, n, uses: [uses, None, None] }
}

/// The kernel's view of `ops` (empty triples left out): descriptors, the owner
/// of every chunk, and the chunk count.
fn many_descs(ops: &[ManyOperand<'_>]) -> Result<(Vec<ManyDesc>, Vec<u32>, u64)> {
    if ops.len() > u32::MAX as usize {
        return Err(Error::Shape { kernel: "add_many", detail: format!("{} triples; at most 2^32 - 1", ops.len()) });
    }
    let mut descs = Vec::with_capacity(ops.len());
    let mut owners = Vec::new();
    let mut chunks = 0u64;
    for op in ops.iter().filter(|op| op.n > 0) {
        descs.push(ManyDesc { a: op.a, b: op.b, c: op.c, n: op.n, first_chunk: chunks });
        let k = kernels_gpu::foreach::chunks(op.n);
        owners.extend(std::iter::repeat_n((descs.len() - 1) as u32, k as usize));
        chunks += k;
    }
    Ok((descs, owners, chunks))
}

/// The descriptors and owners as one byte image (owners after the descriptors),
/// and the owners' byte offset.
fn many_image(descs: &[ManyDesc], owners: &[u32]) -> (Vec<u64>, usize) {
    let mut image: Vec<u64> = descs.iter().flat_map(|d| [d.a, d.b, d.c, d.n, d.first_chunk]).collect();
    let at = image.len() * 8;
    image.extend(owners.chunks(2).map(|p| p[0] as u64 | (p.get(1).copied().unwrap_or(0) as u64) << 32));
    (image, at)
}

/// Largest grid of a foreach launch (the chunk walk is grid-stride).
const MANY_MAX_GRID: u64 = kernels_gpu::launch::MAX_GRID_X as u64;

fn many_grid(chunks: u64) -> u32 {
    chunks.min(MANY_MAX_GRID) as u32
}

/// Launches a foreach kernel over a table already in device memory.
///
/// # Safety
/// `table` holds an image made by [`many_image`] from [`many_descs`] of operands
/// whose views are alive until the kernel has finished; `owners_at` and `chunks`
/// are the image's.
/// `pdl`: `func` is a PDL twin (`kernels_gpu::foreach::ADD_MANY_PDL`, which
/// waits first) on an sm_90 device.
unsafe fn launch_many_raw(
    func: RawFn,
    table: u64,
    owners_at: usize,
    chunks: u64,
    stream: cu::CUstream,
    pdl: bool,
) -> Result<()> {
    let (mut pt, mut po, mut pc) = (table, table + owners_at as u64, chunks);
    let mut params = [arg(&mut pt), arg(&mut po), arg(&mut pc)];
    // SAFETY: the foreach kernels take (ptr, ptr, u64); the table is valid per
    // the caller's contract and every triple in it holds n elements per operand;
    // the walk touches only indices below each triple's n.
    unsafe { launch_foreach(func, chunks, stream, &mut params, pdl) }
}

/// A foreach grid: one block per chunk, up to the largest grid.
///
/// # Safety
/// As [`launch_overlapped`], for a foreach kernel's parameters.
unsafe fn launch_foreach(
    func: RawFn,
    chunks: u64,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
    pdl: bool,
) -> Result<()> {
    let g =
        Geometry3 { grid: (many_grid(chunks), 1, 1), block: (kernels_gpu::foreach::MANY_BLOCK, 1, 1), shared_bytes: 0 };
    // SAFETY: forwarded.
    unsafe { launch_overlapped(func, g, stream, params, pdl) }
}

/// The kernels of one foreach launch: the table kernel, the inline-list one,
/// and whether they are PDL twins to launch with the attribute.
#[derive(Clone, Copy)]
pub(crate) struct ManyKernels {
    pub table: RawFn,
    pub inline: RawFn,
    /// Only for the twins (`ADD_MANY_PDL`, `ADD_MANY_INLINE_PDL`), on sm_90.
    pub pdl: bool,
}

/// One foreach launch, all queued on `stream`. Up to `INLINE_MAX` triples go in
/// the kernel's parameters (`inline`, no copy at all); longer lists go to
/// stream-ordered memory (`cuMemAllocAsync`), are copied there, used and freed
/// in stream order, so concurrent calls on other streams never share a table.
///
/// # Safety
/// `k.table` and `k.inline` are the foreach add kernels of
/// `kernels_gpu::foreach` (table and inline list; with `k.pdl`, their PDL
/// twins, on sm_90), from a module of the stream's context.
pub(crate) unsafe fn launch_many(k: ManyKernels, ops: &[ManyOperand<'_>], stream: Queue<'_>) -> Result<()> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let (descs, owners, chunks) = many_descs(ops)?;
    if chunks == 0 {
        return Ok(());
    }
    let uses: Vec<Option<Use<'_>>> = ops.iter().flat_map(|op| op.uses).collect();
    stream.order(&uses)?;
    let stream = stream.handle();
    if let Some(mut list) = ManyInline::new(&descs, chunks) {
        let mut params = [arg(&mut list)];
        // SAFETY: the inline kernels take one ManyInline by value (a repr(C)
        // struct shared with the kernel crate, under the 4 KiB parameter limit);
        // its triples come from live views, each holding n elements per operand.
        return unsafe { launch_foreach(k.inline, chunks, stream, &mut params, k.pdl) };
    }
    let (image, owners_at) = many_image(&descs, &owners);
    let bytes = std::mem::size_of_val(image.as_slice());
    let mut dev: cu::CUdeviceptr = 0;
    // SAFETY: writes one device pointer; the allocation is ordered on `stream`.
    check(unsafe { cu::cuMemAllocAsync(&mut dev, bytes, stream) }).map_err(driver("cuMemAllocAsync"))?;
    // SAFETY: `dev` holds `bytes`; the host image is a live slice of that size. A
    // copy from pageable memory is staged by the driver before the call returns,
    // so the Vec may be dropped afterwards.
    let copied = check(unsafe { cu::cuMemcpyHtoDAsync_v2(dev, image.as_ptr() as *const c_void, bytes, stream) })
        .map_err(driver("cuMemcpyHtoDAsync"));
    // SAFETY: the image was just made from `ops`, whose views the caller holds
    // across this call; the kernel is ordered after the copy.
    let launched = copied.and_then(|_| unsafe { launch_many_raw(k.table, dev, owners_at, chunks, stream, k.pdl) });
    // SAFETY: frees the table after everything queued before it on the stream.
    let freed = check(unsafe { cu::cuMemFreeAsync(dev, stream) }).map_err(driver("cuMemFreeAsync"));
    launched.and(freed)
}

/// A foreach table in ordinary device memory, for launching the same list again
/// (and for graph capture, where no host copy may be queued). It lives no
/// longer than the views it was made from.
pub(crate) struct ManyTable<'a> {
    /// None for an empty list.
    mem: Option<DeviceAlloc>,
    owners_at: usize,
    chunks: u64,
    /// The views' allocations, ordered across streams at each launch.
    uses: Vec<Option<Use<'a>>>,
    /// Held across each launch's ordering and queueing: launches of one
    /// table (`&self`, from several threads) write the same outputs, so one
    /// must be queued before the next records its event (`order.rs`).
    serial: Mutex<()>,
}

/// Uploads the table of `ops` (synchronously).
pub(crate) fn many_table<'a>(ctx: &Arc<PrimaryContext>, ops: &[ManyOperand<'a>]) -> Result<ManyTable<'a>> {
    let (descs, owners, chunks) = many_descs(ops)?;
    if chunks == 0 {
        return Ok(ManyTable { mem: None, owners_at: 0, chunks: 0, uses: Vec::new(), serial: Mutex::new(()) });
    }
    let (image, owners_at) = many_image(&descs, &owners);
    let bytes = std::mem::size_of_val(image.as_slice());
    let mem = alloc(ctx, bytes)?;
    // A pageable upload may still be in its last DMA when it returns: the
    // table's free waits for the legacy stream.
    mem.track().note_legacy();
    let ptr = mem.addr();
    let uses = ops.iter().flat_map(|op| op.uses).collect();
    let t = ManyTable { mem: Some(mem), owners_at, chunks, uses, serial: Mutex::new(()) };
    // SAFETY: `ptr` holds `bytes`, freed only after the legacy stream (above);
    // the host image is a live slice of that size.
    check(unsafe { cu::cuMemcpyHtoD_v2(ptr, image.as_ptr() as *const c_void, bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoD", source })?;
    Ok(t)
}

impl<'a> ManyTable<'a> {
    /// The allocations a launch of it touches (for a graph of its launches):
    /// its triples' and its own table's.
    pub(crate) fn uses(&self) -> Vec<Option<Use<'_>>> {
        let table = self.mem.as_ref().and_then(|m| m.as_input());
        self.uses.iter().copied().chain([table]).collect()
    }
    /// The lock its launches are queued under (a graph of them takes it too).
    pub(crate) fn serial(&self) -> &Mutex<()> {
        &self.serial
    }
}

/// Launches a foreach kernel over an uploaded table; `pdl` only for a twin
/// (`ADD_MANY_PDL`) on sm_90.
///
/// # Safety
/// `func` is a foreach add table kernel of `kernels_gpu::foreach` (with
/// `pdl`, its PDL twin, on sm_90), from a module of the stream's context.
pub(crate) unsafe fn launch_many_table(func: RawFn, t: &ManyTable<'_>, stream: Queue<'_>, pdl: bool) -> Result<()> {
    let Some(mem) = t.mem.as_ref().filter(|_| t.chunks != 0) else { return Ok(()) };
    let _serial = t.serial.lock().unwrap_or_else(|p| p.into_inner());
    stream.order(&t.uses)?;
    // The table too: its free then waits for this launch.
    stream.order(&[mem.as_input()])?;
    // SAFETY: the table was made by many_descs from views that outlive it (its
    // lifetime), other streams' work on them is ordered before (above), and
    // freeing their buffers waits for queued work, as for every allocation of
    // this crate.
    unsafe { launch_many_raw(func, mem.addr(), t.owners_at, t.chunks, stream.handle(), pdl) }
}
