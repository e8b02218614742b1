//! The element-wise rows: each of our ops against candle's, f32, f16 and
//! bf16, at 2^20, 2^24 and 2^28 elements.

use candle_core::{DType, Result, Tensor};
use gpukern_candle as gc;

use super::accuracy::{by_dtype, first, max_ulp, reference, wide, Dt};
use super::{Bench, Cell, Measured, DTYPES};

/// Element counts, as powers of two.
const SIZES: [u32; 3] = [20, 24, 28];
/// Elements the errors are measured on (the first ones of the output).
const CHECKED: usize = 1 << 20;
/// Our largest accepted error in ulps of the dtype: the README's per-function
/// table has every function within 1 ulp but `gelu` (erf form) at 6.35 in f32
/// over all inputs; the binary ops are correctly rounded.
const ULP_BOUND: f64 = 8.0;

type OpFn = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// One op: our name, candle's op, inputs, whether it takes `|x|`, both forms.
struct Op {
    name: &'static str,
    candle: &'static str,
    inputs: usize,
    positive: bool,
    ours: OpFn,
    theirs: OpFn,
}

const fn op(name: &'static str, candle: &'static str, inputs: usize, ours: OpFn, theirs: OpFn) -> Op {
    Op { name, candle, inputs, positive: false, ours, theirs }
}

const OPS: &[Op] = &[
    op("neg", "Tensor::neg", 1, |x, _| gc::neg(x), |x, _| x.neg()),
    op("abs", "Tensor::abs", 1, |x, _| gc::abs(x), |x, _| x.abs()),
    op("relu", "Tensor::relu", 1, |x, _| gc::relu(x), |x, _| x.relu()),
    op("exp", "Tensor::exp", 1, |x, _| gc::exp(x), |x, _| x.exp()),
    Op { positive: true, ..op("log", "Tensor::log", 1, |x, _| gc::log(x), |x, _| x.log()) },
    op("tanh", "Tensor::tanh", 1, |x, _| gc::tanh(x), |x, _| x.tanh()),
    op("sigmoid", "candle_nn::ops::sigmoid", 1, |x, _| gc::sigmoid(x), |x, _| candle_nn::ops::sigmoid(x)),
    op("silu", "candle_nn::ops::silu", 1, |x, _| gc::silu(x), |x, _| candle_nn::ops::silu(x)),
    op("gelu_erf", "Tensor::gelu_erf", 1, |x, _| gc::gelu(x), |x, _| x.gelu_erf()),
    op("gelu_tanh", "Tensor::gelu", 1, |x, _| gc::gelu_tanh(x), |x, _| x.gelu()),
    Op { positive: true, ..op("sqrt", "Tensor::sqrt", 1, |x, _| gc::sqrt(x), |x, _| x.sqrt()) },
    op("add", "a + b", 2, gc::add, |x, y| x + y),
    op("sub", "a - b", 2, gc::sub, |x, y| x - y),
    op("mul", "a * b", 2, gc::mul, |x, y| x * y),
    op("div", "a / b", 2, gc::div, |x, y| x / y),
    op("minimum", "Tensor::minimum", 2, gc::minimum, |x, y| x.minimum(y)),
    op("maximum", "Tensor::maximum", 2, gc::maximum, |x, y| x.maximum(y)),
];

/// Our ops with no single candle op to compare with.
pub const NOT_COMPARED: &[&str] =
    &["rsqrt (candle: sqrt then recip, two ops)", "axpby (candle: affine and add, three ops)"];

/// `sets` input sets of `n` elements: x ~ N(0, 3²), y ~ N(0.5, 3²), and |x|,
/// each a window of one tensor (one allocation, contiguous at an offset).
struct Inputs {
    x: Vec<Tensor>,
    y: Vec<Tensor>,
    pos: Vec<Tensor>,
}

impl Inputs {
    fn new(bench: &Bench, dtype: DType, n: usize, sets: usize) -> Result<Inputs> {
        let make = |mean: f32| -> Result<Tensor> { Tensor::randn(mean, 3f32, sets * n, bench.dev)?.to_dtype(dtype) };
        let (x, y) = (make(0.0)?, make(0.5)?);
        let pos = x.abs()?;
        let split = |t: &Tensor| (0..sets).map(|i| t.narrow(0, i * n, n)).collect::<Result<Vec<_>>>();
        Ok(Inputs { x: split(&x)?, y: split(&y)?, pos: split(&pos)? })
    }
}

/// Our and candle's errors on the first elements of set 0.
fn errors<T: Dt>(o: &Op, x: &Tensor, y: &Tensor) -> Result<(super::Errors, Option<super::Errors>)> {
    let f = reference(o.name).ok_or_else(|| candle_core::Error::Msg(format!("no reference for {}", o.name)))?;
    let (hx, hy): (Vec<T>, Vec<T>) = (first(x, CHECKED)?, first(y, CHECKED)?);
    let want: Vec<f64> = hx.iter().zip(&hy).map(|(&a, &b)| f(wide(a), wide(b))).collect();
    let ours = max_ulp(&first::<T>(&(o.ours)(x, y)?, CHECKED)?, &want);
    let theirs = match (o.theirs)(x, y) {
        Ok(t) => Some(max_ulp(&first::<T>(&t, CHECKED)?, &want)),
        Err(_) => None,
    };
    Ok((ours, theirs))
}

/// Every element-wise cell; our errors past [`ULP_BOUND`] go to `failures`.
pub fn run(bench: &Bench, failures: &mut Vec<String>) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    let total = DTYPES.len() * SIZES.len() * OPS.len();
    for dtype in DTYPES {
        for log2 in SIZES {
            let n = 1usize << log2;
            // One set of inputs for the size: rotated where the unary ops
            // (the lightest) are chained.
            let input = n * dtype.size_in_bytes();
            let sets = bench.sets(2 * input, input);
            let inputs = Inputs::new(bench, dtype, n, sets)?;
            for o in OPS {
                let xs = if o.positive { &inputs.pos } else { &inputs.x };
                let bytes = (o.inputs + 1) * input;
                let chain = bench.chain(bytes);
                let (ours, theirs) = bench.pair(
                    bytes,
                    sets,
                    chain,
                    |i| (o.ours)(&xs[i], &inputs.y[i]).map(drop),
                    |i| (o.theirs)(&xs[i], &inputs.y[i]).map(drop),
                )?;
                let (ours_err, candle_err) = by_dtype!(dtype, errors(o, &xs[0], &inputs.y[0]))?;
                let what = format!("{} {dtype:?} 2^{log2}", o.name);
                if ours_err.max_ulp.is_none_or(|u| u > ULP_BOUND) {
                    failures.push(format!("{what}: our error {:?} ulp exceeds {ULP_BOUND}", ours_err.max_ulp));
                }
                let cell = Cell::new(Measured {
                    op: o.name,
                    candle_op: o.candle,
                    dtype,
                    shape: vec![n],
                    chain,
                    sets,
                    ours,
                    theirs,
                    checked: CHECKED.min(n),
                    ours_err,
                    candle_err,
                });
                cell.progress(
                    cells.len() + 1,
                    total,
                    &what,
                    format!("{:?} ulp, candle {:?}", ours_err.max_ulp, candle_err.and_then(|e| e.max_ulp)),
                );
                cells.push(cell);
            }
        }
    }
    Ok(cells)
}
