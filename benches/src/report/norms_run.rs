//! One norm call of the `norms` section and its plan study ([`Bufs`],
//! [`run_with`]), and the section's small shapes as 16 back-to-back calls of
//! one norm from an idle GPU, µs per call (events around one launch measure
//! the host): plain (PDL off), with PDL on (each call's twin overlaps its
//! launch with its predecessor's run), and as one replay of a graph of the
//! 16 calls (the builder's default PDL setting, so on sm_90 its edges are
//! programmatic). torch's columns are the same 16 calls eager and as a CUDA
//! graph (`peers_norms.py`).

use gpukern::{Element, Gpu, Norm, NormOp, NormPlan, Opts, Pdl, Rows, Stream};

use crate::median;

/// Device buffers of one (dtype, shape).
pub(super) struct Bufs<T: Element> {
    pub(super) x: gpukern::DeviceVec<T>,
    pub(super) r: gpukern::DeviceVec<T>,
    pub(super) w: gpukern::DeviceVec<T>,
    pub(super) b: gpukern::DeviceVec<T>,
    pub(super) y: gpukern::DeviceVec<T>,
    pub(super) h: gpukern::DeviceVec<T>,
    pub(super) host: (Vec<T>, Vec<T>, Vec<T>, Vec<T>),
}

pub(super) fn run<T: Element>(
    gpu: &Gpu,
    op: NormOp,
    bufs: &mut Bufs<T>,
    rows: Rows,
    s: &Stream,
) -> gpukern::Result<gpukern::NormPlan> {
    run_plan(gpu, op, bufs, rows, None, s)
}

pub(super) fn run_plan<T: Element>(
    gpu: &Gpu,
    op: NormOp,
    bufs: &mut Bufs<T>,
    rows: Rows,
    plan: Option<NormPlan>,
    s: &Stream,
) -> gpukern::Result<NormPlan> {
    let mut opts = Opts::auto();
    opts.norm_plan = plan;
    run_with(gpu, op, bufs, rows, &opts, s)
}

pub(super) fn run_with<T: Element>(
    gpu: &Gpu,
    op: NormOp,
    bufs: &mut Bufs<T>,
    rows: Rows,
    opts: &Opts,
    s: &Stream,
) -> gpukern::Result<NormPlan> {
    let (w, b) = (bufs.w.view(), bufs.b.view());
    let n = match op {
        NormOp::Rms => Norm::rms(w, 1e-6),
        NormOp::AddRms => Norm::add_rms(bufs.r.view(), bufs.h.view_mut(), w, 1e-6),
        NormOp::Layer => Norm::layer(w, b, 1e-5),
        NormOp::AddLayer => Norm::add_layer(bufs.r.view(), bufs.h.view_mut(), w, b, 1e-5),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    gpu.norm(n, &bufs.x, &mut bufs.y, rows, opts, s)
}

/// Timed rounds per figure (the median is kept).
const ROUNDS: usize = 31;

/// µs per call of the three ways.
pub(super) struct Chain16 {
    pub plain: f64,
    pub pdl: f64,
    pub graph: f64,
}

/// The median over [`ROUNDS`] of `work` on `s` from an idle GPU, per call.
fn per_call(s: &Stream, mut work: impl FnMut(&Stream) -> gpukern::Result<()>) -> gpukern::Result<f64> {
    let mut t = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        s.synchronize()?;
        t.push(s.time(&mut work)? as f64);
    }
    Ok(median(&mut t) * 1e3 / 16.0)
}

/// The three figures of `op` over `rows` (the automatic plan).
pub(super) fn chain16<T: Element>(
    gpu: &Gpu,
    op: NormOp,
    bufs: &mut Bufs<T>,
    rows: Rows,
    s: &Stream,
) -> gpukern::Result<Chain16> {
    let mut calls = |pdl: Pdl| {
        let o = Opts::auto().pdl(pdl);
        per_call(s, |s| (0..16).try_for_each(|_| run_with(gpu, op, bufs, rows, &o, s).map(|_| ())))
    };
    let (plain, pdl) = (calls(Pdl::Off)?, calls(Pdl::On)?);
    let mut g = gpu.graph();
    let (x, r, w, b) = (g.input(&bufs.x)?, g.input(&bufs.r)?, g.input(&bufs.w)?, g.input(&bufs.b)?);
    let (y, h) = (g.output(&mut bufs.y)?, g.output(&mut bufs.h)?);
    let n = match op {
        NormOp::Rms => Norm::rms(w, 1e-6),
        NormOp::AddRms => Norm::add_rms(r, h, w, 1e-6),
        NormOp::Layer => Norm::layer(w, b, 1e-5),
        NormOp::AddLayer => Norm::add_layer(r, h, w, b, 1e-5),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    for _ in 0..16 {
        g.norm(n, x, y, rows, &Opts::auto())?;
    }
    let graph = g.build()?;
    let graph_us = per_call(s, |s| graph.launch(s))?;
    Ok(Chain16 { plain, pdl, graph: graph_us })
}
