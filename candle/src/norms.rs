//! The norms and softmax along the last dimension as candle ops: [`RowNorm`]
//! is a `CustomOp1` (softmax, log-softmax), `CustomOp2` (RMSNorm with its
//! weight) and `CustomOp3` (LayerNorm with weight and bias; the fused
//! residual adds with the residual and the weight, or for `add_layer_norm`
//! the weight and bias stacked as one `[2, cols]` tensor).
//!
//! Layouts: the input's last dimension is the row, with stride 1; the other
//! dimensions must fold into one row stride (a contiguous tensor at any
//! offset, or one narrowed along its last dimension: rows with a pitch). That
//! goes to gpukern's pitch support with no copy. Weight and bias are dense,
//! with one element per column; `add_rms_norm`'s residual has the input's row
//! layout. The output is a new contiguous tensor of the input's shape
//! (`add_rms_norm`: shape `[2, ..]`, `h` then `y`, split by the plain function
//! into two views).
//!
//! `Device::Cpu` replays the plan that [`gpukern::NormPlan::auto`] picks for
//! the dtype and row length. `Device::Cuda` runs that plan wherever the
//! kernel's registers and the device allow it (the same bits then), else the
//! next one in the same order of preference (the same error bound, other
//! bits): see the README.

use candle_core::backend::BackendStorage;
#[cfg(feature = "cuda")]
use candle_core::CudaStorage;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, CustomOp3, Layout, Result, Shape};
use gpukern::reference::norms as rn;
use gpukern::{Norm, NormOp, NormPlan, Rows};

use crate::check::{self, RowLayout};
use crate::map::{by_dtype, Dt};

/// One of gpukern's row operations with its `eps` (unused by the softmaxes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowNorm {
    /// The row operation.
    pub op: NormOp,
    /// Added to the mean square (RMS) or the variance (layer norm).
    pub eps: f32,
}

/// Whether the operation adds a residual first and returns `(h, y)`.
pub(crate) fn residual_op_of(op: NormOp) -> bool {
    matches!(op, NormOp::AddRms | NormOp::AddLayer)
}

impl RowNorm {
    /// How many inputs the operation takes (x first).
    fn arity(self) -> usize {
        match self.op {
            NormOp::Softmax | NormOp::LogSoftmax => 1,
            NormOp::Rms => 2,
            NormOp::Layer | NormOp::AddRms | NormOp::AddLayer => 3,
        }
    }

    /// Checks the operands (x first, then weight and bias, or residual and
    /// weight): one dtype; x's row layout; the others as the operation needs.
    /// Returns x's row layout, the others' ranges (a residual's start only)
    /// and the output shape.
    pub(crate) fn check(self, operands: &[(candle_core::DType, &Layout)]) -> Result<(RowLayout, Vec<usize>, Shape)> {
        let name = self.op.name();
        if operands.len() != self.arity() {
            let msg = format!("gpukern_candle::{name}: takes {} tensors, got {}", self.arity(), operands.len());
            return Err(candle_core::Error::Msg(msg).bt());
        }
        check::same_dtype(name, operands)?;
        let x = check::rows(name, "the input", operands[0].1)?;
        let mut starts = Vec::new();
        for (i, (_, l)) in operands.iter().enumerate().skip(1) {
            if residual_op_of(self.op) && i == 1 {
                let r = check::rows(name, "the residual", l)?;
                if l.dims() != operands[0].1.dims() || r.pitch != x.pitch {
                    return Err(check::layout_err(
                        name,
                        "the residual (it must have the input's shape and row pitch)",
                        l,
                    ));
                }
                starts.push(r.start);
            } else if self.op == NormOp::AddLayer {
                // Weight then bias, one dense [2, cols] tensor (candle has no
                // four-input op).
                let wb = check::vector(name, "weight and bias stacked ([2, cols])", l, 2 * x.cols)?;
                if l.dims() != [2, x.cols] {
                    return Err(check::layout_err(name, "weight and bias stacked (it must be [2, cols])", l));
                }
                starts.push(wb);
            } else {
                let what = if self.op == NormOp::Layer && i == 2 { "the bias" } else { "the weight" };
                starts.push(check::vector(name, what, l, x.cols)?);
            }
        }
        let shape = operands[0].1.shape().clone();
        let shape = if residual_op_of(self.op) { Shape::from([&[2], shape.dims()].concat()) } else { shape };
        Ok((x, starts, shape))
    }

    /// The forward on the CPU: gpukern's reference, replaying the automatic plan.
    fn cpu(self, inputs: &[(&CpuStorage, &Layout)]) -> Result<(CpuStorage, Shape)> {
        let operands: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), *l)).collect();
        let (x, starts, shape) = self.check(&operands)?;
        fn run<T: Dt>(
            m: RowNorm,
            inputs: &[(&CpuStorage, &Layout)],
            x: RowLayout,
            starts: &[usize],
        ) -> Result<CpuStorage> {
            let slices = inputs.iter().map(|(s, _)| T::cpu_storage_as_slice(s)).collect::<Result<Vec<&[T]>>>()?;
            let cols = x.cols;
            let from = |i: usize, len: usize| -> Result<&[T]> {
                let (s, start) = (slices[i], if i == 0 { x.start } else { starts[i - 1] });
                s.get(start..start + len).ok_or_else(|| check::short(m.op.name(), start + len, s.len()))
            };
            let extent = x.extent();
            let xs = from(0, extent)?;
            let host = match m.op {
                NormOp::Rms => Norm::rms(from(1, cols)?, m.eps),
                NormOp::AddRms => Norm::add_rms(from(1, extent)?, (), from(2, cols)?, m.eps),
                NormOp::Layer => Norm::layer(from(1, cols)?, from(2, cols)?, m.eps),
                NormOp::AddLayer => {
                    let (w, b) = from(2, 2 * cols)?.split_at(cols);
                    Norm::add_layer(from(1, extent)?, (), w, b, m.eps)
                }
                NormOp::Softmax => Norm::Softmax,
                NormOp::LogSoftmax => Norm::LogSoftmax,
            };
            let rows = Rows { rows: x.rows, cols, x_pitch: x.pitch, y_pitch: cols };
            let dtype = <T as gpukern::Element>::DTYPE;
            let order = NormPlan::auto(dtype, cols).order(dtype, cols);
            let out = rn::norm(host, xs, rows, order);
            let mut all = out.h.unwrap_or_default();
            all.extend(out.y);
            Ok(T::to_cpu_storage_owned(all))
        }
        Ok((by_dtype!(operands[0].0, run(self, inputs, x, &starts))?, shape))
    }
}

impl CustomOp1 for RowNorm {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        self.cpu(&[(s, l)])
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Shape)> {
        self.cuda(&[(s, l)])
    }
}

impl CustomOp2 for RowNorm {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        self.cpu(&[(s1, l1), (s2, l2)])
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, s1: &CudaStorage, l1: &Layout, s2: &CudaStorage, l2: &Layout) -> Result<(CudaStorage, Shape)> {
        self.cuda(&[(s1, l1), (s2, l2)])
    }
}

impl CustomOp3 for RowNorm {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.cpu(&[(s1, l1), (s2, l2), (s3, l3)])
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
        s3: &CudaStorage,
        l3: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        self.cuda(&[(s1, l1), (s2, l2), (s3, l3)])
    }
}
