//! The CPU baseline (seed 002's CPU-vs-GPU table), with a CPU that tries: all
//! cores through rayon; f32 and bf16 in a loop the compiler vectorises (bf16's
//! `+` widens by a shift and rounds back, which vectorises well); f16 converted
//! to f32 in blocks with `half`'s slice conversions (F16C on x86 where the CPU
//! has it), added in f32 and rounded once back. Both 16-bit paths give the
//! correctly rounded sum (24 ≥ 2·11 + 2 and 2·8 + 2). Measured on an H200 host
//! (16 threads, 2^28): the block conversion made f16 3.5× faster than its own
//! `+` (45 vs 13 GB/s) but bf16 1.5× slower (45 vs 70), so bf16 keeps the loop.

use std::time::Instant;

use gpukern::half::slice::HalfFloatSliceExt;
use gpukern::half::{bf16, f16};
use gpukern::reference::ReferenceAdd;
use gpukern::Dtype;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{add_bytes, gbps, median};

/// Elements per block of conversion work (two f32 scratch blocks on the stack).
const BLOCK: usize = 4096;

/// An element type the CPU adds block by block.
pub trait CpuAdd: ReferenceAdd {
    /// `c = a + b` for slices of equal length (at most `BLOCK` for the 16-bit types).
    fn add_block(a: &[Self], b: &[Self], c: &mut [Self]);
}

macro_rules! plain_loop {
    ($($t:ty),*) => {$(
        impl CpuAdd for $t {
            fn add_block(a: &[$t], b: &[$t], c: &mut [$t]) {
                for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
                    *c = *a + *b;
                }
            }
        }
    )*};
}
plain_loop!(f32, bf16);

impl CpuAdd for f16 {
    fn add_block(a: &[f16], b: &[f16], c: &mut [f16]) {
        let (mut x, mut y) = ([0f32; BLOCK], [0f32; BLOCK]);
        let n = a.len();
        a.convert_to_f32_slice(&mut x[..n]);
        b.convert_to_f32_slice(&mut y[..n]);
        for (x, y) in x[..n].iter_mut().zip(&y[..n]) {
            *x += *y;
        }
        c.convert_from_f32_slice(&x[..n]);
    }
}

/// What the CPU did, for the table.
pub fn method(dtype: Dtype) -> String {
    let threads = rayon::current_num_threads();
    let f16c = cfg!(any(target_arch = "x86", target_arch = "x86_64")) && has_f16c();
    match dtype {
        Dtype::F32 => format!("loop vectorised by the compiler, {threads} threads (rayon)"),
        Dtype::F16 => format!(
            "blocks of {BLOCK}: half's slice conversion to f32 ({}), f32 add, back; {threads} threads",
            if f16c { "F16C" } else { "software" }
        ),
        Dtype::Bf16 => {
            format!("loop of half's bf16 `+` (widen by shift, f32 add, round), vectorised; {threads} threads")
        }
    }
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn has_f16c() -> bool {
    std::arch::is_x86_feature_detected!("f16c")
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn has_f16c() -> bool {
    false
}

/// CPU add of `n` elements: (one thread GB/s, all cores GB/s, bit-exact), median
/// of runs.
pub fn measure<T: CpuAdd>(n: usize) -> (f64, f64, bool) {
    let a = crate::random_inputs::<T>(n, 1);
    let b = crate::random_inputs::<T>(n, 2);
    let mut c = vec![T::from_bits32(0); n];
    let bytes = add_bytes(T::DTYPE, n);
    let reps = ((1usize << 26) / n.max(1)).clamp(3, 1000);
    let mut time = |par: bool| {
        let mut t = Vec::new();
        for _ in 0..reps {
            let t0 = Instant::now();
            if par {
                c.par_chunks_mut(BLOCK)
                    .zip(a.par_chunks(BLOCK))
                    .zip(b.par_chunks(BLOCK))
                    .for_each(|((c, a), b)| T::add_block(a, b, c));
            } else {
                c.chunks_mut(BLOCK)
                    .zip(a.chunks(BLOCK))
                    .zip(b.chunks(BLOCK))
                    .for_each(|((c, a), b)| T::add_block(a, b, c));
            }
            std::hint::black_box(&mut c);
            t.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        gbps(bytes, median(&mut t))
    };
    let (one, all) = (time(false), time(true));
    let exact = crate::first_mismatch_par(&c, &crate::reference_par(&a, &b)).is_none();
    (one, all, exact)
}

/// [`measure`] for a dtype.
pub fn gbps_of(dtype: Dtype, n: usize) -> (f64, f64, bool) {
    match dtype {
        Dtype::F32 => measure::<f32>(n),
        Dtype::F16 => measure::<f16>(n),
        Dtype::Bf16 => measure::<bf16>(n),
    }
}

/// The CPU baseline at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CpuRow {
    pub dtype: String,
    pub n: usize,
    pub cpu_1t_gbps: f64,
    pub cpu_all_gbps: f64,
    pub threads: usize,
    pub method: String,
    pub verified: bool,
    pub gpu_best_gbps: f64,
    pub speedup_vs_1t: f64,
    pub speedup_vs_all: f64,
}

pub fn render(s: &mut String, rows: &[CpuRow]) {
    use std::fmt::Write as _;
    let Some(first) = rows.first() else { return };
    let _ = writeln!(s, "\n## CPU baseline (host clock, median; every result checked against the reference)\n");
    let mut seen = Vec::new();
    for k in rows {
        if !seen.contains(&&k.dtype) {
            seen.push(&k.dtype);
            let _ = writeln!(s, "- {}: {}", k.dtype, k.method);
        }
    }
    let _ = writeln!(s, "\n| dtype | n | CPU 1 thread GB/s | CPU {} threads GB/s | GPU best GB/s | speedup vs 1 thread | vs all threads |\n|---|---|---:|---:|---:|---:|---:|", first.threads);
    for k in rows {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.1} | {:.1} | {:.0} | {:.1}× | {:.1}× |",
            k.dtype,
            k.n.trailing_zeros(),
            k.cpu_1t_gbps,
            k.cpu_all_gbps,
            k.gpu_best_gbps,
            k.speedup_vs_1t,
            k.speedup_vs_all
        );
    }
}
