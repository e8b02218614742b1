//! f32 math written from `fma`, integer operations and IEEE-rounded `+ - * /`
//! and `sqrt` only: no `.approx`, no `.ftz`, no libm. The same source compiles
//! for `nvptx64` and for the host, so the host build gives the GPU's bits and is
//! the CPU reference ([`check`] measures it against f64).
//!
//! Accuracy targets: <= 1 ulp for the one-input functions, <= 2 ulp for `pow`;
//! the measured figures (exhaustive) and the bf16/f16 correctly rounded shares
//! are in `device/src/math/README.md`, each function's doc comment gives its
//! shape and special values. Special values follow C99/IEEE 754 (NaN in, NaN
//! out; signed zeros; overflow to inf and underflow through the subnormals).
//! Polynomial coefficients come from `device/tools/fit_math.py`.

// `x - x`, `x != x` are the NaN/inf tests (they must stay compares on both
// targets); the coefficients are fitted values, printed as f32 round-trips; the
// compare-and-select clamps keep NaN, which `min`/`max` would drop.
#![allow(clippy::eq_op, clippy::approx_constant, clippy::excessive_precision, clippy::manual_clamp)]

mod erf;
mod exp;
pub mod fast16;
mod gelu;
mod log;
pub mod narrow;
mod prim;
mod trig;

#[cfg(not(target_arch = "nvptx64"))]
pub mod check;
#[cfg(test)]
mod narrow_tests;
#[cfg(test)]
mod tests;

pub use erf::erf;
pub use exp::{exp, exp2, exp_nonpos, exp_nonpos16, expm1, gelu_tanh, sigmoid, silu, tanh};
pub use gelu::gelu;
pub use log::{log, log1p, log2, pow};
pub use prim::{div_fast, fma, rcp, rsqrt, sqrt};
pub use trig::{cos, sin};
