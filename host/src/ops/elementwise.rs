//! The safe element-wise API: binary operations, unary operations and `axpby`
//! over the kernels of `kernels_gpu::ops`: each with the automatic choice by
//! alignment and size, or with [`Opts`] (pattern, launch shape, PDL); the
//! plan a call launches ([`Gpu::plan`]); host conveniences.

use kernels_gpu::launch::grid_for;
use kernels_gpu::ops::{op_kernel, BinaryOp, OpKernel, OpKind, OpPattern, UnaryOp, OP_KERNELS};
use kernels_gpu::Dtype;

use crate::device::gpu::{Gpu, Stream};
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::operands::{AutoSplit, Operands};
use crate::launch::opts::{OpChoice, Opts, Plan};
use crate::launch::tuning::AutoPlan;
use crate::launch::variant::LaunchShape;
use crate::memory::buffer::{AsView, AsViewMut, Element, View};
use crate::raw::{self, MapLaunch, Tail};

impl Gpu {
    /// Queues `out = op(a, b)` with the automatic choice: the 128-bit pack kernel
    /// on 16-byte aligned operands (after a scalar head when all three are
    /// misaligned alike; for bf16 on sm_90 the one with packed bf16
    /// instructions; its PDL twin where the stream's [`Pdl`] setting says so),
    /// else the scalar kernel; `Add` takes the tuned [`AutoPlan`]. What it
    /// launches: [`Gpu::plan`].
    ///
    /// Errors (nothing is launched): lengths differ; buffers or stream of another
    /// `Gpu`. `n = 0` is a no-op.
    pub fn binary<'a, T: Element>(
        &self,
        op: BinaryOp,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.binary_opts(op, a, b, out, stream, &Opts::auto())
    }

    /// As [`Gpu::binary`] with options: an explicit pattern, launch shape or
    /// PDL setting. Errors also when an operand is not aligned as the pattern
    /// needs, when the pattern has no kernel for the dtype (`PackSm90` is
    /// bf16 only), or when it needs sm_90 and the device is older.
    pub fn binary_opts<'a, T: Element>(
        &self,
        op: BinaryOp,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
        opts: &Opts,
    ) -> Result<()> {
        let ops = Operands { a: a.into_view(), b: Some(b.into_view()), out: out.into_view_mut(), scales: None };
        self.run(OpKind::Binary(op), ops, stream, opts).map(|_| ())
    }

    /// Queues `out = op(a)` with the automatic choice (as [`Gpu::binary`]).
    pub fn unary<'a, T: Element>(
        &self,
        op: UnaryOp,
        a: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.unary_opts(op, a, out, stream, &Opts::auto())
    }

    /// As [`Gpu::unary`] with options (as [`Gpu::binary_opts`]).
    pub fn unary_opts<'a, T: Element>(
        &self,
        op: UnaryOp,
        a: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
        opts: &Opts,
    ) -> Result<()> {
        let ops = Operands { a: a.into_view(), b: None, out: out.into_view_mut(), scales: None };
        self.run(OpKind::Unary(op), ops, stream, opts).map(|_| ())
    }

    /// Queues `out = alpha·a + beta·b` with the automatic choice. For f16 and
    /// bf16, `alpha` and `beta` are rounded once to the element type; each
    /// product and the sum are rounded (no fused multiply-add).
    pub fn axpby<'a, T: Element>(
        &self,
        alpha: f32,
        a: impl AsView<'a, T>,
        beta: f32,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.axpby_opts(alpha, a, beta, b, out, stream, &Opts::auto())
    }

    /// As [`Gpu::axpby`] with options (as [`Gpu::binary_opts`]).
    #[allow(clippy::too_many_arguments)]
    pub fn axpby_opts<'a, T: Element>(
        &self,
        alpha: f32,
        a: impl AsView<'a, T>,
        beta: f32,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
        opts: &Opts,
    ) -> Result<()> {
        let scales = Some((alpha, beta));
        let ops = Operands { a: a.into_view(), b: Some(b.into_view()), out: out.into_view_mut(), scales };
        self.run(OpKind::Axpby, ops, stream, opts).map(|_| ())
    }

    /// Any operation chosen at run time (e.g. while iterating `OpKind::ALL`),
    /// with options. `b` is the second operand of the two-input kinds and
    /// must be `None` for the unary ones; `scales` are axpby's (α, β), unused
    /// by the others.
    ///
    /// Errors as the typed calls, and when `b` does not match the kind.
    #[allow(clippy::too_many_arguments)]
    pub fn apply<'a, T: Element>(
        &self,
        kind: OpKind,
        a: impl AsView<'a, T>,
        b: Option<View<'a, T>>,
        out: impl AsViewMut<'a, T>,
        scales: (f32, f32),
        stream: &Stream,
        opts: &Opts,
    ) -> Result<()> {
        match (kind.inputs(), &b) {
            (1, Some(_)) => {
                return Err(Error::WrongOperands { kernel: kind.name(), detail: "a one-input operation takes no b" })
            }
            (2, None) => {
                return Err(Error::WrongOperands { kernel: kind.name(), detail: "a two-input operation needs b" })
            }
            _ => {}
        }
        let scales = (kind == OpKind::Axpby).then_some(scales);
        let ops = Operands { a: a.into_view(), b, out: out.into_view_mut(), scales };
        self.run(kind, ops, stream, opts).map(|_| ())
    }

    /// One call: the automatic choice or an explicit pattern, on `stream`.
    fn run<T: Element>(&self, kind: OpKind, ops: Operands<'_, T>, stream: &Stream, opts: &Opts) -> Result<Plan> {
        match opts.pattern {
            None => {
                self.check_stream_owned(kind.name(), stream)?;
                self.run_auto(kind, ops, stream.raw(), opts.pdl.unwrap_or(stream.pdl()), opts.shape)
            }
            Some(p) => self.map_explicit(kind, p, opts.shape.unwrap_or_default(), ops, stream).map(Plan::one),
        }
    }

    /// The 128-bit kernel the automatic choice uses: for bf16 on sm_90 devices
    /// the one with the packed bf16 instructions (a few instructions per lane
    /// instead of the integer rounding's dozen), else the portable one.
    pub(crate) fn auto_pack(&self, kind: OpKind, dtype: Dtype) -> &'static OpKernel {
        let hw = (dtype == Dtype::Bf16 && self.info().has_sm90()).then(|| op_kernel(kind, dtype, OpPattern::PackSm90));
        hw.flatten().or_else(|| op_kernel(kind, dtype, OpPattern::Pack)).unwrap_or(&OP_KERNELS[0])
    }

    /// [`AutoPlan::op_block`] for the pack kernel `func` reading `inputs` arrays
    /// (its registers asked of the driver only where the answer can matter); the
    /// built-in operations and custom ones both launch with it.
    pub(crate) fn op_block(&self, kernel: &raw::Kernel, inputs: u32, n: usize) -> Result<u32> {
        let sm90 = self.info().has_sm90();
        if AutoPlan::pack_block(n, sm90) == kernels_gpu::launch::DEFAULT_BLOCK {
            return Ok(kernels_gpu::launch::DEFAULT_BLOCK);
        }
        // The driver is asked once per kernel; the answer is cached.
        Ok(AutoPlan::op_block(n, sm90, inputs, kernel.resources()?.registers))
    }

    /// The automatic launch settings of `kind` on `dtype` with `block`
    /// threads: the grid capped at one wave of resident threads
    /// ([`AutoPlan::activation_max_grid`]) for the activations that
    /// [`AutoPlan::caps_grid`] names, one pack per thread for the rest.
    fn op_config(&self, kind: OpKind, dtype: Dtype, block: u32) -> LaunchShape {
        let mut cfg = LaunchShape::with_block(block);
        let info = self.info();
        if matches!(kind, OpKind::Unary(op) if AutoPlan::caps_grid(op, dtype, info)) {
            cfg.max_grid = AutoPlan::activation_max_grid(info.sm_count, info.max_threads_per_sm, block);
        }
        cfg
    }

    pub(crate) fn auto_scalar(&self, kind: OpKind, dtype: Dtype) -> &'static OpKernel {
        // Every kind and dtype has a scalar kernel (the table's own test says so).
        op_kernel(kind, dtype, OpPattern::Scalar).unwrap_or(&OP_KERNELS[0])
    }

    /// The kernel of `(kind, dtype, pattern)`, or why it cannot run here.
    pub(crate) fn op_kernel_here(&self, kind: OpKind, dtype: Dtype, pattern: OpPattern) -> Result<&'static OpKernel> {
        let Some(k) = op_kernel(kind, dtype, pattern) else {
            let detail = format!("no {pattern:?} kernel for {}", dtype.name());
            return Err(Error::Shape { kernel: kind.name(), detail });
        };
        if k.needs_sm90() && !self.info().has_sm90() {
            let (major, minor) = self.info().compute_capability;
            return Err(Error::Unsupported { kernel: k.name, needs: "9.0", has: format!("{major}.{minor}") });
        }
        Ok(k)
    }

    /// The blocking form ([`crate::ops::blocking`]): upload, the automatic
    /// choice on a new stream, wait, download.
    pub(crate) fn map_host<T: Element>(
        &self,
        kind: OpKind,
        a: &[T],
        b: Option<&[T]>,
        scales: Option<(f32, f32)>,
    ) -> Result<Vec<T>> {
        if let Some(b) = b.filter(|b| b.len() != a.len()) {
            let name = self.auto_scalar(kind, T::DTYPE).name;
            return Err(Error::LengthMismatch { kernel: name, a: a.len(), b: b.len(), out: a.len() });
        }
        let stream = self.stream()?;
        let da = self.upload(a)?;
        let db = b.map(|b| self.upload(b)).transpose()?;
        let mut out = self.alloc::<T>(a.len())?;
        let ops = Operands { a: da.view(), b: db.as_ref().map(|b| b.view()), out: out.view_mut(), scales };
        self.map_auto(kind, ops, stream.raw(), Pdl::Auto)?;
        stream.synchronize()?;
        out.to_vec()
    }

    /// The automatic choice, on a stream already checked to belong to this
    /// context (a plain one, a graph's capture stream, cudarc's).
    pub(crate) fn map_auto<T: Element>(
        &self,
        kind: OpKind,
        ops: Operands<'_, T>,
        raw: raw::Queue<'_>,
        pdl: Pdl,
    ) -> Result<()> {
        self.run_auto(kind, ops, raw, pdl, None).map(|_| ())
    }

    /// The automatic choice ([`Gpu::op_decide`], [`Gpu::add_decide`]),
    /// launched; `user` replaces the tuned launch shape.
    fn run_auto<T: Element>(
        &self,
        kind: OpKind,
        ops: Operands<'_, T>,
        raw: raw::Queue<'_>,
        pdl: Pdl,
        user: Option<LaunchShape>,
    ) -> Result<Plan> {
        if let (OpKind::Binary(BinaryOp::Add), Some(b)) = (kind, ops.b) {
            return self.add_auto_raw(user, ops.a, b, ops.out, raw, pdl);
        }
        let (dtype, n) = (T::DTYPE, ops.a.len());
        let shape = |block| user.unwrap_or_else(|| self.op_config(kind, dtype, block));
        let split = match self.op_decide(kind, dtype, n, &ops.addrs(), pdl, user.is_some()) {
            OpChoice::Twin(k) => {
                // The twin's block as the plain kernel's would be (the same walk).
                let twin = self.shared.kernel(k.name)?;
                let cfg = shape(self.op_block(twin, kind.inputs() as u32, n)?);
                self.check_map(k, cfg, &ops)?;
                // SAFETY: the kernel handle was resolved by this table row's own name from
                // this Gpu's modules, so the row's inputs, tail and alignment are its own.
                unsafe { self.map_launch_raw(k, twin.func, cfg, ops, raw, true) }?;
                return Ok(Plan { kernel: k.name, head: None, pdl: true, norm: None });
            }
            OpChoice::Split(split) => split,
        };
        let (pack, scalar) = (self.auto_pack(kind, dtype), self.auto_scalar(kind, dtype));
        // Each kernel looked up once: the pack's serves its block choice and its launch.
        let pack_fn = self.shared.kernel(pack.name)?;
        let cfg = shape(self.op_block(pack_fn, kind.inputs() as u32, n)?);
        // Before a split, so that a mismatch launches nothing.
        ops.check_lengths(scalar.name)?;
        self.check_map(scalar, cfg, &ops)?;
        match split {
            AutoSplit::Pack => {
                // SAFETY: the kernel handle was resolved by this table row's own name from
                // this Gpu's modules, so the row's inputs, tail and alignment are its own.
                unsafe { self.map_launch_raw(pack, pack_fn.func, cfg, ops, raw, false) }?;
                Ok(Plan::one(pack.name))
            }
            AutoSplit::Peel(head) => {
                let (h, rest) = ops.split(head)?;
                // SAFETY: the kernel handle was resolved by this table row's own name from
                // this Gpu's modules, so the row's inputs, tail and alignment are its own.
                unsafe { self.map_launch_raw(scalar, self.shared.func(scalar.name)?, cfg, h, raw, false) }?;
                // SAFETY: the kernel handle was resolved by this table row's own name from
                // this Gpu's modules, so the row's inputs, tail and alignment are its own.
                unsafe { self.map_launch_raw(pack, pack_fn.func, cfg, rest, raw, false) }?;
                Ok(Plan { kernel: pack.name, head: Some((scalar.name, head)), pdl: false, norm: None })
            }
            AutoSplit::Scalar => {
                let cfg = user.unwrap_or_default();
                // SAFETY: the kernel handle was resolved by this table row's own name from
                // this Gpu's modules, so the row's inputs, tail and alignment are its own.
                unsafe { self.map_launch_raw(scalar, self.shared.func(scalar.name)?, cfg, ops, raw, false) }?;
                Ok(Plan::one(scalar.name))
            }
        }
    }

    /// An explicit pattern's kernel of `(kind, pattern)` for `T`, on a stream
    /// of this `Gpu`.
    fn map_explicit<T: Element>(
        &self,
        kind: OpKind,
        pattern: OpPattern,
        cfg: LaunchShape,
        ops: Operands<'_, T>,
        stream: &Stream,
    ) -> Result<&'static str> {
        let k = self.op_kernel_here(kind, T::DTYPE, pattern)?;
        self.check_stream_owned(k.name, stream)?;
        self.map_launch(k, cfg, ops, stream.raw())?;
        Ok(k.name)
    }

    /// One explicit kernel, after the checks.
    pub(crate) fn map_launch<T: Element>(
        &self,
        k: &'static OpKernel,
        cfg: LaunchShape,
        ops: Operands<'_, T>,
        raw: raw::Queue<'_>,
    ) -> Result<()> {
        self.check_map(k, cfg, &ops)?;
        // SAFETY: k's kernel: resolved by `k.name` itself.
        unsafe { self.map_launch_raw(k, self.shared.func(k.name)?, cfg, ops, raw, false) }
    }

    /// Launch settings and ownership of the operands (their lengths and
    /// alignment are `raw::launch_map`'s to check, once).
    pub(crate) fn check_map<T: Element>(
        &self,
        k: &'static OpKernel,
        cfg: LaunchShape,
        ops: &Operands<'_, T>,
    ) -> Result<()> {
        cfg.check(k.name)?;
        self.check_buffers_owned(k.name, ops.owners())
    }

    /// One launch of kernel `k`, whose handle `func` the caller looked up;
    /// `pdl` only for a PDL twin (`crate::device::pdl`).
    ///
    /// # Safety
    /// `func` is `k`'s kernel: resolved by `k.name` from this Gpu's own
    /// modules (so `k`'s table row gives its parameter list).
    pub(crate) unsafe fn map_launch_raw<T: Element>(
        &self,
        k: &'static OpKernel,
        func: raw::RawFn,
        cfg: LaunchShape,
        mut ops: Operands<'_, T>,
        raw: raw::Queue<'_>,
        pdl: bool,
    ) -> Result<()> {
        let n = ops.a.len();
        let launch = MapLaunch {
            name: k.name,
            func,
            inputs: k.kind.inputs() as u32,
            tail: match ops.scales {
                Some((alpha, beta)) if k.kind == OpKind::Axpby => Tail::Scalars(alpha, beta),
                _ if k.kind == OpKind::Axpby => {
                    return Err(Error::WrongOperands { kernel: k.name, detail: "axpby needs its scales" })
                }
                _ => Tail::None,
            },
            // Same lane count the kernel walks with: one thread per lane group.
            grid: grid_for(n as u64, k.lanes(), cfg.block, cfg.max_grid),
            block: cfg.block,
            align: k.align(),
            pdl,
        };
        let _live = self.shared.bind()?;
        // SAFETY: `func` is `k`'s kernel (this fn's contract) and the launch
        // is built from `k`'s table row for `T` (its lanes, alignment, tail);
        // the operands are live views of this Gpu whose lengths the callers
        // checked; `pdl` is set only for a twin whose PTX waits first
        // (`crate::device::pdl`); the context is live for the call (the guard).
        unsafe { raw::launch_map(&launch, &ops.a, ops.b.as_ref(), &mut ops.out, raw) }
            .map_err(|e| self.shared.fault_of(e))
    }
}
