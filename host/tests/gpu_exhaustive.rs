//! Exhaustive GPU check of the claim in `kernels_gpu::lanes`: f16 and bf16
//! operations computed in f32 and rounded once are correctly rounded. Every one
//! of the 2^32 operand pairs of f16 `div`, bf16 `div` and bf16 `mul` goes through
//! the 128-bit pack kernel and is compared with the CPU reference (computed in
//! f64 and rounded once, written independently of the kernels). On sm_90 the
//! bf16 kernels with hardware bf16 arithmetic and rounding get the same check.
//! Every activation gets all 2^16 f16 and bf16 inputs through every pattern,
//! bit-exact against the correctly rounded result (the f64 function rounded
//! once, NaN bits included), and the share of correctly rounded results goes to
//! the verification record (`activation_rounding`).
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{gpu, record};
use gpukern::half::{bf16, f16};
use gpukern::reference::{binary_one, unary_one, ReferenceOps};
use gpukern::{BinaryOp, Dtype, LaunchShape, OpPattern, UnaryOp};
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
        da.copy_from_slice(&a).unwrap();
        let opts = gpukern::Opts::auto().pattern(pattern).shape(LaunchShape::default());
        gpu.binary_opts(op, &da, &db, &mut out, &stream, &opts).unwrap();
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

/// Every activation on all 2^16 inputs of `T`, each pattern (bf16's sm_90 one
/// where the device has it), bit for bit against the reference: the
/// correctly rounded result (the f64 function rounded once; NaN results the
/// canonical `0x7fff`, compared as bits too). Canaries on both sides of the
/// output. The share of correctly rounded results per function (all of them,
/// when this passes) goes to the record as `activation_rounding`.
fn activations_exhaustive<T: ReferenceOps>() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    const PAD: usize = 64;
    let x: Vec<T> = (0..=u16::MAX as u32).map(T::from_bits32).collect();
    let dx = gpu.upload(&x).unwrap();
    let mut out = gpu.alloc::<T>(x.len() + 2 * PAD).unwrap();
    let mut bad = Vec::new();
    for op in UnaryOp::ACTIVATIONS {
        let want: Vec<T> = x.iter().map(|&v| unary_one(op, v)).collect();
        let mut right_everywhere = x.len();
        for pattern in OpPattern::ALL {
            let what = format!("{:?} {} {pattern:?} all 2^16 inputs", T::DTYPE, op.name());
            if pattern == OpPattern::PackSm90 && (T::DTYPE != Dtype::Bf16 || !gpu.info().has_sm90()) {
                if T::DTYPE == Dtype::Bf16 {
                    common::record_skip("exhaustive", &what, 1 << 16, "needs compute capability 9.0");
                }
                continue;
            }
            out.fill(T::from_bits32(0xdead_beef)).unwrap();
            let view = out.slice_mut(PAD..PAD + x.len()).unwrap();
            let opts = gpukern::Opts::auto().pattern(pattern).shape(LaunchShape::default());
            gpu.unary_opts(op, &dx, view, &stream, &opts).unwrap();
            stream.synchronize().unwrap();
            let all = out.to_vec().unwrap();
            let canary = T::from_bits32(0xdead_beef).to_bits32();
            let canaries = all[..PAD].iter().chain(&all[PAD + x.len()..]).all(|c| c.to_bits32() == canary);
            let got = &all[PAD..PAD + x.len()];
            let wrong: Vec<usize> = (0..x.len()).filter(|&i| got[i].to_bits32() != want[i].to_bits32()).collect();
            right_everywhere = right_everywhere.min(x.len() - wrong.len());
            record("exhaustive", &what, 1 << 16, wrong.is_empty() && canaries);
            if !canaries {
                bad.push(format!("{what}: wrote outside its output"));
            }
            bad.extend(wrong.iter().take(3).map(|&i| {
                format!("{what}: {:#06x} gave {:#06x}, want {:#06x}", i, got[i].to_bits32(), want[i].to_bits32())
            }));
        }
        let extra = format!(
            "\"correctly_rounded\":{right_everywhere},\"share\":{:.6},\"finite_inputs\":{}",
            right_everywhere as f64 / x.len() as f64,
            x.iter().filter(|v| v.to_f64().is_finite()).count()
        );
        eprintln!("{:?} {}: {extra}", T::DTYPE, op.name());
        let name = format!("{:?} {}", T::DTYPE, op.name());
        common::record_with("activation_rounding", &name, x.len(), right_everywhere == x.len(), &extra);
    }
    assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_activations_are_bit_exact_for_every_input() {
    activations_exhaustive::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_activations_are_bit_exact_for_every_input() {
    activations_exhaustive::<bf16>();
}
