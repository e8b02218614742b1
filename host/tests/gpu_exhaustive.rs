//! Exhaustive GPU check of the claim in `kernels_gpu::lanes`: f16 and bf16
//! operations computed in f32 and rounded once are correctly rounded. Every one
//! of the 2^32 operand pairs of f16 `div`, bf16 `div` and bf16 `mul` goes through
//! the 128-bit pack kernel and is compared with the CPU reference (computed in
//! f64 and rounded once, written independently of the kernels). On sm_90 the
//! bf16 kernels with hardware bf16 arithmetic and rounding get the same check.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{gpu, record};
use gpukern::half::{bf16, f16};
use gpukern::reference::{binary_one, ReferenceOps};
use gpukern::{BinaryOp, LaunchConfig, OpPattern};
use rayon::prelude::*;

/// Values of `a` per launch: 2^12 · 2^16 = 2^28 pairs.
const A_PER_CHUNK: usize = 1 << 12;

fn exhaustive<T: ReferenceOps>(op: BinaryOp, pattern: OpPattern) {
    if pattern == OpPattern::PackSm90 && !gpu().info().has_sm90() {
        common::record_skip("exhaustive", &format!("{op:?} {pattern:?}"), 1 << 32, "needs compute capability 9.0");
        return;
    }
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let pairs = A_PER_CHUNK << 16;
    // b runs through all 2^16 encodings under each a.
    let b: Vec<T> = (0..pairs).into_par_iter().map(|i| T::from_bits32((i & 0xffff) as u32)).collect();
    let db = gpu.upload(&b).unwrap();
    let mut da = gpu.alloc::<T>(pairs).unwrap();
    let mut out = gpu.alloc::<T>(pairs).unwrap();
    let (mut checked, mut bad) = (0u64, Vec::new());
    for chunk in 0..(1 << 16) / A_PER_CHUNK {
        let a: Vec<T> =
            (0..pairs).into_par_iter().map(|i| T::from_bits32((chunk * A_PER_CHUNK + (i >> 16)) as u32)).collect();
        da.copy_from(&a).unwrap();
        gpu.binary_with(op, pattern, LaunchConfig::default(), &da, &db, &mut out, &stream).unwrap();
        stream.synchronize().unwrap();
        let got = out.to_vec().unwrap();
        let wrong: Vec<usize> =
            (0..pairs).into_par_iter().filter(|&i| !got[i].same_as(binary_one(op, a[i], b[i]))).collect();
        bad.extend(wrong.iter().take(5).map(|&i| {
            format!("{:#06x} {op:?} {:#06x}: {:#06x}", a[i].to_bits32(), b[i].to_bits32(), got[i].to_bits32())
        }));
        checked += pairs as u64;
    }
    assert_eq!(checked, 1 << 32, "every pair once");
    let what = format!("{:?} {op:?} {pattern:?} all 2^32 pairs", T::DTYPE);
    record("exhaustive", &what, 1 << 32, bad.is_empty());
    assert!(bad.is_empty(), "{what}: mismatches (up to 5 per 2^28 pairs): {} listed: {}", bad.len(), bad.join("; "));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_div_is_correctly_rounded_for_every_pair() {
    exhaustive::<f16>(BinaryOp::Div, OpPattern::Pack);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_div_is_correctly_rounded_for_every_pair() {
    exhaustive::<bf16>(BinaryOp::Div, OpPattern::Pack);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_mul_is_correctly_rounded_for_every_pair() {
    exhaustive::<bf16>(BinaryOp::Mul, OpPattern::Pack);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_div_with_hardware_rounding_is_correctly_rounded_for_every_pair() {
    exhaustive::<bf16>(BinaryOp::Div, OpPattern::PackSm90);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_mul_with_hardware_bf16x2_is_correctly_rounded_for_every_pair() {
    exhaustive::<bf16>(BinaryOp::Mul, OpPattern::PackSm90);
}
