//! Graphs of a user's kernels: [`GraphBuilder::custom_unary`] and
//! [`GraphBuilder::custom_binary`] record a module's `elementwise!`
//! operations, [`GraphBuilder::kernel`] a typed `#[kernel]` launch, on the
//! same builder as the library's operations: slots registered once for the
//! graph's life, the same record-time borrow rules (`capture::check_slots`),
//! and at capture the same launch as a call on a stream
//! (`Custom::run_auto`, `TypedKernel::queue`).
//!
//! ```no_run
//! # fn f(gpu: &gpukern::Gpu, m: &gpukern::Module, x: &gpukern::DeviceVec<f32>, y: &mut gpukern::DeviceVec<f32>) -> gpukern::Result<()> {
//! let silu = m.unary::<f32>("silu")?;
//! let mut g = gpu.graph();
//! let (sx, sy) = (g.input(x)?, g.output(&mut *y)?);
//! g.custom_unary(&silu, sx, sy, [0.0; 2])?;
//! g.build()?.launch(&gpu.stream()?)?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use gpukern_device::kernel::{InArg, KernelSig, OutArg, Scalar};

use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::graph::capture::{check_slots, GraphBuilder, Slot, SlotUse};
use crate::memory::buffer::Element;
use crate::raw;
use crate::user::custom::{CustomBinary, CustomUnary};
use crate::user::launch::Launch;
use crate::user::module::Custom;
use crate::user::typed::{sealed::Sealed, ArgSlots, HostElem, TypedKernel};

/// A typed launch's arguments as a graph records them (opaque): the slots
/// and, for the record-time checks, the slices read and written.
pub struct GraphSlots {
    slots: ArgSlots<'static>,
    inputs: Vec<SlotUse>,
    outputs: Vec<SlotUse>,
}

/// What one parameter marker takes in a graph (sealed): a [`Slot`] per
/// slice, the value of a scalar.
pub trait GraphArg: Sealed {
    /// The argument's type.
    type Slot: Copy;
    /// Its slots (address and length, or the value) and its slice's use.
    fn push(arg: Self::Slot, out: &mut GraphSlots);
}

impl GraphSlots {
    /// A slice parameter: its address and length, as a launch passes them.
    fn slice<T>(&mut self, s: Slot<T>, written: bool) {
        self.slots.slot(s.addr().to_ne_bytes());
        self.slots.slot((s.len() as u64).to_ne_bytes());
        if written { &mut self.outputs } else { &mut self.inputs }.push(s.use_());
    }
}

impl<T: HostElem> GraphArg for InArg<T> {
    type Slot = Slot<T::Host>;
    fn push(s: Slot<T::Host>, out: &mut GraphSlots) {
        out.slice(s, false)
    }
}

impl<T: HostElem> GraphArg for OutArg<T> {
    type Slot = Slot<T::Host>;
    fn push(s: Slot<T::Host>, out: &mut GraphSlots) {
        out.slice(s, true)
    }
}

impl<T: HostElem> GraphArg for Scalar<T> {
    type Slot = T::Host;
    fn push(v: T::Host, out: &mut GraphSlots) {
        out.slots.slot(raw::slot_of(&v));
    }
}

/// A kernel's parameter markers as a tuple of graph arguments (sealed).
pub trait GraphArgs: Sealed {
    /// The tuple [`GraphBuilder::kernel`] takes.
    type Slots;
    /// Every slot, in order.
    fn pack(args: Self::Slots, out: &mut GraphSlots);
}

macro_rules! graph_args {
    ($(($($p:ident $a:ident),*);)*) => {$(
        impl<$($p: GraphArg),*> GraphArgs for ($($p,)*) {
            type Slots = ($($p::Slot,)*);
            #[allow(unused_variables)]
            fn pack(args: Self::Slots, out: &mut GraphSlots) {
                let ($($a,)*) = args;
                $($p::push($a, out);)*
            }
        }
    )*};
}
crate::user::typed::param_tuples!(graph_args);

impl<'a> GraphBuilder<'a> {
    /// Records `out = op(a)` of a user module's operation (as
    /// [`CustomUnary::run`]). Errors as [`GraphBuilder::unary`], and when the
    /// module belongs to another `Gpu` handle.
    pub fn custom_unary<T: Element>(
        &mut self,
        op: &CustomUnary<T>,
        a: Slot<T>,
        out: Slot<T>,
        params: [f32; 2],
    ) -> Result<()> {
        self.custom(op.custom(), a, None, out, params)
    }

    /// Records `out = op(a, b)` of a user module's operation (as
    /// [`CustomBinary::run`]); errors as [`GraphBuilder::custom_unary`].
    pub fn custom_binary<T: Element>(
        &mut self,
        op: &CustomBinary<T>,
        a: Slot<T>,
        b: Slot<T>,
        out: Slot<T>,
        params: [f32; 2],
    ) -> Result<()> {
        self.custom(op.custom(), a, Some(b), out, params)
    }

    /// Records a launch of typed kernel `k` with `args`: a tuple in the
    /// kernel's parameter order, a [`Slot`] per slice (an input's slot may be
    /// either kind, an output's must be registered with
    /// [`GraphBuilder::output`]) and the value of each scalar (fixed in the
    /// graph). Errors (nothing is recorded): a slot of another builder, an
    /// output slot registered as an input, an output overlapping another
    /// slice of the launch, a kernel of another `Gpu` handle; the geometry
    /// and shared memory are checked at [`GraphBuilder::build`], as
    /// [`TypedKernel::launch`] checks them.
    pub fn kernel<K: KernelSig>(
        &mut self,
        k: &TypedKernel<K>,
        l: Launch,
        args: <K::Params as GraphArgs>::Slots,
    ) -> Result<()>
    where
        K::Params: GraphArgs,
    {
        let (id, gpu) = self.id_and_gpu();
        same_gpu(K::NAME, gpu, k.gpu())?;
        let mut out = GraphSlots { slots: ArgSlots::new(), inputs: Vec::new(), outputs: Vec::new() };
        <K::Params as GraphArgs>::pack(args, &mut out);
        check_slots(id, k.name(), &out.inputs, &out.outputs)?;
        self.note_user_kernel(k.name_id());
        self.keep_module(k.module.inner.clone());
        let (k, slots) = (k.clone(), out.slots);
        self.push(Box::new(move |_: &Gpu, stream, pdl| {
            let mut slots = slots.clone();
            // SAFETY: the slots were packed by K::Params' markers (GraphArgs,
            // in order); each slice is a slot of this builder (checked above),
            // registered from a view of this Gpu borrowed for `'a` (outputs
            // exclusively), which the graph does not outlive; outputs overlap
            // no other slice (check_slots); the recorded operations run one
            // after another, and the graph's launch orders the registered
            // buffers against other streams.
            unsafe { k.queue(l, &mut slots, stream, pdl) }
        }));
        Ok(())
    }

    /// A user module's element-wise operation, recorded as the library's are.
    fn custom<T: Element>(
        &mut self,
        op: &Custom,
        a: Slot<T>,
        b: Option<Slot<T>>,
        out: Slot<T>,
        params: [f32; 2],
    ) -> Result<()> {
        let (name, pack) = (op.name(), op.pack_name());
        same_gpu(name, self.id_and_gpu().1, op.gpu())?;
        let (module, op, ops) = (op.module().clone(), op.clone(), (a, b, out, Some((params[0], params[1]))));
        self.record_map(name, ops, move |_, ops, stream, pdl| op.run_auto(ops, stream, pdl))?;
        self.note_user_kernel(pack);
        self.keep_module(module);
        Ok(())
    }
}

/// A module's `Gpu` is the builder's (the same handle's context).
fn same_gpu(kernel: &'static str, builder: &Gpu, module: &Gpu) -> Result<()> {
    if !Arc::ptr_eq(&builder.shared, &module.shared) {
        return Err(Error::ForeignHandle { kernel, what: "module" });
    }
    Ok(())
}
