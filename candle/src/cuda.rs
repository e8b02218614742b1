//! The CUDA forward (feature `cuda`): gpukern's kernels on candle's buffers,
//! queued on candle's stream.
//!
//! Per operation: the inputs' `CudaSlice`s (`as_cuda_slice`), each sliced to
//! its layout's window as a `CudaView` (no copy); the output from `dev.alloc`
//! (no fill: the kernel writes every element); one launch through gpukern's
//! cudarc interop on `dev.cuda_stream()`, the stream candle queues the tensor's
//! other work on, so nothing waits on the host; the output handed back with
//! `CudaStorage::wrap_cuda_slice`. candle's `CudaDevice` and gpukern use the
//! device's primary context, so the addresses mean the same in both (the
//! interop checks it).

use gpukern::CudarcExt;
use std::ops::Range;
use std::sync::{Mutex, OnceLock, PoisonError};

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaStream, CudaView, DeviceRepr};
use candle_core::cuda_backend::CudaDType;
use candle_core::{CudaDevice, CudaStorage, Error, Layout, Result, Shape};
use gpukern::{CudarcNorm, Element, Gpu, Norm, NormOp, OpKind, Opts, Rows};

use crate::check::RowLayout;
use crate::map::{by_dtype, Map};
use crate::norms::RowNorm;

/// Devices one process may use through this crate.
const MAX_DEVICES: usize = 64;

/// One `Gpu` per device ordinal, opened at the first operation there (it loads
/// gpukern's modules) and kept for the process's life.
static GPUS: [OnceLock<Gpu>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];
/// Serialises the opening, so two threads do not both load the modules.
static OPENING: Mutex<()> = Mutex::new(());

fn gpukern_err(e: gpukern::Error) -> Error {
    Error::Cuda(Box::new(e)).bt()
}

/// gpukern's handle for the device of `stream`. The ordinal is the context's
/// (candle's `DeviceId` is a counter, not an ordinal).
fn gpu_of(stream: &CudaStream) -> Result<&'static Gpu> {
    let ordinal = stream.context().ordinal();
    let slot = GPUS
        .get(ordinal)
        .ok_or_else(|| Error::Msg(format!("gpukern_candle: device ordinal {ordinal} is beyond {MAX_DEVICES}")))?;
    if let Some(gpu) = slot.get() {
        return Ok(gpu);
    }
    let _opening = OPENING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(gpu) = slot.get() {
        return Ok(gpu);
    }
    let gpu = Gpu::new(ordinal).map_err(gpukern_err)?;
    Ok(slot.get_or_init(|| gpu))
}

/// gpukern's handle for a candle CUDA device: the one this crate's operations
/// launch through (for comparing with gpukern's own API on the same data).
pub fn gpu(device: &CudaDevice) -> Result<&'static Gpu> {
    gpu_of(&device.cuda_stream())
}

/// One launch of `$m` on views `$a`, `$b` (a second input or `None`) into `$out`.
macro_rules! launch {
    ($m:expr, $gpu:expr, $a:expr, $b:expr, $out:expr, $stream:expr) => {{
        let (m, gpu, stream) = ($m, $gpu, $stream);
        let second = || $b.ok_or_else(|| Error::Msg(format!("gpukern_candle::{}: needs two inputs", m.name())));
        match m.kind {
            OpKind::Unary(op) => gpu.unary_cudarc(op, $a, $out, stream),
            OpKind::Binary(op) => gpu.binary_cudarc(op, $a, second()?, $out, stream),
            OpKind::Axpby => gpu.axpby_cudarc(m.scales.0, $a, m.scales.1, second()?, $out, stream),
        }
        .map_err(gpukern_err)
    }};
}

/// The window `range` of an operand's buffer (no copy); an error, not a panic,
/// if the storage were shorter than its layout says.
fn window<'a, T: CudaDType>(s: &'a CudaStorage, range: &Range<usize>) -> Result<CudaView<'a, T>> {
    let len = s.as_cuda_slice::<T>()?.len();
    s.as_cuda_slice::<T>()?
        .try_slice(range.clone())
        .ok_or_else(|| Error::Msg(format!("gpukern_candle: layout range {range:?} outside a buffer of {len}")).bt())
}

/// The element types both libraries share on the device.
trait CudaDt: CudaDType + DeviceRepr + Element {}
impl<T: CudaDType + DeviceRepr + Element> CudaDt for T {}

impl Map {
    /// The forward on candle's CUDA storage into a new storage.
    pub fn cuda(self, inputs: &[(&CudaStorage, &Layout)]) -> Result<CudaStorage> {
        let operands: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), *l)).collect();
        let (dtype, ranges) = self.check(&operands)?;
        fn run<T: CudaDt>(m: Map, inputs: &[(&CudaStorage, &Layout)], ranges: &[Range<usize>]) -> Result<CudaStorage> {
            let dev = &inputs[0].0.device;
            let stream = dev.cuda_stream();
            let n = ranges[0].len();
            // SAFETY: the kernel below writes all `n` elements before anything
            // reads them (queued on the same stream); on an error the buffer is
            // dropped unread.
            let mut out = unsafe { dev.alloc::<T>(n) }?;
            if n > 0 {
                let gpu = gpu_of(&stream)?;
                let a = window::<T>(inputs[0].0, &ranges[0])?;
                let b = match inputs.get(1) {
                    Some((s, _)) => Some(window::<T>(s, &ranges[1])?),
                    None => None,
                };
                launch!(m, gpu, &a, b.as_ref(), &mut out, &stream)?;
            }
            Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
        }
        by_dtype!(dtype, run(self, inputs, &ranges))
    }

    /// The forward on candle's CUDA storage into `dst`'s window.
    pub fn cuda_into(self, dst: &mut CudaStorage, dst_l: &Layout, inputs: &[(&CudaStorage, &Layout)]) -> Result<()> {
        let mut operands: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), *l)).collect();
        operands.push((dst.dtype(), dst_l));
        let (dtype, ranges) = self.check(&operands)?;
        fn run<T: CudaDt>(
            m: Map,
            dst: &mut CudaStorage,
            inputs: &[(&CudaStorage, &Layout)],
            ranges: &[Range<usize>],
        ) -> Result<()> {
            if ranges[0].is_empty() {
                return Ok(());
            }
            let stream = dst.device.cuda_stream();
            let gpu = gpu_of(&stream)?;
            let a = window::<T>(inputs[0].0, &ranges[0])?;
            let b = match inputs.get(1) {
                Some((s, _)) => Some(window::<T>(s, &ranges[1])?),
                None => None,
            };
            let out_range = ranges[inputs.len()].clone();
            let mut out = dst.as_cuda_slice_mut::<T>()?.try_slice_mut(out_range.clone()).ok_or_else(|| {
                Error::Msg(format!("gpukern_candle: output range {out_range:?} outside its buffer")).bt()
            })?;
            launch!(m, gpu, &a, b.as_ref(), &mut out, &stream)?;
            Ok(())
        }
        by_dtype!(dtype, run(self, dst, inputs, &ranges))
    }
}

/// The norms' forward on candle's CUDA storage: x's rows (a window of its
/// buffer, any offset and pitch), the weight, bias or residual windows, a new
/// contiguous output (`add_rms_norm`: `h` then `y`, split in two), one launch
/// on candle's stream.
impl RowNorm {
    /// The forward on candle's CUDA storage (see above).
    pub(crate) fn cuda(self, inputs: &[(&CudaStorage, &Layout)]) -> Result<(CudaStorage, Shape)> {
        let operands: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), *l)).collect();
        let (x, starts, shape) = self.check(&operands)?;
        fn run<T: CudaDt>(
            m: RowNorm,
            inputs: &[(&CudaStorage, &Layout)],
            x: RowLayout,
            starts: &[usize],
        ) -> Result<CudaStorage> {
            let dev = &inputs[0].0.device;
            let stream = dev.cuda_stream();
            let (n, cols, extent) = (x.rows * x.cols, x.cols, x.extent());
            let outputs = if crate::norms::residual_op_of(m.op) { 2 } else { 1 };
            // SAFETY: the kernel below writes all `outputs · n` elements before
            // anything reads them (queued on the same stream); on an error the
            // buffer is dropped unread.
            let mut out = unsafe { dev.alloc::<T>(outputs * n) }?;
            if n > 0 {
                let gpu = gpu_of(&stream)?;
                let xv = window::<T>(inputs[0].0, &(x.start..x.start + extent))?;
                let input = |i: usize, len: usize| window::<T>(inputs[i].0, &(starts[i - 1]..starts[i - 1] + len));
                let rows = Rows { rows: x.rows, cols, x_pitch: x.pitch, y_pitch: cols };
                let opts = &Opts::auto();
                match m.op {
                    NormOp::AddRms => {
                        let (r, w) = (input(1, extent)?, input(2, cols)?);
                        let (mut h, mut y) = out.split_at_mut(n);
                        let op: CudarcNorm<'_, T> = Norm::add_rms(&r, &mut h, &w, m.eps);
                        gpu.norm_cudarc(op, &xv, &mut y, rows, opts, &stream)
                    }
                    NormOp::AddLayer => {
                        let (r, wb) = (input(1, extent)?, input(2, 2 * cols)?);
                        let (w, b) = (wb.slice(..cols), wb.slice(cols..));
                        let (mut h, mut y) = out.split_at_mut(n);
                        let op: CudarcNorm<'_, T> = Norm::add_layer(&r, &mut h, &w, &b, m.eps);
                        gpu.norm_cudarc(op, &xv, &mut y, rows, opts, &stream)
                    }
                    NormOp::Rms => {
                        let w = input(1, cols)?;
                        gpu.norm_cudarc(Norm::rms(&w, m.eps), &xv, &mut out, rows, opts, &stream)
                    }
                    NormOp::Layer => {
                        let (w, b) = (input(1, cols)?, input(2, cols)?);
                        let op: CudarcNorm<'_, T> = Norm::layer(&w, &b, m.eps);
                        gpu.norm_cudarc(op, &xv, &mut out, rows, opts, &stream)
                    }
                    NormOp::Softmax => gpu.norm_cudarc(Norm::Softmax, &xv, &mut out, rows, opts, &stream),
                    NormOp::LogSoftmax => gpu.norm_cudarc(Norm::LogSoftmax, &xv, &mut out, rows, opts, &stream),
                }
                .map_err(gpukern_err)?;
            }
            Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
        }
        Ok((by_dtype!(operands[0].0, run(self, inputs, x, &starts))?, shape))
    }
}

/// The gated activation's forward on candle's CUDA storage: the two windows
/// (no copy), a new output, one launch on candle's stream.
pub(crate) fn glu(
    op: gpukern::GluOp,
    dtype: candle_core::DType,
    s1: &CudaStorage,
    s2: &CudaStorage,
    ranges: &[Range<usize>; 2],
) -> Result<CudaStorage> {
    fn run<T: CudaDt>(
        op: gpukern::GluOp,
        s1: &CudaStorage,
        s2: &CudaStorage,
        r: &[Range<usize>; 2],
    ) -> Result<CudaStorage> {
        let dev = &s1.device;
        let stream = dev.cuda_stream();
        let n = r[0].len();
        // SAFETY: the kernel below writes all `n` elements before anything
        // reads them (queued on the same stream); on an error the buffer is
        // dropped unread.
        let mut out = unsafe { dev.alloc::<T>(n) }?;
        if n > 0 {
            let gpu = gpu_of(&stream)?;
            let (g, u) = (window::<T>(s1, &r[0])?, window::<T>(s2, &r[1])?);
            gpu.glu_cudarc(op, &g, &u, &mut out, &stream).map_err(gpukern_err)?;
        }
        Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
    }
    by_dtype!(dtype, run(op, s1, s2, ranges))
}

/// The `[gate | up]` rows' forward: the input's window from its first row to
/// its last (no copy), a new contiguous output, one launch.
pub(crate) fn glu_split(op: gpukern::GluOp, s: &CudaStorage, x: RowLayout, rows: Rows) -> Result<CudaStorage> {
    fn run<T: CudaDt>(op: gpukern::GluOp, s: &CudaStorage, x: RowLayout, rows: Rows) -> Result<CudaStorage> {
        let dev = &s.device;
        let stream = dev.cuda_stream();
        let n = rows.rows * rows.cols;
        // SAFETY: as in `glu`: every element is written before any read.
        let mut out = unsafe { dev.alloc::<T>(n) }?;
        if n > 0 {
            let gpu = gpu_of(&stream)?;
            let xv = window::<T>(s, &(x.start..x.start + x.extent()))?;
            gpu.glu_split_cudarc(op, &xv, &mut out, rows, &stream).map_err(gpukern_err)?;
        }
        Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
    }
    by_dtype!(s.dtype(), run(op, s, x, rows))
}
