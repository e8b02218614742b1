//! `candle-env`: the CUDA compiler and link libraries that candle's `cuda`
//! feature needs, from PyPI alone, in a folder of this project's own; and the
//! CI step that builds `gpukern-candle --features cuda` with them.
//!
//! candle's `cuda` feature compiles candle-kernels with `nvcc` at build time and
//! links libcuda, cuBLAS, cuRAND, cudart and NVRTC (cudarc's `dynamic-linking`).
//! The pinned wheels below lay out a toolkit under `site-packages/nvidia/cu13/`;
//! the linker needs unversioned `.so` names, which the wheels lack, and a
//! `libcuda.so`, which no wheel ships: a link-only stub, generated here from
//! cudarc's driver function names, stands in for it (soname `libcuda.so.1`, so
//! the real driver library is what loads on a GPU machine).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{cargo, root, run, Res};

/// The wheels, pinned: nvvm must match nvcc (13.0), or nvcc pulls a newer nvvm
/// whose PTX the GPU machine's driver (CUDA 13.0) cannot load.
pub const PINS: &[&str] = &[
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-cccl==13.0.85",
    "nvidia-cublas==13.0.2.14",
    "nvidia-curand==10.4.0.35",
    "nvidia-cuda-nvrtc==13.0.88",
];

/// The libraries the `cuda` build links, by unversioned name (`lib<name>.so`).
const LINKED: &[&str] = &["cublas", "cublasLt", "curand", "cudart", "nvrtc"];

/// The compute capability candle-kernels is built for (H100/H200). Without it
/// candle-kernels asks `nvidia-smi`, which a build machine lacks.
pub const COMPUTE_CAP: &str = "90";

/// The default folder: `target/candle-env` (CI passes one that outlives the clone).
pub fn default_dir() -> PathBuf {
    root().join("target").join("candle-env")
}

/// `cargo xtask candle-env [--dir DIR]`: installs what is missing, then prints
/// the environment as `export` lines (for `eval "$(cargo xtask candle-env)"`)
/// and writes them to `DIR/env.sh`.
pub fn candle_env(dir: &Path) -> Res {
    let vars = install(dir)?;
    let toolkit_bin = &vars[0].1[..vars[0].1.find(':').unwrap_or(vars[0].1.len())];
    let script: String = vars
        .iter()
        .map(|(k, v)| match k.as_str() {
            // The caller's PATH, not this process's, follows the compiler's folder.
            "PATH" => format!("export PATH='{toolkit_bin}':\"$PATH\"\n"),
            _ => format!("export {k}='{v}'\n"),
        })
        .collect();
    let file = dir.join("env.sh");
    std::fs::write(&file, &script).map_err(|e| format!("writing {}: {e}", file.display()))?;
    eprintln!("candle-env: ready; `. {}` sets:", file.display());
    print!("{script}");
    Ok(())
}

/// Makes `dir` complete (venv with the pinned wheels, link folder, stub) and
/// returns the build environment.
pub fn install(dir: &Path) -> Res<Vec<(String, String)>> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    let venv = dir.join("venv");
    let stamp = dir.join("installed.txt");
    let want = PINS.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(want.as_str()) {
        if !venv.join("bin/pip").exists() {
            eprintln!("candle-env: creating {}", venv.display());
            let mut c = Command::new("python3");
            c.args(["-m", "venv"]).arg(&venv);
            run(c).map_err(|e| format!("{e} (needs python3 with venv: apt-get install python3-venv)"))?;
        }
        eprintln!("candle-env: installing {} (about 1.2 GB)", PINS.join(" "));
        let mut c = Command::new(venv.join("bin/pip"));
        c.args(["install", "--quiet", "--disable-pip-version-check"]).args(PINS);
        run(c)?;
        std::fs::write(&stamp, &want).map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    }
    let toolkit = find_toolkit(&venv)?;
    let cuda_root = dir.join("cuda");
    let lib = cuda_root.join("lib");
    std::fs::create_dir_all(&lib).map_err(|e| format!("creating {}: {e}", lib.display()))?;
    // CUDA_ROOT looks like a toolkit: candle-kernels' build takes `include/`
    // from it, cudarc's build script the link search path `lib/`.
    for sub in ["bin", "include", "nvvm"] {
        relink(&toolkit.join(sub), &cuda_root.join(sub))?;
    }
    for name in LINKED {
        let target = versioned(&toolkit.join("lib"), name)?;
        relink(&target, &lib.join(format!("lib{name}.so")))?;
    }
    stub_libcuda(&dir, &lib)?;
    let path = format!("{}:{}", toolkit.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    Ok(vec![
        ("PATH".into(), path),
        ("CUDA_ROOT".into(), cuda_root.display().to_string()),
        ("CUDA_COMPUTE_CAP".into(), COMPUTE_CAP.into()),
        ("LIBRARY_PATH".into(), lib.display().to_string()),
    ])
}

/// `venv/lib/python3.*/site-packages/nvidia/cu13`.
fn find_toolkit(venv: &Path) -> Res<PathBuf> {
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/nvidia/cu13"))
        .find(|p| p.join("bin/nvcc").exists())
        .ok_or_else(|| format!("no site-packages/nvidia/cu13/bin/nvcc under {}", lib.display()))
}

/// The wheel's `lib<name>.so.<major>` in `lib`.
fn versioned(lib: &Path, name: &str) -> Res<PathBuf> {
    let prefix = format!("lib{name}.so.");
    let entries = std::fs::read_dir(lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|f| f.to_str()).is_some_and(|f| f.starts_with(&prefix)))
        .collect();
    // The shortest name is the soname (`libcublas.so.13`, not `libcublas.so.13.0.2.14`).
    found.sort_by_key(|p| p.as_os_str().len());
    found.into_iter().next().ok_or_else(|| format!("no {prefix}* in {}", lib.display()))
}

/// A symbolic link `link` → `target`, replacing an older one.
fn relink(target: &Path, link: &Path) -> Res {
    if !target.exists() {
        return Err(format!("{} is missing", target.display()));
    }
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).map_err(|e| format!("linking {}: {e}", link.display()))
}

/// `lib/libcuda.so`: every driver function cudarc declares, as an empty C
/// function, with soname `libcuda.so.1`. Only the linker reads it; a program
/// linked against it loads the real driver library on a GPU machine. It is
/// rebuilt when cudarc's bindings change.
fn stub_libcuda(dir: &Path, lib: &Path) -> Res {
    let sys = cudarc_driver_sys()?;
    let text = std::fs::read_to_string(&sys).map_err(|e| format!("{}: {e}", sys.display()))?;
    let mut names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("pub unsafe fn "))
        .filter_map(|l| l.split('(').next())
        .filter(|n| n.starts_with("cu") && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.len() < 100 {
        return Err(format!("found only {} driver functions in {}", names.len(), sys.display()));
    }
    let source: String = std::iter::once(format!(
        "/* Link-only stub of libcuda, generated by `cargo xtask candle-env` from {}. */\n",
        sys.display()
    ))
    .chain(names.iter().map(|n| format!("int {n}(void) {{ return 999; }}\n")))
    .collect();
    let c_file = dir.join("libcuda_stub.c");
    let out = lib.join("libcuda.so");
    if std::fs::read_to_string(&c_file).ok().as_deref() == Some(source.as_str()) && out.exists() {
        return Ok(());
    }
    std::fs::write(&c_file, &source).map_err(|e| format!("writing {}: {e}", c_file.display()))?;
    let mut c = Command::new("cc");
    c.args(["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o"]).arg(&out).arg(&c_file);
    run(c)
}

/// cudarc's `src/driver/sys/mod.rs`, from `cargo metadata`.
fn cudarc_driver_sys() -> Res<PathBuf> {
    let mut c = cargo();
    c.args(["metadata", "--format-version", "1"]);
    let out = c.output().map_err(|e| format!("could not start cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let manifest = v["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "cudarc")
        .and_then(|p| p["manifest_path"].as_str())
        .ok_or("cargo metadata lists no cudarc")?;
    let sys = Path::new(manifest).with_file_name("src/driver/sys/mod.rs");
    if sys.exists() {
        Ok(sys)
    } else {
        Err(format!("{} is missing", sys.display()))
    }
}

/// CI (on unless `GPUKERN_CI_CANDLE_CUDA=0`): `gpukern-candle` and
/// `candle-block` with their `cuda` feature built
/// (tests, examples, the block binary: compiled and linked against the stub)
/// with warnings denied, with the environment in `CI_CACHE`'s `candle-env` and
/// a target folder there too, so a machine that keeps them rebuilds only what
/// changed (a clean build is about 10 minutes, nearly all of it candle-kernels'
/// nvcc step). Clippy is not run on this build: `cargo clippy` runs
/// candle-kernels' build script (the nvcc step) again, apart from `cargo
/// build`'s; clippy covers the crate without `cuda` in the main lint step.
pub fn ci_cuda_build() -> Res {
    let cache = ci_cache();
    let vars = install(&cache.join("candle-env"))?;
    let mut c = cargo();
    c.args(["build", "-p", "gpukern-candle", "-p", "candle-block"])
        .args(["--features", "gpukern-candle/cuda,candle-block/cuda", "--tests", "--examples", "--bins"])
        .env("CARGO_TARGET_DIR", cache.join("candle-target"))
        .env("RUSTFLAGS", "-D warnings")
        .envs(vars.iter().map(|(k, v)| (k, v)));
    run(c)
}

/// Whether CI builds the `cuda` feature: yes unless `GPUKERN_CI_CANDLE_CUDA`
/// is `0`, the opt-out for a machine without python3's venv or the network to
/// PyPI. `.ci/run` reads the same variable.
pub fn ci_cuda_wanted() -> bool {
    std::env::var("GPUKERN_CI_CANDLE_CUDA").map_or(true, |v| v.trim() != "0")
}

/// Where CI keeps what outlives one run: `$GPUKERN_CI_CACHE`, else
/// `$HOME/.cache/gpukern-ci`.
fn ci_cache() -> PathBuf {
    match std::env::var_os("GPUKERN_CI_CACHE") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache/gpukern-ci"),
    }
}

/// The target folder of the `cuda` builds here, apart from the workspace's
/// (candle's `dynamic-linking` changes cudarc for everything built with it).
fn cuda_target() -> PathBuf {
    root().join("target").join("cuda")
}

/// The GPU run script of the candle bundle: unpacks the executables, puts the
/// CUDA 13 libraries of the machine's python wheels (torch's) on the loader's
/// path, and runs the GPU tests (`test`), the block example (`block`), the
/// report section `candle` into a folder (`report DIR`) or the tests under
/// compute-sanitizer (`sanitize [TOOL]`).
const RUN_SH: &str = r#"#!/usr/bin/env bash
# gpukern-candle on a GPU machine: ./run.sh test | block [ARGS] | report DIR [ARGS] | sanitize [TOOL]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/*.xz; do
    [ -e "$f" ] || continue
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "${f%.xz}"
    chmod +x "${f%.xz}"; rm -f "$f"
done
lib=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))')
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmd=${1:-test}; shift || true
case "$cmd" in
test) rc=0; for t in gpu gpu_norms; do echo "=== $t"; "$here/gpukern-candle-$t" --include-ignored --test-threads 1 "$@" || rc=1; done; exit $rc ;;
block) "$here/candle-block" "$@" ;;
report) [ $# -ge 1 ] || { echo "usage: run.sh report DIR [--reps N]" >&2; exit 2; }
    dir=$1; shift; "$here/candle-block" --report "$dir" "$@" ;;
sanitize) rc=0; for t in gpu gpu_norms; do compute-sanitizer --tool "${1:-memcheck}" --error-exitcode 1 "$here/gpukern-candle-$t" --include-ignored --test-threads 1 || rc=1; done; exit $rc ;;
*) echo "usage: run.sh test|block|report DIR|sanitize" >&2; exit 2 ;;
esac
"#;

/// `cargo xtask candle-bundle [--out DIR]`: the release GPU test executable of
/// gpukern-candle and the `candle-block` example, built with the `cuda`
/// feature (in `target/cuda`), xz-compressed, with `run.sh`.
pub fn candle_bundle(out: &Path) -> Res {
    let vars = install(&default_dir())?;
    let mut c = cargo();
    c.args(["build", "--release", "-p", "gpukern-candle", "-p", "candle-block"])
        .args(["--features", "gpukern-candle/cuda,candle-block/cuda", "--tests", "--bins"])
        .arg("--message-format=json-render-diagnostics")
        .env("CARGO_TARGET_DIR", cuda_target())
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stderr(std::process::Stdio::inherit());
    let built = c.output().map_err(|e| format!("could not start cargo: {e}"))?;
    if !built.status.success() {
        return Err(format!("the release cuda build failed ({})", built.status));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut found = 0;
    for v in
        String::from_utf8_lossy(&built.stdout).lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        let (Some(exe), Some(name)) = (v["executable"].as_str(), v["target"]["name"].as_str()) else { continue };
        // The test harnesses of tests/gpu.rs and tests/gpu_norms.rs, and the
        // example's binary (not its own unit-test harness, which has the same name).
        let dest = match (name, v["profile"]["test"] == true) {
            ("gpu", true) => "gpukern-candle-gpu",
            ("gpu_norms", true) => "gpukern-candle-gpu_norms",
            ("candle-block", false) => "candle-block",
            _ => continue,
        };
        let mut x = Command::new("xz");
        x.args(["-6", "-T0", "-c"]).arg(exe).stdout(
            std::fs::File::create(out.join(format!("{dest}.xz"))).map_err(|e| format!("{}: {e}", out.display()))?,
        );
        run(x)?;
        found += 1;
    }
    if found != 3 {
        return Err(format!("expected the gpu and gpu_norms tests and the candle-block executable, found {found}"));
    }
    let script = out.join("run.sh");
    std::fs::write(&script, RUN_SH).map_err(|e| format!("writing {}: {e}", script.display()))?;
    run({
        let mut c = Command::new("chmod");
        c.arg("+x").arg(&script);
        c
    })?;
    eprintln!("candle-bundle: {} (run.sh test | block --ops | report DIR | sanitize)", out.display());
    Ok(())
}
