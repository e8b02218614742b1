//! The gated activations in a graph: [`GraphBuilder::glu`] records `out =
//! act(gate) · up` on the same builder as the other operations: slots
//! registered once for the graph's life, the record-time borrow rule
//! (`capture::check_slots`), every check of [`Gpu::glu`] run at record time
//! (`Gpu::glu_prepare`, the call's own), and at capture the call's own launch
//! (`Gpu::glu_on`), its PDL twin where the builder's setting (or the call's
//! `Opts::pdl`) says so.
//!
//! ```no_run
//! # fn f(gpu: &gpukern::Gpu, x: &gpukern::DeviceVec<f32>, y: &mut gpukern::DeviceVec<f32>) -> gpukern::Result<()> {
//! use gpukern::{GluIn, GluOp, Opts, Rows};
//! let (rows, d) = (8, 1024);
//! let mut g = gpu.graph();
//! let (sx, sy) = (g.input(x)?, g.output(&mut *y)?); // x: rows of [gate | up], 2·d each
//! let split = GluIn::Split { x: sx, rows: Rows { rows, cols: d, x_pitch: 2 * d, y_pitch: d } };
//! g.glu(GluOp::Silu, split, sy, &Opts::auto())?;
//! g.build()?.launch(&gpu.stream()?)?;
//! # Ok(()) }
//! ```

use kernels_gpu::glu::GluOp;

use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::graph::capture::{check_slots, GraphBuilder, Slot};
use crate::launch::opts::{Opts, Plan};
use crate::memory::buffer::{Element, View, ViewMut};
use crate::ops::glu::{halves, GluIn, GluRows};

impl<'a> GraphBuilder<'a> {
    /// Records `out = act(gate) · up` (as [`Gpu::glu_opts`] on a stream, with
    /// `opts`; `opts.pdl` `None`: the builder's setting,
    /// [`GraphBuilder::set_pdl`]) from slots of this builder, `out`
    /// registered with [`GraphBuilder::output`], and returns the kernel it
    /// will run (the plain one: whether its PDL twin runs is decided at
    /// capture, by the setting).
    ///
    /// Errors, with nothing recorded: a slot of another builder; `out`
    /// registered as an input, or overlapping an input; and everything
    /// [`Gpu::glu`] refuses (lengths that differ, rows a slot cannot hold,
    /// pitches that overlap, an operand not aligned as an explicit pattern
    /// needs).
    pub fn glu<T: Element>(&mut self, op: GluOp, input: GluIn<Slot<T>>, out: Slot<T>, opts: &Opts) -> Result<Plan> {
        let (id, gpu) = self.id_and_gpu();
        let name = op.name();
        let (gate, up, shape) = match input {
            GluIn::Pair { gate, up } => {
                if gate.len() != up.len() || gate.len() != out.len() {
                    return Err(Error::LengthMismatch { kernel: name, a: gate.len(), b: up.len(), out: out.len() });
                }
                (gate, up, GluRows::flat(out.len()))
            }
            GluIn::Split { x, rows } => {
                let shape = GluRows::split(op, rows)?;
                let (at, len) = halves(op, x.len(), shape)?;
                (x.slice(..len)?, x.slice(at..at + len)?, shape)
            }
        };
        check_slots(id, name, &[gate.use_(), up.use_()], &[out.use_()])?;
        let spans = [(gate.addr(), gate.len()), (up.addr(), up.len()), (out.addr(), out.len())];
        // The call's checks, now; the PDL setting changes only which of two
        // kernels of the same parameters and limits runs, decided at capture.
        let (plan, _) = gpu.glu_prepare::<T>(op, spans, shape, opts, crate::Pdl::Off)?;
        let opts = *opts;
        self.push(Box::new(move |gpu: &Gpu, stream, pdl| {
            let shared = &gpu.shared;
            // SAFETY: every slot's range was registered from a view of this
            // Gpu (`shared`) borrowed for `'a`; only `build` runs this
            // closure, while the builder and so `'a` are live; the recorded
            // operations run one after another in the stream, and the graph's
            // launch orders the registered buffers against other streams, so
            // these views go untracked.
            let view = |s: Slot<T>| unsafe { View::<T>::from_checked(shared, s.addr(), s.len()) };
            // SAFETY: as above, for `out`, registered with `output` (borrowed
            // exclusively) and overlapping neither input (check_slots above);
            // made once per capture.
            let out = unsafe { ViewMut::<T>::from_checked(shared, out.addr(), out.len()) };
            let pdl = opts.pdl.unwrap_or(pdl);
            gpu.glu_on(op, view(gate), view(up), out, shape, &opts, pdl, stream).map(|_| ())
        }));
        Ok(plan)
    }
}
