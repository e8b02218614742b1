//! The norms section's plan study: every plan that holds the rows (`Gpu::norm`
//! with `Opts::norm_plan`) at six shapes, f32 and bf16, rms_norm,
//! layer_norm and softmax, timed as the section's rows, beside neg; the
//! evidence for `NormPlan::auto`'s choices.

use std::fmt::Write as _;

use gpukern::half::bf16;
use gpukern::{Dtype, Element, Gpu, NormOp, NormPlan, NormStrategy, Rows, Stream, UnaryOp};
use serde::{Deserialize, Serialize};

use super::norms_run::{run, run_plan, Bufs};
use crate::{random_inputs_in, reps_for, time_op};

/// One plan of the study: an operation, dtype and shape under a given plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NormPlanRow {
    pub op: String,
    pub dtype: String,
    pub rows: usize,
    pub cols: usize,
    /// `strategy/block/k`.
    pub plan: String,
    /// Registers per thread of the plan's kernel.
    pub registers: u32,
    pub us: f64,
    pub x_neg: f64,
    /// The automatic plan's.
    pub auto: bool,
}

/// Shapes of the plan study.
const STUDY: [(usize, usize); 6] =
    [(4096, 1024), (16384, 4096), (3000, 5120), (1024, 16384), (256, 65536), (64, 262144)];

/// Every plan that holds rows of `cols` (block 64…1024, k 1…8; the split
/// only past what a block of 512 holds with k = 2).
fn study_plans(dtype: Dtype, cols: usize) -> Vec<NormPlan> {
    let mut v = Vec::new();
    for strategy in NormStrategy::ALL {
        for block in [64u32, 128, 256, 512, 1024] {
            for k in [1u32, 2, 4, 8] {
                let p = NormPlan { strategy, block, k };
                let warp_ok = strategy != NormStrategy::Warp || block == 256;
                let split_ok = strategy != NormStrategy::Split || cols > 512 * 2 * (16 / dtype.size());
                // The pipelined twins are timed in the section, beside the
                // plan they twin (its `before` column), not here.
                let loads = strategy.pipelined() != Some(strategy);
                if warp_ok && split_ok && loads && p.check(NormOp::Rms, dtype, cols).is_ok() {
                    v.push(p);
                }
            }
        }
    }
    v
}

fn study_dtype<T: Element>(gpu: &Gpu, s: &Stream, out: &mut Vec<NormPlanRow>) -> gpukern::Result<()> {
    for (rows_n, cols) in STUDY {
        let n = rows_n * cols;
        let host =
            (random_inputs_in::<T>(n, 1, -4.0, 4.0), Vec::new(), random_inputs_in::<T>(cols, 3, -2.0, 2.0), Vec::new());
        let mut bufs = Bufs {
            x: gpu.upload(&host.0)?,
            r: gpu.alloc(n)?,
            w: gpu.upload(&host.2)?,
            b: gpu.upload(&host.2)?,
            y: gpu.alloc(n)?,
            h: gpu.alloc(n)?,
            host,
        };
        let rows = Rows::contiguous(rows_n, cols);
        let reps = reps_for(2 * n as u64 * T::DTYPE.size() as u64).min(60);
        let neg_ms = {
            let (x, y) = (&bufs.x, &mut bufs.y);
            time_op(gpu, s, reps, 3, |s| gpu.unary(UnaryOp::Neg, x, &mut *y, s).map(|_| ()))?
        };
        for op in [NormOp::Rms, NormOp::Layer, NormOp::Softmax] {
            let auto = run(gpu, op, &mut bufs, rows, s)?;
            // The automatic plan too where the grid misses it (a block of 160
            // threads at 5120 columns): it was reported as "-" then.
            let mut plans = study_plans(T::DTYPE, cols);
            if !plans.contains(&auto) {
                plans.push(auto);
            }
            for p in plans {
                // A plan over the kernel's block limit is refused: left out.
                if run_plan(gpu, op, &mut bufs, rows, Some(p), s).is_err() {
                    continue;
                }
                let ms = time_op(gpu, s, reps, 2, |s| run_plan(gpu, op, &mut bufs, rows, Some(p), s).map(|_| ()))?;
                let (family, k) = (
                    match op {
                        NormOp::Layer => "layer",
                        NormOp::Softmax => "softmax",
                        _ => "rms",
                    },
                    p.k,
                );
                let cluster = if p.strategy == NormStrategy::Cluster { "_cluster" } else { "" };
                let name = format!("norm_{family}_{}_k{k}{cluster}", T::DTYPE.name());
                let registers = gpukern::kernel_names()
                    .into_iter()
                    .chain(gpukern::sm90_kernel_names())
                    .find(|n| *n == name)
                    .and_then(|n| gpu.studies().kernel_resources(n).ok())
                    .map_or(0, |r| r.registers);
                out.push(NormPlanRow {
                    op: op.name().into(),
                    dtype: T::DTYPE.name().into(),
                    rows: rows_n,
                    cols,
                    plan: format!("{}/{}/{}", p.strategy.name(), p.block, p.k),
                    registers,
                    us: ms * 1e3,
                    x_neg: neg_ms / ms,
                    auto: p == auto,
                });
            }
        }
    }
    Ok(())
}

/// The plan study (f32 and bf16): every plan at the study's shapes.
pub fn study(gpu: &Gpu, o: &super::Opts) -> Result<Vec<NormPlanRow>, String> {
    if !o.norms || !o.norms_study {
        return Ok(Vec::new());
    }
    eprintln!("norms: plan study ...");
    let s = gpu.stream().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for &d in o.dtypes.iter().filter(|d| **d != Dtype::F16) {
        let r = match d {
            Dtype::Bf16 => study_dtype::<bf16>(gpu, &s, &mut rows),
            _ => study_dtype::<f32>(gpu, &s, &mut rows),
        };
        r.map_err(|e| format!("norms study {}: {e}", d.name()))?;
    }
    Ok(rows)
}

/// The study's Markdown: per (op, dtype, shape) the automatic plan and the
/// three fastest.
pub fn study_markdown(rows: &[NormPlanRow]) -> String {
    let mut s = String::from(
        "| op | dtype | shape | auto plan | auto ×neg | best plans (×neg, registers) |\n|---|---|---|---|---|---|\n",
    );
    let mut keys: Vec<(String, String, usize, usize)> =
        rows.iter().map(|r| (r.op.clone(), r.dtype.clone(), r.rows, r.cols)).collect();
    keys.dedup();
    for (op, dtype, r_n, c) in keys {
        let mut g: Vec<&NormPlanRow> =
            rows.iter().filter(|r| r.op == op && r.dtype == dtype && r.rows == r_n && r.cols == c).collect();
        let auto = g.iter().find(|r| r.auto).map_or(("-".to_string(), 0.0), |r| (r.plan.clone(), r.x_neg));
        g.sort_by(|a, b| b.x_neg.total_cmp(&a.x_neg));
        let best: Vec<String> =
            g.iter().take(3).map(|r| format!("{} ×{:.2} ({})", r.plan, r.x_neg, r.registers)).collect();
        let _ = writeln!(s, "| {op} | {dtype} | {r_n}×{c} | {} | ×{:.2} | {} |", auto.0, auto.1, best.join(", "));
    }
    s
}
