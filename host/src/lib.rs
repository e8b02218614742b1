//! # gpukern
//!
//! Safe host library for CUDA kernels written in Rust (`kernels-gpu`), compiled to
//! PTX by rustc's `nvptx64-nvidia-cuda` backend and embedded here.
//!
//! ```no_run
//! use gpukern::{BinaryOp, Gpu, reference};
//! use half::f16;
//!
//! let gpu = Gpu::new(0)?;
//! let a: Vec<f16> = (0..1000).map(|i| f16::from_f32(i as f32 * 0.5)).collect();
//! let b: Vec<f16> = (0..1000).map(|i| f16::from_f32(1.0 - i as f32)).collect();
//! let c = gpukern::blocking::binary(&gpu, BinaryOp::Add, &a, &b)?;
//! assert_eq!(reference::first_mismatch(&c, &reference::add(&a, &b)), None);
//! # Ok::<(), gpukern::Error>(())
//! ```
//!
//! * [`Gpu`]: a device with every kernel resolved at creation.
//! * [`DeviceVec`], [`View`], [`ViewMut`]: typed device memory for `f32`,
//!   [`half::f16`] and [`half::bf16`].
//! * [`Gpu::binary`], [`Gpu::unary`], [`Gpu::axpby`]: the element-wise
//!   operations with the automatic choice; `*_opts` with [`Opts`]; what a
//!   call launches: [`Gpu::plan`].
//! * [`Gpu::norm`]: RMSNorm, LayerNorm, softmax, with the same [`Opts`];
//!   their operands are one type, [`Norm`], on a stream, in a graph, on
//!   cudarc buffers and in the CPU reference.
//! * [`DeviceVec::copy_from`] and [`ViewMut::copy_from`] (from device or
//!   host memory), [`PinnedVec::copy_from`] and [`HostCopyFrom`] (into host
//!   memory): copies on a stream, destination first, `dst.copy_from(&src,
//!   &stream)`.
//! * [`Gpu::load_module`]: your own kernel crate's operations
//!   ([`CustomUnary`], [`CustomBinary`]) and typed kernels ([`TypedKernel`]).
//! * [`Gpu::graph`]: a CUDA graph of the library's operations and your own
//!   ([`GraphBuilder::custom_unary`], [`GraphBuilder::kernel`]) on
//!   registered buffers.
//! * [`Studies`] (`gpu.studies()`): the seed's add variants by name
//!   ([`Variant`]), the seed-003 studies, sweeps and bench helpers.
//! * [`reference`](mod@reference): the CPU reference the tests and benches verify against.
//!
//! Unsafe code (driver calls, launches) lives in the private module `raw`;
//! the few blocks outside it each name the contract they rely on
//! (ARCHITECTURE.md, "Trust boundary", lists them). The public API's `unsafe`
//! functions are the ones whose contract no check can enforce:
//! [`Gpu::load_ptx`] (PTX text whose manifests the caller vouches for; the
//! safe [`Gpu::load_module`] takes a [`BuiltPtx`] that gpukern-build's
//! generated code made), [`Module::launch`] (any kernel),
//! [`View::from_raw_parts`]/[`ViewMut::from_raw_parts`] (foreign memory),
//! [`Gpu::with_ptx`] (replacement PTX) and [`Gpu::reset`] (the shared primary
//! context). Errors are [`Error`] values; the library does not panic on bad
//! input.
//!
//! What became `unsafe` does not compile without it:
//!
//! ```compile_fail,E0133
//! let _ = gpukern::Gpu::with_ptx(0, gpukern::PTX);
//! ```
//!
//! ```compile_fail,E0133
//! fn recover(gpu: &gpukern::Gpu) { let _ = gpu.reset(); }
//! ```
//!
//! PTX text, whose manifests could claim anything, needs `unsafe` too:
//!
//! ```compile_fail,E0133
//! fn load(gpu: &gpukern::Gpu, ptx: &str) { let _ = gpu.load_ptx(ptx); }
//! ```
//!
//! ```compile_fail,E0133
//! let _ = gpukern::BuiltPtx::from_gpukern_build(".version 7.0", "sm_70");
//! ```
//!
//! ```compile_fail,E0308
//! fn load(gpu: &gpukern::Gpu, ptx: &str) { let _ = gpu.load_module(ptx); }
//! ```

#![deny(missing_docs)]

mod deprecated;
mod device;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod graph;
#[cfg(feature = "cudarc")]
mod interop;
mod launch;
mod memory;
mod norm_plan;
mod norms;
mod ops;
mod pipeline_checks;
mod ptx_text;
mod raw;
pub mod reference;
mod studies;
#[doc = include_str!("surface.md")]
pub mod surface {}
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub mod test_hooks;
mod user;

#[allow(deprecated)]
pub use deprecated::{LaunchConfig, NormOptions, NormSlots};
pub use device::Pdl;
pub use device::{
    device_count, kernel_names, sm90_kernel_names, DeviceInfo, Gpu, KernelResources, Stream, PTX, PTX_SM90,
};
pub use error::{AssertFailure, DriverError, Error, Result};
pub use graph::{AddGraph, Graph, GraphArg, GraphArgs, GraphBuilder, GraphSlots, Slot};
pub use half;
#[cfg(feature = "cudarc")]
pub use interop::{CudarcExt, CudarcInput, CudarcNorm, CudarcOutput};
pub use kernels_gpu::glu::GluOp;
pub use kernels_gpu::ops::{BinaryOp, OpKind, OpPattern, UnaryOp};
pub use kernels_gpu::Dtype;
pub use launch::{AutoPlan, BulkConfig, LaunchShape, Opts, Plan, Variant};
pub use memory::{AsView, AsViewMut, CopySrc, DeviceVec, Element, HostCopyFrom, Pod, View, ViewMut};
pub use memory::{HostDst, HostMut, HostRef, HostSrc, PinnedVec};
pub use norm_plan::{NormOp, NormOrder, NormPlan, NormStrategy};
pub use norms::{Norm, Rows, MAX_COLS};
pub use ops::{blocking, AddManyPlan, Call, GluIn, Triple};
pub use studies::{CountVariant, MatmulVariant, Studies, TransposeVariant};
pub use user::{Arg, ArgSlots, BuiltPtx, CustomBinary, CustomPattern, CustomUnary, HostArg, HostArgs, HostElem};
pub use user::{Launch, Module, ParamList, ParamOf, TypedKernel};

/// The signature types of typed kernels (`#[gpukern_macros::kernel]`), from
/// `gpukern_device::kernel`: what a kernel crate's signature type is made of.
pub mod sig {
    pub use gpukern_device::kernel::{
        input, output, scalar, Bf16Bits, F16Bits, InArg, KernelElem, KernelSig, OutArg, Param, ParamKind, Scalar,
    };
}

/// The book (`docs/src`), compiled as doctests so that its code follows the
/// API: each chapter is the doc comment of an item that exists only when
/// rustdoc collects doctests. (The candle chapter is gpukern-candle's.)
#[cfg(doctest)]
mod book {
    macro_rules! chapters {
        ($($name:ident = $file:literal),* $(,)?) => {$(
            #[doc = include_str!(concat!("../../docs/src/", $file))]
            struct $name;
        )*};
    }
    chapters! {
        Introduction = "introduction.md",
        GettingStarted = "getting-started.md",
        Elementwise = "elementwise.md",
        Math = "math.md",
        Norms = "norms.md",
        Fused = "fused.md",
        Chains = "chains.md",
        Streams = "streams.md",
        Kernels = "kernels.md",
        TypedKernels = "typed-kernels.md",
        Device = "device.md",
        Measuring = "measuring.md",
        Contributing = "contributing.md",
    }
}

#[cfg(test)]
mod send_sync {
    // Handles are shared across threads; these fail to compile if that changes.
    const fn assert_send_sync<T: Send + Sync>() {}
    const _: () = assert_send_sync::<super::Gpu>();
    const _: () = assert_send_sync::<super::Stream>();
    const _: () = assert_send_sync::<super::DeviceVec<f32>>();
    const _: () = assert_send_sync::<super::View<'static, half::f16>>();
    const _: () = assert_send_sync::<super::AddGraph<'static>>();
}
