//! The crate on `Device::Cpu`: every op × dtype against gpukern's CPU reference
//! at start offsets, the `_into` forms with canaries around the window, candle's
//! own arithmetic where it defines the same bits, and the errors.

use candle_core::{DType, Device, Tensor, WithDType};
use gpukern::half::{bf16, f16};
use gpukern::reference::{first_mismatch, map, ReferenceOps};
use gpukern::{BinaryOp, Element, OpKind, UnaryOp};
use gpukern_candle as gc;

mod common;
use common::{kinds, run, run_into, window};

fn every_op<T: WithDType + ReferenceOps + Element>() {
    for (rows, cols, skip) in [(1, 1, 0), (3, 7, 1), (4, 33, 2), (16, 64, 5)] {
        for (i, (kind, scales)) in kinds().into_iter().enumerate() {
            let (a, ha) = window::<T>(rows, cols, skip, 1 + i as u64);
            let (b, hb) = window::<T>(rows, cols, skip + 1, 100 + i as u64);
            let got = run(kind, scales, &a, &b).unwrap();
            assert_eq!(got.dims(), &[rows, cols]);
            assert_eq!(got.dtype(), <T as WithDType>::DTYPE);
            let got: Vec<T> = got.flatten_all().unwrap().to_vec1().unwrap();
            let want = map(kind, &ha, Some(&hb), scales);
            assert_eq!(
                first_mismatch(&got, &want),
                None,
                "{} {:?} {rows}x{cols}+{skip}",
                kind.name(),
                <T as WithDType>::DTYPE
            );
        }
    }
}

#[test]
fn every_op_and_dtype_gives_the_reference_bits_at_offsets() {
    every_op::<f32>();
    every_op::<f16>();
    every_op::<bf16>();
}

#[test]
fn the_named_functions_are_their_ops() {
    let (x, hx) = window::<f32>(2, 9, 1, 7);
    let (y, hy) = window::<f32>(2, 9, 0, 8);
    let unary = [
        (gc::neg(&x), UnaryOp::Neg),
        (gc::abs(&x), UnaryOp::Abs),
        (gc::relu(&x), UnaryOp::Relu),
        (gc::exp(&x), UnaryOp::Exp),
        (gc::log(&x), UnaryOp::Log),
        (gc::tanh(&x), UnaryOp::Tanh),
        (gc::sigmoid(&x), UnaryOp::Sigmoid),
        (gc::silu(&x), UnaryOp::Silu),
        (gc::gelu(&x), UnaryOp::Gelu),
        (gc::gelu_tanh(&x), UnaryOp::GeluTanh),
        (gc::rsqrt(&x), UnaryOp::Rsqrt),
        (gc::sqrt(&x), UnaryOp::Sqrt),
    ];
    for (got, op) in unary {
        let got: Vec<f32> = got.unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(first_mismatch(&got, &map(OpKind::Unary(op), &hx, None, (1.0, 1.0))), None, "{op:?}");
    }
    let binary = [
        (gc::add(&x, &y), BinaryOp::Add),
        (gc::sub(&x, &y), BinaryOp::Sub),
        (gc::mul(&x, &y), BinaryOp::Mul),
        (gc::div(&x, &y), BinaryOp::Div),
        (gc::minimum(&x, &y), BinaryOp::Min),
        (gc::maximum(&x, &y), BinaryOp::Max),
    ];
    for (got, op) in binary {
        let got: Vec<f32> = got.unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(first_mismatch(&got, &map(OpKind::Binary(op), &hx, Some(&hy), (1.0, 1.0))), None, "{op:?}");
    }
}

/// The `_into` forms write the window of `out` and nothing around it.
fn into_forms<T: WithDType + ReferenceOps + Element>() {
    let (rows, cols) = (5, 13);
    let canary = T::from_f64(-7777.0);
    for (i, (kind, scales)) in kinds().into_iter().enumerate() {
        let (a, ha) = window::<T>(rows, cols, 2, 30 + i as u64);
        let (b, hb) = window::<T>(rows, cols, 0, 60 + i as u64);
        let whole = Tensor::from_vec(vec![canary; (rows + 3) * cols], (rows + 3, cols), &Device::Cpu).unwrap();
        let out = whole.narrow(0, 1, rows).unwrap();
        run_into(kind, scales, &a, &b, &out).unwrap();
        let all: Vec<T> = whole.flatten_all().unwrap().to_vec1().unwrap();
        let want = map(kind, &ha, Some(&hb), scales);
        assert!(all[..cols].iter().chain(&all[(rows + 1) * cols..]).all(|v| v.same_as(canary)), "{}", kind.name());
        assert_eq!(
            first_mismatch(&all[cols..(rows + 1) * cols], &want),
            None,
            "{} {:?}",
            kind.name(),
            <T as WithDType>::DTYPE
        );
    }
}

#[test]
fn into_forms_write_the_window_only() {
    into_forms::<f32>();
    into_forms::<f16>();
    into_forms::<bf16>();
}

/// candle's own `+ - * /` round once too, so they give our bits: a program can
/// mix them with ours.
fn candle_arith<T: WithDType + Element>() {
    let (a, _) = window::<T>(7, 31, 1, 5);
    let (b, _) = window::<T>(7, 31, 2, 6);
    let pairs = [
        (gc::add(&a, &b), (&a + &b)),
        (gc::sub(&a, &b), (&a - &b)),
        (gc::mul(&a, &b), (&a * &b)),
        (gc::div(&a, &b), (&a / &b)),
        (gc::neg(&a), a.neg()),
        (gc::abs(&a), a.abs()),
    ];
    for (i, (ours, theirs)) in pairs.into_iter().enumerate() {
        let ours: Vec<T> = ours.unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let theirs: Vec<T> = theirs.unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(first_mismatch(&ours, &theirs), None, "pair {i} {:?}", <T as WithDType>::DTYPE);
    }
}

#[test]
fn candle_arithmetic_gives_the_same_bits() {
    candle_arith::<f32>();
    candle_arith::<f16>();
    candle_arith::<bf16>();
}

fn err(r: candle_core::Result<impl std::fmt::Debug>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn layouts_and_dtypes_that_do_not_fit_are_clear_errors() {
    let x = Tensor::arange(0f32, 12.0, &Device::Cpu).unwrap().reshape((3, 4)).unwrap();
    let e = err(gc::silu(&x.t().unwrap()));
    assert!(e.contains("gpukern_candle::silu: the first input has shape [4, 3], stride [1, 4], start offset 0"), "{e}");
    assert!(e.contains(".contiguous()"), "{e}");
    let e = err(gc::exp(&x.narrow(1, 1, 2).unwrap()));
    assert!(e.contains("shape [3, 2], stride [4, 1], start offset 1"), "{e}");
    let row = Tensor::arange(0f32, 4.0, &Device::Cpu).unwrap();
    let e = err(gc::add(&x, &row.broadcast_as((3, 4)).unwrap()));
    assert!(e.contains("the second input has shape [3, 4], stride [0, 1]"), "{e}");
    let e = err(gc::add(&x, &row));
    assert!(e.contains("shape mismatch in add"), "{e}");
    let e = err(gc::mul(&x, &x.to_dtype(DType::F16).unwrap()));
    assert!(e.contains("dtype mismatch in mul"), "{e}");
    let e = err(gc::sqrt(&x.to_dtype(DType::F64).unwrap()));
    assert!(e.contains("unsupported dtype F64 for op sqrt"), "{e}");
    let e = err(gc::neg(&x.to_dtype(DType::U32).unwrap()));
    assert!(e.contains("unsupported dtype U32 for op neg"), "{e}");
    // An output of another shape, or one that shares the input's storage.
    let out = Tensor::zeros((4, 3), DType::F32, &Device::Cpu).unwrap();
    let e = err(gc::unary_into(UnaryOp::Silu, &x, &out));
    assert!(e.contains("shape mismatch in silu"), "{e}");
    let e = err(gc::unary_into(UnaryOp::Silu, &x.narrow(0, 0, 1).unwrap(), &x.narrow(0, 1, 1).unwrap()));
    assert!(e.contains("aliased"), "{e}");
}

#[test]
fn empty_tensors_give_empty_results() {
    let x = Tensor::zeros((0, 4), DType::BF16, &Device::Cpu).unwrap();
    let y = gc::axpby(1.0, &x, 2.0, &x).unwrap();
    assert_eq!(y.dims(), &[0, 4]);
    assert_eq!(gc::silu(&x).unwrap().elem_count(), 0);
}
