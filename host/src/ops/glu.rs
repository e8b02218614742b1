//! The gated activations ([`Gpu::glu`]): `out =
//! act(gate) · up` for `act` ∈ [`GluOp`] (SiLU, GELU, GELU's tanh form), in
//! f32, f16 and bf16: `act` is the activation's f32 function (the one the
//! f32 activation kernels apply), and `act(gate) · up` is rounded once to the
//! element type (`gpukern_device::activations::Glu`); [`crate::reference`]'s
//! `glu_one` gives the same bits on the CPU. One read of each operand, one
//! write: a SwiGLU is one kernel instead of `silu` then `mul`.
//!
//! [`GluIn::Split`] reads rows `[gate | up]` of one tensor (a fused
//! gate-and-up projection's output, row length `2·cols`) through the pitch,
//! with no copy.
//!
//! ```no_run
//! use gpukern::{half::bf16, Gpu, GluIn, GluOp, Rows};
//! let gpu = Gpu::new(0)?;
//! let s = gpu.stream()?;
//! let (rows, d) = (4, 11008);
//! let x = gpu.upload(&vec![bf16::from_f32(0.5); rows * 2 * d])?; // [gate | up] rows
//! let mut y = gpu.alloc::<bf16>(rows * d)?;
//! let layout = Rows { rows, cols: d, x_pitch: 2 * d, y_pitch: d };
//! gpu.glu(GluOp::Silu, GluIn::split(&x, layout), &mut y, &s)?;
//! let (g, u) = (gpu.upload(&vec![bf16::ONE; 8])?, gpu.upload(&vec![bf16::ONE; 8])?);
//! let mut z = gpu.alloc::<bf16>(8)?;
//! gpu.glu(GluOp::Gelu, GluIn::pair(&g, &u), &mut z, &s)?;
//! # Ok::<(), gpukern::Error>(())
//! ```

use kernels_gpu::glu::{glu_kernel, glu_pdl_kernel, GluKernel, GluOp};
use kernels_gpu::launch::grid_for;
use kernels_gpu::ops::OpPattern;

use crate::device::gpu::{Gpu, Stream};
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::opts::{Opts, Plan};
use crate::memory::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::norms::Rows;
use crate::raw::{self, GluLaunch};

/// The pitched rows a gated activation walks: `rows` rows of `n`, each
/// operand's rows `pitches[i]` elements apart (gate, up, out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GluRows {
    pub rows: usize,
    pub n: usize,
    pub pitches: [usize; 3],
}

impl GluRows {
    /// One row of `n` (the element-wise form).
    pub(crate) fn flat(n: usize) -> GluRows {
        GluRows { rows: 1, n, pitches: [n; 3] }
    }

    /// The `[gate | up]` rows of `rows`: gate at `x[i·x_pitch ..]`, up `cols`
    /// further, out at `y[i·y_pitch ..]`. Errors on pitches that would
    /// overlap the halves or the output rows.
    pub(crate) fn split(op: GluOp, rows: Rows) -> Result<GluRows> {
        let (d, xp, yp) = (rows.cols, rows.x_pitch, rows.y_pitch);
        if rows.rows > 1 && (xp < 2 * d || yp < d) {
            let detail = format!("pitches {xp} and {yp}: the rows [gate | up] need 2·{d} and the output {d}");
            return Err(Error::Shape { kernel: op.name(), detail });
        }
        Ok(GluRows { rows: rows.rows, n: d, pitches: [xp, xp, yp] })
    }

    /// Elements an operand with pitch `p` spans.
    pub(crate) fn extent(self, p: usize) -> usize {
        if self.rows == 0 || self.n == 0 {
            0
        } else {
            (self.rows - 1).saturating_mul(p).saturating_add(self.n)
        }
    }
}

/// What a gated activation reads: two operands element by element, or the
/// rows `[gate | up]` of one (a fused gate-and-up projection's output). One
/// type for every path, generic in how an operand is held: `View<'a, T>` on
/// a stream ([`Gpu::glu`], built with [`GluIn::pair`] and [`GluIn::split`]),
/// [`crate::Slot<T>`] in a graph ([`crate::GraphBuilder::glu`], built with
/// the variants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GluIn<R> {
    /// `gate` and `up`, each as long as the output.
    Pair {
        /// The activation's input.
        gate: R,
        /// The factor.
        up: R,
    },
    /// `rows.rows` rows, `rows.cols` outputs each: input row `i` at
    /// `x[i·rows.x_pitch ..]` holds the gate's `cols` elements then the up
    /// projection's, output row `i` at `out[i·rows.y_pitch ..]`. The halves
    /// are read in place (no copy); the 128-bit kernels need 16-byte aligned
    /// rows (`cols` and both pitches whole packs: multiples of 4 f32 or 8
    /// f16/bf16).
    Split {
        /// The `[gate | up]` rows.
        x: R,
        /// The row layout (`x_pitch` at least `2·cols` with more than one row).
        rows: Rows,
    },
}

impl<'a, T: Element> GluIn<View<'a, T>> {
    /// [`GluIn::Pair`] from any read operand (`&DeviceVec`, `View`, …).
    pub fn pair(gate: impl AsView<'a, T>, up: impl AsView<'a, T>) -> Self {
        GluIn::Pair { gate: gate.into_view(), up: up.into_view() }
    }

    /// [`GluIn::Split`] from any read operand.
    pub fn split(x: impl AsView<'a, T>, rows: Rows) -> Self {
        GluIn::Split { x: x.into_view(), rows }
    }
}

impl Gpu {
    /// Queues `out = act(gate) · up` on `stream`, with the automatic choice:
    /// 128-bit packs on 16-byte aligned operands (bf16 on sm_90: the kernel
    /// with `cvt.rn.bf16.f32`; its PDL twin where the stream's [`Pdl`]
    /// setting says so), else the scalar kernel.
    ///
    /// Errors (nothing queued): a [`GluIn::Pair`] whose lengths differ from
    /// each other or the output's; a [`GluIn::Split`] whose `x_pitch` is
    /// below `2·cols` or `y_pitch` below `cols` (with more than one row), with
    /// `rows` at or above 2^32, or a view shorter than its rows; buffers or
    /// stream of another `Gpu`. Empty: nothing queued.
    pub fn glu<'a, T: Element>(
        &self,
        op: GluOp,
        input: GluIn<View<'a, T>>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.glu_opts(op, input, out, stream, &Opts::auto()).map(|_| ())
    }

    /// [`Gpu::glu`] with options (an explicit pattern, launch shape or PDL
    /// setting, as [`Gpu::binary_opts`]); returns what it launched. Errors
    /// also when an operand is not aligned as the pattern needs, or the
    /// pattern has no kernel here (`PackSm90`: bf16 on sm_90).
    pub fn glu_opts<'a, T: Element>(
        &self,
        op: GluOp,
        input: GluIn<View<'a, T>>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
        opts: &Opts,
    ) -> Result<Plan> {
        self.check_stream_owned(op.name(), stream)?;
        let out = out.into_view_mut();
        let (gate, up, shape) = match input {
            GluIn::Pair { gate, up } => {
                if gate.len() != up.len() || gate.len() != out.len() {
                    let (a, b, out) = (gate.len(), up.len(), out.len());
                    return Err(Error::LengthMismatch { kernel: op.name(), a, b, out });
                }
                (gate, up, GluRows::flat(out.len()))
            }
            GluIn::Split { x, rows } => {
                let shape = GluRows::split(op, rows)?;
                let (gate, up) = split_halves(op, x, shape)?;
                (gate, up, shape)
            }
        };
        let pdl = opts.pdl.unwrap_or(stream.pdl());
        self.glu_on(op, gate, up, out, shape, opts, pdl, stream.raw())
    }

    /// The one launch path: a call on a stream, on cudarc's stream, or a
    /// graph's capture (the caller checked the stream and resolved `pdl`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn glu_on<'a, T: Element>(
        &self,
        op: GluOp,
        gate: View<'a, T>,
        up: View<'a, T>,
        mut out: ViewMut<'a, T>,
        shape: GluRows,
        opts: &Opts,
        pdl: Pdl,
        queue: raw::Queue<'_>,
    ) -> Result<Plan> {
        self.check_buffers_owned(op.name(), [gate.owner(), up.owner(), out.owner()])?;
        let spans = [(gate.addr(), gate.len()), (up.addr(), up.len()), (out.addr(), out.len())];
        let (plan, launch) = self.glu_prepare::<T>(op, spans, shape, opts, pdl)?;
        let Some(l) = launch else { return Ok(plan) };
        let _live = self.shared.bind()?;
        // SAFETY: `l.func` was resolved by the name of a row of
        // `kernels_gpu::glu`'s tables that `glu_prepare` chose from this
        // Gpu's own modules, with that row's alignment and lanes; a PDL twin
        // (`l.pdl`) only where `Pdl::pays` saw sm_90.
        unsafe { raw::launch_glu(&l, &gate, &up, &mut out, queue) }.map_err(|e| self.shared.fault_of(e))?;
        Ok(plan)
    }

    /// Every check and choice of a gated activation over operands at `spans`
    /// (gate, up, out: address and elements of `T`), and the launch it makes
    /// (`None`: nothing to do). The owners are the caller's to check.
    pub(crate) fn glu_prepare<T: Element>(
        &self,
        op: GluOp,
        spans: [(u64, usize); 3],
        shape: GluRows,
        opts: &Opts,
        pdl: Pdl,
    ) -> Result<(Plan, Option<GluLaunch>)> {
        let name = op.name();
        let cfg = opts.shape.unwrap_or_default();
        cfg.check(name)?;
        if shape.rows > u32::MAX as usize {
            return Err(Error::Shape { kernel: name, detail: format!("{} rows: at most 2^32 - 1", shape.rows) });
        }
        for (what, ((_, len), p)) in ["gate", "up", "out"].into_iter().zip(spans.into_iter().zip(shape.pitches)) {
            if len < shape.extent(p) {
                let detail =
                    format!("{what} has {len} elements, {} rows of {} need {}", shape.rows, shape.n, shape.extent(p));
                return Err(Error::Shape { kernel: name, detail });
            }
        }
        let k = match opts.pattern {
            Some(p) => self.glu_kernel_here(op, T::DTYPE, p)?,
            None => self.glu_auto(op, T::DTYPE, spans, shape),
        };
        // The twin of the automatic pack kernel, as the element-wise
        // operations choose it (an explicit pattern or shape launches plainly).
        let auto = opts.pattern.is_none() && opts.shape.is_none() && k.pattern != OpPattern::Scalar;
        let total = shape.rows.saturating_mul(shape.n);
        let twin =
            auto.then(|| glu_pdl_kernel(op, T::DTYPE)).flatten().filter(|_| pdl.pays(self.info(), total, k.lanes()));
        let launched = twin.unwrap_or(k);
        let plan = Plan { kernel: launched.name, head: None, pdl: twin.is_some(), norm: None };
        if total == 0 {
            return Ok((plan, None));
        }
        let l = GluLaunch {
            name: launched.name,
            func: self.shared.func(launched.name)?,
            rows: shape.rows as u32,
            n: shape.n as u64,
            pitches: shape.pitches.map(|p| p as u64),
            grid: (grid_for(shape.n as u64, k.lanes(), cfg.block, cfg.max_grid), shape.rows.min(65535) as u32),
            block: cfg.block,
            align: k.align(),
            lanes: k.lanes(),
            pdl: twin.is_some(),
        };
        raw::check_glu(&l, spans, std::mem::size_of::<T>() as u64)?;
        Ok((plan, Some(l)))
    }

    /// The kernel of an explicit pattern, or why it cannot run here.
    fn glu_kernel_here(&self, op: GluOp, dtype: kernels_gpu::Dtype, p: OpPattern) -> Result<&'static GluKernel> {
        let Some(k) = glu_kernel(op, dtype, p) else {
            let detail = format!("no {p:?} kernel for {}", dtype.name());
            return Err(Error::Shape { kernel: op.name(), detail });
        };
        if k.needs_sm90() && !self.info().has_sm90() {
            let (major, minor) = self.info().compute_capability;
            return Err(Error::Unsupported { kernel: k.name, needs: "9.0", has: format!("{major}.{minor}") });
        }
        Ok(k)
    }

    /// The automatic kernel: packs when every row of every operand starts on
    /// 16 bytes (for bf16 on sm_90, the one with the hardware's rounding),
    /// else elements one by one.
    fn glu_auto(
        &self,
        op: GluOp,
        dtype: kernels_gpu::Dtype,
        spans: [(u64, usize); 3],
        s: GluRows,
    ) -> &'static GluKernel {
        let lanes = OpPattern::Pack.lanes(dtype) as usize;
        let rows_aligned = s.rows <= 1 || s.pitches.iter().all(|p| p.is_multiple_of(lanes));
        let aligned = rows_aligned && spans.iter().all(|(a, _)| a.is_multiple_of(16));
        let pattern = match (aligned, dtype == kernels_gpu::Dtype::Bf16 && self.info().has_sm90()) {
            (false, _) => OpPattern::Scalar,
            (true, true) => OpPattern::PackSm90,
            (true, false) => OpPattern::Pack,
        };
        // Every (op, dtype) has these three (the table's own test says so).
        glu_kernel(op, dtype, pattern).unwrap_or(&kernels_gpu::glu::GLU_KERNELS[0])
    }
}

/// Where the up half of `[gate | up]` rows in `x` (`x_len` elements) starts,
/// and how long each half's rows run, or why `x` is too short.
pub(crate) fn halves(op: GluOp, x_len: usize, s: GluRows) -> Result<(usize, usize)> {
    let need = s.extent(s.pitches[0]).saturating_add(if s.rows == 0 { 0 } else { s.n });
    if x_len < need {
        let detail = format!("x has {x_len} elements, {} rows [gate | up] of 2·{} need {need}", s.rows, s.n);
        return Err(Error::Shape { kernel: op.name(), detail });
    }
    Ok((s.n.min(need), s.extent(s.pitches[0])))
}

/// The gate and up halves of `[gate | up]` rows in `x`: views from `x`'s
/// start and from `cols` further on, each as long as its rows need.
pub(crate) fn split_halves<T: Element>(op: GluOp, x: View<'_, T>, s: GluRows) -> Result<(View<'_, T>, View<'_, T>)> {
    let (up, len) = halves(op, x.len(), s)?;
    Ok((x.slice(..len)?, x.slice(up..up + len)?))
}
