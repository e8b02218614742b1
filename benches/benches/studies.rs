//! `cargo bench --bench studies`: the seed-003 families at one size each, naive
//! to optimised, GPU time from CUDA events (byte rates in GB/s, 10^9 B/s, as in
//! the report). Correctness is checked by the GPU
//! tests and by `cargo xtask report`, which also prints the figures of merit.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpukern::{CountVariant, MatmulVariant, TransposeVariant};
use gpukern_benches::{bench_gpu, gpu_time, random_inputs};

fn studies(c: &mut Criterion) {
    let gpu = bench_gpu();
    let stream = gpu.stream().expect("stream");

    let s = 2048usize;
    let (a, b) =
        (gpu.upload(&random_inputs::<f32>(s * s, 1)).unwrap(), gpu.upload(&random_inputs::<f32>(s * s, 2)).unwrap());
    let mut out = gpu.alloc::<f32>(s * s).unwrap();
    let mut g = c.benchmark_group("matmul_f32/2048^3 (elements = FLOP)");
    g.throughput(Throughput::Elements(2 * (s as u64).pow(3)));
    for &v in MatmulVariant::ALL {
        let dims = (s as u32, s as u32, s as u32);
        g.bench_function(BenchmarkId::from_parameter(v.name()), |bch| {
            bch.iter_custom(|it| {
                gpu_time(&gpu, &stream, it, |_, st| {
                    gpu.studies().matmul(v, a.view(), b.view(), out.view_mut(), dims, st)
                })
            })
        });
    }
    g.finish();

    let n = 1usize << 26;
    let x: Vec<i32> = (0..n as i32).map(|i| if i % 100 == 0 { 7 } else { i }).collect();
    let dx = gpu.upload(&x).unwrap();
    let mut counter = gpu.alloc::<u64>(1).unwrap();
    let mut g = c.benchmark_group("count_eq/2^26 (1% matches)");
    g.throughput(Throughput::BytesDecimal(4 * n as u64));
    for &v in CountVariant::ALL {
        g.bench_function(BenchmarkId::from_parameter(v.name()), |bch| {
            bch.iter_custom(|it| {
                gpu_time(&gpu, &stream, it, |_, st| {
                    gpu.studies().count_eq_into(v, dx.view(), 7, counter.view_mut(), st)
                })
            })
        });
    }
    g.finish();

    let src = gpu.upload(&random_inputs::<f32>(n, 3)).unwrap();
    let mut dst = gpu.alloc::<f32>(n).unwrap();
    let mut g = c.benchmark_group("copy_strided/2^26 (useful bytes)");
    g.throughput(Throughput::BytesDecimal(8 * n as u64));
    for stride in [1u64, 8, 32] {
        g.bench_function(BenchmarkId::from_parameter(format!("stride {stride}")), |bch| {
            bch.iter_custom(|it| {
                gpu_time(&gpu, &stream, it, |_, st| gpu.studies().copy_strided(src.view(), dst.view_mut(), stride, st))
            })
        });
    }
    g.finish();

    let side = 8192u32;
    let mut g = c.benchmark_group("transpose_f32/8192^2");
    g.throughput(Throughput::BytesDecimal(8 * (side as u64).pow(2)));
    for &v in TransposeVariant::ALL {
        g.bench_function(BenchmarkId::from_parameter(v.name()), |bch| {
            bch.iter_custom(|it| {
                gpu_time(&gpu, &stream, it, |_, st| {
                    gpu.studies().transpose(v, src.view(), dst.view_mut(), (side, side), st)
                })
            })
        });
    }
    g.finish();

    let mut t = gpu.alloc::<f32>(n).unwrap();
    let mut g = c.benchmark_group("saxpy_f32/2^26 (ideal bytes 12n)");
    g.throughput(Throughput::BytesDecimal(12 * n as u64));
    g.bench_function("unfused (scale + add)", |bch| {
        bch.iter_custom(|it| {
            gpu_time(&gpu, &stream, it, |_, st| {
                gpu.studies().scale(src.view(), 1.5, t.view_mut(), st)?;
                gpu.studies().add(gpukern::Variant::F32, &t, &src, &mut dst, st)
            })
        })
    });
    g.bench_function("fused saxpy", |bch| {
        bch.iter_custom(|it| {
            gpu_time(&gpu, &stream, it, |_, st| gpu.studies().saxpy(1.5, src.view(), src.view(), dst.view_mut(), st))
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1)).sample_size(10);
    targets = studies
}
criterion_main!(benches);
