//! Compile-fail tests of the forging paths, on the real target: small kernel
//! crates checked for `nvptx64-nvidia-cuda` with the flags gpukern-build
//! compiles a kernel crate with ([`KERNEL_CRATE_LINTS`]). Each way a safe
//! kernel crate could declare a manifest or an entry point that our macros
//! did not write must be refused, with the compiler's own message; a control
//! crate using every macro (element-wise ops, typed and PDL kernels, printf,
//! `ew_entry!` with a safe body) must pass under the same flags, for both
//! modules, so a failure is known to come from the lint and not the set-up.
//!
//! trybuild cannot do this: it builds for the host, where the entry points
//! and manifests do not exist. The host-side checks (the sealed `PrintfArg`,
//! `Built`'s private fields, `BuiltPtx`'s `unsafe` constructor) are trybuild
//! tests in `device/tests/` and `build/tests/ui/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use gpukern_build::{Arch, KERNEL_CRATE_LINTS, PINNED_TOOLCHAIN};

const HEADER: &str = "#![no_std]\n#![feature(abi_ptx)]\n#[allow(unused_imports)]\nuse gpukern_macros::kernel;\nuse gpukern_device as _;\n";

/// (name, edition, source, what the compiler must say).
const FORGERIES: &[(&str, &str, &str, &str)] = &[
    (
        "manifest_by_export_name",
        "2021",
        "#[used]\n#[export_name = \"gpukern_ew_evil\"]\npub static EVIL: [u32; 4] = [0x6770_6b65, 1, 2, 1];\n",
        "usage of the unsafe `export_name` attribute",
    ),
    (
        "manifest_by_export_name_2024",
        "2024",
        "#[used]\n#[unsafe(export_name = \"gpukern_kernel_evil\")]\npub static EVIL: [u32; 3] = [0, 1, 0];\n",
        "`export_name`",
    ),
    (
        "entry_by_no_mangle",
        "2021",
        "#[no_mangle]\npub extern \"ptx-kernel\" fn evil_f32x4(a: *const f32, c: *mut f32, n: u64, p0: f32, p1: f32) {\n    let _ = (a, c, n, p0, p1);\n}\n",
        "usage of the unsafe `no_mangle` attribute",
    ),
    (
        "manifest_by_global_asm",
        "2021",
        "core::arch::global_asm!(\".visible .global .align 4 .b8 gpukern_ew_evil[16] = {{101, 107, 112, 103}};\");\n",
        "usage of `core::arch::global_asm`",
    ),
    (
        "manifest_by_link_section",
        "2021",
        "#[link_section = \".nv.global\"]\npub static EVIL: [u32; 4] = [0; 4];\n",
        "usage of the unsafe `link_section` attribute",
    ),
    (
        "raw_write_in_an_ew_entry_body",
        "2021",
        "gpukern_device::ew_entry! {\n    unary evil<gpukern_device::lanes::F32>(a, c, n) {\n        let _ = (a, n);\n        *c.add(1 << 30) = 0.0;\n    }\n}\n",
        "dereference of raw pointer is unsafe",
    ),
    (
        "unsafe_block_in_a_kernel",
        "2021",
        "#[kernel]\npub fn evil(x: &[f32], y: &mut [f32]) {\n    // SAFETY: none.\n    unsafe { *(x.as_ptr() as *mut f32).add(1 << 30) = 0.0 };\n    y.set(0, 1.0);\n}\n",
        "usage of an `unsafe` block",
    ),
    (
        "crate_allows_unsafe_code",
        "2021",
        "#![allow(unsafe_code)]\n#[kernel]\npub fn evil(y: &mut [f32]) {\n    y.set(0, 1.0);\n}\n",
        "incompatible with previous forbid",
    ),
    (
        "forged_kernel_elem",
        "2021",
        "#[derive(Clone, Copy)]\npub struct Wide([u8; 3]);\nunsafe impl gpukern_device::kernel::KernelElem for Wide {\n    const CODE: u32 = 1;\n}\n",
        "implementation of an `unsafe` trait",
    ),
    (
        "forged_printf_arg",
        "2021",
        "pub struct Addr(u64);\nimpl gpukern_device::debug::PrintfArg<{ gpukern_device::debug::printf::conv::STR }> for Addr {\n    type Out = u64;\n    fn promote(self) -> u64 {\n        self.0\n    }\n}\n",
        "Sealed",
    ),
];

/// Every macro a safe kernel crate uses, under the same flags: compiles.
const CONTROL: &str = r#"use gpukern_device::lanes::{Elem, Op};
#[derive(Clone, Copy)]
pub struct Half;
impl<E: Elem> Op<E> for Half {
    const INPUTS: u32 = 1;
    fn one(self, x: E::T, _: E::T) -> E::T {
        E::narrow(E::widen(x) * 0.5)
    }
}
impl<E: Elem> gpukern_device::Params<E> for Half {
    fn from_params(_: [f32; 2]) -> Self {
        Half
    }
}
gpukern_device::elementwise! {
    unary half = Half: [F32, F16, Bf16];
}
gpukern_device::ew_entry! {
    unary pass<gpukern_device::lanes::F32>(a, c, n) {
        let _ = (a, c, n);
    }
}
#[kernel]
pub fn scale(x: &[f32], y: &mut [f32], k: f32) {
    let i = gpukern_device::global_thread() as usize;
    if i < x.len() {
        y.set(i, k * x[i]);
    }
}
#[kernel(pdl)]
pub fn probe(x: &[f32], k: u32) {
    if gpukern_device::global_thread() == 0 && !x.is_empty() {
        gpukern_device::gpu_printf!("probe %u: %f\n", k, x[0]);
        gpukern_device::gpu_assert!(k < 1 << 30, "k is small");
    }
}
"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// Writes a kernel crate `name` with `src` and checks it for nvptx64 with
/// the kernel crate's lints and `arch`'s flags; returns (success, stderr).
fn check(name: &str, edition: &str, src: &str, arch: Arch, extra: &[&str]) -> (bool, String) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("forging");
    let dir = base.join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let (device, macros) = (repo().join("device"), repo().join("macros"));
    let manifest = format!(
        "[package]\nname = \"{}\"\nversion = \"0.0.0\"\nedition = \"{edition}\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\ngpukern-device = {{ path = {:?} }}\ngpukern-macros = {{ path = {:?} }}\n\n[workspace]\n",
        name.replace('_', "-"),
        device.display().to_string(),
        macros.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // An inner attribute must come first.
    let (inner, rest) = match src.strip_prefix("#![allow(unsafe_code)]\n") {
        Some(rest) => ("#![allow(unsafe_code)]\n", rest),
        None => ("", src),
    };
    std::fs::write(dir.join("src/lib.rs"), format!("{inner}{HEADER}{rest}")).unwrap();
    // The workspace's versions of syn & co., so nothing new is resolved.
    std::fs::copy(repo().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let mut c = Command::new("rustup");
    c.args(["run", PINNED_TOOLCHAIN, "cargo", "rustc", "--quiet", "--lib", "--profile", "check"])
        .args(["--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core", "--message-format=short"])
        .arg("--target-dir")
        .arg(base.join("target").join(arch.name()))
        .arg("--")
        .args(KERNEL_CRATE_LINTS)
        .args(extra)
        .current_dir(&dir);
    for v in ["CARGO_TARGET_DIR", "RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC", "RUSTC_WRAPPER", "RUSTUP_TOOLCHAIN"] {
        c.env_remove(v);
    }
    c.env("CARGO_ENCODED_RUSTFLAGS", arch.rustflags().join("\u{1f}"));
    let out = c.output().expect("rustup runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_safe_kernel_crate_cannot_forge_what_the_host_trusts() {
    for arch in [Arch::Sm70, Arch::Sm90] {
        // `-D non-snake-case` too: the entry's parameters are the macro's own
        // names, not warnings in every user crate.
        let (ok, err) = check("control", "2021", CONTROL, arch, &["-D", "non-snake-case"]);
        assert!(ok, "the control crate must compile for nvptx64 {} under -F unsafe_code:\n{err}", arch.name());
    }
    for (name, edition, src, want) in FORGERIES {
        let (ok, err) = check(name, edition, src, Arch::Sm70, &[]);
        assert!(!ok, "{name}: compiled, but must not");
        assert!(err.contains(want), "{name}: expected `{want}` in:\n{err}");
    }
}
