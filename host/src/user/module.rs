//! User modules: PTX built from your own kernel crate (with `gpukern-build`),
//! loaded into a [`Gpu`]'s context.
//!
//! * [`Module::unary`] and [`Module::binary`] give typed handles to the
//!   element-wise operations that `gpukern_device::elementwise!` declared. They
//!   run with the built-in operations' automatic choice (the 16-byte pack
//!   kernel on aligned operands, after a scalar head when all are misaligned
//!   alike; the scalar kernel otherwise) and the same checks: lengths,
//!   alignment, buffers and streams of this `Gpu`. They are safe because the
//!   macro fixes the kernels' parameter lists and the module's manifest says
//!   which operation and dtypes it holds; the handle reads it before it
//!   launches anything.
//! * [`Module::launch`] (`raw/user.rs`, parameters in `user_launch.rs`) is the escape hatch for any other kernel: `unsafe`,
//!   under the contract in its docs.

use std::sync::Arc;

use gpukern_device::{EwKind, ABI_MAGIC, ABI_VERSION, EW_PDL, PDL_SUFFIX};
use kernels_gpu::launch::grid_for;
use kernels_gpu::ops::{OpPattern, UnaryOp};
use kernels_gpu::Dtype;

use crate::device::gpu::{Gpu, Stream};
use crate::device::names::{intern, Name};
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::operands::{split_for, AutoSplit, Operands};
use crate::launch::opts::{Opts, Plan};
use crate::launch::tuning::AutoPlan;
use crate::launch::variant::LaunchShape;
use crate::memory::buffer::Element;
use crate::raw::{self, Kernel, MapLaunch, RawModule, Tail};

/// A loaded module, kept alive by every handle into it (unloaded on drop, context live).
pub(crate) struct ModuleInner {
    pub(crate) gpu: Gpu,
    pub(crate) raw: RawModule,
    /// The `elementwise!` operations its PTX declares (their manifests' names),
    /// listed in the error for an unknown one.
    pub(crate) ops: Vec<String>,
    /// The PTX text, whose `.entry` parameter lists typed kernels are checked
    /// against.
    pub(crate) ptx: Arc<str>,
}

/// A PTX module of your own, loaded with [`Gpu::load_module`].
#[derive(Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("device", &self.inner.gpu.info().index).finish()
    }
}

/// A dtype's row of the manifest table (`gpukern_device::EW_DTYPES`): its
/// mask bit and kernel suffixes, the ones `elementwise!` uses.
const fn ew_row(d: Dtype) -> (u32, &'static str, &'static str) {
    gpukern_device::EW_DTYPES[match d {
        Dtype::F32 => 0,
        Dtype::F16 => 1,
        Dtype::Bf16 => 2,
    }]
}

impl Module {
    /// The manifest of operation `name`: its kind and dtype mask.
    fn manifest(&self, name: &str) -> Result<(u32, u32)> {
        let bad = |detail: String| Error::CustomOp { kernel: name.to_string(), detail };
        let _live = self.inner.gpu.shared.bind()?;
        let Some(bytes) = self.inner.raw.read_global(&format!("gpukern_ew_{name}"))? else {
            let known = match &self.inner.ops[..] {
                [] => "it declares none".to_string(),
                ops => format!("it declares: {}", ops.join(", ")),
            };
            return Err(bad(format!(
                "the module has no manifest `gpukern_ew_{name}` ({known}); declare the operation with gpukern_device::elementwise!"
            )));
        };
        let words: Vec<u32> = bytes.as_chunks::<4>().0.iter().map(|w| u32::from_le_bytes(*w)).collect();
        match words[..] {
            [ABI_MAGIC, ABI_VERSION, kind, mask] => Ok((kind, mask)),
            [ABI_MAGIC, v, ..] => Err(bad(format!("manifest version {v}, this library reads {ABI_VERSION}"))),
            _ => Err(bad("the manifest is not gpukern's".into())),
        }
    }

    /// The kernels of operation `name` of `kind` on `T`, after its manifest's checks.
    pub(crate) fn custom<T: Element>(&self, name: &str, kind: EwKind) -> Result<Custom> {
        // Held across every driver call below (the manifest's read and the
        // kernels' lookups): a reset waits for it.
        let _live = self.inner.gpu.shared.bind()?;
        let (k, mask) = self.manifest(name)?;
        let bad = |detail: String| Error::CustomOp { kernel: name.to_string(), detail };
        if k != kind as u32 {
            let says = if k == EwKind::Unary as u32 { "unary" } else { "binary" };
            let asked = if kind == EwKind::Unary { "unary" } else { "binary" };
            return Err(bad(format!("the module declares it {says}, asked for as {asked}")));
        }
        if mask & ew_row(T::DTYPE).0 == 0 {
            return Err(bad(format!("the module has no {} kernels for it", T::DTYPE.name())));
        }
        let (_, s, p) = ew_row(T::DTYPE);
        let func = |suffix: &str| -> Result<(Name, Arc<Kernel>)> {
            let full = intern(&format!("{name}{suffix}"));
            let f = self
                .inner
                .raw
                .function(full.text)
                .map_err(|source| Error::MissingKernel { kernel: full.text, source })?;
            Ok((full, Arc::new(Kernel::new(f, &self.inner.gpu.shared.ctx))))
        };
        // The PDL twin: declared by the manifest (an sm_90 build), usable on
        // this device, and waiting first in the PTX, else an error.
        let twin = if mask & EW_PDL != 0 && self.inner.gpu.info().has_sm90() {
            let twin = format!("{name}{p}{PDL_SUFFIX}");
            if !crate::device::pdl::waits_first(&self.inner.ptx, &twin) {
                return Err(bad(format!(
                    "the manifest declares PDL twins, but `{twin}` does not start with griddepcontrol.wait"
                )));
            }
            Some(func(&format!("{p}{PDL_SUFFIX}"))?)
        } else {
            None
        };
        Ok(Custom {
            module: self.inner.clone(),
            dtype: T::DTYPE,
            kind,
            scalar: func(s)?,
            pack: func(p)?,
            twin,
            like: None,
        })
    }
}

/// The two kernels of one operation and dtype.
#[derive(Clone)]
pub(crate) struct Custom {
    module: Arc<ModuleInner>,
    dtype: Dtype,
    kind: EwKind,
    scalar: (Name, Arc<Kernel>),
    pack: (Name, Arc<Kernel>),
    /// The pack kernel's PDL twin, in a module built for sm_90 on an sm_90
    /// device, after [`crate::device::pdl::waits_first`] checked its PTX.
    twin: Option<(Name, Arc<Kernel>)>,
    /// The built-in activation whose grid choice this operation follows
    /// ([`crate::CustomUnary::tuned_as`]); `None`: the register proxy.
    pub(crate) like: Option<UnaryOp>,
}

/// Which kernel of a custom operation to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustomPattern {
    /// One element per thread, any element alignment.
    Scalar,
    /// One 16-byte pack per thread; operands 16-byte aligned.
    Pack,
}

impl Custom {
    /// The module the operation's kernels are in.
    pub(crate) fn module(&self) -> &Arc<ModuleInner> {
        &self.module
    }

    /// The scalar kernel's name, which names the operation in errors.
    pub(crate) fn name(&self) -> &'static str {
        self.scalar.0.text
    }

    /// The pack kernel's interned name (what the automatic choice mostly runs).
    pub(crate) fn pack_name(&self) -> Name {
        self.pack.0
    }

    /// The scalar and pack kernels' names.
    pub(crate) fn kernels(&self) -> (&'static str, &'static str) {
        (self.scalar.0.text, self.pack.0.text)
    }

    /// The pack kernel's PDL twin's name, when it has one.
    pub(crate) fn pdl_kernel(&self) -> Option<&'static str> {
        self.twin.as_ref().map(|t| t.0.text)
    }

    /// The `Gpu` whose context the module lives in.
    pub(crate) fn gpu(&self) -> &Gpu {
        &self.module.gpu
    }

    /// Lengths and ownership, as the built-in operations check them (the
    /// stream's owner is the caller's to check: a graph's capture stream has
    /// none).
    fn check<T: Element>(&self, ops: &Operands<'_, T>) -> Result<()> {
        let (name, gpu) = (self.name(), &self.module.gpu);
        ops.check_lengths(name)?;
        gpu.check_buffers_owned(name, ops.owners())
    }

    /// One kernel over all of `ops`; `ops.scales` carries the two parameters.
    /// With `pdl` (a pack launch only), the twin runs with the attribute.
    fn launch<T: Element>(
        &self,
        pattern: CustomPattern,
        cfg: LaunchShape,
        mut ops: Operands<'_, T>,
        stream: raw::Queue<'_>,
        pdl: bool,
    ) -> Result<()> {
        let ((full, kernel), lanes, align) = match (pattern, &self.twin) {
            (CustomPattern::Scalar, _) => (&self.scalar, 1, self.dtype.size()),
            (CustomPattern::Pack, Some(twin)) if pdl => (twin, (16 / self.dtype.size()) as u32, 16),
            (CustomPattern::Pack, _) => (&self.pack, (16 / self.dtype.size()) as u32, 16),
        };
        let name = full.text;
        let pdl = pdl && pattern == CustomPattern::Pack && self.twin.is_some();
        cfg.check(name)?;
        let n = ops.a.len();
        let (p0, p1) = ops.scales.unwrap_or_default();
        // The macro's entry points: (a, [b,] c, n, p0: f32, p1: f32), the
        // inputs as the manifest declared.
        let l = MapLaunch {
            name,
            func: kernel.func,
            inputs: if self.kind == EwKind::Binary { 2 } else { 1 },
            tail: Tail::Scalars(p0, p1),
            grid: grid_for(n as u64, lanes, cfg.block, cfg.max_grid),
            block: cfg.block,
            align,
            // Only the twin, whose PTX waits first (checked at load).
            pdl,
        };
        self.module.gpu.shared.note_user_kernel(*full);
        // SAFETY: `kernel` is the entry `name` of this module, which its
        // manifest declared an `elementwise!` operation of this kind and dtype
        // (so `ew_entry!`'s parameter list, `inputs` and the two scalars), and
        // the module was loaded under load_ptx's contract (the manifest is the
        // macro's); a twin launches with PDL only after waits_first passed.
        unsafe { raw::launch_map(&l, &ops.a, ops.b.as_ref(), &mut ops.out, stream) }
    }

    /// The automatic choice's decision for `n` elements at operand addresses
    /// `addrs`: the split ([`split_for`], as the built-in operations'), and
    /// whether the pack kernel's PDL twin runs (as theirs: [`Pdl::pays`]).
    fn decide(&self, addrs: &[u64], n: usize, pdl: Pdl) -> (AutoSplit, bool) {
        let split = split_for(addrs, n, self.dtype.size(), 16);
        let lanes = (16 / self.dtype.size()) as u32;
        let twin =
            n > 0 && split == AutoSplit::Pack && self.twin.is_some() && pdl.pays(self.module.gpu.info(), n, lanes);
        (split, twin)
    }

    /// What [`Custom::run_auto`] launches for `n` elements at `addrs`
    /// (`[a, b, out]` or `[a, out]`) with `pdl`.
    pub(crate) fn plan(&self, n: usize, addrs: &[u64], pdl: Pdl) -> Plan {
        let (scalar, pack) = (self.scalar.0.text, self.pack.0.text);
        match self.decide(addrs, n, pdl) {
            (AutoSplit::Pack, true) => {
                Plan { kernel: self.twin.as_ref().map_or(pack, |t| t.0.text), head: None, pdl: true, norm: None }
            }
            (AutoSplit::Pack, false) => Plan::one(pack),
            (AutoSplit::Peel(head), _) => Plan { kernel: pack, head: Some((scalar, head)), pdl: false, norm: None },
            (AutoSplit::Scalar, _) => Plan::one(scalar),
        }
    }

    /// The automatic choice, as the built-in operations' ([`Custom::decide`]),
    /// on a stream of this module's `Gpu` (a plain call's or a graph's
    /// capture stream), PDL as `pdl` says.
    pub(crate) fn run_auto<T: Element>(&self, ops: Operands<'_, T>, stream: raw::Queue<'_>, pdl: Pdl) -> Result<()> {
        // Held until the last launch is queued: a reset waits for it, so no
        // driver call below (the kernel's attributes, the launches) reaches
        // a destroyed context.
        let _live = self.module.gpu.shared.bind()?;
        self.check(&ops)?;
        let inputs = if self.kind == EwKind::Binary { 2 } else { 1 };
        let gpu = &self.module.gpu;
        let mut cfg = LaunchShape::with_block(gpu.op_block(&self.pack.1, inputs, ops.a.len())?);
        // Several packs per thread where the library's measurements say so
        // (`AutoPlan::custom_caps_grid`: the activation it is tuned as, else
        // the register proxy on an issue-bound device).
        let info = gpu.info();
        let registers = self.pack.1.resources()?.registers;
        if AutoPlan::custom_caps_grid(self.like, self.dtype, registers, info) {
            cfg.max_grid = AutoPlan::activation_max_grid(info.sm_count, info.max_threads_per_sm, cfg.block);
        }
        match self.decide(&ops.addrs(), ops.a.len(), pdl) {
            (AutoSplit::Pack, twin) => self.launch(CustomPattern::Pack, cfg, ops, stream, twin),
            (AutoSplit::Peel(head), _) => {
                let (h, rest) = ops.split(head)?;
                self.launch(CustomPattern::Scalar, cfg, h, stream, false)?;
                self.launch(CustomPattern::Pack, cfg, rest, stream, false)
            }
            (AutoSplit::Scalar, _) => self.launch(CustomPattern::Scalar, LaunchShape::default(), ops, stream, false),
        }
    }

    /// An explicit kernel, after the same checks.
    pub(crate) fn run_with<T: Element>(
        &self,
        pattern: CustomPattern,
        cfg: LaunchShape,
        ops: Operands<'_, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.module.gpu.check_stream_owned(self.name(), stream)?;
        // Held until the launch is queued (see `run_auto`).
        let _live = self.module.gpu.shared.bind()?;
        self.check(&ops)?;
        self.launch(pattern, cfg, ops, stream.raw(), false)
    }

    /// One call on a stream of this module's `Gpu` with `opts`: the
    /// automatic choice (PDL: `opts.pdl`, else the stream's setting), an
    /// explicit pattern (`Scalar` or `Pack`), or the automatic split with a
    /// launch shape of the caller's (launched plainly, as the built-in
    /// operations do).
    pub(crate) fn run<T: Element>(&self, ops: Operands<'_, T>, stream: &Stream, opts: &Opts) -> Result<()> {
        let pattern = match opts.pattern {
            None => None,
            Some(OpPattern::Scalar) => Some(CustomPattern::Scalar),
            Some(OpPattern::Pack) => Some(CustomPattern::Pack),
            Some(p) => {
                let detail = format!("a user operation has Scalar and Pack kernels, not {p:?}");
                return Err(Error::Shape { kernel: self.name(), detail });
            }
        };
        match (pattern, opts.shape) {
            (None, None) => {
                self.module.gpu.check_stream_owned(self.name(), stream)?;
                self.run_auto(ops, stream.raw(), opts.pdl.unwrap_or(stream.pdl()))
            }
            (Some(p), shape) => self.run_with(p, shape.unwrap_or_default(), ops, stream),
            (None, Some(cfg)) => match self.decide(&ops.addrs(), ops.a.len(), Pdl::Off).0 {
                AutoSplit::Pack => self.run_with(CustomPattern::Pack, cfg, ops, stream),
                AutoSplit::Scalar => self.run_with(CustomPattern::Scalar, cfg, ops, stream),
                AutoSplit::Peel(head) => {
                    self.check(&ops)?;
                    let (h, rest) = ops.split(head)?;
                    self.run_with(CustomPattern::Scalar, cfg, h, stream)?;
                    self.run_with(CustomPattern::Pack, cfg, rest, stream)
                }
            },
        }
    }
}
