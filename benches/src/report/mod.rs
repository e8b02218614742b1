//! The report (`cargo xtask report`): how close each add variant comes to the
//! memory wall, and how it compares with its peers.
//!
//! [`measure`] runs every section on the GPU and returns the report's JSON; the
//! sections live one per module: [`sweep`] (bandwidth vs n, the automatic
//! choice, block and grid sweeps, launch-bound sizes, tuning), [`cpu`] (the CPU
//! baseline), [`peers`] (torch through `peers.py`; CUB is [`crate::cub`]),
//! [`crate::studies`] (seed 003), [`crate::hopper`] (ceiling, `add_many`),
//! [`crate::ops`] (the element-wise library). [`markdown`] and [`plots`] render a report's JSON (also without
//! a GPU: `report render`), [`record`] writes `verify.json` from a test run.

pub mod auto;
pub mod chains;
pub mod copies;
pub mod cpu;
pub mod launch;
pub mod lead;
pub mod main_table;
pub mod markdown;
pub mod norms;
mod norms_run;
pub mod norms_study;
mod opts;
pub mod peers;
pub mod plots;
pub mod record;
pub mod roofline;
pub mod schema;
mod studies_md;
pub mod sweep;
pub mod sweeps;

use std::time::Instant;

use gpukern::half::{bf16, f16};
use gpukern::{Dtype, Gpu, LaunchShape};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{copy_gbps, median};
use schema::Study;
use schema::{AutoRow, BatchedRow, BlockRow, CpuRow, DeviceFacts, GridRow, LaunchFloor, MainRow, PeerRow, Report};

pub use opts::Opts;

pub fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// Driver version as nvidia-smi prints it (e.g. 580.159.04), else the CUDA version.
fn driver_string(gpu: &Gpu) -> String {
    let smi =
        std::process::Command::new("nvidia-smi").args(["--query-gpu=driver_version", "--format=csv,noheader"]).output();
    let cuda = gpu.info().driver_version;
    let cuda = format!("CUDA {}.{}", cuda / 1000, (cuda % 1000) / 10);
    match smi {
        Ok(o) if o.status.success() => {
            format!("{} ({cuda})", String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim())
        }
        _ => cuda,
    }
}

/// The commit this binary was built from: manifest.json beside the executable (GPU
/// bundle), else `git rev-parse HEAD`.
fn git_commit() -> String {
    let beside = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("manifest.json")));
    if let Some(m) =
        beside.and_then(|p| std::fs::read_to_string(p).ok()).and_then(|t| serde_json::from_str::<Value>(&t).ok())
    {
        let dirty = if m["git_dirty"] == true { "-dirty" } else { "" };
        return format!("{}{dirty}", m["git_commit"].as_str().unwrap_or("unknown"));
    }
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

pub use crate::reps_for;

/// One row of the main sweep.
#[derive(Clone)]
pub struct Row {
    pub kernel: String,
    pub v: Option<u8>,
    pub dtype: Dtype,
    pub n: usize,
    pub block: u32,
    pub median_us: f64,
    pub gbps: f64,
    pub verified: bool,
    pub sets: usize,
}

/// Everything the per-dtype sweeps collect.
#[derive(Default)]
pub struct Collected {
    pub rows: Vec<Row>,
    pub auto_rows: Vec<AutoRow>,
    pub block_rows: Vec<BlockRow>,
    pub batched: Vec<BatchedRow>,
    pub grid_rows: Vec<GridRow>,
    pub failures: Vec<String>,
    pub tuning: Vec<crate::hopper::TuneRow>,
}

/// Runs every section and returns the report as JSON, with the failures
/// (results that differ from the CPU reference).
pub fn measure(o: &Opts) -> Result<(Value, Vec<String>), String> {
    let gpu = Gpu::new(o.device).map_err(|e| e.to_string())?;
    let info = gpu.info().clone();
    let peak = info.peak_gbps();
    let cfg = LaunchShape::with_block(o.block);
    let stream = gpu.stream().map_err(|e| e.to_string())?;
    eprintln!(
        "device {}: {} (sm_{}{}, {} SMs, L2 {} MiB, peak {:.0} GB/s)",
        o.device,
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.sm_count,
        info.l2_bytes >> 20,
        peak
    );
    let started = Instant::now();
    let e = |e: gpukern::Error| e.to_string();

    // Ceilings and floors.
    let copy = copy_gbps(&gpu, 1 << 30, 20).map_err(e)?;
    let floor_b2b = {
        let mut t = Vec::new();
        for _ in 0..20 {
            t.push(
                stream.time(|s| (0..1000).try_for_each(|_| gpu.studies().launch_empty(s))).map_err(e)? as f64 * 1e3
                    / 1000.0,
            );
        }
        median(&mut t)
    };
    let floor_sync = {
        let mut t = Vec::new();
        for _ in 0..500 {
            let t0 = Instant::now();
            gpu.studies().launch_empty(&stream).map_err(e)?;
            stream.synchronize().map_err(e)?;
            t.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        median(&mut t)
    };
    eprintln!("copy {copy:.0} GB/s; empty kernel {floor_b2b:.2} us back-to-back, {floor_sync:.2} us launch+sync");

    let sizes = o.sizes();
    let max_n = *sizes.last().unwrap_or(&1);
    let sweep_blocks = [32u32, 64, 128, 256, 512, 1024];
    let steps =
        o.variants.len() * (sizes.len() + if o.sweep { sweep_blocks.len() } else { 0 }) + o.dtypes.len() * sizes.len();
    let bar = indicatif::ProgressBar::new(steps as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );

    let mut c = Collected::default();
    for &dtype in &o.dtypes {
        match dtype {
            Dtype::F32 => sweep::sweep_dtype::<f32>(&gpu, o, &sizes, max_n, cfg, &sweep_blocks, &bar, &mut c)?,
            Dtype::F16 => sweep::sweep_dtype::<f16>(&gpu, o, &sizes, max_n, cfg, &sweep_blocks, &bar, &mut c)?,
            Dtype::Bf16 => sweep::sweep_dtype::<bf16>(&gpu, o, &sizes, max_n, cfg, &sweep_blocks, &bar, &mut c)?,
        }
    }
    let Collected { rows, auto_rows, block_rows, batched, grid_rows, mut failures, tuning } = c;
    bar.finish_and_clear();
    for r in tuning.iter().filter(|r| !r.verified && r.n == tuning[0].n) {
        failures.push(format!("{} block {} tile {}: differs from the CPU reference", r.kernel, r.block, r.tile_bytes));
    }

    // Where the ceiling is, and many small adds in one launch.
    let (ceiling, mut foreach) = if o.lead {
        let stream = gpu.stream().map_err(e)?;
        eprintln!("ceiling: read-only, write-only and copy kernels at 2^{} words ...", max_n.trailing_zeros());
        let ceiling = crate::hopper::ceiling(&gpu, max_n, &stream)?;
        eprintln!("add_many: 1..1000 triples of 2^10..2^16 elements ...");
        let foreach = crate::foreach::foreach_all(&gpu, &o.dtypes, &stream)?;
        (ceiling, foreach)
    } else {
        (Vec::new(), Vec::new())
    };
    for r in foreach.iter().filter(|r| !r.verified) {
        failures.push(format!("add_many {} {}x{}: differs from the CPU reference", r.dtype, r.tensors, r.elements));
    }

    // Kernel resources and occupancy at the chosen block size.
    let kernels = roofline::resources(&gpu, &o.variants, o.block).map_err(e)?;
    // CPU baseline.
    let mut cpu_rows = Vec::new();
    if o.cpu {
        eprintln!("CPU baseline ({} threads)...", rayon::current_num_threads());
        for &dtype in &o.dtypes {
            for &n in sizes.iter().filter(|&&n| n.trailing_zeros() % 2 == 0 || n == max_n) {
                let (one, all, exact) = cpu::gbps_of(dtype, n);
                if !exact {
                    failures.push(format!("CPU baseline {} n={n}: differs from the reference", dtype.name()));
                }
                let best = rows.iter().filter(|r| r.dtype == dtype && r.n == n).map(|r| r.gbps).fold(0.0, f64::max);
                cpu_rows.push(CpuRow {
                    dtype: dtype.name().into(),
                    n,
                    cpu_1t_gbps: one,
                    cpu_all_gbps: all,
                    threads: rayon::current_num_threads(),
                    method: cpu::method(dtype),
                    verified: exact,
                    gpu_best_gbps: best,
                    speedup_vs_1t: best / one,
                    speedup_vs_all: best / all,
                });
            }
        }
    }

    // The seed-003 studies.
    let mut studies: Vec<Study> = Vec::new();
    if o.studies {
        let stream = gpu.stream().map_err(e)?;
        let big = 1usize << o.max_log2.clamp(20, 26);
        let mm: Vec<usize> =
            [1024usize, 2048, 4096].into_iter().filter(|&s| s * s <= 1 << o.max_log2.max(20)).collect();
        let side = (big as f64).sqrt() as usize;
        eprintln!("studies: matmul {mm:?}, count/coalesce/fusion n = {big}, transpose {side}^2 ...");
        studies.extend(crate::studies::matmul(&gpu, &stream, &mm)?);
        studies.extend(crate::studies::count(&gpu, &stream, big)?);
        studies.extend(crate::studies::coalesce(&gpu, &stream, big)?);
        studies.extend(crate::studies::transpose(&gpu, &stream, side)?);
        studies.extend(crate::studies::fusion(&gpu, &stream, big, copy)?);
        for s in studies.iter().filter(|s| !s.verified()) {
            let (family, kernel) = s.name();
            failures.push(format!("{family} {kernel}: not verified"));
        }
    }

    // The element-wise library at the seed's sizes.
    let op_sizes: Vec<usize> =
        [20u32, 24, 28].into_iter().filter(|k| (o.min_log2..=o.max_log2).contains(k)).map(|k| 1 << k).collect();
    let op_sizes = if o.ops { op_sizes } else { Vec::new() };
    let mut ops = if op_sizes.is_empty() {
        Vec::new()
    } else {
        eprintln!("element-wise operations at {op_sizes:?} ...");
        crate::ops::measure(&gpu, &o.dtypes, &op_sizes)?
    };
    // User-defined operations at 2^28 (the section needs that size).
    let custom = if o.ops && o.max_log2 >= 28 && o.min_log2 <= 28 {
        eprintln!("custom operations at 2^28 ...");
        crate::custom::measure(&gpu, &[1 << 28])?
    } else {
        Vec::new()
    };
    let sum_sizes = if custom.is_empty() { Vec::new() } else { crate::sum::sizes(o.min_log2, o.max_log2) };
    let mut custom_sum = crate::sum::measure(&gpu, &sum_sizes)?;
    for r in custom_sum.iter().filter(|r| !r.verified) {
        failures.push(format!("custom sum n={}: {} is not the CPU's sum {}", r.n, r.total, r.expected));
    }
    for r in custom.iter().filter(|r| !r.verified) {
        failures.push(format!("custom {} {} n={}: differs from the CPU rule", r.op, r.dtype, r.n));
    }
    for r in ops.iter().filter(|r| !r.verified) {
        failures.push(format!("op {} {} n={}: differs from the CPU reference", r.op, r.dtype, r.n));
    }

    // Peers (torch.add, torch._foreach_add, torch.matmul, torch's element-wise
    // operations; CUB) in the same run.
    let torch = if o.peers && !o.norms_only {
        peers::run_peers(o, &sizes, &op_sizes, &sum_sizes)
    } else {
        peers::Peers { note: "not requested (pass --peers)".to_string(), ..Default::default() }
    };
    for r in &mut ops {
        let key = (r.op.clone(), r.dtype.clone(), r.n);
        r.torch_gbps =
            if r.op == "add" { torch.add.get(&(key.1, key.2)).copied() } else { torch.ops.get(&key).copied() };
    }
    let peers::Peers { add: peers, note: peers_note, matmul: peer_matmul, foreach: torch_foreach, sum, .. } = torch;
    for r in &mut foreach {
        r.torch_us_per_add = torch_foreach
            .iter()
            .find(|t| t["dtype"] == r.dtype.as_str() && t["tensors"] == r.tensors && t["elements"] == r.elements)
            .and_then(|t| t["us_per_add"].as_f64());
    }
    let cub = if o.peers && !o.norms_only {
        let out = o.out.join("cub");
        let _ = std::fs::create_dir_all(&out);
        let cub_sum = crate::sum::cub_sum(&sum_sizes, info.compute_capability, &out);
        crate::sum::add_peers(&mut custom_sum, &cub_sum, &sum);
        crate::cub::run(o.min_log2, o.max_log2, info.compute_capability, &out)
    } else {
        crate::cub::CubPeer { note: "not requested (pass --peers)".into(), ..Default::default() }
    };
    // A peer that is not bit-exact is reported, not counted as our failure.
    for (d, why) in &cub.mismatch {
        eprintln!("peers: CUB {d} is not bit-exact: {why}");
    }
    // The lead tables: our automatic path, CUB and torch in interleaved rounds.
    let (lead, lead_warm) = if o.lead {
        crate::report::lead::measure(&gpu, o, cub.exe.as_deref(), &o.out.join("cub"), &mut failures)?
    } else {
        (Vec::new(), Vec::new())
    };
    // Chains of dependent operations (PDL and graphs against torch), the
    // norms, and our copies beside the plain driver copies.
    let chains = chains::section(&gpu, o, &mut failures)?;
    let (norms, norms_plans) = (norms::section(&gpu, o, &mut failures)?, norms_study::study(&gpu, o)?);
    let copies = if o.norms_only { Vec::new() } else { copies::section(&gpu, o.max_log2, &mut failures)? };

    // Roofline: 1 FLOP per element; bytes per element 3 * size.
    let roofline = roofline::rows(&o.dtypes, copy, info.peak_fp32_add_gflops());

    let best_stream = ceiling.iter().map(|c| c.gbps).reduce(f64::max);
    let json_rows: Vec<MainRow> = rows
        .iter()
        .map(|r| {
            let key = (r.dtype.name().to_string(), r.n);
            let (torch, cub_gbps) = (peers.get(&key).copied(), cub.gbps.get(&key).copied());
            MainRow {
                kernel: r.kernel.clone(),
                v: r.v,
                dtype: r.dtype.name().into(),
                n: r.n,
                block: r.block,
                median_us: r.median_us,
                gbps: r.gbps,
                pct_peak: 100.0 * r.gbps / peak,
                pct_copy: 100.0 * r.gbps / copy,
                verified: r.verified,
                input_sets: r.sets,
                cache: if r.sets > 1 { "L2-sized: inputs rotate" } else { "DRAM" }.into(),
                torch_gbps: torch,
                ratio_vs_torch: torch.map(|t| r.gbps / t),
                cub_gbps,
                ratio_vs_cub: cub_gbps.map(|c| r.gbps / c),
                pct_stream: best_stream.map(|b| 100.0 * r.gbps / b),
            }
        })
        .collect();
    let report = Report {
        gpu: info.name.clone(),
        driver: driver_string(&gpu),
        git_commit: git_commit(),
        ptx_sha256: sha256_hex(gpukern::PTX.as_bytes()),
        ptx_sm90_sha256: sha256_hex(gpukern::PTX_SM90.as_bytes()),
        device: DeviceFacts {
            index: o.device,
            compute_capability: format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            sm_count: info.sm_count,
            l2_bytes: info.l2_bytes,
            memory_clock_khz: info.memory_clock_khz,
            bus_width_bits: info.bus_width_bits,
            total_memory: info.total_memory,
            sm_clock_khz: info.sm_clock_khz,
        },
        peak_gbps: peak,
        copy_gbps: copy,
        block: o.block,
        launch_floor_us: LaunchFloor { back_to_back: floor_b2b, launch_and_sync: floor_sync },
        kernels,
        roofline,
        rows: json_rows,
        auto: auto_rows,
        block_sweep: block_rows,
        batched,
        grid_sweep: grid_rows,
        cpu: cpu_rows,
        peers: peers.iter().map(|((d, n), g)| PeerRow { dtype: d.clone(), n: *n, torch_gbps: *g }).collect(),
        peers_note,
        cub_note: cub.note,
        cub_verified: cub.verified,
        cub_mismatch: cub.mismatch,
        lead,
        lead_warm,
        foreach,
        ops,
        custom,
        custom_sum,
        chains,
        copies,
        norms,
        norms_plans,
        ceiling,
        tuning,
        peer_matmul,
        studies,
        failures: failures.clone(),
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    let report = serde_json::to_value(&report).map_err(|e| e.to_string())?;
    Ok((report, failures))
}
