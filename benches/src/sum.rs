//! The report's `custom` section, its reduction row: the worked example's typed
//! `block_sum` (examples/custom-kernels, through `custom_kernels_app::Sum`: two
//! launches, the blocks' partials then one block over them) summing 2^24 and
//! 2^28 f32, beside CUB's `cub::DeviceReduce::Sum` (`scripts/cub_reduce.cu`,
//! built with nvcc like `cub_peer.cu`) and `torch.sum` (`peers.py --sum`), the
//! peers only with `--peers`.
//!
//! The inputs are small integers (uniform in -8..=8), so every partial sum is
//! an integer far below 2^24 and the f32 total is exact in any order: it must
//! equal the CPU's f64 sum exactly. One input set, nothing rotated (1 GiB at 2^28
//! is far past L2).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use custom_kernels_app::Sum;
use gpukern::Gpu;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{gbps, random_inputs_in, reps_for, time_op};

/// One sum at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SumRow {
    pub n: usize,
    /// The typed kernel (both launches).
    pub kernel: String,
    pub median_us: f64,
    /// 4·n bytes read over the median time.
    pub gbps: f64,
    /// CUB's `DeviceReduce::Sum` on the same n (with `--peers` and nvcc).
    #[serde(default)]
    pub cub_gbps: Option<f64>,
    /// `torch.sum` on the same n (with `--peers` and torch).
    #[serde(default)]
    pub torch_gbps: Option<f64>,
    /// Ours over CUB's GB/s.
    #[serde(default)]
    pub vs_cub: Option<f64>,
    /// Ours over torch's GB/s.
    #[serde(default)]
    pub vs_torch: Option<f64>,
    /// What the GPU summed, and the CPU's f64 sum of the same inputs.
    pub total: f64,
    pub expected: f64,
    /// `total == expected` exactly.
    pub verified: bool,
}

/// The sum's sizes inside the report's range: 2^24 and 2^28.
pub fn sizes(min_log2: u32, max_log2: u32) -> Vec<usize> {
    [24u32, 28].into_iter().filter(|k| (min_log2..=max_log2).contains(k)).map(|k| 1 << k).collect()
}

/// Integers uniform in -8..=8, as f32.
fn small_integers(n: usize, seed: u64) -> Vec<f32> {
    let mut v = random_inputs_in::<f32>(n, seed, -8.0, 9.0);
    v.par_iter_mut().for_each(|x| *x = x.floor().clamp(-8.0, 8.0));
    v
}

/// Times the example's sum at each size (no peers: see [`add_peers`]).
pub fn measure(gpu: &Gpu, sizes: &[usize]) -> Result<Vec<SumRow>, String> {
    if sizes.is_empty() {
        return Ok(Vec::new());
    }
    let e = |e: gpukern::Error| format!("custom sum: {e}");
    let module = custom_kernels_app::load(gpu).map_err(e)?;
    let stream = gpu.stream().map_err(e)?;
    let mut sum = Sum::new(gpu, &module).map_err(e)?;
    let kernel = sum.kernel().name().to_string();
    let mut rows = Vec::new();
    for &n in sizes {
        let host = small_integers(n, 31 + n as u64);
        let expected: f64 = host.par_iter().map(|&x| x as f64).sum();
        let x = gpu.upload(&host).map_err(e)?;
        drop(host);
        let bytes = 4 * n as u64;
        let ms = time_op(gpu, &stream, reps_for(bytes), 3, |s| sum.queue(gpu, x.view(), s)).map_err(e)?;
        stream.synchronize().map_err(e)?;
        let total = sum.total().map_err(e)? as f64;
        rows.push(SumRow {
            n,
            kernel: kernel.clone(),
            median_us: ms * 1e3,
            gbps: gbps(bytes, ms),
            cub_gbps: None,
            torch_gbps: None,
            vs_cub: None,
            vs_torch: None,
            total,
            expected,
            verified: total == expected,
        });
    }
    Ok(rows)
}

/// Builds `scripts/cub_reduce.cu` into `out` and times CUB's
/// `DeviceReduce::Sum` at `sizes`: GB/s by n; empty (and why, on stderr) when
/// there is no nvcc or the program failed. A CUB total that differs from its
/// own host sum is reported, not counted.
pub fn cub_sum(sizes: &[usize], compute_capability: (u32, u32), out: &Path) -> BTreeMap<usize, f64> {
    if sizes.is_empty() {
        return BTreeMap::new();
    }
    try_cub_sum(sizes, compute_capability, out).unwrap_or_else(|why| {
        eprintln!("peers: no CUB sum: {why}");
        BTreeMap::new()
    })
}

fn try_cub_sum(sizes: &[usize], compute_capability: (u32, u32), out: &Path) -> Result<BTreeMap<usize, f64>, String> {
    let exe = crate::cub::build_program("cub_reduce", "DeviceReduce::Sum", compute_capability, out)?;
    eprintln!("peers: timing cub::DeviceReduce::Sum ...");
    let logs: Vec<String> = sizes.iter().map(|n| n.trailing_zeros().to_string()).collect();
    let ran = Command::new(&exe).args(&logs).output().map_err(|e| format!("could not run cub_reduce: {e}"))?;
    if !ran.status.success() {
        return Err(format!(
            "cub_reduce failed: {}",
            String::from_utf8_lossy(&ran.stderr).lines().last().unwrap_or("")
        ));
    }
    let mut rows = BTreeMap::new();
    for line in String::from_utf8_lossy(&ran.stdout).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if let (Some(n), Some(g)) = (v["n"].as_u64(), v["gbps"].as_f64()) {
            if v["sum"].as_f64() != v["expected"].as_f64() {
                eprintln!("peers: CUB's sum at n={n} is {} (its host sum: {})", v["sum"], v["expected"]);
            }
            rows.insert(n as usize, g);
        }
    }
    Ok(rows)
}

/// Fills the peer columns (GB/s by n) and the ratios; absent peers stay null.
pub fn add_peers(rows: &mut [SumRow], cub: &BTreeMap<usize, f64>, torch: &BTreeMap<usize, f64>) {
    for r in rows {
        r.cub_gbps = cub.get(&r.n).copied();
        r.torch_gbps = torch.get(&r.n).copied();
        r.vs_cub = r.cub_gbps.map(|c| r.gbps / c);
        r.vs_torch = r.torch_gbps.map(|t| r.gbps / t);
    }
}

fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.decimals$}"))
}

/// The reduction's Markdown: a small table under the custom table.
pub fn render(s: &mut String, rows: &[SumRow]) {
    let _ = writeln!(
        s,
        "\nThe example's typed `block_sum` (two launches through `custom_kernels_app::Sum`) summing f32 integers \
         in -8..=8 (exact in any order: the total must equal the CPU's f64 sum), beside CUB's \
         `DeviceReduce::Sum` and `torch.sum` on the same n (with `--peers`); GB/s counts the 4·n bytes read.\n"
    );
    let _ = writeln!(s, "| sum | n | kernel | µs | GB/s | CUB GB/s | vs CUB | torch GB/s | vs torch | verified |");
    let _ = writeln!(s, "|---|---:|---|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        let _ = writeln!(
            s,
            "| f32 | 2^{} | `{}` | {:.1} | {:.0} | {} | {} | {} | {} | {} |",
            r.n.trailing_zeros(),
            r.kernel,
            r.median_us,
            r.gbps,
            opt(r.cub_gbps, 0),
            opt(r.vs_cub, 3),
            opt(r.torch_gbps, 0),
            opt(r.vs_torch, 3),
            if r.verified { "exact" } else { "**MISMATCH**" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_small_integers_and_rows_without_peers_read_and_render() {
        let v = small_integers(1 << 16, 3);
        assert!(v.iter().all(|x| x.fract() == 0.0 && (-8.0..=8.0).contains(x)));
        assert!(v.contains(&-8.0) && v.contains(&8.0));
        let json = r#"[{"n": 268435456, "kernel": "block_sum", "median_us": 300.0, "gbps": 3579.1,
                        "total": 12.0, "expected": 12.0, "verified": true}]"#;
        let mut rows: Vec<SumRow> = serde_json::from_str(json).expect("peer fields are optional");
        assert!(rows[0].cub_gbps.is_none() && rows[0].vs_torch.is_none());
        let mut s = String::new();
        render(&mut s, &rows);
        assert!(s.contains("| f32 | 2^28 | `block_sum` | 300.0 | 3579 | - | - | - | - | exact |"), "{s}");
        let peers = BTreeMap::from([(1usize << 28, 3579.1 / 0.9)]);
        add_peers(&mut rows, &peers, &BTreeMap::new());
        assert!((rows[0].vs_cub.unwrap() - 0.9).abs() < 1e-12 && rows[0].torch_gbps.is_none());
    }
}
