//! `build-ptx`: the two PTX modules of the kernel crate, built and compared with
//! the tracked files.

use super::{cargo, root, run, sha256, Res};

const PTX_TARGET: &str = "nvptx64-nvidia-cuda";
pub(crate) const TRACKED_PTX: &str = "ptx/kernels_gpu.ptx";

/// One PTX module built from the kernel crate.
pub(crate) struct PtxModule {
    /// Tracked output, relative to the root.
    pub(crate) tracked: &'static str,
    /// Cargo target folder of its build, so the two builds never share artifacts.
    target_dir: &'static str,
    /// Target flags; `None` takes the sm_70 flags of `.cargo/config.toml`.
    rustflags: Option<&'static str>,
}

/// The portable module (every kernel but the Hopper ones), then the Hopper one.
/// `+ptx80` because `cp.async.bulk` and `mbarrier.expect_tx` need PTX ISA 8.0.
pub(crate) const MODULES: [PtxModule; 2] = [
    PtxModule { tracked: TRACKED_PTX, target_dir: "target/ptx", rustflags: None },
    PtxModule {
        tracked: "ptx/kernels_gpu_sm90.ptx",
        target_dir: "target/ptx90",
        rustflags: Some("-C target-cpu=sm_90 -C target-feature=+ptx80 -C panic=abort"),
    },
];

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

pub(crate) fn build_ptx(check: bool) -> Res {
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
