//! The seed-003 studies for the report: each family naive to optimised, verified,
//! timed with spin-isolated CUDA events, with its own figure of merit.

use gpukern::{CountVariant, Gpu, MatmulVariant, Stream, TransposeVariant, Variant};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{gbps, time_op};

/// One row of the seed-003 studies, by family.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum Study {
    Matmul {
        kernel: String,
        dtype: String,
        n: usize,
        m: usize,
        n_cols: usize,
        k: usize,
        median_us: f64,
        gflops: f64,
        speedup_vs_naive: f64,
        rel_error: f64,
        verified: bool,
    },
    CountEq {
        kernel: String,
        dtype: String,
        n: usize,
        match_rate: f64,
        block: u32,
        median_us: f64,
        gbps: f64,
        speedup_vs_naive: f64,
        count: u64,
        expected: u64,
        verified: bool,
    },
    Coalesce {
        kernel: String,
        stride: u64,
        dtype: String,
        n: usize,
        block: u32,
        median_us: f64,
        gbps: f64,
        slowdown_vs_stride_1: f64,
        verified: bool,
    },
    Transpose {
        kernel: String,
        dtype: String,
        n: usize,
        rows: usize,
        cols: usize,
        median_us: f64,
        gbps: f64,
        speedup_vs_naive: f64,
        verified: bool,
    },
    Fusion {
        kernel: String,
        dtype: String,
        n: usize,
        block: u32,
        median_us: f64,
        bytes_moved: usize,
        ideal_bytes: usize,
        gbps: f64,
        vs_ideal_time: f64,
        speedup_vs_unfused: f64,
        verified: bool,
    },
}

type R<T> = Result<T, String>;

fn e(err: gpukern::Error) -> String {
    err.to_string()
}

fn rng(seed: u64) -> rand::rngs::SmallRng {
    rand::rngs::SmallRng::seed_from_u64(seed)
}

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0.0f32; n];
    v.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
        let mut r = rng(seed ^ ((i as u64) << 32));
        c.iter_mut().for_each(|x| *x = r.gen_range(-1.0..1.0));
    });
    v
}

/// Matrix product at square sizes: GFLOP/s, relative error on sampled rows.
pub fn matmul(gpu: &Gpu, stream: &Stream, sizes: &[usize]) -> R<Vec<Study>> {
    let mut rows = Vec::new();
    for &s in sizes {
        let (a, b) = (random_f32(s * s, 1), random_f32(s * s, 2));
        let (da, db) = (gpu.upload(&a).map_err(e)?, gpu.upload(&b).map_err(e)?);
        let mut dc = gpu.alloc::<f32>(s * s).map_err(e)?;
        let flops = 2.0 * (s as f64).powi(3);
        let sample: Vec<usize> = (0..4).map(|i| (i * 7919) % s).collect();
        let mut naive_ms = f64::NAN;
        for &v in MatmulVariant::ALL {
            let dims = (s as u32, s as u32, s as u32);
            dc.fill_bits(0x7fc0_dead).map_err(e)?;
            gpu.studies().matmul(v, da.view(), db.view(), dc.view_mut(), dims, stream).map_err(e)?;
            stream.synchronize().map_err(e)?;
            let c = dc.to_vec().map_err(e)?;
            let rel = gpukern::reference::matmul_rel_error(&a, &b, &c, (s, s, s), &sample);
            let reps = if s >= 4096 { 5 } else { 20 };
            let ms = time_op(gpu, stream, reps, 1, |st| {
                gpu.studies().matmul(v, da.view(), db.view(), dc.view_mut(), dims, st)
            })
            .map_err(e)?;
            if v == MatmulVariant::Naive {
                naive_ms = ms;
            }
            rows.push(Study::Matmul {
                kernel: v.name().into(),
                dtype: "f32".into(),
                n: s * s,
                m: s,
                n_cols: s,
                k: s,
                median_us: ms * 1e3,
                gflops: flops / (ms * 1e-3) / 1e9,
                speedup_vs_naive: naive_ms / ms,
                rel_error: rel,
                verified: rel <= 1e-5,
            });
        }
    }
    Ok(rows)
}

/// Count-equal at 0%, 1% and 100% matches: GB/s of input, exact counts.
pub fn count(gpu: &Gpu, stream: &Stream, n: usize) -> R<Vec<Study>> {
    let mut rows = Vec::new();
    let key = 7;
    for rate in [0.0, 0.01, 1.0] {
        let mut x = vec![0i32; n];
        x.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
            let mut r = rng(99 ^ (i as u64) << 32);
            c.iter_mut().for_each(|v| *v = if r.gen_bool(rate) { key } else { r.gen_range(8..1_000_000) });
        });
        let want = x.par_iter().filter(|&&v| v == key).count() as u64;
        let dx = gpu.upload(&x).map_err(e)?;
        let mut counter = gpu.alloc::<u64>(1).map_err(e)?;
        let mut atomic_ms = f64::NAN;
        for &v in CountVariant::ALL {
            let got = gpu.studies().count_eq(v, dx.view(), key, stream).map_err(e)?;
            let reps = if v == CountVariant::Atomic && rate == 1.0 { 5 } else { 30 };
            let ms = time_op(gpu, stream, reps, 1, |st| {
                gpu.studies().count_eq_into(v, dx.view(), key, counter.view_mut(), st)
            })
            .map_err(e)?;
            if v == CountVariant::Atomic {
                atomic_ms = ms;
            }
            rows.push(Study::CountEq {
                kernel: v.name().into(),
                dtype: "i32".into(),
                n,
                match_rate: rate,
                block: kernels_gpu::count::COUNT_THREADS,
                median_us: ms * 1e3,
                gbps: gbps(4 * n as u64, ms),
                speedup_vs_naive: atomic_ms / ms,
                count: got,
                expected: want,
                verified: got == want,
            });
        }
    }
    Ok(rows)
}

/// Strided copy: GB/s of useful data (read + write of n f32) per stride.
pub fn coalesce(gpu: &Gpu, stream: &Stream, n: usize) -> R<Vec<Study>> {
    let src = gpu.upload(&random_f32(n, 5)).map_err(e)?;
    let mut dst = gpu.alloc::<f32>(n).map_err(e)?;
    let mut rows = Vec::new();
    let mut unit_ms = f64::NAN;
    for stride in [1u64, 2, 4, 8, 16, 32] {
        dst.fill_bits(0xdead_beef).map_err(e)?;
        gpu.studies().copy_strided(src.view(), dst.view_mut(), stride, stream).map_err(e)?;
        let bad = gpu.studies().count_mismatches(dst.view(), src.view(), stream).map_err(e)?;
        let ms = time_op(gpu, stream, 20, 2, |st| gpu.studies().copy_strided(src.view(), dst.view_mut(), stride, st))
            .map_err(e)?;
        if stride == 1 {
            unit_ms = ms;
        }
        rows.push(Study::Coalesce {
            kernel: format!("copy_strided/{stride}"),
            stride,
            dtype: "f32".into(),
            n,
            block: 256,
            median_us: ms * 1e3,
            gbps: gbps(8 * n as u64, ms),
            slowdown_vs_stride_1: ms / unit_ms,
            verified: bad == 0,
        });
    }
    Ok(rows)
}

/// Transpose of a side×side f32 matrix: GB/s (read + write).
pub fn transpose(gpu: &Gpu, stream: &Stream, side: usize) -> R<Vec<Study>> {
    let input = random_f32(side * side, 6);
    let mut want = vec![0.0f32; side * side];
    want.par_chunks_mut(side)
        .enumerate()
        .for_each(|(c, row)| row.iter_mut().enumerate().for_each(|(r, x)| *x = input[r * side + c]));
    let (din, dwant) = (gpu.upload(&input).map_err(e)?, gpu.upload(&want).map_err(e)?);
    let mut dout = gpu.alloc::<f32>(side * side).map_err(e)?;
    let mut rows = Vec::new();
    let mut naive_ms = f64::NAN;
    let dims = (side as u32, side as u32);
    for &v in TransposeVariant::ALL {
        dout.fill_bits(0xdead_beef).map_err(e)?;
        gpu.studies().transpose(v, din.view(), dout.view_mut(), dims, stream).map_err(e)?;
        let bad = gpu.studies().count_mismatches(dout.view(), dwant.view(), stream).map_err(e)?;
        let ms = time_op(gpu, stream, 20, 2, |st| gpu.studies().transpose(v, din.view(), dout.view_mut(), dims, st))
            .map_err(e)?;
        if v == TransposeVariant::Naive {
            naive_ms = ms;
        }
        rows.push(Study::Transpose {
            kernel: v.name().into(),
            dtype: "f32".into(),
            n: side * side,
            rows: side,
            cols: side,
            median_us: ms * 1e3,
            gbps: gbps(8 * (side * side) as u64, ms),
            speedup_vs_naive: naive_ms / ms,
            verified: bad == 0,
        });
    }
    Ok(rows)
}

/// Fusion: two kernels with a temporary vs one fused kernel, bytes and time.
pub fn fusion(gpu: &Gpu, stream: &Stream, n: usize, copy_gbps: f64) -> R<Vec<Study>> {
    let (da, db) = (gpu.upload(&random_f32(n, 7)).map_err(e)?, gpu.upload(&random_f32(n, 8)).map_err(e)?);
    let (mut t, mut unfused, mut fused) =
        (gpu.alloc::<f32>(n).map_err(e)?, gpu.alloc::<f32>(n).map_err(e)?, gpu.alloc::<f32>(n).map_err(e)?);
    let alpha = 1.5f32;
    let ideal_ms = (12 * n) as f64 / (copy_gbps * 1e9) * 1e3;
    let mut rows = Vec::new();
    for pipeline in ["add_scale", "saxpy"] {
        let unfused_op =
            |st: &Stream, t: &mut gpukern::DeviceVec<f32>, out: &mut gpukern::DeviceVec<f32>| -> gpukern::Result<()> {
                if pipeline == "add_scale" {
                    gpu.studies().add(Variant::F32, &da, &db, &mut *t, st)?;
                    gpu.studies().scale(t.view(), alpha, out.view_mut(), st)
                } else {
                    gpu.studies().scale(da.view(), alpha, t.view_mut(), st)?;
                    gpu.studies().add(Variant::F32, &*t, &db, &mut *out, st)
                }
            };
        let fused_op = |st: &Stream, out: &mut gpukern::DeviceVec<f32>| -> gpukern::Result<()> {
            if pipeline == "add_scale" {
                gpu.studies().add_scale(da.view(), db.view(), alpha, out.view_mut(), st)
            } else {
                gpu.studies().saxpy(alpha, da.view(), db.view(), out.view_mut(), st)
            }
        };
        unfused_op(stream, &mut t, &mut unfused).map_err(e)?;
        fused_op(stream, &mut fused).map_err(e)?;
        let bad = gpu.studies().count_mismatches(fused.view(), unfused.view(), stream).map_err(e)?;
        let un_ms = time_op(gpu, stream, 20, 2, |st| unfused_op(st, &mut t, &mut unfused)).map_err(e)?;
        let fu_ms = time_op(gpu, stream, 20, 2, |st| fused_op(st, &mut fused)).map_err(e)?;
        for (kernel, ms, bytes) in [
            (format!("{pipeline} (2 kernels + temporary)"), un_ms, 20 * n),
            (format!("{pipeline} (fused)"), fu_ms, 12 * n),
        ] {
            rows.push(Study::Fusion {
                kernel,
                dtype: "f32".into(),
                n,
                block: 256,
                median_us: ms * 1e3,
                bytes_moved: bytes,
                ideal_bytes: 12 * n,
                gbps: gbps(bytes as u64, ms),
                vs_ideal_time: ms / ideal_ms,
                speedup_vs_unfused: un_ms / ms,
                verified: bad == 0,
            });
        }
    }
    Ok(rows)
}
