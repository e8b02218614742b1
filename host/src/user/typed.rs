//! Typed kernels: `Module::kernel::<K>()` for a kernel declared with
//! `#[gpukern_macros::kernel]`, whose signature type `K` (in the kernel
//! crate, on the host too) fixes the launch's argument types at compile time.
//!
//! At load the module's manifest `gpukern_kernel_<name>` and the PTX
//! `.entry` parameter list must match `K` (else an error, before anything
//! runs). A launch borrows inputs as [`View`]s and outputs as [`ViewMut`]s (so
//! an output cannot alias an input: the borrow checker refuses it), passes
//! each slice's length beside its pointer, checks the geometry against the
//! device and the kernel, the dynamic shared memory against what a block may
//! have, and that every buffer and the stream belong to the module's `Gpu`.
//!
//! An output cannot alias an input: this does not compile.
//!
//! ```compile_fail,E0502
//! use gpukern::sig::{input, output, InArg, KernelSig, OutArg, Param};
//! use gpukern::{DeviceVec, Launch, Stream, TypedKernel};
//! # enum Scale {}
//! # impl KernelSig for Scale {
//! #     const NAME: &'static str = "scale";
//! #     const PARAMS: &'static [Param] = &[input::<f32>(), output::<f32>()];
//! #     type Params = (InArg<f32>, OutArg<f32>);
//! # }
//! fn run(k: &TypedKernel<Scale>, buf: &mut DeviceVec<f32>, l: Launch, s: &Stream) {
//!     k.launch(l, (buf.view(), buf.view_mut()), s).unwrap();
//! }
//! ```

use std::marker::PhantomData;
use std::sync::Arc;

use gpukern_device::kernel::{Bf16Bits, F16Bits, InArg, KernelElem, KernelSig, OutArg, Param, Scalar};

use crate::device::context::Shared;
use crate::device::gpu::{KernelResources, Stream};
use crate::device::names::{intern, Name};
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::memory::buffer::{Pod, View, ViewMut};
use crate::raw::{self, Kernel};
use crate::user::launch::{check_geometry, Launch};
use crate::user::module::Module;

pub(crate) mod sealed {
    /// Only this crate implements the launch traits: a wrong slot layout
    /// would reach the kernel unchecked.
    pub trait Sealed {}
}

/// The most parameters a typed kernel's tuple has ([`HostArgs`] is
/// implemented up to 8), so the most slots (two per slice) and owners.
const MAX_PARAMS: usize = 8;

/// The slots of one launch and the owners of its buffers (opaque). Fixed
/// arrays: a launch allocates nothing.
#[derive(Clone)]
pub struct ArgSlots<'a> {
    slots: [[u8; 8]; 2 * MAX_PARAMS],
    len: usize,
    owners: [Option<&'a Arc<Shared>>; MAX_PARAMS],
    buffers: usize,
    /// The slices' allocations, ordered across streams at the launch.
    uses: [Option<raw::Use<'a>>; MAX_PARAMS],
}

impl<'a> ArgSlots<'a> {
    /// No slot yet.
    pub(crate) fn new() -> ArgSlots<'a> {
        let (slots, owners, uses) = ([[0; 8]; 2 * MAX_PARAMS], [None; MAX_PARAMS], [None; MAX_PARAMS]);
        ArgSlots { slots, len: 0, owners, buffers: 0, uses }
    }

    /// Appends one parameter's 8-byte slot.
    pub(crate) fn slot(&mut self, s: [u8; 8]) {
        // At most 2 × MAX_PARAMS by the tuples' arity; `get_mut` keeps it total.
        if let Some(x) = self.slots.get_mut(self.len) {
            *x = s;
        }
        self.len += 1;
    }
    fn owner(&mut self, o: &'a Arc<Shared>) {
        if let Some(x) = self.owners.get_mut(self.buffers) {
            *x = Some(o);
        }
        self.buffers += 1;
    }
    fn use_(&mut self, u: Option<raw::Use<'a>>) {
        // One per buffer, in step with `owner`.
        if let Some(x) = self.uses.get_mut(self.buffers.saturating_sub(1)) {
            *x = u;
        }
    }
}

/// A device element type and the host type that holds it (sealed: the host
/// type must have the device type's layout).
pub trait HostElem: KernelElem + sealed::Sealed {
    /// The host's element type (`half::bf16` for [`Bf16Bits`], …).
    type Host: Pod;
}
macro_rules! host_elems {
    ($($d:ty => $h:ty),*) => {$(
        impl sealed::Sealed for $d {}
        impl HostElem for $d { type Host = $h; }
        const _: () = assert!(std::mem::size_of::<$d>() == std::mem::size_of::<$h>());
    )*};
}
// Every element type `#[kernel]` accepts (`gpukern_device::kernel::KernelElem`).
host_elems!(f32 => f32, f64 => f64, u32 => u32, i32 => i32, u64 => u64, i64 => i64, u16 => u16, i16 => i16,
    u8 => u8, i8 => i8, Bf16Bits => half::bf16, F16Bits => half::f16);

/// What one parameter marker takes at launch (sealed).
pub trait HostArg<'a>: sealed::Sealed {
    /// The argument's type.
    type Arg;
    /// Its slots (pointer and length, or the value) and the buffer's owner.
    fn push(arg: Self::Arg, out: &mut ArgSlots<'a>);
}

impl<T> sealed::Sealed for InArg<T> {}
impl<T> sealed::Sealed for OutArg<T> {}
impl<T> sealed::Sealed for Scalar<T> {}

/// The manifest entry a parameter marker stands for (sealed): what the load
/// checks, derived from the same markers the launch packs its slots by.
pub trait ParamOf: sealed::Sealed {
    /// The parameter.
    const PARAM: Param;
}
impl<T: HostElem> ParamOf for InArg<T> {
    const PARAM: Param = gpukern_device::kernel::input::<T>();
}
impl<T: HostElem> ParamOf for OutArg<T> {
    const PARAM: Param = gpukern_device::kernel::output::<T>();
}
impl<T: HostElem> ParamOf for Scalar<T> {
    const PARAM: Param = gpukern_device::kernel::scalar::<T>();
}

/// The parameters of a tuple of markers, in order (sealed).
pub trait ParamList: sealed::Sealed {
    /// Every parameter.
    fn params() -> Vec<Param>;
}

impl<'a, T: HostElem> HostArg<'a> for InArg<T> {
    type Arg = View<'a, T::Host>;
    fn push(v: View<'a, T::Host>, out: &mut ArgSlots<'a>) {
        out.slot(v.addr().to_ne_bytes());
        out.slot((v.len() as u64).to_ne_bytes());
        out.owner(v.owner());
        out.use_(v.use_as_input());
    }
}

impl<'a, T: HostElem> HostArg<'a> for OutArg<T> {
    type Arg = ViewMut<'a, T::Host>;
    fn push(v: ViewMut<'a, T::Host>, out: &mut ArgSlots<'a>) {
        out.slot(v.addr().to_ne_bytes());
        out.slot((v.len() as u64).to_ne_bytes());
        out.owner(v.owner());
        out.use_(v.use_as_output());
    }
}

impl<'a, T: HostElem> HostArg<'a> for Scalar<T> {
    type Arg = T::Host;
    fn push(v: T::Host, out: &mut ArgSlots<'a>) {
        out.slot(raw::slot_of(&v));
    }
}

/// A kernel's parameter markers as a tuple of launch arguments (sealed).
pub trait HostArgs<'a>: sealed::Sealed {
    /// The tuple the launch takes.
    type Args;
    /// Every slot, in order, and the owners of the buffers.
    fn slots(args: Self::Args, out: &mut ArgSlots<'a>);
}

macro_rules! host_args {
    ($(($($p:ident $a:ident),*);)*) => {$(
        impl<$($p),*> sealed::Sealed for ($($p,)*) {}
        impl<$($p: ParamOf),*> ParamList for ($($p,)*) {
            fn params() -> Vec<Param> {
                vec![$($p::PARAM),*]
            }
        }
        impl<'a, $($p: HostArg<'a>),*> HostArgs<'a> for ($($p,)*) {
            type Args = ($($p::Arg,)*);
            #[allow(unused_variables)]
            fn slots(args: Self::Args, out: &mut ArgSlots<'a>) {
                let ($($a,)*) = args;
                $($p::push($a, out);)*
            }
        }
    )*};
}
/// Invokes macro `$m` with every tuple arity of a typed kernel, 0 to [`MAX_PARAMS`], as `(A a, B b, …)`
/// lists (the launch's `HostArgs` here, a graph's `GraphArgs` in `capture_user.rs`).
macro_rules! param_tuples {
    ($m:ident) => {
        $m! {
            ();
            (A a);
            (A a, B b);
            (A a, B b, C c);
            (A a, B b, C c, D d);
            (A a, B b, C c, D d, E e);
            (A a, B b, C c, D d, E e, F f);
            (A a, B b, C c, D d, E e, F f, G g);
            (A a, B b, C c, D d, E e, F f, G g, H h);
        }
    };
}
pub(crate) use param_tuples;
param_tuples!(host_args);

/// A typed kernel of a [`Module`], resolved and checked once.
///
/// ```no_run
/// # use gpukern::sig::{input, output, InArg, KernelSig, OutArg, Param};
/// # enum Scale {} impl KernelSig for Scale {
/// #     const NAME: &'static str = "scale";
/// #     const PARAMS: &'static [Param] = &[input::<f32>(), output::<f32>()];
/// #     type Params = (InArg<f32>, OutArg<f32>);
/// # }
/// # use gpukern::{DeviceVec as D, Module, Stream}; fn f(m: &Module, x: &D<f32>, y: &mut D<f32>, s: &Stream) -> gpukern::Result<()> {
/// let k = m.kernel::<Scale>()?; // `Scale`: the signature type `#[kernel]` made
/// let l = gpukern::Launch { grid: (x.len().div_ceil(256) as u32, 1, 1), block: (256, 1, 1), shared_bytes: 0 };
/// k.launch(l, (x.view(), y.view_mut()), s)?; // the argument types follow `Scale`
/// # Ok(()) }
/// ```
pub struct TypedKernel<K: KernelSig> {
    pub(crate) module: Module,
    name: Name,
    kernel: Arc<Kernel>,
    /// A `#[kernel(pdl)]` built for sm_90, on an sm_90 device, whose PTX waits
    /// first ([`crate::device::pdl::waits_first`]): launched with the PDL attribute
    /// where the stream's setting says it pays.
    pdl: bool,
    _k: PhantomData<fn() -> K>,
}

impl<K: KernelSig> Clone for TypedKernel<K> {
    fn clone(&self) -> Self {
        TypedKernel { module: self.module.clone(), kernel: self.kernel.clone(), _k: PhantomData, ..*self }
    }
}

impl<K: KernelSig> std::fmt::Debug for TypedKernel<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedKernel").field("name", &self.name.text).finish()
    }
}

impl Module {
    /// The typed kernel `K` of this module, after checking that the module's
    /// manifest and PTX entry say what `K` says. Errors: the kernel or its
    /// manifest is missing, or either disagrees with `K` (a kernel crate
    /// rebuilt with another signature, a handle of another crate).
    pub fn kernel<K: KernelSig>(&self) -> Result<TypedKernel<K>>
    where
        K::Params: ParamList,
    {
        let name = K::NAME;
        let bad = |detail: String| Error::CustomOp { kernel: name.to_string(), detail };
        let _live = self.inner.gpu.shared.bind()?;
        let manifest = format!("gpukern_kernel_{name}");
        let Some(bytes) = self.inner.raw.read_global(&manifest)? else {
            return Err(bad(format!("the module has no manifest `{manifest}`; declare the kernel with #[kernel]")));
        };
        // From the markers the launch packs by, not from K::PARAMS: a
        // hand-written KernelSig whose two lists disagree is caught here.
        let params = K::Params::params();
        if params != K::PARAMS {
            return Err(bad("the handle's PARAMS and Params disagree".into()));
        }
        let entry = crate::ptx_text::entry_params(&self.inner.ptx, name);
        crate::user::signature::check_signature(&bytes, &params, K::PARAM_NAMES, entry).map_err(bad)?;
        let f = self.inner.raw.function(name).map_err(|source| Error::MissingKernel { kernel: name, source })?;
        let kernel = Kernel::new(f, &self.inner.gpu.shared.ctx);
        // Dynamic shared memory up to what a block may have, less the static part.
        let r = kernel.resources()?;
        let optin = self.inner.gpu.info().shared_per_block_optin;
        kernel.set_max_dynamic_shared(optin.saturating_sub(r.shared_bytes))?;
        // `#[kernel(pdl)]` in an sm_90 build leaves a marker; the entry must
        // also wait first in the PTX, or the marker is refused.
        let pdl =
            self.inner.gpu.info().has_sm90() && self.inner.raw.read_global(&format!("gpukern_pdl_{name}"))?.is_some();
        if pdl && !crate::device::pdl::waits_first(&self.inner.ptx, name) {
            return Err(bad("marked #[kernel(pdl)], but its entry does not start with griddepcontrol.wait".into()));
        }
        Ok(TypedKernel { module: self.clone(), name: intern(name), kernel: Arc::new(kernel), pdl, _k: PhantomData })
    }
}

impl<K: KernelSig> TypedKernel<K> {
    /// Registers, static shared memory, local memory and the largest block,
    /// from the driver.
    pub fn resources(&self) -> Result<KernelResources> {
        self.kernel.resources()
    }

    /// The entry point's name.
    pub fn name(&self) -> &'static str {
        self.name.text
    }

    /// True when launches may use programmatic dependent launch: the kernel
    /// is `#[kernel(pdl)]`, the module an sm_90 build, the device sm_90.
    pub fn has_pdl(&self) -> bool {
        self.pdl
    }

    /// Queues the kernel with `args` (a tuple in the kernel's parameter order:
    /// a [`View`] per input slice, a [`ViewMut`] per output, the value of each
    /// scalar). Errors, with nothing launched: a block of 0 or more threads
    /// than the kernel or the device allow; a grid out of range; more dynamic
    /// shared memory than a block may have; a buffer or the stream of another
    /// `Gpu`. A kernel that faults or fails a bounds check is reported at the
    /// next synchronisation, naming it.
    pub fn launch<'a>(&self, l: Launch, args: <K::Params as HostArgs<'a>>::Args, stream: &Stream) -> Result<()>
    where
        K::Params: HostArgs<'a>,
    {
        let (gpu, name) = (&self.module.inner.gpu, self.name.text);
        gpu.check_stream_owned(name, stream)?;
        let mut out = ArgSlots::new();
        <K::Params as HostArgs<'a>>::slots(args, &mut out);
        gpu.check_buffers_owned(name, out.owners.iter().flatten().copied())?;
        // SAFETY: `out` was packed by K::Params' markers from views of this
        // Gpu (owners checked above), borrowed for `'a` (outputs exclusively,
        // so the borrow checker keeps them apart from every other slice), and
        // a buffer is freed only after the work queued on it (`uses`).
        unsafe { self.queue(l, &mut out, stream.raw(), stream.pdl()) }
    }

    /// The entry point's interned name.
    pub(crate) fn name_id(&self) -> Name {
        self.name
    }

    /// The module's `Gpu`.
    pub(crate) fn gpu(&self) -> &crate::device::gpu::Gpu {
        &self.module.inner.gpu
    }

    /// Queues the kernel with `out`'s slots on a stream of this `Gpu` (a
    /// plain one or a graph's capture stream), PDL as `pdl` says for a
    /// `#[kernel(pdl)]`, after checking the geometry and the dynamic shared
    /// memory.
    ///
    /// # Safety
    /// `out` was packed by `K::Params`' markers, in order ([`HostArgs`], or a
    /// graph's `GraphArgs`); every slice in it is a range of this `Gpu`'s
    /// memory that stays allocated until the kernel has run and that other
    /// work does not write meanwhile, outputs exclusive and overlapping no
    /// other slice of the launch.
    pub(crate) unsafe fn queue(
        &self,
        l: Launch,
        out: &mut ArgSlots<'_>,
        stream: raw::Queue<'_>,
        pdl: Pdl,
    ) -> Result<()> {
        let (gpu, name) = (&self.module.inner.gpu, self.name.text);
        let r = self.kernel.resources()?;
        check_geometry(name, &l, r.max_threads_per_block)?;
        let room = gpu.info().shared_per_block_optin.saturating_sub(r.shared_bytes);
        if l.shared_bytes > room {
            let detail = format!("{} bytes of dynamic shared memory; a block may have {room}", l.shared_bytes);
            return Err(Error::Shape { kernel: name, detail });
        }
        let _live = gpu.shared.bind()?;
        // One relaxed atomic store (and none when it is the same kernel again).
        gpu.shared.note_user_kernel(self.name);
        let g = raw::Geometry3 { grid: l.grid, block: l.block, shared_bytes: l.shared_bytes };
        // PDL by the caller's setting, sized by the launch's threads.
        let pdl = self.pdl && pdl.pays(gpu.info(), crate::user::launch::threads_of(&l), 1);
        let too_many = || Error::Shape { kernel: K::NAME, detail: "more slots than a kernel takes".into() };
        let slots = out.slots.get_mut(..out.len).ok_or_else(too_many)?;
        // SAFETY: launch_typed's contract, by the checks above and at load:
        // `self.kernel` is the `.entry` named K::NAME of this module, whose
        // manifest and parameter sizes matched K's markers in Module::kernel,
        // and the module was loaded under load_ptx's contract (its manifest
        // tells the truth: a #[kernel] over safe Rust). The slots were packed
        // by those same markers and their slices are live, unaliased ranges of
        // this Gpu (this fn's contract); the geometry and shared memory are
        // within the kernel's and device's limits (checked above); `pdl` only
        // for an entry whose PTX waits first, on sm_90.
        unsafe { raw::launch_typed(self.kernel.func, g, stream, &out.uses[..out.buffers.min(MAX_PARAMS)], slots, pdl) }
    }
}

#[cfg(test)]
#[path = "typed_tests.rs"]
mod tests;
