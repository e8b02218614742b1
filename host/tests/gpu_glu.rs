//! The gated activations on the GPU against the CPU reference, bit for bit:
//! every operation × dtype × pattern (and the automatic choice, with and
//! without PDL) over odd lengths, start offsets and pitched `[gate | up]`
//! rows, with canaries before, after and between output rows and two
//! poisons; special values (NaN, ±inf, zeros, subnormals, extremes) as gate
//! and up; a property test over random shapes; and the argument errors
//! (nothing written).

mod common;

use common::{gpu, record, specials, POISONS};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{Dtype, Error, GluIn, GluOp, Gpu, OpPattern, Opts, Pdl, Rows};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use rand::{Rng, SeedableRng};

/// Elements of canary around each output.
const CANARY: usize = 24;

/// One case: the element-wise form (`split: None`, `n` elements) or `[gate |
/// up]` rows (`Some((x_pitch, y_pitch))`, `rows` rows of `n`).
#[derive(Clone, Debug)]
struct Case {
    op: GluOp,
    dtype: Dtype,
    pattern: Option<OpPattern>,
    pdl: Pdl,
    rows: usize,
    n: usize,
    split: Option<(usize, usize)>,
    /// Start offsets in elements of the inputs (gate, up, or x) and the output.
    offsets: [usize; 3],
    specials: bool,
    seed: u64,
}

/// Inputs: moderate values, raw bits (any class), or the dtype's specials.
fn values<T: ReferenceOps>(len: usize, specials_only: bool, rng: &mut impl Rng) -> Vec<T> {
    let sp = specials(T::DTYPE);
    (0..len)
        .map(|_| match (specials_only, rng.gen_range(0..4)) {
            (true, _) => T::from_bits32(sp[rng.gen_range(0..sp.len())]),
            (false, 0) => T::from_bits32(rng.gen()),
            _ => T::round_from(rng.gen_range(-12.0..12.0)),
        })
        .collect()
}

fn run<T: ReferenceOps>(gpu: &Gpu, c: &Case) -> Result<(), String> {
    let s = gpu.stream_with(c.pdl).map_err(|e| e.to_string())?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(c.seed);
    let opts = match c.pattern {
        Some(p) => Opts::auto().pattern(p),
        None => Opts::auto(),
    };
    let (out_len, in_len) = match c.split {
        None => (c.n, c.n),
        Some((xp, yp)) if c.rows > 0 => ((c.rows - 1) * yp + c.n, (c.rows - 1) * xp + 2 * c.n),
        Some(_) => (0, 0),
    };
    let a: Vec<T> = values(c.offsets[0] + in_len, c.specials, &mut rng);
    let b: Vec<T> = values(c.offsets[1] + in_len, c.specials, &mut rng);
    let (da, db) = (gpu.upload(&a).map_err(|e| e.to_string())?, gpu.upload(&b).map_err(|e| e.to_string())?);
    let o = CANARY + c.offsets[2];
    let mut band = gpu.alloc::<T>(o + out_len + CANARY).map_err(|e| e.to_string())?;
    for poison in POISONS {
        band.fill(T::from_bits32(poison)).map_err(|e| e.to_string())?;
        let before = band.to_vec().map_err(|e| e.to_string())?;
        let out = band.slice_mut(o..o + out_len).map_err(|e| e.to_string())?;
        let gate = da.slice(c.offsets[0]..).map_err(|e| e.to_string())?;
        let want = match c.split {
            None => {
                let up = db.slice(c.offsets[1]..).map_err(|e| e.to_string())?;
                gpu.glu_opts(c.op, GluIn::pair(gate, up), out, &s, &opts).map_err(|e| e.to_string())?;
                let mut w = before.clone();
                let r = reference::glu(c.op, &a[c.offsets[0]..], &b[c.offsets[1]..]);
                w[o..o + out_len].copy_from_slice(&r);
                w
            }
            Some((xp, yp)) => {
                let rows = Rows { rows: c.rows, cols: c.n, x_pitch: xp, y_pitch: yp };
                gpu.glu_opts(c.op, GluIn::split(gate, rows), out, &s, &opts).map_err(|e| e.to_string())?;
                let mut w = before.clone();
                let r = reference::glu_split(c.op, &a[c.offsets[0]..], &before[o..o + out_len], rows);
                w[o..o + out_len].copy_from_slice(&r);
                w
            }
        };
        s.synchronize().map_err(|e| e.to_string())?;
        let got = band.to_vec().map_err(|e| e.to_string())?;
        if let Some(i) = got.iter().zip(&want).position(|(g, w)| g.to_bits32() != w.to_bits32()) {
            let (g, w) = (got[i].to_bits32(), want[i].to_bits32());
            return Err(format!("{c:?}: element {i} (output starts at {o}): got {g:#x}, want {w:#x}"));
        }
    }
    Ok(())
}

fn run_dtype(gpu: &Gpu, c: &Case) -> Result<(), String> {
    match c.dtype {
        Dtype::F32 => run::<f32>(gpu, c),
        Dtype::F16 => run::<f16>(gpu, c),
        Dtype::Bf16 => run::<bf16>(gpu, c),
    }
}

fn run_all(test: &str, cases: Vec<Case>) {
    let gpu = gpu();
    let mut failures = Vec::new();
    for c in &cases {
        // An explicit sm_90 pattern elsewhere is an error, checked below.
        if c.pattern == Some(OpPattern::PackSm90) && (c.dtype != Dtype::Bf16 || !gpu.info().has_sm90()) {
            continue;
        }
        let r = run_dtype(&gpu, c);
        record(
            test,
            &format!("{} {:?} {}x{} {:?}", c.op.name(), c.dtype, c.rows, c.n, c.split),
            c.rows * c.n,
            r.is_ok(),
        );
        if let Err(e) = r {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed; first: {:#?}",
        failures.len(),
        cases.len(),
        &failures[..failures.len().min(4)]
    );
}

fn base(op: GluOp, dtype: Dtype, n: usize) -> Case {
    let seed = n as u64 * 31 + dtype as u64;
    Case { op, dtype, pattern: None, pdl: Pdl::Auto, rows: 1, n, split: None, offsets: [0; 3], specials: false, seed }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glu_every_op_dtype_pattern_and_length() {
    let mut cases = Vec::new();
    for op in GluOp::ALL {
        for dtype in Dtype::ALL {
            // Under compute-sanitizer the large lengths take minutes: skipped there.
            let big = if common::sanitizing() { 0 } else { 3 };
            for n in
                [1, 7, 8, 9, 31, 1000, 4099, 65536 + 3, 1 << 20].into_iter().rev().skip(3 - big).collect::<Vec<_>>()
            {
                for pattern in [None, Some(OpPattern::Scalar), Some(OpPattern::Pack), Some(OpPattern::PackSm90)] {
                    for pdl in [Pdl::Off, Pdl::On] {
                        cases.push(Case { pattern, pdl, ..base(op, dtype, n) });
                    }
                }
                // Misaligned starts: the automatic choice falls back to elements.
                cases.push(Case { offsets: [1, 3, 5], ..base(op, dtype, n) });
                cases.push(Case { specials: true, seed: 7, ..base(op, dtype, n) });
            }
        }
    }
    run_all("glu_every_op_dtype_pattern_and_length", cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glu_split_rows_with_pitches_and_offsets() {
    let mut cases = Vec::new();
    for op in GluOp::ALL {
        for dtype in Dtype::ALL {
            let lanes = 16 / dtype.size();
            for (rows, d) in [(1usize, 5usize), (3, 8), (17, 1000), (5, 11008), (70_000, 8), (2, 4097)] {
                let aligned_d = d.next_multiple_of(lanes);
                for (xp, yp) in [(2 * d, d), (2 * aligned_d + lanes, aligned_d + 2 * lanes), (2 * d + 3, d + 1)] {
                    if common::sanitizing() && rows * d > 100_000 {
                        continue;
                    }
                    for pattern in [None, Some(OpPattern::Scalar)] {
                        let c = Case { rows, split: Some((xp, yp)), pattern, ..base(op, dtype, d) };
                        cases.push(c.clone());
                        cases.push(Case { offsets: [lanes, 0, 2 * lanes], ..c });
                    }
                }
            }
        }
    }
    run_all("glu_split_rows_with_pitches_and_offsets", cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glu_plans_and_errors_write_nothing() {
    let gpu = gpu();
    let s = gpu.stream().unwrap();
    let (g, u) = (gpu.upload(&[1.0f32; 64]).unwrap(), gpu.upload(&[2.0f32; 64]).unwrap());
    let mut out = gpu.alloc::<f32>(64).unwrap();
    out.fill_bits(POISONS[0].into()).unwrap();
    let untouched = |out: &gpukern::DeviceVec<f32>| out.to_vec().unwrap().iter().all(|x| x.to_bits() == POISONS[0]);
    let op = GluOp::Silu;
    let e = gpu.glu(op, GluIn::pair(g.slice(..63).unwrap(), &u), &mut out, &s).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { kernel: "glu_silu", a: 63, b: 64, out: 64 }), "{e}");
    let e = gpu.glu_opts(
        op,
        GluIn::pair(g.slice(1..).unwrap(), u.slice(1..).unwrap()),
        out.slice_mut(1..).unwrap(),
        &s,
        &Opts::auto().pattern(OpPattern::Pack),
    );
    assert!(matches!(e, Err(Error::Misaligned { .. })), "{e:?}");
    let e = gpu.glu_opts(op, GluIn::pair(&g, &u), &mut out, &s, &Opts::auto().pattern(OpPattern::PackSm90));
    assert!(matches!(e, Err(Error::Shape { .. })), "no sm_90 kernel for f32: {e:?}");
    let rows = |rows, cols, x_pitch, y_pitch| Rows { rows, cols, x_pitch, y_pitch };
    let e = gpu.glu(op, GluIn::split(&g, rows(2, 8, 15, 8)), &mut out, &s).unwrap_err();
    assert!(e.to_string().contains("[gate | up]"), "{e}");
    let e = gpu.glu(op, GluIn::split(&g, rows(5, 8, 16, 8)), &mut out, &s).unwrap_err();
    assert!(e.to_string().contains("x has 64 elements"), "{e}");
    let e = gpu.glu(op, GluIn::split(&g, rows(2, 8, 16, 7)), &mut out, &s).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = gpu.glu(op, GluIn::split(&g, rows(2, 8, 16, 16)), out.slice_mut(..20).unwrap(), &s).unwrap_err();
    assert!(e.to_string().contains("out has 20 elements"), "{e}");
    s.synchronize().unwrap();
    assert!(untouched(&out));
    // Empty: nothing queued, nothing written.
    gpu.glu(op, GluIn::split(&g, rows(0, 8, 16, 8)), &mut out, &s).unwrap();
    gpu.glu(op, GluIn::pair(g.slice(..0).unwrap(), u.slice(..0).unwrap()), out.slice_mut(..0).unwrap(), &s).unwrap();
    s.synchronize().unwrap();
    assert!(untouched(&out));
    // What the automatic choice runs.
    let b = gpu.upload(&[bf16::ONE; 64]).unwrap();
    let mut ob = gpu.alloc::<bf16>(64).unwrap();
    let plain = gpu.stream_with(Pdl::Off).unwrap();
    let p = gpu.glu_opts(op, GluIn::pair(&b, &b), &mut ob, &plain, &Opts::auto()).unwrap();
    let sm90 = gpu.info().has_sm90();
    assert_eq!(p.kernel, if sm90 { "glu_silu_bf16x8_sm90" } else { "glu_silu_bf16x8" });
    let p = gpu.glu_opts(op, GluIn::pair(&b, &b), &mut ob, &s, &Opts::auto().pdl(Pdl::On)).unwrap();
    assert_eq!((p.pdl, p.kernel), if sm90 { (true, "glu_silu_bf16x8_sm90_pdl") } else { (false, "glu_silu_bf16x8") });
    let odd = GluIn::pair(b.slice(1..).unwrap(), b.slice(1..).unwrap());
    let p = gpu.glu_opts(op, odd, ob.slice_mut(1..).unwrap(), &s, &Opts::auto());
    assert_eq!(p.unwrap().kernel, "glu_silu_bf16");
    s.synchronize().unwrap();
    assert_eq!(ob.to_vec().unwrap()[5], reference::glu_one(op, bf16::ONE, bf16::ONE));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glu_in_a_graph_gives_the_streams_bits() {
    let gpu = gpu();
    let (rows, d) = (6, 1000);
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let x: Vec<bf16> = (0..rows * 2 * d).map(|_| bf16::from_f32(rng.gen_range(-6.0..6.0))).collect();
    let (dx, mut y1, mut y2) =
        (gpu.upload(&x).unwrap(), gpu.alloc::<bf16>(rows * d).unwrap(), gpu.alloc::<bf16>(d).unwrap());
    let layout = Rows { rows, cols: d, x_pitch: 2 * d, y_pitch: d };
    let mut g = gpu.graph();
    let (sx, s1, s2) = (g.input(&dx).unwrap(), g.output(&mut y1).unwrap(), g.output(&mut y2).unwrap());
    g.glu(GluOp::Silu, GluIn::Split { x: sx, rows: layout }, s1, &Opts::auto()).unwrap();
    let (gate, up) = (sx.slice(..d).unwrap(), sx.slice(d..2 * d).unwrap());
    g.glu(GluOp::Gelu, GluIn::Pair { gate, up }, s2, &Opts::auto()).unwrap();
    // Refused, nothing recorded: lengths that differ, an input as the output.
    let short = GluIn::Pair { gate: sx.slice(..d - 1).unwrap(), up };
    assert!(matches!(g.glu(GluOp::Gelu, short, s2, &Opts::auto()), Err(Error::LengthMismatch { .. })));
    assert!(g.glu(GluOp::Gelu, GluIn::Pair { gate, up }, gate, &Opts::auto()).is_err());
    assert_eq!(g.len(), 2);
    let s = gpu.stream().unwrap();
    g.build().unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    let want1 = reference::glu_split(GluOp::Silu, &x, &vec![bf16::ZERO; rows * d], layout);
    assert_eq!(reference::first_mismatch(&y1.to_vec().unwrap(), &want1), None);
    let want2 = reference::glu(GluOp::Gelu, &x[..d], &x[d..2 * d]);
    assert_eq!(reference::first_mismatch(&y2.to_vec().unwrap(), &want2), None);
}

fn case() -> impl Strategy<Value = Case> {
    let op = prop::sample::select(GluOp::ALL.to_vec());
    let dtype = prop::sample::select(Dtype::ALL.to_vec());
    let pattern = prop_oneof![Just(None), Just(Some(OpPattern::Scalar)), Just(Some(OpPattern::Pack))];
    let n = prop_oneof![0usize..=40, 0usize..5000];
    let split = prop_oneof![Just(None), (0usize..=24, 0usize..=24).prop_map(Some)];
    let offsets = [0usize..=9, 0usize..=9, 0usize..=9];
    let pdl = prop::sample::select(vec![Pdl::Off, Pdl::Auto, Pdl::On]);
    (op, dtype, pattern, n, split, 0usize..=9, offsets, pdl, any::<u64>()).prop_map(
        |(op, dtype, pattern, n, split, rows, offsets, pdl, seed)| {
            // Pitches at least the rows need, sometimes whole packs.
            let lanes = 16 / dtype.size();
            let split = split.map(|(gx, gy)| {
                if gx % 2 == 0 {
                    ((2 * n).next_multiple_of(lanes) + gx / 2 * lanes, n.next_multiple_of(lanes) + gy / 2 * lanes)
                } else {
                    (2 * n + gx, n + gy)
                }
            });
            let (rows, n) = if split.is_some() { (rows, n / 8) } else { (1, n) };
            Case { op, dtype, pattern, pdl, rows, n, split, offsets, specials: seed % 5 == 0, seed }
        },
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glu_property() {
    let gpu = gpu();
    let config = Config {
        cases: if common::sanitizing() { 150 } else { 1500 },
        rng_seed: RngSeed::Fixed(40),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    };
    proptest!(config, |(c in case())| {
        let r = run_dtype(&gpu, &c);
        // An explicit pack kernel on a misaligned row is refused, nothing written.
        let misaligned = |e: &String| c.pattern == Some(OpPattern::Pack) && (e.contains("aligned") || e.contains("multiple"));
        match r {
            Ok(()) => {}
            Err(e) if misaligned(&e) => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
    });
}

/// GB/s of `glu` (separate operands and `[gate | up]` rows) at the MLP's
/// shapes against `add` over the same bytes (two reads, one write: the
/// memory wall) and our own `silu` then `mul`; median of 21 event-timed
/// runs behind a spin kernel. Prints the table (`--nocapture`); skipped
/// under compute-sanitizer.
#[test]
#[ignore = "needs a CUDA GPU"]
fn glu_fused_timing() {
    if common::sanitizing() {
        return;
    }
    fn table<T: ReferenceOps>(gpu: &Gpu, rows: usize, d: usize) {
        let s = gpu.stream_with(Pdl::Off).unwrap();
        let n = rows * d;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let host: Vec<T> = values(2 * n, false, &mut rng);
        let (g, u) = (gpu.upload(&host[..n]).unwrap(), gpu.upload(&host[n..]).unwrap());
        let x = gpu.upload(&host).unwrap();
        let (mut out, mut tmp) = (gpu.alloc::<T>(n).unwrap(), gpu.alloc::<T>(n).unwrap());
        let median = |f: &mut dyn FnMut(&gpukern::Stream) -> gpukern::Result<()>| {
            let mut t: Vec<f32> = (0..21)
                .map(|_| {
                    gpu.studies().spin(&s, 20_000).unwrap();
                    s.time(|s| f(s)).unwrap()
                })
                .collect();
            t.sort_by(f32::total_cmp);
            t[10] as f64 * 1e3
        };
        let layout = Rows { rows, cols: d, x_pitch: 2 * d, y_pitch: d };
        let add = median(&mut |s| gpu.binary(gpukern::BinaryOp::Add, &g, &u, &mut out, s));
        let bytes = 3.0 * (n * std::mem::size_of::<T>()) as f64;
        for op in GluOp::ALL {
            let fused = median(&mut |s| gpu.glu(op, GluIn::pair(&g, &u), &mut out, s));
            let split = median(&mut |s| gpu.glu(op, GluIn::split(&x, layout), &mut out, s));
            let act = op.activation();
            let two = median(&mut |s| {
                gpu.unary(act, &g, &mut tmp, s)?;
                gpu.binary(gpukern::BinaryOp::Mul, &tmp, &u, &mut out, s)
            });
            println!(
                "| {} | {:?} | {rows}x{d} | {fused:.1} | {:.0} | {:.2} | {split:.1} | {:.2} | {add:.1} | {two:.1} | {:.2} |",
                op.name(),
                T::DTYPE,
                bytes / fused / 1e3,
                add / fused,
                add / split,
                two / fused
            );
        }
    }
    let gpu = gpu();
    println!("GPU: {}", gpu.info().name);
    println!(
        "| op | dtype | shape | glu µs | GB/s | × add | split µs | split × add | add µs | act+mul µs | × act+mul |"
    );
    for (rows, d) in [(4096, 11008), (16384, 11008)] {
        table::<bf16>(&gpu, rows, d);
        table::<f16>(&gpu, rows, d);
        table::<f32>(&gpu, rows, d);
    }
}
