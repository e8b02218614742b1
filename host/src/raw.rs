//! The unsafe edge: every driver call and every kernel launch of the crate.
//!
//! Nothing outside this module uses `unsafe`. Each function here checks what makes
//! its own unsafe block sound (lengths against the views it is given, alignment
//! against the kernel's needs) instead of trusting its caller, so that the safe API
//! above cannot produce undefined behaviour or an out-of-range write.

use std::ffi::{c_void, CStr};
use std::os::raw::c_char;

use cust::sys as cu;
use kernels_gpu::coalesce;
use kernels_gpu::foreach::{ManyDesc, ManyInline};

use crate::buffer::{Element, Pod, View, ViewMut};
use crate::error::{DriverError, Error, Result};

/// Turns a `CUresult` into a [`DriverError`] with the driver's own name and text.
pub(crate) fn check(result: cu::CUresult) -> Result<(), DriverError> {
    if result == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const c_char = std::ptr::null();
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: both calls only write a pointer to a static string, or leave it null.
    unsafe {
        cu::cuGetErrorName(result, &mut name);
        cu::cuGetErrorString(result, &mut text);
    }
    let read = |p: *const c_char, fallback: String| {
        if p.is_null() {
            fallback
        } else {
            // SAFETY: the driver returned a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    Err(DriverError {
        code: result as u32,
        name: read(name, format!("CUresult {}", result as u32)),
        message: read(text, "unknown error".into()),
    })
}

/// Converts cust's error into ours (same code, the driver's name and text).
pub(crate) fn from_cust(e: cust::error::CudaError) -> DriverError {
    let code = e as u32;
    if code <= 999 {
        // SAFETY: cust's CudaError mirrors CUresult for codes up to 999.
        let r: cu::CUresult = unsafe { std::mem::transmute(code) };
        if let Err(d) = check(r) {
            return d;
        }
    }
    DriverError { code, name: format!("{e:?}"), message: e.to_string() }
}

/// A resolved kernel handle. CUDA function handles may be used from any thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawFn(pub(crate) cu::CUfunction);
// SAFETY: a CUfunction is an immutable driver handle, valid on every thread that
// has its context current; the driver synchronises its use.
unsafe impl Send for RawFn {}
// SAFETY: as above.
unsafe impl Sync for RawFn {}

/// Allocates `bytes` of device memory in the current context.
pub(crate) fn alloc(bytes: usize) -> Result<u64> {
    let mut ptr: cu::CUdeviceptr = 0;
    // SAFETY: writes one device pointer.
    check(unsafe { cu::cuMemAlloc_v2(&mut ptr, bytes.max(1)) }).map_err(|source| {
        if source.code == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32 {
            Error::OutOfMemory { bytes, source }
        } else {
            Error::Driver { context: "cuMemAlloc", source }
        }
    })?;
    Ok(ptr)
}

/// Frees device memory. Errors are ignored: a context that faulted can refuse the
/// free, and dropping must never panic.
pub(crate) fn free(ptr: u64) {
    // SAFETY: `ptr` came from `alloc` and is freed once (DeviceVec's Drop).
    let _ = unsafe { cu::cuMemFree_v2(ptr) };
}

/// Host to device copy of a whole view.
pub(crate) fn upload<T: Pod>(dst: &mut ViewMut<'_, T>, src: &[T]) -> Result<()> {
    if dst.len() != src.len() {
        return Err(Error::CopyLength { host: src.len(), device: dst.len() });
    }
    let bytes = std::mem::size_of_val(src);
    // SAFETY: dst is a live device range of exactly `bytes`; src is a host slice of it.
    check(unsafe { cu::cuMemcpyHtoD_v2(dst.addr(), src.as_ptr() as *const c_void, bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoD", source })
}

/// Device to host copy of a whole view.
pub(crate) fn download<T: Pod>(dst: &mut [T], src: &View<'_, T>) -> Result<()> {
    if dst.len() != src.len() {
        return Err(Error::CopyLength { host: dst.len(), device: src.len() });
    }
    let bytes = std::mem::size_of_val(dst);
    // SAFETY: src is a live device range of `bytes`; dst is a host slice of that size,
    // and every bit pattern is a valid Element.
    check(unsafe { cu::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, src.addr(), bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoH", source })
}

/// Device to device copy between views of equal length, on a stream.
pub(crate) fn copy_async<T: Pod>(dst: &mut ViewMut<'_, T>, src: &View<'_, T>, stream: cu::CUstream) -> Result<()> {
    if dst.len() != src.len() {
        return Err(Error::CopyLength { host: src.len(), device: dst.len() });
    }
    let bytes = dst.len() * std::mem::size_of::<T>();
    // SAFETY: both are live device ranges of `bytes`; `&mut` on dst excludes overlap.
    check(unsafe { cu::cuMemcpyDtoDAsync_v2(dst.addr(), src.addr(), bytes, stream) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoDAsync", source })
}

/// Fills a view with one bit pattern (of the element's width).
pub(crate) fn fill_bits<T: Pod>(dst: &mut ViewMut<'_, T>, bits: u32) -> Result<()> {
    let n = dst.len();
    // SAFETY: dst is a live device range of n elements of T's width.
    let r = unsafe {
        match std::mem::size_of::<T>() {
            4 => cu::cuMemsetD32_v2(dst.addr(), bits, n),
            2 => cu::cuMemsetD16_v2(dst.addr(), bits as u16, n),
            _ => cu::cuMemsetD8_v2(dst.addr(), bits as u8, n * std::mem::size_of::<T>()),
        }
    };
    check(r).map_err(|source| Error::Driver { context: "cuMemset", source })
}

/// Free and total device memory of the current context's device, in bytes.
pub(crate) fn mem_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two integers.
    check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) })
        .map_err(|source| Error::Driver { context: "cuMemGetInfo", source })?;
    Ok((free, total))
}

/// Launches `func` with the given parameter pointers.
///
/// # Safety
/// `params` must match the kernel's parameter list in number, order and type, and
/// every device pointer among them must be valid for what the kernel does with the
/// given grid.
unsafe fn launch(func: RawFn, grid: u32, block: u32, stream: cu::CUstream, params: &mut [*mut c_void]) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { launch_2d(func, Geometry { grid: (grid, 1), block: (block, 1), shared_bytes: 0 }, stream, params) }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub grid: (u32, u32),
    pub block: (u32, u32),
    pub shared_bytes: u32,
}

/// As [`launch`], with a 2-D grid and block and dynamic shared memory.
///
/// # Safety
/// As [`launch`]; the kernel must not use more shared memory than given.
unsafe fn launch_2d(func: RawFn, g: Geometry, stream: cu::CUstream, params: &mut [*mut c_void]) -> Result<()> {
    // SAFETY: forwarded to the caller's contract.
    let r = unsafe {
        cu::cuLaunchKernel(
            func.0,
            g.grid.0,
            g.grid.1,
            1,
            g.block.0,
            g.block.1,
            1,
            g.shared_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    check(r).map_err(|source| Error::Driver { context: "cuLaunchKernel", source })
}

/// A pointer to one kernel parameter's value.
fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

fn need(kernel: &'static str, what: &str, have: usize, want: u64) -> Result<()> {
    if (have as u64) < want {
        return Err(Error::Shape { kernel, detail: format!("{what} has {have} elements, needs {want}") });
    }
    Ok(())
}

/// Matrix product launch `(a, b, c, m, n, k)`; checks a ≥ m·k, b ≥ k·n, c ≥ m·n.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_matmul(
    name: &'static str,
    func: RawFn,
    g: Geometry,
    a: &View<'_, f32>,
    b: &View<'_, f32>,
    c: &mut ViewMut<'_, f32>,
    (m, n, k): (u32, u32, u32),
    stream: cu::CUstream,
) -> Result<()> {
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    need(name, "a", a.len(), m64 * k64)?;
    need(name, "b", b.len(), k64 * n64)?;
    need(name, "c", c.len(), m64 * n64)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (mut pa, mut pb, mut pc, mut pm, mut pn, mut pk) = (a.addr(), b.addr(), c.addr(), m, n, k);
    let mut params = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pm), arg(&mut pn), arg(&mut pk)];
    // SAFETY: (ptr, ptr, ptr, u32, u32, u32) matches every matmul kernel; the views
    // hold what an m×k by k×n product reads and writes; c is exclusive. The
    // kernels guard every index against m, n, k, and the caller's geometry gives
    // them the shared memory they declare.
    unsafe { launch_2d(func, g, stream, &mut params) }
}

/// Count launch `(x, n, key, counter)`.
pub(crate) fn launch_count_eq(
    func: RawFn,
    g: Geometry,
    x: &View<'_, i32>,
    key: i32,
    counter: &mut ViewMut<'_, u64>,
    stream: cu::CUstream,
) -> Result<()> {
    need("count_eq", "counter", counter.len(), 1)?;
    if x.is_empty() {
        return Ok(());
    }
    let (mut px, mut pn, mut pk, mut pc) = (x.addr(), x.len() as u64, key, counter.addr());
    let mut params = [arg(&mut px), arg(&mut pn), arg(&mut pk), arg(&mut pc)];
    // SAFETY: (ptr, u64, i32, ptr) matches the count kernels; x holds n elements;
    // the counter is one exclusive, 8-byte aligned u64.
    unsafe { launch_2d(func, g, stream, &mut params) }
}

/// Strided copy launch `(src, dst, n, stride)`; checks lengths and that `stride`
/// divides n (the kernel's index map is a permutation only then).
pub(crate) fn launch_strided_copy(
    func: RawFn,
    g: Geometry,
    src: &View<'_, f32>,
    dst: &mut ViewMut<'_, f32>,
    stride: u64,
    stream: cu::CUstream,
) -> Result<()> {
    let n = src.len() as u64;
    if dst.len() != src.len() {
        return Err(Error::Shape {
            kernel: "copy_strided",
            detail: format!("src has {} elements, dst {}", src.len(), dst.len()),
        });
    }
    if stride == 0 || !n.is_multiple_of(stride) {
        return Err(Error::Shape {
            kernel: "copy_strided",
            detail: format!("stride {stride} must be at least 1 and divide n = {n}"),
        });
    }
    if stride > coalesce::MAX_STRIDE || g.grid.1 as u64 != stride {
        return Err(Error::Shape {
            kernel: "copy_strided",
            detail: format!("stride {stride} must be at most {} (one grid row per column)", coalesce::MAX_STRIDE),
        });
    }
    if n == 0 {
        return Ok(());
    }
    let (mut ps, mut pd, mut pn, mut pst) = (src.addr(), dst.addr(), n, stride);
    let mut params = [arg(&mut ps), arg(&mut pd), arg(&mut pn), arg(&mut pst)];
    // SAFETY: (ptr, ptr, u64, u64); every index the kernel forms is < n.
    unsafe { launch_2d(func, g, stream, &mut params) }
}

/// Transpose launch `(input, output, rows, cols)`.
pub(crate) fn launch_transpose(
    name: &'static str,
    func: RawFn,
    g: Geometry,
    input: &View<'_, f32>,
    output: &mut ViewMut<'_, f32>,
    (rows, cols): (u32, u32),
    stream: cu::CUstream,
) -> Result<()> {
    let total = rows as u64 * cols as u64;
    need(name, "input", input.len(), total)?;
    need(name, "output", output.len(), total)?;
    if total == 0 {
        return Ok(());
    }
    let (mut pi, mut po, mut pr, mut pc) = (input.addr(), output.addr(), rows, cols);
    let mut params = [arg(&mut pi), arg(&mut po), arg(&mut pr), arg(&mut pc)];
    // SAFETY: (ptr, ptr, u32, u32); indices are guarded by rows and cols.
    unsafe { launch_2d(func, g, stream, &mut params) }
}

/// One operand list of a fused/unfused element-wise kernel.
pub(crate) enum Elementwise<'v, 'i, 'o> {
    /// `scale_f32(x, alpha, y, n)`
    Scale { x: &'v View<'i, f32>, alpha: f32, y: &'v mut ViewMut<'o, f32> },
    /// `add_scale_f32(a, b, alpha, d, n)`
    AddScale { a: &'v View<'i, f32>, b: &'v View<'i, f32>, alpha: f32, d: &'v mut ViewMut<'o, f32> },
    /// `saxpy_f32(alpha, x, b, y, n)`
    Saxpy { alpha: f32, x: &'v View<'i, f32>, b: &'v View<'i, f32>, y: &'v mut ViewMut<'o, f32> },
}

/// Launches a fusion-study kernel over all elements; checks equal lengths.
pub(crate) fn launch_elementwise(
    name: &'static str,
    func: RawFn,
    g: Geometry,
    op: Elementwise<'_, '_, '_>,
    stream: cu::CUstream,
) -> Result<()> {
    let lens: Vec<usize> = match &op {
        Elementwise::Scale { x, y, .. } => vec![x.len(), y.len()],
        Elementwise::AddScale { a, b, d, .. } => vec![a.len(), b.len(), d.len()],
        Elementwise::Saxpy { x, b, y, .. } => vec![x.len(), b.len(), y.len()],
    };
    if lens.iter().any(|&l| l != lens[0]) {
        return Err(Error::Shape { kernel: name, detail: format!("operand lengths differ: {lens:?}") });
    }
    if lens[0] == 0 {
        return Ok(());
    }
    let mut n = lens[0] as u64;
    // SAFETY (all arms): parameter lists match the kernels in kernels-gpu's
    // fusion.rs; every view holds n elements; outputs are exclusive borrows.
    unsafe {
        match op {
            Elementwise::Scale { x, mut alpha, y } => {
                let (mut px, mut py) = (x.addr(), y.addr());
                launch_2d(func, g, stream, &mut [arg(&mut px), arg(&mut alpha), arg(&mut py), arg(&mut n)])
            }
            Elementwise::AddScale { a, b, mut alpha, d } => {
                let (mut pa, mut pb, mut pd) = (a.addr(), b.addr(), d.addr());
                launch_2d(
                    func,
                    g,
                    stream,
                    &mut [arg(&mut pa), arg(&mut pb), arg(&mut alpha), arg(&mut pd), arg(&mut n)],
                )
            }
            Elementwise::Saxpy { mut alpha, x, b, y } => {
                let (mut px, mut pb, mut py) = (x.addr(), b.addr(), y.addr());
                launch_2d(
                    func,
                    g,
                    stream,
                    &mut [arg(&mut alpha), arg(&mut px), arg(&mut pb), arg(&mut py), arg(&mut n)],
                )
            }
        }
    }
}

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
pub(crate) fn launch_binary<T: Element>(
    l: &BinaryLaunch,
    a: &View<'_, T>,
    b: &View<'_, T>,
    out: &mut ViewMut<'_, T>,
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
pub(crate) fn launch_mismatch_count<T: Pod>(
    func: RawFn,
    grid: u32,
    block: u32,
    x: &View<'_, T>,
    y: &View<'_, T>,
    counter: &mut ViewMut<'_, u64>,
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
    marks: &mut ViewMut<'_, i32>,
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

/// An instantiated CUDA graph; destroyed on drop.
pub(crate) struct RawGraph {
    graph: cu::CUgraph,
    exec: cu::CUgraphExec,
}
// SAFETY: graph handles are driver objects usable from any thread with the context
// current; the driver synchronises their use.
unsafe impl Send for RawGraph {}
// SAFETY: as above.
unsafe impl Sync for RawGraph {}

impl Drop for RawGraph {
    fn drop(&mut self) {
        // SAFETY: both handles were created by `capture` and are destroyed once;
        // errors (e.g. a broken context) are ignored so that dropping never panics.
        unsafe {
            let _ = cu::cuGraphExecDestroy(self.exec);
            let _ = cu::cuGraphDestroy(self.graph);
        }
    }
}

/// Records what `work` queues on the stream it is given into a graph instead of
/// running it, then instantiates the graph. Capture is ended even when `work`
/// fails.
///
/// The capture stream is a private non-blocking stream: a blocking stream in
/// capture would make every legacy-stream operation of other threads (the
/// synchronous copies and memsets) fail with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
pub(crate) fn capture(work: impl FnOnce(cu::CUstream) -> Result<()>) -> Result<RawGraph> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let mut stream: cu::CUstream = std::ptr::null_mut();
    // SAFETY: creates a stream owned by this function (1 = CU_STREAM_NON_BLOCKING).
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) }).map_err(driver("cuStreamCreate"))?;
    let result = capture_on(stream, work);
    // SAFETY: the stream was created above and only captured into, never run.
    let _ = unsafe { cu::cuStreamDestroy_v2(stream) };
    result
}

fn capture_on(stream: cu::CUstream, work: impl FnOnce(cu::CUstream) -> Result<()>) -> Result<RawGraph> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    // SAFETY: begins capture on the private stream.
    check(unsafe { cu::cuStreamBeginCapture_v2(stream, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) })
        .map_err(driver("cuStreamBeginCapture"))?;
    let worked = work(stream);
    let mut graph: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: ends the capture begun above and receives the graph handle.
    let ended = check(unsafe { cu::cuStreamEndCapture(stream, &mut graph) }).map_err(driver("cuStreamEndCapture"));
    if let Err(e) = worked.and(ended) {
        if !graph.is_null() {
            // SAFETY: a graph we own and have not instantiated.
            let _ = unsafe { cu::cuGraphDestroy(graph) };
        }
        return Err(e);
    }
    let mut exec: cu::CUgraphExec = std::ptr::null_mut();
    // SAFETY: instantiates the graph captured above.
    if let Err(e) = check(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }) {
        // SAFETY: as above.
        let _ = unsafe { cu::cuGraphDestroy(graph) };
        return Err(Error::Driver { context: "cuGraphInstantiate", source: e });
    }
    Ok(RawGraph { graph, exec })
}

/// Launches an instantiated graph on a stream.
pub(crate) fn graph_launch(g: &RawGraph, stream: cu::CUstream) -> Result<()> {
    // SAFETY: the graph is alive (borrowed); what it touches is kept alive by the
    // borrows its owner (`AddGraph<'a>`) holds.
    check(unsafe { cu::cuGraphLaunch(g.exec, stream) })
        .map_err(|source| Error::Driver { context: "cuGraphLaunch", source })
}

/// Test-only: launches an add kernel on a null output so that it faults, to check
/// that faults surface as errors at the next synchronisation.
#[doc(hidden)]
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

/// One attribute of a kernel (`CUfunction_attribute` value `attr`).
pub(crate) fn func_attribute(func: RawFn, attr: i32) -> Result<i32> {
    let mut value = 0i32;
    // SAFETY: writes one integer; the attribute value comes from cust's enum, which
    // mirrors CUfunction_attribute.
    let r = unsafe {
        cu::cuFuncGetAttribute(&mut value, std::mem::transmute::<i32, cu::CUfunction_attribute>(attr), func.0)
    };
    check(r).map_err(|source| Error::Driver { context: "cuFuncGetAttribute", source })?;
    Ok(value)
}

/// Most dynamic shared memory a block of device `ordinal` may use after opting in.
pub(crate) fn shared_per_block_optin(ordinal: usize) -> Result<u32> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let (mut dev, mut v): (cu::CUdevice, i32) = (0, 0);
    // SAFETY: each call writes one integer.
    check(unsafe { cu::cuDeviceGet(&mut dev, ordinal as i32) }).map_err(driver("cuDeviceGet"))?;
    // SAFETY: as above.
    check(unsafe {
        cu::cuDeviceGetAttribute(
            &mut v,
            cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            dev,
        )
    })
    .map_err(driver("cuDeviceGetAttribute"))?;
    Ok(v as u32)
}

/// Lets `func` use up to `bytes` of dynamic shared memory per block
/// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub(crate) fn set_max_dynamic_shared(func: RawFn, bytes: u32) -> Result<()> {
    // SAFETY: sets one attribute of a live function handle.
    let r = unsafe {
        cu::cuFuncSetAttribute(
            func.0,
            cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    };
    check(r).map_err(|source| Error::Driver { context: "cuFuncSetAttribute", source })
}

/// Resident blocks per SM for `func` at `block` threads and `shared` bytes of
/// dynamic shared memory per block.
pub(crate) fn occupancy(func: RawFn, block: u32, shared: usize) -> Result<u32> {
    let mut blocks = 0i32;
    // SAFETY: writes one integer.
    let r = unsafe { cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, func.0, block as i32, shared) };
    check(r).map_err(|source| Error::Driver { context: "cuOccupancyMaxActiveBlocksPerMultiprocessor", source })?;
    Ok(blocks as u32)
}

/// The CUDA version the driver supports, e.g. 13000 for 13.0.
pub(crate) fn driver_version() -> Result<i32> {
    let mut v = 0i32;
    // SAFETY: writes one integer.
    check(unsafe { cu::cuDriverGetVersion(&mut v) })
        .map_err(|source| Error::Driver { context: "cuDriverGetVersion", source })?;
    Ok(v)
}

/// One triple of a foreach launch, made only from views by [`many_operand`] or
/// [`many_marks`], so its addresses are valid for `n` elements while those views live.
pub(crate) struct ManyOperand<'a> {
    a: u64,
    b: u64,
    c: u64,
    n: u64,
    _views: std::marker::PhantomData<&'a ()>,
}

/// A foreach triple from views; errors unless the three lengths agree.
pub(crate) fn many_operand<'a, T: Element>(
    name: &'static str,
    a: &View<'a, T>,
    b: &View<'a, T>,
    c: &ViewMut<'a, T>,
) -> Result<ManyOperand<'a>> {
    if a.len() != b.len() || a.len() != c.len() {
        return Err(Error::LengthMismatch { variant: name, a: a.len(), b: b.len(), out: c.len() });
    }
    Ok(ManyOperand { a: a.addr(), b: b.addr(), c: c.addr(), n: a.len() as u64, _views: std::marker::PhantomData })
}

/// A foreach "triple" for the visit marker: the marks stand in for all three.
pub(crate) fn many_marks<'a>(marks: &ViewMut<'a, i32>) -> ManyOperand<'a> {
    let (addr, n) = (marks.addr(), marks.len() as u64);
    ManyOperand { a: addr, b: addr, c: addr, n, _views: std::marker::PhantomData }
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
unsafe fn launch_many_raw(func: RawFn, table: u64, owners_at: usize, chunks: u64, stream: cu::CUstream) -> Result<()> {
    let (mut pt, mut po, mut pc) = (table, table + owners_at as u64, chunks);
    let mut params = [arg(&mut pt), arg(&mut po), arg(&mut pc)];
    // SAFETY: the foreach kernels take (ptr, ptr, u64); the table is valid per
    // the caller's contract and every triple in it holds n elements per operand;
    // the walk touches only indices below each triple's n.
    unsafe { launch(func, many_grid(chunks), kernels_gpu::foreach::MANY_BLOCK, stream, &mut params) }
}

/// One foreach launch, all queued on `stream`. Up to `INLINE_MAX` triples go in
/// the kernel's parameters (`inline`, no copy at all); longer lists go to
/// stream-ordered memory (`cuMemAllocAsync`), are copied there, used and freed
/// in stream order, so concurrent calls on other streams never share a table.
pub(crate) fn launch_many(func: RawFn, inline: RawFn, ops: &[ManyOperand<'_>], stream: cu::CUstream) -> Result<()> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let (descs, owners, chunks) = many_descs(ops)?;
    if chunks == 0 {
        return Ok(());
    }
    if descs.len() <= kernels_gpu::foreach::INLINE_MAX {
        let mut list = ManyInline { tensors: descs.len() as u32, chunks, ..Default::default() };
        list.descs[..descs.len()].copy_from_slice(&descs);
        let mut params = [arg(&mut list)];
        // SAFETY: the inline kernels take one ManyInline by value (a repr(C)
        // struct shared with the kernel crate, under the 4 KiB parameter limit);
        // its triples come from live views, each holding n elements per operand.
        return unsafe { launch(inline, many_grid(chunks), kernels_gpu::foreach::MANY_BLOCK, stream, &mut params) };
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
    let launched = copied.and_then(|_| unsafe { launch_many_raw(func, dev, owners_at, chunks, stream) });
    // SAFETY: frees the table after everything queued before it on the stream.
    let freed = check(unsafe { cu::cuMemFreeAsync(dev, stream) }).map_err(driver("cuMemFreeAsync"));
    launched.and(freed)
}

/// A foreach table in ordinary device memory, for launching the same list again
/// (and for graph capture, where no host copy may be queued). It lives no
/// longer than the views it was made from.
pub(crate) struct ManyTable<'a> {
    ptr: u64,
    owners_at: usize,
    chunks: u64,
    _views: std::marker::PhantomData<&'a ()>,
}

impl Drop for ManyTable<'_> {
    fn drop(&mut self) {
        if self.ptr != 0 {
            free(self.ptr);
        }
    }
}

/// Uploads the table of `ops` (synchronously).
pub(crate) fn many_table<'a>(ops: &[ManyOperand<'a>]) -> Result<ManyTable<'a>> {
    let (descs, owners, chunks) = many_descs(ops)?;
    if chunks == 0 {
        return Ok(ManyTable { ptr: 0, owners_at: 0, chunks: 0, _views: std::marker::PhantomData });
    }
    let (image, owners_at) = many_image(&descs, &owners);
    let bytes = std::mem::size_of_val(image.as_slice());
    let ptr = alloc(bytes)?;
    let t = ManyTable { ptr, owners_at, chunks, _views: std::marker::PhantomData };
    // SAFETY: `ptr` holds `bytes`; the host image is a live slice of that size.
    check(unsafe { cu::cuMemcpyHtoD_v2(ptr, image.as_ptr() as *const c_void, bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoD", source })?;
    Ok(t)
}

/// Launches a foreach kernel over an uploaded table.
pub(crate) fn launch_many_table(func: RawFn, t: &ManyTable<'_>, stream: cu::CUstream) -> Result<()> {
    if t.chunks == 0 {
        return Ok(());
    }
    // SAFETY: the table was made by many_descs from views that outlive it (its
    // lifetime), and freeing their buffers waits for queued work, as for every
    // launch of this crate.
    unsafe { launch_many_raw(func, t.ptr, t.owners_at, t.chunks, stream) }
}

/// The ceiling kernels' operands (`u32` words, 16-byte aligned).
pub(crate) enum Ceiling<'v, 'i, 'o> {
    /// `ceiling_read(a, b, n, sink, key)`
    Read { a: &'v View<'i, u32>, b: &'v View<'i, u32>, sink: &'v mut ViewMut<'o, u32>, key: u32 },
    /// `ceiling_fill(c, n, value)`
    Fill { c: &'v mut ViewMut<'o, u32>, value: u32 },
    /// `ceiling_copy(a, c, n)`
    Copy { a: &'v View<'i, u32>, c: &'v mut ViewMut<'o, u32> },
}

/// Launches a ceiling kernel; checks lengths, 16-byte alignment and the sink.
pub(crate) fn launch_ceiling(
    name: &'static str,
    func: RawFn,
    block: u32,
    op: Ceiling<'_, '_, '_>,
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
    marks: &mut ViewMut<'_, i32>,
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
