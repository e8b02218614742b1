//! The norms on the GPU against the CPU reference, bit for bit: every
//! operation × dtype × plan over odd row lengths, offsets, pitched rows with
//! canaries before, after and between rows, special rows (all equal, all
//! zero, NaN, ±inf, near the dtype's overflow, masked with -inf), eps edge
//! cases, the long-row split, and the argument errors (nothing written), on
//! a stream and at a graph's record.

mod common;
mod norms_common;

use common::{gpu, record};
use gpukern::reference::norms as rn;
use gpukern::CudarcExt;
use gpukern::{DeviceVec, Dtype, Error, LaunchShape, Norm, NormOp, NormPlan, NormStrategy, OpPattern, Opts, Pdl, Rows};
use norms_common::{plans, run_dtype, Case, Fill, POISON};

const COLS: [usize; 10] = [1, 3, 8, 31, 33, 1000, 1024, 2049, 4097, 5120];

fn base(op: NormOp, rows: usize, cols: usize) -> Case {
    Case::base(op, rows, cols, (rows * 1_000_003 + cols) as u64)
}

/// Runs every case, records each, and fails with the first failures.
fn run_all(test: &str, cases: impl IntoIterator<Item = (Dtype, Case)>) {
    let gpu = gpu();
    let mut failures = Vec::new();
    let mut count = 0;
    for (dtype, c) in cases {
        let r = run_dtype(&gpu, dtype, &c);
        record(
            test,
            &format!("{} {:?} {}x{} {:?}", c.op.name(), dtype, c.rows, c.cols, c.plan),
            c.rows * c.cols,
            r.is_ok(),
        );
        count += 1;
        if let Err(e) = r {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed; first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_every_plan_and_row_length() {
    let mut cases = Vec::new();
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            for cols in COLS {
                for plan in plans(dtype, cols) {
                    cases.push((dtype, Case { plan, ..base(op, 5, cols) }));
                }
            }
        }
    }
    run_all("norms_every_plan_and_row_length", cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_offsets_pitches_and_canaries() {
    let mut cases = Vec::new();
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            for (cols, gaps, offsets) in [
                (33, (5, 3), (1, 3, 2)),
                (64, (8, 0), (8, 8, 8)),
                (1000, (3, 11), (0, 1, 0)),
                (4097, (0, 1), (2, 0, 1)),
                (2048, (16, 8), (8, 16, 0)),
            ] {
                for plan in plans(dtype, cols) {
                    for scalar in [false, true] {
                        cases.push((dtype, Case { plan, gaps, offsets, scalar, ..base(op, 7, cols) }));
                    }
                }
            }
        }
    }
    run_all("norms_offsets_pitches_and_canaries", cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_special_rows_and_eps() {
    let mut cases = Vec::new();
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            for fill in Fill::ALL {
                for cols in [1, 31, 1000, 5000] {
                    for plan in plans(dtype, cols) {
                        cases.push((dtype, Case { plan, fill, ..base(op, 4, cols) }));
                    }
                }
            }
            for eps in [0.0, 1e-30, f32::MIN_POSITIVE, 1e-6, 1.0, 1e30, f32::INFINITY] {
                for fill in [Fill::Random, Fill::Zero, Fill::Equal] {
                    cases.push((dtype, Case { eps, fill, ..base(op, 3, 100) }));
                }
            }
        }
    }
    run_all("norms_special_rows_and_eps", cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_long_rows_and_many_rows() {
    // Under compute-sanitizer the longest rows are left out (minutes each).
    let sanitizing = std::env::var_os("GPUKERN_SANITIZE").is_some();
    let shapes: &[(usize, usize)] = if sanitizing {
        &[(2, 65536 + 5), (4099, 16)]
    } else {
        &[(2, 65536 + 5), (3, 262144), (1, 1 << 20), (4099, 16), (1500, 129)]
    };
    let mut cases = Vec::new();
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            for &(rows, cols) in shapes {
                cases.push((dtype, Case { seed: 7, ..base(op, rows, cols) }));
            }
            let plan = Some(NormPlan { strategy: NormStrategy::Split, block: 512, k: 1 });
            cases.push((dtype, Case { plan, ..base(op, 2, 100_003) }));
            // Clusters of 5 (bf16, f16) and 9 blocks (f32: the non-portable size).
            let plan = Some(NormPlan { strategy: NormStrategy::Cluster, block: 512, k: 4 });
            cases.push((dtype, Case { plan, ..base(op, 3, 65536 + 5) }));
        }
    }
    run_all("norms_long_rows_and_many_rows", cases);
}

/// The pipelined plans (sm_90) where they run pipelined: enough rows that
/// each persistent block walks its ring around more than twice (every
/// barrier phase reused), row lengths on and off the 16-byte chunk, pitched
/// rows, special fills; and the plan that ran is the pipelined one.
#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_pipelined_plans_walk_many_rows() {
    let gpu = common::gpu();
    let many = if common::sanitizing() { 300 } else { 9000 };
    let mut cases = Vec::new();
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            for (rows, cols, strategy, block, k) in [
                (many, 4096, NormStrategy::Pipe, 256, 2),
                (300, 4096 + 24, NormStrategy::Pipe, 256, 4),
                (1000, 1000, NormStrategy::Pipe, 128, 2),
                (300, 16384, NormStrategy::Pipe, 1024, 4),
                (many, 250, NormStrategy::PipeWarp, 256, 2),
                (3000, 37, NormStrategy::PipeWarp, 1024, 1),
                (500, 3, NormStrategy::PipeWarp, 64, 1),
            ] {
                let plan = NormPlan { strategy, block, k };
                if plan.check(NormOp::Rms, dtype, cols).is_err() {
                    continue;
                }
                let fills: &[Fill] =
                    if rows == many { &[Fill::Random] } else { &[Fill::Random, Fill::WithNan, Fill::Masked] };
                for &fill in fills {
                    let gaps = if fill == Fill::Random { (8, 16) } else { (0, 0) };
                    cases.push((dtype, Case { plan: Some(plan), fill, gaps, seed: 11, ..base(op, rows, cols) }));
                }
            }
        }
    }
    if gpu.info().has_sm90() {
        // Pitches of whole 16-byte packs: the pipelined plan itself runs, but
        // where its kernel's registers cannot launch the block (f32 and f16
        // 16384 at 1024 threads on an H200). Otherwise (rows of 3 with gaps
        // of 8 and 16: pitches of 11 and 19) its twin runs, with the same bits.
        for (dtype, c) in cases.iter().filter(|(_, c)| c.rows <= 1000) {
            let ran = run_dtype(&gpu, *dtype, c).unwrap_or_else(|e| panic!("{e}"));
            let twin = c.plan.map(|p| NormPlan { strategy: p.strategy.unpipelined(), ..p });
            let lanes = 16 / dtype.size();
            let packs = (c.cols + c.gaps.0).is_multiple_of(lanes) && (c.cols + c.gaps.1).is_multiple_of(lanes);
            let may_fall_back = !packs || c.plan.is_some_and(|p| p.block == 1024);
            assert!(Some(ran) == c.plan || (may_fall_back && Some(ran) == twin), "{c:?}");
        }
    }
    run_all("norms_pipelined_plans_walk_many_rows", cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_argument_errors_write_nothing() {
    let gpu = gpu();
    let s = gpu.stream().unwrap();
    let x = gpu.upload(&vec![1.0f32; 64]).unwrap();
    let w = gpu.upload(&[1.0f32; 16]).unwrap();
    let mut y = gpu.upload(&vec![f32::from_bits(POISON); 64]).unwrap();
    let rms = |w| Norm::rms(w, 1e-6);
    let cases: Vec<(&str, Rows, Option<NormPlan>, usize)> = vec![
        ("pitch below cols", Rows { rows: 2, cols: 16, x_pitch: 15, y_pitch: 16 }, None, 16),
        ("y pitch below cols", Rows { rows: 2, cols: 16, x_pitch: 16, y_pitch: 8 }, None, 16),
        ("x too short", Rows::contiguous(5, 16), None, 16),
        ("weight length", Rows::contiguous(2, 16), None, 15),
        ("cols too long", Rows::contiguous(1, (1 << 24) + 1), None, 16),
        ("bad block", Rows::contiguous(2, 16), Some(NormPlan { strategy: NormStrategy::Block, block: 48, k: 1 }), 16),
        ("bad k", Rows::contiguous(2, 16), Some(NormPlan { strategy: NormStrategy::Block, block: 32, k: 3 }), 16),
    ];
    for (what, rows, plan, wlen) in cases {
        let wv = w.slice(..wlen).unwrap();
        let mut opts = Opts::auto();
        opts.norm_plan = plan;
        let r = gpu.norm(rms(wv), &x, &mut y, rows, &opts, &s);
        assert!(matches!(r, Err(Error::Shape { .. } | Error::BlockSize { .. })), "{what}: {r:?}");
    }
    // A plan that cannot hold the row (32 threads × 1 chunk of 4 f32 < 200).
    let small = NormPlan { strategy: NormStrategy::Warp, block: 32, k: 1 };
    let opts = Opts::auto().norm_plan(small);
    let r = gpu.norm(Norm::Softmax, &x, &mut y, Rows::contiguous(1, 200), &opts, &s);
    assert!(matches!(&r, Err(Error::Shape { detail, .. }) if detail.contains("cannot hold")), "plan too small: {r:?}");
    // Options a norm has no use for: a launch shape, a 128-bit pattern.
    for opts in [Opts::auto().shape(LaunchShape::with_block(256)), Opts::auto().pattern(OpPattern::Pack)] {
        let r = gpu.norm(Norm::Softmax, &x, &mut y, Rows::contiguous(4, 16), &opts, &s);
        assert!(matches!(r, Err(Error::Shape { .. })), "{opts:?}: {r:?}");
    }
    // A weight for a family without one is not an operand (softmax): fine;
    // a layer norm whose bias has the wrong length is refused.
    let r = gpu.norm(
        Norm::layer(w.slice(..16).unwrap(), w.slice(..8).unwrap(), 0.0),
        &x,
        &mut y,
        Rows::contiguous(2, 16),
        &Opts::auto(),
        &s,
    );
    assert!(matches!(r, Err(Error::Shape { .. })), "bias length: {r:?}");
    s.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|v| v.to_bits() == POISON), "an error wrote");
    // Empty: nothing queued, Ok.
    gpu.norm(Norm::Softmax, &x, &mut y, Rows::contiguous(0, 16), &Opts::auto(), &s).unwrap();
    gpu.norm(Norm::Softmax, &x, &mut y, Rows::contiguous(4, 0), &Opts::auto(), &s).unwrap();
    s.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|v| v.to_bits() == POISON), "an empty call wrote");
}

/// `norm_cudarc`: cudarc buffers (a window at an odd offset, as candle
/// passes a tensor's layout) on a cudarc stream, bit for bit with the CPU
/// reference, `add_rms_norm`'s `h` included; a stream or a buffer of another
/// context is refused with nothing written.
#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_on_cudarc_buffers_and_stream() {
    use cudarc::driver::CudaContext;
    use gpukern::half::bf16;
    use gpukern::reference::norms as rn;
    use gpukern::CudarcNorm;
    let gpu = gpu();
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let (rows, cols, off) = (6, 1000, 3);
    let x: Vec<bf16> = (0..off + rows * cols).map(|i| bf16::from_f32(((i * 37) % 101) as f32 / 13.0 - 3.0)).collect();
    let r: Vec<bf16> = (0..rows * cols).map(|i| bf16::from_f32(((i * 11) % 29) as f32 / 7.0 - 2.0)).collect();
    let w: Vec<bf16> = (0..cols).map(|i| bf16::from_f32(1.0 + (i % 7) as f32 / 8.0)).collect();
    let (dx, dr, dw) = (stream.clone_htod(&x).unwrap(), stream.clone_htod(&r).unwrap(), stream.clone_htod(&w).unwrap());
    let mut dy = stream.alloc_zeros::<bf16>(rows * cols).unwrap();
    let mut dh = stream.alloc_zeros::<bf16>(rows * cols).unwrap();
    let shape = Rows::contiguous(rows, cols);
    let window = dx.slice(off..);
    let op: CudarcNorm<'_, bf16> = Norm::rms(&dw, 1e-6);
    let plan = gpu.norm_cudarc(op, &window, &mut dy, shape, &Opts::auto(), &stream).unwrap();
    let got: Vec<bf16> = stream.clone_dtoh(&dy).unwrap();
    let want = rn::norm(Norm::rms(&w[..], 1e-6), &x[off..], shape, plan.order(Dtype::Bf16, cols));
    assert!(got.iter().zip(&want.y).all(|(g, w)| g.to_bits() == w.to_bits()), "rms_norm differs from the CPU");
    let plan = gpu
        .norm_cudarc(Norm::add_rms(&dr, &mut dh, &dw, 1e-5), &window, &mut dy, shape, &Opts::auto(), &stream)
        .unwrap();
    let (got_y, got_h): (Vec<bf16>, Vec<bf16>) = (stream.clone_dtoh(&dy).unwrap(), stream.clone_dtoh(&dh).unwrap());
    let host = Norm::add_rms(&r[..], (), &w[..], 1e-5);
    let want = rn::norm(host, &x[off..], shape, plan.order(Dtype::Bf16, cols));
    assert!(got_y.iter().zip(&want.y).all(|(g, w)| g.to_bits() == w.to_bits()), "add_rms_norm's y differs");
    let want_h = want.h.expect("add_rms_norm returns h");
    assert!(got_h.iter().zip(&want_h).all(|(g, w)| g.to_bits() == w.to_bits()), "add_rms_norm's h differs");
    // Another context's stream, or a buffer of another context: an error, nothing written.
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let other_stream = other.new_stream().unwrap();
    let mut dz = stream.alloc_zeros::<bf16>(cols).unwrap();
    let e = gpu.norm_cudarc(Norm::Softmax, &dx, &mut dz, Rows::contiguous(1, cols), &Opts::auto(), &other_stream);
    assert!(matches!(e, Err(Error::ForeignContext { .. })), "{e:?}");
    let foreign_w = other_stream.clone_htod(&w).unwrap();
    let op: CudarcNorm<'_, bf16> = Norm::rms(&foreign_w, 1e-6);
    let e = gpu.norm_cudarc(op, &dx, &mut dz, Rows::contiguous(1, cols), &Opts::auto(), &stream);
    assert!(matches!(e, Err(Error::ForeignContext { .. })), "{e:?}");
    let zeros: Vec<bf16> = stream.clone_dtoh(&dz).unwrap();
    assert!(zeros.iter().all(|v| v.to_bits() == 0), "a refused call wrote");
}

/// `GraphBuilder::norm` refuses at record time, with nothing recorded, what
/// the builder's borrow rule and `Gpu::norm` refuse; a recorded norm runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_norm_refuses_misuse_at_record_time() {
    let gpu = gpu();
    let (cols, rows) = (64, 4);
    let x = gpu.upload(&vec![1.0f32; rows * cols]).unwrap();
    let w = gpu.upload(&vec![1.0f32; cols + 1]).unwrap();
    let mut y = gpu.upload(&vec![f32::from_bits(POISON); rows * cols]).unwrap();
    let mut h = gpu.upload(&vec![f32::from_bits(POISON); rows * cols]).unwrap();
    let mut z = gpu.upload(&vec![f32::from_bits(POISON); rows * cols]).unwrap();
    let other_x = gpu.upload(&vec![1.0f32; rows * cols]).unwrap();
    let mut other = gpu.graph();
    let foreign = other.input(&other_x).unwrap();
    let mut g = gpu.graph();
    let (sx, sw) = (g.input(&x).unwrap(), g.input(&w).unwrap());
    let (sy, sh, sz) = (g.output(&mut y).unwrap(), g.output(&mut h).unwrap(), g.output(&mut z).unwrap());
    let weight = sw.slice(..cols).unwrap();
    let rms = Norm::rms(weight, 1e-6);
    let shape = Rows::contiguous(rows, cols);
    let d = &Opts::auto();
    // Borrow rules (check_slots).
    assert!(matches!(g.norm(rms, sx, sx, shape, d), Err(Error::WrongOperands { .. })), "an input as output");
    assert!(matches!(g.norm(rms, sy, sy, shape, d), Err(Error::WrongOperands { .. })), "y is x");
    let (y0, y1) = (sy.slice(..cols * 2).unwrap(), sy.slice(cols..cols * 3).unwrap());
    assert!(matches!(g.norm(Norm::Softmax, y0, y1, Rows::contiguous(2, cols), d), Err(Error::WrongOperands { .. })));
    let add = Norm::add_rms(sx, sy, weight, 1e-6);
    assert!(matches!(g.norm(add, sx, sy, shape, d), Err(Error::WrongOperands { .. })), "h is y");
    let add = Norm::add_rms(sx, sx, weight, 1e-6);
    assert!(matches!(g.norm(add, sx, sy, shape, d), Err(Error::WrongOperands { .. })), "h an input");
    assert!(matches!(g.norm(rms, foreign, sy, shape, d), Err(Error::ForeignSlot { .. })), "a slot of another builder");
    // Gpu::norm's own checks.
    let bad = Norm::add_rms(sx, sh, sw, 1e-6);
    assert!(matches!(g.norm(bad, sx, sy, shape, d), Err(Error::Shape { .. })), "weight length");
    let layer = Norm::layer(weight, sw.slice(..8).unwrap(), 0.0);
    assert!(matches!(g.norm(layer, sx, sy, shape, d), Err(Error::Shape { .. })), "bias length");
    let pitch = Rows { rows, cols, x_pitch: cols - 1, y_pitch: cols };
    assert!(matches!(g.norm(rms, sx, sz, pitch, d), Err(Error::Shape { .. })), "pitch below cols");
    let long = Rows { rows: rows + 1, cols, x_pitch: cols, y_pitch: cols };
    assert!(matches!(g.norm(rms, sx, sz, long, d), Err(Error::Shape { .. })), "x and y too short");
    let tiny = NormPlan { strategy: NormStrategy::Warp, block: 32, k: 1 };
    let o = &d.norm_plan(tiny);
    // 32 threads × 1 chunk of 4 f32 < 200.
    let r = g.norm(Norm::Softmax, sx, sz, Rows::contiguous(1, 200), o);
    assert!(
        matches!(&r, Err(Error::Shape { detail, .. }) if detail.contains("cannot hold")),
        "a plan too small: {r:?}"
    );
    let bad_block = &d.norm_plan(NormPlan { strategy: NormStrategy::Block, block: 48, k: 1 });
    assert!(matches!(g.norm(Norm::Softmax, sx, sz, shape, bad_block), Err(Error::BlockSize { .. })));
    let shaped = &d.shape(LaunchShape::with_block(256));
    assert!(matches!(g.norm(Norm::Softmax, sx, sz, shape, shaped), Err(Error::Shape { .. })), "a launch shape");
    assert_eq!(g.len(), 0, "nothing recorded");
    // A good one records; its graph writes z only.
    let plan = g.norm(Norm::LogSoftmax, sx, sz, shape, &d.pdl(Pdl::On)).unwrap();
    assert_eq!(g.len(), 1);
    let graph = g.build().unwrap();
    graph.launch(&gpu.stream().unwrap()).unwrap();
    gpu.synchronize().unwrap();
    drop(graph);
    let poison = |v: &DeviceVec<f32>| v.to_vec().unwrap().iter().all(|e| e.to_bits() == POISON);
    assert!(poison(&y) && poison(&h), "a refused norm wrote");
    assert!(!poison(&z), "the recorded norm did not run");
    let want = rn::norm(Norm::LogSoftmax, &x.to_vec().unwrap(), shape, plan.order(Dtype::F32, cols));
    assert!(z.to_vec().unwrap().iter().zip(&want.y).all(|(g, w)| g.to_bits() == w.to_bits()), "log_softmax differs");
}
