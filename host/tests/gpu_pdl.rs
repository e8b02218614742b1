//! `pdl_chains`: chains of dependent operations (each output the next input)
//! under programmatic dependent launch, bit-exact against the CPU reference,
//! at many sizes × offsets: forced on, the plan's choice, off; mixed in one
//! stream with work that does not use PDL (a copy, explicit-pattern launches,
//! a join with another stream); and captured into a graph, replayed twice.
//! Canaries on both sides of every buffer stay intact.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{gpu, inputs, record, sanitizing, Data, CANARY};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{BinaryOp, DeviceVec, Gpu, LaunchShape, OpKind, OpPattern, Pdl, Result, Stream, UnaryOp};
use rand::SeedableRng;

/// The chain's steps, in order (16): every kind, activations included, so
/// each dtype's PDL twins of several shapes run back to back.
const STEPS: [OpKind; 16] = [
    OpKind::Binary(BinaryOp::Add),
    OpKind::Binary(BinaryOp::Mul),
    OpKind::Unary(UnaryOp::Relu),
    OpKind::Unary(UnaryOp::Sigmoid),
    OpKind::Axpby,
    OpKind::Binary(BinaryOp::Sub),
    OpKind::Unary(UnaryOp::Tanh),
    OpKind::Binary(BinaryOp::Max),
    OpKind::Unary(UnaryOp::Silu),
    OpKind::Binary(BinaryOp::Add),
    OpKind::Unary(UnaryOp::Exp),
    OpKind::Binary(BinaryOp::Min),
    OpKind::Unary(UnaryOp::GeluTanh),
    OpKind::Binary(BinaryOp::Div),
    OpKind::Unary(UnaryOp::Neg),
    OpKind::Binary(BinaryOp::Add),
];
const SCALES: (f32, f32) = (0.5, -0.25);

/// Element offsets of every view: 0 and 8 keep 16-byte alignment (the PDL
/// twins), 1 and 3 do not (the scalar kernels, launched plainly).
const OFFSETS: [usize; 4] = [0, 1, 3, 8];
const SIZES: [usize; 9] = [1, 3, 64, 1000, 4099, 65_541, 1 << 20, (1 << 20) + 5, (1 << 22) + 3];

/// How a chain is queued.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Every step through the automatic choice, the stream set to this.
    Eager(Pdl),
    /// PDL forced on, with a copy, an explicit-pattern launch and a join
    /// with a second stream between steps.
    Mixed,
    /// Captured with `Gpu::graph` (PDL forced on), replayed twice.
    Graph,
}

/// One band per chain value: canaries, then `off` elements, then the data.
struct Bands<T: gpukern::Pod> {
    bands: Vec<DeviceVec<T>>,
    off: usize,
    n: usize,
}

impl<T: gpukern::Element> Bands<T> {
    fn range(&self) -> std::ops::Range<usize> {
        CANARY + self.off..CANARY + self.off + self.n
    }
}

fn step<T: gpukern::Element>(
    gpu: &Gpu,
    k: OpKind,
    a: gpukern::View<'_, T>,
    b: gpukern::View<'_, T>,
    out: gpukern::ViewMut<'_, T>,
    s: &Stream,
    pdl: Pdl,
) -> Result<()> {
    let b = (k.inputs() == 2).then_some(b);
    gpu.apply(k, a, b, out, SCALES, s, &gpukern::Opts::auto().pdl(pdl))
}

fn queue<T: gpukern::Element>(gpu: &Gpu, mode: Mode, x: &mut Bands<T>, b: &DeviceVec<T>, s: &Stream) -> Result<()> {
    let r = x.range();
    let bv = b.slice(r.clone())?;
    let (pdl, mixed) = match mode {
        Mode::Eager(p) => (p, false),
        Mode::Mixed => (Pdl::On, true),
        Mode::Graph => return graph(gpu, x, bv, s),
    };
    // Mixed's own work: a spare band (alive until the chain is done) and a
    // second stream.
    let (mut spare, side) = (gpu.alloc::<T>(x.n)?, gpu.stream()?);
    let cfg = LaunchShape::default();
    for (i, &k) in STEPS.iter().enumerate() {
        let (head, tail) = x.bands.split_at_mut(i + 1);
        step(gpu, k, head[i].slice(r.clone())?, bv, tail[0].slice_mut(r.clone())?, s, pdl)?;
        let next = &mut tail[0];
        match i % 4 {
            _ if !mixed => {}
            // Copies (no PDL): the new value out and back.
            0 => {
                spare.copy_from(next.slice(r.clone())?, s)?;
                next.slice_mut(r.clone())?.copy_from(&spare, s)?;
            }
            // The new value read on another stream (|x| into the spare),
            // joined both ways by events.
            1 => {
                side.wait_for(s)?;
                gpu.unary(UnaryOp::Abs, next.slice(r.clone())?, spare.view_mut(), &side)?;
                s.wait_for(&side)?;
            }
            // Explicit-pattern launches (never PDL): -(-x) through the spare.
            2 => {
                let opts = gpukern::Opts::auto().pattern(OpPattern::Scalar).shape(cfg);
                gpu.unary_opts(UnaryOp::Neg, next.slice(r.clone())?, spare.view_mut(), s, &opts)?;
                gpu.unary_opts(UnaryOp::Neg, spare.view(), next.slice_mut(r.clone())?, s, &opts)?;
            }
            _ => {}
        }
    }
    side.synchronize()
}

/// The chain recorded with `Gpu::graph` (PDL forced on), replayed twice.
fn graph<T: gpukern::Element>(gpu: &Gpu, x: &mut Bands<T>, bv: gpukern::View<'_, T>, s: &Stream) -> Result<()> {
    let r = x.range();
    let mut g = gpu.graph();
    g.set_pdl(Pdl::On);
    let bs = g.input(bv)?;
    let (first, rest) = x.bands.split_at_mut(1);
    let mut prev = g.input(first[0].slice(r.clone())?)?;
    for (k, band) in STEPS.iter().zip(rest.iter_mut()) {
        let out = g.output(band.slice_mut(r.clone())?)?;
        match *k {
            OpKind::Binary(op) => g.binary(op, prev, bs, out)?,
            OpKind::Unary(op) => g.unary(op, prev, out)?,
            OpKind::Axpby => g.axpby(SCALES.0, prev, SCALES.1, bs, out)?,
        }
        prev = out;
    }
    let graph = g.build()?;
    graph.launch(s)?;
    graph.launch(s)
}

/// The CPU chain of `x0` (each step in parallel over chunks; the rules are per element).
fn reference_chain<T: ReferenceOps>(x0: &[T], b: &[T]) -> Vec<Vec<T>> {
    use rayon::prelude::*;
    let mut want = vec![x0.to_vec()];
    for k in STEPS {
        let prev = want.last().expect("x0");
        let next: Vec<T> = prev
            .par_chunks(1 << 14)
            .zip(b.par_chunks(1 << 14))
            .flat_map_iter(|(p, q)| reference::map(k, p, (k.inputs() == 2).then_some(q), SCALES))
            .collect();
        want.push(next);
    }
    want
}

/// One chain from `x0` (the CPU's values `want`): returns the first problem.
/// Mixed's extra work changes nothing (copies, |x| discarded, -(-x)).
fn chain<T: ReferenceOps>(
    mode: Mode,
    x0: &[T],
    b: &[T],
    want: &[Vec<T>],
    off: usize,
) -> std::result::Result<(), String> {
    let gpu = gpu();
    let n = x0.len();
    let what = format!("{mode:?} {} n={n} off={off}", T::DTYPE.name());
    let e = |e: gpukern::Error| format!("{what}: {e}");
    let len = n + off + 2 * CANARY;
    // A NaN payload no operation produces (f32; the 16-bit types take its low half).
    let canary = T::from_bits32(if T::DTYPE == gpukern::Dtype::F32 { 0x7fc0_0123 } else { 0x7e23 });
    let band = |data: Option<&[T]>| -> gpukern::Result<DeviceVec<T>> {
        let mut host = vec![canary; len];
        if let Some(d) = data {
            host[CANARY + off..CANARY + off + n].copy_from_slice(d);
        }
        gpu.upload(&host)
    };
    let mut x = Bands { bands: Vec::new(), off, n };
    x.bands.push(band(Some(x0)).map_err(e)?);
    for _ in STEPS {
        x.bands.push(band(None).map_err(e)?);
    }
    let db = band(Some(b)).map_err(e)?;
    let s = gpu.stream().map_err(e)?;
    queue(&gpu, mode, &mut x, &db, &s).map_err(e)?;
    s.synchronize().map_err(e)?;
    for (i, (dev, want)) in x.bands.iter().zip(want).enumerate() {
        let got = dev.to_vec().map_err(e)?;
        if let Some(j) = reference::first_mismatch(&got[x.range()], want) {
            return Err(format!("{what}: value {i} differs at {j}: {:?} vs {:?}", got[x.range()][j], want[j]));
        }
        let intact = |v: &[T]| v.iter().all(|c| c.to_bits32() == canary.to_bits32());
        if !intact(&got[..CANARY + off]) || !intact(&got[CANARY + off + n..]) {
            return Err(format!("{what}: value {i}: a canary was overwritten"));
        }
    }
    Ok(())
}

fn run<T: ReferenceOps>() {
    let modes = [Mode::Eager(Pdl::On), Mode::Eager(Pdl::Auto), Mode::Eager(Pdl::Off), Mode::Mixed, Mode::Graph];
    let mut failures = Vec::new();
    // Under compute-sanitizer: the sizes that cover one and several blocks.
    let sizes: &[usize] = if sanitizing() { &SIZES[..6] } else { &SIZES };
    for &n in sizes {
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let (x0, b) = inputs::<T>(Data::Random, n, &mut rng);
        let want = reference_chain(&x0, &b);
        for mode in modes {
            for off in OFFSETS {
                let r = chain::<T>(mode, &x0, &b, &want, off).map_err(|e| format!("{e} (seed {seed})"));
                record("pdl_chains", &format!("{mode:?} {} off={off}", T::DTYPE.name()), n, r.is_ok());
                failures.extend(r.err());
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pdl_chains() {
    let info = gpu().info().clone();
    if !info.has_sm90() {
        eprintln!("note: {} has no PDL (sm_90); the chains run as plain launches", info.name);
    }
    run::<f32>();
    run::<bf16>();
    run::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_builder_refuses_misuse() {
    let gpu = gpu();
    let (a, mut c, mut d) =
        (gpu.alloc::<f32>(64).unwrap(), gpu.alloc::<f32>(64).unwrap(), gpu.alloc::<f32>(32).unwrap());
    let g = gpu.graph();
    assert!(g.build().is_err(), "an empty graph is refused");
    let mut g = gpu.graph();
    let (sa, sc, sd) = (g.input(&a).unwrap(), g.output(&mut c).unwrap(), g.output(&mut d).unwrap());
    assert!(g.unary(UnaryOp::Neg, sc, sa).is_err(), "an input slot as output");
    assert!(g.unary(UnaryOp::Neg, sa, sd).is_err(), "lengths differ");
    assert!(g.unary(UnaryOp::Neg, sc, sc).is_err(), "output overlaps the input");
    assert!(g.unary(UnaryOp::Neg, sc.slice(..32).unwrap(), sc.slice(16..48).unwrap()).is_err(), "partial overlap");
    g.unary(UnaryOp::Neg, sc.slice(..32).unwrap(), sc.slice(32..).unwrap()).unwrap();
    assert!(sa.slice(10..65).is_err());
    let e = gpu.alloc::<f32>(64).unwrap();
    let mut other = gpu.graph();
    let se = other.input(&e).unwrap();
    let e = g.unary(UnaryOp::Neg, se, sc).unwrap_err();
    assert!(matches!(e, gpukern::Error::ForeignSlot { kernel: "neg" }), "a slot of another builder: {e:?}");
    assert!(!e.to_string().contains("another Gpu"), "the same Gpu's builder: {e}");
    assert_eq!(g.len(), 1);
    let graph = g.build().unwrap();
    graph.launch(&gpu.stream().unwrap()).unwrap();
    gpu.synchronize().unwrap();
}

/// A foreach chain: `FOREACH_STEPS` `add_many` launches back to back, each
/// list's triples reading the previous list's outputs (`x_k = x_{k-1} + b`),
/// over `tensors` triples of lengths from `base` with odd offsets between them
/// (some triples 16-byte aligned, some not); up to 32 triples travel inline,
/// more as a table copied first. Every value and the gaps between triples are
/// checked.
fn foreach_chain<T: ReferenceOps>(tensors: usize, base: usize, pdl: Pdl) -> std::result::Result<(), String> {
    const FOREACH_STEPS: usize = 6;
    let gpu = gpu();
    let what = format!("add_many {} tensors={tensors} base={base} {pdl:?}", T::DTYPE.name());
    let e = |e: gpukern::Error| format!("{what}: {e}");
    // Triple j: base + 7j elements at start_j, with a gap of at least CANARY.
    let lens: Vec<usize> = (0..tensors).map(|j| base + 7 * j).collect();
    let mut starts = Vec::with_capacity(tensors);
    let mut end = CANARY;
    for (j, l) in lens.iter().enumerate() {
        starts.push(end + j % 3);
        end = starts[j] + l + CANARY;
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(tensors as u64 * 31 + base as u64);
    let (x0, b) = inputs::<T>(Data::Random, end, &mut rng);
    let canary = T::from_bits32(if T::DTYPE == gpukern::Dtype::F32 { 0x7fc0_0123 } else { 0x7e23 });
    let db = gpu.upload(&b).map_err(e)?;
    let mut values = vec![gpu.upload(&x0).map_err(e)?];
    for _ in 0..FOREACH_STEPS {
        values.push(gpu.upload(&vec![canary; end]).map_err(e)?);
    }
    let s = gpu.stream_with(pdl).map_err(e)?;
    assert_eq!(s.pdl(), pdl);
    for k in 1..=FOREACH_STEPS {
        let (done, rest) = values.split_at_mut(k);
        let mut out = rest[0].view_mut();
        let mut list = Vec::with_capacity(tensors);
        let mut at = 0;
        for (&st, &l) in starts.iter().zip(&lens) {
            let (_, tail) = out.into_split_at(st - at).map_err(e)?;
            let (mine, tail) = tail.into_split_at(l).map_err(e)?;
            list.push((done[k - 1].slice(st..st + l).map_err(e)?, db.slice(st..st + l).map_err(e)?, mine));
            out = tail;
            at = st + l;
        }
        gpu.add_many(list, &s).map_err(e)?;
    }
    s.synchronize().map_err(e)?;
    let add = OpKind::Binary(BinaryOp::Add);
    let mut want = x0.clone();
    for (k, dev) in values.iter().enumerate().skip(1) {
        let got = dev.to_vec().map_err(e)?;
        let mut next = vec![canary; end];
        for (&st, &l) in starts.iter().zip(&lens) {
            let r = st..st + l;
            next[r.clone()].copy_from_slice(&reference::map(add, &want[r.clone()], Some(&b[r.clone()]), SCALES));
        }
        if let Some(j) = reference::first_mismatch(&got, &next) {
            return Err(format!("{what}: value {k} differs at {j}: {:?} vs {:?}", got[j], next[j]));
        }
        want = next;
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pdl_foreach_chains() {
    let mut failures = Vec::new();
    let shapes = [(3usize, 100usize), (10, 1024), (10, 5000), (32, 700), (40, 1000), (40, 70_000)];
    // Under compute-sanitizer: the shapes up to a few blocks per triple.
    let shapes = if sanitizing() { &shapes[..5] } else { &shapes[..] };
    for &(tensors, base) in shapes {
        for pdl in [Pdl::On, Pdl::Auto, Pdl::Off] {
            let mut one = |r: std::result::Result<(), String>, dtype: &str| {
                record("pdl_chains", &format!("add_many {dtype} tensors={tensors} {pdl:?}"), base, r.is_ok());
                failures.extend(r.err());
            };
            one(foreach_chain::<f32>(tensors, base, pdl), "f32");
            one(foreach_chain::<bf16>(tensors, base, pdl), "bf16");
            one(foreach_chain::<f16>(tensors, base, pdl), "f16");
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
