//! The report's lead sections: the tuning sweep (block sizes, unrolling, load
//! hints, bulk-copy tilings) and where the memory ceiling is (read-only,
//! write-only, copy); the Markdown of those and of [`crate::foreach`].
//!
//! Each section has a measure step that fills serde structs (they are the JSON
//! schema of `report.json`) and a render step that writes Markdown from them.

use std::fmt::Write as _;

use gpukern::reference::ReferenceAdd;
use gpukern::{BulkConfig, Dtype, Gpu, LaunchShape, Stream, Variant};
use serde::{Deserialize, Serialize};

use crate::foreach::ForeachRow;
use crate::{add_bytes, gbps, Pick, Workload};

type Res<T> = Result<T, String>;

fn e(err: gpukern::Error) -> String {
    err.to_string()
}

/// One launch setting of one kernel, timed: the tuning sweep behind the
/// automatic choice.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TuneRow {
    pub kernel: String,
    pub dtype: String,
    pub n: usize,
    /// Bytes per operand per tile (bulk kernels), 0 for the others.
    pub tile_bytes: u32,
    pub stages: u32,
    pub block: u32,
    /// `null`: one block per tile (or per lane groups); else the grid cap.
    pub max_grid: Option<u32>,
    pub blocks_per_sm: u32,
    pub median_us: f64,
    pub gbps: f64,
    pub verified: bool,
}

/// The settings the sweep tries for one dtype: (variant, tiling for bulk ones,
/// block, persistent grid).
fn settings(dtype: Dtype, sm90: bool) -> Vec<(Variant, BulkConfig, u32, bool)> {
    let none = BulkConfig::default();
    let mut t = Vec::new();
    for block in [64, 128, 256, 512, 1024] {
        t.push((Variant::widest(dtype), none, block, false));
    }
    for v in Variant::of_dtype(dtype).filter(|v| v.unroll().is_some()) {
        t.push((v, none, 256, false));
    }
    let hinted =
        Variant::of_dtype(dtype).filter(|v| matches!(v.kernel().pattern, kernels_gpu::add::Pattern::LoadHint { .. }));
    for v in hinted.filter(|v| sm90 || !v.needs_sm90()) {
        for block in [128, 256, 1024] {
            t.push((v, none, block, false));
        }
    }
    if sm90 {
        for v in Variant::of_dtype(dtype).filter(|v| v.is_bulk()) {
            for (tile_bytes, block) in [(1024, 64), (2048, 64), (2048, 128), (4096, 128), (4096, 256), (8192, 256)] {
                t.push((v, BulkConfig { tile_bytes, stages: 1 }, block, false));
            }
            t.push((v, BulkConfig { tile_bytes: 4096, stages: 2 }, 256, true));
        }
    }
    t
}

/// Times every setting of `T`'s dtype at each n of `sizes` (each verified
/// bit-exact first, at the smallest n plus an odd tail).
pub fn tune<T: ReferenceAdd>(gpu: &Gpu, w: &mut Workload<T>, sizes: &[usize], stream: &Stream) -> Res<Vec<TuneRow>> {
    let sms = gpu.info().sm_count;
    let mut rows = Vec::new();
    for (v, bulk, block, persistent) in settings(T::DTYPE, gpu.info().has_sm90()) {
        let shared = if v.is_bulk() {
            kernels_gpu::bulk::shared_bytes(bulk.tile_bytes, bulk.stages, v.bulk_store()) as usize
        } else {
            0
        };
        let per_sm = gpu.studies().blocks_per_sm_with_shared(v.name(), block, shared).map_err(e)?;
        let cfg = LaunchShape {
            block,
            max_grid: if persistent { (per_sm * sms).max(1) } else { LaunchShape::default().max_grid },
        };
        let pick = if v.is_bulk() { Pick::Bulk(v, bulk) } else { Pick::Variant(v) };
        let Some(&first) = sizes.first() else { continue };
        let verified = w.verify(gpu, pick, cfg, first + 5, stream).map_err(e)?.is_ok();
        for &n in sizes {
            let ms = w.time(gpu, pick, cfg, n, reps(add_bytes(T::DTYPE, n)), 3, true, stream).map_err(e)?;
            rows.push(TuneRow {
                kernel: v.name().into(),
                dtype: T::DTYPE.name().into(),
                n,
                tile_bytes: if v.is_bulk() { bulk.tile_bytes } else { 0 },
                stages: if v.is_bulk() { bulk.stages } else { 0 },
                block,
                max_grid: persistent.then_some(cfg.max_grid),
                blocks_per_sm: per_sm,
                median_us: ms * 1e3,
                gbps: gbps(add_bytes(T::DTYPE, n), ms),
                verified,
            });
        }
    }
    Ok(rows)
}

fn reps(bytes: u64) -> usize {
    if bytes <= 1 << 28 {
        40
    } else {
        20
    }
}

/// One ceiling measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CeilingRow {
    /// `read`, `write`, `copy` or `add`.
    pub kind: String,
    pub kernel: String,
    pub block: u32,
    /// Bytes moved through DRAM (read + written).
    pub bytes: u64,
    pub median_us: f64,
    pub gbps: f64,
    pub pct_peak: f64,
}

/// Read-only, write-only and copy kernels (and the driver's copy) on `words`
/// u32 per array, spin-isolated like every row; block sizes 128..1024.
pub fn ceiling(gpu: &Gpu, words: usize, stream: &Stream) -> Res<Vec<CeilingRow>> {
    let peak = gpu.info().peak_gbps();
    let a = gpu.upload(&crate::random_words(words, 1)).map_err(e)?;
    let b = gpu.upload(&crate::random_words(words, 2)).map_err(e)?;
    let mut c = gpu.alloc::<u32>(words).map_err(e)?;
    let mut sink = gpu.upload(&[0u32]).map_err(e)?;
    let mut rows = Vec::new();
    let mut push = |kind: &str, kernel: &str, block: u32, bytes: u64, ms: f64| {
        let g = gbps(bytes, ms);
        rows.push(CeilingRow {
            kind: kind.into(),
            kernel: kernel.into(),
            block,
            bytes,
            median_us: ms * 1e3,
            gbps: g,
            pct_peak: 100.0 * g / peak,
        });
    };
    let w4 = 4 * words as u64;
    for block in [128u32, 256, 512, 1024] {
        let ms = crate::time_op(gpu, stream, 20, 3, |s| {
            gpu.studies().ceiling_read(block, &a, &b, &mut sink, 0x9e37_79b9, s)
        })
        .map_err(e)?;
        push("read", "ceiling_read", block, 2 * w4, ms);
        let ms = crate::time_op(gpu, stream, 20, 3, |s| gpu.studies().ceiling_fill(block, &mut c, 7, s)).map_err(e)?;
        push("write", "ceiling_fill", block, w4, ms);
        let ms = crate::time_op(gpu, stream, 20, 3, |s| gpu.studies().ceiling_copy(block, &a, &mut c, s)).map_err(e)?;
        push("copy", "ceiling_copy", block, 2 * w4, ms);
    }
    let ms = crate::time_op(gpu, stream, 20, 3, |s| c.copy_from(&a, s)).map_err(e)?;
    push("copy", "cuMemcpyDtoDAsync", 0, 2 * w4, ms);
    Ok(rows)
}

/// Markdown of the three sections.
pub fn render(
    s: &mut String,
    bulk: &[TuneRow],
    ceiling: &[CeilingRow],
    foreach: &[ForeachRow],
    copy_gbps: f64,
    peak: f64,
) {
    if !ceiling.is_empty() {
        let best = ceiling.iter().map(|r| r.gbps).fold(0.0, f64::max);
        let _ = writeln!(s, "\n## Where the ceiling is\n");
        let _ = writeln!(
            s,
            "Pure streams on 2^{} u32 per array, timed like every row. Best streaming rate: **{best:.0} GB/s** ({:.1}% of the {peak:.0} GB/s theoretical).\n",
            (ceiling[0].bytes / 8).trailing_zeros().saturating_sub(2),
            100.0 * best / peak
        );
        let _ = writeln!(
            s,
            "| kind | kernel | block | µs | GB/s | % peak | % best stream |\n|---|---|---:|---:|---:|---:|---:|"
        );
        for r in ceiling {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.2} | {:.0} | {:.1} | {:.1} |",
                r.kind,
                r.kernel,
                if r.block == 0 { "-".into() } else { r.block.to_string() },
                r.median_us,
                r.gbps,
                r.pct_peak,
                100.0 * r.gbps / best
            );
        }
        let _ = writeln!(s, "\n(The report's copy reference, measured at the start: {copy_gbps:.0} GB/s.)");
    }
    if !bulk.is_empty() {
        let _ = writeln!(s, "\n## Tuning sweep: block sizes, unrolling, bulk-copy tilings\n");
        let _ = writeln!(s, "Every setting verified bit-exact, then timed like the main rows. Bulk kernels: bytes per operand per tile, stages per block, one block per tile or a persistent grid (blocks resident per SM × SMs).\n");
        let _ = writeln!(s, "| kernel | n | tile B | stages | block | grid | blocks/SM | µs | GB/s | verified |\n|---|---|---:|---:|---:|---|---:|---:|---:|---|");
        for r in bulk {
            let _ = writeln!(
                s,
                "| {} | 2^{} | {} | {} | {} | {} | {} | {:.2} | {:.0} | {} |",
                r.kernel,
                r.n.trailing_zeros(),
                if r.tile_bytes == 0 { "-".into() } else { r.tile_bytes.to_string() },
                if r.stages == 0 { "-".into() } else { r.stages.to_string() },
                r.block,
                r.max_grid.map(|g| format!("persistent {g}")).unwrap_or_else(|| "full".into()),
                r.blocks_per_sm,
                r.median_us,
                r.gbps,
                if r.verified { "✓" } else { "✗" }
            );
        }
    }
    if !foreach.is_empty() {
        let _ = writeln!(s, "\n## Many small adds in one launch (`add_many`)\n");
        let _ = writeln!(
            s,
            "Device time per add, from before the table upload to after the launch: CUDA events behind a spin \
             three times as long as the host needs to queue the call (at least 300 µs, for torch too), median, \
             lists rotated until they span 4× L2. Up to 32 triples travel in the kernel's parameters, longer \
             lists as a table copied first. `plan`: table already on the device. `loop`: one `add_auto` \
             launch per triple. torch: `torch._foreach_add(a_list, b_list)` on lists of the same shapes.\n"
        );
        let _ = writeln!(s, "| dtype | triples | elements | add_many µs/add | plan µs/add | loop µs/add | torch._foreach_add µs/add | vs torch | verified |\n|---|---:|---:|---:|---:|---:|---:|---:|---|");
        for r in foreach {
            let torch = r.torch_us_per_add.map(|t| format!("{t:.3}")).unwrap_or_else(|| "-".into());
            let ratio = r.torch_us_per_add.map(|t| format!("{:.2}×", t / r.us_per_add)).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "| {} | {} | 2^{} | {:.3} | {:.3} | {:.3} | {} | {} | {} |",
                r.dtype,
                r.tensors,
                r.elements.trailing_zeros(),
                r.us_per_add,
                r.plan_us_per_add,
                r.loop_us_per_add,
                torch,
                ratio,
                if r.verified { "✓" } else { "✗" }
            );
        }
    }
}
