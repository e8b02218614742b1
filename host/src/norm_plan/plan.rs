//! The norms' plan: which strategy, block and registers per thread a row
//! length gets ([`NormPlan::auto`]), and the reduction order a plan implies
//! ([`NormOrder`], what the CPU reference replays).

use kernels_gpu::norms::{chunk_lanes, NORM_KS};
use kernels_gpu::Dtype;

use super::NormOp;
use crate::error::{Error, Result};

/// How a row is spread over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormStrategy {
    /// One warp per row, `block / 32` rows per block; the row in registers.
    Warp,
    /// One block per row; the row in registers.
    Block,
    /// A row cut into segments of `block · k` chunks, one block each: a pass
    /// that writes each segment's statistics to a buffer in stream-ordered
    /// memory, then a pass that combines them in segment order and writes the
    /// output (the row is read twice; the second read mostly from L2).
    Split,
    /// sm_90: a row's segments (as [`NormStrategy::Split`] cuts them, 2 to
    /// 16) are one thread-block cluster's blocks; each holds its segment in
    /// registers, the blocks exchange their statistics through distributed
    /// shared memory, and the row is read once. Same order (and bits) as the
    /// split with the same block and `k` (2, 4 or 8).
    Cluster,
    /// sm_90: [`NormStrategy::Block`]'s work (a block per row, the row in
    /// registers, same order and bits) in persistent blocks that walk the
    /// rows, each row brought into shared memory by `cp.async.bulk` through
    /// a ring of stages, so the next rows load while a block reduces and
    /// writes one (`kernels_gpu::norms::pipe_kernel`). Needs 16-byte aligned
    /// operands and pitches; otherwise the block plan runs (and is returned).
    Pipe,
    /// sm_90: [`NormStrategy::Warp`]'s work (a warp per row, `block / 32`
    /// rows per block, same order and bits) pipelined as [`NormStrategy::Pipe`]:
    /// a stage holds a block's rows.
    PipeWarp,
}

impl NormStrategy {
    /// Every strategy.
    pub const ALL: [NormStrategy; 6] = [
        NormStrategy::Warp,
        NormStrategy::Block,
        NormStrategy::Split,
        NormStrategy::Cluster,
        NormStrategy::Pipe,
        NormStrategy::PipeWarp,
    ];
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            NormStrategy::Warp => "warp",
            NormStrategy::Block => "block",
            NormStrategy::Split => "split",
            NormStrategy::Cluster => "cluster",
            NormStrategy::Pipe => "pipe",
            NormStrategy::PipeWarp => "pipewarp",
        }
    }

    /// A warp per row (`block / 32` rows per block).
    pub const fn warp_rows(self) -> bool {
        matches!(self, NormStrategy::Warp | NormStrategy::PipeWarp)
    }

    /// The pipelined strategy of the same group ([`NormStrategy::Pipe`] for
    /// a block, [`NormStrategy::PipeWarp`] for a warp), if any.
    pub const fn pipelined(self) -> Option<NormStrategy> {
        match self {
            NormStrategy::Block | NormStrategy::Pipe => Some(NormStrategy::Pipe),
            NormStrategy::Warp | NormStrategy::PipeWarp => Some(NormStrategy::PipeWarp),
            _ => None,
        }
    }

    /// The strategy that loads rows from global memory with the same group
    /// and order (the pipelined ones' fallback; the others are their own).
    pub const fn unpipelined(self) -> NormStrategy {
        match self {
            NormStrategy::Pipe => NormStrategy::Block,
            NormStrategy::PipeWarp => NormStrategy::Warp,
            s => s,
        }
    }
}

/// A plan: the strategy, threads per block and 16-byte chunks per thread
/// (`k`, one of 1, 2, 4, 8). [`NormPlan::auto`] is the automatic choice;
/// any valid plan may be given for studies ([`crate::Opts::norm_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NormPlan {
    /// How rows are spread.
    pub strategy: NormStrategy,
    /// Threads per block: a multiple of 32 up to 1024.
    pub block: u32,
    /// Chunks of 16 bytes each thread holds.
    pub k: u32,
}

/// The order a plan reduces a row in (see `kernels_gpu::norms`): threads per
/// group and elements per segment. Two plans with the same order give the
/// same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NormOrder {
    /// Threads that share a segment (32, or the block).
    pub group: u32,
    /// Elements per segment (the row length when it is not split).
    pub seg: u32,
    /// Elements per chunk (16 bytes).
    pub lanes: u32,
}

impl NormOrder {
    /// Segments of a row of `cols` (a segment of 0 elements, which no
    /// plan gives, counts as 1).
    pub fn segments(self, cols: u32) -> u32 {
        cols.div_ceil(self.seg.max(1))
    }
}

impl NormPlan {
    /// Most threads per block the plan gives a block or a segment.
    pub const MAX_AUTO_BLOCK: u32 = 1024;

    /// The automatic plan for rows of `cols` elements of `dtype`, from the
    /// H100 plan study (the report's "Norms: the plan study"; ×neg there):
    /// * a warp per row when 32 threads of at most 2 chunks hold it (up to 256
    ///   f32 or 512 f16/bf16 elements), with the fewest chunks that do and 8
    ///   rows per block (at 1024 f32 columns warp/256/8 reached ×0.75 in
    ///   rms_norm, block/128/2 ×0.99: 8 chunks cost registers and a row's
    ///   latency is one warp's);
    /// * else a block per row: 2 or 4 chunks per thread and at most 256
    ///   threads (block/256/2 for bf16 rows of 4096, block/256/4 for f32:
    ///   the best there), else 16 values per thread (4 chunks of f32, 2 of
    ///   f16/bf16) and up to 1024 threads (1024×16384: block/512/8 ×0.89 and
    ///   ×0.62 in rms_norm and softmax f32, block/1024/4 ×0.92 and ×0.70; bf16
    ///   block/256/8 ×0.59, ×0.28, block/1024/2 up to ×0.38 in softmax), else
    ///   2, 4 or 8 chunks and up to 512 threads (at 8 chunks of bf16 a thread
    ///   holds 64 values, and 512 such threads fit the register file); the
    ///   block rounded up to a warp;
    /// * else the split, 4 chunks per thread and the largest block of 1024,
    ///   512, 256, 128 (f32 64×262144 softmax: split/1024/4 ×0.32, split/256/4
    ///   ×0.23).
    pub fn auto(dtype: Dtype, cols: usize) -> NormPlan {
        Self::auto_within(dtype, cols, |_| true)
    }

    /// [`NormPlan::auto`] among the plans `launchable` accepts (the device's
    /// limit on a kernel's block, from its registers, and for clusters of
    /// more than 8 blocks whether the device can place one): the first
    /// candidate of the same preference order that it accepts.
    ///
    /// On sm_90 (`launchable` accepts cluster plans only there), rows past a
    /// block take a cluster where one holds them: of at most 8 blocks (the
    /// portable size) of 256 threads of 4 chunks, else 512 of 4, 1024 of 4,
    /// 512 of 8; else of 9 to 16 blocks (the H100's and H200's non-portable
    /// size) of 512 threads of 8 chunks or 1024 of 4 (f32 64×262144: the split
    /// ×0.43, ×0.29, ×0.23 in rms_norm, layer_norm, softmax; cluster/512/8
    /// ×0.51, ×0.44, ×0.31).
    pub fn auto_within(dtype: Dtype, cols: usize, launchable: impl Fn(NormPlan) -> bool) -> NormPlan {
        let lanes = chunk_lanes(dtype) as usize;
        let mut cands = Vec::new();
        for k in [1, 2].into_iter().filter(|&k| cols <= 32 * k * lanes) {
            cands.push(NormPlan { strategy: NormStrategy::Warp, block: 256, k: k as u32 });
        }
        let sixteen = [(16 / lanes) as u32];
        for (max, ks) in [(256, &[2, 4][..]), (1024, &sixteen[..]), (512, &NORM_KS[1..])] {
            for &k in ks {
                let threads = cols.div_ceil(k as usize * lanes).next_multiple_of(32);
                if threads <= max {
                    cands.push(NormPlan { strategy: NormStrategy::Block, block: threads as u32, k });
                }
            }
        }
        for (lo, hi, shapes) in
            [(2, 8, &[(256, 4), (512, 4), (1024, 4), (512, 8)][..]), (9, 16, &[(512, 8), (1024, 4)])]
        {
            for &(block, k) in shapes {
                let segs = cols.div_ceil((block * k) as usize * lanes);
                if (lo..=hi).contains(&segs) {
                    cands.push(NormPlan { strategy: NormStrategy::Cluster, block, k });
                }
            }
        }
        for block in [1024, 512, 256, 128] {
            cands.push(NormPlan { strategy: NormStrategy::Split, block, k: 4 });
        }
        let fallback = NormPlan { strategy: NormStrategy::Split, block: 32, k: 1 };
        cands.into_iter().find(|p| launchable(*p)).unwrap_or(fallback)
    }

    /// [`NormPlan::auto_within`]'s plan for rows of `cols`, or its
    /// pipelined twin ([`NormStrategy::pipelined`]: same group, block and
    /// `k`, so the same order and bits) where `launchable` accepts it (on
    /// sm_90, with the operands aligned and a ring slot in the block's
    /// shared memory: the device's own figures) and there are at least
    /// [`NormPlan::PIPE_MIN_GROUPS_PER_SM`] row groups per SM of the
    /// device's `sms`: fewer, and a persistent block has no next row to
    /// load while it reduces one, so the pipeline buys nothing (and the
    /// pipelined kernels have no PDL twin, which the small shapes use).
    pub fn auto_rows(
        dtype: Dtype,
        rows: usize,
        cols: usize,
        sms: u32,
        launchable: impl Fn(NormPlan) -> bool,
    ) -> NormPlan {
        let p = Self::auto_within(dtype, cols, &launchable);
        let Some(strategy) = p.strategy.pipelined() else { return p };
        let twin = NormPlan { strategy, ..p };
        let per_group = if p.strategy.warp_rows() { (p.block / 32).max(1) as usize } else { 1 };
        let enough = rows.div_ceil(per_group) >= Self::PIPE_MIN_GROUPS_PER_SM * sms as usize;
        if enough && launchable(twin) {
            twin
        } else {
            p
        }
    }

    /// Row groups per SM from which [`NormPlan::auto_rows`] pipelines.
    pub const PIPE_MIN_GROUPS_PER_SM: usize = 2;

    /// The order this plan gives rows of `cols` elements of `dtype`. Total
    /// for any plan and length: a segment is at least 1 element and, past
    /// `u32::MAX`, saturates there (no such plan or row passes
    /// [`NormPlan::check`]; a wrapped or zero segment would divide by zero).
    pub fn order(self, dtype: Dtype, cols: usize) -> NormOrder {
        let lanes = chunk_lanes(dtype);
        let group = if self.strategy.warp_rows() { 32 } else { self.block };
        let seg = match self.strategy {
            NormStrategy::Split | NormStrategy::Cluster => {
                (self.block as u64 * self.k as u64).saturating_mul(lanes.into())
            }
            _ => cols as u64,
        };
        NormOrder { group, seg: u32::try_from(seg.max(1)).unwrap_or(u32::MAX), lanes }
    }

    /// Errors unless the plan can run rows of `cols` elements of `dtype`:
    /// block a multiple of 32 in 32..=1024, `k` one of 1, 2, 4, 8, and a row
    /// that fits the group (warp, block), at most 65535 segments (split), or
    /// 2 to 16 segments and `k` 2, 4 or 8 (cluster; the device is checked at
    /// launch). The error names `op`.
    pub fn check(self, op: NormOp, dtype: Dtype, cols: usize) -> Result<()> {
        let op = op.name();
        if self.block == 0 || !self.block.is_multiple_of(32) || self.block > 1024 {
            return Err(Error::BlockSize { kernel: op, block: self.block, max: 1024 });
        }
        if !NORM_KS.contains(&self.k) {
            return Err(Error::Shape { kernel: op, detail: format!("k = {} is not one of {NORM_KS:?}", self.k) });
        }
        let o = self.order(dtype, cols);
        let holds = o.group as usize * self.k as usize * o.lanes as usize;
        let fits = match self.strategy {
            NormStrategy::Warp | NormStrategy::Block | NormStrategy::Pipe | NormStrategy::PipeWarp => cols <= holds,
            NormStrategy::Split => cols.div_ceil(holds) <= 65535,
            NormStrategy::Cluster => {
                // Not `as u32`: a huge row would wrap into the range.
                let segs = u32::try_from(cols.div_ceil(holds)).unwrap_or(u32::MAX);
                (2..=kernels_gpu::norms::MAX_CLUSTER).contains(&segs)
                    && kernels_gpu::norms::CLUSTER_KS.contains(&self.k)
            }
        };
        if !fits {
            let detail = format!(
                "the {} plan (block {}, k {}) cannot hold rows of {cols}",
                self.strategy.name(),
                self.block,
                self.k
            );
            return Err(Error::Shape { kernel: op, detail });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_plans_hold_every_row_length() {
        for dtype in Dtype::ALL {
            for cols in [1usize, 3, 31, 33, 1000, 1024, 2048, 4097, 5120, 16384, 32768, 65536, 262144, 1 << 20] {
                let p = NormPlan::auto(dtype, cols);
                p.check(NormOp::Rms, dtype, cols).unwrap();
                assert!(p.block <= NormPlan::MAX_AUTO_BLOCK, "{p:?}");
            }
        }
        assert_eq!(NormPlan::auto(Dtype::Bf16, 4096), NormPlan { strategy: NormStrategy::Block, block: 256, k: 2 });
        assert_eq!(NormPlan::auto(Dtype::F32, 1024), NormPlan { strategy: NormStrategy::Block, block: 128, k: 2 });
        assert_eq!(NormPlan::auto(Dtype::F32, 256), NormPlan { strategy: NormStrategy::Warp, block: 256, k: 2 });
        assert_eq!(NormPlan::auto(Dtype::F32, 4096), NormPlan { strategy: NormStrategy::Block, block: 256, k: 4 });
        assert_eq!(NormPlan::auto(Dtype::F32, 16384), NormPlan { strategy: NormStrategy::Block, block: 1024, k: 4 });
        assert_eq!(NormPlan::auto(Dtype::Bf16, 16384), NormPlan { strategy: NormStrategy::Block, block: 1024, k: 2 });
        let long = NormPlan::auto(Dtype::F32, 262144);
        assert_eq!(long, NormPlan { strategy: NormStrategy::Cluster, block: 512, k: 8 });
        assert_eq!(NormPlan::auto(Dtype::Bf16, 65536).strategy, NormStrategy::Cluster);
        let no_cluster = NormPlan::auto_within(Dtype::Bf16, 65536, |p| p.strategy != NormStrategy::Cluster);
        assert_eq!(no_cluster.strategy, NormStrategy::Split);
        assert_eq!(NormPlan::auto(Dtype::Bf16, 1 << 20).strategy, NormStrategy::Split);
    }

    #[test]
    fn cluster_and_split_of_the_same_shape_share_the_order() {
        for dtype in Dtype::ALL {
            let split = NormPlan { strategy: NormStrategy::Split, block: 256, k: 4 };
            let cluster = NormPlan { strategy: NormStrategy::Cluster, ..split };
            assert_eq!(split.order(dtype, 50_000), cluster.order(dtype, 50_000));
        }
        // A cluster needs 2 to 16 segments and k of 2, 4 or 8.
        let c = NormPlan { strategy: NormStrategy::Cluster, block: 256, k: 4 };
        assert!(c.check(NormOp::Rms, Dtype::F32, 4096).is_err(), "one segment");
        c.check(NormOp::Rms, Dtype::F32, 4097).unwrap();
        c.check(NormOp::Rms, Dtype::F32, 16 * 4096).unwrap();
        assert!(c.check(NormOp::Rms, Dtype::F32, 16 * 4096 + 1).is_err(), "17 segments");
        assert!(NormPlan { k: 1, ..c }.check(NormOp::Rms, Dtype::F32, 5000).is_err());
    }

    #[test]
    fn auto_skips_plans_the_device_cannot_launch() {
        // Without clusters (not sm_90) a row past a block is split.
        let p = NormPlan::auto_within(Dtype::F32, 30_000, |p| p.strategy != NormStrategy::Cluster);
        assert_eq!(p.strategy, NormStrategy::Split);
        // Blocks over 256 threads refused (registers): a smaller k·block that holds the row.
        let p = NormPlan::auto_within(Dtype::Bf16, 16384, |p| p.block <= 256);
        assert!(p.block <= 256 && p.check(NormOp::Rms, Dtype::Bf16, 16384).is_ok(), "{p:?}");
        // Nothing accepted: the smallest split, which every device runs.
        let p = NormPlan::auto_within(Dtype::F32, 10, |_| false);
        assert_eq!(p, NormPlan { strategy: NormStrategy::Split, block: 32, k: 1 });
    }

    #[test]
    fn orders_of_huge_rows_and_plans_do_not_panic() {
        let huge = [1usize << 32, (1 << 32) + 1, u32::MAX as usize, usize::MAX];
        let plans = NormStrategy::ALL.into_iter().flat_map(|strategy| {
            [(256, 2), (1024, 8), (u32::MAX, 8), (0, 0), (u32::MAX, u32::MAX)].map(|(block, k)| NormPlan {
                strategy,
                block,
                k,
            })
        });
        for p in plans {
            for dtype in Dtype::ALL {
                for cols in huge.into_iter().chain([0, 1, 4096]) {
                    let o = p.order(dtype, cols);
                    assert!(o.seg >= 1, "{p:?} {cols}: {o:?}");
                    o.segments(cols.min(u32::MAX as usize) as u32);
                    // Refused (or held), never a panic.
                    let _ = p.check(NormOp::Rms, dtype, cols);
                }
            }
        }
        // The reported case: a warp row of 2^32 gave a segment of 0.
        let warp = NormPlan { strategy: NormStrategy::Warp, block: 256, k: 1 };
        assert_eq!(warp.order(Dtype::F32, 1 << 32).seg, u32::MAX);
        assert_eq!(NormOrder { group: 32, seg: 0, lanes: 4 }.segments(10), 10);
        // A cluster whose segment count wraps past 2^32 into 2..=16 is refused.
        let c = NormPlan { strategy: NormStrategy::Cluster, block: 256, k: 4 };
        let holds = 256 * 4 * chunk_lanes(Dtype::F32) as usize;
        assert!(c.check(NormOp::Rms, Dtype::F32, holds * ((1 << 32) + 4)).is_err());
    }

    #[test]
    fn auto_pipelines_many_rows_where_it_can() {
        let p = NormPlan::auto_rows(Dtype::Bf16, 16384, 4096, 132, |_| true);
        assert_eq!(p, NormPlan { strategy: NormStrategy::Pipe, block: 256, k: 2 });
        let block = NormPlan { strategy: NormStrategy::Block, ..p };
        assert_eq!(p.order(Dtype::Bf16, 4096), block.order(Dtype::Bf16, 4096), "the twin's order");
        assert_eq!(NormPlan::auto_rows(Dtype::Bf16, 8, 4096, 132, |_| true), block, "too few rows");
        let refused = NormPlan::auto_rows(Dtype::Bf16, 16384, 4096, 132, |p| p.strategy != NormStrategy::Pipe);
        assert_eq!(refused, block);
        let warp = NormPlan::auto_rows(Dtype::F32, 1 << 20, 256, 132, |_| true);
        assert_eq!(warp, NormPlan { strategy: NormStrategy::PipeWarp, block: 256, k: 2 });
        assert_eq!(warp.order(Dtype::F32, 256).group, 32);
        // Groups of 8 rows (a warp each): 2 per SM of 132 needs 264 groups.
        assert_eq!(NormPlan::auto_rows(Dtype::F32, 8 * 263, 256, 132, |_| true).strategy, NormStrategy::Warp);
        assert_eq!(NormPlan::auto_rows(Dtype::F32, 64, 262144, 132, |_| true).strategy, NormStrategy::Cluster);
        for s in NormStrategy::ALL {
            assert_eq!(s.pipelined().map(|p| p.unpipelined().pipelined()), s.pipelined().map(Some));
        }
    }

    #[test]
    fn bad_plans_are_refused() {
        let p = NormPlan { strategy: NormStrategy::Warp, block: 256, k: 1 };
        assert!(p.check(NormOp::Rms, Dtype::F32, 129).is_err());
        assert!(NormPlan { block: 48, ..p }.check(NormOp::Rms, Dtype::F32, 4).is_err());
        assert!(NormPlan { k: 3, ..p }.check(NormOp::Rms, Dtype::F32, 4).is_err());
        assert!(NormPlan { block: 2048, ..p }.check(NormOp::Rms, Dtype::F32, 4).is_err());
        p.check(NormOp::Rms, Dtype::F32, 128).unwrap();
    }
}
