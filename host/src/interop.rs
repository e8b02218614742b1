//! Other crates' buffers (feature `cudarc`): gpukern's element-wise operations
//! on `cudarc::driver::CudaSlice<T>` / `CudaView<T>` operands, queued on a
//! cudarc stream.
//!
//! Both libraries use the device's primary context, so a cudarc buffer's
//! address is valid in gpukern's kernels. Each call checks that the stream's
//! context is this `Gpu`'s (and refuses it otherwise: the addresses would mean
//! nothing there), takes the operands' addresses through cudarc's
//! `DevicePtr`/`DevicePtrMut` (so the stream first waits for earlier writes, and
//! cudarc records the reads and the write when the call returns), and launches
//! on the stream with the automatic choice.

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use kernels_gpu::ops::{BinaryOp, OpKind, UnaryOp};

use crate::buffer::{Element, View, ViewMut};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::operands::Operands;

impl Gpu {
    /// Errors unless `stream` lives in this `Gpu`'s context on its device.
    pub(crate) fn check_cudarc_stream(&self, op: &'static str, stream: &CudaStream) -> Result<()> {
        let ctx = stream.context();
        let same = std::ptr::addr_eq(ctx.cu_ctx(), self.shared.ctx.as_raw()) && ctx.ordinal() == self.info().index;
        if !same {
            return Err(Error::ForeignContext { op, device: self.info().index });
        }
        Ok(())
    }

    /// Runs `kind` on cudarc operands: `b` for two-input kinds, `scales` for axpby.
    fn cudarc_map<T: Element>(
        &self,
        kind: OpKind,
        a: &impl DevicePtr<T>,
        b: Option<&impl DevicePtr<T>>,
        out: &mut impl DevicePtrMut<T>,
        scales: Option<(f32, f32)>,
        stream: &CudaStream,
    ) -> Result<&'static str> {
        self.check_cudarc_stream(kind.name(), stream)?;
        let (n, n_out) = (a.len(), out.len());
        // The guards make `stream` wait for earlier writes now and record this
        // call's reads and write when they drop, after the launch is queued.
        let (pa, _ra) = a.device_ptr(stream);
        let b_ptr = b.map(|b| (b.len(), b.device_ptr(stream)));
        let (pc, _wc) = out.device_ptr_mut(stream);
        // SAFETY (the views' contract): cudarc allocated the three ranges in the
        // primary context, which is this Gpu's (checked above); the borrows of
        // `a`, `b` and `out` keep them allocated for this call, and cudarc's
        // events order every later use after the queued kernel.
        let ops = unsafe {
            Operands::<T> {
                a: View::from_raw_parts(self, pa, n)?,
                b: match &b_ptr {
                    Some((len, (pb, _))) => Some(View::from_raw_parts(self, *pb, *len)?),
                    None => None,
                },
                out: ViewMut::from_raw_parts(self, pc, n_out)?,
                scales,
            }
        };
        self.map_auto(kind, ops, stream.cu_stream(), crate::Pdl::Auto)
    }

    /// `out = op(a, b)` on cudarc buffers, queued on a cudarc stream of this
    /// device's primary context. Returns the kernel that did the bulk of the work.
    pub fn binary_cudarc<T: Element>(
        &self,
        op: BinaryOp,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        out: &mut impl DevicePtrMut<T>,
        stream: &CudaStream,
    ) -> Result<&'static str> {
        self.cudarc_map(OpKind::Binary(op), a, Some(b), out, None, stream)
    }

    /// `out = op(a)` on cudarc buffers.
    pub fn unary_cudarc<T: Element, A: DevicePtr<T>>(
        &self,
        op: UnaryOp,
        a: &A,
        out: &mut impl DevicePtrMut<T>,
        stream: &CudaStream,
    ) -> Result<&'static str> {
        self.cudarc_map(OpKind::Unary(op), a, None::<&A>, out, None, stream)
    }

    /// `out = alpha·a + beta·b` on cudarc buffers.
    pub fn axpby_cudarc<T: Element>(
        &self,
        alpha: f32,
        a: &impl DevicePtr<T>,
        beta: f32,
        b: &impl DevicePtr<T>,
        out: &mut impl DevicePtrMut<T>,
        stream: &CudaStream,
    ) -> Result<&'static str> {
        self.cudarc_map(OpKind::Axpby, a, Some(b), out, Some((alpha, beta)), stream)
    }
}
