//! `bundle`: release test, bench, example and report executables, both PTX modules, the
//! peers' sources and `run.sh` in one folder that runs on a GPU machine without Rust.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ptx::{build_ptx, MODULES, TRACKED_PTX};
use super::{cargo, root, sha256, Res, EXAMPLE};

/// Runs `cargo <args> --message-format=json` and returns (name, executable) of every
/// artifact that has one.
fn executables(args: &[&str], want: Want) -> Res<Vec<(String, PathBuf)>> {
    let mut c = cargo();
    c.args(args).arg("--message-format=json-render-diagnostics").stderr(std::process::Stdio::inherit());
    let out = c.output().map_err(|e| format!("{e}"))?;
    if !out.status.success() {
        return Err(format!("cargo {} failed", args.join(" ")));
    }
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" {
            continue;
        }
        if let Some(exe) = v["executable"].as_str() {
            let kinds = v["target"]["kind"].as_array().cloned().unwrap_or_default();
            let keep = match want {
                Want::TestHarnesses => v["profile"]["test"] == true,
                Want::Benches => kinds.iter().any(|k| k == "bench"),
                Want::Binaries => v["profile"]["test"] != true,
            };
            if !keep {
                continue; // e.g. a plain binary built alongside the test harnesses
            }
            found.push((artifact_name(&v), PathBuf::from(exe)));
        }
    }
    Ok(found)
}

/// Which executables of a cargo run to keep.
#[derive(Clone, Copy)]
enum Want {
    TestHarnesses,
    Benches,
    Binaries,
}

/// `<package>-<target>` for a compiler-artifact message. Package ids look like
/// `path+file:///…/host#gpukern@0.1.0`, or `path+file:///…/xtask#0.1.0` when the
/// package is named after its folder.
fn artifact_name(v: &serde_json::Value) -> String {
    let id = v["package_id"].as_str().unwrap_or("");
    let (path, tail) = id.rsplit_once('#').unwrap_or((id, ""));
    let pkg = match tail.split_once('@') {
        Some((name, _)) => name,
        None => path.rsplit('/').next().unwrap_or("pkg"),
    };
    format!("{pkg}-{}", v["target"]["name"].as_str().unwrap_or("bin"))
}

pub(crate) fn bundle(out: &Path) -> Res {
    let out = if out.is_absolute() { out.to_path_buf() } else { root().join(out) };
    build_ptx(true)?;
    let _ = std::fs::remove_dir_all(&out);
    for sub in ["tests", "bench", "examples"] {
        std::fs::create_dir_all(out.join(sub)).map_err(|e| e.to_string())?;
    }
    let copy = |from: &Path, to: PathBuf| {
        std::fs::copy(from, &to).map(|_| ()).map_err(|e| format!("copy {} -> {}: {e}", from.display(), to.display()))
    };
    // gpukern-build's tests need a Rust toolchain, which the GPU machine lacks (CI runs them).
    let tests = ["test", "--release", "--workspace", "--exclude", "gpukern-build", "--no-run"];
    for (name, exe) in executables(&tests, Want::TestHarnesses)? {
        copy(&exe, out.join("tests").join(&name))?;
    }
    for (name, exe) in executables(&["bench", "--package", "gpukern-benches", "--benches", "--no-run"], Want::Benches)?
    {
        copy(&exe, out.join("bench").join(&name))?;
    }
    for (_, exe) in
        executables(&["build", "--release", "--package", "gpukern-benches", "--bin", "report"], Want::Binaries)?
    {
        copy(&exe, out.join("report"))?;
    }
    // The examples, the cudarc one included (its feature loads the driver at run time).
    let examples = ["build", "--release", "--package", "gpukern", "--features", "cudarc", "--examples"];
    for (name, exe) in executables(&examples, Want::Binaries)? {
        copy(&exe, out.join("examples").join(&name))?;
    }
    // The worked example: its GPU tests join the others, its program the examples.
    let manifest = root().join(EXAMPLE).display().to_string();
    let ex_tests = ["test", "--release", "--workspace", "--no-run", "--manifest-path", &manifest];
    for (name, exe) in executables(&ex_tests, Want::TestHarnesses)? {
        copy(&exe, out.join("tests").join(&name))?;
    }
    let ex_bins = ["build", "--release", "--workspace", "--bins", "--manifest-path", &manifest];
    for (name, exe) in executables(&ex_bins, Want::Binaries)? {
        copy(&exe, out.join("examples").join(&name))?;
    }
    // Symbols off (best effort, where binutils' strip exists): each executable
    // embeds both PTX modules, and the bundle travels to the GPU machine.
    for sub in ["tests", "bench", "examples"] {
        for e in std::fs::read_dir(out.join(sub)).map_err(|e| e.to_string())?.flatten() {
            let _ = Command::new("strip").arg(e.path()).status();
        }
    }
    let _ = Command::new("strip").arg(out.join("report")).status();
    let ptx = std::fs::read(root().join(TRACKED_PTX)).map_err(|e| e.to_string())?;
    let ptx90 = std::fs::read(root().join(MODULES[1].tracked)).map_err(|e| e.to_string())?;
    copy(&root().join(TRACKED_PTX), out.join("kernels_gpu.ptx"))?;
    copy(&root().join(MODULES[1].tracked), out.join("kernels_gpu_sm90.ptx"))?;
    copy(&root().join("scripts/run.sh"), out.join("run.sh"))?;
    // The peers: torch through Python, CUB as CUDA C++ source that run.sh compiles
    // with the GPU machine's nvcc when it has one.
    copy(&root().join("scripts/peers.py"), out.join("peers.py"))?;
    copy(&root().join("scripts/peers_norms.py"), out.join("peers_norms.py"))?;
    copy(&root().join("scripts/cub_peer.cu"), out.join("cub_peer.cu"))?;
    copy(&root().join("scripts/cub_reduce.cu"), out.join("cub_reduce.cu"))?;
    copy(&root().join("scripts/cub_common.cuh"), out.join("cub_common.cuh"))?;
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(root())
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(true);
    let manifest = serde_json::json!({
        "git_commit": commit,
        "git_dirty": dirty,
        "ptx_sha256": sha256(&ptx),
        "ptx_sm90_sha256": sha256(&ptx90),
    });
    std::fs::write(out.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap())
        .map_err(|e| e.to_string())?;
    println!(
        "bundle ready in {} (commit {commit}{}): run `./run.sh help` there",
        out.display(),
        if dirty { ", dirty" } else { "" }
    );
    Ok(())
}
