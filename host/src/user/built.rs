//! Where a user module's PTX comes from, and why the safe handles may trust
//! it: [`BuiltPtx`], the PTX that gpukern-build compiled (constructed by the
//! code its build script generates), loaded with the safe
//! [`Gpu::load_module`]; any other text only through the `unsafe`
//! [`Gpu::load_ptx`].
//!
//! A module's manifests (`gpukern_ew_<op>`, `gpukern_kernel_<name>`,
//! `gpukern_pdl_<name>`) are globals the PTX declares about itself: the host
//! checks that they are consistent with the entry points (parameter sizes,
//! the PDL wait, the ABI version), but only their provenance says the kernels
//! behind them stay inside the buffers they are given. Hand-written PTX can
//! declare `gpukern_ew_evil` over a kernel that stores anywhere; so loading
//! text is `unsafe`, and the safe path takes only what gpukern-build made
//! from a kernel crate. gpukern-build compiles that crate with `-F
//! unsafe_code` (`gpukern_build::KERNEL_CRATE_LINTS`), which refuses every
//! way a crate can declare a global or an entry point of its own without an
//! `unsafe` block (`#[no_mangle]`, `#[export_name]`, `#[link_section]`,
//! `global_asm!`), while the expansions of `elementwise!`, `#[kernel]` and
//! `gpu_printf!` pass it (`allow_internal_unsafe`: each is sound for every
//! input). So every manifest in such a module is our macros', over kernels
//! whose bodies are safe Rust. A crate that needs its own `unsafe` is built
//! only through the `unsafe` `Builder::trust_unsafe_code`, whose caller
//! vouches for it; no safe function of gpukern-build writes the constant for
//! PTX it did not compile (`Built` has private fields).
//!
//! Outside this boundary: the files a build script writes. A build script
//! can write any Rust or PTX into `OUT_DIR` (it could rewrite the PTX after
//! gpukern-build wrote it, or the generated constant file), as it can
//! rewrite any source the compiler reads; Rust's safety does not cover a
//! program that edits its own inputs, and neither does this crate's.

use std::sync::Arc;

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::raw::RawModule;
use crate::user::module::{Module, ModuleInner};

/// PTX that gpukern-build compiled from a kernel crate. A build script that
/// runs `gpukern_build::Builder::build_script` gets a Rust file beside the
/// PTX that constructs one per module; include it and load with
/// [`Gpu::load_module`], no `unsafe` needed:
///
/// ```ignore
/// // src/lib.rs of the host crate; build.rs built the kernel crate `my-kernels`.
/// include!(concat!(env!("OUT_DIR"), "/my_kernels_ptx.rs")); // MY_KERNELS, MY_KERNELS_SM90
/// let module = gpu.load_module(MY_KERNELS)?;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltPtx {
    text: &'static str,
    arch: &'static str,
}

impl BuiltPtx {
    /// The PTX `text` of one module gpukern-build compiled for `arch`
    /// (`"sm_70"`, `"sm_90"`). Called by the file gpukern-build generates.
    ///
    /// # Safety
    /// `text` is, unchanged, the PTX gpukern-build compiled from a kernel
    /// crate, and that crate upholds what [`Gpu::load_ptx`] asks: every
    /// manifest global in it was emitted by `gpukern_device::elementwise!` or
    /// `#[gpukern_macros::kernel]` for the entry points of those names, and
    /// its own `unsafe` code (blocks, `unsafe fn`s, hand-written
    /// `extern "ptx-kernel"` entries, `#[no_mangle]` items) is sound. A crate
    /// that gpukern-build compiled under its default `-F unsafe_code`
    /// (`gpukern_build::KERNEL_CRATE_LINTS`) meets this by construction: it
    /// has no `unsafe` code of its own, and the lint refuses every item that
    /// could declare a manifest or an entry point outside our macros. One
    /// built with the `unsafe` `Builder::trust_unsafe_code` meets it by that
    /// call's contract.
    pub const unsafe fn from_gpukern_build(text: &'static str, arch: &'static str) -> BuiltPtx {
        BuiltPtx { text, arch }
    }

    /// The PTX text.
    pub const fn text(&self) -> &'static str {
        self.text
    }

    /// The architecture it was built for (`"sm_70"`, `"sm_90"`).
    pub const fn arch(&self) -> &'static str {
        self.arch
    }
}

impl Gpu {
    /// Loads a module gpukern-build compiled (see [`BuiltPtx`]) into this
    /// GPU's context. Fails with [`crate::Error::PtxLoad`] when the driver
    /// rejects it (a module built for sm_90 on an older GPU, say).
    pub fn load_module(&self, ptx: BuiltPtx) -> Result<Module> {
        // SAFETY: a BuiltPtx is made only under load_ptx's contract (its
        // constructor's safety section), by gpukern-build's generated code.
        unsafe { self.load_ptx(ptx.text) }
    }

    /// Loads PTX text into this GPU's context, as [`Gpu::load_module`] does.
    ///
    /// # Safety
    /// The safe handles of the module ([`Module::unary`], [`Module::binary`],
    /// [`Module::kernel`]) trust what its text declares about itself, so the
    /// caller vouches that every manifest global in it tells the truth:
    /// * `gpukern_ew_<op>` was emitted by `gpukern_device::elementwise!`
    ///   together with the `<op>_<dtype>` entry points of that name, and
    ///   `gpukern_kernel_<name>` / `gpukern_pdl_<name>` by
    ///   `#[gpukern_macros::kernel]` together with the entry `<name>`;
    /// * those kernels' bodies are sound Rust (safe, or `unsafe` blocks that
    ///   uphold their contracts), so they touch only the slices they are given.
    ///
    /// Text that gpukern-build compiled from such a crate qualifies (prefer
    /// [`BuiltPtx`], which says so without `unsafe`). Hand-written PTX
    /// qualifies only if it declares no such global; its kernels are then
    /// reachable only through the `unsafe` [`Module::launch`].
    pub unsafe fn load_ptx(&self, ptx: &str) -> Result<Module> {
        let raw = RawModule::load(&self.shared.ctx, ptx)?;
        crate::device::context::connect_asserts(&raw, &self.shared.assert_record)?;
        // The list only feeds the "unknown operation" error; text it cannot
        // read lists nothing (the driver accepted the module).
        let ops = crate::ptx_text::declared_ops(ptx).unwrap_or_default();
        Ok(Module { inner: Arc::new(ModuleInner { gpu: self.clone(), raw, ops, ptx: Arc::from(ptx) }) })
    }
}
