//! `cargo xtask report`: how close each add variant comes to the memory wall.
//!
//! Runs every variant over n = 2^min .. 2^max, verifies every result bit-exact,
//! times with CUDA events (median), and writes report.md, report.json and
//! report.svg. See `report --help`.
//!
//! `report verify-record ...` turns a GPU test run into results/<gpu>/verify.json.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use gpukern::half::{bf16, f16};
use gpukern::reference::ReferenceAdd;
use gpukern::{Dtype, Gpu, LaunchConfig, Variant};
use gpukern_benches::svg::{chart, Level, Series};
use gpukern_benches::{add_bytes, copy_gbps, gbps, median, Pick, Workload};
use rayon::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const HELP: &str = "report: GB/s of every add variant vs n, verified, with peak and copy bandwidth

usage: report [options]            run the study (the README's main job)
       report verify-record ...    write verify.json from a GPU test run (used by run.sh)
       report render --from report.json --out DIR   redraw report.md and report.svg (no GPU)

options:
  --min-log2 N     smallest n = 2^N (default 10)
  --max-log2 N     largest n = 2^N (default 28)
  --dtype LIST     f32,f16,bf16 (default all)
  --variant LIST   kernel names, e.g. add_f32x4,add_f16x8_pack (default all)
  --device I       CUDA device index (default 0)
  --block B        threads per block for the main sweep (default 256)
  --peers          also time the peers: torch.add and torch._foreach_add through peers.py
                   (if python3 has torch) and CUB's DeviceTransform (if nvcc is here)
  --no-lead        skip the lead sections (bulk tiling sweep, ceiling, add_many)
  --no-cpu         skip the CPU baseline
  --no-sweep       skip the block-size and grid-size sweeps
  --no-studies     skip the seed-003 studies (matmul, count, coalescing, transpose, fusion)
  --out DIR        where report.{md,json,svg} go (default report-out)";

struct Opts {
    min_log2: u32,
    max_log2: u32,
    dtypes: Vec<Dtype>,
    variants: Vec<Variant>,
    device: usize,
    block: u32,
    peers: bool,
    cpu: bool,
    sweep: bool,
    studies: bool,
    lead: bool,
    out: PathBuf,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        min_log2: 10,
        max_log2: 28,
        dtypes: Dtype::ALL.to_vec(),
        variants: Variant::ALL.to_vec(),
        device: 0,
        block: 256,
        peers: false,
        cpu: true,
        sweep: true,
        studies: true,
        lead: true,
        out: PathBuf::from("report-out"),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|_| format!("{a}: not a number: {s}"));
        match a.as_str() {
            "--min-log2" => o.min_log2 = num(val()?)? as u32,
            "--max-log2" => o.max_log2 = num(val()?)? as u32,
            "--device" => o.device = num(val()?)? as usize,
            "--block" => o.block = num(val()?)? as u32,
            "--out" => o.out = PathBuf::from(val()?),
            "--peers" => o.peers = true,
            "--no-cpu" => o.cpu = false,
            "--no-sweep" => o.sweep = false,
            "--no-studies" => o.studies = false,
            "--no-lead" => o.lead = false,
            "--dtype" => {
                o.dtypes = val()?
                    .split(',')
                    .map(|d| Dtype::ALL.into_iter().find(|x| x.name() == d).ok_or(format!("unknown dtype {d}")))
                    .collect::<Result<_, _>>()?
            }
            "--variant" => {
                o.variants = val()?
                    .split(',')
                    .map(|v| Variant::from_name(v).ok_or(format!("unknown variant {v}")))
                    .collect::<Result<_, _>>()?
            }
            "-h" | "--help" => {
                println!("{HELP}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other} (see --help)")),
        }
    }
    if o.min_log2 > o.max_log2 || o.max_log2 > 31 {
        return Err(format!("bad size range 2^{}..2^{}", o.min_log2, o.max_log2));
    }
    o.variants.retain(|v| o.dtypes.contains(&v.dtype()));
    Ok(o)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("verify-record") => verify_record(&args[1..]),
        Some("render") => render(&args[1..]),
        _ => parse(&args).and_then(|o| run(&o)),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn sha256_hex(b: &[u8]) -> String {
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

fn open_gpu(index: usize) -> Result<Gpu, String> {
    Gpu::new(index).map_err(|e| e.to_string())
}

fn reps_for(bytes: u64) -> usize {
    match bytes {
        b if b <= 1 << 24 => 200,
        b if b <= 1 << 28 => 60,
        _ => 25,
    }
}

/// One row of the main sweep.
#[derive(Clone)]
struct Row {
    kernel: String,
    v: Option<u8>,
    dtype: Dtype,
    n: usize,
    block: u32,
    median_us: f64,
    gbps: f64,
    verified: bool,
    sets: usize,
}

/// Everything the per-dtype sweeps collect.
#[derive(Default)]
struct Collected {
    rows: Vec<Row>,
    auto_rows: Vec<Value>,
    block_rows: Vec<Value>,
    batched: Vec<Value>,
    grid_rows: Vec<Value>,
    failures: Vec<String>,
    /// (dtype, n, kernel, GB/s) of the automatic path, timed like the peers.
    lead_auto: Vec<(String, usize, String, f64)>,
    tuning: Vec<gpukern_benches::hopper::TuneRow>,
}

fn run(o: &Opts) -> Result<(), String> {
    let gpu = open_gpu(o.device)?;
    let info = gpu.info().clone();
    let peak = info.peak_gbps();
    let cfg = LaunchConfig::with_block(o.block);
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
            t.push(stream.time(|s| (0..1000).try_for_each(|_| gpu.launch_empty(s))).map_err(e)? as f64 * 1e3 / 1000.0);
        }
        median(&mut t)
    };
    let floor_sync = {
        let mut t = Vec::new();
        for _ in 0..500 {
            let t0 = Instant::now();
            gpu.launch_empty(&stream).map_err(e)?;
            stream.synchronize().map_err(e)?;
            t.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        median(&mut t)
    };
    eprintln!("copy {copy:.0} GB/s; empty kernel {floor_b2b:.2} us back-to-back, {floor_sync:.2} us launch+sync");

    let sizes: Vec<usize> = (o.min_log2..=o.max_log2).map(|k| 1usize << k).collect();
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
            Dtype::F32 => sweep_dtype::<f32>(&gpu, o, &sizes, max_n, cfg, &sweep_blocks, &bar, &mut c)?,
            Dtype::F16 => sweep_dtype::<f16>(&gpu, o, &sizes, max_n, cfg, &sweep_blocks, &bar, &mut c)?,
            Dtype::Bf16 => sweep_dtype::<bf16>(&gpu, o, &sizes, max_n, cfg, &sweep_blocks, &bar, &mut c)?,
        }
    }
    let Collected { rows, auto_rows, block_rows, batched, grid_rows, mut failures, lead_auto, tuning } = c;
    bar.finish_and_clear();
    for r in tuning.iter().filter(|r| !r.verified && r.n == tuning[0].n) {
        failures.push(format!("{} block {} tile {}: differs from the CPU reference", r.kernel, r.block, r.tile_bytes));
    }

    // Where the ceiling is, and many small adds in one launch.
    let (ceiling, mut foreach) = if o.lead {
        let stream = gpu.stream().map_err(e)?;
        eprintln!("ceiling: read-only, write-only and copy kernels at 2^{} words ...", max_n.trailing_zeros());
        let ceiling = gpukern_benches::hopper::ceiling(&gpu, max_n, &stream)?;
        eprintln!("add_many: 1..1000 triples of 2^10..2^16 elements ...");
        let foreach = gpukern_benches::hopper::foreach_all(&gpu, &o.dtypes, &stream)?;
        (ceiling, foreach)
    } else {
        (Vec::new(), Vec::new())
    };
    for r in foreach.iter().filter(|r| !r.verified) {
        failures.push(format!("add_many {} {}x{}: differs from the CPU reference", r.dtype, r.tensors, r.elements));
    }

    // Kernel resources and occupancy at the chosen block size.
    let mut kernels = Vec::new();
    for &v in &o.variants {
        let r = gpu.kernel_resources(v.name()).map_err(e)?;
        let blocks = gpu.blocks_per_sm(v.name(), o.block).map_err(e)?;
        let occ = (blocks * o.block) as f64 / info.max_threads_per_sm as f64;
        kernels.push(json!({"kernel": v.name(), "registers": r.registers, "local_bytes": r.local_bytes, "shared_bytes": r.shared_bytes, "block": o.block, "blocks_per_sm": blocks, "occupancy": occ}));
    }

    // CPU baseline.
    let mut cpu_rows = Vec::new();
    if o.cpu {
        eprintln!("CPU baseline ({} threads)...", rayon::current_num_threads());
        for &dtype in &o.dtypes {
            for &n in sizes.iter().filter(|&&n| n.trailing_zeros() % 2 == 0 || n == max_n) {
                let (one, all) = match dtype {
                    Dtype::F32 => cpu_gbps::<f32>(n),
                    Dtype::F16 => cpu_gbps::<f16>(n),
                    Dtype::Bf16 => cpu_gbps::<bf16>(n),
                };
                let best = rows.iter().filter(|r| r.dtype == dtype && r.n == n).map(|r| r.gbps).fold(0.0, f64::max);
                cpu_rows.push(json!({"dtype": dtype.name(), "n": n, "cpu_1t_gbps": one, "cpu_all_gbps": all, "threads": rayon::current_num_threads(), "gpu_best_gbps": best, "speedup_vs_1t": best / one, "speedup_vs_all": best / all}));
            }
        }
    }

    // The seed-003 studies.
    let mut studies: Vec<Value> = Vec::new();
    if o.studies {
        let stream = gpu.stream().map_err(e)?;
        let big = 1usize << o.max_log2.clamp(20, 26);
        let mm: Vec<usize> =
            [1024usize, 2048, 4096].into_iter().filter(|&s| s * s <= 1 << o.max_log2.max(20)).collect();
        let side = (big as f64).sqrt() as usize;
        eprintln!("studies: matmul {mm:?}, count/coalesce/fusion n = {big}, transpose {side}^2 ...");
        studies.extend(gpukern_benches::studies::matmul(&gpu, &stream, &mm)?);
        studies.extend(gpukern_benches::studies::count(&gpu, &stream, big)?);
        studies.extend(gpukern_benches::studies::coalesce(&gpu, &stream, big)?);
        studies.extend(gpukern_benches::studies::transpose(&gpu, &stream, side)?);
        studies.extend(gpukern_benches::studies::fusion(&gpu, &stream, big, copy)?);
        for s in &studies {
            if s["verified"] != true {
                failures.push(format!("{} {}: not verified", s["family"], s["kernel"]));
            }
        }
    }

    // Peers (torch.add, torch._foreach_add, torch.matmul; CUB) in the same run.
    let (peers, peers_note, peer_matmul, torch_foreach) = if o.peers {
        run_peers(o, &sizes)
    } else {
        (BTreeMap::new(), "not requested (pass --peers)".to_string(), Vec::new(), Vec::new())
    };
    for r in &mut foreach {
        r.torch_us_per_add = torch_foreach
            .iter()
            .find(|t| t["dtype"] == r.dtype.as_str() && t["tensors"] == r.tensors && t["elements"] == r.elements)
            .and_then(|t| t["us_per_add"].as_f64());
    }
    let cub = if o.peers {
        let out = o.out.join("cub");
        let _ = std::fs::create_dir_all(&out);
        gpukern_benches::cub::run(o.min_log2, o.max_log2, info.compute_capability, &out)
    } else {
        gpukern_benches::cub::CubPeer { note: "not requested (pass --peers)".into(), ..Default::default() }
    };
    // A peer that is not bit-exact is reported, not counted as our failure.
    for (d, why) in &cub.mismatch {
        eprintln!("peers: CUB {d} is not bit-exact: {why}");
    }
    let lead = gpukern_benches::lead::rows(&lead_auto, &cub.gbps, &peers);

    // Roofline: 1 FLOP per element; bytes per element 3 * size.
    let add_gflops = info.peak_fp32_add_gflops();
    let roofline: Vec<Value> = o
        .dtypes
        .iter()
        .map(|d| {
            let ai = 1.0 / (3.0 * d.size() as f64);
            let mem_bound = ai * copy; // GFLOP/s the memory system allows
            json!({"dtype": d.name(), "flops_per_byte": ai, "bandwidth_bound_gflops": mem_bound, "fp32_add_peak_gflops": add_gflops, "ridge_flops_per_byte": add_gflops / copy, "memory_bound_by": add_gflops / mem_bound})
        })
        .collect();

    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut v = json!({"kernel": r.kernel, "v": r.v, "dtype": r.dtype.name(), "n": r.n, "block": r.block, "median_us": r.median_us, "gbps": r.gbps, "pct_peak": 100.0 * r.gbps / peak, "pct_copy": 100.0 * r.gbps / copy, "verified": r.verified, "input_sets": r.sets, "cache": if r.sets > 1 { "L2-sized: inputs rotate" } else { "DRAM" }});
            if let Some(t) = peers.get(&(r.dtype.name().to_string(), r.n)) {
                v["torch_gbps"] = json!(t);
                v["ratio_vs_torch"] = json!(r.gbps / t);
            }
            if let Some(c) = cub.gbps.get(&(r.dtype.name().to_string(), r.n)) {
                v["cub_gbps"] = json!(c);
                v["ratio_vs_cub"] = json!(r.gbps / c);
            }
            if let Some(best) = ceiling.iter().map(|c| c.gbps).reduce(f64::max) {
                v["pct_stream"] = json!(100.0 * r.gbps / best);
            }
            v
        })
        .collect();
    let report = json!({
        "gpu": info.name,
        "driver": driver_string(&gpu),
        "git_commit": git_commit(),
        "ptx_sha256": sha256_hex(gpukern::PTX.as_bytes()),
        "ptx_sm90_sha256": sha256_hex(gpukern::PTX_SM90.as_bytes()),
        "device": {"index": o.device, "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1), "sm_count": info.sm_count, "l2_bytes": info.l2_bytes, "memory_clock_khz": info.memory_clock_khz, "bus_width_bits": info.bus_width_bits, "total_memory": info.total_memory, "sm_clock_khz": info.sm_clock_khz},
        "peak_gbps": peak,
        "copy_gbps": copy,
        "block": o.block,
        "launch_floor_us": {"back_to_back": floor_b2b, "launch_and_sync": floor_sync},
        "kernels": kernels,
        "roofline": roofline,
        "rows": json_rows,
        "auto": auto_rows,
        "block_sweep": block_rows,
        "batched": batched,
        "grid_sweep": grid_rows,
        "cpu": cpu_rows,
        "peers": peers.iter().map(|((d, n), g)| json!({"dtype": d, "n": n, "torch_gbps": g})).collect::<Vec<_>>(),
        "peers_note": peers_note,
        "cub_note": cub.note,
        "cub_verified": cub.verified,
        "cub_mismatch": cub.mismatch,
        "lead": lead,
        "foreach": foreach,
        "ceiling": ceiling,
        "tuning": tuning,
        "peer_matmul": peer_matmul,
        "studies": studies,
        "failures": failures,
        "elapsed_s": started.elapsed().as_secs_f64(),
    });
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let md = markdown(&report);
    std::fs::write(o.out.join("report.json"), serde_json::to_string_pretty(&report).unwrap_or_default())
        .map_err(|e| e.to_string())?;
    std::fs::write(o.out.join("report.md"), &md).map_err(|e| e.to_string())?;
    std::fs::write(o.out.join("report.svg"), plot(&report)).map_err(|e| e.to_string())?;
    println!("{}", main_table(&report, None));
    println!(
        "wrote {}/report.md, report.json, report.svg in {:.0} s",
        o.out.display(),
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        return Err(format!("{} variant(s) failed verification: {}", failures.len(), failures.join("; ")));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn sweep_dtype<T: ReferenceAdd>(
    gpu: &Gpu,
    o: &Opts,
    sizes: &[usize],
    max_n: usize,
    cfg: LaunchConfig,
    sweep_blocks: &[u32],
    bar: &indicatif::ProgressBar,
    c: &mut Collected,
) -> Result<(), String> {
    let dtype = T::DTYPE;
    let variants: Vec<Variant> = o.variants.iter().copied().filter(|v| v.dtype() == dtype).collect();
    let e = |e: gpukern::Error| e.to_string();
    bar.set_message(format!("{}: preparing {} random inputs", dtype.name(), max_n));
    // Capacity: the largest n, but at least enough for the L2 rotation of small n.
    let cap = max_n.max((8 * gpu.info().l2_bytes as usize) / (3 * dtype.size()));
    let mut w = Workload::<T>::new(gpu, cap, 7 + dtype as u64).map_err(e)?;
    let stream = gpu.stream().map_err(e)?;
    for &n in sizes {
        let bytes = add_bytes(dtype, n);
        let mut best = (String::new(), 0.0f64);
        for &v in &variants {
            bar.set_message(format!("{v} n=2^{}", n.trailing_zeros()));
            let verified = match w.verify(gpu, v, cfg, n, &stream).map_err(e)? {
                Ok(()) => true,
                Err(i) => {
                    c.failures.push(format!("{v} n={n}: element {i} differs from the CPU reference"));
                    false
                }
            };
            let ms = w.time(gpu, v, cfg, n, reps_for(bytes), 5, true, &stream).map_err(e)?;
            let g = gbps(bytes, ms);
            if g > best.1 {
                best = (v.name().to_string(), g);
            }
            c.rows.push(Row {
                kernel: v.name().into(),
                v: v.seed_version(),
                dtype,
                n,
                block: cfg.block,
                median_us: ms * 1e3,
                gbps: g,
                verified,
                sets: w.rotation(gpu, n),
            });
            bar.inc(1);
        }
        // The automatic choice, verified and timed the same way.
        let ok = w.verify(gpu, Pick::Auto, cfg, n, &stream).map_err(e)?.is_ok();
        if !ok {
            c.failures.push(format!("auto {} n={n}: differs from the CPU reference", dtype.name()));
        }
        // Auto against the best explicit variant, timed interleaved (A, B, A, B…)
        // so that drift and bimodal timings hit both alike.
        let best_v = Variant::from_name(&best.0).unwrap_or(variants[0]);
        let (auto_ms, best_ms) =
            w.time_pair(gpu, Pick::Auto, Pick::Variant(best_v), cfg, n, reps_for(bytes), &stream).map_err(e)?;
        let chosen = gpu.auto_choice(dtype, n, &[w.a.device_addr(), w.b.device_addr(), w.out.device_addr()]);
        if n >= 1 << 20 {
            // The automatic path alone, timed exactly like the peers' rows.
            let ms = w.time(gpu, Pick::Auto, cfg, n, reps_for(bytes), 5, true, &stream).map_err(e)?;
            let plan = gpukern::AutoPlan::new(dtype, n, gpu.info().has_sm90());
            let what = if plan.variant.is_bulk() {
                format!("{} ({} threads, {} B tiles)", plan.variant, plan.block, plan.bulk.tile_bytes)
            } else {
                format!("{} ({} threads)", plan.variant, plan.block)
            };
            c.lead_auto.push((dtype.name().into(), n, what, gbps(bytes, ms)));
        }
        c.auto_rows.push(json!({"dtype": dtype.name(), "n": n, "chosen": chosen.name(), "median_us": auto_ms * 1e3, "gbps": gbps(bytes, auto_ms), "verified": ok, "best_kernel": best.0, "best_gbps": gbps(bytes, best_ms), "auto_vs_best_pct": 100.0 * best_ms / auto_ms}));
        bar.inc(1);
    }
    // The tuning sweep behind the automatic choice.
    if o.lead {
        let at: Vec<usize> =
            [1usize << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28].into_iter().filter(|&n| n <= max_n).collect();
        if !at.is_empty() {
            bar.set_message(format!("{}: tuning sweep", dtype.name()));
            c.tuning.extend(gpukern_benches::hopper::tune(gpu, &mut w, &at, &stream)?);
        }
    }
    // Launch-bound sizes: what one add costs alone (kernel only, and with the
    // host's launch latency), back to back on a stream, and replayed from a graph.
    for &v in &variants {
        for n in [1usize << 10, 1 << 20].into_iter().filter(|n| *n <= max_n) {
            let bytes = add_bytes(dtype, n);
            let kernel = w.time(gpu, v, cfg, n, 200, 5, true, &stream).map_err(e)?;
            let single = w.time(gpu, v, cfg, n, 200, 5, false, &stream).map_err(e)?;
            let batch = w.time_batched(gpu, v, cfg, n, 100, 20, &stream).map_err(e)?;
            let graph = w.time_graph(gpu, v, cfg, n, 100, 20, &stream).map_err(e)?;
            c.batched.push(json!({"kernel": v.name(), "n": n, "kernel_us": kernel * 1e3, "single_us": single * 1e3, "batched_us_per_op": batch * 1e3, "graph_us_per_op": graph * 1e3, "kernel_gbps": gbps(bytes, kernel), "single_gbps": gbps(bytes, single), "batched_gbps": gbps(bytes, batch), "graph_gbps": gbps(bytes, graph)}));
        }
    }
    // Grid-size sweep: the same kernels with the grid capped to a few waves of
    // resident blocks (the grid-stride loop does the rest) vs one thread per group.
    if o.sweep {
        let sms = gpu.info().sm_count;
        let widest = Variant::widest(dtype);
        for n in [1usize << 24, max_n].into_iter().filter(|n| *n <= max_n && *n >= 1 << 20) {
            for cap in [sms, 2 * sms, 4 * sms, 8 * sms, 16 * sms, 64 * sms, kernels_gpu::launch::MAX_GRID_X] {
                for v in variants.iter().copied().filter(|v| *v == widest) {
                    let lc = LaunchConfig { block: cfg.block, max_grid: cap };
                    let ok = w.verify(gpu, v, lc, n, &stream).map_err(e)?.is_ok();
                    if !ok {
                        c.failures.push(format!("{v} max_grid={cap}: differs from the CPU reference"));
                    }
                    let ms = w.time(gpu, v, lc, n, reps_for(add_bytes(dtype, n)), 5, true, &stream).map_err(e)?;
                    c.grid_rows.push(json!({"kernel": v.name(), "n": n, "block": cfg.block, "max_grid": cap, "blocks_per_sm_cap": if cap == kernels_gpu::launch::MAX_GRID_X { Value::Null } else { json!(cap / sms) }, "median_us": ms * 1e3, "gbps": gbps(add_bytes(dtype, n), ms), "verified": ok}));
                }
            }
        }
    }
    if o.sweep {
        let n = max_n;
        for &v in &variants {
            for &block in sweep_blocks {
                let lc = LaunchConfig::with_block(block);
                bar.set_message(format!("{v} block {block}"));
                let ok = w.verify(gpu, v, lc, n, &stream).map_err(e)?.is_ok();
                if !ok {
                    c.failures.push(format!("{v} block={block}: differs from the CPU reference"));
                }
                let ms = w.time(gpu, v, lc, n, 20, 3, true, &stream).map_err(e)?;
                let seed_block = match v.seed_version() {
                    Some(2) => Some(64),
                    Some(5 | 6) => Some(32),
                    Some(_) => Some(256),
                    None => None,
                };
                c.block_rows.push(json!({"kernel": v.name(), "n": n, "block": block, "median_us": ms * 1e3, "gbps": gbps(add_bytes(dtype, n), ms), "verified": ok, "seed_config": seed_block == Some(block)}));
                bar.inc(1);
            }
        }
    }
    Ok(())
}

/// CPU add of n elements: (single thread GB/s, all cores GB/s), median of runs.
fn cpu_gbps<T: ReferenceAdd + CpuAdd>(n: usize) -> (f64, f64) {
    let a = gpukern_benches::random_inputs::<T>(n, 1);
    let b = gpukern_benches::random_inputs::<T>(n, 2);
    let mut c = vec![T::from_bits32(0); n];
    let bytes = add_bytes(T::DTYPE, n);
    let reps = ((1usize << 26) / n).clamp(3, 1000);
    let mut time = |par: bool| {
        let mut t = Vec::new();
        for _ in 0..reps {
            let t0 = Instant::now();
            if par {
                c.par_chunks_mut(1 << 14)
                    .zip(a.par_chunks(1 << 14))
                    .zip(b.par_chunks(1 << 14))
                    .for_each(|((c, a), b)| T::add_slices(a, b, c));
            } else {
                T::add_slices(&a, &b, &mut c);
            }
            std::hint::black_box(&mut c);
            t.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        gbps(bytes, median(&mut t))
    };
    (time(false), time(true))
}

/// What a Rust user writes on the CPU: `c[i] = a[i] + b[i]` with the type's own `+`.
trait CpuAdd: Sized {
    fn add_slices(a: &[Self], b: &[Self], c: &mut [Self]);
}
macro_rules! cpu_add {
    ($($t:ty),*) => {$(
        impl CpuAdd for $t {
            fn add_slices(a: &[Self], b: &[Self], c: &mut [Self]) {
                for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
                    *c = *a + *b;
                }
            }
        }
    )*};
}
cpu_add!(f32, f16, bf16);

fn peers_script() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("peers.py")));
    let candidates = [
        beside,
        Some(PathBuf::from("scripts/peers.py")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers.py")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

/// Runs peers.py; returns GB/s by (dtype, n), or a note saying why there are none.
/// (torch.add GB/s by (dtype, n), note, torch.matmul rows, torch._foreach_add rows)
type Peers = (BTreeMap<(String, usize), f64>, String, Vec<Value>, Vec<Value>);

fn run_peers(o: &Opts, sizes: &[usize]) -> Peers {
    let mut map = BTreeMap::new();
    let Some(script) = peers_script() else {
        return (map, "peers.py not found".into(), Vec::new(), Vec::new());
    };
    let has_torch = std::process::Command::new("python3")
        .args(["-c", "import torch; assert torch.cuda.is_available()"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_torch {
        eprintln!("peers: python3 with CUDA torch not available; skipping torch.add");
        return (map, "python3 with a CUDA build of torch is not available here".into(), Vec::new(), Vec::new());
    }
    eprintln!("peers: timing torch.add ...");
    let dtypes: Vec<&str> = o.dtypes.iter().map(|d| d.name()).collect();
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args([
            "--min-log2",
            &o.min_log2.to_string(),
            "--max-log2",
            &o.max_log2.to_string(),
            "--dtypes",
            &dtypes.join(","),
            "--device",
            &o.device.to_string(),
        ])
        .args(if o.studies { &["--matmul", "1024,2048,4096"][..] } else { &[][..] })
        .args(if o.lead { &["--foreach"][..] } else { &[][..] })
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            for r in v["rows"].as_array().into_iter().flatten() {
                if let (Some(d), Some(n), Some(g)) = (r["dtype"].as_str(), r["n"].as_u64(), r["gbps"].as_f64()) {
                    if sizes.contains(&(n as usize)) {
                        map.insert((d.to_string(), n as usize), g);
                    }
                }
            }
            let note = format!(
                "torch {} (torch.add(a, b, out=c), CUDA events behind a spin, median; same sizes, input rotation \
                 below 4x L2; torch.matmul with TF32 off)",
                v["torch"].as_str().unwrap_or("?")
            );
            let foreach = v["foreach"].as_array().cloned().unwrap_or_default();
            (map, note, v["matmul"].as_array().cloned().unwrap_or_default(), foreach)
        }
        Ok(out) => (
            map,
            format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")),
            Vec::new(),
            Vec::new(),
        ),
        Err(e) => (map, format!("could not run python3: {e}"), Vec::new(), Vec::new()),
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The main table (all rows, or only n == `only_n`).
fn main_table(r: &Value, only_n: Option<u64>) -> String {
    let has_peers = r["rows"].as_array().map(|a| a.iter().any(|x| x.get("torch_gbps").is_some())).unwrap_or(false);
    let has_cub = r["rows"].as_array().map(|a| a.iter().any(|x| x.get("cub_gbps").is_some())).unwrap_or(false);
    let has_stream = r["rows"].as_array().map(|a| a.iter().any(|x| x.get("pct_stream").is_some())).unwrap_or(false);
    let mut s = String::new();
    let _ = write!(s, "| kernel | V | n | median µs | GB/s | % peak | % copy |");
    if has_stream {
        s.push_str(" % best stream |");
    }
    s.push_str(" verified |");
    if has_peers {
        s.push_str(" torch GB/s | vs torch |");
    }
    if has_cub {
        s.push_str(" CUB GB/s | vs CUB |");
    }
    s.push('\n');
    s.push_str("|---|---|---|---:|---:|---:|---:|");
    if has_stream {
        s.push_str("---:|");
    }
    s.push_str("---|");
    if has_peers {
        s.push_str("---:|---:|");
    }
    if has_cub {
        s.push_str("---:|---:|");
    }
    s.push('\n');
    for row in r["rows"].as_array().into_iter().flatten() {
        let n = row["n"].as_u64().unwrap_or(0);
        if only_n.is_some_and(|k| k != n) {
            continue;
        }
        let v = row["v"].as_u64().map(|v| format!("V{v}")).unwrap_or("-".into());
        let _ = write!(
            s,
            "| {} | {} | 2^{} | {:.2} | {:.0} | {:.1} | {:.1} |",
            row["kernel"].as_str().unwrap_or(""),
            v,
            n.trailing_zeros(),
            f(&row["median_us"]),
            f(&row["gbps"]),
            f(&row["pct_peak"]),
            f(&row["pct_copy"]),
        );
        if has_stream {
            let _ = write!(s, " {:.1} |", f(&row["pct_stream"]));
        }
        s.push_str(if row["verified"] == true { " ✓ |" } else { " ✗ |" });
        if has_peers {
            match row.get("torch_gbps") {
                Some(t) => {
                    let _ = write!(s, " {:.0} | {:.2} |", f(t), f(&row["ratio_vs_torch"]));
                }
                None => s.push_str(" - | - |"),
            }
        }
        if has_cub {
            match row.get("cub_gbps") {
                Some(c) => {
                    let _ = write!(s, " {:.0} | {:.3} |", f(c), f(&row["ratio_vs_cub"]));
                }
                None => s.push_str(" - | - |"),
            }
        }
        s.push('\n');
    }
    s
}

fn markdown(r: &Value) -> String {
    let mut s = String::new();
    let d = &r["device"];
    let _ = writeln!(s, "# Element-wise add: bandwidth report\n");
    let _ = writeln!(
        s,
        "- GPU: **{}** (sm_{}, {} SMs, L2 {} MiB), driver {}",
        r["gpu"].as_str().unwrap_or(""),
        d["compute_capability"].as_str().unwrap_or("").replace('.', ""),
        d["sm_count"],
        d["l2_bytes"].as_u64().unwrap_or(0) >> 20,
        r["driver"].as_str().unwrap_or("")
    );
    let _ = writeln!(s, "- Theoretical peak: **{:.0} GB/s** (2 × {} MHz × {} bit / 8). Measured device-to-device copy: **{:.0} GB/s** ({:.1}% of peak; bytes read + written, 1 GiB, median of 20).", f(&r["peak_gbps"]), d["memory_clock_khz"].as_u64().unwrap_or(0) / 1000, d["bus_width_bits"], f(&r["copy_gbps"]), 100.0 * f(&r["copy_gbps"]) / f(&r["peak_gbps"]));
    let _ = writeln!(
        s,
        "- Commit `{}`, PTX sha256 `{}` (sm_70 module) and `{}` (sm_90 module).",
        r["git_commit"].as_str().unwrap_or(""),
        r["ptx_sha256"].as_str().unwrap_or(""),
        r["ptx_sm90_sha256"].as_str().unwrap_or("-")
    );
    let _ = writeln!(
        s,
        "- Launch floor (empty kernel): {:.2} µs per launch back to back, {:.2} µs launch + synchronize (host clock).",
        f(&r["launch_floor_us"]["back_to_back"]),
        f(&r["launch_floor_us"]["launch_and_sync"])
    );
    let _ = writeln!(s, "- Timing: CUDA events around each launch, with a spin kernel queued first so the events time the kernel and not the host launch path; median; block {} threads; every result verified bit-exact against the CPU reference before it is timed. Sizes whose working set is under 4× L2 rotate through disjoint input sets.\n", r["block"]);
    let max_n = r["rows"].as_array().and_then(|a| a.iter().filter_map(|x| x["n"].as_u64()).max()).unwrap_or(0);
    let lead: Vec<gpukern_benches::lead::LeadRow> = serde_json::from_value(r["lead"].clone()).unwrap_or_default();
    if !lead.is_empty() {
        let _ = writeln!(
            s,
            "## Lead at 2^24 and 2^28\n\n{}",
            gpukern_benches::lead::table(&lead, &[1 << 24, 1 << 28], f(&r["peak_gbps"]))
        );
        let _ = writeln!(
            s,
            "## Lead: the automatic path against the best peer\n\nCUB: {}.{} torch: {}.\n\n{}",
            r["cub_note"].as_str().unwrap_or("-"),
            r["cub_mismatch"]
                .as_object()
                .map(|m| m
                    .iter()
                    .map(|(d, w)| format!(" CUB {d} is **not bit-exact**: {}.", w.as_str().unwrap_or("")))
                    .collect::<String>())
                .unwrap_or_default(),
            r["peers_note"].as_str().unwrap_or("-"),
            gpukern_benches::lead::table(&lead, &[], f(&r["peak_gbps"]))
        );
    }
    let _ = writeln!(s, "## At n = 2^{}\n\n{}", max_n.trailing_zeros(), main_table(r, Some(max_n)));
    let _ = writeln!(s, "![GB/s vs n](report.svg)\n");
    let _ = writeln!(s, "## Kernel resources at block {} (driver's JIT of the sm_70 PTX)\n\n| kernel | registers | local bytes | blocks/SM | occupancy |\n|---|---:|---:|---:|---:|", r["block"]);
    for k in r["kernels"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0}% |",
            k["kernel"].as_str().unwrap_or(""),
            k["registers"],
            k["local_bytes"],
            k["blocks_per_sm"],
            100.0 * f(&k["occupancy"])
        );
    }
    let _ = writeln!(s, "\n## Roofline\n\nOne add per element: arithmetic intensity 1/(3·size) FLOP/byte. The FP32 add peak ({:.0} GFLOP/s) over the copy bandwidth puts the ridge at {:.1} FLOP/byte, far right of add.\n\n| dtype | FLOP/byte | bandwidth-bound GFLOP/s | compute peak GFLOP/s | memory-bound by |\n|---|---:|---:|---:|---:|", r["roofline"][0]["fp32_add_peak_gflops"].as_f64().unwrap_or(0.0), r["roofline"][0]["ridge_flops_per_byte"].as_f64().unwrap_or(0.0));
    for k in r["roofline"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | {:.4} | {:.0} | {:.0} | {:.0}× |",
            k["dtype"].as_str().unwrap_or(""),
            f(&k["flops_per_byte"]),
            f(&k["bandwidth_bound_gflops"]),
            f(&k["fp32_add_peak_gflops"]),
            f(&k["memory_bound_by"])
        );
    }
    let _ = writeln!(s, "\n## Automatic choice vs the best variant\n\n| dtype | n | chose | GB/s | best | best GB/s | auto/best |\n|---|---|---|---:|---|---:|---:|");
    for k in r["auto"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {} | {:.0} | {} | {:.0} | {:.1}% |",
            k["dtype"].as_str().unwrap_or(""),
            k["n"].as_u64().unwrap_or(0).trailing_zeros(),
            k["chosen"].as_str().unwrap_or(""),
            f(&k["gbps"]),
            k["best_kernel"].as_str().unwrap_or(""),
            f(&k["best_gbps"]),
            f(&k["auto_vs_best_pct"])
        );
    }
    let _ = writeln!(
        s,
        "\n## Block-size sweep at n = 2^{} (GB/s; * = the seed article's configuration)\n",
        max_n.trailing_zeros()
    );
    let blocks = [32, 64, 128, 256, 512, 1024];
    let _ = writeln!(
        s,
        "| kernel | {} |\n|---|{}",
        blocks.map(|b| b.to_string()).join(" | "),
        "---:|".repeat(blocks.len())
    );
    let mut by_kernel: BTreeMap<String, Vec<(u64, f64, bool)>> = BTreeMap::new();
    for k in r["block_sweep"].as_array().into_iter().flatten() {
        by_kernel.entry(k["kernel"].as_str().unwrap_or("").to_string()).or_default().push((
            k["block"].as_u64().unwrap_or(0),
            f(&k["gbps"]),
            k["seed_config"] == true,
        ));
    }
    for v in Variant::ALL {
        if let Some(cells) = by_kernel.get(v.name()) {
            let c: Vec<String> = blocks
                .iter()
                .map(|b| {
                    cells
                        .iter()
                        .find(|x| x.0 == *b)
                        .map(|x| format!("{:.0}{}", x.1, if x.2 { "*" } else { "" }))
                        .unwrap_or("-".into())
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", v.name(), c.join(" | "));
        }
    }
    let _ = writeln!(s, "\n## Grid-size sweep, widest variants (GB/s; grid capped at k blocks per SM, grid-stride loop covers the rest)\n\n| kernel | n | 1 | 2 | 4 | 8 | 16 | 64 | uncapped |\n|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut by_kn: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    for k in r["grid_sweep"].as_array().into_iter().flatten() {
        by_kn
            .entry((k["kernel"].as_str().unwrap_or("").to_string(), k["n"].as_u64().unwrap_or(0)))
            .or_default()
            .push(f(&k["gbps"]));
    }
    for ((k, n), g) in &by_kn {
        let _ = writeln!(
            s,
            "| {k} | 2^{} | {} |",
            n.trailing_zeros(),
            g.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" | ")
        );
    }
    let _ = writeln!(s, "\n## Launch-bound sizes: µs per add\n\nkernel only = spin-isolated event time (as in the tables above); single launch = event time on an idle GPU, so it includes the launch path; back-to-back = 100 launches on one stream; graph = 100 adds captured in one CUDA graph and replayed.\n\n| kernel | n | kernel only | single launch | back-to-back | graph | graph GB/s |\n|---|---|---:|---:|---:|---:|---:|");
    for k in r["batched"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |",
            k["kernel"].as_str().unwrap_or(""),
            k["n"].as_u64().unwrap_or(0).trailing_zeros(),
            f(&k["kernel_us"]),
            f(&k["single_us"]),
            f(&k["batched_us_per_op"]),
            f(&k["graph_us_per_op"]),
            f(&k["graph_gbps"])
        );
    }
    if r["cpu"].as_array().is_some_and(|a| !a.is_empty()) {
        let _ = writeln!(s, "\n## CPU baseline (`c[i] = a[i] + b[i]` in Rust, host clock, median)\n\n| dtype | n | CPU 1 thread GB/s | CPU {} threads GB/s | GPU best GB/s | speedup vs 1 thread | vs all threads |\n|---|---|---:|---:|---:|---:|---:|", r["cpu"][0]["threads"]);
        for k in r["cpu"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "| {} | 2^{} | {:.1} | {:.1} | {:.0} | {:.1}× | {:.1}× |",
                k["dtype"].as_str().unwrap_or(""),
                k["n"].as_u64().unwrap_or(0).trailing_zeros(),
                f(&k["cpu_1t_gbps"]),
                f(&k["cpu_all_gbps"]),
                f(&k["gpu_best_gbps"]),
                f(&k["speedup_vs_1t"]),
                f(&k["speedup_vs_all"])
            );
        }
    }
    studies_markdown(&mut s, r);
    let bulk: Vec<gpukern_benches::hopper::TuneRow> = serde_json::from_value(r["tuning"].clone()).unwrap_or_default();
    let ceiling: Vec<gpukern_benches::hopper::CeilingRow> =
        serde_json::from_value(r["ceiling"].clone()).unwrap_or_default();
    let foreach: Vec<gpukern_benches::hopper::ForeachRow> =
        serde_json::from_value(r["foreach"].clone()).unwrap_or_default();
    gpukern_benches::hopper::render(&mut s, &bulk, &ceiling, &foreach, f(&r["copy_gbps"]), f(&r["peak_gbps"]));
    let _ = writeln!(s, "\n## Peers\n\n{}\n", r["peers_note"].as_str().unwrap_or(""));
    let _ = writeln!(s, "## All sizes\n\n{}", main_table(r, None));
    s
}

/// The GB/s-vs-n chart, from the report's JSON alone (so `render` can redraw it).
fn plot(r: &Value) -> String {
    let mut series: Vec<Series> = Vec::new();
    let rows: Vec<&Value> = r["rows"].as_array().into_iter().flatten().collect();
    for v in Variant::ALL {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|x| x["kernel"] == v.name())
            .map(|x| ((x["n"].as_u64().unwrap_or(1) as f64).log2(), f(&x["gbps"])))
            .collect();
        if !pts.is_empty() {
            let label = match v.seed_version() {
                Some(k) => format!("V{k} {}", v.name()),
                None => v.name().to_string(),
            };
            series.push(Series { label, points: pts });
        }
    }
    let levels = [
        Level { label: "theoretical peak".into(), value: f(&r["peak_gbps"]) },
        Level { label: "measured copy".into(), value: f(&r["copy_gbps"]) },
    ];
    chart(&format!("Element-wise add on {}: GB/s vs n", r["gpu"].as_str().unwrap_or("GPU")), &series, &levels)
}

/// `report render --from report.json --out DIR`: redraws report.md and report.svg
/// from a report's JSON, without a GPU.
fn render(args: &[String]) -> Result<(), String> {
    let get = |k: &str| {
        args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned().ok_or(format!("render needs {k}"))
    };
    let (from, out) = (get("--from")?, PathBuf::from(get("--out")?));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&from).map_err(|e| format!("{from}: {e}"))?)
        .map_err(|e| format!("{from}: {e}"))?;
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    std::fs::write(out.join("report.md"), markdown(&r)).map_err(|e| e.to_string())?;
    std::fs::write(out.join("report.svg"), plot(&r)).map_err(|e| e.to_string())?;
    println!("rendered {}/report.md and report.svg from {from}", out.display());
    Ok(())
}

/// `report verify-record --cases FILE --log FILE --command CMD --out FILE`
fn verify_record(args: &[String]) -> Result<(), String> {
    let get = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .ok_or(format!("verify-record needs {k}"))
    };
    let (cases_path, log_path, command, out) = (get("--cases")?, get("--log")?, get("--command")?, get("--out")?);
    let gpu = open_gpu(0)?;
    let cases_text = std::fs::read_to_string(&cases_path).unwrap_or_default();
    let cases: Vec<Value> = cases_text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    // A skipped case (too little memory) is neither a pass nor a failure: it is
    // listed with its reason so that the record shows what did not run.
    let skipped: Vec<&Value> = cases.iter().filter(|c| c["skipped"] == true).collect();
    let failed: Vec<&Value> = cases.iter().filter(|c| c["ok"] != true && c["skipped"] != true).collect();
    let log = std::fs::read_to_string(&log_path).map_err(|e| format!("{log_path}: {e}"))?;
    // libtest summary lines: "test result: ok. 19 passed; 0 failed; 0 ignored; ..."
    let (mut passed, mut failed_tests, mut ignored) = (0u64, 0u64, 0u64);
    for line in log.lines().filter(|l| l.starts_with("test result:")) {
        let num = |key: &str| {
            line.split(';')
                .find(|p| p.contains(key))
                .and_then(|p| {
                    p.split_whitespace()
                        .rev()
                        .nth(1)
                        .and_then(|x| x.parse::<u64>().ok())
                        .or_else(|| p.split_whitespace().find_map(|x| x.parse::<u64>().ok()))
                })
                .unwrap_or(0)
        };
        passed += num(" passed");
        failed_tests += num(" failed");
        ignored += num(" ignored");
    }
    let failing_tests: Vec<&str> = log.lines().filter(|l| l.starts_with("test ") && l.ends_with("FAILED")).collect();
    let record = json!({
        "gpu": gpu.info().name,
        "driver": driver_string(&gpu),
        "git_commit": git_commit(),
        "ptx_sha256": sha256_hex(gpukern::PTX.as_bytes()),
        "ptx_sm90_sha256": sha256_hex(gpukern::PTX_SM90.as_bytes()),
        "ptx_sm90_sha256": sha256_hex(gpukern::PTX_SM90.as_bytes()),
        "command": command,
        "cases": cases.len(),
        "cases_passed": cases.len() - failed.len() - skipped.len(),
        "failures": failed.len(),
        "failed_cases": failed,
        "skipped": skipped.len(),
        "skipped_cases": skipped,
        "tests_passed": passed,
        "tests_failed": failed_tests,
        "tests_ignored": ignored,
        "failing_tests": failing_tests,
    });
    std::fs::write(&out, serde_json::to_string_pretty(&record).unwrap_or_default())
        .map_err(|e| format!("{out}: {e}"))?;
    println!(
        "verify record: {} cases, {} failures, {} skipped; tests {passed} passed, {failed_tests} failed, {ignored} ignored -> {out}",
        cases.len(),
        failed.len(),
        skipped.len()
    );
    if !failed.is_empty() || failed_tests > 0 {
        return Err("verification failed".into());
    }
    Ok(())
}

fn studies_markdown(s: &mut String, r: &Value) {
    let all: Vec<&Value> = r["studies"].as_array().into_iter().flatten().collect();
    if all.is_empty() {
        return;
    }
    let fam = |f: &'static str| all.iter().copied().filter(move |x| x["family"] == f);
    let ok = |x: &Value| if x["verified"] == true { "✓" } else { "✗" };
    let _ = writeln!(s, "\n## Seed 003: performance-engineering studies\n");
    let _ = writeln!(s, "### Matrix product (f32, square, FMA in f32; checked against f64 on sampled rows, ‖ΔC‖/‖C‖ ≤ 1e-5)\n\n| kernel | size | median ms | GFLOP/s | vs naive | rel. error | verified |\n|---|---|---:|---:|---:|---:|---|");
    for x in fam("matmul") {
        let _ = writeln!(
            s,
            "| {} | {}³ | {:.3} | {:.0} | {:.2}× | {:.1e} | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["m"],
            f(&x["median_us"]) / 1e3,
            f(&x["gflops"]),
            f(&x["speedup_vs_naive"]),
            f(&x["rel_error"]),
            ok(x)
        );
    }
    for p in r["peer_matmul"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| torch.matmul (cuBLAS, TF32 off) | {}³ | {:.3} | {:.0} | | | |",
            p["size"],
            f(&p["median_us"]) / 1e3,
            f(&p["gflops"])
        );
    }
    let _ = writeln!(s, "\n### Count equal (i32; one atomic per match vs per block)\n\n| kernel | n | matches | median µs | GB/s | vs atomic | exact |\n|---|---|---:|---:|---:|---:|---|");
    for x in fam("count_eq") {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.0}% | {:.1} | {:.0} | {:.2}× | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["n"].as_u64().unwrap_or(0).trailing_zeros(),
            100.0 * f(&x["match_rate"]),
            f(&x["median_us"]),
            f(&x["gbps"]),
            f(&x["speedup_vs_naive"]),
            ok(x)
        );
    }
    let _ = writeln!(s, "\n### Coalescing (f32 copy, warp lanes `stride` elements apart; GB/s of useful data)\n\n| stride | n | median µs | useful GB/s | slowdown vs stride 1 | exact |\n|---:|---|---:|---:|---:|---|");
    for x in fam("coalesce") {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.1} | {:.0} | {:.1}× | {} |",
            x["stride"],
            x["n"].as_u64().unwrap_or(0).trailing_zeros(),
            f(&x["median_us"]),
            f(&x["gbps"]),
            f(&x["slowdown_vs_stride_1"]),
            ok(x)
        );
    }
    let _ = writeln!(s, "\n### Transpose (f32; bank conflicts and padding)\n\n| kernel | size | median µs | GB/s | vs naive | exact |\n|---|---|---:|---:|---:|---|");
    for x in fam("transpose") {
        let _ = writeln!(
            s,
            "| {} | {}² | {:.1} | {:.0} | {:.2}× | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["rows"],
            f(&x["median_us"]),
            f(&x["gbps"]),
            f(&x["speedup_vs_naive"]),
            ok(x)
        );
    }
    let _ = writeln!(s, "\n### Fusion (f32; fused kernels round each operation separately, no FMA, so they give the unfused bits)\n\n| pipeline | n | median µs | bytes moved | ideal bytes | GB/s | time vs ideal | speedup | same bits |\n|---|---|---:|---:|---:|---:|---:|---:|---|");
    for x in fam("fusion") {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.1} | {} MB | {} MB | {:.0} | {:.2}× | {:.2}× | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["n"].as_u64().unwrap_or(0).trailing_zeros(),
            f(&x["median_us"]),
            x["bytes_moved"].as_u64().unwrap_or(0) / 1_000_000,
            x["ideal_bytes"].as_u64().unwrap_or(0) / 1_000_000,
            f(&x["gbps"]),
            f(&x["vs_ideal_time"]),
            f(&x["speedup_vs_unfused"]),
            ok(x)
        );
    }
}
