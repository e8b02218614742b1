//! Compile-fail tests on the real target: small kernel crates checked for
//! `nvptx64-nvidia-cuda` (`cargo check -Zbuild-std=core`, sm_70), each of
//! which must fail with the compiler's unsafety error, plus one that must
//! compile (the same operations inside `unsafe { }`), so a failure is known
//! to come from the check and not from the set-up.
//!
//! trybuild cannot do this (it builds for the host, where a kernel's body and
//! the device-only APIs do not exist); the host-side checks of `gpu_printf!`
//! and `printf_raw` are trybuild tests in `device/tests/`.

use std::path::{Path, PathBuf};
use std::process::Command;

const HEADER: &str = "#![no_std]\n#![feature(abi_ptx)]\nuse gpukern_device::block;\nuse gpukern_macros::kernel;\n";

/// (name, kernel source, what the compiler must say).
const FAILING: &[(&str, &str, &str)] = &[
    (
        "raw_write_in_a_kernel_body",
        "#[kernel]\npub fn evil(x: &[f32], y: &mut [f32]) {\n    *(x.as_ptr() as *mut f32).add(1 << 30) = 0.0;\n    y.set(0, 1.0);\n}\n",
        "dereference of raw pointer is unsafe",
    ),
    (
        "unsafe_fn_call_in_a_kernel_body",
        "#[kernel]\npub fn evil(x: &[f32], y: &mut [f32]) {\n    let v = gpukern_device::pack::load128(x.as_ptr() as *const gpukern_device::pack::Pack16);\n    y.set(0, f32::from_bits(v.0[0]));\n}\n",
        "call to unsafe function",
    ),
    (
        "block_sum_in_a_kernel_body",
        "#[kernel]\npub fn evil(x: &[f32], y: &mut [f32]) {\n    if gpukern_device::global_thread() < 7 {\n        y.set(0, block::sum(x[0]));\n    }\n}\n",
        "call to unsafe function `gpukern_device::block::sum`",
    ),
    (
        "unsafe_kernel_fn_is_refused",
        "#[kernel]\npub unsafe fn evil(y: &mut [f32]) {\n    y.set(0, 1.0);\n}\n",
        "#[kernel]: the body is safe Rust",
    ),
];

/// The same operations, each in an `unsafe` block: compiles.
const PASSING: &str = "#[kernel]\npub fn fine(x: &[f32], y: &mut [f32]) {\n    // SAFETY: (test) not launched.\n    let v = unsafe { gpukern_device::pack::load128(x.as_ptr() as *const gpukern_device::pack::Pack16) };\n    // SAFETY: (test) every thread calls.\n    let s = unsafe { block::sum(f32::from_bits(v.0[0])) };\n    y.set(0, s);\n}\n";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The pinned nightly, from the repository's rust-toolchain.toml.
fn toolchain() -> String {
    let t = std::fs::read_to_string(repo().join("rust-toolchain.toml")).unwrap();
    let line = t.lines().find(|l| l.trim_start().starts_with("channel")).expect("a channel line");
    line.split('"').nth(1).expect("a quoted channel").to_string()
}

/// Writes a kernel crate `name` with `src` and checks it for nvptx64; returns
/// (success, stderr).
fn check(name: &str, src: &str) -> (bool, String) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-safety");
    let dir = base.join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let (device, macros) = (repo().join("device"), repo().join("macros"));
    let manifest = format!(
        "[package]\nname = \"{}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\ngpukern-device = {{ path = {:?} }}\ngpukern-macros = {{ path = {:?} }}\n\n[workspace]\n",
        name.replace('_', "-"),
        device.display().to_string(),
        macros.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/lib.rs"), format!("{HEADER}{src}")).unwrap();
    // The workspace's versions of syn & co., so nothing new is resolved.
    std::fs::copy(repo().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let mut c = Command::new("rustup");
    c.args(["run", &toolchain(), "cargo", "check", "--quiet", "--lib", "--target", "nvptx64-nvidia-cuda"])
        .args(["-Zbuild-std=core", "--message-format=short"])
        .arg("--target-dir")
        .arg(base.join("target"))
        .current_dir(&dir);
    for v in ["CARGO_TARGET_DIR", "RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC", "RUSTC_WRAPPER", "RUSTUP_TOOLCHAIN"] {
        c.env_remove(v);
    }
    c.env("CARGO_ENCODED_RUSTFLAGS", "-Ctarget-cpu=sm_70");
    let out = c.output().expect("rustup runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn unsafe_operations_in_kernels_need_unsafe_blocks() {
    let (ok, err) = check("passing_kernel", PASSING);
    assert!(ok, "the control crate must compile for nvptx64:\n{err}");
    for (name, src, want) in FAILING {
        let (ok, err) = check(name, src);
        assert!(!ok, "{name}: compiled, but must not");
        assert!(err.contains(want), "{name}: expected `{want}` in:\n{err}");
    }
}
