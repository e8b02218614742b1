//! The report's `norms` section: RMSNorm, the fused residual add, LayerNorm,
//! softmax and log-softmax (`Gpu::norm`, the automatic plan) at the issue's
//! shapes, f32/f16/bf16, beside `neg` over the same elements in the same run,
//! and torch (`peers.py --norms`, with `--peers`).
//!
//! Timing: as the element-wise rows (events behind a spin kernel, median),
//! the calls rotating through operand sets of at least 4× the L2.
//! GB/s counts x read and y written (add_rms_norm: x and the residual read,
//! h and y written), weights and bias left out; `×neg` divides by neg's GB/s
//! at the same dtype and element count; the calls use a plain stream's PDL
//! setting (`Pdl::Auto`: on sm_90 small launches take the PDL twins). The
//! small shapes (1×4096, 8×4096) are also timed as 16 back-to-back calls from
//! an idle GPU (µs per call), as the chains section does, because events
//! around one launch measure the host: plain, with PDL and as a graph
//! (`norms_run.rs`).

use std::fmt::Write as _;

use gpukern::half::{bf16, f16};
use gpukern::reference::norms as rn;
use gpukern::{Dtype, Element, Gpu, Norm, NormOp, Rows, Stream, UnaryOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::norms_run::{run, run_plan, Bufs};
use crate::{gbps, random_inputs_in, reps_for, time_op};

/// The shapes (rows, row length).
pub const SHAPES: [(usize, usize); 12] = [
    (1, 4096),
    (8, 4096),
    (64, 8192),
    (4096, 1024),
    (4096, 4096),
    (16384, 4096),
    (1024, 16384),
    (256, 65536),
    (64, 262144),
    (3000, 5120),
    // LLM prefill.
    (32768, 4096),
    (8192, 8192),
];

/// Shapes timed also as 16-call chains.
const SMALL: usize = 8 * 4096;
/// Largest shape checked against the CPU reference in the report.
const VERIFY_MAX: usize = 1 << 22;

/// One operation, dtype and shape.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NormRow {
    pub op: String,
    pub dtype: String,
    pub rows: usize,
    pub cols: usize,
    /// The plan that ran (`strategy/block/k`).
    pub plan: String,
    pub us: f64,
    pub gbps: f64,
    /// neg over `rows · cols` elements of the dtype, same run.
    pub neg_us: f64,
    /// Our GB/s over neg's.
    pub x_neg: f64,
    /// µs per call of 16 back-to-back calls (small shapes), PDL off.
    pub chain16_us: Option<f64>,
    /// The same with PDL on (the twins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain16_pdl_us: Option<f64>,
    /// The 16 calls as one graph replay (`GraphBuilder::norm`), per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain16_graph_us: Option<f64>,
    pub torch_eager_us: Option<f64>,
    pub torch_compiled_us: Option<f64>,
    pub torch_neg_us: Option<f64>,
    pub torch_chain16_eager_us: Option<f64>,
    pub torch_chain16_graph_us: Option<f64>,
    /// Bit-exact against the CPU reference's replay of the plan (shapes up to
    /// 2^22 elements; `None` above).
    pub verified: Option<bool>,
    /// Where the automatic plan is pipelined (`NormStrategy::Pipe`,
    /// `PipeWarp`): the plan it twins (same order, rows loaded from global
    /// memory), which ran before the pipeline existed, timed in the same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_plan: Option<String>,
    /// Its µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_us: Option<f64>,
}

fn verify<T: Element>(op: NormOp, bufs: &Bufs<T>, rows: Rows, plan: gpukern::NormPlan) -> Result<bool, String> {
    let (x, r, w, b) = &bufs.host;
    let hop: Norm<&[T], ()> = match op {
        NormOp::Rms => Norm::rms(w, 1e-6),
        NormOp::AddRms => Norm::add_rms(r, (), w, 1e-6),
        NormOp::Layer => Norm::layer(w, b, 1e-5),
        NormOp::AddLayer => Norm::add_layer(r, (), w, b, 1e-5),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    let want = rn::norm(hop, x, rows, plan.order(T::DTYPE, rows.cols));
    let got = bufs.y.to_vec().map_err(|e| e.to_string())?;
    let same = |g: &[T], w: &[T]| g.len() == w.len() && g.iter().zip(w).all(|(a, b)| a.same_as(*b));
    let h_ok = match &want.h {
        Some(h) => same(&bufs.h.to_vec().map_err(|e| e.to_string())?, h),
        None => true,
    };
    Ok(same(&got, &want.y) && h_ok)
}

fn measure_dtype<T: Element>(gpu: &Gpu, s: &Stream, out: &mut Vec<NormRow>) -> gpukern::Result<()> {
    for (rows_n, cols) in SHAPES {
        let n = rows_n * cols;
        let host = (
            random_inputs_in::<T>(n, 1, -4.0, 4.0),
            random_inputs_in::<T>(n, 2, -4.0, 4.0),
            random_inputs_in::<T>(cols, 3, -2.0, 2.0),
            random_inputs_in::<T>(cols, 4, -2.0, 2.0),
        );
        // The timed calls rotate through sets of operands spanning at least
        // 4× the L2 (as torch's side in peers_norms.py), so no timed call
        // finds its input in L2; set 0 (which holds the host data) serves
        // the verification and the chains.
        let size = T::DTYPE.size() as u64;
        let sets = (4 * gpu.info().l2_bytes).div_ceil(4 * n as u64 * size).clamp(1, 64) as usize;
        let mut all = Vec::with_capacity(sets);
        for i in 0..sets {
            all.push(Bufs {
                x: gpu.upload(&host.0)?,
                r: gpu.upload(&host.1)?,
                w: gpu.upload(&host.2)?,
                b: gpu.upload(&host.3)?,
                y: gpu.alloc(n)?,
                h: gpu.alloc(n)?,
                host: if i == 0 { host.clone() } else { Default::default() },
            });
        }
        let rows = Rows::contiguous(rows_n, cols);
        let reps = reps_for(2 * n as u64 * size);
        let mut turn = 0;
        let mut next = || {
            turn += 1;
            turn % sets
        };
        let neg_ms = time_op(gpu, s, reps, 3, |s| {
            let b = &mut all[next()];
            gpu.unary(UnaryOp::Neg, &b.x, &mut b.y, s).map(|_| ())
        })?;
        let neg_gbps = gbps(2 * n as u64 * size, neg_ms);
        for op in NormOp::ALL {
            let plan = run(gpu, op, &mut all[0], rows, s)?;
            s.synchronize()?;
            let verified = if n <= VERIFY_MAX { Some(verify(op, &all[0], rows, plan).unwrap_or(false)) } else { None };
            let ms = time_op(gpu, s, reps, 3, |s| run(gpu, op, &mut all[next()], rows, s).map(|_| ()))?;
            let arrays = if matches!(op, NormOp::AddRms | NormOp::AddLayer) { 4 } else { 2 };
            let g = gbps(arrays * n as u64 * size, ms);
            let chain = if n <= SMALL { Some(super::norms_run::chain16(gpu, op, &mut all[0], rows, s)?) } else { None };
            // The pipelined plan's twin, as `auto` chose before the pipeline.
            let before = match plan.strategy.pipelined() == Some(plan.strategy) {
                true => {
                    let p = gpukern::NormPlan { strategy: plan.strategy.unpipelined(), ..plan };
                    let ms = time_op(gpu, s, reps, 3, |s| {
                        run_plan(gpu, op, &mut all[next()], rows, Some(p), s).map(|_| ())
                    })?;
                    Some((format!("{}/{}/{}", p.strategy.name(), p.block, p.k), ms * 1e3))
                }
                false => None,
            };
            out.push(NormRow {
                op: op.name().into(),
                dtype: T::DTYPE.name().into(),
                rows: rows_n,
                cols,
                plan: format!("{}/{}/{}", plan.strategy.name(), plan.block, plan.k),
                us: ms * 1e3,
                gbps: g,
                neg_us: neg_ms * 1e3,
                x_neg: g / neg_gbps,
                chain16_us: chain.as_ref().map(|c| c.plain),
                chain16_pdl_us: chain.as_ref().map(|c| c.pdl),
                chain16_graph_us: chain.as_ref().map(|c| c.graph),
                torch_eager_us: None,
                torch_compiled_us: None,
                torch_neg_us: None,
                torch_chain16_eager_us: None,
                torch_chain16_graph_us: None,
                verified,
                before_plan: before.as_ref().map(|b| b.0.clone()),
                before_us: before.map(|b| b.1),
            });
        }
    }
    Ok(())
}

/// Measures the section (and torch with `peers`); failures of the
/// verification go to `failures`.
pub fn section(gpu: &Gpu, o: &super::Opts, failures: &mut Vec<String>) -> Result<Vec<NormRow>, String> {
    if !o.norms {
        return Ok(Vec::new());
    }
    eprintln!("norms: 5 operations at {} shapes ...", SHAPES.len());
    let s = gpu.stream().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for &d in &o.dtypes {
        let r = match d {
            Dtype::F32 => measure_dtype::<f32>(gpu, &s, &mut rows),
            Dtype::F16 => measure_dtype::<f16>(gpu, &s, &mut rows),
            Dtype::Bf16 => measure_dtype::<bf16>(gpu, &s, &mut rows),
        };
        r.map_err(|e| format!("norms {}: {e}", d.name()))?;
    }
    for r in rows.iter().filter(|r| r.verified == Some(false)) {
        failures.push(format!("norms {} {} {}x{}: differs from the CPU reference", r.op, r.dtype, r.rows, r.cols));
    }
    if o.peers {
        match torch(o.device, &o.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(","), !o.no_torch_compile) {
            Ok(t) => add_torch(&mut rows, &t),
            Err(e) => eprintln!("peers: torch norms: {e}"),
        }
    }
    Ok(rows)
}

/// torch's rows from `peers.py --norms DTYPES` (its output's `norms` array),
/// torch.compile's columns too when `compile`.
pub fn torch(device: usize, dtypes: &str, compile: bool) -> Result<Vec<Value>, String> {
    let script = super::peers::peers_script().ok_or("peers.py not found")?;
    let mut c = std::process::Command::new("python3");
    c.arg(&script).args(["--min-log2", "1", "--max-log2", "0", "--dtypes", "f32", "--device", &device.to_string()]);
    c.args(["--norms", dtypes]);
    if !compile {
        c.arg("--norms-no-compile");
    }
    let out = c.output().map_err(|e| format!("could not run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(v["norms"].as_array().cloned().unwrap_or_default())
}

/// Fills torch's columns from its rows (op, dtype, rows, cols).
pub fn add_torch(rows: &mut [NormRow], torch: &[Value]) {
    for r in rows {
        let t = torch.iter().find(|t| {
            t["op"] == r.op.as_str() && t["dtype"] == r.dtype.as_str() && t["rows"] == r.rows && t["cols"] == r.cols
        });
        let f = |k: &str| t.and_then(|t| t[k].as_f64());
        (r.torch_eager_us, r.torch_compiled_us, r.torch_neg_us) = (f("eager_us"), f("compiled_us"), f("neg_us"));
        (r.torch_chain16_eager_us, r.torch_chain16_graph_us) = (f("chain16_eager_us"), f("chain16_graph_us"));
    }
}

/// The section's Markdown.
pub fn markdown(rows: &[NormRow]) -> String {
    let mut s = String::from(
        "| op | dtype | shape | plan | µs | GB/s | ×neg | before: plan | µs | torch eager µs | ours/torch eager | \
         torch.compile µs | ours/torch.compile | 16-call µs/call | 16 PDL | 16 graph | torch 16 eager | \
         torch 16 graph | verified |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {}×{} | {} | {:.2} | {:.0} | ×{:.2} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.op,
            r.dtype,
            r.rows,
            r.cols,
            r.plan,
            r.us,
            r.gbps,
            r.x_neg,
            r.before_plan.as_deref().unwrap_or("-"),
            opt(r.before_us),
            opt(r.torch_eager_us),
            r.torch_eager_us.map_or("-".into(), |t| format!("×{:.2}", t / r.us)),
            opt(r.torch_compiled_us),
            r.torch_compiled_us.map_or("-".into(), |t| format!("×{:.2}", t / r.us)),
            opt(r.chain16_us),
            opt(r.chain16_pdl_us),
            opt(r.chain16_graph_us),
            opt(r.torch_chain16_eager_us),
            opt(r.torch_chain16_graph_us),
            r.verified.map_or("-", |v| if v { "yes" } else { "NO" }),
        );
    }
    s
}
