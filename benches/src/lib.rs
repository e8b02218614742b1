//! Shared measurement code for the Criterion benches and the `report` binary.
//!
//! Timing is device time from CUDA events around the launches (never host wall
//! clock around launch + sync, which would measure the launch path). Inputs are
//! fresh random data; every variant's output is checked bit-exact against the CPU
//! reference before its numbers count.

use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::{Dtype, Element, Gpu, Stream};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

pub mod cub;
pub mod custom;
pub mod foreach;
pub mod hopper;
pub mod ops;
pub mod report;
pub mod studies;
pub mod sum;
mod workload;

pub use workload::{Pick, Workload};

/// Random u32 words (for the ceiling kernels, where only the bytes count).
pub fn random_words(n: usize, seed: u64) -> Vec<u32> {
    let mut v = vec![0u32; n];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, chunk)| {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ ((i as u64) << 32));
        chunk.iter_mut().for_each(|x| *x = rng.gen());
    });
    v
}

/// Bytes one add moves through DRAM: read a and b, write c.
pub fn add_bytes(dtype: Dtype, n: usize) -> u64 {
    3 * n as u64 * dtype.size() as u64
}

/// GB/s (10^9 bytes per second) for `bytes` in `ms` milliseconds.
pub fn gbps(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Median of a sample (sorted in place).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        0.5 * (xs[m - 1] + xs[m])
    }
}

/// Random inputs for benchmarks: moderate finite values (so no special-case path
/// is timed), generated in parallel.
pub fn random_inputs<T: Element>(n: usize, seed: u64) -> Vec<T> {
    random_inputs_in(n, seed, -64.0, 64.0)
}

/// Random inputs uniform in `[lo, hi)` (before rounding to `T`), in parallel.
pub fn random_inputs_in<T: Element>(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<T> {
    let mut v = vec![T::from_bits32(0); n];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, chunk)| {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64);
        for x in chunk {
            *x = to_elem(rng.gen_range(lo..hi));
        }
    });
    v
}

/// The nearest `T` to an f32 (ties to even).
pub fn to_elem<T: Element>(f: f32) -> T {
    match T::DTYPE {
        Dtype::F32 => T::from_bits32(f.to_bits()),
        Dtype::F16 => T::from_bits32(f16::from_f32(f).to_bits() as u32),
        Dtype::Bf16 => T::from_bits32(bf16::from_f32(f).to_bits() as u32),
    }
}

/// The CPU reference in parallel.
pub fn reference_par<T: ReferenceAdd>(a: &[T], b: &[T]) -> Vec<T> {
    let mut out = vec![T::from_bits32(0); a.len()];
    out.par_chunks_mut(1 << 20).enumerate().for_each(|(i, o)| {
        let s = i << 20;
        for (j, x) in o.iter_mut().enumerate() {
            *x = T::reference_add(a[s + j], b[s + j]);
        }
    });
    out
}

/// Index of the first element that differs from the reference, in parallel.
pub fn first_mismatch_par<T: Element>(got: &[T], want: &[T]) -> Option<usize> {
    if got.len() != want.len() {
        return Some(got.len().min(want.len()));
    }
    got.par_chunks(1 << 20)
        .zip(want.par_chunks(1 << 20))
        .enumerate()
        .filter_map(|(i, (g, w))| reference::first_mismatch(g, w).map(|j| (i << 20) + j))
        .min()
}

/// Timed launches per measurement: fewer as the bytes grow.
pub fn reps_for(bytes: u64) -> usize {
    match bytes {
        b if b <= 1 << 24 => 200,
        b if b <= 1 << 28 => 60,
        _ => 25,
    }
}

/// How long the spin kernel keeps the GPU busy before a timed region: longer than
/// the host needs to queue an event pair and a launch.
pub const SPIN_NS: u64 = 50_000;

/// Median device time (ms) of what `op` queues, spin-isolated, over `reps` runs
/// after `warmup` untimed ones.
pub fn time_op(
    gpu: &Gpu,
    stream: &Stream,
    reps: usize,
    warmup: usize,
    mut op: impl FnMut(&Stream) -> gpukern::Result<()>,
) -> gpukern::Result<f64> {
    for _ in 0..warmup {
        op(stream)?;
    }
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        gpu.studies().spin(stream, SPIN_NS)?;
        t.push(stream.time(&mut op)? as f64);
    }
    Ok(median(&mut t))
}

/// Criterion's `iter_custom` body for every bench: GPU time of `iters` runs of
/// `op(i, stream)` back to back between one event pair, queued behind the spin
/// kernel so the events time the GPU's work and not the host's queueing.
pub fn gpu_time(
    gpu: &Gpu,
    stream: &Stream,
    iters: u64,
    mut op: impl FnMut(usize, &Stream) -> gpukern::Result<()>,
) -> std::time::Duration {
    gpu.studies().spin(stream, SPIN_NS).expect("spin");
    let ms = stream.time(|s| (0..iters as usize).try_for_each(|i| op(i, s))).expect("timed launches");
    std::time::Duration::from_secs_f64(ms as f64 * 1e-3)
}

/// GPU 0 for a bench binary, or exit with the reason (no device, no driver).
pub fn bench_gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    })
}

/// Measured device-to-device copy bandwidth in GB/s (bytes read + bytes written),
/// median of `reps` copies of `bytes`.
pub fn copy_gbps(gpu: &Gpu, bytes: usize, reps: usize) -> gpukern::Result<f64> {
    let stream = gpu.stream()?;
    let n = bytes / 4;
    let src = gpu.alloc::<u32>(n)?;
    let mut dst = gpu.alloc::<u32>(n)?;
    {
        let mut s = src;
        s.fill_bits(0x1234_5678)?;
        let src = s;
        let mut t = Vec::new();
        for i in 0..reps + 3 {
            let ms = stream.time(|st| dst.copy_from(&src, st))?;
            if i >= 3 {
                t.push(ms as f64);
            }
        }
        Ok(gbps(2 * bytes as u64, median(&mut t)))
    }
}
