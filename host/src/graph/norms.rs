//! The norms in a graph: [`GraphBuilder::norm`] records a norm on the same
//! builder as the element-wise operations and user kernels: slots registered
//! once for the graph's life, the same record-time borrow rule
//! (`capture::check_slots`), every check of [`Gpu::norm`] run at record time
//! (`Gpu::norm_prepare`, the call's own), and at capture the call's own
//! launch (`Gpu::norm_on`), its PDL twin where the builder's setting (or the
//! call's `Opts::pdl`) says so, kept in the graph as a programmatic edge.
//!
//! ```no_run
//! # fn f(gpu: &gpukern::Gpu, x: &gpukern::DeviceVec<f32>, w: &gpukern::DeviceVec<f32>, h: &mut gpukern::DeviceVec<f32>, y: &mut gpukern::DeviceVec<f32>) -> gpukern::Result<()> {
//! use gpukern::{Norm, Opts, Rows};
//! let mut g = gpu.graph();
//! let (sx, sw, sh, sy) = (g.input(x)?, g.input(w)?, g.output(&mut *h)?, g.output(&mut *y)?);
//! g.unary(gpukern::UnaryOp::Silu, sx, sh)?;
//! g.norm(Norm::rms(sw, 1e-6), sh, sy, Rows::contiguous(8, 4096), &Opts::auto())?;
//! g.build()?.launch(&gpu.stream()?)?;
//! # Ok(()) }
//! ```

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::graph::capture::{check_slots, GraphBuilder, Slot};
use crate::launch::opts::Opts;
use crate::memory::buffer::{Element, View, ViewMut};
use crate::norm_plan::NormPlan;
use crate::norms::{Norm, Rows};
use crate::raw::NormSpans;

impl<'a> GraphBuilder<'a> {
    /// Records `op` (its operands [`Slot`]s of this builder, `h` registered
    /// with [`GraphBuilder::output`]) over the rows of `x` into `y` (as
    /// [`Gpu::norm`] on a stream, with `opts`; `opts.pdl` `None`: the
    /// builder's setting, [`GraphBuilder::set_pdl`]) and returns the plan it
    /// will run.
    ///
    /// Errors, with nothing recorded: a slot of another builder; `y` or `h`
    /// registered as an input, or overlapping another operand of the norm;
    /// and everything [`Gpu::norm`] refuses (rows or pitches a slot cannot
    /// hold, a pitch below `cols`, a weight or bias whose length is not
    /// `cols`, an operand not aligned to its element, a plan that cannot hold
    /// the rows, options a norm has no use for).
    pub fn norm<T: Element>(
        &mut self,
        op: Norm<Slot<T>>,
        x: Slot<T>,
        y: Slot<T>,
        rows: Rows,
        opts: &Opts,
    ) -> Result<NormPlan> {
        let p = op.into_parts();
        let name = p.op.name();
        let (id, gpu) = self.id_and_gpu();
        let inputs =
            [Some(x), p.residual, p.weight, p.bias].into_iter().flatten().map(|s| s.use_()).collect::<Vec<_>>();
        let outputs = [Some(y), p.h].into_iter().flatten().map(|s| s.use_()).collect::<Vec<_>>();
        check_slots(id, name, &inputs, &outputs)?;
        let span = |s: Slot<T>| (s.addr(), s.len());
        let spans = NormSpans {
            x: span(x),
            r: p.residual.map(span),
            w: p.weight.map(span),
            b: p.bias.map(span),
            y: span(y),
            h: p.h.map(span),
        };
        // The call's checks, now; the PDL setting changes only which of two
        // kernels of the same parameters and limits runs, decided at capture.
        let plan = gpu.norm_prepare::<T>(p.op, p.eps, &spans, rows, opts, crate::Pdl::Off)?.plan;
        // The plan chosen now runs at capture, whatever the device's state then.
        let opts = opts.norm_plan(plan);
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
            let opts = opts.pdl(opts.pdl.unwrap_or(pdl));
            gpu.norm_on(op.map(view, view_mut), view(x), view_mut(y), rows, &opts, stream).map(|_| ())
        }));
        Ok(plan)
    }
}
