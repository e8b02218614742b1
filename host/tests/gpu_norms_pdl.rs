//! The norms under programmatic dependent launch and in graphs: every
//! operation × dtype × plan (warp, block, split, cluster on sm_90) with PDL
//! forced on, bit for bit against the same call with PDL off and against the
//! CPU reference, canaries around and between pitched rows; chains of
//! dependent norms and element-wise operations on streams made with each PDL
//! setting; a graph of mixed norms and element-wise operations replayed 3
//! times (each replay feeds the next), bit for bit against the same calls on
//! a stream and the CPU reference; and the builder's record-time refusals.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;
mod norms_common;

use common::{gpu, record};
use gpukern::half::{bf16, f16};
use gpukern::reference::norms as rn;
use gpukern::{DeviceVec, Dtype, Element, Gpu, Norm, NormOp, NormPlan, NormStrategy, Opts, Pdl, Rows, UnaryOp};
use norms_common::{plans, run_dtype_bits, Case, POISON};

fn base(op: NormOp, rows: usize, cols: usize) -> Case {
    Case::base(op, rows, cols, (rows * 7_919 + cols) as u64)
}

/// The plans of `norms_common::plans` this device runs (clusters on sm_90).
fn device_plans(gpu: &Gpu, dtype: Dtype, cols: usize) -> Vec<Option<NormPlan>> {
    let sm90 = gpu.info().has_sm90();
    plans(dtype, cols).into_iter().filter(|p| sm90 || p.is_none_or(|p| p.strategy != NormStrategy::Cluster)).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_pdl_twins_match_the_plain_kernels_bit_for_bit() {
    let gpu = gpu();
    let sm90 = gpu.info().has_sm90();
    let mut failures = Vec::new();
    let mut count = 0;
    for op in NormOp::ALL {
        for dtype in Dtype::ALL {
            for cols in [1, 33, 1000, 4097] {
                for plan in device_plans(&gpu, dtype, cols) {
                    // Misaligned and pitched (element accesses), then aligned
                    // with a gap (128-bit accesses); canaries everywhere.
                    for (gaps, offsets) in [((3, 5), (1, 3, 2)), ((8, 16), (8, 8, 0))] {
                        let c = Case { plan, gaps, offsets, ..base(op, 5, cols) };
                        let off = run_dtype_bits(&gpu, dtype, &Case { pdl: Some(Pdl::Off), ..c });
                        let on = run_dtype_bits(&gpu, dtype, &Case { pdl: Some(Pdl::On), ..c });
                        count += 1;
                        let r = match (off, on) {
                            (Ok(off), Ok(on)) => {
                                let rows = Rows { rows: 5, cols, x_pitch: cols + gaps.0, y_pitch: cols + gaps.1 };
                                // The twin ran where it exists (sm_90), and only there.
                                let twin = on.0.uses_pdl(&gpu, op, dtype, rows, Pdl::On);
                                let plain = off.0.uses_pdl(&gpu, op, dtype, rows, Pdl::Off);
                                // The pipelined kernels have no twin (see NormPlan::auto_rows).
                                let piped = on.0.strategy.pipelined() == Some(on.0.strategy);
                                if twin != (sm90 && !piped) || plain {
                                    Err(format!("{c:?}: PDL on gave twin={twin}, off gave {plain}"))
                                } else if off != on {
                                    Err(format!("{} {dtype:?} {c:?}: PDL changed the bits", op.name()))
                                } else {
                                    Ok(())
                                }
                            }
                            (Err(e), _) | (_, Err(e)) => Err(e),
                        };
                        record(
                            "norms_pdl_twins",
                            &format!("{} {dtype:?} {cols} {plan:?}", op.name()),
                            5 * cols,
                            r.is_ok(),
                        );
                        if let Err(e) = r {
                            failures.push(e);
                        }
                    }
                }
            }
        }
    }
    assert!(count > 500, "only {count} cases");
    assert!(
        failures.is_empty(),
        "{} of {count} failed; first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

/// A buffer of `span` elements at offset `off`, poison around it.
fn poisoned<T: Element>(gpu: &Gpu, off: usize, span: usize) -> DeviceVec<T> {
    gpu.upload(&vec![T::from_bits32(POISON); off + span + norms_common::CANARY]).unwrap()
}

fn bits<T: Element>(v: &DeviceVec<T>) -> Vec<u32> {
    v.to_vec().unwrap().into_iter().map(|e| e.to_bits32()).collect()
}

/// The shape of the mixed chain: `rows × cols`, norm outputs pitched by
/// `cols + GAP`, each buffer at element `OFF` of its allocation.
const GAP: usize = 8;
const OFF: usize = 8;

/// The mixed chain's buffers: `state` (the chain's value, fed back), `t`,
/// `h`, `y`, `z`, `s`; inputs `w`, `bias`, `res`.
struct Chain<T: Element> {
    inputs: [DeviceVec<T>; 3],
    outs: [DeviceVec<T>; 6],
}

/// Where each output lies in its allocation: (offset, span).
fn out_spans(rows: usize, cols: usize) -> [(usize, usize); 6] {
    let (dense, pitched) = (rows * cols, (rows - 1) * (cols + GAP) + cols);
    [(OFF, dense), (OFF, dense), (OFF, pitched), (OFF, pitched), (OFF, pitched), (OFF, dense)]
}

impl<T: Element> Chain<T> {
    fn new(gpu: &Gpu, rows: usize, cols: usize) -> Chain<T> {
        let v = |n: usize, k: usize| -> Vec<T> {
            (0..n).map(|i| rn::narrow(((i * 37 + k * 11) % 97) as f32 / 24.0 - 2.0)).collect()
        };
        let inputs = [
            gpu.upload(&v(cols, 1)).unwrap(),
            gpu.upload(&v(cols, 2)).unwrap(),
            gpu.upload(&v(rows * cols, 3)).unwrap(),
        ];
        let mut outs = out_spans(rows, cols).map(|(off, span)| poisoned::<T>(gpu, off, span));
        let mut start = vec![T::from_bits32(POISON); OFF];
        start.extend(v(rows * cols, 4));
        start.extend(vec![T::from_bits32(POISON); norms_common::CANARY]);
        outs[0] = gpu.upload(&start).unwrap();
        Chain { inputs, outs }
    }
}

/// The chain's plans: add_rms_norm's, layer_norm's, softmax's.
type Plans = [Option<NormPlan>; 3];

/// One step of the chain on a stream: t = silu(state); h = t + res, y =
/// rms_norm(h) (pitched out); z = layer_norm(y) (pitched in and out); s =
/// softmax(z) (dense out); state = 0.5·s + res.
fn step<T: Element>(gpu: &Gpu, c: &mut Chain<T>, rows: usize, cols: usize, plans: Plans, s: &gpukern::Stream) -> Plans {
    let p = cols + GAP;
    let sp = out_spans(rows, cols);
    let [w, b, res] = &c.inputs;
    let [state, t, h, y, z, sm] = &mut c.outs;
    let o = |p: Option<NormPlan>| {
        let mut o = Opts::auto();
        o.norm_plan = p;
        o
    };
    gpu.unary(UnaryOp::Silu, state.slice(OFF..OFF + rows * cols).unwrap(), t.slice_mut(OFF..OFF + sp[1].1).unwrap(), s)
        .unwrap();
    let op = Norm::add_rms(res.view(), h.slice_mut(OFF..OFF + sp[2].1).unwrap(), w.view(), 1e-6);
    let rows_in = Rows { rows, cols, x_pitch: cols, y_pitch: p };
    let p0 = gpu
        .norm(
            op,
            t.slice(OFF..OFF + sp[1].1).unwrap(),
            y.slice_mut(OFF..OFF + sp[3].1).unwrap(),
            rows_in,
            &o(plans[0]),
            s,
        )
        .unwrap();
    let op = Norm::layer(w.view(), b.view(), 1e-5);
    let rows_mid = Rows { rows, cols, x_pitch: p, y_pitch: p };
    let p1 = gpu
        .norm(
            op,
            y.slice(OFF..OFF + sp[3].1).unwrap(),
            z.slice_mut(OFF..OFF + sp[4].1).unwrap(),
            rows_mid,
            &o(plans[1]),
            s,
        )
        .unwrap();
    let rows_out = Rows { rows, cols, x_pitch: p, y_pitch: cols };
    let p2 = gpu
        .norm(
            Norm::Softmax,
            z.slice(OFF..OFF + sp[4].1).unwrap(),
            sm.slice_mut(OFF..OFF + sp[5].1).unwrap(),
            rows_out,
            &o(plans[2]),
            s,
        )
        .unwrap();
    gpu.axpby(
        0.5,
        sm.slice(OFF..OFF + sp[5].1).unwrap(),
        1.0,
        res.view(),
        state.slice_mut(OFF..OFF + rows * cols).unwrap(),
        s,
    )
    .unwrap();
    [Some(p0), Some(p1), Some(p2)]
}

/// The same chain recorded once into a graph (PDL as `pdl`), replayed `n` times.
fn graph<T: Element>(gpu: &Gpu, c: &mut Chain<T>, rows: usize, cols: usize, plans: Plans, pdl: Pdl, n: usize) {
    let p = cols + GAP;
    let sp = out_spans(rows, cols);
    let mut g = gpu.graph();
    g.set_pdl(pdl);
    let [w, b, res] = &c.inputs;
    let (w, b, res) = (g.input(w).unwrap(), g.input(b).unwrap(), g.input(res).unwrap());
    let [state, t, h, y, z, sm] = &mut c.outs;
    let state = g.output(state.slice_mut(OFF..OFF + sp[0].1).unwrap()).unwrap();
    let t = g.output(t.slice_mut(OFF..OFF + sp[1].1).unwrap()).unwrap();
    let h = g.output(h.slice_mut(OFF..OFF + sp[2].1).unwrap()).unwrap();
    let y = g.output(y.slice_mut(OFF..OFF + sp[3].1).unwrap()).unwrap();
    let z = g.output(z.slice_mut(OFF..OFF + sp[4].1).unwrap()).unwrap();
    let sm = g.output(sm.slice_mut(OFF..OFF + sp[5].1).unwrap()).unwrap();
    let o = |p: Option<NormPlan>| {
        let mut o = Opts::auto();
        o.norm_plan = p;
        o
    };
    g.unary(UnaryOp::Silu, state, t).unwrap();
    let op = Norm::add_rms(res, h, w, 1e-6);
    g.norm(op, t, y, Rows { rows, cols, x_pitch: cols, y_pitch: p }, &o(plans[0])).unwrap();
    let op = Norm::layer(w, b, 1e-5);
    g.norm(op, y, z, Rows { rows, cols, x_pitch: p, y_pitch: p }, &o(plans[1])).unwrap();
    g.norm(Norm::Softmax, z, sm, Rows { rows, cols, x_pitch: p, y_pitch: cols }, &o(plans[2])).unwrap();
    g.axpby(0.5, sm, 1.0, res, state).unwrap();
    assert_eq!(g.len(), 5);
    let graph = g.build().unwrap();
    let s = gpu.stream().unwrap();
    for _ in 0..n {
        graph.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
}

/// The chain's canaries and the gaps between pitched rows still hold the
/// poison, and the last step's norms match the CPU reference (their inputs
/// read back from the device).
fn check_chain<T: Element>(c: &Chain<T>, rows: usize, cols: usize, plans: Plans) -> Result<(), String> {
    let p = cols + GAP;
    let all: Vec<Vec<T>> = c.outs.iter().map(|v| v.to_vec().unwrap()).collect();
    let poison = T::from_bits32(POISON);
    for (i, ((off, span), v)) in out_spans(rows, cols).into_iter().zip(&all).enumerate() {
        let pitched = span != rows * cols;
        for (at, e) in v.iter().enumerate() {
            let inside = at >= off && at < off + span && (!pitched || (at - off) % p < cols);
            if !inside && !e.same_as(poison) {
                return Err(format!("buffer {i}: element {at} outside the rows was written"));
            }
        }
    }
    let [w, b, res] = &c.inputs;
    let (w, b, res) = (w.to_vec().unwrap(), b.to_vec().unwrap(), res.to_vec().unwrap());
    let order = |k: usize, x: Rows| plans[k].expect("the plan that ran").order(T::DTYPE, x.cols);
    let same = |what: &str, got: &[T], pitch: usize, want: &[T]| -> Result<(), String> {
        for r in 0..rows {
            for k in 0..cols {
                if !got[OFF + r * pitch + k].same_as(want[r * cols + k]) {
                    return Err(format!("{what}[{r}][{k}] differs from the CPU reference"));
                }
            }
        }
        Ok(())
    };
    let rows_in = Rows { rows, cols, x_pitch: cols, y_pitch: p };
    let want = rn::norm(Norm::add_rms(&res, (), &w, 1e-6), &all[1][OFF..], rows_in, order(0, rows_in));
    same("h", &all[2], p, &want.h.expect("add_rms_norm's h"))?;
    same("y", &all[3], p, &want.y)?;
    let rows_mid = Rows { rows, cols, x_pitch: p, y_pitch: p };
    let want = rn::norm(Norm::layer(&w, &b, 1e-5), &all[3][OFF..], rows_mid, order(1, rows_mid));
    same("z", &all[4], p, &want.y)?;
    let rows_out = Rows { rows, cols, x_pitch: p, y_pitch: cols };
    let want = rn::norm(Norm::Softmax, &all[4][OFF..], rows_out, order(2, rows_out));
    same("s", &all[5], cols, &want.y)
}

/// The chain's shapes and plans: small rows (the warp plan), a row of
/// 4096 (block), and with a split and (sm_90) a cluster plan.
fn chain_cases(gpu: &Gpu, dtype: Dtype) -> Vec<(usize, usize, Plans)> {
    let warp = NormPlan { strategy: NormStrategy::Warp, block: 64, k: 1 };
    let split = NormPlan { strategy: NormStrategy::Split, block: 96, k: 4 };
    let cluster = NormPlan { strategy: NormStrategy::Cluster, block: 64, k: 4 };
    let long = if gpu.info().has_sm90() { cluster } else { split };
    let mut v = vec![(8, 100, [Some(warp), None, Some(warp)]), (1, 4096, [None; 3]), (8, 4096, [None; 3])];
    v.push((3, 5000, [Some(split), Some(long), None]));
    v.retain(|(_, cols, plans)| plans.iter().flatten().all(|p| p.check(NormOp::Rms, dtype, *cols).is_ok()));
    v
}

/// For each shape: 3 steps on a stream made with PDL off (the baseline), on
/// a stream made with PDL on, and 3 replays of the graph with PDL on and
/// off; every buffer bit for bit equal to the baseline's.
fn chains<T: Element>(gpu: &Gpu) -> Result<usize, String> {
    let mut n = 0;
    for (rows, cols, plans) in chain_cases(gpu, T::DTYPE) {
        let what = format!("{:?} {rows}x{cols} {plans:?}", T::DTYPE);
        let mut want = Chain::<T>::new(gpu, rows, cols);
        let off = gpu.stream_with(Pdl::Off).unwrap();
        let mut ran = plans;
        for _ in 0..3 {
            ran = step(gpu, &mut want, rows, cols, plans, &off);
        }
        off.synchronize().unwrap();
        // The CPU replays the plans that ran.
        check_chain(&want, rows, cols, ran).map_err(|e| format!("{what} (stream, PDL off): {e}"))?;
        let want: Vec<Vec<u32>> = want.outs.iter().map(bits).collect();
        let mut on = Chain::<T>::new(gpu, rows, cols);
        let s = gpu.stream_with(Pdl::On).unwrap();
        for _ in 0..3 {
            step(gpu, &mut on, rows, cols, plans, &s);
        }
        s.synchronize().unwrap();
        let got: Vec<Vec<u32>> = on.outs.iter().map(bits).collect();
        if got != want {
            return Err(format!("{what}: the stream with PDL on differs"));
        }
        for pdl in [Pdl::On, Pdl::Off, Pdl::Auto] {
            let mut g = Chain::<T>::new(gpu, rows, cols);
            graph(gpu, &mut g, rows, cols, plans, pdl, 3);
            let got: Vec<Vec<u32>> = g.outs.iter().map(bits).collect();
            if got != want {
                return Err(format!("{what}: the graph ({pdl:?}) replayed 3 times differs from 3 stream steps"));
            }
        }
        n += 1;
    }
    Ok(n)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_chains_and_graphs_match_the_stream_bit_for_bit() {
    let gpu = gpu();
    let mut shapes = 0;
    for r in [chains::<f32>(&gpu), chains::<f16>(&gpu), chains::<bf16>(&gpu)] {
        record("norms_chains_and_graphs", "chains", 0, r.is_ok());
        shapes += r.unwrap();
    }
    assert!(shapes >= 9, "{shapes} shapes ran");
}
