//! `cargo bench --bench ops`: every element-wise operation (add, sub, mul, div,
//! min, max, neg, abs, relu, the activations, axpby) for f32, f16 and bf16 at 2^20, 2^24 and
//! 2^28 through the automatic choice, one Criterion group per operation and
//! dtype, timed on the GPU with CUDA events (device time of back-to-back launches
//! behind a spin kernel; rates in GB/s, 10^9 B/s, counting the operands read and
//! the one written).
//!
//! Each operation is checked bit-exact against the CPU reference on a prefix of
//! up to 2^20 elements before it is timed; a mismatch aborts. At 2^20 the inputs
//! fit in L2 and several disjoint sets rotate.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{Dtype, Gpu, OpKind};
use gpukern_benches::ops::{op_bytes, Inputs, SCALES};
use gpukern_benches::{bench_gpu, gpu_time, random_inputs};

const SIZES_LOG2: [u32; 3] = [20, 24, 28];

fn bench_dtype<T: ReferenceOps>(c: &mut Criterion, gpu: &Gpu) {
    let dtype = T::DTYPE;
    let cap = 1usize << SIZES_LOG2[2];
    let hb = random_inputs::<T>(cap, 6);
    let b = gpu.upload(&hb).expect("upload b");
    let mut out = gpu.alloc::<T>(cap).expect("alloc out");
    let stream = gpu.stream().expect("stream");
    // Each operation's first operand from its input set (`Inputs`: positive for
    // log, sqrt and rsqrt, [-8, 8) for the activations).
    let mut inputs = std::collections::HashMap::new();
    for set in [Inputs::Wide, Inputs::Activation, Inputs::Positive] {
        let ha = set.generate::<T>(cap, 5);
        let a = gpu.upload(&ha).expect("upload a");
        inputs.insert(set, (ha, a));
    }
    let run = |kind: OpKind, n: usize, set: usize, out: &mut gpukern::DeviceVec<T>, s: &gpukern::Stream| {
        let a = &inputs[&Inputs::of(kind)].1;
        let r = set * n..set * n + n;
        let (a, b, o) = (a.slice(r.clone())?, b.slice(r.clone())?, out.slice_mut(r)?);
        gpu.apply(kind, a, (kind.inputs() == 2).then_some(b), o, SCALES, s, &gpukern::Opts::auto())
    };
    for kind in OpKind::ALL {
        let m = 1 << 20;
        run(kind, m, 0, &mut out, &stream).expect("verification launch");
        stream.synchronize().expect("sync");
        let got = out.slice(..m).and_then(|v| v.to_vec()).expect("download");
        let ha = &inputs[&Inputs::of(kind)].0;
        let want = reference::map(kind, &ha[..m], (kind.inputs() == 2).then_some(&hb[..m]), SCALES);
        if let Some(i) = reference::first_mismatch(&got, &want) {
            panic!("{} {dtype:?}: element {i} differs from the CPU reference; not benchmarking it", kind.name());
        }
        let mut g = c.benchmark_group(format!("{}_{}", kind.name(), dtype.name()));
        for log2 in SIZES_LOG2 {
            let n = 1usize << log2;
            let bytes = op_bytes(kind, dtype, n);
            let sets = ((4 * gpu.info().l2_bytes).div_ceil(bytes) as usize).clamp(1, cap / n);
            g.throughput(Throughput::BytesDecimal(bytes));
            g.bench_function(BenchmarkId::from_parameter(format!("2^{log2} ({sets} input sets)")), |bch| {
                bch.iter_custom(|iters| {
                    gpu_time(gpu, &stream, iters, |i, s| run(kind, n, i % sets, &mut out, s).map(|_| ()))
                })
            });
        }
        g.finish();
    }
}

fn benches(c: &mut Criterion) {
    let gpu = bench_gpu();
    eprintln!(
        "timing: GPU time from CUDA events around each sample's back-to-back launches, queued behind a spin \
         kernel (not host time); thrpt in GB/s = 10^9 bytes/s (operands read plus the one written)"
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
    name = ops;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1)).sample_size(10);
    targets = benches
}
criterion_main!(ops);
