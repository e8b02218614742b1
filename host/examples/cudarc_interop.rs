//! gpukern on another crate's buffers: the inputs live in cudarc `CudaSlice`s,
//! gpukern computes on them on a cudarc stream, and the result is read back
//! through cudarc.
//!
//! ```text
//! cargo run --release -p gpukern --features cudarc --example cudarc_interop
//! ```

use cudarc::driver::{CudaContext, DevicePtr};
use gpukern::half::f16;
use gpukern::CudarcExt;
use gpukern::{reference, BinaryOp, Call, Dtype, Gpu, OpKind, Opts, UnaryOp};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // cudarc and gpukern both open device 0's primary context.
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let gpu = Gpu::new(0)?;

    let n = 1 << 20;
    let a: Vec<f16> = (0..n).map(|i| f16::from_f32((i % 1000) as f32 * 0.25 - 100.0)).collect();
    let b: Vec<f16> = (0..n).map(|i| f16::from_f32(1.5 + (i % 7) as f32)).collect();
    let da = stream.clone_htod(&a)?;
    let db = stream.clone_htod(&b)?;
    let mut prod = stream.alloc_zeros::<f16>(n)?;
    let mut out = stream.alloc_zeros::<f16>(n)?;

    // prod = a * b, then out = relu(prod), both queued on cudarc's stream.
    gpu.binary_cudarc(BinaryOp::Mul, &da, &db, &mut prod, &stream)?;
    gpu.unary_cudarc(UnaryOp::Relu, &prod, &mut out, &stream)?;
    // What ran: the plan of each call (cudarc's addresses, the automatic
    // choice: a cudarc call plans as on a new stream, `Pdl::Auto`).
    let s = gpu.stream()?;
    let addr = |s: &cudarc::driver::CudaSlice<f16>| s.device_ptr(&stream).0;
    let (pa, pb, pp, po) = (addr(&da), addr(&db), addr(&prod), addr(&out));
    let mul = Call::elementwise(OpKind::Binary(BinaryOp::Mul), Dtype::F16, n, &[pa, pb, pp]);
    let k1 = gpu.plan(mul, &s, &Opts::auto())?.kernel;
    let k2 =
        gpu.plan(Call::elementwise(OpKind::Unary(UnaryOp::Relu), Dtype::F16, n, &[pp, po]), &s, &Opts::auto())?.kernel;
    let got: Vec<f16> = stream.clone_dtoh(&out)?;

    let products: Vec<f16> = a.iter().zip(&b).map(|(&x, &y)| reference::binary_one(BinaryOp::Mul, x, y)).collect();
    let want: Vec<f16> = products.iter().map(|&x| reference::unary_one(UnaryOp::Relu, x)).collect();
    let mismatch = reference::first_mismatch(&got, &want);
    println!(
        "cudarc buffers, gpukern kernels {k1} then {k2} on a cudarc stream: {n} elements, first mismatch {mismatch:?}"
    );

    // A stream of another context is refused, not launched on.
    let other = foreign_context_is_refused(&gpu)?;
    println!("{other}");
    if mismatch.is_some() {
        return Err("result differs from the CPU reference".into());
    }
    Ok(())
}

/// The refusal case: a non-primary cudarc context on the same device has other
/// addresses, so gpukern must return an error instead of launching.
fn foreign_context_is_refused(gpu: &Gpu) -> Result<String, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new_non_primary(0, 0)?;
    let stream = ctx.new_stream()?;
    let x = stream.alloc_zeros::<f32>(4)?;
    let mut y = stream.alloc_zeros::<f32>(4)?;
    match gpu.unary_cudarc(UnaryOp::Neg, &x, &mut y, &stream) {
        Err(e) => Ok(format!("a stream of a non-primary context is refused: {e}")),
        Ok(()) => Err("neg launched on a foreign context".into()),
    }
}
