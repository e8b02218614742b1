//! CUB as a peer: builds `cub_peer.cu` with the machine's `nvcc` (when there is
//! one), runs it over the report's sizes and reads its JSON. Its output is
//! checked twice: in full at every size against its own host reference, and on a
//! sample (n = 2^20 + 3, random bits and special values) against gpukern's CPU
//! reference here, like every other row of the report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::Dtype;

/// What the peer measured.
#[derive(Clone, Debug, Default)]
pub struct CubPeer {
    /// GB/s by (dtype, n).
    pub gbps: BTreeMap<(String, usize), f64>,
    /// Per dtype: did every size match the host reference and the sample match
    /// gpukern's reference.
    pub verified: BTreeMap<String, bool>,
    /// Per dtype that failed: the first differing element of the sample.
    pub mismatch: BTreeMap<String, String>,
    /// What ran, or why nothing did.
    pub note: String,
    /// The built executable, for more rounds.
    pub exe: Option<PathBuf>,
}

/// `file` (a program in scripts/) beside the executable, under ./scripts or
/// beside the crate.
fn source(file: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join(file)));
    [
        beside,
        Some(PathBuf::from("scripts").join(file)),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(file)),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

fn nvcc() -> Option<PathBuf> {
    let on_path = Command::new("nvcc").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if on_path {
        return Some(PathBuf::from("nvcc"));
    }
    ["/usr/local/cuda/bin/nvcc"].into_iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Builds `cub_peer.cu` for the device's architecture into `out`; the
/// executable's path, or why there is none.
pub fn build(compute_capability: (u32, u32), out: &Path) -> Result<PathBuf, String> {
    build_program("cub_peer", "DeviceTransform", compute_capability, out)
}

/// Builds `scripts/<stem>.cu` (CUB's `what`) for the device's architecture into
/// `out/<stem>`, with the flags of `cub_peer`; the executable's path, or why
/// there is none.
pub fn build_program(stem: &str, what: &str, compute_capability: (u32, u32), out: &Path) -> Result<PathBuf, String> {
    let src = source(&format!("{stem}.cu")).ok_or(format!("{stem}.cu not found"))?;
    let nvcc = nvcc().ok_or("no nvcc on this machine: CUB was not built, so its column is absent")?;
    let exe = out.join(stem);
    let arch = format!("-arch=sm_{}{}", compute_capability.0, compute_capability.1);
    eprintln!("peers: building CUB's {what} with {} {arch} ...", nvcc.display());
    let built = Command::new(&nvcc).args(["-O3", "-std=c++17", &arch]).arg(&src).arg("-o").arg(&exe).output();
    match built {
        Ok(o) if o.status.success() => Ok(exe),
        Ok(o) => Err(format!("nvcc failed: {}", String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or(""))),
        Err(err) => Err(format!("could not run nvcc: {err}")),
    }
}

/// Runs the built peer over n = 2^min ..= 2^max with inputs rotated (cold) and,
/// with `warm_max`, over 2^min ..= 2^warm_max on one input set (warm): GB/s by
/// (dtype, n, warm).
pub fn time_rows(
    exe: &Path,
    min_log2: u32,
    max_log2: u32,
    warm_max: Option<u32>,
    out: &Path,
) -> Result<BTreeMap<(String, usize, bool), f64>, String> {
    let mut args = vec![min_log2.to_string(), max_log2.to_string(), out.display().to_string()];
    args.extend(warm_max.map(|w| w.to_string()));
    let ran = Command::new(exe).args(&args).output().map_err(|e| format!("could not run cub_peer: {e}"))?;
    if !ran.status.success() {
        return Err(format!("cub_peer failed: {}", String::from_utf8_lossy(&ran.stderr).lines().last().unwrap_or("")));
    }
    let v: serde_json::Value = serde_json::from_slice(&ran.stdout).map_err(|e| e.to_string())?;
    let mut rows = BTreeMap::new();
    for r in v["rows"].as_array().into_iter().flatten() {
        if let (Some(d), Some(n), Some(g)) = (r["dtype"].as_str(), r["n"].as_u64(), r["gbps"].as_f64()) {
            rows.insert((d.to_string(), n as usize, r["warm"] == true), g);
        }
    }
    for d in Dtype::ALL {
        let _ = std::fs::remove_file(out.join(format!("cub_sample_{}.bin", d.name())));
    }
    Ok(rows)
}

/// Builds and runs the peer for n = 2^min ..= 2^max; writes into `out`.
pub fn run(min_log2: u32, max_log2: u32, compute_capability: (u32, u32), out: &Path) -> CubPeer {
    let mut peer = CubPeer::default();
    let exe = match build(compute_capability, out) {
        Ok(exe) => exe,
        Err(why) => {
            peer.note = why;
            return peer;
        }
    };
    let arch = format!("-arch=sm_{}{}", compute_capability.0, compute_capability.1);
    eprintln!("peers: timing cub::DeviceTransform::Transform ...");
    let ran = Command::new(&exe).args([min_log2.to_string(), max_log2.to_string()]).arg(out).output();
    peer.exe = Some(exe);
    let stdout = match ran {
        Ok(o) if o.status.success() => o.stdout,
        Ok(o) => {
            peer.note = format!("cub_peer failed: {}", String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or(""));
            return peer;
        }
        Err(err) => {
            peer.note = format!("could not run cub_peer: {err}");
            return peer;
        }
    };
    let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap_or_default();
    for r in v["rows"].as_array().into_iter().flatten() {
        if let (Some(d), Some(n), Some(g)) = (r["dtype"].as_str(), r["n"].as_u64(), r["gbps"].as_f64()) {
            if r["warm"] == true {
                continue;
            }
            peer.gbps.insert((d.to_string(), n as usize), g);
            let ok = r["verified"] == true;
            let e = peer.verified.entry(d.to_string()).or_insert(true);
            *e &= ok;
        }
    }
    for d in Dtype::ALL {
        let sample = out.join(format!("cub_sample_{}.bin", d.name()));
        let checked = match d {
            Dtype::F32 => check_sample::<f32>(&sample),
            Dtype::F16 => check_sample::<f16>(&sample),
            Dtype::Bf16 => check_sample::<bf16>(&sample),
        };
        let e = peer.verified.entry(d.name().to_string()).or_insert(true);
        *e &= checked.is_ok();
        if let Err(why) = checked {
            peer.mismatch.insert(d.name().to_string(), why);
        }
        let _ = std::fs::remove_file(&sample);
    }
    peer.note = format!(
        "CUB {} (CUDA runtime {}), cub::DeviceTransform::Transform with cuda::std::plus<>, built with {arch}; \
         CUDA events behind a spin, median, same sizes and input rotation as the report",
        v["cub_version"], v["cuda_runtime"]
    );
    peer
}

/// Ok when the sample file holds a, b, c with c the exact sum of a and b; else
/// what differs (count and first element).
fn check_sample<T: ReferenceAdd>(path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|err| format!("{}: {err}", path.display()))?;
    let size = T::DTYPE.size();
    if bytes.is_empty() || bytes.len() % (3 * size) != 0 {
        return Err(format!("{}: {} bytes is not three arrays", path.display(), bytes.len()));
    }
    let n = bytes.len() / (3 * size);
    let read = |i: usize| -> T {
        let b = &bytes[i * size..(i + 1) * size];
        let bits = if size == 4 {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        } else {
            u16::from_le_bytes([b[0], b[1]]) as u32
        };
        T::from_bits32(bits)
    };
    let a: Vec<T> = (0..n).map(read).collect();
    let b: Vec<T> = (n..2 * n).map(read).collect();
    let c: Vec<T> = (2 * n..3 * n).map(read).collect();
    let want = reference::add(&a, &b);
    let Some(i) = reference::first_mismatch(&c, &want) else { return Ok(()) };
    let bad = (0..n).filter(|&j| reference::first_mismatch(&c[j..j + 1], &want[j..j + 1]).is_some()).count();
    Err(format!(
        "{bad} of {n} sample elements differ; first, element {i}: {:#06x} + {:#06x} gave {:#06x}, correctly rounded {:#06x}",
        a[i].to_bits32(),
        b[i].to_bits32(),
        c[i].to_bits32(),
        want[i].to_bits32()
    ))
}
