//! The element-wise operations as one value, [`Map`], and their forward on
//! candle's CPU storage: gpukern's CPU reference, element by element, which
//! gives the bits gpukern's kernels give (the binary operations and axpby
//! correctly rounded, the activations through `gpukern_device::math`, the same
//! IEEE-and-FMA-only functions the kernels run). So a candle program gets the
//! same bits on `Device::Cpu` as on `Device::Cuda`.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, DType, Layout, Result, WithDType};
use gpukern::half::{bf16, f16};
use gpukern::reference::{axpby_one, binary_one, unary_one, ReferenceOps};
use gpukern::OpKind;

use crate::check;

/// One of gpukern's element-wise operations; `scales` are axpby's `(alpha, beta)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Map {
    pub kind: OpKind,
    pub scales: (f32, f32),
}

/// The element types both libraries share, with candle's CPU storage access.
pub(crate) trait Dt: ReferenceOps + WithDType {
    /// The elements of `s` when it holds this type.
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]>;
}

macro_rules! dt {
    ($t:ty, $variant:ident) => {
        impl Dt for $t {
            fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]> {
                match s {
                    CpuStorage::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
dt!(f32, F32);
dt!(f16, F16);
dt!(bf16, BF16);

/// Calls `$f::<T>($args)` with `T` the Rust type of `$dtype` (f32, f16, bf16;
/// the caller checked it is one of them).
macro_rules! by_dtype {
    ($dtype:expr, $f:ident($($args:expr),*)) => {
        match $dtype {
            candle_core::DType::F32 => $f::<f32>($($args),*),
            candle_core::DType::F16 => $f::<gpukern::half::f16>($($args),*),
            candle_core::DType::BF16 => $f::<gpukern::half::bf16>($($args),*),
            other => Err(candle_core::Error::UnsupportedDTypeForOp(other, "gpukern_candle").bt()),
        }
    };
}
pub(crate) use by_dtype;

impl Map {
    /// The operation's name (gpukern's), for candle and for errors.
    pub fn name(self) -> &'static str {
        self.kind.name()
    }

    /// How many inputs the operation reads.
    pub fn arity(self) -> usize {
        match self.kind {
            OpKind::Unary(_) => 1,
            OpKind::Binary(_) | OpKind::Axpby => 2,
        }
    }

    /// Checks the inputs (and the output of an `_into` form): one dtype, one
    /// shape, each a dense range; returns the dtype and each operand's range.
    pub fn check(self, operands: &[(DType, &Layout)]) -> Result<(DType, Vec<std::ops::Range<usize>>)> {
        let dtype = check::same(self.name(), operands)?;
        let names = ["the first input", "the second input", "the output"];
        let out_name = |i: usize| if i == self.arity() { names[2] } else { names[i] };
        let ranges = operands
            .iter()
            .enumerate()
            .map(|(i, (_, l))| check::dense(self.name(), out_name(i), l))
            .collect::<Result<Vec<_>>>()?;
        Ok((dtype, ranges))
    }

    /// `out[i] = op(a[i], b[i])` by gpukern's CPU reference.
    fn apply<T: Dt>(self, a: &[T], b: Option<&[T]>, out: &mut [T]) {
        let (alpha, beta) = self.scales;
        match (self.kind, b) {
            (OpKind::Unary(op), _) => out.iter_mut().zip(a).for_each(|(o, &x)| *o = unary_one(op, x)),
            (OpKind::Binary(op), Some(b)) => {
                out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (&x, &y))| *o = binary_one(op, x, y))
            }
            (OpKind::Axpby, Some(b)) => {
                out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (&x, &y))| *o = axpby_one(alpha, x, beta, y))
            }
            (_, None) => unreachable!("check() counted the inputs"),
        }
    }

    /// The forward on the CPU into a new storage.
    pub fn cpu(self, inputs: &[(&CpuStorage, &Layout)]) -> Result<CpuStorage> {
        let operands: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), *l)).collect();
        let (dtype, ranges) = self.check(&operands)?;
        fn run<T: Dt>(
            m: Map,
            inputs: &[(&CpuStorage, &Layout)],
            ranges: &[std::ops::Range<usize>],
        ) -> Result<CpuStorage> {
            let a = &T::cpu_storage_as_slice(inputs[0].0)?[ranges[0].clone()];
            let b = match inputs.get(1) {
                Some((s, _)) => Some(&T::cpu_storage_as_slice(s)?[ranges[1].clone()]),
                None => None,
            };
            let mut out = vec![T::from_f64(0.0); a.len()];
            m.apply(a, b, &mut out);
            Ok(T::to_cpu_storage_owned(out))
        }
        by_dtype!(dtype, run(self, inputs, &ranges))
    }

    /// The forward on the CPU into `dst`'s window (the `_into` forms).
    pub fn cpu_into(self, dst: &mut CpuStorage, dst_l: &Layout, inputs: &[(&CpuStorage, &Layout)]) -> Result<()> {
        let mut operands: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), *l)).collect();
        operands.push((dst.dtype(), dst_l));
        let (dtype, ranges) = self.check(&operands)?;
        fn run<T: Dt>(
            m: Map,
            dst: &mut CpuStorage,
            inputs: &[(&CpuStorage, &Layout)],
            ranges: &[std::ops::Range<usize>],
        ) -> Result<()> {
            let a = &T::cpu_storage_as_slice(inputs[0].0)?[ranges[0].clone()];
            let b = match inputs.get(1) {
                Some((s, _)) => Some(&T::cpu_storage_as_slice(s)?[ranges[1].clone()]),
                None => None,
            };
            let out = T::slice_mut(dst).expect("check() compared the dtypes");
            m.apply(a, b, &mut out[ranges[inputs.len()].clone()]);
            Ok(())
        }
        by_dtype!(dtype, run(self, dst, inputs, &ranges))
    }
}
