//! torch as a peer, through `scripts/peers.py` (torch.add, torch._foreach_add,
//! torch.matmul), timed the report's way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Opts;

fn peers_script() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("peers.py")));
    let candidates = [
        beside,
        Some(PathBuf::from("scripts/peers.py")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peers.py")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

/// (torch.add GB/s by (dtype, n), note, torch.matmul rows, torch._foreach_add rows)
type Peers = (BTreeMap<(String, usize), f64>, String, Vec<Value>, Vec<Value>);
pub fn run_peers(o: &Opts, sizes: &[usize]) -> Peers {
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
