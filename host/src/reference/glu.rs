//! The gated activations on the CPU: `act(gate) · up` with `act` the f32
//! activation rule (`gpukern_device::math`, the GPU's bits: see `act16`),
//! the product formed exactly in f64 (24 × 24 bits) and rounded once to the
//! element type by this module's own rounding: written independently of the
//! kernels' rounding to odd, which the tests compare with it bit for bit.
//! NaN results are canonical (`0x7fff_ffff`, `0x7fff`).

use kernels_gpu::glu::GluOp;
use kernels_gpu::Dtype;

use super::ReferenceOps;
use crate::norms::Rows;

/// `act(gate) · up`, rounded once.
pub fn glu_one<T: ReferenceOps>(op: GluOp, gate: T, up: T) -> T {
    let a = super::act16::activation(op.activation(), gate.to_f64() as f32);
    let p = a as f64 * up.to_f64();
    if p.is_nan() {
        return T::from_bits32(if T::DTYPE == Dtype::F32 { 0x7fff_ffff } else { 0x7fff });
    }
    T::round_from(p)
}

/// Element-wise [`glu_one`]. Panics if the lengths differ (test helper).
pub fn glu<T: ReferenceOps>(op: GluOp, gate: &[T], up: &[T]) -> Vec<T> {
    assert_eq!(gate.len(), up.len(), "reference::glu needs equal lengths");
    gate.iter().zip(up).map(|(&g, &u)| glu_one(op, g, u)).collect()
}

/// [`glu_one`] over rows `[gate | up]` of `x` (`rows.cols` outputs per row,
/// input rows `rows.x_pitch` apart), into rows `rows.y_pitch` apart of a
/// copy of `y` (what lies between output rows is kept). Panics where a row
/// lies outside its slice (test helper).
pub fn glu_split<T: ReferenceOps>(op: GluOp, x: &[T], y: &[T], rows: Rows) -> Vec<T> {
    let mut out = y.to_vec();
    let d = rows.cols;
    for r in 0..rows.rows {
        let (xi, yi) = (r * rows.x_pitch, r * rows.y_pitch);
        for i in 0..d {
            out[yi + i] = glu_one(op, x[xi + i], x[xi + d + i]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpukern_device::activations::{Gelu, GeluTanh, Glu, Silu};
    use gpukern_device::lanes::{Bf16, Op, F16, F32};
    use half::{bf16, f16};
    use rand::{Rng, SeedableRng};

    /// The kernels' lane rule (rounding to odd, then to 16 bits) against
    /// this reference (exact product, rounded once), every gate of each
    /// 16-bit type with random ups, and random f32 pairs.
    #[test]
    fn the_kernels_lane_rule_is_this_reference() {
        fn each<A: gpukern_device::activations::Activation>(op: GluOp) {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(40);
            let rule = Glu::<A>::new();
            for g in 0..=u16::MAX {
                for _ in 0..24 {
                    let u: u16 = rng.gen();
                    let h = <Glu<A> as Op<F16>>::one(rule, g, u);
                    assert_eq!(
                        h,
                        glu_one(op, f16::from_bits(g), f16::from_bits(u)).to_bits(),
                        "{op:?} f16 {g:#06x} {u:#06x}"
                    );
                    let b = <Glu<A> as Op<Bf16>>::one(rule, g, u);
                    assert_eq!(
                        b,
                        glu_one(op, bf16::from_bits(g), bf16::from_bits(u)).to_bits(),
                        "{op:?} bf16 {g:#06x} {u:#06x}"
                    );
                }
            }
            for _ in 0..200_000 {
                let (g, u) = (f32::from_bits(rng.gen()), f32::from_bits(rng.gen::<u32>() & 0xbfff_ffff));
                let f = <Glu<A> as Op<F32>>::one(rule, g, u);
                assert_eq!(f.to_bits(), glu_one(op, g, u).to_bits(), "{op:?} f32 {g:e} {u:e}");
            }
        }
        each::<Silu>(GluOp::Silu);
        each::<Gelu>(GluOp::Gelu);
        each::<GeluTanh>(GluOp::GeluTanh);
    }

    #[test]
    fn nan_is_canonical_and_zero_keeps_its_sign() {
        assert_eq!(glu_one(GluOp::Silu, f32::NAN, 1.0).to_bits(), 0x7fff_ffff);
        assert_eq!(glu_one(GluOp::Gelu, bf16::ONE, bf16::NAN).to_bits(), 0x7fff);
        assert_eq!(glu_one(GluOp::Silu, f16::INFINITY, f16::ZERO).to_bits(), 0x7fff);
        assert_eq!(glu_one(GluOp::Silu, bf16::NEG_ZERO, bf16::ONE).to_bits(), 0x8000);
        assert_eq!(glu_one(GluOp::GeluTanh, 2.0f32, -0.0).to_bits(), 0x8000_0000);
        // silu(-inf) = -0: times a positive up, -0.
        assert_eq!(glu_one(GluOp::Silu, f32::NEG_INFINITY, 3.0).to_bits(), 0x8000_0000);
    }

    #[test]
    fn split_rows_read_the_halves_and_keep_the_gaps() {
        let x: Vec<f32> = (0..2 * 10).map(|i| i as f32 * 0.25 - 2.0).collect();
        let y = vec![7.0f32; 2 * 4];
        let rows = Rows { rows: 2, cols: 3, x_pitch: 10, y_pitch: 4 };
        let out = glu_split(GluOp::Silu, &x, &y, rows);
        assert_eq!(out[3], 7.0);
        assert_eq!(out[4 + 2].to_bits(), glu_one(GluOp::Silu, x[10 + 2], x[10 + 5]).to_bits());
    }
}
