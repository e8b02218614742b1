//! Blocking conveniences: an operation on host slices, computed on the GPU,
//! with the result back in a `Vec`. Each call uploads its inputs, queues the
//! automatic choice on a new stream of `gpu`, waits for it and downloads the
//! output: for trying things out and for tests, not for speed (use device
//! buffers and a [`Stream`](crate::Stream) for that).
//!
//! ```no_run
//! use gpukern::{blocking, half::f16, BinaryOp, Gpu, UnaryOp};
//! let gpu = Gpu::new(0)?;
//! let a = vec![f16::from_f32(1.5); 1000];
//! let b = vec![f16::from_f32(-2.0); 1000];
//! let sum = blocking::binary(&gpu, BinaryOp::Add, &a, &b)?;
//! let relu = blocking::unary(&gpu, UnaryOp::Relu, &sum)?;
//! let mix = blocking::axpby(&gpu, 0.5, &a, 2.0, &b)?;
//! assert_eq!((relu.len(), mix.len()), (1000, 1000));
//! # Ok::<(), gpukern::Error>(())
//! ```

use kernels_gpu::ops::{BinaryOp, OpKind, UnaryOp};

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::memory::buffer::Element;

/// `op(a, b)` of two host slices. Errors: lengths differ
/// ([`Error::LengthMismatch`](crate::Error::LengthMismatch)), or any device
/// error of the upload, launch or download.
pub fn binary<T: Element>(gpu: &Gpu, op: BinaryOp, a: &[T], b: &[T]) -> Result<Vec<T>> {
    gpu.map_host(OpKind::Binary(op), a, Some(b), None)
}

/// `op(a)` of a host slice. Errors: a device error of the upload, launch or
/// download.
pub fn unary<T: Element>(gpu: &Gpu, op: UnaryOp, a: &[T]) -> Result<Vec<T>> {
    gpu.map_host(OpKind::Unary(op), a, None, None)
}

/// `alpha·a + beta·b` of two host slices (as [`Gpu::axpby`]). Errors as
/// [`binary`].
pub fn axpby<T: Element>(gpu: &Gpu, alpha: f32, a: &[T], beta: f32, b: &[T]) -> Result<Vec<T>> {
    gpu.map_host(OpKind::Axpby, a, Some(b), Some((alpha, beta)))
}
