//! What the CPU and GPU tests share: the kinds, the data (special values
//! first), windows at a start offset inside a larger tensor.
#![allow(dead_code)] // each test binary uses its part

use candle_core::{Device, Tensor, WithDType};
use gpukern::{BinaryOp, OpKind, UnaryOp};
use gpukern_candle as gc;
use rand::{Rng, SeedableRng};

/// Every operation the crate wraps: gpukern's own lists.
pub const UNARY: [UnaryOp; 12] = UnaryOp::ALL;
pub const BINARY: [BinaryOp; 6] = BinaryOp::ALL;

/// Every kind the crate exposes, with axpby's scales.
pub fn kinds() -> Vec<(OpKind, (f32, f32))> {
    let mut k: Vec<_> = UNARY.iter().map(|&op| (OpKind::Unary(op), (1.0, 1.0))).collect();
    k.extend(BINARY.iter().map(|&op| (OpKind::Binary(op), (1.0, 1.0))));
    k.push((OpKind::Axpby, (0.75, -1.5)));
    k
}

/// `n` values: the special ones (zeros of both signs, infinities, NaN, a
/// subnormal, the largest finite) first, then random ones over a wide range.
pub fn data<T: WithDType>(n: usize, seed: u64) -> Vec<T> {
    let special = [0.0, -0.0, 1.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-41, -3e38, 65504.0, 0.5];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| match special.get(i) {
            Some(&v) => T::from_f64(v),
            None if i % 3 == 0 => T::from_f64(rng.gen_range(-1e4..1e4)),
            None => T::from_f64(rng.gen_range(-12.0..12.0)),
        })
        .collect()
}

/// `rows × cols` values at row `skip` of a `(rows + skip + 1) × cols` tensor:
/// a contiguous window that starts at an offset, with rows before and after.
pub fn window<T: WithDType>(rows: usize, cols: usize, skip: usize, seed: u64) -> (Tensor, Vec<T>) {
    window_on(&Device::Cpu, rows, cols, skip, seed)
}

/// [`window`] on `device`.
pub fn window_on<T: WithDType>(device: &Device, rows: usize, cols: usize, skip: usize, seed: u64) -> (Tensor, Vec<T>) {
    let all = data::<T>((rows + skip + 1) * cols, seed);
    let whole = Tensor::from_vec(all.clone(), (rows + skip + 1, cols), device).unwrap();
    let t = whole.narrow(0, skip, rows).unwrap();
    assert_eq!(t.layout().start_offset(), skip * cols);
    (t, all[skip * cols..(skip + rows) * cols].to_vec())
}

pub fn run(kind: OpKind, scales: (f32, f32), a: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    match kind {
        OpKind::Unary(op) => gc::unary(op, a),
        OpKind::Binary(op) => gc::binary(op, a, b),
        OpKind::Axpby => gc::axpby(scales.0, a, scales.1, b),
    }
}

/// `op` into `out` by its `_into` form.
pub fn run_into(kind: OpKind, scales: (f32, f32), a: &Tensor, b: &Tensor, out: &Tensor) -> candle_core::Result<()> {
    match kind {
        OpKind::Unary(op) => gc::unary_into(op, a, out),
        OpKind::Binary(op) => gc::binary_into(op, a, b, out),
        OpKind::Axpby => gc::axpby_into(scales.0, a, scales.1, b, out),
    }
}

/// How a norm's input lies in its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowCase {
    /// Rows back to back, from a start offset (a window of a larger tensor).
    Offset,
    /// Rows with a pitch: a tensor narrowed along its last dimension.
    Pitched,
    /// Three dimensions folding into one pitch, narrowed along the last.
    ThreeD,
}

/// `rows × cols` values laid out as `case` says, on `device`, and the same
/// values as contiguous host rows.
pub fn rows_on<T: WithDType>(device: &Device, case: RowCase, rows: usize, cols: usize, seed: u64) -> (Tensor, Vec<T>) {
    let (pad, skip) = (5, 1);
    let whole_cols = if case == RowCase::Offset { cols } else { cols + pad };
    let all = data::<T>((rows + skip + 1) * whole_cols, seed);
    let whole = Tensor::from_vec(all.clone(), (rows + skip + 1, whole_cols), device).unwrap();
    let mut t = whole.narrow(0, skip, rows).unwrap().narrow(1, 2.min(whole_cols - cols), cols).unwrap();
    if case == RowCase::ThreeD && rows.is_multiple_of(2) {
        let w = whole.narrow(0, skip, rows).unwrap().reshape((2, rows / 2, whole_cols)).unwrap();
        t = w.narrow(2, 2, cols).unwrap();
    }
    let first = skip * whole_cols + 2.min(whole_cols - cols);
    let host = (0..rows).flat_map(|i| all[first + i * whole_cols..][..cols].to_vec()).collect();
    (t, host)
}

/// `op` by the crate's plain functions: `(h, y)` (`h` for the residual adds only).
pub fn run_norm(
    op: gpukern::NormOp,
    x: &Tensor,
    r: &Tensor,
    w: &Tensor,
    b: &Tensor,
    eps: f32,
) -> candle_core::Result<(Option<Tensor>, Tensor)> {
    use gpukern::NormOp as N;
    Ok(match op {
        N::Rms => (None, gc::rms_norm(x, w, eps)?),
        N::AddRms => {
            let (h, y) = gc::add_rms_norm(x, r, w, eps)?;
            (Some(h), y)
        }
        N::Layer => (None, gc::layer_norm(x, w, b, eps)?),
        N::AddLayer => {
            let (h, y) = gc::add_layer_norm(x, r, w, b, eps)?;
            (Some(h), y)
        }
        N::Softmax => (None, gc::softmax_last_dim(x)?),
        N::LogSoftmax => (None, gc::log_softmax_last_dim(x)?),
    })
}

/// `f` captured on candle's stream of `dev` into a CUDA graph: its result,
/// the graph (to launch) and the type of each node. A call that synchronises
/// (or copies through the host) invalidates the capture, so `end_capture`
/// fails; what is queued becomes the nodes.
#[cfg(feature = "cuda")]
pub fn captured<R>(
    dev: &Device,
    f: impl FnOnce() -> R,
) -> (
    R,
    candle_core::cuda_backend::cudarc::driver::CudaGraph,
    Vec<candle_core::cuda_backend::cudarc::driver::sys::CUgraphNodeType>,
) {
    use candle_core::cuda_backend::cudarc::driver::sys;
    dev.synchronize().unwrap();
    let stream = dev.as_cuda_device().unwrap().cuda_stream();
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    let r = f();
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0)).unwrap().expect("a captured graph");
    let mut n = 0usize;
    // SAFETY: a live graph; the first call writes only the count.
    let rc = unsafe { sys::cuGraphGetNodes(graph.cu_graph(), std::ptr::null_mut(), &mut n) };
    assert_eq!(rc, sys::CUresult::CUDA_SUCCESS);
    let mut nodes = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for the `n` nodes the graph holds.
    let rc = unsafe { sys::cuGraphGetNodes(graph.cu_graph(), nodes.as_mut_ptr(), &mut n) };
    assert_eq!(rc, sys::CUresult::CUDA_SUCCESS);
    let types = nodes
        .iter()
        .map(|&node| {
            let mut t = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
            // SAFETY: a node of the live graph; writes one value.
            assert_eq!(unsafe { sys::cuGraphNodeGetType(node, &mut t) }, sys::CUresult::CUDA_SUCCESS);
            t
        })
        .collect();
    (r, graph, types)
}

/// Asserts that the captured nodes are one kernel and at most `allocs`
/// stream-ordered allocations (cudarc allocates in the stream where the
/// device can, an alloc node; else before the capture's work), nothing else:
/// no copy, no memset, no host node.
#[cfg(feature = "cuda")]
pub fn assert_one_launch(
    types: &[candle_core::cuda_backend::cudarc::driver::sys::CUgraphNodeType],
    allocs: usize,
    what: &str,
) {
    assert_launches(types, 1, allocs, 0, what)
}

/// Asserts that the captured nodes are `kernels` kernels, at most `allocs`
/// stream-ordered allocations and at most `frees` frees (a two-pass norm's
/// scratch), nothing else: no copy, no memset, no host node.
#[cfg(feature = "cuda")]
pub fn assert_launches(
    types: &[candle_core::cuda_backend::cudarc::driver::sys::CUgraphNodeType],
    kernels: usize,
    allocs: usize,
    frees: usize,
    what: &str,
) {
    use candle_core::cuda_backend::cudarc::driver::sys::CUgraphNodeType as N;
    let count = |t| types.iter().filter(|&&x| x == t).count();
    let (k, a, f) = (
        count(N::CU_GRAPH_NODE_TYPE_KERNEL),
        count(N::CU_GRAPH_NODE_TYPE_MEM_ALLOC),
        count(N::CU_GRAPH_NODE_TYPE_MEM_FREE),
    );
    assert_eq!(k, kernels, "{what}: {kernels} kernel(s): {types:?}");
    assert!(a <= allocs, "{what}: at most {allocs} allocations: {types:?}");
    assert!(f <= frees, "{what}: at most {frees} frees: {types:?}");
    assert_eq!(types.len(), k + a + f, "{what}: only these: {types:?}");
}
