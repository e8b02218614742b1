//! # gpukern-candle
//!
//! gpukern's kernels as candle ops, on candle's own buffers and stream, with the
//! same bits on candle's CPU device.
//!
//! ```
//! use candle_core::{Device, Tensor};
//! let x = Tensor::new(&[-1.0f32, 0.0, 2.5], &Device::Cpu)?;
//! let y = gpukern_candle::silu(&x)?;
//! let z = gpukern_candle::axpby(2.0, &x, -1.0, &y)?;
//! assert_eq!(z.dims(), &[3]);
//! # Ok::<(), candle_core::Error>(())
//! ```
//!
//! * Plain functions: [`silu`], [`exp`], …, [`add`], [`mul`], …, [`axpby`],
//!   returning `candle_core::Result<Tensor>`; `*_into` forms write into an
//!   existing tensor.
//! * The op types behind them: [`Unary`], [`Binary`], [`Axpby`]
//!   (`CustomOp1`/`CustomOp2`), [`UnaryInto`], [`BinaryInto`], [`AxpbyInto`]
//!   (`InplaceOp2`/`InplaceOp3`).
//! * The gated activations: [`glu`] (`act(gate) · up`), [`swiglu`], and
//!   [`glu_split`] on rows `[gate | up]` of one tensor, rounded once.
//! * Dtypes f32, f16 and bf16. Layouts: a contiguous tensor at any start offset
//!   goes straight through, with no copy; any other layout is a clear error
//!   that names it (no hidden copy).
//! * `Device::Cpu` runs gpukern's CPU reference, which gives the bits gpukern's
//!   kernels give; with the `cuda` feature, `Device::Cuda` runs the kernels on
//!   the tensor's own buffer and stream, with no synchronisation and no copy.

#![deny(missing_docs)]

mod check;
#[cfg(feature = "cuda")]
mod cuda;
mod glu;
mod map;
mod norms;
mod ops;

#[cfg(feature = "cuda")]
pub use cuda::gpu;

pub use glu::{Glu, GluSplit};
pub use gpukern::GluOp;
pub use gpukern::NormOp;
pub use gpukern::{BinaryOp, UnaryOp};
pub use norms::RowNorm;
pub use ops::{Axpby, AxpbyInto, Binary, BinaryInto, Unary, UnaryInto};

use candle_core::{Result, Tensor};

/// `y = op(x)` for any of gpukern's unary operations.
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    x.apply_op1_no_bwd(&Unary(op))
}

/// `c = op(a, b)` for any of gpukern's binary operations; `a` and `b` have one
/// dtype and one shape (no broadcasting).
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.apply_op2_no_bwd(b, &Binary(op))
}

/// `c = alpha·a + beta·b`.
pub fn axpby(alpha: f32, a: &Tensor, beta: f32, b: &Tensor) -> Result<Tensor> {
    a.apply_op2_no_bwd(b, &Axpby { alpha, beta })
}

/// `out = op(x)`, written into `out` (same dtype and shape, its own storage).
pub fn unary_into(op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
    out.inplace_op2(x, &UnaryInto(op))
}

/// `out = op(a, b)`, written into `out`.
pub fn binary_into(op: BinaryOp, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    out.inplace_op3(a, b, &BinaryInto(op))
}

/// `out = alpha·a + beta·b`, written into `out`.
pub fn axpby_into(alpha: f32, a: &Tensor, beta: f32, b: &Tensor, out: &Tensor) -> Result<()> {
    out.inplace_op3(a, b, &AxpbyInto { alpha, beta })
}

/// The plain functions of the unary operations.
macro_rules! unary_fns {
    ($($name:ident => $op:ident: $doc:literal),* $(,)?) => {$(
        #[doc = $doc]
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            unary(UnaryOp::$op, x)
        }
    )*};
}
unary_fns! {
    neg => Neg: "`-x`: the sign bit flipped, NaN included.",
    abs => Abs: "`|x|`: the sign bit cleared.",
    relu => Relu: "`max(x, 0)`: +0 for negative inputs and -0, NaN kept.",
    exp => Exp: "`e^x` by gpukern's math (same bits on the CPU and the GPU).",
    log => Log: "`ln x`.",
    tanh => Tanh: "`tanh x`.",
    sigmoid => Sigmoid: "`1 / (1 + e^-x)`.",
    silu => Silu: "`x · sigmoid(x)`.",
    gelu => Gelu: "GELU with erf (`candle`'s `gelu_erf`).",
    gelu_tanh => GeluTanh: "GELU's tanh approximation (`candle`'s `gelu`).",
    rsqrt => Rsqrt: "`1 / sqrt x`.",
    sqrt => Sqrt: "`sqrt x`.",
}

/// The plain functions of the binary operations.
macro_rules! binary_fns {
    ($($name:ident => $op:ident: $doc:literal),* $(,)?) => {$(
        #[doc = $doc]
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            binary(BinaryOp::$op, a, b)
        }
    )*};
}
binary_fns! {
    add => Add: "`a + b`, correctly rounded.",
    sub => Sub: "`a - b`, correctly rounded.",
    mul => Mul: "`a · b`, correctly rounded.",
    div => Div: "`a / b`, correctly rounded.",
    minimum => Min: "IEEE `minimum`: NaN if either is NaN, -0 < +0.",
    maximum => Max: "IEEE `maximum`: NaN if either is NaN, -0 < +0.",
}

/// RMSNorm along the last dimension: `y = x / sqrt(mean(x²) + eps) · weight`,
/// accumulated in f32 in a fixed order (the same bits on every run). `weight`
/// holds one element per column.
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f32) -> Result<Tensor> {
    x.apply_op2_no_bwd(weight, &RowNorm { op: NormOp::Rms, eps })
}

/// LayerNorm along the last dimension (biased variance): `y = (x - mean) /
/// sqrt(var + eps) · weight + bias`.
pub fn layer_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f32) -> Result<Tensor> {
    x.apply_op3_no_bwd(weight, bias, &RowNorm { op: NormOp::Layer, eps })
}

/// The transformer block's pattern in one kernel: `h = x + residual` (rounded
/// to the dtype) and `y = rms_norm(h, weight, eps)`; returns `(h, y)`, two
/// views of one new storage.
pub fn add_rms_norm(x: &Tensor, residual: &Tensor, weight: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    let both = x.apply_op3_no_bwd(residual, weight, &RowNorm { op: NormOp::AddRms, eps })?;
    Ok((both.get(0)?, both.get(1)?))
}

/// LayerNorm's twin of [`add_rms_norm`], in one kernel: `h = x + residual`
/// (rounded to the dtype) and `y = layer_norm(h, weight, bias, eps)`; returns
/// `(h, y)`, two views of one new storage. (Weight and bias reach the op
/// stacked as one `[2, cols]` tensor: a copy of `2·cols` elements.)
pub fn add_layer_norm(
    x: &Tensor,
    residual: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor)> {
    let wb = Tensor::stack(&[weight, bias], 0)?;
    let both = x.apply_op3_no_bwd(residual, &wb, &RowNorm { op: NormOp::AddLayer, eps })?;
    Ok((both.get(0)?, both.get(1)?))
}

/// Softmax along the last dimension: `exp(x - max) / Σ exp(x - max)`.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    x.apply_op1_no_bwd(&RowNorm { op: NormOp::Softmax, eps: 0.0 })
}

/// Log-softmax along the last dimension: `(x - max) - log Σ exp(x - max)`.
pub fn log_softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    x.apply_op1_no_bwd(&RowNorm { op: NormOp::LogSoftmax, eps: 0.0 })
}

/// The book's candle chapter (`docs/src/candle.md`) and the README, compiled
/// as doctests so that their code follows the API; the other chapters are
/// gpukern's.
#[cfg(doctest)]
#[doc = include_str!("../../docs/src/candle.md")]
struct BookCandle;

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct Readme;
/// `act(gate) · up` for `act` ∈ [`GluOp`] (SiLU, GELU, GELU's tanh form), in
/// one kernel, rounded once; `gate` and `up` have one dtype and one shape.
pub fn glu(op: GluOp, gate: &Tensor, up: &Tensor) -> Result<Tensor> {
    gate.apply_op2_no_bwd(up, &Glu(op))
}

/// SwiGLU: `silu(gate) · up` ([`glu`] with [`GluOp::Silu`]).
pub fn swiglu(gate: &Tensor, up: &Tensor) -> Result<Tensor> {
    glu(GluOp::Silu, gate, up)
}

/// `act(gate) · up` over rows `[gate | up]` of `x` (a fused gate-and-up
/// projection's output, last dimension `2·d`): a new tensor with last
/// dimension `d`; the halves are read in place, with no copy.
pub fn glu_split(op: GluOp, x: &Tensor) -> Result<Tensor> {
    x.apply_op1_no_bwd(&GluSplit(op))
}
