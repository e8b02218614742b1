//! `cargo bench --bench host`: the host's CPU time per call of the launch
//! path, at a tiny n where the GPU work is negligible: `Gpu::binary` (mul: the
//! element-wise path; add: the add plan), `Gpu::unary` (neg), and the empty
//! kernel through the bare launch (the driver's own cost, the floor).
//!
//! Only the calls are timed: every 256 calls the stream is synchronised
//! outside the measurement, so the launch queue never fills and a call never
//! waits for the GPU.
//!
//! Cross-stream ordering (`raw/order.rs`) costs one atomic load per operand
//! while a buffer stays on one stream (`binary_mul_f32_1024`);
//! `binary_mul_f32_1024_two_streams` alternates two streams on the same
//! output, so every call records an event and waits for it (the slow path).
//! Compare with a baseline saved on the commit before:
//! `cargo bench --bench host -- --save-baseline before`, then
//! `cargo bench --bench host -- --baseline before`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use gpukern::{BinaryOp, Gpu, Stream, UnaryOp};

/// Calls per synchronisation: well under the driver's launch queue.
const BATCH: u64 = 256;

/// Wall time of `iters` calls of `call`, synchronising (untimed) every BATCH.
fn host_time(stream: &Stream, iters: u64, call: impl FnMut() -> gpukern::Result<()>) -> Duration {
    host_time_on(&[stream], iters, call)
}

/// As [`host_time`], synchronising every stream in `streams`.
fn host_time_on(streams: &[&Stream], iters: u64, mut call: impl FnMut() -> gpukern::Result<()>) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let k = left.min(BATCH);
        let t = Instant::now();
        for _ in 0..k {
            call().expect("launch");
        }
        total += t.elapsed();
        for s in streams {
            s.synchronize().expect("sync");
        }
        left -= k;
    }
    total
}

fn benches(c: &mut Criterion) {
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return;
        }
    };
    let n = 1024;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let (a, b) = (gpu.upload(&x).expect("upload"), gpu.upload(&x).expect("upload"));
    let mut out = gpu.alloc::<f32>(n).expect("alloc");
    let stream = gpu.stream().expect("stream");
    let mut g = c.benchmark_group("host_cpu_per_call");
    g.bench_function("binary_mul_f32_1024", |bch| {
        bch.iter_custom(|iters| {
            host_time(&stream, iters, || gpu.binary(BinaryOp::Mul, &a, &b, &mut out, &stream).map(|_| ()))
        })
    });
    let second = gpu.stream().expect("stream");
    g.bench_function("binary_mul_f32_1024_two_streams", |bch| {
        bch.iter_custom(|iters| {
            let mut i = 0u64;
            host_time_on(&[&stream, &second], iters, || {
                i += 1;
                let s = if i.is_multiple_of(2) { &stream } else { &second };
                gpu.binary(BinaryOp::Mul, &a, &b, &mut out, s).map(|_| ())
            })
        })
    });
    g.bench_function("binary_add_f32_1024", |bch| {
        bch.iter_custom(|iters| {
            host_time(&stream, iters, || gpu.binary(BinaryOp::Add, &a, &b, &mut out, &stream).map(|_| ()))
        })
    });
    g.bench_function("unary_neg_f32_1024", |bch| {
        bch.iter_custom(|iters| {
            host_time(&stream, iters, || gpu.unary(UnaryOp::Neg, &a, &mut out, &stream).map(|_| ()))
        })
    });
    g.bench_function("empty_kernel", |bch| {
        bch.iter_custom(|iters| host_time(&stream, iters, || gpu.studies().launch_empty(&stream)))
    });
    g.finish();
}

criterion_group! {
    name = host;
    config = Criterion::default().sample_size(50).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(host);
