//! Errors against an f64 reference computed on the CPU from the same inputs:
//! the element-wise references (gpukern-device's f64 functions where there are
//! any), ulps in the op's dtype (gpukern's `ulp_error`), and for the norms
//! gpukern's `norm_f64` with max abs and max rel.

use candle_core::{Result, Tensor, WithDType};
use gpukern::reference::norms::ulp_error;
use gpukern::Element;
use gpukern_device::math::check::{gelu_f64, gelu_tanh_f64, sigmoid_f64};

use super::Errors;

/// The element types of the section, with candle's and gpukern's traits.
pub trait Dt: WithDType + Element {}
impl<T: WithDType + Element> Dt for T {}

/// Calls `$f::<T>($args)` with `T` the Rust type of `$dtype`.
macro_rules! by_dtype {
    ($dtype:expr, $f:ident($($args:expr),*)) => {
        match $dtype {
            candle_core::DType::F32 => $f::<f32>($($args),*),
            candle_core::DType::F16 => $f::<gpukern::half::f16>($($args),*),
            candle_core::DType::BF16 => $f::<gpukern::half::bf16>($($args),*),
            other => Err(candle_core::Error::UnsupportedDTypeForOp(other, "candle report")),
        }
    };
}
pub(crate) use by_dtype;

/// The first `n` elements of `t` (all of them if fewer), on the host.
pub fn first<T: WithDType>(t: &Tensor, n: usize) -> Result<Vec<T>> {
    let flat = t.flatten_all()?;
    let n = n.min(flat.elem_count());
    flat.narrow(0, 0, n)?.to_vec1()
}

/// The exact value of an element, in f64.
pub fn wide<T: WithDType>(x: T) -> f64 {
    x.to_f64()
}

/// `None` for a non-finite error (a NaN or an infinity the reference has not).
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The largest error of `got` in ulps of `T` at the reference value. A
/// reference that rounds to an infinity of `T` matches that infinity (an
/// overflow both the op and exact arithmetic make).
pub fn max_ulp<T: Dt>(got: &[T], want: &[f64]) -> Errors {
    let max = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| {
            let rounded = T::from_f64(w).to_f64();
            if rounded.is_infinite() && g.to_f64() == rounded {
                0.0
            } else {
                ulp_error(g, w, 0.0)
            }
        })
        .fold(0.0, f64::max);
    Errors { max_ulp: finite(max), ..Errors::default() }
}

/// The largest absolute error, and the largest relative one with `|want|`
/// floored at 1 (norm outputs near 0 come from cancellation in every
/// implementation; there the absolute error is the measure).
pub fn max_abs_rel<T: Dt>(got: &[T], want: &[f64]) -> Errors {
    let (mut abs, mut rel) = (0f64, 0f64);
    for (&g, &w) in got.iter().zip(want) {
        let d = (g.to_f64() - w).abs();
        let d = if d.is_nan() { f64::INFINITY } else { d };
        abs = abs.max(d);
        rel = rel.max(d / w.abs().max(1.0));
    }
    Errors { max_abs: finite(abs), max_rel: finite(rel), ..Errors::default() }
}

/// The f64 reference of each element-wise op, by our op's name.
pub fn reference(op: &str) -> Option<fn(f64, f64) -> f64> {
    Some(match op {
        "neg" => |x, _| -x,
        "abs" => |x, _| x.abs(),
        "relu" => |x, _| x.max(0.0),
        "exp" => |x, _| x.exp(),
        "log" => |x, _| x.ln(),
        "tanh" => |x, _| x.tanh(),
        "sigmoid" => |x, _| sigmoid_f64(x),
        "silu" => |x, _| x * sigmoid_f64(x),
        "gelu_erf" => |x, _| gelu_f64(x),
        "gelu_tanh" => |x, _| gelu_tanh_f64(x),
        "sqrt" => |x, _| x.sqrt(),
        "add" => |x, y| x + y,
        "sub" => |x, y| x - y,
        "mul" => |x, y| x * y,
        "div" => |x, y| x / y,
        "minimum" => |x, y| x.min(y),
        "maximum" => |x, y| x.max(y),
        _ => return None,
    })
}
