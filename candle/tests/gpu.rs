//! The crate on `Device::Cuda` (feature `cuda`; ignored without a GPU): each
//! candle op gives gpukern's own bits on the same data, at offsets, with
//! canaries around the windows; errors are the CPU's; a sequence mixing
//! candle's ops and ours matches `Device::Cpu` bit for bit; one op is one
//! allocation and one launch, with no copy and no synchronisation.
#![cfg(feature = "cuda")]

use candle_core::{DType, Device, Tensor, WithDType};
use gpukern::half::{bf16, f16};
use gpukern::reference::{first_mismatch, map, ReferenceOps};
use gpukern::{Element, OpKind, UnaryOp};
use gpukern_candle as gc;

mod common;
use common::{assert_one_launch, captured, kinds, run, run_into, window, window_on};

fn cuda() -> Device {
    Device::new_cuda(0).expect("a CUDA device")
}

fn host<T: WithDType>(t: &Tensor) -> Vec<T> {
    t.flatten_all().unwrap().to_vec1().unwrap()
}

/// gpukern's own op on the same data (its host API: fresh aligned buffers).
fn gpukern_own<T: Element>(gpu: &gpukern::Gpu, kind: OpKind, scales: (f32, f32), a: &[T], b: &[T]) -> Vec<T> {
    match kind {
        OpKind::Unary(op) => gpukern::blocking::unary(&gpu, op, a),
        OpKind::Binary(op) => gpukern::blocking::binary(&gpu, op, a, b),
        OpKind::Axpby => gpukern::blocking::axpby(&gpu, scales.0, a, scales.1, b),
    }
    .unwrap()
}

fn same_bits_as_gpukern<T: WithDType + ReferenceOps + Element>(dev: &Device) {
    let gpu = gc::gpu(dev.as_cuda_device().unwrap()).unwrap();
    // Lengths that leave partial packs and offsets that misalign the window.
    for (rows, cols, skip) in [(1, 1, 0), (3, 7, 1), (5, 129, 3), (64, 1000, 1), (1024, 1024, 0), (7, 65_537, 2)] {
        for (i, (kind, scales)) in kinds().into_iter().enumerate() {
            let seed = (rows * cols + i) as u64;
            let (a, ha) = window_on::<T>(dev, rows, cols, skip, seed);
            let (b, hb) = window_on::<T>(dev, rows, cols, skip + 1, seed + 1);
            let got = host::<T>(&run(kind, scales, &a, &b).unwrap());
            let own = gpukern_own(gpu, kind, scales, &ha, &hb);
            let what = format!("{} {:?} {rows}x{cols}+{skip}", kind.name(), <T as WithDType>::DTYPE);
            assert_eq!(first_mismatch(&got, &own), None, "{what}: candle op vs gpukern");
            assert_eq!(first_mismatch(&got, &map(kind, &ha, Some(&hb), scales)), None, "{what}: vs reference");
            // The input windows are unchanged.
            assert_eq!(first_mismatch(&host::<T>(&a), &ha), None, "{what}: input written");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_op_gives_gpukerns_bits_at_offsets() {
    let dev = cuda();
    same_bits_as_gpukern::<f32>(&dev);
    same_bits_as_gpukern::<f16>(&dev);
    same_bits_as_gpukern::<bf16>(&dev);
}

/// The `_into` forms on the GPU write the window and nothing around it.
fn into_with_canaries<T: WithDType + ReferenceOps + Element>(dev: &Device) {
    let canary = T::from_f64(-7777.0);
    for (rows, cols, before) in [(1, 3, 1), (5, 13, 2), (33, 1027, 1)] {
        for (i, (kind, scales)) in kinds().into_iter().enumerate() {
            let (a, ha) = window_on::<T>(dev, rows, cols, 2, 40 + i as u64);
            let (b, hb) = window_on::<T>(dev, rows, cols, 0, 70 + i as u64);
            let total = (rows + before + 2) * cols;
            let whole = Tensor::from_vec(vec![canary; total], (rows + before + 2, cols), dev).unwrap();
            run_into(kind, scales, &a, &b, &whole.narrow(0, before, rows).unwrap()).unwrap();
            let all = host::<T>(&whole);
            let (lo, hi) = (before * cols, (before + rows) * cols);
            let what = format!("{} {:?} {rows}x{cols}", kind.name(), <T as WithDType>::DTYPE);
            assert!(all[..lo].iter().chain(&all[hi..]).all(|v| v.same_as(canary)), "{what}: canary overwritten");
            assert_eq!(first_mismatch(&all[lo..hi], &map(kind, &ha, Some(&hb), scales)), None, "{what}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn into_forms_write_the_window_only() {
    let dev = cuda();
    into_with_canaries::<f32>(&dev);
    into_with_canaries::<f16>(&dev);
    into_with_canaries::<bf16>(&dev);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn errors_on_the_gpu_are_the_cpus() {
    for dev in [Device::Cpu, cuda()] {
        let x = Tensor::arange(0f32, 12.0, &dev).unwrap().reshape((3, 4)).unwrap();
        let msg = |r: candle_core::Result<Tensor>| r.expect_err("an error").to_string();
        let e = msg(gc::silu(&x.t().unwrap()));
        assert!(e.contains("the first input has shape [4, 3], stride [1, 4], start offset 0"), "{e}");
        let e = msg(gc::add(&x, &Tensor::ones(4, DType::F32, &dev).unwrap().broadcast_as((3, 4)).unwrap()));
        assert!(e.contains("stride [0, 1]"), "{e}");
        let e = msg(gc::mul(&x, &x.to_dtype(DType::BF16).unwrap()));
        assert!(e.contains("dtype mismatch in mul"), "{e}");
        let e = msg(gc::exp(&x.to_dtype(DType::F64).unwrap()));
        assert!(e.contains("unsupported dtype F64 for op exp"), "{e}");
        let e = msg(gc::add(&x, &x.narrow(0, 0, 2).unwrap()));
        assert!(e.contains("shape mismatch in add"), "{e}");
        // Empty tensors: nothing to launch, an empty result. (Whether the
        // driver allocates 0 bytes is candle's business: our op allocates its
        // output as candle's own ops do, so it works wherever candle made the
        // input.)
        if let Ok(empty) = Tensor::zeros((0, 8), DType::F16, &dev) {
            assert_eq!(gc::silu(&empty).unwrap().dims(), &[0, 8]);
        }
    }
}

/// candle's ops that are exact or rounded once (mul, add, a transposing copy,
/// dtype casts) mixed with ours: the values do not depend on the device (NaN
/// compared as NaN: candle's casts and ops may carry different NaN payloads).
type Stages = (Vec<f32>, Vec<bf16>, Vec<bf16>, Vec<f16>);

fn mixed(dev: &Device) -> Stages {
    let (x, _) = window_on::<f32>(dev, 64, 96, 1, 11);
    let (y, _) = window_on::<f32>(dev, 64, 96, 0, 12);
    let h = gc::silu(&x).unwrap();
    let g = (&h * &y).unwrap(); // candle
    let k = gc::axpby(0.5, &g, 2.0, &x).unwrap();
    let t = k.t().unwrap().contiguous().unwrap(); // candle's copy
    let u = gc::tanh(&t).unwrap();
    let v = u.to_dtype(DType::BF16).unwrap(); // candle's rounding
    let w = gc::gelu(&v).unwrap();
    let z = (&w + &gc::exp(&v).unwrap()).unwrap(); // candle
    let r = gc::mul(&z, &gc::sigmoid(&z).unwrap()).unwrap();
    let f = gc::rsqrt(&r.to_dtype(DType::F16).unwrap()).unwrap();
    (host(&k), host(&w), host(&r), host(&f))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_sequence_mixing_candles_ops_and_ours_matches_the_cpu() {
    let (g, c) = (mixed(&cuda()), mixed(&Device::Cpu));
    assert_eq!(first_mismatch(&g.0, &c.0), None, "axpby stage (f32)");
    assert_eq!(first_mismatch(&g.1, &c.1), None, "gelu stage (bf16)");
    assert_eq!(first_mismatch(&g.2, &c.2), None, "silu-by-hand stage (bf16)");
    assert_eq!(first_mismatch(&g.3, &c.3), None, "rsqrt stage (f16)");
}

/// One op on candle's stream is one allocation and one kernel, with nothing
/// that synchronises (a synchronising call invalidates a capture) and no copy:
/// captured into a graph, its nodes are counted; the graph then runs and gives
/// the reference bits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_op_is_one_allocation_and_one_launch() {
    let dev = cuda();
    let (x, hx) = window_on::<bf16>(&dev, 256, 1024, 1, 5);
    gc::silu(&x).unwrap(); // opens gpukern's Gpu (module loads) outside the capture
    let (y, graph, types) = captured(&dev, || gc::silu(&x));
    assert_one_launch(&types, 1, "silu");
    let y = y.unwrap();
    graph.launch().unwrap();
    dev.synchronize().unwrap();
    let want = map(OpKind::Unary(UnaryOp::Silu), &hx, None, (1.0, 1.0));
    assert_eq!(first_mismatch(&host::<bf16>(&y), &want), None);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cpu_and_gpu_agree_on_every_op() {
    // The CPU tests check the CPU path against the reference; this closes the
    // loop on the same tensors moved between devices.
    let dev = cuda();
    for (i, (kind, scales)) in kinds().into_iter().enumerate() {
        let (a, _) = window::<bf16>(8, 257, 1, 90 + i as u64);
        let (b, _) = window::<bf16>(8, 257, 2, 120 + i as u64);
        let on_cpu = host::<bf16>(&run(kind, scales, &a, &b).unwrap());
        let (ga, gb) = (a.to_device(&dev).unwrap(), b.to_device(&dev).unwrap());
        let on_gpu = host::<bf16>(&run(kind, scales, &ga, &gb).unwrap());
        assert_eq!(first_mismatch(&on_gpu, &on_cpu), None, "{}", kind.name());
    }
}
