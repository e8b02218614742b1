//! This project's CUDA kernels written in Rust, built on `gpukern-device` (the
//! indices, walks, packs, lane rules and access patterns are there).
//!
//! This crate is compiled twice:
//!
//! * for `nvptx64-nvidia-cuda` as a `cdylib`, which yields one `.ptx` file holding
//!   every `extern "ptx-kernel"` entry point (`cargo xtask build-ptx`);
//! * for the host as an `rlib`, so that the host library imports the same lane counts,
//!   kernel names and grid arithmetic that the kernels use, and so that the per-lane
//!   arithmetic (bf16 rounding, NaN classes) is unit-tested on the CPU.
//!
//! Entry points only exist under `cfg(target_arch = "nvptx64")`; everything else is
//! plain `no_std` Rust that compiles on both sides. The device build runs twice:
//! for sm_70 (`ptx/kernels_gpu.ptx`, every portable kernel) and for sm_90 with PTX
//! ISA 8.0 (`ptx/kernels_gpu_sm90.ptx`, only the kernels that need Hopper, such as
//! the bulk-copy adds of [`bulk`]); a module's entry points are compiled under
//! `not(target_feature = "sm_90")` or `target_feature = "sm_90"` accordingly.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_float_math, stmt_expr_attributes)
)]
// The sm_90 build compiles a subset of the kernels; some features go unused there.
#![cfg_attr(all(target_arch = "nvptx64", target_feature = "sm_90"), allow(unused_features))]

// A host `cdylib` needs a panic handler; std brings one. The device build has its
// own in `device`.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod add;
pub mod block;
pub mod bulk;
pub mod ceiling;
pub mod coalesce;
pub mod count;
pub mod debug;
pub mod foreach;
pub mod fusion;
pub mod glu;
pub mod math;
pub mod matmul;
pub mod norms;
pub mod ops;
pub mod pipeline;
pub mod transpose;
pub mod verify;

// The building blocks live in gpukern-device; the host imports the launch
// geometry and bit-level helpers through these paths.
pub use gpukern_device::{bits, launch};

/// Element type of a kernel's operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16: the top 16 bits of a binary32.
    Bf16,
}

impl Dtype {
    /// Every dtype, in the order reports list them.
    pub const ALL: [Dtype; 3] = [Dtype::F32, Dtype::F16, Dtype::Bf16];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
        }
    }

    /// Short lower-case name (`f32`, `f16`, `bf16`).
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }
}
