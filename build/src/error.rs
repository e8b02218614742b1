//! What can go wrong building a kernel crate, each with the command that fixes it.

use std::path::PathBuf;

use crate::PINNED_TOOLCHAIN;

/// Appended to [`BuildError::Cargo`] when the kernel crate was compiled under
/// [`crate::KERNEL_CRATE_LINTS`].
pub(crate) const FORBID_HINT: &str = ". The kernel crate is compiled with `-F unsafe_code`, so that its PTX can be loaded without `unsafe` (a crate with no unsafe code of its own cannot forge the manifests the host trusts): errors about `unsafe` blocks, `#[no_mangle]`, `#[export_name]`, `#[link_section]` or `global_asm!` come from that. Write the kernels with `#[kernel]` / `elementwise!` and no unsafe code, or vouch for the crate's unsafe code with `unsafe { Builder::new(..).trust_unsafe_code() }` (see its # Safety)";

/// Why a build failed. Each message names what to run or fix.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// rustup is not on the PATH.
    #[error("gpukern-build: `rustup` was not found ({0}); it runs the pinned nightly. Install rustup (https://rustup.rs), then `rustup toolchain install {PINNED_TOOLCHAIN} --component rust-src,llvm-bitcode-linker`")]
    NoRustup(String),
    /// The toolchain is not installed.
    #[error("gpukern-build: the toolchain `{toolchain}` is not installed. Run `rustup toolchain install {toolchain} --component rust-src,llvm-bitcode-linker`")]
    ToolchainMissing {
        /// The toolchain asked for.
        toolchain: String,
    },
    /// A component the PTX build needs is missing.
    #[error("gpukern-build: the toolchain `{toolchain}` lacks the `{component}` component ({why}). Run `rustup component add {component} --toolchain {toolchain}`")]
    ComponentMissing {
        /// The toolchain.
        toolchain: String,
        /// `rust-src` or `llvm-bitcode-linker`.
        component: &'static str,
        /// What was looked for.
        why: String,
    },
    /// The kernel crate has no Cargo.toml.
    #[error("gpukern-build: {0} is not a crate (no Cargo.toml)")]
    NotACrate(PathBuf),
    /// The inner cargo failed; its diagnostics went to stderr.
    #[error(
        "gpukern-build: `cargo build` of {krate} for {arch} failed ({status}); the compiler's messages are above{hint}"
    )]
    Cargo {
        /// The kernel crate.
        krate: PathBuf,
        /// The module.
        arch: &'static str,
        /// Its exit status.
        status: String,
        /// What to do about `unsafe_code` errors, when the crate was compiled
        /// under [`crate::KERNEL_CRATE_LINTS`]; empty otherwise.
        hint: &'static str,
    },
    /// The build succeeded but wrote no PTX (the crate is not a `cdylib`?).
    #[error("gpukern-build: building {0} wrote no .ptx file; is it a `cdylib` (crate-type = [\"cdylib\"])?")]
    NoPtx(PathBuf),
    /// A build-script variable is missing.
    #[error("gpukern-build: {0} is not set; build_script() runs inside a build script (use build() elsewhere)")]
    NotInBuildScript(&'static str),
    /// Offline mode, and the cargo cache lacks crates the build resolves.
    #[error("gpukern-build: offline build of {krate} for {arch} failed: the cargo cache ({cargo_home}) lacks crates it needs (cargo's message is above). -Zbuild-std=core resolves the toolchain's whole library workspace, whose crates an ordinary build never downloads. Fetch them once: `rustup run {toolchain} cargo fetch --manifest-path {library}` (and `cargo fetch` in the kernel crate if it names one of its own dependencies), or build once without offline mode (unset GPUKERN_BUILD_OFFLINE / CARGO_NET_OFFLINE, no Builder::offline(true)); later builds then stay offline")]
    OfflineCacheMissing {
        /// The kernel crate.
        krate: PathBuf,
        /// The module.
        arch: &'static str,
        /// The toolchain.
        toolchain: String,
        /// The cargo cache in use.
        cargo_home: String,
        /// The toolchain's library workspace manifest.
        library: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("gpukern-build: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}
