//! Sets `cfg(gpukern_nightly)` when the compiler building this proc macro is a
//! nightly (or dev) rustc: then `#[kernel]` is declared with
//! `allow_internal_unsafe`, so its expansion's own `unsafe` (the entry point,
//! the pointer-to-slice binds, the manifest's `export_name`) is exempt from
//! the `-F unsafe_code` under which gpukern-build compiles kernel crates.
//! Kernel crates are always built by a nightly (`-Zbuild-std`); a stable
//! build of this crate (the host side, which only needs the signature type)
//! leaves the attribute off.

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(gpukern_nightly)");
    println!("cargo::rerun-if-env-changed=RUSTC");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc).arg("-V").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    if let Ok(v) = version {
        if v.contains("-nightly") || v.contains("-dev") {
            println!("cargo::rustc-cfg=gpukern_nightly");
        }
    }
}
