//! What the norms' GPU tests share: one case (operation, dtype, layout, plan,
//! data) run on the GPU with canaries before, after and between the rows of
//! every output, and compared bit for bit with the CPU reference's replay of
//! the plan that ran.
#![allow(dead_code)]

use gpukern::half::{bf16, f16};
use gpukern::reference::norms as rn;
use gpukern::{Dtype, Element, Gpu, Norm, NormOp, NormPlan, NormStrategy, OpPattern, Opts, Pdl, Rows};
use rand::{Rng, SeedableRng};

/// Elements after each output that must never be written.
pub const CANARY: usize = 40;
/// A finite poison: an element the kernel failed to write keeps it.
pub const POISON: u32 = 0x5a5a_1234;

/// What fills x (and the residual).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Uniform in ±4 (weights and bias in ±2).
    Random,
    /// Every element the same value.
    Equal,
    /// All `+0.0`.
    Zero,
    /// Random with a NaN in each row.
    WithNan,
    /// Random with `+inf` in odd rows and `-inf` in even rows.
    WithInf,
    /// Random in ±4 with some elements at the dtype's largest finite values.
    NearMax,
    /// Random with a quarter of each row at `-inf` (masked attention).
    Masked,
}

impl Fill {
    /// Every fill.
    pub const ALL: [Fill; 7] =
        [Fill::Random, Fill::Equal, Fill::Zero, Fill::WithNan, Fill::WithInf, Fill::NearMax, Fill::Masked];
}

/// One case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub op: NormOp,
    pub rows: usize,
    pub cols: usize,
    /// Extra elements between rows (pitch = cols + gap), input and output.
    pub gaps: (usize, usize),
    /// Start offsets (elements) of x (and residual), y (and h), weight and bias.
    pub offsets: (usize, usize, usize),
    pub plan: Option<NormPlan>,
    pub scalar: bool,
    /// The call's PDL setting (`None`: the stream's, a plain stream's `Auto`).
    pub pdl: Option<Pdl>,
    pub fill: Fill,
    pub eps: f32,
    pub seed: u64,
}

impl Case {
    /// `op` over `rows` contiguous rows of `cols` at offset 0, random data,
    /// the automatic plan and the stream's PDL setting, eps 1e-5.
    pub fn base(op: NormOp, rows: usize, cols: usize, seed: u64) -> Case {
        Case {
            op,
            rows,
            cols,
            gaps: (0, 0),
            offsets: (0, 0, 0),
            plan: None,
            scalar: false,
            pdl: None,
            fill: Fill::Random,
            eps: 1e-5,
            seed,
        }
    }
}

fn largest(dtype: Dtype) -> f32 {
    match dtype {
        Dtype::F32 => f32::MAX,
        Dtype::F16 => 65504.0,
        Dtype::Bf16 => 3.3895314e38,
    }
}

/// The input rows (span elements after the offset) of a case.
fn input<T: Element>(c: &Case, pitch: usize, rng: &mut impl Rng) -> Vec<T> {
    let span = (c.rows - 1) * pitch + c.cols;
    let mut v: Vec<T> = (0..c.offsets.0 + span + CANARY).map(|_| rn::narrow(rng.gen_range(-4.0f32..4.0))).collect();
    for i in 0..c.rows {
        for k in 0..c.cols {
            let at = c.offsets.0 + i * pitch + k;
            let special = match c.fill {
                Fill::Random => None,
                Fill::Equal => Some(1.75),
                Fill::Zero => Some(0.0),
                Fill::WithNan => (k == (i * 7) % c.cols).then_some(f32::NAN),
                Fill::WithInf => {
                    (k == (i * 5) % c.cols).then_some(if i % 2 == 1 { f32::INFINITY } else { f32::NEG_INFINITY })
                }
                Fill::NearMax => (k % 3 == 0).then(|| largest(T::DTYPE) * if k % 2 == 0 { 1.0 } else { -0.999 }),
                Fill::Masked => (k % 4 == 1).then_some(f32::NEG_INFINITY),
            };
            if let Some(s) = special {
                v[at] = rn::narrow(s);
            }
        }
    }
    v
}

/// Runs `c` on the GPU and compares with the CPU reference of the plan that
/// ran: every output element bit for bit (NaN as any NaN), every other
/// element of the output buffers still the poison. Returns the plan.
pub fn run<T: Element>(gpu: &Gpu, c: &Case) -> Result<NormPlan, String> {
    run_bits::<T>(gpu, c).map(|r| r.0)
}

/// As [`run`], and returns the whole output buffers `y` and `h` (canaries
/// included) as bits, for comparisons between runs that are exact for NaN
/// payloads too.
pub fn run_bits<T: Element>(gpu: &Gpu, c: &Case) -> Result<(NormPlan, Vec<u32>, Vec<u32>), String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(c.seed);
    let (xp, yp) = (c.cols + c.gaps.0, c.cols + c.gaps.1);
    let rows = Rows { rows: c.rows, cols: c.cols, x_pitch: xp, y_pitch: yp };
    let x = input::<T>(c, xp, &mut rng);
    let r = input::<T>(c, xp, &mut rng);
    let w: Vec<T> = (0..c.offsets.2 + c.cols).map(|_| rn::narrow(rng.gen_range(-2.0f32..2.0))).collect();
    let b: Vec<T> = (0..c.offsets.2 + c.cols).map(|_| rn::narrow(rng.gen_range(-2.0f32..2.0))).collect();
    let yspan = (c.rows - 1) * yp + c.cols;
    let poison = vec![T::from_bits32(POISON); c.offsets.1 + yspan + CANARY];
    let e = |e: gpukern::Error| e.to_string();
    let (dx, dr, dw, db) = (
        gpu.upload(&x).map_err(e)?,
        gpu.upload(&r).map_err(e)?,
        gpu.upload(&w).map_err(e)?,
        gpu.upload(&b).map_err(e)?,
    );
    let (mut dy, mut dh) = (gpu.upload(&poison).map_err(e)?, gpu.upload(&poison).map_err(e)?);
    let s = gpu.stream().map_err(e)?;
    let xv = dx.slice(c.offsets.0..).map_err(e)?;
    let rv = dr.slice(c.offsets.0..).map_err(e)?;
    let wv = dw.slice(c.offsets.2..).map_err(e)?;
    let bv = db.slice(c.offsets.2..).map_err(e)?;
    let (ys, ye) = (c.offsets.1, c.offsets.1 + yspan);
    let hv = dh.slice_mut(ys..ye).map_err(e)?;
    let op = match c.op {
        NormOp::Rms => Norm::rms(wv, c.eps),
        NormOp::AddRms => Norm::add_rms(rv, hv, wv, c.eps),
        NormOp::Layer => Norm::layer(wv, bv, c.eps),
        NormOp::AddLayer => Norm::add_layer(rv, hv, wv, bv, c.eps),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    let mut opts = if c.scalar { Opts::auto().pattern(OpPattern::Scalar) } else { Opts::auto() };
    (opts.norm_plan, opts.pdl) = (c.plan, c.pdl);
    let plan = gpu.norm(op, xv, dy.slice_mut(ys..ye).map_err(e)?, rows, &opts, &s).map_err(e)?;
    s.synchronize().map_err(e)?;
    let (got_y, got_h) = (dy.to_vec().map_err(e)?, dh.to_vec().map_err(e)?);
    let (wh, bh) = (&w[c.offsets.2..], &b[c.offsets.2..]);
    let hop = match c.op {
        NormOp::Rms => Norm::rms(wh, c.eps),
        NormOp::AddRms => Norm::add_rms(&r[c.offsets.0..], (), wh, c.eps),
        NormOp::Layer => Norm::layer(wh, bh, c.eps),
        NormOp::AddLayer => Norm::add_layer(&r[c.offsets.0..], (), wh, bh, c.eps),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    let want = rn::norm(hop, &x[c.offsets.0..], rows, plan.order(T::DTYPE, c.cols));
    compare("y", &got_y, &want.y, c, yp)?;
    match want.h {
        Some(h) => compare("h", &got_h, &h, c, yp)?,
        None => compare("h (unused)", &got_h, &[], &Case { rows: 0, ..*c }, yp)?,
    }
    let bits = |v: Vec<T>| v.into_iter().map(|e| e.to_bits32()).collect();
    Ok((plan, bits(got_y), bits(got_h)))
}

/// `got` (the whole output buffer) against `want` (rows back to back).
fn compare<T: Element>(what: &str, got: &[T], want: &[T], c: &Case, pitch: usize) -> Result<(), String> {
    let poison = T::from_bits32(POISON);
    for (at, g) in got.iter().enumerate() {
        let rel = at.checked_sub(c.offsets.1);
        let cell = rel.filter(|r| r / pitch < c.rows && r % pitch < c.cols).map(|r| (r / pitch, r % pitch));
        let expected = match cell {
            Some((i, k)) => want[i * c.cols + k],
            None => poison,
        };
        if !g.same_as(expected) {
            return Err(format!("{what}[{at}] (row/col {cell:?}): got {g:?}, want {expected:?} in {c:?}"));
        }
    }
    Ok(())
}

/// The plans worth checking for rows of `cols` of `dtype`: the automatic one,
/// a warp, a block of each kind, splits into many short segments,
/// clusters (sm_90) of 2 to 16 blocks, and the pipelined plans (sm_90).
pub fn plans(dtype: Dtype, cols: usize) -> Vec<Option<NormPlan>> {
    let mut p = vec![None];
    let cands = [
        NormPlan { strategy: NormStrategy::Warp, block: 64, k: 1 },
        NormPlan { strategy: NormStrategy::Warp, block: 256, k: 8 },
        NormPlan { strategy: NormStrategy::Block, block: 128, k: 2 },
        NormPlan { strategy: NormStrategy::Block, block: 256, k: 8 },
        NormPlan { strategy: NormStrategy::Block, block: 512, k: 1 },
        NormPlan { strategy: NormStrategy::Split, block: 32, k: 1 },
        NormPlan { strategy: NormStrategy::Split, block: 96, k: 4 },
        NormPlan { strategy: NormStrategy::Cluster, block: 32, k: 2 },
        NormPlan { strategy: NormStrategy::Cluster, block: 64, k: 4 },
        // Pipelined (sm_90, aligned operands; else their block or warp plan
        // runs, and is what the replay follows).
        NormPlan { strategy: NormStrategy::Pipe, block: 128, k: 2 },
        NormPlan { strategy: NormStrategy::Pipe, block: 256, k: 8 },
        NormPlan { strategy: NormStrategy::PipeWarp, block: 64, k: 1 },
        NormPlan { strategy: NormStrategy::PipeWarp, block: 256, k: 8 },
    ];
    p.extend(cands.into_iter().filter(|c| c.check(NormOp::Rms, dtype, cols).is_ok()).map(Some));
    p
}

/// Runs `c` for its dtype.
pub fn run_dtype(gpu: &Gpu, dtype: Dtype, c: &Case) -> Result<NormPlan, String> {
    run_dtype_bits(gpu, dtype, c).map(|r| r.0)
}

/// [`run_bits`] for `c`'s dtype.
pub fn run_dtype_bits(gpu: &Gpu, dtype: Dtype, c: &Case) -> Result<(NormPlan, Vec<u32>, Vec<u32>), String> {
    match dtype {
        Dtype::F32 => run_bits::<f32>(gpu, c),
        Dtype::F16 => run_bits::<f16>(gpu, c),
        Dtype::Bf16 => run_bits::<bf16>(gpu, c),
    }
}
