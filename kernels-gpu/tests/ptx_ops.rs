//! PTX-level checks of the element-wise library's kernels (`kernels_gpu::ops`)
//! in the tracked modules, runnable without a GPU.

use kernels_gpu::ops::{BinaryOp, OpKind, OpPattern, UnaryOp, OP_KERNELS};
use kernels_gpu::Dtype;

mod ptx_common;

use ptx_common::*;

#[test]
fn every_op_kernel_is_in_exactly_its_module() {
    for k in OP_KERNELS {
        let (home, other) = if k.needs_sm90() { (PTX90, PTX) } else { (PTX, PTX90) };
        assert!(home.contains(&format!(".visible .entry {}(", k.name)), "missing .entry {}", k.name);
        assert!(!other.contains(&format!(".entry {}(", k.name)), "{} is in both modules", k.name);
    }
}

/// Instruction lines of an op kernel, from its module.
fn op_body(k: &kernels_gpu::ops::OpKernel) -> Vec<&'static str> {
    body_in(if k.needs_sm90() { PTX90 } else { PTX }, k.name)
}

fn op_count(k: &kernels_gpu::ops::OpKernel, prefixes: &[&str]) -> usize {
    op_body(k).iter().filter(|l| prefixes.iter().any(|p| l.starts_with(p))).count()
}

#[test]
fn sm90_bf16_kernels_use_packed_bf16_arithmetic_and_hardware_rounding() {
    for k in OP_KERNELS.iter().filter(|k| k.needs_sm90()) {
        assert_eq!(k.dtype, Dtype::Bf16, "{}", k.name);
        let want = match k.kind {
            OpKind::Binary(BinaryOp::Add) => Some(("add.rn.bf16x2", 4)),
            OpKind::Binary(BinaryOp::Sub) => Some(("sub.rn.bf16x2", 4)),
            OpKind::Binary(BinaryOp::Mul) => Some(("mul.rn.bf16x2", 4)),
            OpKind::Binary(BinaryOp::Div) => Some(("cvt.rn.bf16.f32", 8)),
            OpKind::Axpby => Some(("mul.rn.bf16x2", 8)),
            _ => None,
        };
        if let Some((op, at_least)) = want {
            assert!(op_count(k, &[op]) >= at_least, "{}: expected {at_least}+ {op}", k.name);
        }
        // The activations' math is built on FMA on purpose (see the test below).
        if !is_activation(k) {
            assert_eq!(op_count(k, &["fma"]), 0, "{}", k.name);
        }
    }
}

#[test]
fn pack_kernels_load_each_input_once_with_128_bits_and_store_once() {
    for k in OP_KERNELS.iter().filter(|k| k.pattern != OpPattern::Scalar) {
        // Per index width: the walk has a 32-bit and a 64-bit loop.
        assert_eq!(op_count(k, LD128), 2 * k.kind.inputs(), "{}: one 128-bit load per input", k.name);
        assert_eq!(op_count(k, ST128), 2, "{}: one 128-bit store", k.name);
    }
}

#[test]
fn scalar_kernels_use_element_wide_accesses() {
    for k in OP_KERNELS.iter().filter(|k| k.pattern == OpPattern::Scalar) {
        let (ld, st) = if k.dtype == Dtype::F32 { (LD32, ST32) } else { (LD16, ST16) };
        assert_eq!(count_any(k.name, ld), 2 * k.kind.inputs(), "{}", k.name);
        assert_eq!(count_any(k.name, st), 2, "{}", k.name);
        assert_eq!(count_any(k.name, LD128) + count_any(k.name, ST128), 0, "{}", k.name);
    }
}

#[test]
fn arithmetic_uses_the_rounded_ieee_instructions_and_never_fuses() {
    for k in OP_KERNELS.iter().filter(|k| !k.needs_sm90() && !is_activation(k)) {
        assert_eq!(count(k.name, "fma"), 0, "{}: no contraction into fma", k.name);
        let packed_f16 = k.dtype == Dtype::F16 && k.pattern == OpPattern::Pack;
        let want = match (k.kind, k.dtype) {
            (OpKind::Binary(BinaryOp::Sub), Dtype::F16) if packed_f16 => Some(("sub.rn.f16x2", 4)),
            (OpKind::Binary(BinaryOp::Mul), Dtype::F16) if packed_f16 => Some(("mul.rn.f16x2", 4)),
            (OpKind::Binary(BinaryOp::Sub), Dtype::F16) => Some(("sub.rn.f16", 1)),
            (OpKind::Binary(BinaryOp::Mul), Dtype::F16) => Some(("mul.rn.f16", 1)),
            (OpKind::Binary(BinaryOp::Div), _) => Some(("div.rn.f32", 1)),
            (OpKind::Axpby, Dtype::F16) if packed_f16 => Some(("mul.rn.f16x2", 8)),
            (OpKind::Axpby, Dtype::F32) => Some(("mul.rn.f32", 2)),
            _ => None,
        };
        if let Some((op, at_least)) = want {
            assert!(count(k.name, op) >= at_least, "{}: expected {at_least}+ {op}", k.name);
        }
    }
}

fn is_activation(k: &kernels_gpu::ops::OpKernel) -> bool {
    matches!(k.kind, OpKind::Unary(op) if op.activation().is_some())
}

/// The activations compute in f32 with the rounded IEEE instructions and
/// `fma.rn.f32` (the host's `mul_add` gives the same bits), and round once per
/// lane to the dtype: `cvt.rn.f16.f32` for f16, `cvt.rn.bf16.f32` in the sm_90
/// module, the integer rounding (no `cvt` to bf16) in the portable one.
#[test]
fn activations_round_once_per_lane_with_the_dtypes_rounding() {
    for k in OP_KERNELS.iter().filter(|k| is_activation(k)) {
        let body = op_body(k);
        let lanes = k.lanes() as usize;
        for l in body.iter().filter(|l| l.starts_with("fma") || l.starts_with("mul.") || l.starts_with("add.f")) {
            assert!(!l.contains(".f16") && !l.contains("bf16"), "{}: math in f32 only: {l}", k.name);
        }
        let cvt = |p: &str| body.iter().filter(|l| l.starts_with(p)).count();
        match (k.dtype, k.needs_sm90()) {
            (Dtype::F16, _) => assert!(cvt("cvt.rn.f16.f32") >= 2 * lanes, "{}: one rounding per lane", k.name),
            (Dtype::Bf16, true) => assert!(cvt("cvt.rn.bf16.f32") >= 2 * lanes, "{}: hardware rounding", k.name),
            (Dtype::Bf16, false) => assert_eq!(cvt("cvt.rn.bf16"), 0, "{}: sm_70 has no bf16 cvt", k.name),
            (Dtype::F32, _) => assert_eq!(cvt("cvt.rn.f16") + cvt("cvt.rn.bf16"), 0, "{}", k.name),
        }
    }
}

#[test]
fn sign_bit_ops_are_integer_operations() {
    for k in OP_KERNELS.iter().filter(|k| matches!(k.kind, OpKind::Unary(UnaryOp::Neg | UnaryOp::Abs))) {
        let float_math = op_body(k).iter().filter(|l| l.contains(".rn.") || l.starts_with("neg.f")).count();
        assert_eq!(float_math, 0, "{}: a sign flip needs no float instruction", k.name);
    }
}

/// Whether the 16-bit lanes of `op` take the fast path (the device crate's
/// `Activation::FAST_F16` / `FAST_BF16`; tanh and sqrt run the slow path
/// alone).
fn fast16(op: UnaryOp, dtype: Dtype) -> bool {
    use gpukern_device::activations::{self as a, Activation};
    fn of<A: Activation>(dtype: Dtype) -> bool {
        if dtype == Dtype::F16 {
            A::FAST_F16
        } else {
            A::FAST_BF16
        }
    }
    match op {
        UnaryOp::Exp => of::<a::Exp>(dtype),
        UnaryOp::Log => of::<a::Log>(dtype),
        UnaryOp::Tanh => of::<a::Tanh>(dtype),
        UnaryOp::Sigmoid => of::<a::Sigmoid>(dtype),
        UnaryOp::Silu => of::<a::Silu>(dtype),
        UnaryOp::Gelu => of::<a::Gelu>(dtype),
        UnaryOp::GeluTanh => of::<a::GeluTanh>(dtype),
        UnaryOp::Rsqrt => of::<a::Rsqrt>(dtype),
        UnaryOp::Sqrt => of::<a::Sqrt>(dtype),
        _ => false,
    }
}

/// The SFU's approximate instructions run only in the f16 and bf16
/// activations that take the fast path (behind the rounding test), and there
/// the rounding test's two conversions per lane and the converged fallback's
/// vote over the active threads are present; no other kernel of either
/// module has one (tanh and sqrt run the slow path alone, IEEE operations
/// only).
#[test]
fn approximate_instructions_only_in_the_16_bit_activations() {
    assert!(!fast16(UnaryOp::Tanh, Dtype::F16) && !fast16(UnaryOp::Sqrt, Dtype::Bf16));
    assert!(fast16(UnaryOp::Silu, Dtype::F16) && fast16(UnaryOp::Exp, Dtype::Bf16));
    for k in OP_KERNELS {
        let body = op_body(k);
        let sfu = body.iter().filter(|l| SFU.iter().any(|s| l.starts_with(s))).count();
        let narrow = k.dtype != Dtype::F32;
        let act = matches!(k.kind, OpKind::Unary(op) if fast16(op, k.dtype));
        if narrow && act {
            assert!(sfu >= k.lanes() as usize, "{}: fast path on the SFU", k.name);
            assert!(body.iter().any(|l| l.contains("activemask.b32")), "{}: converged fallback", k.name);
            assert!(body.iter().any(|l| l.contains("vote.sync.any.pred")), "{}: converged fallback", k.name);
        } else {
            assert_eq!(sfu, 0, "{}: no approximate arithmetic", k.name);
        }
    }
    // Module-wide, outlined lane groups (`.func`) included: an approximate
    // instruction sits in a 16-bit activation kernel or in a function outlined
    // from one (its mangled name carries the activation's path).
    for ptx in [PTX, PTX90] {
        let mut scope = "";
        for l in ptx.lines() {
            if let Some(rest) = l.strip_prefix(".visible .entry ").or_else(|| l.split(".func ").nth(1)) {
                scope = rest.trim_start_matches(|c: char| c == '(' || c.is_whitespace() || c == '.');
                scope = scope.rsplit(' ').next().unwrap_or(scope).split('(').next().unwrap_or("");
            }
            if l.contains(".approx") {
                let kernel = OP_KERNELS
                    .iter()
                    .chain(kernels_gpu::ops::PDL_KERNELS)
                    .any(|k| k.name == scope && k.dtype != Dtype::F32);
                assert!(kernel || scope.contains("11activations"), "{scope}: {l}");
            }
        }
    }
}

#[test]
fn load_hint_kernels_use_non_coherent_128_bit_loads() {
    // Packs per thread of the add kernels (ptx.rs's `W`).
    const W: usize = 2;
    for (name, l2) in [("add_f32x4_nc", false), ("add_f16x8_nc", false), ("add_bf16x8_nc", false)].into_iter().chain([
        ("add_f32x4_l2", true),
        ("add_f16x8_l2", true),
        ("add_bf16x8_l2", true),
    ]) {
        let b = if l2 { body_in(PTX90, name) } else { body(name) };
        let want = if l2 { "ld.global.nc.L2::256B.v4.u32" } else { "ld.global.nc.v4.u32" };
        assert_eq!(b.iter().filter(|l| l.contains(want)).count(), 2 * W, "{name}: two hinted 128-bit loads");
        assert_eq!(b.iter().filter(|l| l.starts_with("st.global.v4")).count(), W, "{name}: one 128-bit store");
    }
}
