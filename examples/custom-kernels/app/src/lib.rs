//! The example's host side, shared by the program and its tests: the embedded
//! PTX, the checks against the CPU rules.

use gpukern::half::bf16;
use gpukern::{CustomUnary, Gpu, Module, Result, Stream, UnaryOp};

mod sum;
pub use sum::Sum;

// What build.rs made with gpukern-build: `CUSTOM_KERNELS` (the kernel crate's
// PTX for sm_70) and `CUSTOM_KERNELS_SM90` (for sm_90: the PDL twins and
// prologues too), as `gpukern::BuiltPtx` values `Gpu::load_module` takes
// without `unsafe`.
include!(concat!(env!("OUT_DIR"), "/custom_kernels_ptx.rs"));

/// The kernel crate's PTX for sm_70.
pub const PTX: &str = CUSTOM_KERNELS.text();
/// The same crate built for sm_90.
pub const PTX_SM90: &str = CUSTOM_KERNELS_SM90.text();

/// Loads the module into `gpu`: the sm_90 build on Hopper and later, else the
/// portable one.
pub fn load(gpu: &Gpu) -> Result<Module> {
    gpu.load_module(if gpu.info().has_sm90() { CUSTOM_KERNELS_SM90 } else { CUSTOM_KERNELS })
}

/// The example's SiLU on `T`, launched as the library's `silu` is on every GPU
/// (`CustomUnary::tuned_as`): the lane rule is the same, so the measured grid
/// choice of `UnaryOp::Silu` applies to it too.
pub fn silu_op<T: gpukern::Element>(module: &Module) -> Result<CustomUnary<T>> {
    Ok(module.unary::<T>("silu")?.tuned_as(UnaryOp::Silu))
}

/// The element types the example instantiates, with their CPU rules.
pub trait Lane: gpukern::Element {
    /// SiLU on the CPU.
    fn silu(x: Self) -> Self;
    /// relu(alpha·a + beta·b) on the CPU.
    fn relu_axpy(alpha: f32, beta: f32, a: Self, b: Self) -> Self;
    /// From f32 (rounded).
    fn of(x: f32) -> Self;
    /// Bits, for bit-exact comparison (NaN compared as NaN separately).
    fn bits(self) -> u32;
    /// True for NaN.
    fn nan(self) -> bool;
}

impl Lane for f32 {
    fn silu(x: f32) -> f32 {
        custom_kernels::cpu::silu_f32(x)
    }
    fn relu_axpy(alpha: f32, beta: f32, a: f32, b: f32) -> f32 {
        custom_kernels::cpu::relu_axpy_f32(alpha, beta, a, b)
    }
    fn of(x: f32) -> f32 {
        x
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Lane for bf16 {
    fn silu(x: bf16) -> bf16 {
        bf16::from_bits(custom_kernels::cpu::silu_bf16(x.to_bits()))
    }
    fn relu_axpy(alpha: f32, beta: f32, a: bf16, b: bf16) -> bf16 {
        bf16::from_bits(custom_kernels::cpu::relu_axpy_bf16(alpha, beta, a.to_bits(), b.to_bits()))
    }
    fn of(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// Index of the first element where `got` and `want` differ (NaN equals NaN;
/// zeros compared by sign).
pub fn first_mismatch<T: Lane>(got: &[T], want: &[T]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| !(g.bits() == w.bits() || (g.nan() && w.nan())))
}

/// Inputs with special values mixed in: ±0, ±inf, NaN, tiny and huge values.
pub fn inputs<T: Lane>(n: usize, seed: u64) -> Vec<T> {
    let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, -1e-40, 3e38, -3e38, 88.9, -104.0];
    let mut s = seed | 1;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if i % 97 == 0 {
                T::of(specials[(s % specials.len() as u64) as usize])
            } else {
                T::of(((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 40.0)
            }
        })
        .collect()
}

/// Small integers in [-8, 8], so every order of summation gives the exact
/// sum (below 2^24 in magnitude): inputs of the typed `block_sum`.
pub fn ints(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 50) % 17) as f32 - 8.0
        })
        .collect()
}

/// Runs SiLU and relu_axpy on `n` elements of `T` at element offset `offset`
/// into each buffer, with 64-element canaries around each output; returns
/// `Err(description)` on any mismatch or canary change.
pub fn check<T: Lane>(
    gpu: &Gpu,
    module: &Module,
    stream: &Stream,
    n: usize,
    offset: usize,
) -> std::result::Result<(), String> {
    let e = |e: gpukern::Error| e.to_string();
    let (alpha, beta) = (1.5f32, -0.75f32);
    let total = n + offset + 64;
    let a = inputs::<T>(total, 1 + n as u64);
    let b = inputs::<T>(total, 7 + n as u64);
    let (da, db) = (gpu.upload(&a).map_err(e)?, gpu.upload(&b).map_err(e)?);
    let mut dc = gpu.alloc::<T>(total + 64).map_err(e)?;
    let silu = silu_op::<T>(module).map_err(e)?;
    let relu = module.binary::<T>("relu_axpy").map_err(e)?;
    let range = offset..offset + n;
    for poison in [0xffff_ffffu32, 0x7fc0_1234] {
        for which in ["silu", "relu_axpy"] {
            dc.fill(T::from_bits32(poison)).map_err(e)?;
            let out = dc.slice_mut(offset + 32..offset + 32 + n).map_err(e)?;
            let av = da.slice(range.clone()).map_err(e)?;
            if which == "silu" {
                silu.run(av, out, [0.0, 0.0], stream).map_err(e)?;
            } else {
                relu.run(av, db.slice(range.clone()).map_err(e)?, out, [alpha, beta], stream).map_err(e)?;
            }
            stream.synchronize().map_err(e)?;
            let got = dc.to_vec().map_err(e)?;
            let want: Vec<T> = range
                .clone()
                .map(|i| if which == "silu" { T::silu(a[i]) } else { T::relu_axpy(alpha, beta, a[i], b[i]) })
                .collect();
            if let Some(i) = first_mismatch(&got[offset + 32..offset + 32 + n], &want) {
                return Err(format!(
                    "{which} n={n} offset={offset}: element {i} got {:#x}, want {:#x}",
                    got[offset + 32 + i].bits(),
                    want[i].bits()
                ));
            }
            let canary_ok = got[..offset + 32].iter().chain(&got[offset + 32 + n..]).all(|x| {
                let bits = x.bits();
                bits == poison & (if std::mem::size_of::<T>() == 2 { 0xffff } else { u32::MAX })
            });
            if !canary_ok {
                return Err(format!("{which} n={n} offset={offset}: a canary changed"));
            }
        }
    }
    Ok(())
}
