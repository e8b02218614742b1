//! What the norms' accuracy tests share: rows drawn on a grid or with full
//! precision, the error of the CPU replay (the GPU's bits) against f64 for
//! every plan's order, and the bounds, as functions of each row's conditions.
#![allow(dead_code)]

use gpukern::half::{bf16, f16};
use gpukern::reference::norms as rn;
use gpukern::{Dtype, Element, Norm, NormOp, NormPlan, NormStrategy, Rows};
use rand::{Rng, SeedableRng};

/// How the inputs are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// `gen_range` of f32: values on a grid of `(hi - lo) · 2^-23`, coarser
    /// than an ulp near the range's ends (so `x - max` is often exact).
    Grid,
    /// A uniform f64 rounded to the type: every significand bit random.
    Full,
}

/// The input range `lo..hi` (x and the residual; weight and bias in ±2).
pub type Range = (f32, f32);

/// The ranges measured: ±4, ±100 and an offset range (a large mean over a
/// small spread: LayerNorm's hard case, softmax's near-equal values).
pub const RANGES: [Range; 3] = [(-4.0, 4.0), (-100.0, 100.0), (95.0, 105.0)];

/// What a row's bound depends on (of the values normalised: `h` for add_rms).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cond {
    /// `max - min` of the row.
    pub spread: f64,
    /// `max |x| / σ` (σ the row's standard deviation; 1 when σ is 0).
    pub offset: f64,
    /// Segments the plan cuts the row into, combined in sequence (1: whole).
    pub segs: u32,
}

impl Cond {
    fn of(v: &[f64]) -> Cond {
        let n = v.len() as f64;
        let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &e| (a.min(e), b.max(e)));
        let mean = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|e| (e - mean) * (e - mean)).sum::<f64>() / n).sqrt();
        let big = v.iter().fold(0.0f64, |a, e| a.max(e.abs()));
        Cond { spread: hi - lo, offset: if sd > 0.0 { big / sd } else { 1.0 }, segs: 1 }
    }
}

/// One measurement: the worst error (ulps) and the worst ratio of error to
/// bound over the rows and plans, with the row conditions where each was.
#[derive(Clone, Copy, Debug, Default)]
pub struct Worst {
    pub err: f64,
    pub err_cond: Cond,
    pub ratio: f64,
    /// Softmax f32: the error against f64 with `x - max` rounded as the
    /// kernel rounds it (its ratio to [`softmax_kept_bound`] is in `ratio`).
    pub kept: f64,
}

impl Worst {
    pub fn merge(&mut self, o: Worst) {
        if o.err >= self.err {
            (self.err, self.err_cond) = (o.err, o.err_cond);
        }
        self.ratio = self.ratio.max(o.ratio);
        self.kept = self.kept.max(o.kept);
    }
}

/// The square root of the segments a plan combines in sequence: the growth
/// of a sum of that many rounded terms (on random rows; the worst case is
/// linear).
fn seq(c: Cond) -> f64 {
    (c.segs as f64).sqrt()
}

/// The f32 bound (ulps of `y`; of `max(|y|, 1)` for layer_norm and
/// log_softmax) on rows with the conditions `c` (`segs` as the plans of
/// [`plans`] cut rows of up to 2^24: at most 8,193 segments), from the
/// measured maxima with a margin:
/// * rms_norm, add_rms_norm: `4 + 0.45·√segs`: the sum of squares, its
///   segments added in sequence.
/// * layer_norm: `(8 + 2·√segs) · (1 + offset / 4)`: the mean, rounded near
///   `max |x|`, is off by some ulps of it, which the division by σ magnifies;
///   the variance's segments are added in sequence.
/// * softmax: [`softmax_kept_bound`] plus `min(spread, 64)`: `x - max`,
///   rounded in f32, is off by up to half an ulp of `|x - max| <= spread`,
///   which `exp` turns into up to `2^⌊log2 |x - max|⌋ <= |x - max|` ulps of
///   `y`; below `x - max = -87.3` `y` is subnormal and the error falls, so
///   it stays under 64.
/// * log_softmax: `1.6 + 0.01·√segs`.
pub fn bound_f32(op: NormOp, c: Cond) -> f64 {
    let q = seq(c);
    match op {
        NormOp::Rms | NormOp::AddRms => 4.0 + 0.45 * q,
        NormOp::Layer | NormOp::AddLayer => (8.0 + 2.0 * q) * (1.0 + c.offset / 4.0),
        NormOp::Softmax => softmax_kept_bound(c) + c.spread.min(64.0),
        NormOp::LogSoftmax => 1.6 + 0.01 * q,
    }
}

/// f32 softmax against f64 from the kernel's `x - max` (`fl(x - m_s) +
/// fl(m_s - m)`, see `softmax_kept`): `4.5 + 0.8·√segs`, what the
/// exponentials, the sum of `Z` (its segments in sequence) and `1/Z` add.
pub fn softmax_kept_bound(c: Cond) -> f64 {
    4.5 + 0.8 * seq(c)
}

/// The bound of `op` in `dtype` on rows with the conditions `c`: f32's
/// [`bound_f32`]; f16 and bf16: their final rounding (0.5 ulp) of an f32
/// result off by up to [`bound_f32`] f32 ulps (2^-13 of an f16 ulp each,
/// 2^-16 of a bf16 one) and by `exp_nonpos16`'s error in softmax (2^-7.4 of
/// an f16 ulp, 2^-10.4 of a bf16 one), that excess over 0.5 doubled.
pub fn bound(op: NormOp, dtype: Dtype, c: Cond) -> f64 {
    let (exp16, f32_ulp) = match dtype {
        Dtype::F32 => return bound_f32(op, c),
        Dtype::F16 => (2f64.powf(-7.4), 2f64.powi(-13)),
        Dtype::Bf16 => (2f64.powf(-10.4), 2f64.powi(-16)),
    };
    let exp16 = if matches!(op, NormOp::Softmax | NormOp::LogSoftmax) { exp16 } else { 0.0 };
    0.5 + 2.0 * (exp16 + bound_f32(op, c) * f32_ulp)
}

/// The plans measured at `cols`: the automatic one and the splits `check` accepts.
pub fn plans(dtype: Dtype, cols: usize) -> Vec<NormPlan> {
    let mut p = vec![NormPlan::auto(dtype, cols)];
    p.push(NormPlan { strategy: NormStrategy::Split, block: 32, k: 1 });
    p.push(NormPlan { strategy: NormStrategy::Split, block: 512, k: 2 });
    p.retain(|p| p.check(NormOp::Rms, dtype, cols).is_ok());
    p
}

/// Where the error is measured (see `rn::ulp_error`): in ulps of the
/// output, or of `max(|output|, 1)` for the two operations whose outputs
/// near zero come from cancellation.
pub fn floor(op: NormOp) -> f64 {
    match op {
        NormOp::Layer | NormOp::AddLayer | NormOp::LogSoftmax => 1.0,
        _ => 0.0,
    }
}

/// `n` values in `r`, drawn as `d`, rounded to `T`.
pub fn draw<T: Element>(rng: &mut impl Rng, n: usize, r: Range, d: Draw) -> Vec<T> {
    (0..n)
        .map(|_| match d {
            Draw::Grid => rn::narrow(rng.gen_range(r.0..r.1)),
            Draw::Full => rn::narrow(rng.gen_range(r.0 as f64..r.1 as f64) as f32),
        })
        .collect()
}

/// Softmax in f64 of one row with the kernel's roundings of `x - max` kept:
/// `d = fl(x - m_s) + fl(m_s - m)` per element (`m_s` the max of its
/// segment of `seg`, `m` the row's), then `exp(d) / Σ exp(d)` in f64.
fn softmax_kept(v: &[f32], seg: usize) -> Vec<f64> {
    let m = v.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let d: Vec<f64> = v
        .chunks(seg)
        .flat_map(|s| {
            let ms = s.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            s.iter().map(move |&x| (x - ms) as f64 + (ms - m) as f64)
        })
        .collect();
    let z: f64 = d.iter().map(|e| e.exp()).sum();
    d.iter().map(|e| e.exp() / z).collect()
}

/// What one measurement draws: `rows` rows of `cols` in `range`, drawn as
/// `draw` from `seed`, for `op`.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub op: NormOp,
    pub rows: usize,
    pub cols: usize,
    pub range: Range,
    pub draw: Draw,
    pub seed: u64,
}

/// The error of the case for each plan of `plans` (one [`Worst`] each),
/// against [`bound`] per row.
pub fn measure<T: Element>(plans: &[NormPlan], case: Case) -> Vec<Worst> {
    let Case { op, rows, cols, range: r, draw: d, seed } = case;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let x = draw::<T>(&mut rng, rows * cols, r, d);
    let res = draw::<T>(&mut rng, rows * cols, r, d);
    let (w, b) = (draw::<T>(&mut rng, cols, (-2.0, 2.0), d), draw::<T>(&mut rng, cols, (-2.0, 2.0), d));
    let hop: Norm<&[T], ()> = match op {
        NormOp::Rms => Norm::rms(&w, 1e-6),
        NormOp::AddRms => Norm::add_rms(&res, (), &w, 1e-6),
        NormOp::Layer => Norm::layer(&w, &b, 1e-6),
        NormOp::AddLayer => Norm::add_layer(&res, (), &w, &b, 1e-6),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    };
    let shape = Rows::contiguous(rows, cols);
    let exact = rn::norm_f64(hop, &x, shape);
    // The values normalised (the residual adds: the rounded h), for the conditions.
    let vals: Vec<f32> = match op {
        NormOp::AddRms | NormOp::AddLayer => {
            x.iter().zip(&res).map(|(a, b)| rn::widen(rn::narrow::<T>(rn::widen(*a) + rn::widen(*b)))).collect()
        }
        _ => x.iter().map(|e| rn::widen(*e)).collect(),
    };
    let conds: Vec<Cond> =
        vals.chunks(cols).map(|v| Cond::of(&v.iter().map(|&e| e as f64).collect::<Vec<_>>())).collect();
    let mut out = Vec::new();
    for p in plans {
        let mut worst = Worst::default();
        let o = p.order(T::DTYPE, cols);
        let got = rn::norm(hop, &x, shape, o);
        let segs = o.segments(cols as u32);
        for (i, (g, e)) in got.y.chunks(cols).zip(exact.chunks(cols)).enumerate() {
            let cond = Cond { segs, ..conds[i] };
            let bnd = bound(op, T::DTYPE, cond);
            let kept = if op == NormOp::Softmax && T::DTYPE == Dtype::F32 {
                softmax_kept(&vals[i * cols..][..cols], o.seg as usize)
            } else {
                Vec::new()
            };
            for (c, (g, e)) in g.iter().zip(e).enumerate() {
                let err = rn::ulp_error(*g, *e, floor(op));
                let k = kept.get(c).map_or(0.0, |k| rn::ulp_error(*g, *k, 0.0));
                let ratio = (err / bnd).max(k / softmax_kept_bound(cond));
                worst.merge(Worst { err, err_cond: cond, ratio, kept: k });
            }
        }
        out.push(worst);
    }
    out
}

/// [`measure`] for a dtype chosen at run time.
pub fn measure_dtype(plans: &[NormPlan], dtype: Dtype, case: Case) -> Vec<Worst> {
    match dtype {
        Dtype::F32 => measure::<f32>(plans, case),
        Dtype::F16 => measure::<f16>(plans, case),
        Dtype::Bf16 => measure::<bf16>(plans, case),
    }
}

/// Whether `op` is measured in `r`: ±4 and ±100 always, the offset range
/// for layer_norm (its hard case) and softmax.
pub fn measured(op: NormOp, r: Range) -> bool {
    r != RANGES[2] || matches!(op, NormOp::Layer | NormOp::AddLayer | NormOp::Softmax)
}

/// The least ratio of an f32 error to its bound, over the ranges: a bound
/// more than 2.5 times the largest error could miss the error growing.
pub const LOOSE: f64 = 0.4;

/// The numbers of segments the maxima are printed for: at most 16 (whole
/// rows and clusters: the automatic plans up to 2^18 elements of f32, 2^19
/// of f16 and bf16), at most 1,024 (the automatic plans up to 2^24), more.
pub const SEGS: [u32; 2] = [16, 1024];

/// Measures `op` in every dtype and range of [`measured`], drawn both ways
/// (on the grid only where `grid(cols)`), over the `(rows, cols, seed)`
/// shapes of `shapes(dtype)` with every plan of [`plans`]; prints the
/// maxima per dtype, range and number of segments (see [`SEGS`]); returns
/// the cases over their bound, and the f32 bounds over 1 / [`LOOSE`] times
/// their largest error.
pub fn check(
    op: NormOp,
    shapes: impl Fn(Dtype) -> Vec<(usize, usize, u64)>,
    grid: impl Fn(usize) -> bool,
) -> Vec<String> {
    let mut failures = Vec::new();
    for dtype in Dtype::ALL {
        let mut ratio = 0.0f64;
        for r in RANGES {
            if !measured(op, r) {
                continue;
            }
            // [draw][segments: at most 16, 17 to 1,024, more].
            let mut w = [[Worst::default(); 3]; 2];
            for (k, d) in [Draw::Grid, Draw::Full].into_iter().enumerate() {
                for (rows, cols, seed) in shapes(dtype) {
                    if d == Draw::Grid && !grid(cols) {
                        continue;
                    }
                    let case = Case { op, rows, cols, range: r, draw: d, seed };
                    for m in measure_dtype(&plans(dtype, cols), dtype, case) {
                        if m.ratio > 1.0 {
                            failures.push(format!("{} {} {cols} in {r:?} {d:?}: {m:?}", op.name(), dtype.name()));
                        }
                        w[k][SEGS.iter().position(|&n| m.err_cond.segs <= n).unwrap_or(2)].merge(m);
                    }
                }
            }
            let all = w.iter().flatten().fold(Worst::default(), |mut a, b| {
                a.merge(*b);
                a
            });
            let cell = |c: usize| {
                let (g, f) = (w[0][c], w[1][c]);
                if g.err_cond.segs + f.err_cond.segs == 0 {
                    return "-".to_string();
                }
                let segs = if g.err > f.err { g.err_cond.segs } else { f.err_cond.segs };
                let kept = g.kept.max(f.kept);
                let kept = if kept > 0.0 { format!(", kept x - max {kept:6.3}") } else { String::new() };
                format!("grid {:7.3}, full {:7.3}{kept} ({segs:>4} segs)", g.err, f.err)
            };
            println!(
                "max error {:>12} {:>4} in {:>4}..{:<4} <=16 segs: {}; <=1024: {}; more: {}; of bound {:.2}",
                op.name(),
                dtype.name(),
                r.0,
                r.1,
                cell(0),
                cell(1),
                cell(2),
                all.ratio,
            );
            ratio = ratio.max(all.ratio);
        }
        if dtype == Dtype::F32 && ratio < LOOSE {
            failures.push(format!("{} f32: the bound is over {:.1}× the error: tighten it", op.name(), 1.0 / ratio));
        }
    }
    failures
}
