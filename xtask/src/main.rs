//! `cargo xtask <command>`: the project's automation, one binary.
//!
//! * `build-ptx [--check]`: compile `kernels-gpu` for `nvptx64-nvidia-cuda` twice
//!   (sm_70, the portable module, and sm_90 with PTX ISA 8.0, the Hopper module)
//!   and write (or compare) the tracked `ptx/kernels_gpu.ptx` and
//!   `ptx/kernels_gpu_sm90.ptx`.
//! * `test [args]`: `cargo test --workspace [args]`, then the same in the worked
//!   example's workspace (`examples/custom-kernels`).
//! * `ci`: what CI runs: fmt, clippy, the docs of the four library crates
//!   (`cargo doc --no-deps`, warnings denied), `build-ptx --check`, `test`
//!   (the book's chapters are doctests, so it compiles them), the norms'
//!   error bounds on rows up to 2^24 (`norms_bounds`' ignored tests, in
//!   release), then a kernel crate built with gpukern-build under an empty
//!   `CARGO_HOME` (a fresh machine), the worked example built and tested on
//!   stable Rust, every fuzz target for 60 s, and `gpukern-candle` built
//!   with candle's `cuda` feature (`candle-env`; off with
//!   `GPUKERN_CI_CANDLE_CUDA=0`).
//! * `fuzz [--seconds N] [TARGET...]`: the cargo-fuzz targets of `fuzz/` (PTX
//!   readers, typed-signature check, graph record checks), N seconds each.
//! * `report [args]`: the main job, `cargo run --release --bin report -- [args]`.
//! * `bundle [--out DIR]`: release test, bench and report executables plus the PTX
//!   and `run.sh` in one folder that runs on a GPU machine without Rust.
//! * `candle-env [--dir DIR]`: the pinned PyPI CUDA compiler and libraries that
//!   `gpukern-candle --features cuda` builds with, a link folder and a stub
//!   libcuda; prints the environment (`eval "$(cargo xtask candle-env)"`).
//! * `candle-bundle [--out DIR]`: gpukern-candle's release GPU tests and the
//!   candle-block example (feature `cuda`), compressed, with `run.sh`.
//! * `import-results DIR...`: copy a GPU run's report/verify/sanitizer files into
//!   `results/<gpu>/` and regenerate from them the summary block of
//!   `results/<gpu>/README.md` and the GPU's headline table in the README.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};
use sha2::{Digest, Sha256};

mod bundle;
mod candle;
mod fuzz;
mod ptx;
mod results;

use bundle::bundle;
use ptx::build_ptx;
use results::import_results;

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
    /// The tests: `cargo test --workspace [ARGS]`, here and in examples/custom-kernels.
    #[command(disable_help_flag = true)]
    Test {
        /// Passed to cargo test (e.g. `-- --include-ignored` on a GPU machine).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// What CI runs: fmt, clippy, the docs (warnings denied), build-ptx --check,
    /// test, a kernel build under an empty CARGO_HOME, the example on stable
    /// Rust, 60 s per fuzz target.
    Ci,
    /// Run the cargo-fuzz targets of fuzz/ (needs cargo-fuzz).
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Targets to run (default: all).
        targets: Vec<String>,
    },
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
    /// Install the pinned PyPI CUDA compiler and libraries for
    /// `gpukern-candle --features cuda` and print the environment to build with.
    CandleEnv {
        /// The folder (default `target/candle-env`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// gpukern-candle's release GPU tests and the candle-block example (feature
    /// `cuda`), compressed, with run.sh, for a GPU machine.
    CandleBundle {
        /// Where the bundle goes.
        #[arg(long, default_value = "target/candle-gpu")]
        out: PathBuf,
    },
    /// Copy a GPU run's files into results/<gpu>/ and regenerate its README's
    /// summary block and the GPU's headline table in the top README.
    ImportResults {
        /// Folders of the run (the report's --out, run.sh test's OUT, ...).
        #[arg(required = true)]
        dirs: Vec<String>,
    },
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
            Cmd::Fuzz { seconds, targets } => fuzz::fuzz(seconds, &targets),
            Cmd::Report { args } => report(&args),
            Cmd::Bundle { out } => bundle(&out),
            Cmd::CandleEnv { dir } => candle::candle_env(&dir.unwrap_or_else(candle::default_dir)),
            Cmd::CandleBundle { out } => candle::candle_bundle(&root().join(out)),
            Cmd::ImportResults { dirs } => import_results(&dirs),
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

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The worked example's workspace (a user's project: its own Cargo.lock and target).
const EXAMPLE: &str = "examples/custom-kernels/Cargo.toml";

/// A cargo command for the example's workspace.
fn cargo_example(args: &[&str]) -> Command {
    let mut c = cargo();
    // The manifest right after the subcommand: later, `--` would hand it to rustfmt.
    let (sub, rest) = args.split_first().expect("a subcommand");
    c.arg(sub).arg("--manifest-path").arg(root().join(EXAMPLE)).args(rest);
    c
}

fn test(extra: &[String]) -> Res {
    let mut c = cargo();
    c.args(["test", "--workspace"]).args(extra);
    run(c)?;
    // The example's CPU-side tests (its GPU tests are ignored without a GPU).
    let mut c = cargo_example(&["test", "--workspace"]);
    c.args(extra);
    run(c)
}

fn ci() -> Res {
    let mut c = cargo();
    c.args(["fmt", "--all", "--", "--check"]);
    run(c)?;
    run(cargo_example(&["fmt", "--all", "--", "--check"]))?;
    let mut c = cargo();
    c.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    run(c)?;
    let mut c = cargo_example(&["clippy", "--workspace", "--all-targets"]);
    c.args(["--", "-D", "warnings"]);
    run(c)?;
    step("rustdoc of the library crates, warnings denied", docs)?;
    build_ptx(true)?;
    test(&[])?;
    step("the norms' error bounds on the longest rows (release)", norms_long_rows)?;
    step("kernel build under an empty CARGO_HOME", fresh_cargo_home)?;
    step("the example on stable Rust", stable_example)?;
    step("fuzz targets, 60 s each", || fuzz::fuzz(60, &[]))?;
    // The cuda build downloads 1.2 GB of PyPI wheels and runs nvcc for about
    // ten minutes on a fresh machine (seconds where the cache folder is kept):
    // on by default, off with GPUKERN_CI_CANDLE_CUDA=0.
    if candle::ci_cuda_wanted() {
        step("gpukern-candle with candle's cuda feature", candle::ci_cuda_build)?;
    } else {
        println!("xtask ci: gpukern-candle's cuda build skipped (GPUKERN_CI_CANDLE_CUDA=0)");
    }
    Ok(())
}

/// The library crates whose docs users read (`gpukern` with its `cudarc`
/// feature, `gpukern-device`, `gpukern-build`, `gpukern-candle`), documented
/// with rustdoc's warnings denied: a broken intra-doc link fails CI.
const DOC_CRATES: [&str; 4] = ["gpukern", "gpukern-device", "gpukern-build", "gpukern-candle"];

fn docs() -> Res {
    let mut c = cargo();
    c.args(["doc", "--no-deps", "--features", "gpukern/cudarc"]);
    for p in DOC_CRATES {
        c.args(["-p", p]);
    }
    c.env("RUSTDOCFLAGS", "-D warnings");
    run(c)
}

/// The norms' error bounds on rows up to `MAX_COLS`: `host/tests/norms_bounds.rs`'s
/// ignored tests, in release (about 2 minutes on 2 cores; some 30 in debug).
fn norms_long_rows() -> Res {
    let mut c = cargo();
    c.args(["test", "--release", "-p", "gpukern", "--test", "norms_bounds", "--", "--ignored"]);
    run(c)
}

/// Runs a CI step and prints its time.
fn step(name: &str, f: impl FnOnce() -> Res) -> Res {
    println!("xtask ci: {name}");
    let t = std::time::Instant::now();
    f()?;
    println!("xtask ci: {name}: ok in {:.0} s", t.elapsed().as_secs_f64());
    Ok(())
}

/// A fresh machine's first PTX build: gpukern-build's `build_tiny` test that
/// expects an empty cargo cache, run with `CARGO_HOME` a new empty folder (the
/// registry must be reachable). The test binary is built with the usual cache;
/// only the inner `cargo build -Zbuild-std=core` sees the empty one.
fn fresh_cargo_home() -> Res {
    const TEST: &str = "an_empty_cargo_home_fetches_what_build_std_needs";
    let mut c = cargo();
    c.args(["test", "-p", "gpukern-build", "--test", "build_tiny", "--no-run", "--message-format=json"]);
    let out = c.stderr(std::process::Stdio::inherit()).output().map_err(|e| format!("could not start cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("building gpukern-build's build_tiny test failed ({})", out.status));
    }
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == "build_tiny")
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or("cargo named no build_tiny test executable")?;
    let home = std::env::temp_dir().join(format!("gpukern-ci-cargo-home-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).map_err(|e| format!("creating {}: {e}", home.display()))?;
    let mut t = Command::new(&exe);
    t.args(["--ignored", "--exact", TEST, "--nocapture"])
        .env("CARGO_HOME", &home)
        .env_remove(gpukern_build::OFFLINE_ENV);
    // rustup finds its toolchains in RUSTUP_HOME, which defaults to ~/.rustup
    // whatever CARGO_HOME says.
    let result = run(t);
    let _ = std::fs::remove_dir_all(&home);
    result
}

/// The stable toolchain CI builds the example with.
const STABLE: &str = "stable";

/// A user's app on stable Rust: the example's workspace built and its CPU tests
/// run with `rustup run stable cargo` (only its build.rs's PTX build uses the
/// pinned nightly, through rustup), plus the library CPU tests of the device
/// crate, the kernels and the host library, and gpukern-candle's CPU tests.
fn stable_example() -> Res {
    let probe = Command::new("rustup").args(["run", STABLE, "cargo", "--version"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err(format!(
            "the `{STABLE}` toolchain is missing: run `rustup toolchain install {STABLE} --profile minimal`"
        ));
    }
    let stable = |args: &[&str]| {
        let mut c = Command::new("rustup");
        c.current_dir(root()).args(["run", STABLE, "cargo"]).args(args);
        // The outer (nightly) cargo's variables stay out.
        for k in ["CARGO", "RUSTC", "RUSTDOC", "RUSTUP_TOOLCHAIN", "RUSTC_WRAPPER", "RUSTFLAGS"] {
            c.env_remove(k);
        }
        c
    };
    let example = root().join(EXAMPLE);
    let example = example.to_str().ok_or("non-UTF-8 path")?;
    run(stable(&["build", "--manifest-path", example, "--workspace", "--all-targets"]))?;
    run(stable(&["test", "--manifest-path", example, "--workspace"]))?;
    run(stable(&["test", "-p", "gpukern-device", "-p", "kernels-gpu", "-p", "gpukern", "--lib"]))?;
    // gpukern-candle (without `cuda`): its CPU tests on stable too.
    run(stable(&["test", "-p", "gpukern-candle"]))
}

fn report(args: &[String]) -> Res {
    let mut c = cargo();
    c.args(["run", "--quiet", "--release", "--package", "gpukern-benches", "--bin", "report", "--"]).args(args);
    // The report prints its own one-line error (e.g. no GPU); pass its status on
    // without adding a second line.
    let status = c.status().map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
