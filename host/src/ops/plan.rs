//! [`Gpu::plan`]: what a call would launch, for every launch kind, from the
//! call's own operands ([`Call`]), on the stream it would be queued on and
//! with its options: the decision the call itself makes, PDL included (the
//! call's [`Opts::pdl`], else the stream's setting).

use std::sync::Arc;

use kernels_gpu::glu::GluOp;
use kernels_gpu::ops::{BinaryOp, OpKind, UnaryOp};
use kernels_gpu::Dtype;

use gpukern_device::kernel::KernelSig;

use crate::device::gpu::{Gpu, Stream};
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::operands::AutoSplit;
use crate::launch::opts::{OpChoice, Opts, Plan};
use crate::memory::buffer::{AsView, Element, View, ViewMut};
use crate::norms::{Norm, Rows};
use crate::ops::glu::{split_halves, GluIn, GluRows};
use crate::raw::NormSpans;
use crate::user::custom::{CustomBinary, CustomUnary};
use crate::user::launch::{threads_of, Launch};
use crate::user::module::Custom;
use crate::user::typed::TypedKernel;

/// A call described by its operands, for [`Gpu::plan`]. Made by the
/// constructor named after the call (`Call::binary` for [`Gpu::binary`], …);
/// outputs are passed as views too (`&out`), since planning writes nothing.
///
/// ```no_run
/// use gpukern::{BinaryOp, Call, Gpu, Opts};
/// let gpu = Gpu::new(0)?;
/// let s = gpu.stream()?;
/// let (a, b) = (gpu.upload(&vec![1.0f32; 1 << 20])?, gpu.upload(&vec![2.0f32; 1 << 20])?);
/// let mut out = gpu.alloc::<f32>(1 << 20)?;
/// let plan = gpu.plan(Call::binary(BinaryOp::Mul, &a, &b, &out), &s, &Opts::auto())?;
/// println!("{} (PDL: {})", plan.kernel, plan.pdl);
/// gpu.binary(BinaryOp::Mul, &a, &b, &mut out, &s)?; // launches what `plan` said
/// # Ok::<(), gpukern::Error>(())
/// ```
pub struct Call<'c> {
    what: What<'c>,
}

enum What<'c> {
    /// A built-in element-wise operation over `n` elements at `addrs`.
    Op { kind: OpKind, dtype: Dtype, n: usize, addrs: Vec<u64> },
    /// A gated activation or a norm: the choice, made for its element type.
    Choice(Box<Choice<'c>>),
    /// A user module's element-wise operation.
    Custom { op: &'c Custom, n: usize, addrs: Vec<u64> },
    /// A typed kernel: its `Gpu`, its name, whether it is a PDL twin, the
    /// launch's threads.
    Typed { gpu: &'c Gpu, name: &'static str, twin: bool, threads: usize },
}

/// A call's choice made for its element type, given the options and the PDL
/// setting.
type Choice<'c> = dyn FnOnce(&Gpu, &Opts, Pdl) -> Result<Plan> + 'c;

/// Address and length of a view.
fn span<'a, T: Element>(v: impl AsView<'a, T>) -> (u64, usize) {
    let v = v.into_view();
    (v.addr(), v.len())
}

impl<'c> Call<'c> {
    /// [`Gpu::binary`]: `out = op(a, b)`.
    pub fn binary<'a, T: Element>(
        op: BinaryOp,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsView<'a, T>,
    ) -> Call<'c> {
        let (a, b, out) = (span(a), span(b), span(out));
        Call::elementwise(OpKind::Binary(op), T::DTYPE, a.1, &[a.0, b.0, out.0])
    }

    /// [`Gpu::unary`]: `out = op(a)`.
    pub fn unary<'a, T: Element>(op: UnaryOp, a: impl AsView<'a, T>, out: impl AsView<'a, T>) -> Call<'c> {
        let (a, out) = (span(a), span(out));
        Call::elementwise(OpKind::Unary(op), T::DTYPE, a.1, &[a.0, out.0])
    }

    /// [`Gpu::axpby`]: `out = α·a + β·b` (the scales do not change the plan).
    pub fn axpby<'a, T: Element>(a: impl AsView<'a, T>, b: impl AsView<'a, T>, out: impl AsView<'a, T>) -> Call<'c> {
        let (a, b, out) = (span(a), span(b), span(out));
        Call::elementwise(OpKind::Axpby, T::DTYPE, a.1, &[a.0, b.0, out.0])
    }

    /// A built-in operation of `kind` over `n` elements of `dtype` whose
    /// operands start at device addresses `addrs` (`[a, b, out]` for the
    /// two-input kinds, `[a, out]` for the unary ones): for studies of the
    /// choice at alignments no buffer has. The decision depends only on the
    /// addresses' alignment, `n` and the device.
    pub fn elementwise(kind: OpKind, dtype: Dtype, n: usize, addrs: &[u64]) -> Call<'c> {
        Call { what: What::Op { kind, dtype, n, addrs: addrs.to_vec() } }
    }

    /// [`Gpu::glu`]: `out = act(gate) · up`, either form of [`GluIn`].
    pub fn glu<'a, T: Element>(op: GluOp, input: &GluIn<View<'a, T>>, out: impl AsView<'a, T>) -> Call<'c> {
        let out = span(out);
        // The operands as the call checks them: a split input's halves, or why
        // its rows are refused.
        let operands = match input {
            GluIn::Pair { gate, up } if gate.len() != up.len() || gate.len() != out.1 => {
                Err(Error::LengthMismatch { kernel: op.name(), a: gate.len(), b: up.len(), out: out.1 })
            }
            GluIn::Pair { gate, up } => {
                Ok(([(gate.addr(), gate.len()), (up.addr(), up.len()), out], GluRows::flat(out.1)))
            }
            GluIn::Split { x, rows } => GluRows::split(op, *rows).and_then(|s| {
                let (g, u) = split_halves(op, *x, s)?;
                Ok(([(g.addr(), g.len()), (u.addr(), u.len()), out], s))
            }),
        };
        let plan = move |gpu: &Gpu, opts: &Opts, pdl: Pdl| {
            let (spans, shape) = operands?;
            gpu.glu_prepare::<T>(op, spans, shape, opts, pdl).map(|(plan, _)| plan)
        };
        Call { what: What::Choice(Box::new(plan)) }
    }

    /// [`CustomUnary::run`]: a user operation, `out = op(a)`.
    pub fn custom_unary<'a, T: Element>(
        op: &'c CustomUnary<T>,
        a: impl AsView<'a, T>,
        out: impl AsView<'a, T>,
    ) -> Call<'c> {
        let (a, out) = (span(a), span(out));
        Call { what: What::Custom { op: op.custom(), n: a.1, addrs: vec![a.0, out.0] } }
    }

    /// [`CustomBinary::run`]: a user operation, `out = op(a, b)`.
    pub fn custom_binary<'a, T: Element>(
        op: &'c CustomBinary<T>,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsView<'a, T>,
    ) -> Call<'c> {
        let (a, b, out) = (span(a), span(b), span(out));
        Call { what: What::Custom { op: op.custom(), n: a.1, addrs: vec![a.0, b.0, out.0] } }
    }

    /// [`Gpu::norm`]: `op` over the rows of `x` into `y` (read here, not
    /// written).
    pub fn norm<'a, T: Element>(
        op: &Norm<View<'a, T>, ViewMut<'a, T>>,
        x: impl AsView<'a, T>,
        y: impl AsView<'a, T>,
        rows: Rows,
    ) -> Call<'c> {
        let p = op.as_ref().into_parts();
        let span = |v: &View<'_, T>| (v.addr(), v.len());
        let (x, y) = (x.into_view(), y.into_view());
        let spans = NormSpans {
            x: span(&x),
            r: p.residual.map(span),
            w: p.weight.map(span),
            b: p.bias.map(span),
            y: span(&y),
            h: p.h.map(|h| (h.addr(), h.len())),
        };
        let (kind, eps) = (p.op, p.eps);
        let plan = move |gpu: &Gpu, opts: &Opts, pdl: Pdl| {
            let prepared = gpu.norm_prepare::<T>(kind, eps, &spans, rows, opts, pdl)?;
            let plan = prepared.plan;
            let named = || gpu.norm_kernel_name(prepared.family, T::DTYPE, plan).unwrap_or(kind.name());
            let kernel = prepared.launch.as_ref().map_or_else(named, |l| l.name);
            let pdl = plan.uses_pdl(gpu, kind, T::DTYPE, rows, pdl);
            Ok(Plan { kernel, head: None, pdl, norm: Some(plan) })
        };
        Call { what: What::Choice(Box::new(plan)) }
    }

    /// [`TypedKernel::launch`] with the geometry `l`.
    pub fn typed<K: KernelSig>(kernel: &'c TypedKernel<K>, l: Launch) -> Call<'c> {
        let (gpu, name, twin) = (kernel.gpu(), kernel.name(), kernel.has_pdl());
        Call { what: What::Typed { gpu, name, twin, threads: threads_of(&l) } }
    }
}

impl Gpu {
    /// What `call` would launch if queued on `stream` with `opts`: the kernel
    /// that does the bulk of the work (the PDL twin when that is what runs),
    /// an unaligned head's scalar kernel, and whether it is launched with
    /// programmatic dependent launch. PDL follows the call's rule:
    /// `opts.pdl`, else the stream's setting; an explicit pattern or launch
    /// shape launches plainly. Nothing is queued.
    ///
    /// Errors: `stream` is of another `Gpu`; an explicit pattern that has no
    /// kernel for the dtype or needs a newer device; a gated activation's
    /// rows that the call refuses; a typed kernel of another `Gpu`.
    pub fn plan(&self, call: Call<'_>, stream: &Stream, opts: &Opts) -> Result<Plan> {
        self.check_stream_owned("plan", stream)?;
        let pdl = opts.pdl.unwrap_or(stream.pdl());
        match call.what {
            What::Op { kind, dtype, n, addrs } => self.plan_op(kind, dtype, n, &addrs, opts, pdl),
            What::Choice(plan) => plan(self, opts, pdl),
            What::Custom { op, n, addrs } => {
                if !Arc::ptr_eq(&op.gpu().shared, &self.shared) {
                    return Err(Error::ForeignHandle { kernel: op.name(), what: "module" });
                }
                Ok(op.plan(n, &addrs, pdl))
            }
            What::Typed { gpu, name, twin, threads } => {
                if !Arc::ptr_eq(&gpu.shared, &self.shared) {
                    return Err(Error::ForeignHandle { kernel: name, what: "module" });
                }
                let pdl = twin && pdl.pays(self.info(), threads, 1);
                Ok(Plan { kernel: name, head: None, pdl, norm: None })
            }
        }
    }

    /// The plan of a built-in element-wise operation: the decision
    /// [`Gpu::binary`] and the others make.
    pub(crate) fn plan_op(
        &self,
        kind: OpKind,
        dtype: Dtype,
        n: usize,
        addrs: &[u64],
        opts: &Opts,
        pdl: Pdl,
    ) -> Result<Plan> {
        if let Some(p) = opts.pattern {
            return Ok(Plan::one(self.op_kernel_here(kind, dtype, p)?.name));
        }
        let user = opts.shape.is_some();
        if kind == OpKind::Binary(BinaryOp::Add) {
            return Ok(self.add_plan(dtype, n, addrs, pdl, user));
        }
        Ok(match self.op_decide(kind, dtype, n, addrs, pdl, user) {
            OpChoice::Twin(k) => Plan { kernel: k.name, head: None, pdl: true, norm: None },
            OpChoice::Split(AutoSplit::Pack) => Plan::one(self.auto_pack(kind, dtype).name),
            OpChoice::Split(AutoSplit::Peel(head)) => {
                let head = Some((self.auto_scalar(kind, dtype).name, head));
                Plan { kernel: self.auto_pack(kind, dtype).name, head, pdl: false, norm: None }
            }
            OpChoice::Split(AutoSplit::Scalar) => Plan::one(self.auto_scalar(kind, dtype).name),
        })
    }
}
