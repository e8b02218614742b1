//! # gpukern-build
//!
//! Compiles a kernel crate (a `#![no_std]` `cdylib` using `gpukern-device`) to
//! PTX with rustc's `nvptx64-nvidia-cuda` backend. It plays the role of
//! rust-cuda's `cuda_builder`, on stock nightly rustc.
//!
//! In a host crate's `build.rs`:
//!
//! ```no_run
//! // build.rs
//! gpukern_build::Builder::new("../kernels")
//!     .arch(gpukern_build::Arch::Sm70)
//!     .build_script()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! and in the host code
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/my_kernels_ptx.rs"));
//! let module = gpu.load_module(MY_KERNELS)?;
//! ```
//!
//! for a kernel crate `my-kernels`: the PTX is named after the crate's library
//! (its `[lib] name`, else the package name with `-` as `_`), `my_kernels.ptx`,
//! with `_sm90` added for [`Arch::Sm90`] (`my_kernels_sm90.ptx`); beside them
//! `my_kernels_ptx.rs` ([`rust_consts`]) defines `MY_KERNELS` and
//! `MY_KERNELS_SM90`, `gpukern::BuiltPtx` values that `Gpu::load_module` takes
//! without `unsafe` (PTX text from anywhere else needs the `unsafe`
//! `Gpu::load_ptx`).
//!
//! Only this PTX build needs nightly: the crate runs it through rustup, so the
//! host crate (and this one) builds with any toolchain, stable included.
//!
//! What it does, and why:
//! * runs `cargo build --release --target nvptx64-nvidia-cuda -Zbuild-std=core`
//!   under the pinned nightly ([`PINNED_TOOLCHAIN`], or the kernel crate's
//!   `rust-toolchain.toml`), through `rustup run`, so it does not matter which
//!   toolchain runs the outer build;
//! * in a target directory of its own (under `OUT_DIR` in a build script), so
//!   the inner cargo never waits on the outer one's lock;
//! * with the arch's flags set explicitly ([`Arch::rustflags`]) and every
//!   variable the outer cargo set for its own build removed, so the PTX is the
//!   same whoever calls it;
//! * offline first, fetching only when needed: the inner cargo runs with
//!   `--offline`; when that fails because the cargo cache lacks crates (a fresh
//!   machine: `-Zbuild-std` resolves the toolchain's whole library workspace,
//!   `<sysroot>/lib/rustlib/src/rust/library/Cargo.lock`, whose crates no
//!   ordinary build downloads), it runs once more with the network, which
//!   fetches them; later builds are offline again. [`Builder::offline`] (or
//!   `GPUKERN_BUILD_OFFLINE=1`, or cargo's `CARGO_NET_OFFLINE=true`) never
//!   touches the network and names the command that fetches what is missing;
//! * prints `cargo:rerun-if-changed` for every source file the compiler read
//!   (from its dep-info), the kernel crate's own and its dependencies';
//! * checks first for the toolchain, `rust-src` and `llvm-bitcode-linker`, and
//!   names the command that installs what is missing.

#![deny(missing_docs)]

use std::path::{Path, PathBuf};

/// The nightly this project's kernels are built and verified with.
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-10-15";

/// rustc's PTX target.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// Which PTX module to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `.target sm_70` (PTX ISA 7.0): runs on every GPU from Volta up, which
    /// JIT-compile it at load. Kernels under `not(target_feature = "sm_90")`.
    Sm70,
    /// `.target sm_90` with PTX ISA 8.0: Hopper's bulk copies, `mbarrier` with
    /// transaction counts, packed bf16. Kernels under `target_feature = "sm_90"`.
    Sm90,
}

impl Arch {
    /// The rustc flags of this module's build.
    pub const fn rustflags(self) -> &'static [&'static str] {
        match self {
            Arch::Sm70 => &["-C", "target-cpu=sm_70", "-C", "panic=abort"],
            Arch::Sm90 => &["-C", "target-cpu=sm_90", "-C", "target-feature=+ptx80", "-C", "panic=abort"],
        }
    }
    /// Suffix of the output file: `""` or `"_sm90"`.
    pub const fn suffix(self) -> &'static str {
        match self {
            Arch::Sm70 => "",
            Arch::Sm90 => "_sm90",
        }
    }
    /// Short name.
    pub const fn name(self) -> &'static str {
        match self {
            Arch::Sm70 => "sm_70",
            Arch::Sm90 => "sm_90",
        }
    }
}

mod error;
pub use error::BuildError;

/// The flags the kernel crate itself (not its dependencies) is compiled
/// with, unless [`Builder::trust_unsafe_code`] says otherwise: `unsafe_code`
/// forbidden. The lint covers every way a crate can vouch for machine code
/// without an `unsafe` token in edition 2021: `unsafe` blocks, fns, impls and
/// extern blocks, `#[no_mangle]`, `#[export_name]`, `#[link_section]` and
/// `global_asm!`. gpukern-device's and gpukern-macros' own expansions
/// (`elementwise!`, `#[kernel]`, `gpu_printf!`, `ew_entry!`) are exempt
/// (`allow_internal_unsafe`): each derives the manifest and the entry points
/// it declares from the same input, so they cannot disagree. So the module of
/// a crate that compiles under these flags has only manifests our macros
/// wrote, over kernels whose bodies are safe Rust, which is what
/// `gpukern::BuiltPtx` lets `Gpu::load_module` trust.
pub const KERNEL_CRATE_LINTS: [&str; 2] = ["-F", "unsafe_code"];

/// One module built. Only [`Builder::build`] makes one (the fields are
/// private), so [`rust_consts`] vouches only for PTX this crate compiled.
#[derive(Clone, Debug)]
pub struct Built {
    arch: Arch,
    path: PathBuf,
    ptx: String,
    sources: Vec<PathBuf>,
}

impl Built {
    /// Which module.
    pub fn arch(&self) -> Arch {
        self.arch
    }
    /// Where its PTX was written.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Its text.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }
    /// Every source file the compiler read for it (dep-info), sysroot excluded.
    pub fn sources(&self) -> &[PathBuf] {
        &self.sources
    }
}

/// Compiles one kernel crate to one or more PTX modules.
#[derive(Clone, Debug)]
pub struct Builder {
    krate: PathBuf,
    archs: Vec<Arch>,
    toolchain: Option<String>,
    target_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    network: Network,
    trust_unsafe: bool,
}

/// When the inner cargo may use the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// `--offline` first; once more with the network only when the cargo cache
    /// lacks crates (the default).
    Auto,
    /// Never: a missing crate is [`BuildError::OfflineCacheMissing`].
    Offline,
    /// Always (no offline attempt).
    Online,
}

/// Set to `1` (or `true`) to forbid the network, as [`Builder::offline`] does.
pub const OFFLINE_ENV: &str = "GPUKERN_BUILD_OFFLINE";

mod consts;
pub use consts::rust_consts;
mod env;
use env::{absolute, toolchain_file_channel};
mod run;

impl Builder {
    /// A builder for the kernel crate at `krate` (the folder of its Cargo.toml;
    /// relative paths are taken from the current directory, which in a build
    /// script is the host crate's folder). Builds [`Arch::Sm70`] unless told.
    pub fn new(krate: impl Into<PathBuf>) -> Builder {
        Builder {
            krate: krate.into(),
            archs: Vec::new(),
            toolchain: None,
            target_dir: None,
            out_dir: None,
            network: Network::Auto,
            trust_unsafe: false,
        }
    }
    /// Compiles the kernel crate without [`KERNEL_CRATE_LINTS`], so it may
    /// have `unsafe` code of its own (block collectives, raw loads,
    /// hand-written `extern "ptx-kernel"` entries, `#[no_mangle]` items),
    /// and its modules are still loaded with the safe `Gpu::load_module`.
    ///
    /// # Safety
    /// The caller vouches for what `gpukern::Gpu::load_ptx` asks of the
    /// modules this builds: every manifest global in them (`gpukern_ew_*`,
    /// `gpukern_kernel_*`, `gpukern_pdl_*`) was emitted by gpukern-device's
    /// `elementwise!` or `#[gpukern_macros::kernel]` for the entry points of
    /// those names, and the crate's own `unsafe` code is sound for every
    /// launch those entry points accept (so a kernel touches only the
    /// slices it is given).
    pub unsafe fn trust_unsafe_code(mut self) -> Builder {
        self.trust_unsafe = true;
        self
    }
    /// Adds a module to build (`Sm70`, `Sm90`, or both by calling twice).
    pub fn arch(mut self, arch: Arch) -> Builder {
        if !self.archs.contains(&arch) {
            self.archs.push(arch);
        }
        self
    }
    /// The toolchain to build with. Default: the `channel` of a
    /// `rust-toolchain.toml` in the kernel crate's folder or above it, else
    /// [`PINNED_TOOLCHAIN`].
    pub fn toolchain(mut self, toolchain: impl Into<String>) -> Builder {
        self.toolchain = Some(toolchain.into());
        self
    }
    /// The inner cargo's target directory. Default: `OUT_DIR/gpukern-build` in
    /// a build script, else the kernel crate's `target/gpukern-build`. Each
    /// module builds in its own subfolder.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.target_dir = Some(dir.into());
        self
    }
    /// Where the PTX files go. Default: `OUT_DIR` in a build script, else the
    /// target directory.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.out_dir = Some(dir.into());
        self
    }
    /// Lets the inner cargo use the network from the start (default: offline
    /// first, online only to fetch crates the cargo cache lacks).
    pub fn online(mut self) -> Builder {
        self.network = Network::Online;
        self
    }
    /// `true`: never use the network; when the cargo cache lacks a crate the
    /// build fails with [`BuildError::OfflineCacheMissing`], which names the
    /// command that fetches it. `false`: the default ([`Network::Auto`]).
    /// `GPUKERN_BUILD_OFFLINE=1` or `CARGO_NET_OFFLINE=true` in the environment
    /// has the same effect as `true`.
    pub fn offline(mut self, offline: bool) -> Builder {
        self.network = if offline { Network::Offline } else { Network::Auto };
        self
    }

    /// The network mode this builder will use (the environment included).
    pub fn resolved_network(&self) -> Network {
        let set = |k: &str| std::env::var(k).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
        if set(OFFLINE_ENV) || set("CARGO_NET_OFFLINE") {
            Network::Offline
        } else {
            self.network
        }
    }

    /// The toolchain this builder will use.
    pub fn resolved_toolchain(&self) -> String {
        if let Some(t) = &self.toolchain {
            return t.clone();
        }
        if let Ok(t) = std::env::var("GPUKERN_TOOLCHAIN") {
            return t;
        }
        toolchain_file_channel(&self.krate).unwrap_or_else(|| PINNED_TOOLCHAIN.to_string())
    }

    /// Builds every module asked for and writes `<lib>.ptx` / `<lib>_sm90.ptx`
    /// into the output folder.
    pub fn build(&self) -> Result<Vec<Built>, BuildError> {
        let krate = absolute(&self.krate)?;
        if !krate.join("Cargo.toml").is_file() {
            return Err(BuildError::NotACrate(krate));
        }
        let toolchain = self.resolved_toolchain();
        let sysroot = run::check_toolchain(&toolchain)?;
        let network = self.resolved_network();
        let target_dir = match &self.target_dir {
            Some(d) => absolute(d)?,
            None => match std::env::var_os("OUT_DIR") {
                Some(o) => PathBuf::from(o).join("gpukern-build"),
                None => krate.join("target/gpukern-build"),
            },
        };
        let out_dir = match &self.out_dir {
            Some(d) => absolute(d)?,
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).unwrap_or_else(|| target_dir.clone()),
        };
        std::fs::create_dir_all(&out_dir)
            .map_err(|source| BuildError::Io { what: format!("creating {}", out_dir.display()), source })?;
        let archs = if self.archs.is_empty() { vec![Arch::Sm70] } else { self.archs.clone() };
        let mut built = Vec::new();
        for arch in archs {
            let dir = target_dir.join(arch.name());
            let lints: &[&str] = if self.trust_unsafe { &[] } else { &KERNEL_CRATE_LINTS };
            let (ptx_path, sources) = run::cargo_build(&krate, &toolchain, &sysroot, arch, &dir, network, lints)?;
            let ptx = std::fs::read_to_string(&ptx_path)
                .map_err(|source| BuildError::Io { what: format!("reading {}", ptx_path.display()), source })?;
            let stem = ptx_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let path = out_dir.join(format!("{stem}{}.ptx", arch.suffix()));
            std::fs::write(&path, &ptx)
                .map_err(|source| BuildError::Io { what: format!("writing {}", path.display()), source })?;
            built.push(Built { arch, path, ptx, sources });
        }
        Ok(built)
    }

    /// [`Builder::build`] from a build script: the PTX goes to `OUT_DIR` with
    /// the Rust file of [`rust_consts`] beside it (`<lib>_ptx.rs`), and
    /// cargo is told to rerun the script when any source of the kernel crate
    /// (or of its dependencies), its manifest, or the toolchain choice changes.
    pub fn build_script(&self) -> Result<Vec<Built>, BuildError> {
        if std::env::var_os("OUT_DIR").is_none() {
            return Err(BuildError::NotInBuildScript("OUT_DIR"));
        }
        let krate = absolute(&self.krate)?;
        // Before building, so that a failed build still reruns once fixed.
        println!("cargo:rerun-if-changed={}", krate.join("Cargo.toml").display());
        println!("cargo:rerun-if-changed={}", krate.join("src").display());
        println!("cargo:rerun-if-env-changed=GPUKERN_TOOLCHAIN");
        println!("cargo:rerun-if-env-changed={OFFLINE_ENV}");
        let built = self.build()?;
        consts::write_rust_consts(&built)?;
        let mut seen = std::collections::BTreeSet::new();
        for b in &built {
            for s in &b.sources {
                if seen.insert(s.clone()) {
                    println!("cargo:rerun-if-changed={}", s.display());
                }
            }
        }
        Ok(built)
    }
}
