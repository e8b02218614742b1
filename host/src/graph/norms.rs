//! The norms in a graph: [`GraphBuilder::norm`] records a norm on the same
//! builder as the element-wise operations and user kernels: slots registered
//! once for the graph's life, the same record-time borrow rule
//! (`capture::check_slots`), every check of [`Gpu::norm`] run at record time
//! (`Gpu::norm_prepare`, the call's own), and at capture the call's own
//! launch (`Gpu::norm_on`), its PDL twin where the builder's setting (or the
//! call's `NormOptions::pdl`) says so, kept in the graph as a programmatic
//! edge.
//!
//! ```no_run
//! # fn f(gpu: &gpukern::Gpu, x: &gpukern::DeviceVec<f32>, w: &gpukern::DeviceVec<f32>, h: &mut gpukern::DeviceVec<f32>, y: &mut gpukern::DeviceVec<f32>) -> gpukern::Result<()> {
//! use gpukern::{NormOptions, NormSlots, Rows};
//! let mut g = gpu.graph();
//! let (sx, sw, sh, sy) = (g.input(x)?, g.input(w)?, g.output(&mut *h)?, g.output(&mut *y)?);
//! g.unary(gpukern::UnaryOp::Silu, sx, sh)?;
//! g.norm(NormSlots::Rms { weight: sw, eps: 1e-6 }, sh, sy, Rows::contiguous(8, 4096), NormOptions::default())?;
//! g.build()?.launch(&gpu.stream()?)?;
//! # Ok(()) }
//! ```

use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::graph::capture::{check_slots, GraphBuilder, Slot};
use crate::memory::buffer::{Element, View, ViewMut};
use crate::norms::{Norm, NormOp, NormOptions, NormPlan, Rows};
use crate::raw::NormSpans;

/// A norm's operation and its operands beside `x` and `y` in a graph: [`Norm`]
/// with [`Slot`]s of the builder (`h` registered with
/// [`GraphBuilder::output`]).
#[derive(Clone, Copy, Debug)]
pub enum NormSlots<T> {
    /// [`Norm::Rms`].
    Rms {
        /// `cols` elements.
        weight: Slot<T>,
        /// Added to the mean square.
        eps: f32,
    },
    /// [`Norm::AddRms`].
    AddRms {
        /// Added to `x`, with the input layout.
        residual: Slot<T>,
        /// Receives `x + residual`, with the output layout.
        h: Slot<T>,
        /// `cols` elements.
        weight: Slot<T>,
        /// Added to the mean square.
        eps: f32,
    },
    /// [`Norm::Layer`].
    Layer {
        /// `cols` elements.
        weight: Slot<T>,
        /// `cols` elements.
        bias: Slot<T>,
        /// Added to the variance.
        eps: f32,
    },
    /// [`Norm::Softmax`].
    Softmax,
    /// [`Norm::LogSoftmax`].
    LogSoftmax,
}

/// The operand slots of one norm, by role.
#[derive(Clone, Copy)]
struct Parts<T> {
    op: NormOp,
    x: Slot<T>,
    r: Option<Slot<T>>,
    w: Option<Slot<T>>,
    b: Option<Slot<T>>,
    y: Slot<T>,
    h: Option<Slot<T>>,
    eps: f32,
}

impl<T> NormSlots<T> {
    fn parts(self, x: Slot<T>, y: Slot<T>) -> Parts<T> {
        let p = Parts { op: NormOp::Softmax, x, r: None, w: None, b: None, y, h: None, eps: 0.0 };
        match self {
            NormSlots::Rms { weight, eps } => Parts { op: NormOp::Rms, w: Some(weight), eps, ..p },
            NormSlots::AddRms { residual, h, weight, eps } => {
                Parts { op: NormOp::AddRms, r: Some(residual), h: Some(h), w: Some(weight), eps, ..p }
            }
            NormSlots::Layer { weight, bias, eps } => {
                Parts { op: NormOp::Layer, w: Some(weight), b: Some(bias), eps, ..p }
            }
            NormSlots::Softmax => p,
            NormSlots::LogSoftmax => Parts { op: NormOp::LogSoftmax, ..p },
        }
    }
}

impl<'a> GraphBuilder<'a> {
    /// Records `op` over the rows of `x` into `y` (as [`Gpu::norm`] on a
    /// stream, with `opts`; `opts.pdl` `None`: the builder's setting,
    /// [`GraphBuilder::set_pdl`]) and returns the plan it will run.
    ///
    /// Errors, with nothing recorded: a slot of another builder; `y` or `h`
    /// registered as an input, or overlapping another operand of the norm;
    /// and everything [`Gpu::norm`] refuses (rows or pitches a slot cannot
    /// hold, a pitch below `cols`, a weight or bias whose length is not
    /// `cols`, an operand not aligned to its element, a plan that cannot hold
    /// the rows).
    pub fn norm<T: Element>(
        &mut self,
        op: NormSlots<T>,
        x: Slot<T>,
        y: Slot<T>,
        rows: Rows,
        opts: NormOptions,
    ) -> Result<NormPlan> {
        let p = op.parts(x, y);
        let name = p.op.name();
        let (id, gpu) = self.id_and_gpu();
        let inputs = [Some(p.x), p.r, p.w, p.b].into_iter().flatten().map(|s| s.use_()).collect::<Vec<_>>();
        let outputs = [Some(p.y), p.h].into_iter().flatten().map(|s| s.use_()).collect::<Vec<_>>();
        check_slots(id, name, &inputs, &outputs)?;
        let span = |s: Slot<T>| (s.addr(), s.len());
        let spans = NormSpans {
            x: span(p.x),
            r: p.r.map(span),
            w: p.w.map(span),
            b: p.b.map(span),
            y: span(p.y),
            h: p.h.map(span),
        };
        // The call's checks, now; the PDL setting changes only which of two
        // kernels of the same parameters and limits runs, decided at capture.
        let plan = gpu.norm_prepare::<T>(p.op, p.eps, &spans, rows, opts, crate::Pdl::Off)?.plan;
        // The plan chosen now runs at capture, whatever the device's state then.
        let opts = NormOptions { plan: Some(plan), ..opts };
        self.push(Box::new(move |gpu: &Gpu, stream, pdl| {
            let shared = &gpu.shared;
            // SAFETY: every slot's range was registered from a view of this
            // Gpu (`shared`) borrowed for `'a`; only `build` runs this
            // closure, while the builder and so `'a` are live; the recorded operations run one after another in the
            // stream, and the graph's launch orders the registered buffers
            // against other streams, so these views go untracked.
            let view = |s: Slot<T>| unsafe { View::<T>::from_checked(shared, s.addr(), s.len()) };
            // SAFETY: as above, for `y` and `h`, which were registered with
            // `output` (borrowed exclusively) and overlap no other operand of
            // this norm (check_slots above); each is made once per capture.
            let view_mut = |s: Slot<T>| unsafe { ViewMut::<T>::from_checked(shared, s.addr(), s.len()) };
            let op = match (p.op, p.r, p.h, p.w, p.b) {
                (NormOp::Rms, _, _, Some(w), _) => Norm::Rms { weight: view(w), eps: p.eps },
                (NormOp::AddRms, Some(r), Some(h), Some(w), _) => {
                    Norm::AddRms { residual: view(r), h: view_mut(h), weight: view(w), eps: p.eps }
                }
                (NormOp::Layer, _, _, Some(w), Some(b)) => Norm::Layer { weight: view(w), bias: view(b), eps: p.eps },
                (NormOp::Softmax, ..) => Norm::Softmax,
                (NormOp::LogSoftmax, ..) => Norm::LogSoftmax,
                _ => {
                    return Err(Error::WrongOperands {
                        kernel: name,
                        detail: "an operand the operation reads is missing",
                    })
                }
            };
            let opts = NormOptions { pdl: Some(opts.pdl.unwrap_or(pdl)), ..opts };
            gpu.norm_on(op, view(p.x), view_mut(p.y), rows, opts, stream).map(|_| ())
        }));
        Ok(plan)
    }
}
