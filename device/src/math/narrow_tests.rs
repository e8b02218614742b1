//! Every f16 and every bf16 input of every [`super::narrow`] function: the
//! f32 result rounded once to the type against the f64 reference rounded once
//! (`check::correctly_rounded_share_*`). The inputs where they differ are
//! listed here, so a change that loses or gains one fails until the list says
//! so; and the special values.

use super::check::{self, correctly_rounded_share_bf16, correctly_rounded_share_f16, FUNCTIONS};
use super::narrow;
use std::vec::Vec;

/// (name, narrow function, bf16 inputs allowed to miss, f16 inputs allowed to miss).
type Case = (&'static str, fn(f32) -> f32, &'static [u16], &'static [u16]);

/// (name, function, input, expected output).
type Special = (&'static str, fn(f32) -> f32, f32, f32);

const CASES: &[Case] = &[
    // bf16: every input correctly rounded. f16: the listed inputs are exact
    // values whose f32 result lands on (or rounds across) a binary16 rounding
    // boundary: 0x0001 (the smallest subnormal, x/2 a tie after rounding to
    // f32), and results within ~2^-24 relative of a midpoint (sigmoid near 1/2,
    // exp near 1).
    ("exp", narrow::exp, &[], &[0x1f79, 0x25cf]),
    ("log", narrow::log, &[], &[0x1d78, 0x358b, 0x396f, 0x423e]),
    ("tanh", narrow::tanh, &[], &[0x319b, 0xb19b]),
    ("sigmoid", narrow::sigmoid, &[], &[0x1a00, 0x1f00, 0x2180, 0x9600, 0x9b00, 0xa1c0]),
    ("silu", narrow::silu, &[], &[0x0001, 0x1fbf, 0xc173]),
    ("gelu", narrow::gelu, &[], &[0x0001, 0x157c, 0x957c]),
    ("gelu_tanh", narrow::gelu_tanh, &[], &[0x0001, 0x957c, 0xadf1, 0xb083, 0xb5a7]),
    ("rsqrt", narrow::rsqrt, &[], &[]),
];

fn reference(name: &str) -> fn(f64) -> f64 {
    FUNCTIONS.iter().find(|r| r.0 == name).map(|r| r.2).expect("a reference")
}

#[test]
fn every_16_bit_input_rounds_correctly_but_the_listed_ones() {
    let mut report = Vec::new();
    for &(name, f, bf16_misses, f16_misses) in CASES {
        let r = reference(name);
        let (_, _, mut bf) = correctly_rounded_share_bf16(f, r);
        // Below 2^-125 silu and the GELUs are x/2 + (tiny, positive): the
        // slow path's rule (`Activation::HALF_X_AT_ZERO`), not the function.
        if matches!(name, "silu" | "gelu" | "gelu_tanh") {
            bf.retain(|&b| b & 0x7fff >= 0x0100);
        }
        let (_, _, hf) = correctly_rounded_share_f16(f, r);
        if bf != bf16_misses || hf != f16_misses {
            report.push(std::format!(
                "{name}: bf16 misses ({}) {bf:04x?}, f16 misses ({}) {hf:04x?}",
                bf.len(),
                hf.len()
            ));
        }
    }
    assert!(report.is_empty(), "update the lists (or the functions):\n{}", report.join("\n"));
}

#[test]
fn special_values() {
    let nan = f32::NAN;
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let cases: &[Special] = &[
        ("exp", narrow::exp, nan, nan),
        ("exp", narrow::exp, f32::INFINITY, f32::INFINITY),
        ("exp", narrow::exp, f32::NEG_INFINITY, 0.0),
        ("exp", narrow::exp, 0.0, 1.0),
        ("exp", narrow::exp, -0.0, 1.0),
        ("exp", narrow::exp, 100.0, f32::INFINITY),
        ("log", narrow::log, nan, nan),
        ("log", narrow::log, -1.0, nan),
        ("log", narrow::log, 0.0, f32::NEG_INFINITY),
        ("log", narrow::log, -0.0, f32::NEG_INFINITY),
        ("log", narrow::log, 1.0, 0.0),
        ("log", narrow::log, f32::INFINITY, f32::INFINITY),
        ("log", narrow::log, f32::NEG_INFINITY, nan),
        ("tanh", narrow::tanh, nan, nan),
        ("tanh", narrow::tanh, 0.0, 0.0),
        ("tanh", narrow::tanh, -0.0, -0.0),
        ("tanh", narrow::tanh, f32::INFINITY, 1.0),
        ("tanh", narrow::tanh, f32::NEG_INFINITY, -1.0),
        ("sigmoid", narrow::sigmoid, nan, nan),
        ("sigmoid", narrow::sigmoid, f32::INFINITY, 1.0),
        ("sigmoid", narrow::sigmoid, f32::NEG_INFINITY, 0.0),
        ("silu", narrow::silu, nan, nan),
        ("silu", narrow::silu, f32::INFINITY, f32::INFINITY),
        ("silu", narrow::silu, f32::NEG_INFINITY, -0.0),
        ("silu", narrow::silu, -0.0, -0.0),
        ("gelu", narrow::gelu, nan, nan),
        ("gelu", narrow::gelu, f32::INFINITY, f32::INFINITY),
        ("gelu", narrow::gelu, f32::NEG_INFINITY, -0.0),
        ("gelu", narrow::gelu, 0.0, 0.0),
        ("gelu", narrow::gelu, -0.0, -0.0),
        ("gelu_tanh", narrow::gelu_tanh, nan, nan),
        ("gelu_tanh", narrow::gelu_tanh, f32::INFINITY, f32::INFINITY),
        ("gelu_tanh", narrow::gelu_tanh, f32::NEG_INFINITY, -0.0),
        ("gelu_tanh", narrow::gelu_tanh, -0.0, -0.0),
        ("rsqrt", narrow::rsqrt, nan, nan),
        ("rsqrt", narrow::rsqrt, -1.0, nan),
        ("rsqrt", narrow::rsqrt, 0.0, f32::INFINITY),
        ("rsqrt", narrow::rsqrt, -0.0, f32::NEG_INFINITY),
        ("rsqrt", narrow::rsqrt, f32::INFINITY, 0.0),
    ];
    for &(name, f, x, want) in cases {
        assert!(same(f(x), want), "{name}({x}) = {} (want {want})", f(x));
    }
}

#[test]
fn relative_error_stays_near_two_to_the_minus_21_on_f32_samples() {
    // Not a target (the 16-bit results above are): a guard against a wrong
    // coefficient that the rounding to 16 bits would partly hide.
    for &(name, f, _, _) in CASES {
        let r = reference(name);
        let mut worst = 0f64;
        for bits in (0u32..0x7f80_0000).step_by(4099).chain((0x8000_0000u32..0xff80_0000).step_by(4099)) {
            let x = f32::from_bits(bits);
            let (got, want) = (f(x) as f64, r(x as f64));
            if want.is_finite() && want.abs() > 1e-30 && want.abs() < 3e38 {
                worst = worst.max(((got - want) / want).abs());
            }
        }
        // gelu_tanh's `2z = x(C1 + C3x²)` is rounded (no pair, unlike the f32
        // function): far out, where the result is below 1e-30 in magnitude
        // anyway, its relative error reaches 2^-17.
        let bound = if name == "gelu_tanh" { 2f64.powi(-16) } else { 2f64.powi(-19) };
        assert!(worst < bound, "{name}: relative error {worst:e}");
        let _ = check::ulp_error;
    }
}
