//! The report section `candle`: each of our candle ops against candle's
//! native op on the same inputs in the same run: GPU time between CUDA events
//! on candle's stream (and the host's wall time per op, labelled), GB/s of
//! each, their ratio, and each op's largest error, ours and candle's, against
//! an f64 CPU reference from the same inputs. `elementwise.rs` and `norms.rs`
//! measure, `accuracy.rs` holds the references and error measures,
//! `markdown.rs` renders; this module sets up, times pairs and writes
//! `candle.md` and `candle.json`.

mod accuracy;
mod elementwise;
mod markdown;
mod norms;

use std::path::Path;

use candle_core::{DType, Device, Error, Result};
use serde::Serialize;

use crate::timing::{measure, Reps, Timing};

/// One implementation's time for one cell.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Side {
    /// µs per op between CUDA events (median).
    pub gpu_us: f64,
    /// µs per op on the host's clock to queue the calls (behind the spin).
    pub host_us: f64,
    /// The op's essential bytes (inputs read once, outputs written once) per GPU time.
    pub gbps: f64,
}

/// Largest errors of one implementation against the f64 reference (ulp for
/// element-wise ops; abs and rel for norms). `None`: not finite (serialised as null).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Errors {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ulp: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_abs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rel: Option<f64>,
}

/// One op × dtype × size, ours beside candle's.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub op: &'static str,
    /// candle's op it is compared with.
    pub candle_op: &'static str,
    pub dtype: String,
    /// Element count (element-wise) or `[rows, cols]` (norms).
    pub shape: Vec<usize>,
    /// Calls between a repetition's two events, and input sets rotated through.
    pub chain: usize,
    pub sets: usize,
    pub ours: Side,
    /// `None` where candle refused the combination (`candle_error` says why).
    pub candle: Option<Side>,
    /// candle's GPU time over ours (above 1: ours is faster).
    pub ratio: Option<f64>,
    /// Elements the errors were measured on.
    pub checked: usize,
    pub ours_err: Errors,
    pub candle_err: Option<Errors>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candle_error: Option<String>,
}

/// What one measured cell is made from (the measuring modules fill it).
pub struct Measured {
    pub op: &'static str,
    pub candle_op: &'static str,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub chain: usize,
    pub sets: usize,
    pub ours: Side,
    /// candle's side, or why candle refused the combination.
    pub theirs: std::result::Result<Side, String>,
    pub checked: usize,
    pub ours_err: Errors,
    pub candle_err: Option<Errors>,
}

impl Cell {
    /// The cell of `m`: candle's side or its refusal, and the ratio.
    pub fn new(m: Measured) -> Cell {
        let (candle, candle_error) = match m.theirs {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e)),
        };
        Cell {
            op: m.op,
            candle_op: m.candle_op,
            dtype: format!("{:?}", m.dtype).to_lowercase(),
            shape: m.shape,
            chain: m.chain,
            sets: m.sets,
            ratio: candle.map(|c| c.gpu_us / m.ours.gpu_us),
            ours: m.ours,
            candle,
            checked: m.checked,
            ours_err: m.ours_err,
            candle_err: m.candle_err,
            candle_error,
        }
    }

    /// The progress line of the `done`-th of `total` cells, `errors` the
    /// error figures to show.
    pub fn progress(&self, done: usize, total: usize, what: &str, errors: String) {
        let candle = self.candle.map_or("refused".into(), |c| format!("{:.0} GB/s", c.gbps));
        eprintln!("[{done}/{total}] {what}: ours {:.0} GB/s, candle {candle} ({errors})", self.ours.gbps);
    }
}

/// The whole section, as `candle.json` holds it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub device: String,
    pub l2_bytes: usize,
    pub candle_version: &'static str,
    pub reps: usize,
    pub method: Vec<&'static str>,
    pub elementwise: Vec<Cell>,
    pub norms: Vec<Cell>,
    /// Ops of ours with no single candle op to compare with.
    pub not_compared: Vec<&'static str>,
    /// Our errors past the bounds the run checks (the run then fails).
    pub failures: Vec<String>,
}

/// How the section measures, for both outputs.
const METHOD: &[&str] = &[
    "GPU time: CUDA events on candle's stream (`CudaDevice::cuda_stream()`) queued behind a spin kernel (gpukern's, 50 µs per call of the repetition and 50 more), so the host queues the events and the calls while the GPU waits and the events time the GPU's work, not the host's queueing; median of the repetitions after one warm-up repetition; each op call allocates its output as candle's own ops do, inside the timing for both, from the device's stream-ordered memory pool, which the run keeps (release threshold raised to the maximum, as a caching allocator would: otherwise every synchronisation hands the pool's memory back and each large allocation maps it again, which then dominates both sides' times).",
    "Cells whose op moves less than twice the L2 are timed as 16 back-to-back calls between the events (µs per op), their inputs rotated over enough sets that one input tensor per set exceeds twice the L2 over all sets.",
    "GB/s: the op's essential bytes (inputs read once, outputs written once; for add_rms_norm x, r, h and y) over GPU time; the ratio is candle's time over ours.",
    "host µs/op: the host's wall time to queue the calls, per call, while the GPU spins (each library's host overhead per op: what bounds a program whose ops are shorter than it).",
    "Errors against an f64 CPU reference from the same inputs, on the first 2^20 elements (element-wise, in ulps of the op's dtype at the exact value) or the first rows up to 2^20 elements (norms: max abs, and max rel with |ref| floored at 1).",
];

/// The GPU the section runs on: its name and L2 size (50 MiB if unknown).
fn device_info(dev: &Device) -> (String, usize) {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(d) = dev {
        use candle_core::cuda_backend::cudarc::driver::sys::CUdevice_attribute;
        let ctx = d.cuda_stream().context().clone();
        let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        let l2 = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).ok();
        return (name, l2.and_then(|b| usize::try_from(b).ok()).filter(|&b| b > 0).unwrap_or(50 << 20));
    }
    (format!("{dev:?}"), 50 << 20)
}

/// Raises the release threshold of `dev`'s default memory pool (where
/// cudarc's stream-ordered allocations come from) to the maximum, so freed
/// outputs stay in the pool for the next call (`METHOD`).
fn keep_pool(dev: &Device) -> Result<()> {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(d) = dev {
        use candle_core::cuda_backend::cudarc::driver::sys;
        let ordinal = d.cuda_stream().context().ordinal() as i32;
        let fail = |what: &str, r: sys::CUresult| Error::Msg(format!("{what}: {r:?}"));
        let (mut device, mut pool) = (0 as sys::CUdevice, std::ptr::null_mut());
        let mut threshold = u64::MAX;
        // SAFETY: plain driver queries and one pool attribute on the context
        // candle made current; every pointer is to a local of the type the
        // call writes or reads (the threshold is a cuuint64_t).
        unsafe {
            let r = sys::cuDeviceGet(&mut device, ordinal);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(fail("cuDeviceGet", r));
            }
            let r = sys::cuDeviceGetDefaultMemPool(&mut pool, device);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(fail("cuDeviceGetDefaultMemPool", r));
            }
            let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
            let r = sys::cuMemPoolSetAttribute(pool, attr, &mut threshold as *mut u64 as *mut std::ffi::c_void);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(fail("cuMemPoolSetAttribute", r));
            }
        }
    }
    #[cfg(not(feature = "cuda"))]
    let _ = dev;
    Ok(())
}

/// What the measuring modules share: the device, its L2, the repetitions.
pub struct Bench<'a> {
    pub dev: &'a Device,
    pub l2: usize,
    pub reps: usize,
}

impl Bench<'_> {
    /// Calls per repetition for an op moving `bytes` per call: 16 back to
    /// back below twice the L2, else one.
    pub fn chain(&self, bytes: usize) -> usize {
        if bytes < 2 * self.l2 {
            16
        } else {
            1
        }
    }

    /// Input sets to rotate over when the lightest op (`least` bytes per call)
    /// is chained: enough that one input tensor of `input` bytes per set
    /// exceeds twice the L2 over all sets, so a call does not find its input
    /// still in the L2; else one.
    pub fn sets(&self, least: usize, input: usize) -> usize {
        if self.chain(least) > 1 {
            (2 * self.l2).div_ceil(input.max(1))
        } else {
            1
        }
    }

    /// Times ours and candle's, `f(i)` on input set `i % sets`; ours failing is
    /// an error, candle's refusal is `Err(message)` beside our time.
    pub fn pair(
        &self,
        bytes: usize,
        sets: usize,
        chain: usize,
        mut ours: impl FnMut(usize) -> Result<()>,
        mut theirs: impl FnMut(usize) -> Result<()>,
    ) -> Result<(Side, std::result::Result<Side, String>)> {
        let r = Reps { reps: self.reps, chain, spin: true };
        let side = |t: Timing| -> Result<Side> {
            let gpu = t.gpu_s.ok_or_else(|| Error::Msg("the report needs CUDA events (a CUDA device)".into()))?;
            Ok(Side { gpu_us: gpu * 1e6, host_us: t.host_s * 1e6, gbps: bytes as f64 / gpu / 1e9 })
        };
        let o = side(measure(self.dev, r, |i| ours(i % sets))?)?;
        let c = match measure(self.dev, r, |i| theirs(i % sets)) {
            Ok(t) => Ok(side(t)?),
            Err(e) => Err(e.to_string().lines().next().unwrap_or_default().to_string()),
        };
        Ok((o, c))
    }
}

/// The three dtypes, as the report names them.
pub const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Runs the section on `dev` (a CUDA device): every cell, printing progress
/// to stderr.
pub fn run(dev: &Device, reps: usize) -> Result<Report> {
    if !dev.is_cuda() {
        return Err(Error::Msg("the candle report needs a CUDA device (build with --features cuda)".into()));
    }
    let (device, l2) = device_info(dev);
    eprintln!("candle report on {device} (L2 {} MiB), {reps} repetitions", l2 >> 20);
    keep_pool(dev)?;
    let bench = Bench { dev, l2, reps };
    let mut failures = Vec::new();
    let elementwise = elementwise::run(&bench, &mut failures)?;
    let norms = norms::run(&bench, &mut failures)?;
    Ok(Report {
        device,
        l2_bytes: l2,
        candle_version: "0.11.1",
        reps,
        method: METHOD.to_vec(),
        elementwise,
        norms,
        not_compared: elementwise::NOT_COMPARED.to_vec(),
        failures,
    })
}

/// Writes `candle.md` and `candle.json` into `dir` (made if missing).
pub fn write(report: &Report, dir: &Path) -> Result<()> {
    let io = |what: &Path, e: std::io::Error| Error::Msg(format!("writing {}: {e}", what.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| Error::Msg(format!("candle.json: {e}")))?;
    let (j, m) = (dir.join("candle.json"), dir.join("candle.md"));
    std::fs::write(&j, json + "\n").map_err(|e| io(&j, e))?;
    std::fs::write(&m, markdown::render(report)).map_err(|e| io(&m, e))?;
    eprintln!("candle report: wrote {} and {}", m.display(), j.display());
    Ok(())
}

/// The report as Markdown (what `--ops` prints).
pub fn markdown(report: &Report) -> String {
    markdown::render(report)
}
