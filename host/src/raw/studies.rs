//! Launches of the seed-003 study kernels (matmul, count, strided copy, transpose, fusion).

use kernels_gpu::coalesce;

use super::{arg, launch_2d, need, reads, writes, Geometry, Queue, RawFn};
use super::{DevRead, DevWrite};
use crate::error::{Error, Result};

/// Matrix product launch `(a, b, c, m, n, k)`; checks a ≥ m·k, b ≥ k·n, c ≥ m·n.
///
/// # Safety
/// `func` is a matmul kernel of `kernels_gpu::matmul` taking `(a, b, c, m, n, k)`
/// as named by `name`, from a module of the stream's context.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_matmul(
    name: &'static str,
    func: RawFn,
    g: Geometry,
    a: &impl DevRead<f32>,
    b: &impl DevRead<f32>,
    c: &mut impl DevWrite<f32>,
    (m, n, k): (u32, u32, u32),
    stream: Queue<'_>,
) -> Result<()> {
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    need(name, "a", a.len(), m64 * k64)?;
    need(name, "b", b.len(), k64 * n64)?;
    need(name, "c", c.len(), m64 * n64)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    stream.order(&[reads(a), reads(b), writes(c)])?;
    let (mut pa, mut pb, mut pc, mut pm, mut pn, mut pk) = (a.addr(), b.addr(), c.addr(), m, n, k);
    let mut params = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pm), arg(&mut pn), arg(&mut pk)];
    // SAFETY: (ptr, ptr, ptr, u32, u32, u32) matches every matmul kernel; the views
    // hold what an m×k by k×n product reads and writes; c is exclusive. The
    // kernels guard every index against m, n, k, and the caller's geometry gives
    // them the shared memory they declare.
    unsafe { launch_2d(func, g, stream.handle(), &mut params) }
}

/// Count launch `(x, n, key, counter)`.
///
/// # Safety
/// `func` is a count kernel of `kernels_gpu::count` taking `(x, n, key, counter)`,
/// from a module of the stream's context.
pub(crate) unsafe fn launch_count_eq(
    func: RawFn,
    g: Geometry,
    x: &impl DevRead<i32>,
    key: i32,
    counter: &mut impl DevWrite<u64>,
    stream: Queue<'_>,
) -> Result<()> {
    need("count_eq", "counter", counter.len(), 1)?;
    if x.is_empty() {
        return Ok(());
    }
    stream.order(&[reads(x), writes(counter)])?;
    let (mut px, mut pn, mut pk, mut pc) = (x.addr(), x.len() as u64, key, counter.addr());
    let mut params = [arg(&mut px), arg(&mut pn), arg(&mut pk), arg(&mut pc)];
    // SAFETY: (ptr, u64, i32, ptr) matches the count kernels; x holds n elements;
    // the counter is one exclusive, 8-byte aligned u64.
    unsafe { launch_2d(func, g, stream.handle(), &mut params) }
}

/// Strided copy launch `(src, dst, n, stride)`; checks lengths and that `stride`
/// divides n (the kernel's index map is a permutation only then).
///
/// # Safety
/// `func` is `kernels_gpu::coalesce::STRIDED_COPY` taking `(src, dst, n, stride)`,
/// from a module of the stream's context.
pub(crate) unsafe fn launch_strided_copy(
    func: RawFn,
    g: Geometry,
    src: &impl DevRead<f32>,
    dst: &mut impl DevWrite<f32>,
    stride: u64,
    stream: Queue<'_>,
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
    stream.order(&[reads(src), writes(dst)])?;
    let (mut ps, mut pd, mut pn, mut pst) = (src.addr(), dst.addr(), n, stride);
    let mut params = [arg(&mut ps), arg(&mut pd), arg(&mut pn), arg(&mut pst)];
    // SAFETY: (ptr, ptr, u64, u64); every index the kernel forms is < n.
    unsafe { launch_2d(func, g, stream.handle(), &mut params) }
}

/// Transpose launch `(input, output, rows, cols)`.
///
/// # Safety
/// `func` is a transpose kernel of `kernels_gpu::transpose` taking
/// `(input, output, rows, cols)` as named by `name`, from a module of the stream's context.
pub(crate) unsafe fn launch_transpose(
    name: &'static str,
    func: RawFn,
    g: Geometry,
    input: &impl DevRead<f32>,
    output: &mut impl DevWrite<f32>,
    (rows, cols): (u32, u32),
    stream: Queue<'_>,
) -> Result<()> {
    let total = rows as u64 * cols as u64;
    need(name, "input", input.len(), total)?;
    need(name, "output", output.len(), total)?;
    if total == 0 {
        return Ok(());
    }
    stream.order(&[reads(input), writes(output)])?;
    let (mut pi, mut po, mut pr, mut pc) = (input.addr(), output.addr(), rows, cols);
    let mut params = [arg(&mut pi), arg(&mut po), arg(&mut pr), arg(&mut pc)];
    // SAFETY: (ptr, ptr, u32, u32); indices are guarded by rows and cols.
    unsafe { launch_2d(func, g, stream.handle(), &mut params) }
}

/// One operand list of a fused/unfused element-wise kernel.
pub(crate) enum Elementwise<'v> {
    /// `scale_f32(x, alpha, y, n)`
    Scale { x: &'v dyn DevRead<f32>, alpha: f32, y: &'v mut dyn DevWrite<f32> },
    /// `add_scale_f32(a, b, alpha, d, n)`
    AddScale { a: &'v dyn DevRead<f32>, b: &'v dyn DevRead<f32>, alpha: f32, d: &'v mut dyn DevWrite<f32> },
    /// `saxpy_f32(alpha, x, b, y, n)`
    Saxpy { alpha: f32, x: &'v dyn DevRead<f32>, b: &'v dyn DevRead<f32>, y: &'v mut dyn DevWrite<f32> },
}

/// Launches a fusion-study kernel over all elements; checks equal lengths.
///
/// # Safety
/// `func` is the fusion-study kernel whose parameter list the operand list
/// stands for (`kernels_gpu::fusion`), from a module of the stream's context.
pub(crate) unsafe fn launch_elementwise(
    name: &'static str,
    func: RawFn,
    g: Geometry,
    op: Elementwise<'_>,
    stream: Queue<'_>,
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
    match &op {
        Elementwise::Scale { x, y, .. } => stream.order(&[reads(*x), writes(&**y)])?,
        Elementwise::AddScale { a, b, d, .. } => stream.order(&[reads(*a), reads(*b), writes(&**d)])?,
        Elementwise::Saxpy { x, b, y, .. } => stream.order(&[reads(*x), reads(*b), writes(&**y)])?,
    }
    // SAFETY (all arms): parameter lists match the kernels in kernels-gpu's
    // fusion.rs; every view holds n elements; outputs are exclusive borrows.
    unsafe {
        match op {
            Elementwise::Scale { x, mut alpha, y } => {
                let (mut px, mut py) = (x.addr(), y.addr());
                launch_2d(func, g, stream.handle(), &mut [arg(&mut px), arg(&mut alpha), arg(&mut py), arg(&mut n)])
            }
            Elementwise::AddScale { a, b, mut alpha, d } => {
                let (mut pa, mut pb, mut pd) = (a.addr(), b.addr(), d.addr());
                launch_2d(
                    func,
                    g,
                    stream.handle(),
                    &mut [arg(&mut pa), arg(&mut pb), arg(&mut alpha), arg(&mut pd), arg(&mut n)],
                )
            }
            Elementwise::Saxpy { mut alpha, x, b, y } => {
                let (mut px, mut pb, mut py) = (x.addr(), b.addr(), y.addr());
                launch_2d(
                    func,
                    g,
                    stream.handle(),
                    &mut [arg(&mut alpha), arg(&mut px), arg(&mut pb), arg(&mut py), arg(&mut n)],
                )
            }
        }
    }
}
