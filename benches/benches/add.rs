//! `cargo bench`: every add variant at the seed's sizes (2^20, 2^24, 2^28), one
//! Criterion group per dtype and size, timed on the GPU with CUDA events (device
//! time of back-to-back launches behind a spin kernel; rates in GB/s, 10^9 B/s).
//! The sm_90-only variants run on Hopper devices only.
//!
//! Each variant is verified bit-exact against the CPU reference before it is timed;
//! a mismatch aborts with the first bad index. At 2^20 the working set fits in L2:
//! input sets rotate, and the group name says so.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpukern::half::{bf16, f16};
use gpukern::reference::ReferenceAdd;
use gpukern::{Dtype, Gpu, LaunchShape, Variant};
use gpukern_benches::{add_bytes, bench_gpu, gpu_time, Workload};

const SIZES_LOG2: [u32; 3] = [20, 24, 28];

fn bench_dtype<T: ReferenceAdd>(c: &mut Criterion, gpu: &Gpu) {
    let dtype = T::DTYPE;
    let cap = 1usize << SIZES_LOG2[2];
    let mut w = Workload::<T>::new(gpu, cap, 42).unwrap_or_else(|e| panic!("allocating the {dtype:?} workload: {e}"));
    let stream = gpu.stream().expect("stream");
    let cfg = LaunchShape::default();
    for log2 in SIZES_LOG2 {
        let n = 1usize << log2;
        let sets = w.rotation(gpu, n);
        let label = if sets > 1 {
            format!("add_{}/2^{log2} (L2-sized: {sets} input sets rotate)", dtype.name())
        } else {
            format!("add_{}/2^{log2}", dtype.name())
        };
        let mut g = c.benchmark_group(label);
        // Decimal bytes, so Criterion's rates are GB/s like the report's.
        g.throughput(Throughput::BytesDecimal(add_bytes(dtype, n)));
        let here = Variant::of_dtype(dtype).filter(|v| !v.needs_sm90() || gpu.info().has_sm90());
        for v in here {
            if let Err(i) = w.verify(gpu, v, cfg, n, &stream).expect("verification launch") {
                panic!("{v} at n = {n}: element {i} differs from the CPU reference; not benchmarking a wrong kernel");
            }
            g.bench_function(BenchmarkId::from_parameter(v.name()), |bch| {
                bch.iter_custom(|iters| gpu_time(gpu, &stream, iters, |i, s| w.launch(gpu, v, cfg, n, i % sets, s)))
            });
        }
        g.finish();
    }
}

fn benches(c: &mut Criterion) {
    let gpu = bench_gpu();
    eprintln!(
        "device: {} ({} SMs, L2 {} MiB, peak {:.0} GB/s)",
        gpu.info().name,
        gpu.info().sm_count,
        gpu.info().l2_bytes >> 20,
        gpu.info().peak_gbps()
    );
    eprintln!(
        "timing: GPU time from CUDA events around each sample's back-to-back launches, queued behind a spin \
         kernel (not host time); thrpt in GB/s = 10^9 bytes/s (read a and b, write c)"
    );
    for dtype in Dtype::ALL {
        match dtype {
            Dtype::F32 => bench_dtype::<f32>(c, &gpu),
            Dtype::F16 => bench_dtype::<f16>(c, &gpu),
            Dtype::Bf16 => bench_dtype::<bf16>(c, &gpu),
        }
    }
}

criterion_group! {
    name = add;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    targets = benches
}
criterion_main!(add);
