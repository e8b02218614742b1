//! CPU reference: the correctly rounded IEEE sum, element by element, and (in
//! `ops`) the element-wise library's operations ([`map`]).
//!
//! * f32: the host's own f32 addition (IEEE binary32, round to nearest even; Rust
//!   never flushes subnormals on x86-64 or aarch64).
//! * f16 and bf16: both operands widened exactly to f64, added in f64, and rounded
//!   once to the target format here. The f64 sum is itself rounded, but with
//!   53 >= 2p + 2 bits (p = 11 for f16, 8 for bf16) rounding twice gives the same
//!   result as rounding the exact sum once, so this is the correctly rounded sum.
//!
//! The rounding to the narrow formats is written out here rather than taken from
//! the `half` crate, so the reference and the library under test share no code;
//! the tests compare the two.

use half::{bf16, f16};

use crate::memory::buffer::Element;

mod act16;
mod glu;
pub use glu::{glu, glu_one, glu_split};
pub mod norms;
mod ops;
mod rounding;
pub use ops::{axpby_one, binary_one, map, unary_one};
pub use rounding::ReferenceOps;

/// Rounds `x` to a binary format with `man` explicit mantissa bits and minimum
/// normal exponent `emin` (maximum exponent `1 - emin`), ties to even. Returns the
/// format's bits (sign at bit `man + exponent bits`).
fn round_f64(x: f64, man: u32, emin: i32) -> u32 {
    let emax = 1 - emin;
    let exp_bits = (emax as u32 * 2 + 1).ilog2() + 1; // 5 for f16, 8 for bf16
    let sign = ((x.to_bits() >> 63) as u32) << (man + exp_bits);
    let exp_all = (1u32 << exp_bits) - 1;
    if x.is_nan() {
        return sign | (exp_all << man) | (1 << (man - 1));
    }
    let ax = x.abs();
    let pow2 = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
    // Largest finite value plus half an ulp: at or beyond it, round to infinity.
    let overflow = (2.0 - pow2(-(man as i32) - 1)) * pow2(emax);
    if ax >= overflow {
        return sign | (exp_all << man);
    }
    if ax < pow2(emin) {
        // Subnormal (or zero): the value in units of the smallest subnormal.
        let q = (ax * pow2(man as i32 - emin)).round_ties_even() as u32;
        return sign | q; // q == 2^man encodes the smallest normal, as it should
    }
    let e = ((ax.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let q = (ax * pow2(man as i32 - e)).round_ties_even() as u32; // in [2^man, 2^(man+1)]
                                                                  // A carry out of the mantissa (q == 2^(man+1)) lands in the exponent field.
    sign | ((((e - emin + 1) as u32) << man) + (q - (1 << man)))
}

/// f64 to f16 bits, round to nearest even, overflow to ±inf.
pub fn f64_to_f16_bits(x: f64) -> u16 {
    round_f64(x, 10, -14) as u16
}

/// f64 to bf16 bits, round to nearest even, overflow to ±inf.
pub fn f64_to_bf16_bits(x: f64) -> u16 {
    round_f64(x, 7, -126) as u16
}

/// Exact widening of f16 bits to f64 (written out, independent of `half`).
pub fn f16_bits_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as f64;
    match exp {
        0 => sign * man * f64::powi(2.0, -24),
        31 if man == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + man / 1024.0) * f64::powi(2.0, exp - 15),
    }
}

/// Exact widening of bf16 bits to f64.
pub fn bf16_bits_to_f64(h: u16) -> f64 {
    f32::from_bits((h as u32) << 16) as f64
}

/// One correctly rounded sum.
pub trait ReferenceAdd: Element {
    /// `a + b`, correctly rounded to `Self`.
    fn reference_add(a: Self, b: Self) -> Self;
}

impl ReferenceAdd for f32 {
    fn reference_add(a: f32, b: f32) -> f32 {
        a + b
    }
}

impl ReferenceAdd for f16 {
    fn reference_add(a: f16, b: f16) -> f16 {
        f16::from_bits(f64_to_f16_bits(f16_bits_to_f64(a.to_bits()) + f16_bits_to_f64(b.to_bits())))
    }
}

impl ReferenceAdd for bf16 {
    fn reference_add(a: bf16, b: bf16) -> bf16 {
        bf16::from_bits(f64_to_bf16_bits(bf16_bits_to_f64(a.to_bits()) + bf16_bits_to_f64(b.to_bits())))
    }
}

/// Element-wise reference sum. Panics if the lengths differ (test helper).
pub fn add<T: ReferenceAdd>(a: &[T], b: &[T]) -> Vec<T> {
    assert_eq!(a.len(), b.len(), "reference::add needs equal lengths");
    a.iter().zip(b).map(|(&x, &y)| T::reference_add(x, y)).collect()
}

/// Index of the first element where `got` and `want` are not the same value
/// ([`Element::same_as`]: equal bits, or both NaN), or of the first extra element
/// when the lengths differ.
pub fn first_mismatch<T: Element>(got: &[T], want: &[T]) -> Option<usize> {
    got.iter()
        .zip(want)
        .position(|(g, w)| !g.same_as(*w))
        .or_else(|| (got.len() != want.len()).then(|| got.len().min(want.len())))
}

/// Relative error ‖C − C_ref‖ / ‖C_ref‖ of a row-major f32 product `c = a · b`
/// (`a` m×k, `b` k×n) over the given rows of C, with C_ref computed in f64.
/// A NaN anywhere in those rows makes the result NaN (so it fails any bound).
pub fn matmul_rel_error(a: &[f32], b: &[f32], c: &[f32], (_m, n, k): (usize, usize, usize), rows: &[usize]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for &i in rows {
        for j in 0..n {
            let want: f64 = (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64).sum();
            num += (c[i * n + j] as f64 - want).powi(2);
            den += want * want;
        }
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn f16_rounding_edges() {
        assert_eq!(f64_to_f16_bits(65504.0 + 16.0), 0x7c00, "65504+16 is the tie to even -> inf");
        assert_eq!(f64_to_f16_bits(65504.0 + 8.0), 0x7bff, "65504+8 rounds back to 65504");
        assert_eq!(f64_to_f16_bits(-65520.0), 0xfc00);
        assert_eq!(f64_to_f16_bits(f64::powi(2.0, -24)), 0x0001);
        assert_eq!(f64_to_f16_bits(f64::powi(2.0, -25)), 0x0000, "half the smallest subnormal ties to 0");
        assert_eq!(f64_to_f16_bits(1.5 * f64::powi(2.0, -24)), 0x0002, "1.5 ulp ties to even 2");
        assert_eq!(
            f64_to_f16_bits(f64::powi(2.0, -14) * (1.0 - f64::powi(2.0, -12))),
            0x0400,
            "rounds up into the smallest normal"
        );
        assert_eq!(f64_to_f16_bits(-0.0), 0x8000);
        assert_eq!(f64_to_f16_bits(1.0 + f64::powi(2.0, -11)), 0x3c00, "tie at 1.0 goes to even");
        assert_eq!(f64_to_f16_bits(1.0 + 3.0 * f64::powi(2.0, -11)), 0x3c02, "odd tie goes up");
        assert!(f16_is_nan(f64_to_f16_bits(f64::NAN)));
    }

    fn f16_is_nan(x: u16) -> bool {
        kernels_gpu::bits::f16_is_nan(x)
    }

    #[test]
    fn f16_widening_is_exact_for_every_encoding() {
        for h in 0..=u16::MAX {
            let ours = f16_bits_to_f64(h);
            let theirs = f16::from_bits(h).to_f64();
            assert!(ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()), "{h:#06x}");
            if !ours.is_nan() {
                assert_eq!(f64_to_f16_bits(ours), h, "round trip {h:#06x}");
            }
        }
    }

    #[test]
    fn bf16_round_trip_every_encoding() {
        for h in 0..=u16::MAX {
            let x = bf16_bits_to_f64(h);
            if !x.is_nan() {
                assert_eq!(f64_to_bf16_bits(x), h, "{h:#06x}");
            } else {
                assert!(kernels_gpu::bits::bf16_is_nan(f64_to_bf16_bits(x)));
            }
        }
    }

    /// Two independent derivations must agree on random bit patterns: ours (f64 then
    /// one rounding) and `half`'s f32 path (f32 sum, then f32 -> f16, innocuous for
    /// f16 since 24 >= 2*11 + 2).
    #[test]
    fn f16_sum_agrees_with_an_independent_derivation() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..2_000_000 {
            let (a, b) = (f16::from_bits(rng.gen()), f16::from_bits(rng.gen()));
            let ours = f16::reference_add(a, b);
            let theirs = f16::from_f32(a.to_f32() + b.to_f32());
            assert!(
                ours.same_as(theirs),
                "{:#06x} + {:#06x}: {:#06x} vs {:#06x}",
                a.to_bits(),
                b.to_bits(),
                ours.to_bits(),
                theirs.to_bits()
            );
        }
    }

    /// bf16: ours against the kernel crate's f32-then-round path (what the GPU runs).
    #[test]
    fn bf16_sum_agrees_with_the_f32_path() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(8);
        for _ in 0..2_000_000 {
            let (a, b): (u16, u16) = (rng.gen(), rng.gen());
            let ours = bf16::reference_add(bf16::from_bits(a), bf16::from_bits(b));
            let f32_path = bf16::from_bits(kernels_gpu::bits::bf16_add(a, b));
            assert!(
                ours.same_as(f32_path),
                "{a:#06x} + {b:#06x}: {:#06x} vs {:#06x}",
                ours.to_bits(),
                f32_path.to_bits()
            );
        }
    }

    #[test]
    fn matmul_rel_error_is_zero_for_an_exact_product_and_nan_for_nan() {
        let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
        let c = [19.0f32, 22.0, 43.0, 50.0];
        assert_eq!(matmul_rel_error(&a, &b, &c, (2, 2, 2), &[0, 1]), 0.0);
        let off = [19.0f32, 22.0, 43.0, 51.0];
        assert!(matmul_rel_error(&a, &b, &off, (2, 2, 2), &[0, 1]) > 1e-3);
        assert!(matmul_rel_error(&a, &b, &[f32::NAN; 4], (2, 2, 2), &[0]).is_nan());
    }

    #[test]
    fn same_as_tells_zero_signs_apart_and_matches_nans() {
        assert!(!0.0f32.same_as(-0.0));
        assert!(f32::NAN.same_as(f32::from_bits(0x7f80_0001)));
        assert_eq!(first_mismatch(&[1.0f32, f32::NAN], &[1.0, f32::NAN]), None);
        assert_eq!(first_mismatch(&[1.0f32, 2.0], &[1.0, 3.0]), Some(1));
        assert_eq!(first_mismatch(&[1.0f32], &[1.0, 3.0]), Some(1));
    }
}
