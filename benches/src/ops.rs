//! The element-wise library in the report: every operation and dtype at the
//! seed's sizes through the automatic choice (`Gpu::binary`, `unary`, `axpby`),
//! verified bit-exact, timed like the add rows, beside torch's equivalents and
//! beside add's own rate in the same section, and the one-input operations
//! beside `neg`'s (the activations' target: at least 0.97× neg's GB/s).
//!
//! Inputs are uniform random values: in [-64, 64) for the arithmetic and
//! sign-bit operations, [-8, 8) for the activations (the range where they are
//! not saturated) and (0, 8] for `log`, `sqrt` and `rsqrt`, so no NaN path is
//! timed; `scripts/peers.py` draws torch's the same way. Verification stays
//! bit-exact against the CPU reference on those inputs.

use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{AutoPlan, BinaryOp, DeviceVec, Dtype, Gpu, LaunchShape, OpKind, OpPattern, Opts, Stream, UnaryOp};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{gbps, random_inputs, random_inputs_in, time_op};

/// axpby's scales in the report (0.1 rounds in every dtype).
pub const SCALES: (f32, f32) = (0.1, -3.5);

/// One operation at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpRow {
    pub op: String,
    pub dtype: String,
    pub n: usize,
    /// The kernel the automatic choice ran.
    pub kernel: String,
    /// Bytes per call: the operands read and the one written.
    pub bytes: u64,
    pub median_us: f64,
    pub gbps: f64,
    pub pct_peak: f64,
    /// Disjoint input sets rotated (more than 1 below 4x the L2).
    pub input_sets: usize,
    /// Bit-exact against the CPU reference (in full up to 2^24 elements, the
    /// first 2^24 above).
    pub verified: bool,
    /// GB/s of add (the same dtype and n, this section) divided into ours.
    pub vs_add: f64,
    /// torch's equivalent, when torch ran (`--peers`).
    pub torch_gbps: Option<f64>,
    /// When the automatic choice ran a kernel of the sm_90 module (bf16 with
    /// packed bf16 instructions): the portable 128-bit kernel's GB/s, same
    /// launch settings, for comparison.
    #[serde(default)]
    pub portable_gbps: Option<f64>,
    /// One-input operations: GB/s of neg (same dtype and n, this section)
    /// divided into ours. Absent from reports older than the activations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_neg: Option<f64>,
    /// Whether the automatic choice capped the grid at one resident wave
    /// (`AutoPlan::caps_grid` on this device); absent when not (and from
    /// reports older than the choice).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// The activations: GB/s of the same kernel with the chosen grid and with
    /// the other one (full where the choice capped, capped where it did not),
    /// both launched plainly, so each report measures the choice on its own GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grids: Option<(f64, f64)>,
}

/// Which input set an operation is timed on (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inputs {
    /// Uniform in [-64, 64).
    Wide,
    /// Uniform in [-8, 8): the activations.
    Activation,
    /// Uniform in (0, 8]: log, sqrt, rsqrt.
    Positive,
}

impl Inputs {
    /// The set `kind` is timed on.
    pub fn of(kind: OpKind) -> Inputs {
        match kind {
            OpKind::Unary(UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt) => Inputs::Positive,
            OpKind::Unary(op) if op.activation().is_some() => Inputs::Activation,
            _ => Inputs::Wide,
        }
    }
    /// `n` random values of this set (seeded).
    pub fn generate<T: gpukern::Element>(self, n: usize, seed: u64) -> Vec<T> {
        match self {
            Inputs::Wide => random_inputs(n, seed),
            Inputs::Activation => random_inputs_in(n, seed, -8.0, 8.0),
            // 8 - [0, 8): never 0, so log stays finite.
            Inputs::Positive => {
                random_inputs_in::<f32>(n, seed, 0.0, 8.0).into_iter().map(|u| crate::to_elem::<T>(8.0 - u)).collect()
            }
        }
    }
    const ALL: [Inputs; 3] = [Inputs::Wide, Inputs::Activation, Inputs::Positive];
}

/// Bytes one call of `kind` on `n` elements moves.
pub fn op_bytes(kind: OpKind, dtype: Dtype, n: usize) -> u64 {
    (kind.inputs() as u64 + 1) * n as u64 * dtype.size() as u64
}

struct Buffers<T: gpukern::Pod> {
    /// The first operand, one per [`Inputs`] set (in `Inputs::ALL` order).
    a: [DeviceVec<T>; 3],
    b: DeviceVec<T>,
    out: DeviceVec<T>,
}

/// How a timed launch is made: the automatic choice, or an explicit pattern at
/// the block the automatic choice gives it, with the grid capped at one
/// resident wave (`AutoPlan::activation_max_grid`) or not.
#[derive(Clone, Copy)]
enum How {
    Auto,
    Explicit {
        pattern: OpPattern,
        capped: bool,
    },
    /// The automatic kernel with the grid given (so launched plainly: a
    /// given shape takes no PDL twin).
    Grid {
        pattern: OpPattern,
        capped: bool,
    },
}

/// Queues `kind` on input set `set` of `n` elements as `how` says.
fn launch<T: gpukern::Element>(
    gpu: &Gpu,
    kind: OpKind,
    how: How,
    bufs: &mut Buffers<T>,
    n: usize,
    set: usize,
    s: &Stream,
) -> gpukern::Result<&'static str> {
    let r = set * n..set * n + n;
    let a = &bufs.a[Inputs::ALL.iter().position(|&i| i == Inputs::of(kind)).unwrap_or(0)];
    let (a, b, out) = (a.slice(r.clone())?, bufs.b.slice(r.clone())?, bufs.out.slice_mut(r)?);
    let b = (kind.inputs() == 2).then_some(b);
    let opts = match how {
        How::Auto => Opts::auto().pdl(s.pdl()),
        How::Explicit { pattern, capped } | How::Grid { pattern, capped } => {
            // The explicit kernel gets the block the automatic choice would give it.
            let info = gpu.info();
            let block = match kernels_gpu::ops::op_kernel(kind, T::DTYPE, pattern) {
                Some(k) => {
                    let registers = gpu.studies().kernel_resources(k.name)?.registers;
                    AutoPlan::op_block(n, info.has_sm90(), kind.inputs() as u32, registers)
                }
                None => kernels_gpu::launch::DEFAULT_BLOCK,
            };
            let mut cfg = LaunchShape::with_block(block);
            if capped {
                cfg.max_grid = AutoPlan::activation_max_grid(info.sm_count, info.max_threads_per_sm, block);
            }
            match how {
                How::Grid { .. } => Opts::auto().shape(cfg),
                _ => Opts::auto().pattern(pattern).shape(cfg),
            }
        }
    };
    let addrs: Vec<u64> = [Some(a.addr()), b.map(|b| b.addr()), Some(out.addr())].into_iter().flatten().collect();
    let plan = gpu.plan(gpukern::Call::elementwise(kind, T::DTYPE, n, &addrs), s, &opts)?;
    gpu.apply(kind, a, b, out, SCALES, s, &opts)?;
    Ok(plan.kernel)
}

fn measure_dtype<T: ReferenceOps>(
    gpu: &Gpu,
    stream: &Stream,
    sizes: &[usize],
    rows: &mut Vec<OpRow>,
) -> gpukern::Result<()> {
    let cap = sizes.iter().copied().max().unwrap_or(1);
    let has: Vec<Vec<T>> = Inputs::ALL.iter().map(|i| i.generate::<T>(cap, 71)).collect();
    let hb = random_inputs::<T>(cap, 72);
    let a = [gpu.upload(&has[0])?, gpu.upload(&has[1])?, gpu.upload(&has[2])?];
    let mut bufs = Buffers { a, b: gpu.upload(&hb)?, out: gpu.alloc::<T>(cap)? };
    let peak = gpu.info().peak_gbps();
    let first = rows.len();
    for kind in OpKind::ALL {
        for &n in sizes {
            let bytes = op_bytes(kind, T::DTYPE, n);
            let sets = ((4 * gpu.info().l2_bytes).div_ceil(bytes.max(1)) as usize).clamp(1, (cap / n.max(1)).max(1));
            // Verify on set 0 with a poisoned output.
            bufs.out.slice_mut(..n)?.fill(T::from_bits32(0xdead_beef))?;
            let kernel = launch(gpu, kind, How::Auto, &mut bufs, n, 0, stream)?;
            stream.synchronize()?;
            let m = n.min(1 << 24);
            let got = bufs.out.slice(..m)?.to_vec()?;
            let b = (kind.inputs() == 2).then_some(&hb[..m]);
            let ha = &has[Inputs::ALL.iter().position(|&i| i == Inputs::of(kind)).unwrap_or(0)];
            let want: Vec<T> = ha[..m]
                .par_chunks(1 << 16)
                .enumerate()
                .flat_map_iter(|(c, xs)| {
                    let r = (c << 16)..(c << 16) + xs.len();
                    reference::map(kind, xs, b.map(|b| &b[r]), SCALES)
                })
                .collect();
            let verified = crate::first_mismatch_par(&got, &want).is_none();
            let mut timed = |how: How| {
                let mut i = 0usize;
                time_op(gpu, stream, crate::reps_for(bytes), 3, |s| {
                    i += 1;
                    launch(gpu, kind, how, &mut bufs, n, i % sets, s).map(|_| ())
                })
            };
            let ms = timed(How::Auto)?;
            let unary = match kind {
                OpKind::Unary(op) => Some(op),
                _ => None,
            };
            let capped = unary.is_some_and(|op| AutoPlan::caps_grid(op, T::DTYPE, gpu.info()));
            let sm90 = kernel.ends_with("_sm90");
            // The portable kernel at the automatic choice's launch settings.
            let portable_gbps = match sm90 {
                true => Some(gbps(bytes, timed(How::Explicit { pattern: OpPattern::Pack, capped })?)),
                false => None,
            };
            let pattern = if sm90 { OpPattern::PackSm90 } else { OpPattern::Pack };
            // Both grids launched the same way (no PDL twin), so that only the
            // grid differs.
            let grids = match unary.filter(|op| op.activation().is_some()) {
                Some(_) => {
                    let chosen = gbps(bytes, timed(How::Grid { pattern, capped })?);
                    Some((chosen, gbps(bytes, timed(How::Grid { pattern, capped: !capped })?)))
                }
                None => None,
            };
            let g = gbps(bytes, ms);
            rows.push(OpRow {
                op: kind.name().into(),
                dtype: T::DTYPE.name().into(),
                n,
                kernel: kernel.into(),
                bytes,
                median_us: ms * 1e3,
                gbps: g,
                pct_peak: 100.0 * g / peak,
                input_sets: sets,
                verified,
                vs_add: 0.0,
                torch_gbps: None,
                portable_gbps,
                vs_neg: None,
                capped,
                grids,
            });
        }
    }
    // add's rate, measured above, is every row's yardstick.
    let add = OpKind::Binary(BinaryOp::Add).name();
    let adds: Vec<(usize, f64)> = rows[first..].iter().filter(|r| r.op == add).map(|r| (r.n, r.gbps)).collect();
    let neg = OpKind::Unary(UnaryOp::Neg).name();
    let negs: Vec<(usize, f64)> = rows[first..].iter().filter(|r| r.op == neg).map(|r| (r.n, r.gbps)).collect();
    for r in &mut rows[first..] {
        if let Some(&(_, g)) = adds.iter().find(|(n, _)| *n == r.n) {
            r.vs_add = r.gbps / g;
        }
        let unary = UnaryOp::ALL.iter().any(|u| u.name() == r.op);
        r.vs_neg = negs.iter().find(|(n, _)| *n == r.n && unary).map(|&(_, g)| r.gbps / g);
    }
    Ok(())
}

/// Every operation × dtype × size; the rows are in `OpKind::ALL` order per dtype.
pub fn measure(gpu: &Gpu, dtypes: &[Dtype], sizes: &[usize]) -> Result<Vec<OpRow>, String> {
    let stream = gpu.stream().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for &d in dtypes {
        let r = match d {
            Dtype::F32 => measure_dtype::<f32>(gpu, &stream, sizes, &mut rows),
            Dtype::F16 => measure_dtype::<f16>(gpu, &stream, sizes, &mut rows),
            Dtype::Bf16 => measure_dtype::<bf16>(gpu, &stream, sizes, &mut rows),
        };
        r.map_err(|e| format!("ops {}: {e}", d.name()))?;
    }
    Ok(rows)
}

/// Markdown: one row per operation and dtype, the sizes as columns, then the
/// largest size against torch and add.
pub fn render(s: &mut String, rows: &[OpRow]) {
    use std::fmt::Write;
    if rows.is_empty() {
        return;
    }
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let big = *sizes.last().unwrap_or(&0);
    let _ = writeln!(s, "\n## Element-wise operations\n");
    let _ = writeln!(
        s,
        "Every operation through the automatic choice (`Gpu::binary`, `unary`, `axpby`), verified bit-exact \
         against the CPU reference, timed like the add rows (events behind a spin, median). GB/s counts the \
         operands read and the one written (unary: 2 per element, the others: 3). `vs add` divides by add's \
         rate at the same dtype and size in this section; torch's axpby is `torch.add(torch.mul(a, 0.1), b, \
         alpha=-3.5)`, two kernels. `portable` is the sm_70 module's 128-bit kernel (integer bf16 rounding) \
         where the automatic choice ran the sm_90 one. `vs neg` divides a one-input operation's rate by \
         neg's (same dtype and size; target for the activations: ×0.97). Inputs: [-64, 64) for the \
         arithmetic and sign-bit operations, [-8, 8) for the activations, (0, 8] for log, sqrt and rsqrt \
         (torch's the same); torch's activations are `torch.exp`, `torch.log`, `torch.tanh`, \
         `torch.sigmoid`, `F.silu`, `F.gelu`, `F.gelu(approximate='tanh')`, `torch.rsqrt`, `torch.sqrt`.\n"
    );
    let head: Vec<String> = sizes.iter().map(|n| format!("2^{} GB/s", n.trailing_zeros())).collect();
    let k = big.trailing_zeros();
    let _ = writeln!(
        s,
        "| op | dtype | kernel (2^{k}) | {} | % peak (2^{k}) | vs add (2^{k}) | vs neg (2^{k}) | portable (2^{k}) | torch (2^{k}) | vs torch (2^{k}) | verified |",
        head.join(" | ")
    );
    let _ = writeln!(s, "|---|---|---|{}---|---|---|---|---|---|---|", "---|".repeat(sizes.len()));
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !keys.contains(&(&r.op, &r.dtype)) {
            keys.push((&r.op, &r.dtype));
        }
    }
    for (op, dtype) in keys {
        let of = |n: usize| rows.iter().find(|r| r.op == op && r.dtype == dtype && r.n == n);
        let Some(last) = of(big) else { continue };
        let rates: Vec<String> =
            sizes.iter().map(|&n| of(n).map_or("-".into(), |r| format!("{:.0}", r.gbps))).collect();
        let torch = last.torch_gbps.map_or("-".into(), |t| format!("{t:.0}"));
        let vs_torch = last.torch_gbps.map_or("-".into(), |t| format!("×{:.3}", last.gbps / t));
        let verified = rows.iter().filter(|r| r.op == op && r.dtype == dtype).all(|r| r.verified);
        let portable = last.portable_gbps.map_or("-".into(), |p| format!("{p:.0}"));
        let vs_neg = last.vs_neg.map_or("-".into(), |v| format!("×{v:.3}"));
        let _ = writeln!(
            s,
            "| {op} | {dtype} | `{}` | {} | {:.1}% | ×{:.3} | {vs_neg} | {portable} | {torch} | {vs_torch} | {} |",
            last.kernel,
            rates.join(" | "),
            last.pct_peak,
            last.vs_add,
            if verified { "yes" } else { "**NO**" }
        );
    }
}

/// Markdown: the activations' grid, chosen against the other one, at every
/// size (the per-GPU measurement behind `AutoPlan::caps_grid`).
pub fn render_grid(s: &mut String, rows: &[OpRow], bytes_per_sm_cycle: f64) {
    use std::fmt::Write;
    let long: Vec<&OpRow> = rows.iter().filter(|r| r.grids.is_some()).collect();
    if long.is_empty() {
        return;
    }
    let mut sizes: Vec<usize> = long.iter().map(|r| r.n).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let _ = writeln!(
        s,
        "\n### The activations' grid on this GPU\n\nThe automatic choice caps the grid of the activations \
         that gained from it on the H200 (`AutoPlan::caps_where_issue_bound`) at one wave of resident threads \
         (a grid-stride loop, several packs per thread) where the device moves at least {:.0} bytes per SM \
         cycle (`AutoPlan::issue_bound`; this GPU: {:.1}), and keeps one pack per thread elsewhere. Each row times the same kernel with the other grid in the same \
         run, both launched plainly (no PDL twin, so the chosen grid's GB/s can differ from the table above \
         where the automatic choice took the twin): `other / chosen` above ×1.00 means the other grid was \
         faster here.\n",
        gpukern::AutoPlan::ISSUE_BOUND_BYTES_PER_SM_CYCLE,
        bytes_per_sm_cycle
    );
    let head: Vec<String> =
        sizes.iter().map(|n| format!("2^{}: chosen GB/s, other / chosen", n.trailing_zeros())).collect();
    let _ = writeln!(s, "| op | dtype | chosen grid | {} |", head.join(" | "));
    let _ = writeln!(s, "|---|---|---|{}", "---|".repeat(sizes.len()));
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in &long {
        if !keys.contains(&(&r.op, &r.dtype)) {
            keys.push((&r.op, &r.dtype));
        }
    }
    for (op, dtype) in keys {
        let of = |n: usize| long.iter().find(|r| r.op == op && r.dtype == dtype && r.n == n);
        let cells: Vec<String> = sizes
            .iter()
            .map(|&n| match of(n) {
                Some(r) => r.grids.map_or("-".into(), |(c, o)| format!("{c:.0}, ×{:.3}", o / c)),
                None => "-".into(),
            })
            .collect();
        let chosen = if long.iter().any(|r| r.op == op && r.dtype == dtype && r.capped) { "one wave" } else { "full" };
        let _ = writeln!(s, "| {op} | {dtype} | {chosen} | {} |", cells.join(" | "));
    }
}
