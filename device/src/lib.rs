//! # gpukern-device
//!
//! The device side of gpukern: what a CUDA kernel written in Rust reaches for,
//! on stock nightly rustc's `nvptx64-nvidia-cuda` backend (built into PTX by
//! `gpukern-build`). It plays the role of rust-cuda's `cuda_std`.
//!
//! | module | what |
//! |---|---|
//! | `thread` | thread, block and grid indices (64-bit products) |
//! | `walk` | the grid-stride walk over lane groups (32-bit indices below ~2^32 elements), the unrolled walk and the tiled walk |
//! | [`pack`] | the 16-byte pack and 128-bit loads/stores with hints (`.cs`, `.nc`, `.L2::256B`) |
//! | `sync` | block barrier, fences, dynamic and static shared memory |
//! | `warp` | shuffles, votes and warp reductions |
//! | `atomic` | global atomics (integer and f32) |
//! | [`activations`] | exp, log, tanh, sigmoid, silu, gelu, gelu_tanh, rsqrt, sqrt as lane rules over [`math`] |
//! | [`lanes`] | the element types ([`lanes::Elem`]: f32, f16, bf16) and operations ([`lanes::Op`]) |
//! | `patterns` | the element-wise access patterns (scalar, pair, pack, tile) over any `Elem`/`Op` |
//! | `hopper`, [`bulk`] | sm_90: `mbarrier`, `cp.async.bulk`, packed bf16, and the bulk-copy walk |
//! | `ring` | sm_90: a multi-stage ring of shared-memory slots filled by `cp.async.bulk`, and the walk of a persistent block through it |
//! | `cluster` | sm_90: thread-block clusters: rank, cluster barrier, reads of another block's shared memory, the cluster-wide reduction |
//! | [`bits`], [`launch`] | bf16 rounding and NaN classes; launch geometry (also on the host) |
//! | [`math`] | f32 `exp`, `log`, `tanh`, `sigmoid`, `erf`, `sin`/`cos`, `pow`, SiLU/GELU… from FMAs and integer ops (same bits on host and GPU; host-side [`math::check`]) |
//! | [`elementwise!`] | entry points for your own [`lanes::Op`], every width, with an ABI the host library checks |
//!
//! Everything that touches special registers, PTX or memory exists only when
//! compiling for `nvptx64` (`cfg(target_arch = "nvptx64")`); the sm_90 parts
//! only when `target_feature = "sm_90"` too (`gpukern-build`'s `Arch::Sm90`).
//! [`bits`], [`launch`], [`lanes`] and the [`pack::Pack16`] type also compile
//! for the host, so a kernel crate's lane rules can be unit-tested, and used as
//! the CPU reference, on the CPU.
//!
//! A kernel crate using this one is `#![no_std]`, a `cdylib` (plus `rlib` when
//! the host shares its code), and turns on the nightly features its own entry
//! points need: `#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]`. Its
//! host build (and this crate's) needs no nightly feature: it compiles on stable
//! Rust, where f16 lanes are their bits ([`lanes::Half`]).
//! This crate supplies the panic handler (`trap`) of the device build.
#![no_std]
// Nightly features on the device only: the host build (lane rules, bits,
// launch geometry) compiles on stable Rust.
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        f16,
        stdarch_nvptx,
        asm_experimental_arch,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        core_intrinsics,
        link_llvm_intrinsics,
        stmt_expr_attributes,
        allow_internal_unsafe
    ),
    // core::intrinsics is how the dynamic shared-memory intrinsic is reached;
    // allow_internal_unsafe exempts the expansions of this crate's macros that
    // are sound for every input from a kernel crate's `-F unsafe_code`.
    allow(internal_features)
)]
#![deny(missing_docs)]

// The soundness of the safe barrier and warp primitives rests on the PTX ISA's
// rules for sm_70 and later (unaligned `barrier.sync`, `.sync` collectives in
// divergent code); older targets give them the `.aligned` restrictions.
#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_70")))]
compile_error!("gpukern-device needs sm_70 or later: build with `-C target-cpu=sm_70` (gpukern-build does)");

// The host build of `math` (its `fma`/`sqrt`, and `math::check`) uses std.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod activations;
pub mod bits;
pub mod bulk;
pub mod debug;
mod elementwise;
pub mod kernel;
pub mod lanes;
pub mod launch;
pub mod math;
pub mod pack;
pub mod ring;

#[cfg(target_arch = "nvptx64")]
pub mod atomic;
#[cfg(target_arch = "nvptx64")]
pub mod block;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub mod cluster;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub mod hopper;
#[cfg(target_arch = "nvptx64")]
pub mod patterns;
#[cfg(target_arch = "nvptx64")]
pub mod sync;
#[cfg(target_arch = "nvptx64")]
pub mod thread;
#[cfg(target_arch = "nvptx64")]
pub mod walk;
#[cfg(target_arch = "nvptx64")]
pub mod warp;

#[cfg(target_arch = "nvptx64")]
pub use sync::{dynamic_shared, sync_threads, thread_fence, thread_fence_block};
#[cfg(target_arch = "nvptx64")]
pub use thread::{
    at, block_dim_xy, block_xy, global_thread, grid_dim_xy, grid_threads, is_block_leader, lane_id, thread_xy, warp_id,
};
#[cfg(target_arch = "nvptx64")]
pub use walk::{block_tiles, for_each_group, for_each_pack_in_tile, for_each_unrolled};

pub use elementwise::{const_str_eq, EwKind, Params, ABI_MAGIC, ABI_VERSION, EW_DTYPES, EW_PDL, PDL_SUFFIX};

/// The device build's panic handler: `trap` aborts the kernel, and the host
/// sees a launch failure at its next synchronisation.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: trap has no preconditions; it ends the kernel.
    unsafe { core::arch::nvptx::trap() }
}
