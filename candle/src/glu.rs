//! The gated activations as candle ops: [`Glu`] (`CustomOp2`: `act(gate) ·
//! up` of two tensors of one shape) and [`GluSplit`] (`CustomOp1`: rows
//! `[gate | up]` of one tensor, the last dimension `2·d`, to a new tensor
//! with last dimension `d`). `act(gate) · up` is rounded once (gpukern's
//! `Gpu::glu`); `Device::Cpu` runs gpukern's reference, the same bits.
//!
//! Layouts: `Glu`'s operands are dense ranges at any offset (as the
//! element-wise ops); `GluSplit`'s input is rows along its last dimension
//! (stride 1) whose leading dimensions fold into one pitch: a contiguous
//! tensor at any offset, or one narrowed along its last dimension. The
//! halves are read in place (no copy); the output is a new contiguous
//! tensor. Anything else is an error naming the layout.

use candle_core::backend::BackendStorage;
#[cfg(feature = "cuda")]
use candle_core::CudaStorage;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Layout, Result, Shape};
use gpukern::{reference, GluOp, Rows};

use crate::check::{self, RowLayout};
use crate::map::{by_dtype, Dt};

/// `act(gate) · up` of two tensors of one dtype and shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Glu(pub GluOp);

/// `act(gate) · up` of rows `[gate | up]` (last dimension `2·d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GluSplit(pub GluOp);

impl Glu {
    /// One dtype and shape, dense ranges: the dtype and both ranges.
    pub(crate) fn check(
        self,
        a: (DType, &Layout),
        b: (DType, &Layout),
    ) -> Result<(DType, [std::ops::Range<usize>; 2])> {
        let name = self.0.name();
        let dtype = check::same(name, &[a, b])?;
        Ok((dtype, [check::dense(name, "the gate", a.1)?, check::dense(name, "the up projection", b.1)?]))
    }
}

impl GluSplit {
    /// The input's rows (an even last dimension), the output rows and shape.
    pub(crate) fn check(self, dtype: DType, l: &Layout) -> Result<(RowLayout, Rows, Shape)> {
        let name = self.0.name();
        check::dtype(name, dtype)?;
        let x = check::rows(name, "the input", l)?;
        if x.cols % 2 != 0 {
            return Err(check::layout_err(name, "the input (its last dimension must be even: [gate | up])", l));
        }
        let d = x.cols / 2;
        let mut dims = l.dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last = d;
        }
        // One row when there is one: its pitch is then any (the rows layout's).
        let x_pitch = if x.rows > 1 { x.pitch } else { x.cols };
        Ok((x, Rows { rows: x.rows, cols: d, x_pitch, y_pitch: d }, Shape::from(dims)))
    }
}

impl CustomOp2 for Glu {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        let (dtype, [ra, rb]) = self.check((s1.dtype(), l1), (s2.dtype(), l2))?;
        fn run<T: Dt>(
            op: GluOp,
            s1: &CpuStorage,
            s2: &CpuStorage,
            ra: &std::ops::Range<usize>,
            rb: &std::ops::Range<usize>,
        ) -> Result<CpuStorage> {
            let (g, u) = (&T::cpu_storage_as_slice(s1)?[ra.clone()], &T::cpu_storage_as_slice(s2)?[rb.clone()]);
            Ok(T::to_cpu_storage_owned(reference::glu(op, g, u)))
        }
        Ok((by_dtype!(dtype, run(self.0, s1, s2, &ra, &rb))?, l1.shape().clone()))
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, s1: &CudaStorage, l1: &Layout, s2: &CudaStorage, l2: &Layout) -> Result<(CudaStorage, Shape)> {
        let (dtype, ranges) = self.check((s1.dtype(), l1), (s2.dtype(), l2))?;
        Ok((crate::cuda::glu(self.0, dtype, s1, s2, &ranges)?, l1.shape().clone()))
    }
}

impl CustomOp1 for GluSplit {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (x, rows, shape) = self.check(s.dtype(), l)?;
        fn run<T: Dt>(op: GluOp, s: &CpuStorage, x: RowLayout, rows: Rows) -> Result<CpuStorage> {
            let all = T::cpu_storage_as_slice(s)?;
            let xs = all
                .get(x.start..x.start + x.extent())
                .ok_or_else(|| check::short(op.name(), x.start + x.extent(), all.len()))?;
            let y = vec![T::from_f64(0.0); rows.rows * rows.cols];
            Ok(T::to_cpu_storage_owned(reference::glu_split(op, xs, &y, rows)))
        }
        Ok((by_dtype!(s.dtype(), run(self.0, s, x, rows))?, shape))
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Shape)> {
        let (x, rows, shape) = self.check(s.dtype(), l)?;
        Ok((crate::cuda::glu_split(self.0, s, x, rows)?, shape))
    }
}
