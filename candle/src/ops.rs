//! The candle op types: [`Unary`], [`Binary`] and [`Axpby`] as
//! `CustomOp1`/`CustomOp2` (a new output tensor), and [`UnaryInto`],
//! [`BinaryInto`] and [`AxpbyInto`] as `InplaceOp2`/`InplaceOp3`, which write
//! into an existing tensor (`out.inplace_op2(&x, &UnaryInto(op))`). Each is a
//! [`Map`]; its CPU forward is in `map.rs`, its CUDA forward in `cuda.rs`.

#[cfg(feature = "cuda")]
use candle_core::CudaStorage;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, InplaceOp2, InplaceOp3, Layout, Result, Shape};
use gpukern::{BinaryOp, OpKind, UnaryOp};

use crate::map::Map;

/// `y = op(x)`: one of gpukern's unary operations (sign-bit operations and
/// activations) as a candle `CustomOp1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unary(pub UnaryOp);

/// `c = op(a, b)`: one of gpukern's binary operations as a candle `CustomOp2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binary(pub BinaryOp);

/// `c = alpha·a + beta·b` as a candle `CustomOp2` (the scales rounded once to
/// the dtype, each product and the sum rounded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axpby {
    /// The scale of `a`.
    pub alpha: f32,
    /// The scale of `b`.
    pub beta: f32,
}

/// `out = op(x)` into an existing tensor: `out.inplace_op2(&x, &UnaryInto(op))`.
/// `out` must not share storage with `x` (candle refuses aliased inputs here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnaryInto(pub UnaryOp);

/// `out = op(a, b)` into an existing tensor: `out.inplace_op3(&a, &b, &BinaryInto(op))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryInto(pub BinaryOp);

/// `out = alpha·a + beta·b` into an existing tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AxpbyInto {
    /// The scale of `a`.
    pub alpha: f32,
    /// The scale of `b`.
    pub beta: f32,
}

impl Unary {
    fn map(&self) -> Map {
        Map { kind: OpKind::Unary(self.0), scales: (1.0, 1.0) }
    }
}
impl Binary {
    fn map(&self) -> Map {
        Map { kind: OpKind::Binary(self.0), scales: (1.0, 1.0) }
    }
}
impl Axpby {
    fn map(&self) -> Map {
        Map { kind: OpKind::Axpby, scales: (self.alpha, self.beta) }
    }
}
impl UnaryInto {
    fn map(&self) -> Map {
        Unary(self.0).map()
    }
}
impl BinaryInto {
    fn map(&self) -> Map {
        Binary(self.0).map()
    }
}
impl AxpbyInto {
    fn map(&self) -> Map {
        Axpby { alpha: self.alpha, beta: self.beta }.map()
    }
}

impl CustomOp1 for Unary {
    fn name(&self) -> &'static str {
        self.map().name()
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        Ok((self.map().cpu(&[(s, l)])?, l.shape().clone()))
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Shape)> {
        Ok((self.map().cuda(&[(s, l)])?, l.shape().clone()))
    }
}

/// `CustomOp2` for the two-input maps.
macro_rules! custom_op2 {
    ($ty:ty) => {
        impl CustomOp2 for $ty {
            fn name(&self) -> &'static str {
                self.map().name()
            }
            fn cpu_fwd(
                &self,
                s1: &CpuStorage,
                l1: &Layout,
                s2: &CpuStorage,
                l2: &Layout,
            ) -> Result<(CpuStorage, Shape)> {
                Ok((self.map().cpu(&[(s1, l1), (s2, l2)])?, l1.shape().clone()))
            }
            #[cfg(feature = "cuda")]
            fn cuda_fwd(
                &self,
                s1: &CudaStorage,
                l1: &Layout,
                s2: &CudaStorage,
                l2: &Layout,
            ) -> Result<(CudaStorage, Shape)> {
                Ok((self.map().cuda(&[(s1, l1), (s2, l2)])?, l1.shape().clone()))
            }
        }
    };
}
custom_op2!(Binary);
custom_op2!(Axpby);

impl InplaceOp2 for UnaryInto {
    fn name(&self) -> &'static str {
        self.map().name()
    }
    fn cpu_fwd(&self, dst: &mut CpuStorage, dst_l: &Layout, s: &CpuStorage, l: &Layout) -> Result<()> {
        self.map().cpu_into(dst, dst_l, &[(s, l)])
    }
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, dst: &mut CudaStorage, dst_l: &Layout, s: &CudaStorage, l: &Layout) -> Result<()> {
        self.map().cuda_into(dst, dst_l, &[(s, l)])
    }
}

/// `InplaceOp3` for the two-input maps into an existing tensor.
macro_rules! inplace_op3 {
    ($ty:ty) => {
        impl InplaceOp3 for $ty {
            fn name(&self) -> &'static str {
                self.map().name()
            }
            fn cpu_fwd(
                &self,
                dst: &mut CpuStorage,
                dst_l: &Layout,
                s1: &CpuStorage,
                l1: &Layout,
                s2: &CpuStorage,
                l2: &Layout,
            ) -> Result<()> {
                self.map().cpu_into(dst, dst_l, &[(s1, l1), (s2, l2)])
            }
            #[cfg(feature = "cuda")]
            fn cuda_fwd(
                &self,
                dst: &mut CudaStorage,
                dst_l: &Layout,
                s1: &CudaStorage,
                l1: &Layout,
                s2: &CudaStorage,
                l2: &Layout,
            ) -> Result<()> {
                self.map().cuda_into(dst, dst_l, &[(s1, l1), (s2, l2)])
            }
        }
    };
}
inplace_op3!(BinaryInto);
inplace_op3!(AxpbyInto);
