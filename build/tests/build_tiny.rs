//! The builder end to end, as CI runs it: a tiny kernel crate in a temporary
//! folder (outside this workspace) compiled to both PTX modules under the
//! default `-F unsafe_code` (so the macros' expansions pass it), and the
//! missing-toolchain error.

use std::path::Path;

use gpukern_build::{Arch, BuildError, Builder, PINNED_TOOLCHAIN};

fn tiny_crate(dir: &Path) {
    let device = Path::new(env!("CARGO_MANIFEST_DIR")).join("../device").canonicalize().unwrap();
    let macros = Path::new(env!("CARGO_MANIFEST_DIR")).join("../macros").canonicalize().unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"tiny-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n[dependencies]\ngpukern-device = {{ path = {:?} }}\ngpukern-macros = {{ path = {:?} }}\n\n[workspace]\n",
            device.display().to_string(),
            macros.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
use gpukern_device::lanes::{Elem, Op};
use gpukern_device::Params;

/// `2x + y`, rounded after each step.
#[derive(Clone, Copy)]
pub struct TwiceAdd;
impl<E: Elem> Op<E> for TwiceAdd {
    fn one(self, x: E::T, y: E::T) -> E::T {
        let t = E::narrow(E::widen(x) * 2.0);
        E::narrow(E::widen(t) + E::widen(y))
    }
}
impl<E: Elem> Params<E> for TwiceAdd {
    fn from_params(_: [f32; 2]) -> Self {
        TwiceAdd
    }
}
gpukern_device::elementwise! {
    binary twice_add = TwiceAdd: [F32, Bf16];
}

/// `y[i] = k·x[i]`: a typed kernel.
#[gpukern_macros::kernel]
pub fn scale(x: &[f32], y: &mut [f32], k: f32) {
    let i = gpukern_device::global_thread() as usize;
    if i < x.len() {
        y.set(i, k * x[i]);
    }
}

/// A PDL kernel that prints: `#[kernel(pdl)]` and `gpu_printf!` expand to
/// `unsafe` code of their own, which `-F unsafe_code` lets through.
#[gpukern_macros::kernel(pdl)]
pub fn probe(x: &[f32], k: u32) {
    if gpukern_device::global_thread() == 0 && !x.is_empty() {
        gpukern_device::gpu_printf!("probe %u: %f\n", k, x[0]);
    }
}
"#,
    )
    .unwrap();
}

#[test]
fn a_tiny_kernel_crate_compiles_to_both_modules() {
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("tiny");
    tiny_crate(&krate);
    let out = dir.path().join("out");
    let built = Builder::new(&krate)
        .arch(Arch::Sm70)
        .arch(Arch::Sm90)
        .target_dir(dir.path().join("target"))
        .out_dir(&out)
        .toolchain(PINNED_TOOLCHAIN)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.len(), 2);
    let (sm70, sm90) = (&built[0], &built[1]);
    assert_eq!(sm70.path(), out.join("tiny_kernels.ptx"));
    assert_eq!(sm90.path(), out.join("tiny_kernels_sm90.ptx"));
    let (p70, p90) = (sm70.ptx(), sm90.ptx());
    assert!(p70.contains(".target sm_70") && p90.contains(".target sm_90"));
    for name in ["twice_add_f32", "twice_add_f32x4", "twice_add_bf16", "twice_add_bf16x8", "probe"] {
        for b in &built {
            assert!(b.ptx().contains(&format!(".visible .entry {name}(")), "{name} missing in {}", b.arch().name());
        }
    }
    // The PDL marker exists in the sm_90 module only; the printf reaches vprintf.
    assert!(p90.contains("gpukern_pdl_probe") && !p70.contains("gpukern_pdl_probe"));
    assert!(p70.contains("vprintf"));
    // The typed kernel: slices as (pointer, length), the scalar, its manifest.
    let entry = p70.split(".visible .entry scale(").nth(1).expect("typed kernel `scale` missing");
    let params = &entry[..entry.find(')').unwrap()];
    assert_eq!(params.matches(".param .u64").count(), 4, "{params}");
    assert!(params.contains(".param .f32 scale_param_4"), "{params}");
    assert!(p70.contains("gpukern_kernel_scale"), "typed manifest missing");
    // The manifest the host checks: magic, version, binary, f32|bf16.
    assert!(p70.contains("gpukern_ew_twice_add"), "manifest missing");
    assert!(p70.contains("ld.global.v4.u32") || p70.contains("ld.global.v4.b32"), "no 128-bit loads");
    assert!(sm70.sources().iter().any(|s| s.ends_with("tiny/src/lib.rs")), "{:?}", sm70.sources());
    assert!(sm70.sources().iter().any(|s| s.ends_with("device/src/patterns.rs")), "dependency sources not listed");
}

#[test]
fn a_missing_toolchain_names_the_install_command() {
    let dir = tempfile::tempdir().unwrap();
    tiny_crate(dir.path());
    let err = Builder::new(dir.path()).toolchain("nightly-1999-01-01").build().unwrap_err();
    assert!(matches!(err, BuildError::ToolchainMissing { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("rustup toolchain install nightly-1999-01-01 --component rust-src,llvm-bitcode-linker"),
        "{msg}"
    );
}

#[test]
fn a_folder_without_a_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = Builder::new(dir.path()).build().unwrap_err();
    assert!(matches!(err, BuildError::NotACrate(_)), "{err:?}");
}

/// A fresh machine, as `cargo xtask ci` runs it: `CARGO_HOME` an empty folder
/// (the registry reachable). Offline mode stops with the command that fetches
/// what `-Zbuild-std=core` resolves; the default mode fetches it and builds;
/// offline mode then works.
#[test]
#[ignore = "needs CARGO_HOME set to an empty folder and the network (cargo xtask ci runs it)"]
fn an_empty_cargo_home_fetches_what_build_std_needs() {
    let home = std::env::var_os("CARGO_HOME").expect("CARGO_HOME set to an empty folder");
    assert!(!Path::new(&home).join("registry").exists(), "CARGO_HOME {home:?} is not empty");
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("tiny");
    tiny_crate(&krate);
    let builder = Builder::new(&krate)
        .target_dir(dir.path().join("target"))
        .out_dir(dir.path().join("out"))
        .toolchain(PINNED_TOOLCHAIN);

    eprintln!("expected: offline mode with an empty cargo cache fails; cargo's error follows");
    let err = builder.clone().offline(true).build().unwrap_err();
    assert!(matches!(err, BuildError::OfflineCacheMissing { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("rustup run {PINNED_TOOLCHAIN} cargo fetch --manifest-path"))
            && msg.contains("lib/rustlib/src/rust/library/Cargo.toml"),
        "{msg}"
    );

    let built = builder.clone().build().unwrap_or_else(|e| panic!("{e}"));
    assert!(built[0].ptx().contains(".visible .entry twice_add_f32x4("));

    let again = builder.offline(true).build().unwrap_or_else(|e| panic!("offline after the fetch: {e}"));
    assert_eq!(again[0].ptx(), built[0].ptx());
}
