//! `cargo xtask fuzz`: the cargo-fuzz targets of `fuzz/` (their own
//! workspace) on the pinned nightly, each for a fixed time, from the
//! committed seeds (`fuzz/seeds/<target>`) plus the corpus a run grows
//! (`fuzz/corpus/<target>`, not tracked). CI runs it for 60 s per target.

use std::process::Command;

use crate::{root, run, Res};

/// Every target in fuzz/Cargo.toml.
pub(crate) const TARGETS: [&str; 3] = ["ptx_text", "signature", "graph_record"];

/// Runs each of `targets` (all when empty) for `seconds`; a crash or a failed
/// assertion fails the step (libFuzzer saves the input under fuzz/artifacts).
pub(crate) fn fuzz(seconds: u64, targets: &[String]) -> Res {
    let probe = Command::new("cargo").args(["fuzz", "--version"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err("cargo-fuzz is missing: run `cargo install cargo-fuzz --locked`".into());
    }
    let dir = root().join("fuzz");
    let chosen: Vec<&str> =
        if targets.is_empty() { TARGETS.to_vec() } else { targets.iter().map(String::as_str).collect() };
    for t in chosen {
        if !TARGETS.contains(&t) {
            return Err(format!("no fuzz target `{t}` (targets: {})", TARGETS.join(", ")));
        }
        let corpus = dir.join("corpus").join(t);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("creating {}: {e}", corpus.display()))?;
        let mut c = Command::new("cargo");
        c.current_dir(&dir).args(["fuzz", "run", t]).arg(&corpus).arg(dir.join("seeds").join(t)).args([
            "--",
            &format!("-max_total_time={seconds}"),
            "-print_final_stats=1",
        ]);
        // The outer cargo's variables describe the xtask build, not this one.
        for k in ["CARGO_TARGET_DIR", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS"] {
            c.env_remove(k);
        }
        println!("xtask fuzz: {t} for {seconds} s");
        run(c)?;
    }
    Ok(())
}
