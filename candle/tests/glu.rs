//! The gated activations on `Device::Cpu`: gpukern's reference bits through
//! the layouts the ops take (offsets; `[gate | up]` rows contiguous,
//! narrowed and in three dimensions), and the layouts and dtypes refused.

use candle_core::{DType, Device, Tensor, WithDType};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{GluOp, Rows};
use gpukern_candle as gc;
use rand::{Rng, SeedableRng};

fn host<T: WithDType>(t: &Tensor) -> Vec<T> {
    t.flatten_all().unwrap().to_vec1().unwrap()
}

fn data<T: ReferenceOps>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n).map(|_| T::round_from(rng.gen_range(-10.0..10.0))).collect()
}

fn every_layout<T: WithDType + ReferenceOps>() {
    let dev = Device::Cpu;
    for op in GluOp::ALL {
        for (rows, d) in [(1, 1), (3, 7), (4, 64), (2, 1001)] {
            // Separate gate and up, the gate at an offset.
            let (g, u) = (data::<T>(rows * d + 5, 1), data::<T>(rows * d, 2));
            let gt = Tensor::from_vec(g.clone(), rows * d + 5, &dev).unwrap().narrow(0, 5, rows * d).unwrap();
            let gt = gt.reshape((rows, d)).unwrap();
            let ut = Tensor::from_vec(u.clone(), (rows, d), &dev).unwrap();
            let y = gc::glu(op, &gt, &ut).unwrap();
            assert_eq!(y.dims(), &[rows, d]);
            let want = reference::glu(op, &g[5..], &u);
            assert!(host::<T>(&y).iter().zip(&want).all(|(a, b)| a.to_bits32() == b.to_bits32()), "{op:?} {rows}x{d}");
            // [gate | up] rows, contiguous and narrowed out of wider rows (a pitch).
            let x = data::<T>(rows * (2 * d + 3), 3);
            let wide = Tensor::from_vec(x.clone(), (rows, 2 * d + 3), &dev).unwrap();
            let three = Tensor::from_vec(x.clone(), (rows, 1, 2 * d + 3), &dev).unwrap().narrow(2, 0, 2 * d).unwrap();
            for (t, pitch, start) in [(wide.narrow(1, 3, 2 * d).unwrap(), 2 * d + 3, 3), (three, 2 * d + 3, 0)] {
                let y = gc::glu_split(op, &t).unwrap();
                let mut dims = t.dims().to_vec();
                *dims.last_mut().unwrap() = d;
                assert_eq!(y.dims(), dims.as_slice());
                let rl = Rows { rows, cols: d, x_pitch: pitch, y_pitch: d };
                let want = reference::glu_split(op, &x[start..], &vec![T::round_from(0.0); rows * d], rl);
                assert!(
                    host::<T>(&y).iter().zip(&want).all(|(a, b)| a.to_bits32() == b.to_bits32()),
                    "{op:?} split {rows}x{d}"
                );
            }
            let c = Tensor::from_vec(x[..rows * 2 * d].to_vec(), (rows, 2 * d), &dev).unwrap();
            let y = gc::glu_split(op, &c).unwrap();
            let rl = Rows { rows, cols: d, x_pitch: 2 * d, y_pitch: d };
            let want = reference::glu_split(op, &x, &vec![T::round_from(0.0); rows * d], rl);
            assert!(host::<T>(&y).iter().zip(&want).all(|(a, b)| a.to_bits32() == b.to_bits32()), "{op:?} contiguous");
        }
    }
}

#[test]
fn every_op_dtype_and_layout_gives_the_reference_bits() {
    every_layout::<f32>();
    every_layout::<f16>();
    every_layout::<bf16>();
}

#[test]
fn swiglu_is_glu_silu_and_bad_inputs_are_named() {
    let dev = Device::Cpu;
    let g = Tensor::new(&[[-1.0f32, 0.5], [2.0, -0.0]], &dev).unwrap();
    let u = Tensor::new(&[[3.0f32, 1.0], [-1.0, 4.0]], &dev).unwrap();
    let a = host::<f32>(&gc::swiglu(&g, &u).unwrap());
    assert_eq!(a, host::<f32>(&gc::glu(GluOp::Silu, &g, &u).unwrap()));
    assert_eq!(a[3].to_bits(), 0x8000_0000, "silu(-0)·4 = -0");
    let e = gc::glu(GluOp::Gelu, &g, &g.t().unwrap()).unwrap_err().to_string();
    assert!(e.contains("not one dense range"), "{e}");
    let e = gc::glu(GluOp::Gelu, &g, &u.to_dtype(DType::BF16).unwrap()).unwrap_err().to_string();
    assert!(e.contains("dtype mismatch"), "{e}");
    let odd = Tensor::zeros((2, 3), DType::F32, &dev).unwrap();
    let e = gc::glu_split(GluOp::Silu, &odd).unwrap_err().to_string();
    assert!(e.contains("gpukern_candle::glu_silu") && e.contains("even"), "{e}");
    let e = gc::glu_split(GluOp::Silu, &g.t().unwrap()).unwrap_err().to_string();
    assert!(e.contains("stride 1"), "{e}");
    let e = gc::glu(GluOp::Silu, &g.to_dtype(DType::F64).unwrap(), &u.to_dtype(DType::F64).unwrap()).unwrap_err();
    assert!(e.to_string().contains("F64"), "{e}");
}
