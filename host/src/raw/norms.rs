//! Launches of the norm kernels (`kernels_gpu::norms`): one launch for a row
//! held by one group, or two around a statistics buffer in stream-ordered
//! memory for a row split into segments. Everything the kernels' contract
//! needs is checked here, before the unsafe blocks.

use cudarc::driver::sys as cu;

use super::{
    arg, check, launch_clustered, launch_overlapped, reads, writes, DevRead, DevWrite, Geometry3, Queue, RawFn,
};
use crate::error::{Error, Result};

/// One norm launch, as the plan made it (`kernels_gpu::norms` for the flags).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NormLaunch {
    pub name: &'static str,
    pub func: RawFn,
    /// Threads per block (a multiple of 32, at most 1024).
    pub block: u32,
    /// Rows per block: 1, or `block / 32` with `FLAG_WARP`.
    pub rows_per_block: u32,
    /// Segments per row (more than one: the two-pass split, or one pass of a
    /// cluster of `segs` blocks with `cluster`).
    pub segs: u32,
    /// A cluster kernel (sm_90 module), launched as clusters of `segs` blocks.
    pub cluster: bool,
    /// A pipelined kernel (sm_90 module, `kernels_gpu::norms::pipe_kernel`):
    /// a persistent grid of `grid_x` blocks with `shared_bytes` of dynamic
    /// shared memory (its ring; at least one slot), 128-bit accesses.
    pub pipe: bool,
    /// Blocks along x: the row groups, or a pipelined plan's persistent grid
    /// (at most the row groups).
    pub grid_x: u32,
    /// Dynamic shared memory per block (0 but for a pipelined kernel).
    pub shared_bytes: u32,
    /// Elements per segment.
    pub seg: u32,
    /// `FLAG_WARP`, `FLAG_VEC`, `FLAG_ALT` (no mode bits: set here).
    pub flags: u32,
    pub rows: u32,
    pub cols: u32,
    pub x_pitch: u64,
    pub y_pitch: u64,
    pub eps: f32,
    /// Elements per 16-byte chunk.
    pub lanes: u32,
    /// `func` is the PDL twin (`kernels_gpu::norms::pdl_twin`), launched
    /// with the programmatic-serialisation attribute: the one launch, or a
    /// split's second pass (its first follows the statistics buffer's
    /// allocation, not a kernel, so there is nothing to overlap; the twin
    /// then runs as a plain launch, its wait a no-op).
    pub pdl: bool,
}

/// The operands of one norm launch; `r`/`h` for add_rms_norm, `w` and `b`
/// where the family reads them.
pub(crate) struct NormIo<'a, R, W> {
    pub x: &'a R,
    pub r: Option<&'a R>,
    pub w: Option<&'a R>,
    pub b: Option<&'a R>,
    pub y: &'a mut W,
    pub h: Option<&'a mut W>,
}

/// Where each operand of a norm launch lies, `(address, elements)`: what
/// [`check_norm`] checks, made from views (`spans_of`) for a launch
/// or from a graph's slots at record time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NormSpans {
    pub x: (u64, usize),
    pub r: Option<(u64, usize)>,
    pub w: Option<(u64, usize)>,
    pub b: Option<(u64, usize)>,
    pub y: (u64, usize),
    pub h: Option<(u64, usize)>,
}

/// The spans of a launch's views.
fn spans_of<T, R: DevRead<T>, W: DevWrite<T>>(io: &NormIo<'_, R, W>) -> NormSpans {
    let span = |v: &R| (v.addr(), v.len());
    NormSpans {
        x: span(io.x),
        r: io.r.map(span),
        w: io.w.map(span),
        b: io.b.map(span),
        y: (io.y.addr(), io.y.len()),
        h: io.h.as_ref().map(|h| (h.addr(), h.len())),
    }
}

fn shape(kernel: &'static str, detail: String) -> Error {
    Error::Shape { kernel, detail }
}

fn warp_flag(l: &NormLaunch) -> bool {
    l.flags & kernels_gpu::norms::FLAG_WARP != 0
}

/// Elements a pitched operand must hold (saturating: no view holds that many).
fn span(rows: u32, cols: u32, pitch: u64) -> u64 {
    (rows as u64).saturating_sub(1).saturating_mul(pitch).saturating_add(cols as u64)
}

/// Checks everything the kernels rely on (see `kernels_gpu::norms::device`)
/// for operands of `size`-byte elements at `io`: the one check of a norm
/// launch, run by [`launch_norm`] and by a graph's record.
pub(crate) fn check_norm(l: &NormLaunch, family: kernels_gpu::norms::Family, io: &NormSpans, size: u64) -> Result<()> {
    use kernels_gpu::norms::{Family, FLAG_ALT};
    let n = l.name;
    let alt = l.flags & FLAG_ALT != 0;
    let needs = match family {
        Family::Rms => io.w.is_some() && (!alt || (io.r.is_some() && io.h.is_some())),
        Family::Layer => io.w.is_some() && io.b.is_some() && (!alt || (io.r.is_some() && io.h.is_some())),
        Family::Softmax => true,
    };
    if !needs {
        return Err(Error::WrongOperands { kernel: n, detail: "an operand the operation reads is missing" });
    }
    if l.cluster && (warp_flag(l) || l.segs < 2 || l.segs > kernels_gpu::norms::MAX_CLUSTER) {
        return Err(shape(n, format!("a cluster of {} segments", l.segs)));
    }
    if l.rows == 0 || l.cols == 0 {
        return Err(shape(n, "rows and cols must be at least 1".into()));
    }
    let groups = l.rows.div_ceil(l.rows_per_block.max(1));
    if l.grid_x == 0 || l.grid_x > groups || (!l.pipe && l.grid_x != groups) {
        return Err(shape(n, format!("a grid of {} blocks for {groups} row groups", l.grid_x)));
    }
    if l.pipe {
        use kernels_gpu::norms::{pipe_slot_bytes, FLAG_ALT, FLAG_VEC};
        let slot = pipe_slot_bytes(l.lanes, l.cols, l.rows_per_block, l.flags & FLAG_ALT != 0);
        let ring = gpukern_device::ring::ring_shared_bytes(slot.min(u32::MAX as u64) as u32, 1);
        if l.cluster || l.segs != 1 || l.flags & FLAG_VEC == 0 || slot > u32::MAX as u64 {
            return Err(shape(n, "a pipelined launch needs one segment and 128-bit accesses".into()));
        }
        if (l.shared_bytes as u64) < ring {
            return Err(shape(n, format!("{} bytes of shared memory hold no ring slot of {slot}", l.shared_bytes)));
        }
    } else if l.shared_bytes != 0 {
        return Err(shape(n, "dynamic shared memory for a kernel that uses none".into()));
    }
    if l.block == 0 || !l.block.is_multiple_of(32) || l.block > 1024 {
        return Err(Error::BlockSize { kernel: n, block: l.block, max: 1024 });
    }
    let warp = l.flags & kernels_gpu::norms::FLAG_WARP != 0;
    if l.rows_per_block != if warp { l.block / 32 } else { 1 } || (warp && l.segs != 1) {
        return Err(shape(n, "rows per block do not match the group".into()));
    }
    if l.segs == 0
        || l.seg == 0
        || (l.segs > 1 && !l.seg.is_multiple_of(l.lanes))
        || (l.segs as u64) * (l.seg as u64) < l.cols as u64
    {
        return Err(shape(n, format!("{} segments of {} do not cover {} columns", l.segs, l.seg, l.cols)));
    }
    if (l.cols as u64).div_ceil(l.seg as u64) != l.segs as u64 {
        return Err(shape(n, "a segment past the row".into()));
    }
    let (xs, ys) = (span(l.rows, l.cols, l.x_pitch), span(l.rows, l.cols, l.y_pitch));
    let all = [
        ("x", Some(io.x), xs),
        ("residual", io.r, xs),
        ("weight", io.w, l.cols as u64),
        ("bias", io.b, l.cols as u64),
        ("y", Some(io.y), ys),
        ("h", io.h, ys),
    ];
    let vec = l.flags & kernels_gpu::norms::FLAG_VEC != 0;
    if vec && (!l.x_pitch.is_multiple_of(l.lanes as u64) || !l.y_pitch.is_multiple_of(l.lanes as u64)) {
        return Err(shape(n, "128-bit accesses need pitches of whole 16-byte chunks".into()));
    }
    for (what, v, need) in all {
        let Some((addr, len)) = v else { continue };
        if (len as u64) < need {
            return Err(shape(n, format!("{what} has {len} elements, needs {need}")));
        }
        let required = if vec { 16 } else { size };
        if addr % required != 0 {
            return Err(Error::Misaligned {
                kernel: n,
                operand: what,
                addr,
                offset: addr % required,
                required: required as usize,
            });
        }
    }
    Ok(())
}

/// Queues the norm: one launch (`segs == 1`), or the statistics pass and the
/// output pass around a buffer of `rows · segs · PART_WORDS` f32 allocated
/// and freed in stream order. The operands the family reads must be given:
/// Rms `w` (and `r`, `h` with `FLAG_ALT`), Layer `w` and `b`. Queued after
/// other streams' work on the operands (`order.rs`).
///
/// # Safety
/// `l.func` is the norm kernel of `family` named `l.name` in the library's
/// table (`kernels_gpu::norms`), from a module of the stream's context, so
/// its parameter list is the one passed here; `l.cluster` only for a
/// `_cluster` kernel of the sm_90 module, on sm_90; `l.pdl` only for a PDL
/// twin (`kernels_gpu::norms::pdl_twin`, sm_90 module), on sm_90.
pub(crate) unsafe fn launch_norm<T, R: DevRead<T>, W: DevWrite<T>>(
    l: &NormLaunch,
    family: kernels_gpu::norms::Family,
    io: NormIo<'_, R, W>,
    queue: Queue<'_>,
) -> Result<()> {
    use kernels_gpu::norms::{MODE_APPLY, MODE_FULL, MODE_STATS, PART_WORDS};
    check_norm(l, family, &spans_of(&io), std::mem::size_of::<T>() as u64)?;
    let ins = [Some(io.x), io.r, io.w, io.b].map(|v| v.and_then(|v| reads(v)));
    queue.order(&[ins[0], ins[1], ins[2], ins[3], writes(&*io.y), io.h.as_deref().and_then(|h| writes(h))])?;
    let stream: cu::CUstream = queue.handle();
    let g = Geometry3 { grid: (l.grid_x, l.segs, 1), block: (l.block, 1, 1), shared_bytes: l.shared_bytes };
    let addr = |v: Option<&R>| v.map_or(0, |v| v.addr());
    let (px, pr, pw, pb) = (io.x.addr(), addr(io.r), addr(io.w), addr(io.b));
    let (py, ph) = (io.y.addr(), io.h.as_ref().map_or(0, |h| h.addr()));
    // One parameter list for every norm kernel; a cluster kernel launches
    // with its cluster dimension.
    let launch = |mode: u32, part: u64, cluster: bool, pdl: bool| {
        let (mut px, mut pr, mut pw, mut pb, mut py, mut ph, mut pp) = (px, pr, pw, pb, py, ph, part);
        let (mut rows, mut cols, mut xp, mut yp, mut eps) = (l.rows, l.cols, l.x_pitch, l.y_pitch, l.eps);
        let (mut flags, mut seg) = (l.flags | mode, l.seg);
        let mut params = [
            arg(&mut px),
            arg(&mut pr),
            arg(&mut pw),
            arg(&mut pb),
            arg(&mut py),
            arg(&mut ph),
            arg(&mut pp),
            arg(&mut rows),
            arg(&mut cols),
            arg(&mut xp),
            arg(&mut yp),
            arg(&mut eps),
            arg(&mut flags),
            arg(&mut seg),
        ];
        if cluster {
            // SAFETY: as below, for a cluster kernel: one row per cluster of
            // `segs` blocks along y (grid.y = segs), block rank = segment; the
            // blocks read each other's two statistics words of shared memory
            // between two cluster barriers; no `part` buffer. `pdl` only
            // with `l.pdl`: `l.func` is a twin, which waits before touching
            // memory.
            return unsafe { launch_clustered(l.func, g, l.segs, stream, &mut params, pdl) };
        }
        // SAFETY: the parameter list of every norm kernel, in order (a
        // pipelined kernel's too: persistent blocks over the same rows, with
        // the dynamic shared memory of at least one ring slot checked above,
        // the bulk copies reading only x and r inside the rows). The
        // kernel touches x, r at row·x_pitch + c and y, h at row·y_pitch + c
        // for row < rows, c < cols (inside the spans checked above), w and b
        // at c < cols, part at (row·segs + s)·PART_WORDS + 0..2 in the split
        // modes (allocated below); 128-bit accesses only with FLAG_VEC, whose
        // alignment is checked; the block is a multiple of 32; the family's
        // operands are present. Outputs are exclusively borrowed views.
        // `pdl` only with `l.pdl`: `l.func` is a twin, which waits before
        // touching memory (the apply pass reads `part` after the statistics
        // pass completed).
        unsafe { launch_overlapped(l.func, g, stream, &mut params, pdl) }
    };
    if l.cluster {
        return launch(MODE_FULL, 0, true, l.pdl);
    }
    if l.segs == 1 {
        return launch(MODE_FULL, 0, false, l.pdl);
    }
    let bytes = l.rows as usize * l.segs as usize * PART_WORDS * 4;
    let mut part: cu::CUdeviceptr = 0;
    let driver = |context| move |source| Error::Driver { context, source };
    // SAFETY: writes one device pointer; the allocation is ordered on `stream`.
    check(unsafe { cu::cuMemAllocAsync(&mut part, bytes, stream) }).map_err(driver("cuMemAllocAsync"))?;
    let ran = launch(MODE_STATS, part, false, false).and_then(|_| launch(MODE_APPLY, part, false, l.pdl));
    // SAFETY: frees the buffer after both passes, in stream order.
    let freed = check(unsafe { cu::cuMemFreeAsync(part, stream) }).map_err(driver("cuMemFreeAsync"));
    ran.and(freed)
}

#[cfg(test)]
mod tests {
    use kernels_gpu::norms::{Family, FLAG_ALT, FLAG_VEC, FLAG_WARP};

    use super::*;

    /// A block launch of 3 rows of 100 f32, pitches 104 (no function: the
    /// checks never touch it).
    fn launch() -> NormLaunch {
        NormLaunch {
            name: "t",
            func: RawFn(std::ptr::null_mut()),
            block: 128,
            rows_per_block: 1,
            segs: 1,
            cluster: false,
            pipe: false,
            grid_x: 3,
            shared_bytes: 0,
            seg: 100,
            flags: FLAG_VEC,
            rows: 3,
            cols: 100,
            x_pitch: 104,
            y_pitch: 104,
            eps: 0.0,
            lanes: 4,
            pdl: false,
        }
    }

    fn spans() -> NormSpans {
        let span = 2 * 104 + 100;
        NormSpans { x: (0x1000, span), r: None, w: Some((0x4000, 100)), b: None, y: (0x8000, span), h: None }
    }

    #[test]
    fn check_norm_refuses_what_the_kernels_cannot_do() {
        let (l, s) = (launch(), spans());
        check_norm(&l, Family::Rms, &s, 4).unwrap();
        check_norm(&l, Family::Softmax, &NormSpans { w: None, ..s }, 4).unwrap();
        let bad = |l: &NormLaunch, f: Family, s: &NormSpans| check_norm(l, f, s, 4).is_err();
        // Operands the family reads, and their lengths.
        assert!(bad(&l, Family::Rms, &NormSpans { w: None, ..s }), "rms without a weight");
        assert!(bad(&l, Family::Layer, &s), "layer without a bias");
        assert!(bad(&NormLaunch { flags: FLAG_VEC | FLAG_ALT, ..l }, Family::Rms, &s), "add_rms without r, h");
        assert!(bad(&l, Family::Rms, &NormSpans { x: (0x1000, 2 * 104 + 99), ..s }), "x short");
        assert!(bad(&l, Family::Rms, &NormSpans { y: (0x8000, 2 * 104 + 99), ..s }), "y short");
        assert!(bad(&l, Family::Rms, &NormSpans { w: Some((0x4000, 99)), ..s }), "weight short");
        // 128-bit accesses need 16-byte operands and pitches; elements their own.
        assert!(bad(&l, Family::Rms, &NormSpans { y: (0x8004, 2 * 104 + 100), ..s }), "y misaligned");
        check_norm(&NormLaunch { flags: 0, ..l }, Family::Rms, &NormSpans { y: (0x8004, 2 * 104 + 100), ..s }, 4)
            .unwrap();
        assert!(bad(&NormLaunch { x_pitch: 102, ..l }, Family::Rms, &s), "pitch of half a chunk");
        // A pitch no view can hold saturates instead of overflowing.
        assert!(bad(&NormLaunch { x_pitch: u64::MAX / 2, ..l }, Family::Rms, &s));
        // The group and the segments.
        assert!(bad(&NormLaunch { block: 48, ..l }, Family::Rms, &s));
        assert!(bad(&NormLaunch { flags: FLAG_WARP, ..l }, Family::Rms, &s), "warp with one row per block");
        assert!(bad(&NormLaunch { seg: 50, ..l }, Family::Rms, &s), "segments short of the row");
        let cluster = NormLaunch { cluster: true, segs: 2, seg: 52, ..l };
        check_norm(&cluster, Family::Rms, &s, 4).unwrap();
        assert!(bad(&NormLaunch { segs: 1, seg: 100, ..cluster }, Family::Rms, &s), "a cluster of one");
        let seventeen = NormLaunch { segs: 17, seg: 8, cols: 130, x_pitch: 132, y_pitch: 132, ..cluster };
        let long = NormSpans { x: (0x1000, 400), y: (0x8000, 400), w: None, ..s };
        check_norm(&NormLaunch { segs: 2, seg: 68, ..seventeen }, Family::Softmax, &long, 4).unwrap();
        assert!(bad(&seventeen, Family::Softmax, &long), "a cluster of 17");
        // The grid and a pipelined launch's ring.
        assert!(bad(&NormLaunch { grid_x: 2, ..l }, Family::Rms, &s), "a grid short of the rows");
        let pipe = NormLaunch { pipe: true, grid_x: 2, shared_bytes: 128 + 512, ..l };
        check_norm(&pipe, Family::Rms, &s, 4).unwrap();
        assert!(bad(&NormLaunch { grid_x: 4, ..pipe }, Family::Rms, &s), "a grid past the rows");
        assert!(bad(&NormLaunch { shared_bytes: 128 + 256, ..pipe }, Family::Rms, &s), "no room for a slot");
        assert!(bad(&NormLaunch { flags: 0, ..pipe }, Family::Rms, &s), "element accesses");
        assert!(bad(&NormLaunch { shared_bytes: 640, ..l }, Family::Rms, &s), "shared memory unasked for");
    }
}
