//! CUDA graphs of library launches: [`Studies::add_graph`] and the graphs of
//! [`crate::AddManyPlan::graph`], replayed through [`AddGraph`].

use crate::device::gpu::{Gpu, Stream};
use crate::error::{Error, Result};
use crate::launch::variant::{LaunchShape, Variant};
use crate::memory::buffer::{Element, View, ViewMut};
use crate::raw;
use crate::studies::Studies;

/// A captured sequence of adds; see [`crate::Studies::add_graph`]. `Send + Sync`: its
/// replays are serialised by a mutex (CUDA graphs are not thread-safe).
pub struct AddGraph<'a> {
    raw: std::sync::Mutex<raw::RawGraph>,
    launches: usize,
    gpu: std::sync::Arc<crate::device::gpu::Shared>,
    /// The operands' allocations, ordered against other streams at each replay.
    uses: Vec<Option<raw::Use<'a>>>,
    /// The lock of the plan the graph replays, whose own launches write the
    /// same outputs (`AddManyPlan::graph`).
    plan: Option<&'a std::sync::Mutex<()>>,
    _operands: std::marker::PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for AddGraph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddGraph").field("launches", &self.launches).finish()
    }
}

impl<'a> AddGraph<'a> {
    /// `uses`: the allocations the graph reads and writes, for as long as
    /// `'a`; `plan`: the lock of the plan it replays, if any.
    pub(crate) fn new(
        raw: raw::RawGraph,
        launches: usize,
        gpu: &Gpu,
        uses: Vec<Option<raw::Use<'a>>>,
        plan: Option<&'a std::sync::Mutex<()>>,
    ) -> Self {
        let raw = std::sync::Mutex::new(raw);
        AddGraph { raw, launches, gpu: gpu.shared.clone(), uses, plan, _operands: std::marker::PhantomData }
    }

    /// Queues one replay of the whole graph on `stream`, after other streams'
    /// earlier work on its operands.
    ///
    /// Errors (nothing is queued): the stream belongs to another `Gpu` handle,
    /// or the device was reset since the capture.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        if !std::sync::Arc::ptr_eq(stream.shared(), &self.gpu) {
            return Err(Error::ForeignHandle { kernel: "add_graph", what: "stream" });
        }
        // Ordered under the lock: two replays on two streams write the same
        // buffers, and the second must see the first's stream.
        let _plan = self.plan.map(|p| p.lock().unwrap_or_else(|p| p.into_inner()));
        let mut g = self.raw.lock().unwrap_or_else(|p| p.into_inner());
        raw::graph_launch(&mut g, stream.raw(), &self.uses)
    }

    /// Adds per replay.
    pub fn launches(&self) -> usize {
        self.launches
    }
}

impl Studies<'_> {
    /// Captures `launches` back-to-back adds into a CUDA graph, launch `i` working
    /// on operand triple `ops[i % ops.len()]`. Replaying the graph costs one launch
    /// for all of them, which is how small adds stop being launch-bound. The graph
    /// borrows the operands, so they outlive it and cannot be read or freed while
    /// it exists.
    pub fn add_graph<'a, T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        mut ops: Vec<(View<'a, T>, View<'a, T>, ViewMut<'a, T>)>,
        launches: usize,
    ) -> Result<AddGraph<'a>> {
        if ops.is_empty() {
            return Err(Error::Shape {
                kernel: variant.name(),
                detail: "add_graph needs at least one operand triple".into(),
            });
        }
        for (a, b, out) in &ops {
            self.check_args(variant, cfg, a, b, out)?;
        }
        let k = ops.len();
        let uses =
            ops.iter().flat_map(|(a, b, out)| [a.use_as_input(), b.use_as_input(), out.use_as_output()]).collect();
        let raw = raw::capture(&self.shared.ctx, |stream| {
            (0..launches).zip((0..k).cycle()).try_for_each(|(_, i)| {
                let (a, b, out) = &mut ops[i];
                self.launch_add_raw(variant, cfg, a, b, out, stream)
            })
        })?;
        Ok(AddGraph::new(raw, launches, self, uses, None))
    }
}

impl crate::ops::many::AddManyPlan<'_> {
    /// Captures `launches` launches of the list into a CUDA graph.
    pub fn graph(&self, launches: usize) -> Result<AddGraph<'_>> {
        let func = self.gpu.shared.func(self.name)?;
        let raw = raw::capture(&self.gpu.shared.ctx, |s| {
            // SAFETY: the kernel is the one `self.name` names, resolved by that name from
            // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
            // table fixes its parameter list as this launch passes it).
            (0..launches).try_for_each(|_| unsafe { raw::launch_many_table(func, &self.table, s, false) })
        })?;
        Ok(AddGraph::new(raw, launches, &self.gpu, self.table.uses(), Some(self.table.serial())))
    }
}
