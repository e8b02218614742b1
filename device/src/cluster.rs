//! Thread-block clusters (sm_90): the block's rank in its cluster, the
//! cluster-wide barrier, reads of another block's shared memory through
//! the cluster's distributed shared memory (`mapa` + `ld.shared::cluster`),
//! and the cluster-wide reduction built on them ([`publish`], [`fold_f32`]:
//! each block's values read by every thread in rank order, so the result's
//! bits do not depend on timing).
//!
//! Launch such a kernel with cluster dimensions (the host's
//! `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`); without
//! them every block is a cluster of one (rank 0 of 1), and these calls stay
//! correct. Only the sm_90 build compiles this.

use core::arch::asm;

/// This block's rank in its cluster (`%cluster_ctarank`, 0..cluster size).
#[inline(always)]
pub fn block_rank() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {0}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack, preserves_flags)) };
    r
}

/// Blocks in this cluster (`%cluster_nctarank`).
#[inline(always)]
pub fn blocks() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {0}, %cluster_nctarank;", out(reg32) r, options(pure, nomem, nostack, preserves_flags)) };
    r
}

/// The cluster-wide barrier: every thread of every block of the cluster
/// arrives (release) and waits (acquire), so shared-memory writes of any
/// block before it are visible to every block's reads after it. A collective:
/// every thread of the cluster must call it, the same number of times (as
/// `sync_threads` for a block); a block may also not exit while another block
/// can still read its shared memory, so a kernel that reads remotely calls it
/// once more after its last remote read.
#[inline(always)]
pub fn sync() {
    // SAFETY: a barrier; not `nomem`, so no memory access moves across it.
    unsafe { asm!("barrier.cluster.arrive.release; barrier.cluster.wait.acquire;", options(nostack, preserves_flags)) };
}

/// Reads the f32 at `p`, a pointer into this block's shared memory, from the
/// same place in the shared memory of block `rank` of the cluster.
///
/// # Safety
/// `p` points into this block's shared memory at a variable every block of
/// the kernel has (a `static_shared!`); `rank` < [`blocks`]; that block wrote
/// the value before a [`sync`] this thread passed, writes it no more before
/// the next one, and has not exited (see [`sync`]).
#[inline(always)]
pub unsafe fn read_f32(p: *const f32, rank: u32) -> f32 {
    let local = crate::hopper::shared_addr(p);
    let v: f32;
    // SAFETY: per the contract: a shared::cluster address of a live block.
    unsafe {
        asm!(
            "{{ .reg .u32 a; mapa.shared::cluster.u32 a, {l}, {r}; ld.shared::cluster.f32 {v}, [a]; }}",
            l = in(reg32) local, r = in(reg32) rank, v = out(reg32) v,
            options(readonly, nostack, preserves_flags),
        );
    }
    v
}

/// Publishes this block's `N` words for the cluster: thread (0, 0) writes
/// `mine` to `slot`, then the cluster syncs ([`sync`]), after which any
/// thread of the cluster may read them with [`read_f32`] (rank = this
/// block's [`block_rank`]). A collective: every thread of the cluster calls
/// it; the caller calls [`sync`] once more before its block exits or `slot`
/// is written again.
///
/// # Safety
/// `slot` points to a `static_shared!` array every block of the kernel has,
/// which no thread reads or writes between the previous cluster barrier and
/// this one but through this call.
#[inline(always)]
pub unsafe fn publish<const N: usize>(slot: *mut [f32; N], mine: [f32; N]) {
    if crate::is_block_leader() {
        // SAFETY: per the contract: this block's array, this thread alone.
        unsafe { *slot = mine };
    }
    sync();
}

/// The cluster-wide reduction over distributed shared memory: every block
/// publishes `mine` ([`publish`]) and every thread folds the cluster's values
/// in rank order, `op(…op(op(v0, v1), v2)…, vn-1)`, so every thread of every
/// block gets the same bits, independent of timing. Same collective rules as
/// [`publish`].
///
/// # Safety
/// As [`publish`] for `slot`.
#[inline(always)]
pub unsafe fn fold_f32(slot: *mut [f32; 1], mine: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    // SAFETY: forwarded.
    unsafe { publish(slot, [mine]) };
    let p = slot as *const f32;
    // SAFETY: written by rank q before the barrier in `publish`, which this
    // thread passed; alive until the caller's next cluster barrier.
    let mut acc = unsafe { read_f32(p, 0) };
    let mut q = 1;
    while q < blocks() {
        // SAFETY: as above, rank q < blocks().
        acc = op(acc, unsafe { read_f32(p, q) });
        q += 1;
    }
    acc
}
