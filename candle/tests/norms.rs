//! The norms and softmax on `Device::Cpu`: gpukern's CPU reference through
//! every layout the crate takes (offsets, pitched rows, three dimensions),
//! `add_rms_norm`'s two outputs, the f64 error, and the layouts refused.

use candle_core::{DType, Device, Tensor, WithDType};
use gpukern::half::{bf16, f16};
use gpukern::reference::first_mismatch;
use gpukern::reference::norms as rn;
use gpukern::{Element, Norm, NormOp, NormPlan, Rows};
use gpukern_candle as gc;

mod common;
use common::{rows_on, run_norm, RowCase};

fn host<T: WithDType>(t: &Tensor) -> Vec<T> {
    t.flatten_all().unwrap().to_vec1().unwrap()
}

/// The reference on contiguous host rows: `(h, y)`.
fn reference<T: Element>(op: NormOp, x: &[T], r: &[T], w: &[T], b: &[T], rows: usize, cols: usize) -> rn::NormOut<T> {
    let eps = 1e-5;
    let host = match op {
        NormOp::Rms => Norm::rms(w, eps),
        NormOp::AddRms => Norm::add_rms(r, (), w, eps),
        NormOp::Layer => Norm::layer(w, b, eps),
        NormOp::AddLayer => Norm::add_layer(r, (), w, b, eps),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    rn::norm(host, x, Rows::contiguous(rows, cols), NormPlan::auto(T::DTYPE, cols).order(T::DTYPE, cols))
}

fn every_layout<T: WithDType + Element>() {
    let dev = Device::Cpu;
    for (rows, cols) in [(1, 1), (2, 7), (4, 129), (6, 1000), (2, 5000)] {
        for case in [RowCase::Offset, RowCase::Pitched, RowCase::ThreeD] {
            for op in NormOp::ALL {
                let seed = (rows * cols) as u64;
                let (x, hx) = rows_on::<T>(&dev, case, rows, cols, seed);
                let (r, hr) = rows_on::<T>(&dev, case, rows, cols, seed + 1);
                let (w, hw) = rows_on::<T>(&dev, RowCase::Offset, 1, cols, seed + 2);
                let (b, hb) = rows_on::<T>(&dev, RowCase::Offset, 1, cols, seed + 3);
                let (w, b) = (w.squeeze(0).unwrap(), b.squeeze(0).unwrap());
                let (h, y) = run_norm(op, &x, &r, &w, &b, 1e-5).unwrap();
                let want = reference(op, &hx, &hr, &hw, &hb, rows, cols);
                let what = format!("{} {:?} {rows}x{cols} {case:?}", op.name(), <T as WithDType>::DTYPE);
                assert_eq!(y.dims(), x.dims(), "{what}");
                assert!(y.is_contiguous(), "{what}");
                assert_eq!(first_mismatch(&host::<T>(&y), &want.y), None, "{what}: y");
                if let Some(h) = h {
                    assert_eq!(first_mismatch(&host::<T>(&h), &want.h.unwrap()), None, "{what}: h");
                }
            }
        }
    }
}

#[test]
fn every_op_dtype_and_layout_gives_the_reference_bits() {
    every_layout::<f32>();
    every_layout::<f16>();
    every_layout::<bf16>();
}

/// Against f64 on tame data: the right operation, within its bound.
#[test]
fn results_are_within_the_bound_of_f64() {
    let (rows, cols) = (4, 300);
    let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 125.0 - 4.0).collect();
    let w: Vec<f32> = (0..cols).map(|i| 0.5 + (i % 13) as f32 / 13.0).collect();
    let xt = Tensor::from_vec(x.clone(), (rows, cols), &Device::Cpu).unwrap();
    let wt = Tensor::from_vec(w.clone(), cols, &Device::Cpu).unwrap();
    for op in [NormOp::Rms, NormOp::Softmax, NormOp::LogSoftmax] {
        let (_, y) = run_norm(op, &xt, &xt, &wt, &wt, 1e-6).unwrap();
        let hostop = match op {
            NormOp::Rms => Norm::rms(&w[..], 1e-6),
            NormOp::Softmax => Norm::Softmax,
            _ => Norm::LogSoftmax,
        };
        let want = rn::norm_f64(hostop, &x, Rows::contiguous(rows, cols));
        let worst = host::<f32>(&y).iter().zip(&want).map(|(&g, &w)| rn::ulp_error(g, w, 1e-30)).fold(0.0, f64::max);
        assert!(worst < 16.0, "{}: {worst} ulp from f64", op.name());
    }
}

fn err(r: candle_core::Result<impl std::fmt::Debug>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn layouts_that_do_not_fit_are_clear_errors() {
    let dev = Device::Cpu;
    let x = Tensor::arange(0f32, 12.0, &dev).unwrap().reshape((3, 4)).unwrap();
    let w = Tensor::ones(4, DType::F32, &dev).unwrap();
    let e = err(gc::softmax_last_dim(&x.t().unwrap()));
    assert!(e.contains("gpukern_candle::softmax: the input") && e.contains("stride 1"), "{e}");
    let e = err(gc::rms_norm(&x, &Tensor::ones(3, DType::F32, &dev).unwrap(), 1e-6));
    assert!(e.contains("the weight") && e.contains("needs 4 elements"), "{e}");
    let e = err(gc::rms_norm(&x, &w.to_dtype(DType::BF16).unwrap(), 1e-6));
    assert!(e.contains("dtype mismatch in rms_norm"), "{e}");
    let e = err(gc::add_rms_norm(&x, &x.narrow(0, 0, 2).unwrap(), &w, 1e-6));
    assert!(e.contains("the residual"), "{e}");
    let e = err(gc::softmax_last_dim(&Tensor::new(1f32, &dev).unwrap()));
    assert!(e.contains("scalar"), "{e}");
    // A broadcast row repeats one row: its rows overlap.
    let e = err(gc::softmax_last_dim(&w.broadcast_as((3, 4)).unwrap()));
    assert!(e.contains("overlap"), "{e}");
    let e = err(gc::softmax_last_dim(&x.to_dtype(DType::F64).unwrap()));
    assert!(e.contains("unsupported dtype F64 for op softmax"), "{e}");
}

#[test]
fn empty_rows_give_empty_results() {
    let x = Tensor::zeros((0, 4), DType::BF16, &Device::Cpu).unwrap();
    let w = Tensor::ones(4, DType::BF16, &Device::Cpu).unwrap();
    assert_eq!(gc::rms_norm(&x, &w, 1e-6).unwrap().dims(), &[0, 4]);
    let (h, y) = gc::add_rms_norm(&x, &x, &w, 1e-6).unwrap();
    assert_eq!((h.dims(), y.dims()), (&[0, 4][..], &[0, 4][..]));
}
