//! The norms and softmax on `Device::Cuda` (feature `cuda`; ignored without a
//! GPU): bit for bit with `Device::Cpu` at every layout the crate takes, the
//! input windows and the storage around them unchanged, `add_rms_norm`'s two
//! outputs, the refusals the CPU gives; each op one allocation and one
//! kernel (a two-pass plan: two, and its scratch), with no copy or
//! synchronisation.
#![cfg(feature = "cuda")]

use candle_core::{DType, Device, Tensor, WithDType};
use gpukern::half::{bf16, f16};
use gpukern::reference::first_mismatch;
use gpukern::reference::norms as rn;
use gpukern::{Element, Norm, NormOp, NormPlan, Opts, Rows};
use gpukern_candle as gc;

mod common;
use common::{assert_launches, captured, rows_on, run_norm, RowCase};

fn cuda() -> Device {
    Device::new_cuda(0).expect("a CUDA device")
}

fn host<T: WithDType>(t: &Tensor) -> Vec<T> {
    t.flatten_all().unwrap().to_vec1().unwrap()
}

/// The plan gpukern's automatic choice runs on this GPU for `op` over rows of
/// `cols` (it depends on the kernel's registers and, past 8 cluster blocks,
/// on whether the device can place the cluster), from a one-row call.
fn gpu_plan<T: Element>(gpu: &gpukern::Gpu, op: NormOp, cols: usize) -> NormPlan {
    let s = gpu.stream().unwrap();
    let v = gpu.upload(&vec![T::from_bits32(0); cols]).unwrap();
    let (mut y, mut h) = (gpu.alloc::<T>(cols).unwrap(), gpu.alloc::<T>(cols).unwrap());
    let (w, eps) = (v.view(), 1e-5);
    let norm = match op {
        NormOp::Rms => Norm::rms(w, eps),
        NormOp::AddRms => Norm::add_rms(v.view(), h.view_mut(), w, eps),
        NormOp::Layer => Norm::layer(w, v.view(), eps),
        NormOp::AddLayer => Norm::add_layer(v.view(), h.view_mut(), w, v.view(), eps),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    let plan = gpu.norm(norm, &v, &mut y, Rows::contiguous(1, cols), &Opts::auto(), &s).unwrap();
    s.synchronize().unwrap();
    plan
}

/// `Device::Cuda` against `Device::Cpu` where the GPU runs the plan the CPU
/// replays (`NormPlan::auto`); where the device's limits made it run another
/// plan, against gpukern's reference replay of that plan.
fn same_bits_as_the_cpu<T: WithDType + Element>(dev: &Device) {
    let gpu = gc::gpu(dev.as_cuda_device().unwrap()).unwrap();
    // Rows a warp, a block, a split or a cluster holds, odd lengths included.
    let shapes = [(1, 1), (3, 7), (6, 1000), (4, 4096), (2, 5000), (64, 1024), (2, 65_536), (2, 300_001)];
    for (rows, cols) in shapes {
        for case in [RowCase::Offset, RowCase::Pitched, RowCase::ThreeD] {
            for op in NormOp::ALL {
                let seed = (rows * cols) as u64 + op as u64;
                let on = |d: &Device, case, rows, s| rows_on::<T>(d, case, rows, cols, seed + s);
                let (x, hx) = on(dev, case, rows, 0);
                let (r, hr) = on(dev, case, rows, 1);
                let (w, hw) = on(dev, RowCase::Offset, 1, 2);
                let (b, hb) = on(dev, RowCase::Offset, 1, 3);
                let (cx, _) = on(&Device::Cpu, case, rows, 0);
                let (cr, _) = on(&Device::Cpu, case, rows, 1);
                let (cw, _) = on(&Device::Cpu, RowCase::Offset, 1, 2);
                let (cb, _) = on(&Device::Cpu, RowCase::Offset, 1, 3);
                let (w, b, cw, cb) =
                    (w.squeeze(0).unwrap(), b.squeeze(0).unwrap(), cw.squeeze(0).unwrap(), cb.squeeze(0).unwrap());
                let (h, y) = run_norm(op, &x, &r, &w, &b, 1e-5).unwrap();
                let (ch, cy) = run_norm(op, &cx, &cr, &cw, &cb, 1e-5).unwrap();
                let what = format!("{} {:?} {rows}x{cols} {case:?}", op.name(), <T as WithDType>::DTYPE);
                let plan = gpu_plan::<T>(gpu, op, cols);
                let (want_y, want_h) = if plan == NormPlan::auto(<T as Element>::DTYPE, cols) {
                    (host::<T>(&cy), ch.map(|h| host::<T>(&h)))
                } else {
                    let host_op: Norm<&[T], ()> = match op {
                        NormOp::Rms => Norm::rms(&hw, 1e-5),
                        NormOp::AddRms => Norm::add_rms(&hr, (), &hw, 1e-5),
                        NormOp::Layer => Norm::layer(&hw, &hb, 1e-5),
                        NormOp::AddLayer => Norm::add_layer(&hr, (), &hw, &hb, 1e-5),
                        NormOp::Softmax => Norm::Softmax,
                        NormOp::LogSoftmax => Norm::LogSoftmax,
                    };
                    let out =
                        rn::norm(host_op, &hx, Rows::contiguous(rows, cols), plan.order(<T as Element>::DTYPE, cols));
                    (out.y, out.h)
                };
                assert_eq!(first_mismatch(&host::<T>(&y), &want_y), None, "{what}: y ({plan:?})");
                if let (Some(h), Some(want_h)) = (h, want_h) {
                    assert_eq!(first_mismatch(&host::<T>(&h), &want_h), None, "{what}: h ({plan:?})");
                }
                // The input window unchanged (the storage around it: the next test).
                assert_eq!(first_mismatch(&host::<T>(&x), &hx), None, "{what}: input written");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_op_dtype_and_layout_gives_the_cpu_bits() {
    let dev = cuda();
    same_bits_as_the_cpu::<f32>(&dev);
    same_bits_as_the_cpu::<f16>(&dev);
    same_bits_as_the_cpu::<bf16>(&dev);
}

/// The storage around a pitched window: the padding columns and the rows
/// before and after are the original data after the op (it wrote only its
/// own new output).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_storage_around_a_window_is_untouched() {
    let dev = cuda();
    let whole = Tensor::arange(0f32, 11.0 * 40.0, &dev).unwrap().reshape((11, 40)).unwrap();
    let before: Vec<f32> = host(&whole);
    let x = whole.narrow(0, 2, 8).unwrap().narrow(1, 3, 33).unwrap();
    // The residual in the input's row layout (a window of another tensor like it).
    let other = whole.affine(0.5, 1.0).unwrap();
    let r = other.narrow(0, 1, 8).unwrap().narrow(1, 5, 33).unwrap();
    let w = Tensor::ones(33, DType::F32, &dev).unwrap();
    let (h, y) = gc::add_rms_norm(&x, &r, &w, 1e-6).unwrap();
    assert_eq!((h.dims(), y.dims()), (&[8, 33][..], &[8, 33][..]));
    let _ = gc::softmax_last_dim(&x).unwrap();
    assert_eq!(first_mismatch(&host::<f32>(&whole), &before), None, "the source storage changed");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn refusals_match_the_cpu() {
    let dev = cuda();
    let x = Tensor::arange(0f32, 12.0, &dev).unwrap().reshape((3, 4)).unwrap();
    let e = gc::softmax_last_dim(&x.t().unwrap()).unwrap_err().to_string();
    assert!(e.contains("gpukern_candle::softmax: the input") && e.contains("stride 1"), "{e}");
    let e = gc::rms_norm(&x, &Tensor::ones(3, DType::F32, &dev).unwrap(), 1e-6).unwrap_err().to_string();
    assert!(e.contains("needs 4 elements"), "{e}");
}

/// Each norm on candle's stream, captured into a graph: one kernel and one
/// allocation (`add_rms_norm`'s `h` and `y` share it), no copy, memset or
/// synchronisation (which would fail the capture); the graph's result is the
/// eager call's, bit for bit. Rows a block holds, and rows split over a
/// cluster.
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_norm_is_its_plans_launches_and_nothing_else() {
    let dev = cuda();
    let gpu = gc::gpu(dev.as_cuda_device().unwrap()).unwrap();
    for (rows, cols) in [(64, 4096), (2, 262_144)] {
        for op in NormOp::ALL {
            let (x, _) = rows_on::<bf16>(&dev, RowCase::Offset, rows, cols, 7);
            let (r, _) = rows_on::<bf16>(&dev, RowCase::Offset, rows, cols, 8);
            let (w, _) = rows_on::<bf16>(&dev, RowCase::Offset, 1, cols, 9);
            let w = w.squeeze(0).unwrap();
            let eager = run_norm(op, &x, &r, &w, &w, 1e-5).unwrap().1; // also opens gpukern's Gpu
            let ((_, y), graph, types) = captured(&dev, || run_norm(op, &x, &r, &w, &w, 1e-5).unwrap());
            let what = format!("{} {rows}x{cols}", op.name());
            // A two-pass plan (rows longer than a cluster holds) is two
            // kernels and its scratch: one more allocation, and its free.
            let split = gpu_plan::<bf16>(gpu, op, cols).strategy == gpukern::NormStrategy::Split;
            let (kernels, allocs, frees) = if split { (2, 2, 1) } else { (1, 1, 0) };
            assert_launches(&types, kernels, allocs, frees, &what);
            graph.launch().unwrap();
            dev.synchronize().unwrap();
            assert_eq!(first_mismatch(&host::<bf16>(&y), &host::<bf16>(&eager)), None, "{what}");
        }
    }
}
