//! The cluster plan's exchange (sm_90): each block of a row's cluster
//! publishes its segment's statistics in shared memory, and every thread
//! combines all of them, in rank (= segment) order, through distributed
//! shared memory. Portable builds get stubs (they have no cluster kernels).

#[cfg(target_feature = "sm_90")]
use super::order;
use super::Family;

#[cfg(target_feature = "sm_90")]
gpukern_device::static_shared!(
    /// A cluster block's segment statistics, read by the cluster's blocks.
    norm_part: [f32; 2]
);

/// The cluster's exchange: thread 0 of each block publishes its segment's
/// statistics in shared memory, the cluster syncs, every thread combines the
/// `segs` blocks' statistics in rank (= segment) order from their shared
/// memory. The caller syncs the cluster once more before its block exits.
///
/// # Safety
/// A cluster launch of `segs` blocks along y, block rank = segment; every
/// thread of the cluster calls it once.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub(super) unsafe fn exchange(fam: Family, mine: (f32, f32), t: u32, segs: u32, seg: u32, cols: u32) -> (f32, f32) {
    use gpukern_device::cluster;
    let p = norm_part() as *mut f32;
    if t == 0 {
        // SAFETY: this block's two words, written once, before the sync.
        unsafe {
            *p = mine.0;
            *p.add(1) = mine.1;
        }
    }
    cluster::sync();
    // SAFETY: written before the sync by block `q` < segs, alive until the
    // caller's second sync.
    let part = #[inline(always)]
    |q: u32| unsafe { (cluster::read_f32(p, q), cluster::read_f32(p.add(1), q)) };
    order::combine(fam, segs, seg, cols, part)
}

/// Portable builds have no cluster kernels.
#[cfg(not(target_feature = "sm_90"))]
#[inline(always)]
pub(super) unsafe fn exchange(_: Family, mine: (f32, f32), _: u32, _: u32, _: u32, _: u32) -> (f32, f32) {
    mine
}

/// The cluster barrier (sm_90); nothing in portable builds.
#[inline(always)]
pub(super) fn cluster_sync() {
    #[cfg(target_feature = "sm_90")]
    gpukern_device::cluster::sync();
}
