//! Checks of the device's pipeline building blocks (sm_90 module):
//! [`RING_COPY`] copies rows through `gpukern_device::ring::Ring`'s walk
//! (persistent blocks, bulk copies into a ring of stages, reads out of the
//! slots, stores after the slot is released), and [`CLUSTER_FOLD`] sums one
//! value per block across a cluster with `gpukern_device::cluster::fold_f32`
//! (rank order, over distributed shared memory). The host's GPU tests compare
//! them bit for bit with plain copies and left-to-right sums.

/// `ring_copy_rows(x, y, rows, row_bytes, pitch)`: rows of `row_bytes` (a
/// multiple of 16, at most `RING_COPY_PACKS · 16 · block`) every `pitch`
/// bytes (a multiple of 16), from `x` to `y`, both 16-byte aligned; block
/// `b` of a 1-D grid copies rows `b, b + grid, …`; the ring's stages are the
/// launch's dynamic shared memory (`ring_shared_bytes(ring_slot_bytes(row_bytes), stages)`).
pub const RING_COPY: &str = "ring_copy_rows";
/// `cluster_fold_sum(x, y)`: a grid of `(1, blocks)` in clusters along y;
/// every thread `t` of block `b` writes `y[b · block + t]` = the sum of `x`
/// over `b`'s cluster, `x[c·n] + x[c·n + 1] + …` in rank order.
pub const CLUSTER_FOLD: &str = "cluster_fold_sum";
/// 16-byte packs one thread of [`RING_COPY`] holds per row.
pub const RING_COPY_PACKS: u32 = 4;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod kernels {
    use gpukern_device::pack::{store128, Pack16};
    use gpukern_device::ring::{ring_slot_bytes, Ring};
    use gpukern_device::{cluster, thread};

    use super::RING_COPY_PACKS;

    gpukern_device::static_shared!(
        /// One block's value for the cluster's fold.
        cluster_fold_slot: [f32; 1]
    );

    /// See [`super::RING_COPY`].
    ///
    /// # Safety
    /// As documented there: `x` and `y` hold `rows` rows of `row_bytes` every
    /// `pitch` bytes, `y` overlapping nothing `x` holds.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn ring_copy_rows(x: *const u8, y: *mut u8, rows: u32, row_bytes: u32, pitch: u64) {
        let ring = Ring::new(ring_slot_bytes(row_bytes as u64) as u32);
        if ring.stages() == 0 {
            return;
        }
        let (tid, _) = thread::thread_xy();
        let (bx, _) = thread::block_xy();
        let (bdim, _) = thread::block_dim_xy();
        let (gx, _) = thread::grid_dim_xy();
        let count = if bx < rows { (rows - bx).div_ceil(gx) } else { 0 };
        let packs = row_bytes / 16;
        let at = |j: u32| (bx + j * gx) as usize * pitch as usize;
        let fill = |j: u32| {
            // SAFETY: row bx + j·gx < rows: row_bytes readable, 16-byte aligned,
            // into a slot of at least row_bytes; armed with those bytes.
            unsafe {
                ring.expect(j, row_bytes);
                ring.load(j, 0, x.add(at(j)), row_bytes);
            }
        };
        let read = |j: u32| {
            let mut v = [Pack16([0; 4]); RING_COPY_PACKS as usize];
            for (i, p) in v.iter_mut().enumerate() {
                let q = tid + i as u32 * bdim;
                if q < packs {
                    // SAFETY: a landed pack of item j's slot.
                    *p = unsafe { ring.read128(j, q * 16) };
                }
            }
            v
        };
        let done = |j: u32, v: [Pack16; RING_COPY_PACKS as usize]| {
            for (i, p) in v.iter().enumerate() {
                let q = tid + i as u32 * bdim;
                if q < packs {
                    // SAFETY: inside row bx + j·gx of y, 16-byte aligned.
                    unsafe { store128(y.add(at(j) + q as usize * 16) as *mut Pack16, *p) };
                }
            }
        };
        // SAFETY: stages ≥ 1; `fill` arms and loads exactly row_bytes; `read`
        // reads item j's landed slot only; `done` writes y only.
        unsafe { ring.walk(count, fill, read, done) }
    }

    /// See [`super::CLUSTER_FOLD`].
    ///
    /// # Safety
    /// `x` holds one f32 per block, `y` `block` per block; a cluster launch.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn cluster_fold_sum(x: *const f32, y: *mut f32) {
        let (tid, _) = thread::thread_xy();
        let (_, by) = thread::block_xy();
        let (bdim, _) = thread::block_dim_xy();
        // SAFETY: one value per block (the contract); the slot is this
        // kernel's alone; every thread of the cluster calls the fold once, and
        // the cluster syncs again before any block exits.
        unsafe {
            let s = cluster::fold_f32(cluster_fold_slot(), *x.add(by as usize), |a, b| a + b);
            *y.add(by as usize * bdim as usize + tid as usize) = s;
        }
        cluster::sync();
    }
}
