//! Launches of the pipeline building blocks' checks
//! (`kernels_gpu::pipeline`): a row copy through a ring of bulk-copy stages,
//! and a cluster-wide sum over distributed shared memory. Every bound the
//! kernels rely on is checked here, before the unsafe blocks.

use super::{
    arg, launch_2d, launch_clustered, need, reads, writes, DevRead, DevWrite, Geometry, Geometry3, Queue, RawFn,
};
use crate::error::{Error, Result};

fn shape(kernel: &'static str, detail: String) -> Error {
    Error::Shape { kernel, detail }
}

/// Queues `ring_copy_rows`: `rows` rows of `cols` f32 every `pitch` from `x`
/// to `y` through a ring of `stages`, on a grid of `grid` blocks of `block`
/// threads. `shared_optin`: the block's dynamic shared memory limit.
///
/// # Safety
/// `func` is `kernels_gpu::pipeline::RING_COPY` from the sm_90 module of the
/// stream's context, whose dynamic shared memory limit was raised to at
/// least `shared_optin`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_ring_copy(
    func: RawFn,
    x: &impl DevRead<f32>,
    y: &mut impl DevWrite<f32>,
    (rows, cols, pitch): (u32, u32, u32),
    (stages, grid, block): (u32, u32, u32),
    shared_optin: u32,
    queue: Queue<'_>,
) -> Result<()> {
    use gpukern_device::ring::{ring_shared_bytes, ring_slot_bytes, RING_MAX_STAGES};
    use kernels_gpu::pipeline::{RING_COPY as N, RING_COPY_PACKS};
    if cols == 0 || !cols.is_multiple_of(4) || !pitch.is_multiple_of(4) || pitch < cols {
        return Err(shape(N, format!("rows of {cols} every {pitch}: whole 16-byte packs, pitch ≥ row")));
    }
    if block == 0 || !block.is_multiple_of(32) || block > 1024 {
        return Err(Error::BlockSize { kernel: N, block, max: 1024 });
    }
    if cols as u64 / 4 > RING_COPY_PACKS as u64 * block as u64 {
        return Err(shape(N, format!("rows of {cols} f32 past {RING_COPY_PACKS} packs per thread")));
    }
    let shared = ring_shared_bytes(ring_slot_bytes(cols as u64 * 4) as u32, stages);
    if stages == 0 || stages > RING_MAX_STAGES || shared > shared_optin as u64 {
        return Err(shape(N, format!("{stages} stages of {cols} f32 in {shared_optin} bytes")));
    }
    if grid == 0 || grid > rows.max(1) {
        return Err(shape(N, format!("a grid of {grid} for {rows} rows")));
    }
    let span = (rows as u64).saturating_sub(1) * pitch as u64 + cols as u64;
    need(N, "x", x.len(), span)?;
    need(N, "y", y.len(), span)?;
    if !x.addr().is_multiple_of(16) || !y.addr().is_multiple_of(16) {
        return Err(shape(N, "x and y must be 16-byte aligned".into()));
    }
    if rows == 0 {
        return Ok(());
    }
    queue.order(&[reads(x), writes(y)])?;
    let (mut px, mut py, mut pr, mut pb, mut pp) = (x.addr(), y.addr(), rows, cols * 4, pitch as u64 * 4);
    let mut params = [arg(&mut px), arg(&mut py), arg(&mut pr), arg(&mut pb), arg(&mut pp)];
    let g = Geometry { grid: (grid, 1), block: (block, 1), shared_bytes: shared as u32 };
    // SAFETY: (ptr, ptr, u32, u32, u64) is the kernel's list; x and y hold
    // the rows (checked), 16-byte aligned with 16-byte rows and pitch; y is
    // exclusive; the shared memory holds `stages` slots within the raised
    // limit; a thread holds at most RING_COPY_PACKS packs of a row.
    unsafe { launch_2d(func, g, queue.handle(), &mut params) }
}

/// Queues `cluster_fold_sum` over `x` (one f32 per block) into `y` (`block`
/// per block) in clusters of `cluster` blocks.
///
/// # Safety
/// `func` is `kernels_gpu::pipeline::CLUSTER_FOLD` from the sm_90 module of
/// the stream's context.
pub(crate) unsafe fn launch_cluster_fold(
    func: RawFn,
    x: &impl DevRead<f32>,
    y: &mut impl DevWrite<f32>,
    cluster: u32,
    block: u32,
    queue: Queue<'_>,
) -> Result<()> {
    use kernels_gpu::pipeline::CLUSTER_FOLD as N;
    let blocks = x.len();
    if !(1..=8).contains(&cluster) || !blocks.is_multiple_of(cluster as usize) || blocks > 65535 {
        return Err(shape(N, format!("{blocks} blocks in clusters of {cluster} (1 to 8, dividing; ≤ 65535)")));
    }
    if block == 0 || !block.is_multiple_of(32) || block > 1024 {
        return Err(Error::BlockSize { kernel: N, block, max: 1024 });
    }
    need(N, "y", y.len(), blocks as u64 * block as u64)?;
    if blocks == 0 {
        return Ok(());
    }
    queue.order(&[reads(x), writes(y)])?;
    let (mut px, mut py) = (x.addr(), y.addr());
    let mut params = [arg(&mut px), arg(&mut py)];
    let g = Geometry3 { grid: (1, blocks as u32, 1), block: (block, 1, 1), shared_bytes: 0 };
    // SAFETY: (ptr, ptr) is the kernel's list; block b reads x[b] and writes
    // y[b·block ..][..block], inside the checked lengths; clusters along y
    // of a portable size dividing the grid.
    unsafe { launch_clustered(func, g, cluster, queue.handle(), &mut params, false) }
}
