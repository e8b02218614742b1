//! The norm rows: our rms_norm, layer_norm, softmax, log-softmax and
//! add_rms_norm against `candle_nn::ops` (log-softmax: candle_nn's
//! composition; add_rms_norm: candle's add, then its rms_norm), at the
//! issue's shapes, f32, f16 and bf16.

use candle_core::{DType, Result, Tensor, D};
use gpukern::reference::norms::norm_f64;
use gpukern::Norm;
use gpukern::Rows;
use gpukern_candle as gc;

use super::accuracy::{by_dtype, first, max_abs_rel, Dt};
use super::{Bench, Cell, Errors, Measured, DTYPES};

/// The shapes (rows, cols).
const SHAPES: [(usize, usize); 10] = [
    (1, 4096),
    (8, 4096),
    (64, 8192),
    (4096, 1024),
    (4096, 4096),
    (16384, 4096),
    (1024, 16384),
    (256, 65536),
    (64, 262144),
    (3000, 5120),
];
/// Elements the errors are measured on: the first rows up to this many (one at least).
const CHECKED: usize = 1 << 20;
const EPS: f32 = 1e-5;

/// The inputs of one call: x, the residual, the weight, the bias.
struct Args<'a> {
    x: &'a Tensor,
    r: &'a Tensor,
    w: &'a Tensor,
    b: &'a Tensor,
}

type NormFn = fn(&Args) -> Result<Tensor>;

/// One op: our name, candle's, its essential bytes in units of x, both forms
/// (returning `y`).
struct Op {
    name: &'static str,
    candle: &'static str,
    traffic: usize,
    ours: NormFn,
    theirs: NormFn,
}

const OPS: &[Op] = &[
    Op {
        name: "rms_norm",
        candle: "candle_nn::ops::rms_norm",
        traffic: 2,
        ours: |a| gc::rms_norm(a.x, a.w, EPS),
        theirs: |a| candle_nn::ops::rms_norm(a.x, a.w, EPS),
    },
    Op {
        name: "layer_norm",
        candle: "candle_nn::ops::layer_norm",
        traffic: 2,
        ours: |a| gc::layer_norm(a.x, a.w, a.b, EPS),
        theirs: |a| candle_nn::ops::layer_norm(a.x, a.w, a.b, EPS),
    },
    Op {
        name: "softmax_last_dim",
        candle: "candle_nn::ops::softmax_last_dim",
        traffic: 2,
        ours: |a| gc::softmax_last_dim(a.x),
        theirs: |a| candle_nn::ops::softmax_last_dim(a.x),
    },
    Op {
        name: "log_softmax_last_dim",
        candle: "candle_nn::ops::log_softmax (composed: max, sub, exp, sum, log, sub)",
        traffic: 2,
        ours: |a| gc::log_softmax_last_dim(a.x),
        theirs: |a| candle_nn::ops::log_softmax(a.x, D::Minus1),
    },
    Op {
        name: "add_rms_norm",
        candle: "x + r, then candle_nn::ops::rms_norm",
        traffic: 4,
        ours: |a| gc::add_rms_norm(a.x, a.r, a.w, EPS).map(|(_, y)| y),
        theirs: |a| candle_nn::ops::rms_norm(&(a.x + a.r)?, a.w, EPS),
    },
];

/// The largest accepted relative error of ours (|ref| floored at 1), in units
/// of the dtype's epsilon: the README's norms table has ours within 9 ulps
/// (f32) and 0.6 (f16, bf16) on rows of up to 40,000; rows here reach 262,144.
const REL_BOUND_EPS: f64 = 32.0;

/// The f64 reference of `op` on the first `rows` rows, and our and candle's errors.
fn errors<T: Dt>(o: &Op, a: &Args, rows: usize, cols: usize) -> Result<(Errors, Option<Errors>)> {
    let n = rows * cols;
    let (x, r): (Vec<T>, Vec<T>) = (first(a.x, n)?, first(a.r, n)?);
    let (w, b): (Vec<T>, Vec<T>) = (first(a.w, cols)?, first(a.b, cols)?);
    let host: Norm<&[T], ()> = match o.name {
        "rms_norm" => Norm::rms(&w, EPS),
        "layer_norm" => Norm::layer(&w, &b, EPS),
        "softmax_last_dim" => Norm::Softmax,
        "log_softmax_last_dim" => Norm::LogSoftmax,
        _ => Norm::add_rms(&r, (), &w, EPS),
    };
    let want = norm_f64(host, &x, Rows::contiguous(rows, cols));
    let ours = max_abs_rel(&first::<T>(&(o.ours)(a)?, n)?, &want);
    let theirs = match (o.theirs)(a) {
        Ok(t) => Some(max_abs_rel(&first::<T>(&t, n)?, &want)),
        Err(_) => None,
    };
    Ok((ours, theirs))
}

/// The dtype's epsilon (the spacing of its numbers at 1).
fn epsilon(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        _ => 2f64.powi(-23),
    }
}

/// Every norm cell; our errors past [`REL_BOUND_EPS`] go to `failures`.
pub fn run(bench: &Bench, failures: &mut Vec<String>) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    let total = DTYPES.len() * SHAPES.len() * OPS.len();
    for dtype in DTYPES {
        for (rows, cols) in SHAPES {
            let size = rows * cols * dtype.size_in_bytes();
            let sets = bench.sets(2 * size, size);
            let dev = bench.dev;
            let big =
                |mean: f32| -> Result<Tensor> { Tensor::randn(mean, 2f32, (sets * rows, cols), dev)?.to_dtype(dtype) };
            let (x, r) = (big(0.0)?, big(0.0)?);
            let w = (Tensor::randn(0f32, 0.1, cols, dev)? + 1.0)?.to_dtype(dtype)?;
            let b = Tensor::randn(0f32, 0.1, cols, dev)?.to_dtype(dtype)?;
            let split = |t: &Tensor| (0..sets).map(|i| t.narrow(0, i * rows, rows)).collect::<Result<Vec<_>>>();
            let (xs, rs) = (split(&x)?, split(&r)?);
            let args = |i: usize| Args { x: &xs[i], r: &rs[i], w: &w, b: &b };
            for o in OPS {
                let bytes = o.traffic * size;
                let chain = bench.chain(bytes);
                let (ours, theirs) = bench.pair(
                    bytes,
                    sets,
                    chain,
                    |i| (o.ours)(&args(i)).map(drop),
                    |i| (o.theirs)(&args(i)).map(drop),
                )?;
                let checked_rows = (CHECKED / cols).clamp(1, rows);
                let (ours_err, candle_err) = by_dtype!(dtype, errors(o, &args(0), checked_rows, cols))?;
                let what = format!("{} {dtype:?} {rows}x{cols}", o.name);
                let bound = REL_BOUND_EPS * epsilon(dtype);
                if ours_err.max_rel.is_none_or(|e| e > bound) {
                    failures.push(format!("{what}: our rel error {:?} exceeds {bound:e}", ours_err.max_rel));
                }
                let cell = Cell::new(Measured {
                    op: o.name,
                    candle_op: o.candle,
                    dtype,
                    shape: vec![rows, cols],
                    chain,
                    sets,
                    ours,
                    theirs,
                    checked: checked_rows * cols,
                    ours_err,
                    candle_err,
                });
                cell.progress(
                    cells.len() + 1,
                    total,
                    &what,
                    format!("rel {:?}, candle {:?}", ours_err.max_rel, candle_err.and_then(|e| e.max_rel)),
                );
                cells.push(cell);
            }
        }
    }
    Ok(cells)
}
