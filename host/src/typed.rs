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
//! ```no_run
//! use gpukern::sig::{input, output, InArg, KernelSig, OutArg, Param};
//! use gpukern::{DeviceVec, Launch, Stream, TypedKernel};
//! # enum Scale {}
//! # impl KernelSig for Scale {
//! #     const NAME: &'static str = "scale";
//! #     const PARAMS: &'static [Param] = &[input::<f32>(), output::<f32>()];
//! #     type Params = (InArg<f32>, OutArg<f32>);
//! # }
//! fn run(k: &TypedKernel<Scale>, x: &DeviceVec<f32>, y: &mut DeviceVec<f32>, l: Launch, s: &Stream) {
//!     k.launch(l, (x.view(), y.view_mut()), s).unwrap();
//! }
//! ```
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

use gpukern_device::kernel::{Bf16Bits, F16Bits, InArg, KernelElem, KernelSig, OutArg, Scalar, KERNEL_MAGIC};
use gpukern_device::kernel::{Param, ParamKind, KERNEL_VERSION};

use crate::buffer::{Pod, View, ViewMut};
use crate::context::Shared;
use crate::error::{Error, Result};
use crate::gpu::{KernelResources, Stream};
use crate::module::Module;
use crate::raw::{self, Kernel};
use crate::user_launch::{check_geometry, Launch};

mod sealed {
    /// Only this crate implements the launch traits: a wrong slot layout
    /// would reach the kernel unchecked.
    pub trait Sealed {}
}

/// The slots of one launch and the owners of its buffers (opaque).
pub struct ArgSlots<'a> {
    slots: Vec<[u8; 8]>,
    owners: Vec<&'a Arc<Shared>>,
    /// The slices' allocations, ordered across streams at the launch.
    uses: Vec<Option<raw::Use<'a>>>,
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
host_elems!(f32 => f32, u32 => u32, i32 => i32, u64 => u64, u16 => u16, u8 => u8,
    Bf16Bits => half::bf16, F16Bits => half::f16);

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
        out.slots.push(v.addr().to_ne_bytes());
        out.slots.push((v.len() as u64).to_ne_bytes());
        out.owners.push(v.owner());
        out.uses.push(v.use_as_input());
    }
}

impl<'a, T: HostElem> HostArg<'a> for OutArg<T> {
    type Arg = ViewMut<'a, T::Host>;
    fn push(v: ViewMut<'a, T::Host>, out: &mut ArgSlots<'a>) {
        out.slots.push(v.addr().to_ne_bytes());
        out.slots.push((v.len() as u64).to_ne_bytes());
        out.owners.push(v.owner());
        out.uses.push(v.use_as_output());
    }
}

impl<'a, T: HostElem> HostArg<'a> for Scalar<T> {
    type Arg = T::Host;
    fn push(v: T::Host, out: &mut ArgSlots<'a>) {
        out.slots.push(raw::slot_of(&v));
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
host_args! {
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

/// A typed kernel of a [`Module`], resolved and checked once.
pub struct TypedKernel<K: KernelSig> {
    module: Module,
    name: &'static str,
    kernel: Kernel,
    /// A `#[kernel(pdl)]` built for sm_90, on an sm_90 device, whose PTX waits
    /// first ([`crate::pdl::waits_first`]): launched with the PDL attribute
    /// where the stream's setting says it pays.
    pdl: bool,
    _k: PhantomData<fn() -> K>,
}

impl<K: KernelSig> std::fmt::Debug for TypedKernel<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedKernel").field("name", &self.name).finish()
    }
}

/// Whether a module's manifest bytes and the byte sizes of its `.entry`
/// parameters say what `params` says; the reason when not.
pub(crate) fn check_signature(manifest: &[u8], params: &[Param], entry: Option<Vec<u32>>) -> Result<(), String> {
    let words: Vec<u32> = manifest.as_chunks::<4>().0.iter().map(|w| u32::from_le_bytes(*w)).collect();
    let want: Vec<u32> = [KERNEL_MAGIC, KERNEL_VERSION, params.len() as u32]
        .into_iter()
        .chain(params.iter().flat_map(|p| p.words()))
        .collect();
    if words != want {
        return Err(format!("the module's manifest {words:?} does not match this handle's {want:?}"));
    }
    let sizes: Vec<u32> = params
        .iter()
        .flat_map(|p| match p.kind {
            ParamKind::In | ParamKind::Out => vec![8, 8],
            ParamKind::Scalar => vec![p.size],
        })
        .collect();
    match entry {
        Some(found) if found == sizes => Ok(()),
        Some(found) => Err(format!("the PTX entry takes {found:?} bytes per parameter, not {sizes:?}")),
        None => Err("the module has no such .entry".into()),
    }
}

/// The byte size of each `.param` of entry `name` in PTX text, in order;
/// `None` when the module has no such entry.
pub(crate) fn entry_params(ptx: &str, name: &str) -> Option<Vec<u32>> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let rest = &ptx[start..];
    let list = &rest[rest.find('(')? + 1..rest.find(')')?];
    let sizes = list
        .split(',')
        .filter(|p| p.contains(".param"))
        .map(|p| {
            let ty = p.split_whitespace().find(|w| w.starts_with('.') && *w != ".param").unwrap_or("");
            ty.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u32>().map_or(0, |bits| bits / 8)
        })
        .collect();
    Some(sizes)
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
        check_signature(&bytes, &params, entry_params(&self.inner.ptx, name)).map_err(bad)?;
        let f = self.inner.raw.function(name).map_err(|source| Error::MissingKernel { kernel: name, source })?;
        let kernel = Kernel::new(f);
        // Dynamic shared memory up to what a block may have, less the static part.
        let r = kernel.resources()?;
        let optin = self.inner.gpu.info().shared_per_block_optin;
        raw::set_max_dynamic_shared(f, optin.saturating_sub(r.shared_bytes))?;
        // `#[kernel(pdl)]` in an sm_90 build leaves a marker; the entry must
        // also wait first in the PTX, or the marker is refused.
        let pdl =
            self.inner.gpu.info().has_sm90() && self.inner.raw.read_global(&format!("gpukern_pdl_{name}"))?.is_some();
        if pdl && !crate::pdl::waits_first(&self.inner.ptx, name) {
            return Err(bad("marked #[kernel(pdl)], but its entry does not start with griddepcontrol.wait".into()));
        }
        Ok(TypedKernel { module: self.clone(), name, kernel, pdl, _k: PhantomData })
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
        self.name
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
        let gpu = &self.module.inner.gpu;
        let r = self.kernel.resources()?;
        check_geometry(self.name, &l, r.max_threads_per_block)?;
        let room = gpu.info().shared_per_block_optin.saturating_sub(r.shared_bytes);
        if l.shared_bytes > room {
            let detail = format!("{} bytes of dynamic shared memory; a block may have {room}", l.shared_bytes);
            return Err(Error::Shape { kernel: self.name, detail });
        }
        gpu.check_stream_owned(self.name, stream)?;
        let mut out = ArgSlots { slots: Vec::with_capacity(2 * K::PARAMS.len()), owners: Vec::new(), uses: Vec::new() };
        <K::Params as HostArgs<'a>>::slots(args, &mut out);
        let ArgSlots { mut slots, owners, uses } = out;
        gpu.check_buffers_owned(self.name, owners)?;
        let _live = gpu.shared.bind()?;
        gpu.shared.note_user_kernel(self.name);
        let g = raw::Geometry3 { grid: l.grid, block: l.block, shared_bytes: l.shared_bytes };
        // PDL by the stream's setting, sized by the launch's threads.
        let dims = [l.grid.0, l.grid.1, l.grid.2, l.block.0, l.block.1, l.block.2];
        let threads = dims.iter().fold(1usize, |t, &d| t.saturating_mul(d as usize));
        let pdl = self.pdl && stream.pdl().pays(gpu.info(), threads, 1);
        // The manifest and the .entry (checked at load) say the kernel takes
        // exactly these slots; each slice is a live, owned, borrowed range with
        // its length (outputs exclusively), which the macro's entry turns into
        // bounds-checked slices; the geometry and shared memory are checked.
        raw::launch_typed(self.kernel.func, g, stream.raw(), &uses, &mut slots, pdl)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_parameter_sizes_are_read_from_ptx() {
        let ptx = ".visible .entry scale(\n\t.param .u64 .ptr .align 1 scale_param_0,\n\t.param .u64 scale_param_1,\n\t.param .f32 scale_param_2,\n\t.param .b16 scale_param_3\n)\n{";
        assert_eq!(super::entry_params(ptx, "scale"), Some(vec![8, 8, 4, 2]));
        assert_eq!(super::entry_params(ptx, "other"), None);
    }

    #[test]
    fn manifest_mismatches_are_refused() {
        use gpukern_device::kernel::{input, output, scalar, KERNEL_MAGIC, KERNEL_VERSION};
        let params = [input::<f32>(), output::<f32>(), scalar::<f32>()];
        let bytes = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let good = bytes(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 1, 3, 1]);
        let entry = || Some(vec![8, 8, 8, 8, 4]);
        assert_eq!(super::check_signature(&good, &params, entry()), Ok(()));
        // Another element type, another count, another kind, not a manifest.
        for words in [
            vec![KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 3, 2, 1, 3, 1],
            vec![KERNEL_MAGIC, KERNEL_VERSION, 2, 1, 1, 2, 1],
            vec![KERNEL_MAGIC, KERNEL_VERSION, 3, 2, 1, 2, 1, 3, 1],
            vec![0, 0, 0, 0],
        ] {
            assert!(super::check_signature(&bytes(&words), &params, entry()).is_err(), "{words:?}");
        }
        // The manifest agrees but the entry does not (a rebuilt kernel), or is missing.
        assert!(super::check_signature(&good, &params, Some(vec![8, 8, 8, 8, 8])).is_err());
        assert!(super::check_signature(&good, &params, None).is_err());
    }
}
