//! `cargo xtask <command>`: the project's automation, one binary.
//!
//! * `build-ptx [--check]`: compile `kernels-gpu` for `nvptx64-nvidia-cuda` twice
//!   (sm_70, the portable module, and sm_90 with PTX ISA 8.0, the Hopper module)
//!   and write (or compare) the tracked `ptx/kernels_gpu.ptx` and
//!   `ptx/kernels_gpu_sm90.ptx`.
//! * `test [args]`: make libcuda available, then `cargo test --workspace [args]`.
//! * `ci`: what CI runs: fmt, clippy, `build-ptx --check`, `test`.
//! * `report [args]`: the main job, `cargo run --release --bin report -- [args]`.
//! * `bundle [--out DIR]`: release test, bench and report executables plus the PTX
//!   and `run.sh` in one folder that runs on a GPU machine without Rust.
//! * `import-results DIR...`: copy a GPU run's report/verify/sanitizer files into
//!   `results/<gpu>/` and regenerate the README's results block from them.
//! * `libcuda`: print the folder used as `CUDA_LIBRARY_PATH`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};
use sha2::{Digest, Sha256};

const PTX_TARGET: &str = "nvptx64-nvidia-cuda";
const TRACKED_PTX: &str = "ptx/kernels_gpu.ptx";

/// One PTX module built from the kernel crate.
struct PtxModule {
    /// Tracked output, relative to the root.
    tracked: &'static str,
    /// Cargo target folder of its build, so the two builds never share artifacts.
    target_dir: &'static str,
    /// Target flags; `None` takes the sm_70 flags of `.cargo/config.toml`.
    rustflags: Option<&'static str>,
}

/// The portable module (every kernel but the Hopper ones), then the Hopper one.
/// `+ptx80` because `cp.async.bulk` and `mbarrier.expect_tx` need PTX ISA 8.0.
const MODULES: [PtxModule; 2] = [
    PtxModule { tracked: TRACKED_PTX, target_dir: "target/ptx", rustflags: None },
    PtxModule {
        tracked: "ptx/kernels_gpu_sm90.ptx",
        target_dir: "target/ptx90",
        rustflags: Some("-C target-cpu=sm_90 -C target-feature=+ptx80 -C panic=abort"),
    },
];

type Res<T = ()> = Result<T, String>;

/// The project's automation (`cargo xtask <command>`).
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile the kernels to PTX (sm_70 and sm_90 modules) and write the tracked files.
    BuildPtx {
        /// Only compare with the tracked PTX; fail if it is stale.
        #[arg(long)]
        check: bool,
    },
    /// The tests: make libcuda available, then `cargo test --workspace [ARGS]`.
    #[command(disable_help_flag = true)]
    Test {
        /// Passed to cargo test (e.g. `-- --include-ignored` on a GPU machine).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// What CI runs: fmt, clippy, build-ptx --check, test.
    Ci,
    /// The main job: `cargo run --release --bin report -- [ARGS]` (`cargo xtask
    /// report --help` shows the report's own options).
    #[command(disable_help_flag = true)]
    Report {
        /// Passed to the report binary.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Release test, bench and report executables, the PTX and run.sh in one
    /// folder that runs on a GPU machine without Rust.
    Bundle {
        /// Where the bundle goes.
        #[arg(long, default_value = "bundle")]
        out: PathBuf,
    },
    /// Copy a GPU run's files into results/<gpu>/ and regenerate the README's results block.
    ImportResults {
        /// Folders of the run (the report's --out, run.sh test's OUT, ...).
        #[arg(required = true)]
        dirs: Vec<String>,
    },
    /// Print the folder used as CUDA_LIBRARY_PATH.
    Libcuda,
}

fn main() -> ExitCode {
    // `test` and `report` hand their arguments on untouched (a `--` included),
    // as cargo test and the report binary expect them.
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let result = match raw.split_first() {
        Some((cmd, rest)) if cmd == "test" => test(rest),
        Some((cmd, rest)) if cmd == "report" => report(rest),
        _ => match Cli::parse().command {
            Cmd::BuildPtx { check } => build_ptx(check),
            Cmd::Test { args } => test(&args),
            Cmd::Ci => ci(),
            Cmd::Report { args } => report(&args),
            Cmd::Bundle { out } => bundle(&out),
            Cmd::ImportResults { dirs } => import_results(&dirs),
            Cmd::Libcuda => libcuda().map(|p| println!("{}", p.display())),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives one level down").to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn run(mut c: Command) -> Res {
    let status = c.status().map_err(|e| format!("could not start {c:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed ({status})", c.get_program()))
    }
}

/// Builds one PTX module of the kernels and returns the text.
fn compile_ptx(m: &PtxModule) -> Res<String> {
    let mut c = cargo();
    c.args(["build", "--release", "--package", "kernels-gpu", "--target", PTX_TARGET, "-Zbuild-std=core"])
        .args(["--target-dir", m.target_dir])
        // Stray host flags must not leak into the device build (they would change
        // the PTX): the sm_70 flags come from .cargo/config.toml, the sm_90 ones
        // from RUSTFLAGS, which cargo then uses instead of the config's.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    if let Some(flags) = m.rustflags {
        c.env("RUSTFLAGS", flags);
    }
    run(c)?;
    let out = root().join(m.target_dir).join(PTX_TARGET).join("release/kernels_gpu.ptx");
    std::fs::read_to_string(&out).map_err(|e| format!("reading {}: {e}", out.display()))
}

fn entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap_or(l).trim())
        .collect()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn build_ptx(check: bool) -> Res {
    for m in &MODULES {
        let fresh = compile_ptx(m)?;
        let name = m.tracked;
        let tracked_path = root().join(name);
        if check {
            let tracked = std::fs::read_to_string(&tracked_path).unwrap_or_default();
            if tracked != fresh {
                return Err(format!(
                    "{name} is stale: the kernels compile to different PTX; run `cargo xtask build-ptx` and commit it"
                ));
            }
            println!("{name} is up to date (sha256 {})", sha256(fresh.as_bytes()));
            continue;
        }
        std::fs::write(&tracked_path, &fresh).map_err(|e| format!("writing {}: {e}", tracked_path.display()))?;
        println!("wrote {name} ({} bytes, sha256 {})", fresh.len(), sha256(fresh.as_bytes()));
        for entry in entries(&fresh) {
            println!("  .entry {entry}");
        }
    }
    Ok(())
}

/// Makes libcuda linkable and loadable (the real driver's, or Debian's libcuda1 on
/// machines without one) and returns the `CUDA_LIBRARY_PATH` folder.
fn libcuda() -> Res<PathBuf> {
    let out = Command::new("bash")
        .arg(root().join("scripts/libcuda.sh"))
        .output()
        .map_err(|e| format!("running scripts/libcuda.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!("scripts/libcuda.sh failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A cargo command with libcuda on the link and load paths.
fn cargo_with_cuda() -> Res<Command> {
    let dir = libcuda()?;
    let lib64 = dir.join("lib64");
    let mut c = cargo();
    let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    c.env("CUDA_LIBRARY_PATH", &dir).env(
        "LD_LIBRARY_PATH",
        if ld.is_empty() { lib64.display().to_string() } else { format!("{}:{ld}", lib64.display()) },
    );
    Ok(c)
}

fn test(extra: &[String]) -> Res {
    let mut c = cargo_with_cuda()?;
    c.args(["test", "--workspace"]).args(extra);
    run(c)
}

fn ci() -> Res {
    let mut c = cargo();
    c.args(["fmt", "--all", "--", "--check"]);
    run(c)?;
    let mut c = cargo_with_cuda()?;
    c.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    run(c)?;
    build_ptx(true)?;
    test(&[])
}

fn report(args: &[String]) -> Res {
    let mut c = cargo_with_cuda()?;
    c.args(["run", "--quiet", "--release", "--package", "gpukern-benches", "--bin", "report", "--"]).args(args);
    // The report prints its own one-line error (e.g. no GPU); pass its status on
    // without adding a second line.
    let status = c.status().map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// Runs `cargo <args> --message-format=json` and returns (name, executable) of every
/// artifact that has one.
fn executables(args: &[&str], want: Want) -> Res<Vec<(String, PathBuf)>> {
    let mut c = cargo_with_cuda()?;
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

fn bundle(out: &Path) -> Res {
    let out = if out.is_absolute() { out.to_path_buf() } else { root().join(out) };
    build_ptx(true)?;
    let _ = std::fs::remove_dir_all(&out);
    for sub in ["tests", "bench"] {
        std::fs::create_dir_all(out.join(sub)).map_err(|e| e.to_string())?;
    }
    let copy = |from: &Path, to: PathBuf| {
        std::fs::copy(from, &to).map(|_| ()).map_err(|e| format!("copy {} -> {}: {e}", from.display(), to.display()))
    };
    for (name, exe) in executables(&["test", "--release", "--workspace", "--no-run"], Want::TestHarnesses)? {
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
    let ptx = std::fs::read(root().join(TRACKED_PTX)).map_err(|e| e.to_string())?;
    let ptx90 = std::fs::read(root().join(MODULES[1].tracked)).map_err(|e| e.to_string())?;
    copy(&root().join(TRACKED_PTX), out.join("kernels_gpu.ptx"))?;
    copy(&root().join(MODULES[1].tracked), out.join("kernels_gpu_sm90.ptx"))?;
    copy(&root().join("scripts/run.sh"), out.join("run.sh"))?;
    // The peers: torch through Python, CUB as CUDA C++ source that run.sh compiles
    // with the GPU machine's nvcc when it has one.
    copy(&root().join("scripts/peers.py"), out.join("peers.py"))?;
    copy(&root().join("scripts/cub_peer.cu"), out.join("cub_peer.cu"))?;
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

/// Files a GPU run may produce that belong under `results/<gpu>/`.
const RESULT_FILES: [&str; 9] = [
    "report.json",
    "report.md",
    "report.svg",
    "roofline.svg",
    "bars.svg",
    "verify.json",
    "sanitizer.json",
    "cases.jsonl",
    "bench.log",
];

fn import_results(dirs: &[String]) -> Res {
    if dirs.is_empty() {
        return Err("give the folders of a GPU run (e.g. the report's --out and run.sh test's OUT)".into());
    }
    let mut gpu_dir: Option<PathBuf> = None;
    let mut files = Vec::new();
    for d in dirs {
        for f in RESULT_FILES {
            let p = Path::new(d).join(f);
            if p.is_file() {
                if f.ends_with(".json") && gpu_dir.is_none() {
                    let v: serde_json::Value =
                        serde_json::from_str(&std::fs::read_to_string(&p).map_err(|e| e.to_string())?)
                            .map_err(|e| format!("{}: {e}", p.display()))?;
                    if let Some(g) = v["gpu"].as_str() {
                        let slug: String =
                            g.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
                        gpu_dir = Some(root().join("results").join(slug.trim_matches('-')));
                    }
                }
                files.push((f, p));
            }
        }
    }
    let dest = gpu_dir.ok_or("no report.json or verify.json with a `gpu` field in those folders")?;
    std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
    for (name, from) in &files {
        let to = dest.join(name);
        if to.canonicalize().ok() == from.canonicalize().ok() {
            continue; // importing the results folder itself: nothing to copy
        }
        if to.exists() {
            // Copies of read-only fetched files are read-only too; replace them.
            std::fs::remove_file(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        }
        std::fs::copy(from, &to).map_err(|e| format!("copy {}: {e}", from.display()))?;
        let mut perms = std::fs::metadata(&to).map_err(|e| e.to_string())?.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&to, perms).map_err(|e| e.to_string())?;
        println!("{} -> {}", from.display(), dest.join(name).display());
    }
    readme_results(&dest)
}

/// Rewrites the README between the results markers: the n = max table of
/// report.md and the plot, so the README never drifts from the committed results.
fn readme_results(dest: &Path) -> Res {
    let md = std::fs::read_to_string(dest.join("report.md")).map_err(|e| format!("report.md: {e}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dest.join("report.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let start = md.find("## At n = ").ok_or("report.md has no `## At n =` section")?;
    let section = &md[start..];
    let table: String = section.lines().skip(2).take_while(|l| l.starts_with('|')).collect::<Vec<_>>().join("\n");
    let rel = dest.strip_prefix(root()).unwrap_or(dest).display().to_string();
    let heading = section.lines().next().unwrap_or("").trim_start_matches("## ");
    // The lead table (automatic path vs the best of CUB and torch), when the run had peers.
    let lead = md
        .find("## Lead at 2^24 and 2^28")
        .map(|i| {
            let t: Vec<&str> = md[i..].lines().skip(2).take_while(|l| l.starts_with('|')).collect();
            format!("Lead of the automatic path over the best peer (CUB `DeviceTransform`, `torch.add`), same run:\n\n{}\n\n", t.join("\n"))
        })
        .unwrap_or_default();
    // The other plots, when the run drew them.
    let extra: String =
        [("roofline.svg", "Roofline"), ("bars.svg", "Every variant at the largest n, beside the peers")]
            .iter()
            .filter(|(f, _)| dest.join(f).is_file())
            .map(|(f, alt)| format!("![{alt}]({rel}/{f})\n\n"))
            .collect();
    let block = format!(
        "<!-- results:begin (written by `cargo xtask import-results`; do not edit) -->\n\
         Measured on **{}**, driver {}, commit `{}`; theoretical peak {:.0} GB/s, measured device-to-device copy {:.0} GB/s.\n\n\
         {lead}{heading}:\n\n{table}\n\n\
         ![GB/s vs n]({rel}/report.svg)\n\n{extra}Full report: [{rel}/report.md]({rel}/report.md).\n<!-- results:end -->",
        json["gpu"].as_str().unwrap_or("?"),
        json["driver"].as_str().unwrap_or("?"),
        json["git_commit"].as_str().unwrap_or("?").get(..12).unwrap_or("?"),
        json["peak_gbps"].as_f64().unwrap_or(0.0),
        json["copy_gbps"].as_f64().unwrap_or(0.0),
    );
    let readme_path = root().join("README.md");
    let readme = std::fs::read_to_string(&readme_path).map_err(|e| e.to_string())?;
    let (Some(a), Some(b)) = (readme.find("<!-- results:begin"), readme.find("<!-- results:end -->")) else {
        return Err("README.md has no results markers".into());
    };
    let new = format!("{}{}{}", &readme[..a], block, &readme[b + "<!-- results:end -->".len()..]);
    std::fs::write(&readme_path, new).map_err(|e| e.to_string())?;
    println!("README.md results block regenerated from {rel}");
    Ok(())
}
