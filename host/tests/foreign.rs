//! Memory, streams and graphs of another owner are refused: another `Gpu`'s
//! buffers in copies and graphs, and cudarc buffers of another CUDA context
//! (each operand's context is checked, not only the stream's). Moved out of
//! `errors.rs` to keep both files readable.

mod common;

use common::gpu;
use gpukern::CudarcExt;
use gpukern::{BinaryOp, Error, Gpu, LaunchShape, UnaryOp, Variant};

/// What the type system cannot see is checked at run time: a copy or a graph
/// replay with another handle's buffers or stream, and an empty graph.
#[test]
#[ignore = "needs a CUDA GPU"]
fn foreign_copies_and_graphs_are_refused() {
    let (gpu, other) = (gpu(), Gpu::new(0).unwrap());
    let (stream, other_stream) = (gpu.stream().unwrap(), other.stream().unwrap());
    let src = gpu.upload(&[1.5f32; 256]).unwrap();
    let mut dst = gpu.upload(&[0.0f32; 256]).unwrap();
    let foreign = other.upload(&[9.0f32; 256]).unwrap();
    let e = dst.copy_from(&foreign, &stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "buffers", .. }), "{e:?}");
    let e = dst.copy_from(&src, &other_stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "buffers", .. }), "{e:?}");
    assert_eq!(dst.to_vec().unwrap(), vec![0.0; 256], "nothing was copied");
    dst.copy_from(&src, &stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(dst.to_vec().unwrap(), vec![1.5; 256]);

    let e = gpu.studies().add_graph::<f32>(Variant::F32x4, LaunchShape::default(), Vec::new(), 4).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    let mut out = gpu.alloc::<f32>(256).unwrap();
    let ops = vec![(src.view(), src.view(), out.view_mut())];
    let graph = gpu.studies().add_graph(Variant::F32x4, LaunchShape::default(), ops, 2).unwrap();
    let e = graph.launch(&other_stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "stream", .. }), "{e:?}");
    graph.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    drop(graph);
    assert_eq!(out.to_vec().unwrap(), vec![3.0; 256]);
}

/// A cudarc buffer of another context is refused even on a stream of this
/// `Gpu`'s context: each operand's context is checked, not only the stream's,
/// and nothing is written (the output's canary stays).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_buffers_of_another_context_are_refused() {
    use cudarc::driver::CudaContext;
    let gpu = gpu();
    let ours = CudaContext::new(0).unwrap().new_stream().unwrap();
    let other = CudaContext::new_non_primary(0, 0).unwrap().new_stream().unwrap();
    let canary = [5.0f32; 64];
    let (ax, bx, mut cx) = (
        ours.clone_htod(&[1.0f32; 64]).unwrap(),
        ours.clone_htod(&[2.0f32; 64]).unwrap(),
        ours.clone_htod(&canary).unwrap(),
    );
    let (ao, bo, mut co) = (
        other.clone_htod(&[1.0f32; 64]).unwrap(),
        other.clone_htod(&[2.0f32; 64]).unwrap(),
        other.clone_htod(&canary).unwrap(),
    );
    let foreign = |e: Error| matches!(e, Error::ForeignContext { device: 0, .. });
    // One foreign operand at a time, in each position, through a view or a slice.
    assert!(foreign(gpu.binary_cudarc(BinaryOp::Add, &ao, &bx, &mut cx, &ours).unwrap_err()));
    assert!(foreign(gpu.binary_cudarc(BinaryOp::Add, &ax, &bo.slice(1..), &mut cx, &ours).unwrap_err()));
    assert!(foreign(gpu.unary_cudarc(UnaryOp::Neg, &ax, &mut co, &ours).unwrap_err()));
    assert!(foreign(gpu.unary_cudarc(UnaryOp::Neg, &ax, &mut co.slice_mut(8..), &ours).unwrap_err()));
    assert!(foreign(gpu.axpby_cudarc(1.0, &ax, 2.0, &bo, &mut cx, &ours).unwrap_err()));
    ours.synchronize().unwrap();
    assert_eq!(ours.clone_dtoh(&cx).unwrap(), canary.to_vec(), "our output was written");
    assert_eq!(other.clone_dtoh(&co).unwrap(), canary.to_vec(), "the foreign output was written");
    // The spin kernel (a timing harness's, on another library's stream): only
    // on a stream of this Gpu's context.
    assert!(foreign(gpu.spin_cudarc(&other, 1_000).unwrap_err()));
    gpu.spin_cudarc(&ours, 1_000).unwrap();
    // All of ours still runs: 1 + 2 everywhere.
    gpu.binary_cudarc(BinaryOp::Add, &ax, &bx, &mut cx, &ours).unwrap();
    assert_eq!(ours.clone_dtoh(&cx).unwrap(), vec![3.0f32; 64]);
    common::record(
        "cudarc_buffers_of_another_context_are_refused",
        "each foreign operand refused, canaries kept",
        64,
        true,
    );
}
