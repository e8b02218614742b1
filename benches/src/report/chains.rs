//! The report's `chains` section: 16 dependent operations (each output the
//! next input) at 2^12 … 2^26, f32 and bf16, queued five ways in the same run
//! (plain launches, PDL forced on, a CUDA graph of the plain launches, a graph
//! with programmatic edges, and the library's default), beside torch eager and
//! torch's `CUDAGraph` (`peers.py --chains`, with `--peers`).
//!
//! Timing: the GPU idle, an event, the 16 launches (or one graph launch), an
//! event, then the host waits; µs per operation is the event time over 16. No
//! spin kernel in front: a chain of small operations is bound by how fast
//! launches reach the GPU, and that cost (the host's, then the GPU's launch
//! latency) is what PDL and graphs remove, so it is what is timed. Median of
//! 25–51 chains; the inputs are the same buffers each time (a chain of 2^24
//! f32 moves 3 GiB, far past L2; the small ones stay in L2, as they would in
//! use).

use std::fmt::Write as _;

use gpukern::half::bf16;
use gpukern::{BinaryOp, DeviceVec, Element, Gpu, Graph, OpKind, Opts, Pdl, Stream, UnaryOp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{median, random_inputs};

/// Operations per chain.
pub const LENGTH: usize = 16;
/// The mixed chain's cycle: mul, add, relu, sigmoid (each output the next input).
const MIXED: [OpKind; 4] = [
    OpKind::Binary(BinaryOp::Mul),
    OpKind::Binary(BinaryOp::Add),
    OpKind::Unary(UnaryOp::Relu),
    OpKind::Unary(UnaryOp::Sigmoid),
];

/// One chain at one size: µs per operation, each way, same run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainRow {
    /// `add` (16 adds) or `mixed` (mul, add, relu, sigmoid, four times).
    pub op: String,
    pub dtype: String,
    pub n: usize,
    pub length: usize,
    pub plain_us: f64,
    pub pdl_us: f64,
    pub graph_us: f64,
    pub graph_pdl_us: f64,
    /// The library's default ([`Pdl::Auto`] on a stream).
    pub auto_us: f64,
    pub torch_eager_us: Option<f64>,
    pub torch_graph_us: Option<f64>,
    /// Every way's last value equals the plain chain's, and the plain chain
    /// equals the CPU reference (n ≤ 2^20; above, the ways agree).
    pub verified: bool,
}

fn steps(op: &str) -> Vec<OpKind> {
    match op {
        "add" => vec![OpKind::Binary(BinaryOp::Add); LENGTH],
        _ => MIXED.iter().cycle().take(LENGTH).copied().collect(),
    }
}

/// The chain's buffers: `x[0]` the input, `x[i + 1]` step i's output, `b` the
/// second operand.
struct Chain<T: Element> {
    x: Vec<DeviceVec<T>>,
    b: DeviceVec<T>,
    kinds: Vec<OpKind>,
}

impl<T: Element> Chain<T> {
    /// The chain on `s`, each call with PDL as `pdl` says.
    fn queue(&mut self, gpu: &Gpu, s: &Stream, pdl: Pdl) -> gpukern::Result<()> {
        let opts = Opts::auto().pdl(pdl);
        for (i, &k) in self.kinds.iter().enumerate() {
            let (head, tail) = self.x.split_at_mut(i + 1);
            let b = (k.inputs() == 2).then(|| self.b.view());
            gpu.apply(k, head[i].view(), b, tail[0].view_mut(), (1.0, 1.0), s, &opts)?;
        }
        Ok(())
    }

    fn graph(&mut self, gpu: &Gpu, pdl: Pdl) -> gpukern::Result<Graph<'_>> {
        let mut g = gpu.graph();
        g.set_pdl(pdl);
        let b = g.input(&self.b)?;
        let (first, rest) = self.x.split_at_mut(1);
        let mut prev = g.input(&first[0])?;
        for (&k, x) in self.kinds.iter().zip(rest.iter_mut()) {
            let out = g.output(x)?;
            match k {
                OpKind::Binary(op) => g.binary(op, prev, b, out)?,
                OpKind::Unary(op) => g.unary(op, prev, out)?,
                OpKind::Axpby => g.axpby(1.0, prev, 1.0, b, out)?,
            }
            prev = out;
        }
        g.build()
    }
}

/// Median µs per operation of `reps` runs of `run` between two events.
fn time(s: &Stream, reps: usize, mut run: impl FnMut(&Stream) -> gpukern::Result<()>) -> gpukern::Result<f64> {
    for _ in 0..3 {
        run(s)?;
    }
    s.synchronize()?;
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        t.push(s.time(&mut run)? as f64 * 1e3 / LENGTH as f64);
    }
    Ok(median(&mut t))
}

fn measure_one<T: Element + gpukern::reference::ReferenceOps>(
    gpu: &Gpu,
    op: &str,
    n: usize,
) -> Result<ChainRow, String> {
    let e = |e: gpukern::Error| format!("chains {op} {} n={n}: {e}", T::DTYPE.name());
    let kinds = steps(op);
    let (x0, b): (Vec<T>, Vec<T>) = (random_inputs(n, 7 + n as u64), random_inputs(n, 11 + n as u64));
    let mut x = vec![gpu.upload(&x0).map_err(e)?];
    for _ in 0..LENGTH {
        x.push(gpu.alloc::<T>(n).map_err(e)?);
    }
    let mut c = Chain { x, b: gpu.upload(&b).map_err(e)?, kinds };
    let s = gpu.stream().map_err(e)?;
    let reps = if n <= 1 << 20 { 51 } else { 25 };
    let mut verified = true;
    // The plain chain's last value, the reference every way is compared with.
    c.queue(gpu, &s, Pdl::Off).map_err(e)?;
    s.synchronize().map_err(e)?;
    let want = c.x[LENGTH].to_vec().map_err(e)?;
    if n <= 1 << 20 {
        let mut v = x0.clone();
        for &k in &c.kinds {
            v = gpukern::reference::map(k, &v, (k.inputs() == 2).then_some(&b[..]), (1.0, 1.0));
        }
        verified &= gpukern::reference::first_mismatch(&want, &v).is_none();
    }
    let mut check = |c: &Chain<T>| -> Result<(), String> {
        let got = c.x[LENGTH].to_vec().map_err(e)?;
        verified &= gpukern::reference::first_mismatch(&got, &want).is_none();
        Ok(())
    };
    let eager = |pdl: Pdl, c: &mut Chain<T>| -> Result<f64, String> {
        let us = time(&s, reps, |s| c.queue(gpu, s, pdl)).map_err(e)?;
        s.synchronize().map_err(e)?;
        Ok(us)
    };
    let plain_us = eager(Pdl::Off, &mut c)?;
    check(&c)?;
    let pdl_us = eager(Pdl::On, &mut c)?;
    check(&c)?;
    let auto_us = eager(Pdl::Auto, &mut c)?;
    check(&c)?;
    let graphed = |pdl: Pdl, c: &mut Chain<T>| -> Result<f64, String> {
        let g = c.graph(gpu, pdl).map_err(e)?;
        let us = time(&s, reps, |s| g.launch(s)).map_err(e)?;
        s.synchronize().map_err(e)?;
        Ok(us)
    };
    let graph_us = graphed(Pdl::Off, &mut c)?;
    check(&c)?;
    let graph_pdl_us = graphed(Pdl::On, &mut c)?;
    check(&c)?;
    let dtype = T::DTYPE.name().to_string();
    Ok(ChainRow {
        op: op.into(),
        dtype,
        n,
        length: LENGTH,
        plain_us,
        pdl_us,
        graph_us,
        graph_pdl_us,
        auto_us,
        torch_eager_us: None,
        torch_graph_us: None,
        verified,
    })
}

/// The sizes: every even power from 2^12 to 2^26 inside the report's range
/// (2^26, past the plan's line, shows what PDL does there).
pub fn sizes(min_log2: u32, max_log2: u32) -> Vec<usize> {
    (12u32..=26).step_by(2).filter(|k| (min_log2..=max_log2).contains(k)).map(|k| 1 << k).collect()
}

/// Every chain × dtype × size, ours only (torch: [`add_torch`]).
pub fn measure(gpu: &Gpu, sizes: &[usize]) -> Result<Vec<ChainRow>, String> {
    let mut rows = Vec::new();
    for op in ["add", "mixed"] {
        for &n in sizes {
            rows.push(measure_one::<f32>(gpu, op, n)?);
            rows.push(measure_one::<bf16>(gpu, op, n)?);
        }
    }
    Ok(rows)
}

/// The section as the report runs it: ours, then torch with `--peers`; a
/// chain whose ways disagree is a failure.
pub fn section(gpu: &Gpu, o: &super::Opts, failures: &mut Vec<String>) -> Result<Vec<ChainRow>, String> {
    let sizes = if o.chains { sizes(o.min_log2, o.max_log2) } else { Vec::new() };
    if sizes.is_empty() {
        return Ok(Vec::new());
    }
    eprintln!("chains: 16 dependent operations at {sizes:?}, plain / PDL / graphs ...");
    let mut rows = measure(gpu, &sizes)?;
    for r in rows.iter().filter(|r| !r.verified) {
        failures.push(format!("chain {} {} n={}: the ways or the CPU reference disagree", r.op, r.dtype, r.n));
    }
    if o.peers {
        match torch(o.device, &sizes) {
            Ok(t) => add_torch(&mut rows, &t),
            Err(e) => eprintln!("peers: torch chains: {e}"),
        }
    }
    Ok(rows)
}

/// Fills torch's columns from `peers.py --chains` rows.
pub fn add_torch(rows: &mut [ChainRow], torch: &[Value]) {
    for r in rows {
        let t = torch.iter().find(|t| t["op"] == r.op.as_str() && t["dtype"] == r.dtype.as_str() && t["n"] == r.n);
        r.torch_eager_us = t.and_then(|t| t["eager_us"].as_f64());
        r.torch_graph_us = t.and_then(|t| t["graph_us"].as_f64());
    }
}

/// torch's chains (`peers.py --chains`) at `sizes`, on device `device`.
pub fn torch(device: usize, sizes: &[usize]) -> Result<Vec<Value>, String> {
    let script = super::peers::peers_script().ok_or("peers.py not found")?;
    let logs: Vec<String> = sizes.iter().map(|n| n.trailing_zeros().to_string()).collect();
    let out = std::process::Command::new("python3")
        .arg(&script)
        // An empty torch.add range: only the chains run.
        .args(["--min-log2", "1", "--max-log2", "0", "--dtypes", "f32", "--device", &device.to_string()])
        .args(["--chains", &logs.join(",")])
        .output()
        .map_err(|e| format!("could not run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(v["chains"].as_array().cloned().unwrap_or_default())
}

/// The section's Markdown.
pub fn markdown(rows: &[ChainRow]) -> String {
    let mut s = String::from(
        "| op | dtype | n | plain µs | PDL µs | graph µs | graph+PDL µs | auto µs | torch eager µs | torch graph µs | \
         plain/auto | torch eager/auto | torch graph/graph+PDL | verified |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    let ratio = |a: Option<f64>, b: f64| a.map_or("-".into(), |a| format!("×{:.2}", a / b));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | 2^{} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | ×{:.2} | {} | {} | {} |",
            r.op,
            r.dtype,
            r.n.trailing_zeros(),
            r.plain_us,
            r.pdl_us,
            r.graph_us,
            r.graph_pdl_us,
            r.auto_us,
            opt(r.torch_eager_us),
            opt(r.torch_graph_us),
            r.plain_us / r.auto_us,
            ratio(r.torch_eager_us, r.auto_us),
            ratio(r.torch_graph_us, r.graph_pdl_us),
            if r.verified { "yes" } else { "**no**" },
        );
    }
    s
}
