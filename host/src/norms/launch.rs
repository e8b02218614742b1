//! From a norm call to its launch: every check and choice a norm makes (the
//! shape, the plan, its kernel or PDL twin, the accesses, then
//! `raw::check_norm`), in one function that a call on a stream
//! ([`Gpu::norm`]) and a graph's record (`capture_norms.rs`) both run, so a
//! graph refuses at record time exactly what a call refuses.

use kernels_gpu::norms::{
    chunk_lanes, cluster_kernel, norm_kernel, pdl_twin, pipe_kernel, pipe_slot_bytes, Family, FLAG_ALT, FLAG_VEC,
    FLAG_WARP,
};
use kernels_gpu::Dtype;

use super::{norm_settings, Rows, MAX_COLS};
use crate::device::gpu::Gpu;
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::opts::Opts;
use crate::memory::buffer::Element;
use crate::norm_plan::{NormOp, NormPlan, NormStrategy};
use crate::raw::{self, NormLaunch, NormSpans};

/// A pipelined plan's ring on this device ([`Gpu::norm_pipe_room`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PipeRoom {
    pub blocks_per_sm: u32,
    pub shared_bytes: u32,
}

/// What a norm launches: the plan, and the launch (`None`: no rows or
/// columns, nothing to queue).
pub(crate) struct Prepared {
    pub plan: NormPlan,
    pub launch: Option<NormLaunch>,
    pub family: Family,
}

impl Gpu {
    /// The kernel of `plan` for `family` and `dtype` on this device (a
    /// cluster kernel only where the sm_90 module is loaded).
    pub(crate) fn norm_kernel_name(&self, family: Family, dtype: Dtype, plan: NormPlan) -> Option<&'static str> {
        match plan.strategy {
            NormStrategy::Cluster => cluster_kernel(family, dtype, plan.k).filter(|_| self.info().has_sm90()),
            NormStrategy::Pipe | NormStrategy::PipeWarp => {
                pipe_kernel(family, dtype, plan.k).filter(|_| self.info().has_sm90())
            }
            _ => norm_kernel(family, dtype, plan.k).map(|n| n.name),
        }
    }

    /// The device's most threads per block for kernel `name` (its registers
    /// decide it), as the driver reports it (`Kernel::resources` asks with
    /// the context current, on any thread); its error where it cannot.
    fn norm_max_block(&self, name: &'static str) -> Result<u32> {
        Ok(self.shared.kernel(name)?.resources()?.max_threads_per_block)
    }

    /// The ring of pipelined `plan`'s kernel `name` over rows of `cols`
    /// (`lanes` per chunk, `residual`: add_rms_norm's second input): the
    /// stages (2 to 4) that put the most bytes in flight per SM, as the
    /// driver's occupancy for that shared memory says, else 1 stage; `None`
    /// when not even one slot fits the block's shared memory or the kernel
    /// does not resolve. The device's own figures: its shared memory per
    /// block and per SM, through the occupancy it reports.
    pub(crate) fn norm_pipe_room(
        &self,
        name: &'static str,
        plan: NormPlan,
        lanes: u32,
        cols: usize,
        residual: bool,
    ) -> Option<PipeRoom> {
        let rpg = if plan.strategy.warp_rows() { plan.block / 32 } else { 1 };
        let slot = pipe_slot_bytes(lanes, u32::try_from(cols).ok()?, rpg, residual);
        let k = self.shared.kernel(name).ok()?;
        let room = self.info().shared_per_block_optin.saturating_sub(k.resources().ok()?.shared_bytes) as u64;
        let _live = self.shared.bind().ok()?;
        let func = self.shared.func(name).ok()?;
        let mut best: Option<(PipeRoom, u64)> = None;
        for stages in 1..=4u32 {
            let bytes = gpukern_device::ring::ring_shared_bytes(slot as u32, stages);
            if slot > u32::MAX as u64 || bytes > room {
                break;
            }
            let blocks = raw::occupancy(func, plan.block, bytes as usize).ok()?;
            let flight = blocks as u64 * stages as u64;
            // Ties go to more stages: more of each block's rows in flight.
            if blocks > 0 && best.is_none_or(|b| flight >= b.1) {
                best = Some((PipeRoom { blocks_per_sm: blocks, shared_bytes: bytes as u32 }, flight));
            }
        }
        best.map(|b| b.0)
    }

    /// [`NormPlan::uses_pdl`]: the one decision of every norm launch.
    pub(crate) fn norm_pdl(&self, op: NormOp, dtype: Dtype, rows: Rows, plan: NormPlan, pdl: Pdl) -> bool {
        // Only rows a call accepts (the plan's order is then in range).
        if rows.cols > MAX_COLS || rows.rows >= 1 << 31 || plan.check(op, dtype, rows.cols).is_err() {
            return false;
        }
        let (family, _) = op.family();
        let Some(twin) = self.norm_kernel_name(family, dtype, plan).and_then(pdl_twin) else { return false };
        let order = plan.order(dtype, rows.cols);
        let per_block = if plan.strategy.warp_rows() { (plan.block / 32).max(1) } else { 1 };
        let blocks = (rows.rows as u64).div_ceil(per_block as u64) * order.segments(rows.cols as u32) as u64;
        let threads = blocks.saturating_mul(plan.block as u64);
        rows.rows > 0
            && rows.cols > 0
            && pdl.pays(self.info(), usize::try_from(threads).unwrap_or(usize::MAX), 1)
            && self.norm_max_block(twin).is_ok_and(|max| max >= plan.block)
    }

    /// Every check of a norm of `op` (`eps` its epsilon) on operands at
    /// `spans` (elements of `T`) over `rows` with `opts` (its plan and
    /// pattern), and the launch it makes; `pdl` the setting the call
    /// resolved ([`NormPlan::uses_pdl`]). The operands' owners are the
    /// caller's to check. Errors as [`Gpu::norm`].
    pub(crate) fn norm_prepare<T: Element>(
        &self,
        op: NormOp,
        eps: f32,
        spans: &NormSpans,
        rows: Rows,
        opts: &Opts,
        pdl: Pdl,
    ) -> Result<Prepared> {
        let name = op.name();
        let (given, scalar) = norm_settings(op, opts)?;
        let (family, alt) = op.family();
        // The ring holds the residual's rows too where the kernel reads one.
        let residual = kernels_gpu::norms::has_residual(family, if alt { FLAG_ALT } else { 0 });
        let kernel_of = |p: NormPlan| self.norm_kernel_name(family, T::DTYPE, p);
        // A plan whose kernel cannot be asked is not chosen (the explicit
        // check below reports why).
        let max_block = |p: NormPlan| kernel_of(p).and_then(|k| self.norm_max_block(k).ok()).unwrap_or(0);
        // A cluster of more than 8 blocks (a non-portable size) only where the
        // device can place one (any failure: not chosen).
        let placeable = |p: NormPlan| {
            let segs = p.order(T::DTYPE, rows.cols).segments(rows.cols as u32);
            let fits = || {
                let _live = self.shared.bind().ok()?;
                raw::max_active_clusters(self.shared.func(kernel_of(p)?).ok()?, p.block, segs).ok()
            };
            p.strategy != NormStrategy::Cluster || segs <= 8 || fits().is_some_and(|c| c > 0)
        };
        let lanes = chunk_lanes(T::DTYPE);
        let addrs = [Some(spans.x), Some(spans.y), spans.w, spans.b, spans.r, spans.h];
        let aligned = addrs.iter().flatten().all(|(a, _)| a.is_multiple_of(16));
        let pitches = rows.x_pitch.is_multiple_of(lanes as usize) && rows.y_pitch.is_multiple_of(lanes as usize);
        let vec = !scalar && pitches && aligned;
        // A pipelined plan: its kernel (sm_90), 128-bit accesses (the bulk
        // copies need 16-byte rows) and a ring of at least one slot.
        let pipe_fits = |p: NormPlan| {
            let r = p.order(T::DTYPE, rows.cols);
            let fits = || self.norm_pipe_room(kernel_of(p)?, p, lanes, rows.cols, residual);
            p.strategy.pipelined() != Some(p.strategy) || (vec && r.seg as usize >= rows.cols && fits().is_some())
        };
        // The automatic choice pipelines only where the plan it twins keeps
        // at most 2 row groups resident per SM (the device's occupancy for
        // that kernel): with more, the SM already has rows in flight while
        // one reduces, and the ring's extra barrier and shared-memory pass
        // cost more than they hide (H200, results/nvidia-h200/norms/pipeline:
        // bf16 softmax 16384×4096 pipe/256/2 111.8 µs against block/256/2
        // 101.5; 1024×16384 pipe/1024/2 33.7 against block/1024/2 43.6).
        let pays = |p: NormPlan| {
            let twin = NormPlan { strategy: p.strategy.unpipelined(), ..p };
            let resident = || {
                let _live = self.shared.bind().ok()?;
                raw::occupancy(self.shared.func(kernel_of(twin)?).ok()?, p.block, 0).ok()
            };
            p.strategy.pipelined() != Some(p.strategy) || resident().is_some_and(|b| b <= 2)
        };
        let launchable = |p: NormPlan| p.block <= max_block(p) && placeable(p) && pipe_fits(p);
        let chosen = |p: NormPlan| launchable(p) && pays(p);
        let sms = self.info().sm_count;
        let plan = given.unwrap_or_else(|| NormPlan::auto_rows(T::DTYPE, rows.rows, rows.cols, sms, chosen));
        // A pipelined plan that cannot run here runs as the plan of the same
        // order that loads from global memory (same bits), and says so.
        let plan = if pipe_fits(plan) { plan } else { NormPlan { strategy: plan.strategy.unpipelined(), ..plan } };
        let bad = |detail: String| Err(Error::Shape { kernel: name, detail });
        if rows.cols > MAX_COLS || rows.rows >= 1 << 31 {
            return bad(format!("{} rows of {} elements: at most 2^31 - 1 rows of 2^24", rows.rows, rows.cols));
        }
        if rows.x_pitch < rows.cols || rows.y_pitch < rows.cols {
            return bad(format!("pitches {} and {} below the row length {}", rows.x_pitch, rows.y_pitch, rows.cols));
        }
        for (what, v) in [("weight", spans.w), ("bias", spans.b)] {
            if let Some((_, len)) = v.filter(|v| v.1 != rows.cols) {
                return bad(format!("{what} has {len} elements, the rows {}", rows.cols));
            }
        }
        plan.check(op, T::DTYPE, rows.cols)?;
        let Some(kernel) = kernel_of(plan) else {
            let has = format!("{}.{}", self.info().compute_capability.0, self.info().compute_capability.1);
            return Err(Error::Unsupported { kernel: "norm (cluster plan)", needs: "9.0", has });
        };
        let max = self.norm_max_block(kernel)?;
        if plan.block > max {
            return Err(Error::BlockSize { kernel: name, block: plan.block, max });
        }
        if rows.rows == 0 || rows.cols == 0 {
            return Ok(Prepared { plan, launch: None, family });
        }
        let order = plan.order(T::DTYPE, rows.cols);
        let warp = plan.strategy.warp_rows();
        let groups = (rows.rows as u32).div_ceil(if warp { plan.block / 32 } else { 1 });
        // The pipelined plan's persistent grid and ring (checked above).
        let pipelined = plan.strategy.pipelined() == Some(plan.strategy);
        let room = if pipelined { self.norm_pipe_room(kernel, plan, lanes, rows.cols, residual) } else { None };
        let (grid_x, shared_bytes) = match room {
            Some(room) => ((room.blocks_per_sm * self.info().sm_count).clamp(1, groups), room.shared_bytes),
            None => (groups, 0),
        };
        let flags = if warp { FLAG_WARP } else { 0 } | if vec { FLAG_VEC } else { 0 } | if alt { FLAG_ALT } else { 0 };
        // The twin (same parameters, same order, behind `pdl_enter`) when
        // the decision says so.
        let twin = self.norm_pdl(op, T::DTYPE, rows, plan, pdl).then(|| pdl_twin(kernel)).flatten();
        let launched = twin.unwrap_or(kernel);
        let l = NormLaunch {
            name: launched,
            func: self.shared.func(launched)?,
            cluster: plan.strategy == NormStrategy::Cluster,
            pipe: shared_bytes > 0,
            grid_x,
            shared_bytes,
            block: plan.block,
            rows_per_block: if warp { plan.block / 32 } else { 1 },
            segs: order.segments(rows.cols as u32),
            seg: order.seg,
            flags,
            rows: rows.rows as u32,
            cols: rows.cols as u32,
            x_pitch: rows.x_pitch as u64,
            y_pitch: rows.y_pitch as u64,
            eps,
            lanes,
            pdl: twin.is_some(),
        };
        raw::check_norm(&l, family, spans, std::mem::size_of::<T>() as u64)?;
        Ok(Prepared { plan, launch: Some(l), family })
    }
}

impl NormPlan {
    /// Whether a norm `op` over `rows` of `dtype` with this plan (one that
    /// holds the rows) launches its PDL twin on `gpu` under setting `pdl`:
    /// the element-wise operations' rule ([`Pdl::pays`]: sm_90, and with
    /// [`Pdl::Auto`] up to [`Pdl::AUTO_MAX_WAVES`] waves of resident
    /// threads, counted here as the launch's threads), where the twin takes
    /// the plan's block (a split: its second pass; the first follows an
    /// allocation). The decision [`Gpu::norm`] makes (`pdl`: its
    /// `opts.pdl`, else the stream's setting), and a graph's
    /// [`crate::GraphBuilder::norm`] (else the builder's); `false` for rows a
    /// call refuses.
    pub fn uses_pdl(self, gpu: &Gpu, op: NormOp, dtype: Dtype, rows: Rows, pdl: Pdl) -> bool {
        gpu.norm_pdl(op, dtype, rows, self, pdl)
    }
}
