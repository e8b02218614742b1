//! Graphs of operations: [`Gpu::graph`] records element-wise operations on
//! registered buffers ([`GraphBuilder`]): the library's, a user module's
//! `elementwise!` operations and typed `#[kernel]` launches
//! (`capture_user.rs`), then captures them into one CUDA graph ([`Graph`])
//! that replays them with one launch.
//!
//! Operations refer to buffers through [`Slot`]s: each buffer is borrowed once,
//! for the graph's whole life (read-only with [`GraphBuilder::input`], writable
//! with [`GraphBuilder::output`]), so one operation's output can be the next
//! one's input, a chain, while nothing else can free, read or write the
//! memory the graph touches. With [`Pdl::Auto`] (the default) the graph keeps
//! the plan's programmatic dependent launches as programmatic edges: each
//! kernel's set-up overlaps its predecessor.

use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kernels_gpu::ops::{BinaryOp, OpKind, UnaryOp};

use crate::device::context::Shared;
use crate::device::gpu::{Gpu, Stream};
use crate::device::names::Name;
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::operands::Operands;
use crate::memory::buffer::{AsView, AsViewMut, Element, Pod, View, ViewMut};
use crate::raw;

/// A buffer (or a range of one) registered with one [`GraphBuilder`]; `Copy`,
/// usable only with that builder.
#[derive(Debug)]
pub struct Slot<T> {
    builder: u64,
    addr: u64,
    len: usize,
    writable: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Slot<T> {}
impl<T> Slot<T> {
    /// Elements in the slot.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the slot holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements `range` of this slot (same buffer, same access).
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<Slot<T>> {
        let (start, end) = crate::memory::buffer::bounds(range, self.len)?;
        Ok(Slot { addr: self.addr + (start * std::mem::size_of::<T>()) as u64, len: end - start, ..self })
    }

    /// What the record-time checks need of this slot ([`check_slots`]).
    pub(crate) fn use_(&self) -> SlotUse {
        let (start, bytes) = (self.addr, (self.len * std::mem::size_of::<T>()) as u64);
        SlotUse { builder: self.builder, start, end: start + bytes, writable: self.writable }
    }

    /// The device address of the slot's first element.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }
}

/// A slot as the record-time checks see it: its builder, its bytes, its access.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotUse {
    builder: u64,
    start: u64,
    end: u64,
    writable: bool,
}

impl SlotUse {
    /// True when output `o` (not empty) shares a byte with this slot.
    fn overlaps(&self, o: &SlotUse) -> bool {
        self.start < o.end && o.start < self.end && o.start < o.end
    }
}

/// An element-wise operation's slots `a`, `b` (two-input kinds) and `out`,
/// and its two scalars.
pub(crate) type MapSlots<T> = (Slot<T>, Option<Slot<T>>, Slot<T>, Option<(f32, f32)>);

/// What a graph holds for its life: a user module (unloaded on drop).
pub(crate) type Keep = Arc<dyn std::any::Any + Send + Sync>;

/// One recorded operation (queued on the capture stream): `'static`, so a
/// builder's drop uses no borrow; only [`GraphBuilder::build`] runs it.
pub(crate) type Recorded = Box<dyn Fn(&Gpu, raw::Queue<'static>, Pdl) -> Result<()>>;

/// Records operations for [`Gpu::graph`]; [`GraphBuilder::build`] captures them.
/// Buffers may be declared after the builder (dropping it uses no borrow):
///
/// ```no_run
/// # fn f(gpu: &gpukern::Gpu) -> gpukern::Result<()> {
/// let mut g = gpu.graph();
/// let (x, mut y) = (gpu.upload(&[1.0f32; 4])?, gpu.alloc::<f32>(4)?);
/// let (sx, sy) = (g.input(&x)?, g.output(&mut y)?);
/// g.unary(gpukern::UnaryOp::Neg, sx, sy)?;
/// # Ok(()) }
/// ```
pub struct GraphBuilder<'a> {
    gpu: Gpu,
    id: u64,
    pdl: Pdl,
    ops: Vec<Recorded>,
    /// The registered buffers' allocations: the graph orders them against
    /// other streams at each launch (the capture itself runs nothing).
    uses: Vec<Option<raw::Use<'a>>>,
    /// The last user kernel recorded: a replay notes it, so that a fault is
    /// reported naming it (`Shared::note_user_kernel`).
    user_kernel: Option<Name>,
    /// The user modules whose kernels the operations launch (`Module`'s
    /// inner `Arc`s): the graph keeps them loaded while it can be replayed.
    modules: Vec<Keep>,
    // The registered buffers stay borrowed for `'a`, as the graph is.
    _borrows: PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for GraphBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder").field("ops", &self.ops.len()).field("pdl", &self.pdl).finish()
    }
}

impl Gpu {
    /// Starts a graph of library operations (see [`GraphBuilder`]).
    pub fn graph<'a>(&self) -> GraphBuilder<'a> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (ops, uses, modules, user_kernel) = (Vec::new(), Vec::new(), Vec::new(), None);
        let (gpu, pdl, _borrows) = (self.clone(), Pdl::Auto, PhantomData);
        GraphBuilder { gpu, id, pdl, ops, uses, user_kernel, modules, _borrows }
    }
}

impl<'a> GraphBuilder<'a> {
    /// When the graph's launches use programmatic dependent launch (default
    /// [`Pdl::Auto`]: the plan's choice per launch, as on a stream).
    pub fn set_pdl(&mut self, pdl: Pdl) {
        self.pdl = pdl
    }

    /// Registers a buffer the graph only reads, borrowed for the graph's life:
    /// of an [`Element`] type for the element-wise operations, of any
    /// [`Pod`] type a typed kernel takes (`u32`, `i8`, …). Errors when it
    /// belongs to another `Gpu` handle.
    pub fn input<T: Pod>(&mut self, v: impl AsView<'a, T>) -> Result<Slot<T>> {
        let v = v.into_view();
        self.gpu.check_buffers_owned("graph", [v.owner()])?;
        self.uses.push(v.use_as_input());
        Ok(Slot { builder: self.id, addr: v.addr(), len: v.len(), writable: false, _t: PhantomData })
    }

    /// Registers a buffer the graph writes (and may read), borrowed
    /// exclusively for the graph's life (any [`Pod`] type, as [`Self::input`]).
    pub fn output<T: Pod>(&mut self, v: impl AsViewMut<'a, T>) -> Result<Slot<T>> {
        let v = v.into_view_mut();
        self.gpu.check_buffers_owned("graph", [v.owner()])?;
        self.uses.push(v.use_as_output());
        Ok(Slot { builder: self.id, addr: v.addr(), len: v.len(), writable: true, _t: PhantomData })
    }

    /// Records `out = op(a, b)` (as [`Gpu::binary`]).
    pub fn binary<T: Element>(&mut self, op: BinaryOp, a: Slot<T>, b: Slot<T>, out: Slot<T>) -> Result<()> {
        self.library(OpKind::Binary(op), a, Some(b), out, None)
    }

    /// Records `out = op(a)` (as [`Gpu::unary`]).
    pub fn unary<T: Element>(&mut self, op: UnaryOp, a: Slot<T>, out: Slot<T>) -> Result<()> {
        self.library(OpKind::Unary(op), a, None, out, None)
    }

    /// Records `out = alpha·a + beta·b` (as [`Gpu::axpby`]).
    pub fn axpby<T: Element>(&mut self, alpha: f32, a: Slot<T>, beta: f32, b: Slot<T>, out: Slot<T>) -> Result<()> {
        self.library(OpKind::Axpby, a, Some(b), out, Some((alpha, beta)))
    }

    /// Operations recorded so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// A library operation, launched at capture as [`Gpu::binary`]'s
    /// automatic choice.
    fn library<T: Element>(
        &mut self,
        kind: OpKind,
        a: Slot<T>,
        b: Option<Slot<T>>,
        out: Slot<T>,
        scales: Option<(f32, f32)>,
    ) -> Result<()> {
        let ops = (a, b, out, scales);
        self.record_map(kind.name(), ops, move |gpu, ops, queue, pdl| gpu.map_auto(kind, ops, queue, pdl))
    }

    /// Records an element-wise operation `name` (the library's or a user
    /// module's) after its checks ([`check_record`], each at record time, so
    /// a bad one is refused before anything is captured); at capture `run`
    /// launches it on views of the slots.
    pub(crate) fn record_map<T: Element>(
        &mut self,
        name: &'static str,
        (a, b, out, scales): MapSlots<T>,
        run: impl for<'v> Fn(&Gpu, Operands<'v, T>, raw::Queue<'static>, Pdl) -> Result<()> + 'static,
    ) -> Result<()> {
        check_record(self.id, name, a, b, out)?;
        self.ops.push(Box::new(move |gpu: &Gpu, stream, pdl| {
            let shared = &gpu.shared;
            // SAFETY: each slot's range was registered from a view of `gpu`
            // borrowed (the output exclusively) for `'a`, live while `build`
            // (the only caller) runs; the output overlaps neither input, the
            // recorded operations run one after another in the stream, and
            // the graph's launch orders the registered buffers (`uses`)
            // against other streams, so these views go untracked.
            let ops = unsafe {
                Operands::<T> {
                    a: View::from_checked(shared, a.addr, a.len),
                    b: b.map(|b| View::from_checked(shared, b.addr, b.len)),
                    out: ViewMut::from_checked(shared, out.addr, out.len),
                    scales,
                }
            };
            run(gpu, ops, stream, pdl)
        }));
        Ok(())
    }

    /// Records an operation whose slots [`check_slots`] passed (`capture_user.rs`'s
    /// typed kernels).
    pub(crate) fn push(&mut self, op: Recorded) {
        self.ops.push(op)
    }

    /// Notes that the last operation recorded runs user kernel `name`.
    pub(crate) fn note_user_kernel(&mut self, name: Name) {
        self.user_kernel = Some(name);
    }

    /// Keeps `module` loaded for the graph's life (a recorded operation
    /// launches one of its kernels).
    pub(crate) fn keep_module(&mut self, module: Keep) {
        self.modules.push(module);
    }

    /// This builder's id (its slots carry it) and its `Gpu`.
    pub(crate) fn id_and_gpu(&self) -> (u64, &Gpu) {
        (self.id, &self.gpu)
    }

    /// Captures the recorded operations, in order, into one graph. Errors when
    /// nothing was recorded, or as the operations' own launches would.
    pub fn build(self) -> Result<Graph<'a>> {
        if self.ops.is_empty() {
            return Err(Error::Shape { kernel: "graph", detail: "a graph needs at least one operation".into() });
        }
        let (gpu, pdl) = (&self.gpu, self.pdl);
        let raw = raw::capture(&gpu.shared.ctx, |stream| self.ops.iter().try_for_each(|op| op(gpu, stream, pdl)))?;
        let launches = self.ops.len();
        let uses = self.uses;
        let (gpu, user_kernel, modules) = (gpu.shared.clone(), self.user_kernel, self.modules);
        Ok(Graph { raw: Mutex::new(raw), launches, gpu, uses, user_kernel, _modules: modules, _borrows: PhantomData })
    }
}

/// The record-time checks of one element-wise operation `name` of builder
/// `id` (what [`GraphBuilder::record_map`] refuses before anything is
/// captured): [`check_slots`], and equal lengths. Apart so the fuzz target
/// (`crate::fuzzing`) reaches it.
pub(crate) fn check_record<T>(id: u64, name: &'static str, a: Slot<T>, b: Option<Slot<T>>, out: Slot<T>) -> Result<()> {
    let inputs = [Some(a.use_()), b.map(|b| b.use_())];
    check_slots(id, name, inputs.iter().flatten(), &[out.use_()])?;
    match b {
        Some(b) if a.len != out.len || b.len != out.len => {
            Err(Error::LengthMismatch { kernel: name, a: a.len, b: b.len, out: out.len })
        }
        None if a.len != out.len => Err(Error::UnaryLengthMismatch { kernel: name, a: a.len, out: out.len }),
        _ => Ok(()),
    }
}

/// The borrow rules of one recorded operation `name` of builder `id`, for
/// every kind of operation (the library's, a user module's, a typed
/// kernel's): each slot is this builder's, each output was registered
/// writable, and no output overlaps any other slice of the operation (an
/// input, or another output), as the borrow checker enforces for views.
pub(crate) fn check_slots<'s>(
    id: u64,
    name: &'static str,
    inputs: impl IntoIterator<Item = &'s SlotUse> + Clone,
    outputs: &'s [SlotUse],
) -> Result<()> {
    if inputs.clone().into_iter().chain(outputs).any(|s| s.builder != id) {
        return Err(Error::ForeignSlot { kernel: name });
    }
    if outputs.iter().any(|o| !o.writable) {
        let detail = "the output slot is an input (register it with `output`)";
        return Err(Error::WrongOperands { kernel: name, detail });
    }
    for (i, o) in outputs.iter().enumerate() {
        let others = inputs.clone().into_iter().chain(outputs.iter().enumerate().filter(|&(j, _)| j != i).map(|p| p.1));
        if others.into_iter().any(|s| s.overlaps(o)) {
            return Err(Error::WrongOperands { kernel: name, detail: "an output overlaps another operand" });
        }
    }
    Ok(())
}

/// A slot from its parts, for the fuzz target only.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_slot<T>(builder: u64, addr: u64, len: usize, writable: bool) -> Slot<T> {
    Slot { builder, addr, len, writable, _t: PhantomData }
}

/// A captured graph of library operations; see [`Gpu::graph`]. `Send + Sync`:
/// replays are serialised by a mutex (CUDA graphs are not thread-safe).
///
/// ```no_run
/// # fn f(gpu: &gpukern::Gpu, x: &gpukern::DeviceVec<f32>, y: &mut gpukern::DeviceVec<f32>) -> gpukern::Result<()> {
/// let mut g = gpu.graph();
/// let (sx, sy) = (g.input(x)?, g.output(&mut *y)?);
/// g.unary(gpukern::UnaryOp::Neg, sx, sy)?;
/// let graph = g.build()?;
/// graph.launch(&gpu.stream()?)?;
/// drop(graph);
/// let _ = y.to_vec()?; // the graph is gone: `y` is free again
/// # Ok(()) }
/// ```
///
/// While the graph lives, its buffers cannot be read, written or freed:
///
/// ```compile_fail
/// # fn f(gpu: &gpukern::Gpu, x: &gpukern::DeviceVec<f32>, y: &mut gpukern::DeviceVec<f32>) -> gpukern::Result<()> {
/// let mut g = gpu.graph();
/// let (sx, sy) = (g.input(x)?, g.output(&mut *y)?);
/// g.unary(gpukern::UnaryOp::Neg, sx, sy)?;
/// let graph = g.build()?;
/// let _ = y.to_vec()?; // error: `*y` is still borrowed by the graph
/// graph.launch(&gpu.stream()?)?;
/// # Ok(()) }
/// ```
pub struct Graph<'a> {
    // Dropped first: the executable graph goes before the modules it runs.
    raw: Mutex<raw::RawGraph>,
    launches: usize,
    gpu: Arc<Shared>,
    /// The registered buffers' allocations (see [`GraphBuilder`]).
    uses: Vec<Option<raw::Use<'a>>>,
    /// See [`GraphBuilder`]'s fields.
    user_kernel: Option<Name>,
    /// Kept loaded while the graph lives: a replay runs their kernels.
    _modules: Vec<Keep>,
    _borrows: PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("launches", &self.launches).finish()
    }
}

impl Graph<'_> {
    /// Queues one replay of the whole graph on `stream`, after other streams'
    /// earlier work on its buffers. Errors (nothing is queued) when the
    /// stream belongs to another `Gpu` handle, or the device was reset since
    /// the capture.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        if !Arc::ptr_eq(stream.shared(), &self.gpu) {
            return Err(Error::ForeignHandle { kernel: "graph", what: "stream" });
        }
        // Ordered under the lock: replays on two streams write the same buffers.
        let mut g = self.raw.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(name) = self.user_kernel {
            self.gpu.note_user_kernel(name);
        }
        raw::graph_launch(&mut g, stream.raw(), &self.uses)
    }

    /// Operations per replay.
    pub fn launches(&self) -> usize {
        self.launches
    }
}
