//! `build-ptx`: the two PTX modules of the kernel crate, built and compared with
//! the tracked files.

use gpukern_build::{Arch, Builder};

use super::{root, sha256, Res};

pub(crate) const TRACKED_PTX: &str = "ptx/kernels_gpu.ptx";

/// One PTX module built from the kernel crate.
pub(crate) struct PtxModule {
    /// Tracked output, relative to the root.
    pub(crate) tracked: &'static str,
    /// Which module (its flags are `gpukern_build::Arch::rustflags`).
    arch: Arch,
}

/// The portable module (every kernel but the Hopper ones), then the Hopper one.
pub(crate) const MODULES: [PtxModule; 2] = [
    PtxModule { tracked: TRACKED_PTX, arch: Arch::Sm70 },
    PtxModule { tracked: "ptx/kernels_gpu_sm90.ptx", arch: Arch::Sm90 },
];

/// Builds the kernel crate's modules with gpukern-build (the same code a user's
/// build.rs runs: one path to PTX), in target/ptx/<arch>, and returns the texts.
fn compile_ptx() -> Res<Vec<String>> {
    // SAFETY: kernels-gpu is this project's kernel crate: its unsafe code
    // (raw loads, block collectives, bulk copies, hand-written entries) is
    // reviewed as the library's own, and it declares no manifest globals
    // (the host launches its kernels through its own tables, not `BuiltPtx`).
    let b = unsafe { Builder::new(root().join("kernels-gpu")).trust_unsafe_code() };
    let mut b = b.target_dir(root().join("target/ptx")).out_dir(root().join("target/ptx"));
    for m in &MODULES {
        b = b.arch(m.arch);
    }
    let built = b.build().map_err(|e| e.to_string())?;
    Ok(built.iter().map(|m| m.ptx().to_string()).collect())
}

fn entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap_or(l).trim())
        .collect()
}

pub(crate) fn build_ptx(check: bool) -> Res {
    for (m, fresh) in MODULES.iter().zip(compile_ptx()?) {
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
