//! torch as a peer, through `scripts/peers.py` (torch.add, torch._foreach_add,
//! torch.matmul, the element-wise operations, torch.sum), timed the report's way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Opts;

pub(crate) fn peers_script() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("peers.py")));
    let candidates = [
        beside,
        Some(PathBuf::from("scripts/peers.py")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers.py")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

/// What torch measured.
#[derive(Default)]
pub struct Peers {
    /// torch.add GB/s by (dtype, n).
    pub add: BTreeMap<(String, usize), f64>,
    /// How torch was timed, or why it was not.
    pub note: String,
    /// torch.matmul rows.
    pub matmul: Vec<Value>,
    /// torch._foreach_add rows.
    pub foreach: Vec<Value>,
    /// The element-wise operations' torch equivalents: GB/s by (op, dtype, n).
    pub ops: BTreeMap<(String, String, usize), f64>,
    /// torch.sum of f32: GB/s by n (the custom section's sum row).
    pub sum: BTreeMap<usize, f64>,
}

fn failed(note: String) -> Peers {
    Peers { note, ..Peers::default() }
}

pub fn run_peers(o: &Opts, sizes: &[usize], op_sizes: &[usize], sum_sizes: &[usize]) -> Peers {
    let mut map = BTreeMap::new();
    let Some(script) = peers_script() else {
        return failed("peers.py not found".into());
    };
    let has_torch = std::process::Command::new("python3")
        .args(["-c", "import torch; assert torch.cuda.is_available()"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_torch {
        eprintln!("peers: python3 with CUDA torch not available; skipping torch.add");
        return failed("python3 with a CUDA build of torch is not available here".into());
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
        .args(if op_sizes.is_empty() {
            Vec::new()
        } else {
            let logs: Vec<String> = op_sizes.iter().map(|n| n.trailing_zeros().to_string()).collect();
            vec!["--ops".to_string(), logs.join(",")]
        })
        .args(if sum_sizes.is_empty() {
            Vec::new()
        } else {
            let logs: Vec<String> = sum_sizes.iter().map(|n| n.trailing_zeros().to_string()).collect();
            vec!["--sum".to_string(), logs.join(",")]
        })
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            for r in v["rows"].as_array().into_iter().flatten() {
                if let (Some(d), Some(n), Some(g)) = (r["dtype"].as_str(), r["n"].as_u64(), r["gbps"].as_f64()) {
                    if sizes.contains(&(n as usize)) && r["warm"] != true {
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
            let mut ops = BTreeMap::new();
            for r in v["ops"].as_array().into_iter().flatten() {
                if let (Some(op), Some(d), Some(n), Some(g)) =
                    (r["op"].as_str(), r["dtype"].as_str(), r["n"].as_u64(), r["gbps"].as_f64())
                {
                    ops.insert((op.to_string(), d.to_string(), n as usize), g);
                }
            }
            let mut sum = BTreeMap::new();
            for r in v["sum"].as_array().into_iter().flatten() {
                if let (Some(n), Some(g)) = (r["n"].as_u64(), r["gbps"].as_f64()) {
                    if r["verified"] != true {
                        eprintln!("peers: torch.sum at n={n} gave {} (exact: {})", r["sum"], r["expected"]);
                    }
                    sum.insert(n as usize, g);
                }
            }
            let matmul = v["matmul"].as_array().cloned().unwrap_or_default();
            Peers { add: map, note, matmul, foreach, ops, sum }
        }
        Ok(out) => {
            failed(format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")))
        }
        Err(e) => failed(format!("could not run python3: {e}")),
    }
}

/// GB/s by (dtype, n, warm).
pub type ByCell = BTreeMap<(String, usize, bool), f64>;

/// torch.add alone, for one round of the lead tables: n = 2^min ..= 2^max with
/// inputs rotated (cold) and, with `warm_max`, 2^min ..= 2^warm_max on one input
/// set (warm). GB/s of single launches and per launch of bursts (`--burst`).
pub fn torch_add(o: &Opts, min_log2: u32, max_log2: u32, warm_max: Option<u32>) -> Result<(ByCell, ByCell), String> {
    let script = peers_script().ok_or("peers.py not found")?;
    let dtypes: Vec<&str> = o.dtypes.iter().map(|d| d.name()).collect();
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(["--min-log2", &min_log2.to_string(), "--max-log2", &max_log2.to_string()])
        .args(["--warm-max-log2", &warm_max.unwrap_or(0).to_string()])
        .args(["--burst", &crate::workload::BURST.to_string()])
        .args(["--dtypes", &dtypes.join(","), "--device", &o.device.to_string()])
        .output()
        .map_err(|e| format!("could not run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let (mut rows, mut bursts) = (BTreeMap::new(), BTreeMap::new());
    for r in v["rows"].as_array().into_iter().flatten() {
        if let (Some(d), Some(n), Some(g)) = (r["dtype"].as_str(), r["n"].as_u64(), r["gbps"].as_f64()) {
            let key = (d.to_string(), n as usize, r["warm"] == true);
            if let Some(b) = r["burst_gbps"].as_f64() {
                bursts.insert(key.clone(), b);
            }
            rows.insert(key, g);
        }
    }
    Ok((rows, bursts))
}
