//! GPU tests of graphs of a user's kernels (`user_graphs`, ignored without a
//! GPU): one graph mixing the example's `elementwise!` operations, the
//! library's, and typed kernels (`scale` with a scalar, the two launches of
//! `block_sum`), at sizes × offsets × PDL settings, replayed and compared bit
//! for bit with the CPU rules, canaries around every output; and the record
//! checks, which refuse what the borrow rules of library operations refuse.

use custom_kernels_app::{first_mismatch, inputs, ints, load, Lane};
use gpukern::{BinaryOp, Error, Gpu, Launch, Module, Pdl, UnaryOp};

fn record(case: &str, n: usize, ok: bool) {
    use std::io::Write;
    if let Ok(path) = std::env::var("GPUKERN_CASES") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{{\"test\":\"user_graphs\",\"case\":\"{case}\",\"n\":{n},\"ok\":{ok}}}");
        }
    }
}

/// Canary elements on each side of every output.
const PAD: usize = 32;
/// The canaries' bits.
const POISON: u32 = 0x7fc0_dead;
/// Threads per block of the typed launches.
const BLOCK: u32 = 128;

/// Checks `got` (an output buffer with `PAD` canaries each side) against `want`.
fn compare(step: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    let n = want.len();
    if let Some(i) = first_mismatch(&got[PAD..PAD + n], want) {
        return Err(format!("{step}: element {i} got {:#x}, want {:#x}", got[PAD + i].bits(), want[i].bits()));
    }
    if !got[..PAD].iter().chain(&got[PAD + n..]).all(|x| x.to_bits() == POISON) {
        return Err(format!("{step}: a canary changed"));
    }
    Ok(())
}

/// One graph of `n` elements at element `offset` of the inputs under `pdl`:
/// `y1 = silu(x)`, `y2 = relu_axpy(y1, b)`, `y3 = scale(y2, k)` (typed),
/// `y4 = y3 · b` (the library's), and the two-launch `block_sum` of integers
/// into `total`; replayed `replays` times, then checked.
fn graph(gpu: &Gpu, module: &Module, n: usize, offset: usize, pdl: Pdl) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    let (silu, relu) = (module.unary::<f32>("silu").map_err(e)?, module.binary::<f32>("relu_axpy").map_err(e)?);
    let scale = module.kernel::<custom_kernels::scale>().map_err(e)?;
    let sum = module.kernel::<custom_kernels::block_sum>().map_err(e)?;
    let (alpha, beta, k) = (1.25f32, -0.5f32, 0.75f32);
    let x = inputs::<f32>(n + offset, 11 + n as u64);
    let b = inputs::<f32>(n + offset, 13 + n as u64);
    let z = ints(n + offset, 17 + n as u64);
    let (dx, db, dz) = (gpu.upload(&x).map_err(e)?, gpu.upload(&b).map_err(e)?, gpu.upload(&z).map_err(e)?);
    let mut outs = (0..4).map(|_| gpu.alloc::<f32>(n + 2 * PAD)).collect::<Result<Vec<_>, _>>().map_err(e)?;
    let blocks = (n.div_ceil(BLOCK as usize * 4).clamp(1, 64)) as u32;
    let mut partials = gpu.alloc::<f32>(blocks as usize + 2 * PAD).map_err(e)?;
    let mut total = gpu.alloc::<f32>(1 + 2 * PAD).map_err(e)?;
    for o in outs.iter_mut().chain([&mut partials, &mut total]) {
        o.fill_bits(POISON).map_err(e)?;
    }
    let stream = gpu.stream().map_err(e)?;
    {
        let mut g = gpu.graph();
        g.set_pdl(pdl);
        let r = offset..offset + n;
        let (sx, sb, sz) = (
            g.input(dx.slice(r.clone()).map_err(e)?).map_err(e)?,
            g.input(db.slice(r.clone()).map_err(e)?).map_err(e)?,
            g.input(dz.slice(r).map_err(e)?).map_err(e)?,
        );
        let mut ys = Vec::new();
        for o in outs.iter_mut() {
            ys.push(g.output(o.slice_mut(PAD..PAD + n).map_err(e)?).map_err(e)?);
        }
        let sp = g.output(partials.slice_mut(PAD..PAD + blocks as usize).map_err(e)?).map_err(e)?;
        let st = g.output(total.slice_mut(PAD..PAD + 1).map_err(e)?).map_err(e)?;
        g.custom_unary(&silu, sx, ys[0], [0.0; 2]).map_err(e)?;
        g.custom_binary(&relu, ys[0], sb, ys[1], [alpha, beta]).map_err(e)?;
        let grid = (n.div_ceil(BLOCK as usize).clamp(1, 1024) as u32, 1, 1);
        g.kernel(&scale, Launch { grid, block: (BLOCK, 1, 1), shared_bytes: 0 }, (ys[1], ys[2], k)).map_err(e)?;
        g.binary(BinaryOp::Mul, ys[2], sb, ys[3]).map_err(e)?;
        let l = Launch { grid: (blocks, 1, 1), block: (BLOCK, 1, 1), shared_bytes: 0 };
        g.kernel(&sum, l, (sz, sp)).map_err(e)?;
        g.kernel(&sum, Launch { grid: (1, 1, 1), ..l }, (sp, st)).map_err(e)?;
        let graph = g.build().map_err(e)?;
        if graph.launches() != 6 {
            return Err(format!("{} operations recorded, 6 expected", graph.launches()));
        }
        for _ in 0..3 {
            graph.launch(&stream).map_err(e)?;
        }
        stream.synchronize().map_err(e)?;
    }
    let (x, b, z) = (&x[offset..], &b[offset..], &z[offset..]);
    let y1: Vec<f32> = x.iter().map(|&v| f32::silu(v)).collect();
    let y2: Vec<f32> = y1.iter().zip(b).map(|(&v, &w)| f32::relu_axpy(alpha, beta, v, w)).collect();
    let y3: Vec<f32> = y2.iter().map(|&v| k * v).collect();
    let y4: Vec<f32> = y3.iter().zip(b).map(|(&v, &w)| v * w).collect();
    for (step, (o, want)) in ["silu", "relu_axpy", "scale", "mul"].iter().zip(outs.iter().zip([y1, y2, y3, y4])) {
        compare(step, &o.to_vec().map_err(e)?, &want)?;
    }
    let want_total = z.iter().map(|&v| v as f64).sum::<f64>() as f32;
    compare("block_sum", &total.to_vec().map_err(e)?, &[want_total])?;
    let got = partials.to_vec().map_err(e)?;
    let canaries = got[..PAD].iter().chain(&got[PAD + blocks as usize..]);
    if !canaries.into_iter().all(|x| x.to_bits() == POISON) {
        return Err("block_sum: a canary of the partials changed".into());
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn graphs_of_user_ops_and_typed_kernels_replay_bit_exact() {
    let gpu = Gpu::new(0).unwrap();
    let module = load(&gpu).unwrap();
    let mut failures = Vec::new();
    for n in [1usize, 7, 1000, 4099, 65_536, (1 << 20) + 5] {
        for offset in [0usize, 1, 4] {
            for pdl in [Pdl::Auto, Pdl::On, Pdl::Off] {
                let r = graph(&gpu, &module, n, offset, pdl);
                record(&format!("graph offset {offset} {pdl:?}"), n, r.is_ok());
                if let Err(m) = r {
                    failures.push(format!("n={n} offset={offset} {pdl:?}: {m}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn user_ops_in_graphs_follow_the_borrow_rules() {
    let gpu = Gpu::new(0).unwrap();
    let module = load(&gpu).unwrap();
    let silu = module.unary::<f32>("silu").unwrap();
    let relu = module.binary::<f32>("relu_axpy").unwrap();
    let scale = module.kernel::<custom_kernels::scale>().unwrap();
    let l = Launch { grid: (1, 1, 1), block: (BLOCK, 1, 1), shared_bytes: 0 };
    let x = gpu.upload(&[1.0f32; 64]).unwrap();
    let (mut y, mut w) = (gpu.alloc::<f32>(64).unwrap(), gpu.alloc::<f32>(64).unwrap());
    let mut other = gpu.graph();
    let foreign = other.input(&x).unwrap();
    let mut g = gpu.graph();
    let (sx, sy, sw) = (g.input(&x).unwrap(), g.output(&mut y).unwrap(), g.output(&mut w).unwrap());
    // A slot of another builder, in each kind of user operation.
    assert!(matches!(g.custom_unary(&silu, foreign, sy, [0.0; 2]), Err(Error::ForeignSlot { .. })));
    assert!(matches!(g.custom_binary(&relu, sx, foreign, sy, [1.0; 2]), Err(Error::ForeignSlot { .. })));
    assert!(matches!(g.kernel(&scale, l, (foreign, sy, 2.0)), Err(Error::ForeignSlot { .. })));
    // An output registered as an input.
    assert!(matches!(g.custom_unary(&silu, sy, sx, [0.0; 2]), Err(Error::WrongOperands { .. })));
    assert!(matches!(g.kernel(&scale, l, (sy, sx, 2.0)), Err(Error::WrongOperands { .. })));
    // An output overlapping an input of the same operation.
    let (head, tail) = (sy.slice(..40).unwrap(), sy.slice(24..).unwrap());
    assert!(matches!(g.kernel(&scale, l, (head, tail, 2.0)), Err(Error::WrongOperands { .. })));
    let (a8, b8, out8) = (sx.slice(..8).unwrap(), sy.slice(..8).unwrap(), sy.slice(4..12).unwrap());
    assert!(matches!(g.custom_binary(&relu, a8, b8, out8, [1.0; 2]), Err(Error::WrongOperands { .. })));
    assert!(matches!(g.custom_unary(&silu, sy, sy.slice(..).unwrap(), [0.0; 2]), Err(Error::WrongOperands { .. })));
    // Lengths, as the library's operations check them.
    let e = g.custom_unary(&silu, sx.slice(..63).unwrap(), sy, [0.0; 2]).unwrap_err();
    assert!(matches!(e, Error::UnaryLengthMismatch { a: 63, out: 64, .. }), "{e:?}");
    // A module of another Gpu handle.
    let second = Gpu::new(0).unwrap();
    let theirs = load(&second).unwrap().unary::<f32>("silu").unwrap();
    assert!(matches!(g.custom_unary(&theirs, sx, sy, [0.0; 2]), Err(Error::ForeignHandle { what: "module", .. })));
    assert!(g.is_empty(), "a refused operation records nothing");
    // Disjoint halves of one output are fine; a bad geometry fails the build.
    g.kernel(&scale, l, (sx.slice(..32).unwrap(), sy.slice(..32).unwrap(), 2.0)).unwrap();
    g.unary(UnaryOp::Neg, sy.slice(..32).unwrap(), sy.slice(32..).unwrap()).unwrap();
    g.kernel(&scale, Launch { block: (0, 1, 1), ..l }, (sx, sw, 2.0)).unwrap();
    assert!(matches!(g.build(), Err(Error::BlockSize { .. })));
    let mut g = gpu.graph();
    let (sx, sy) = (g.input(&x).unwrap(), g.output(&mut y).unwrap());
    g.kernel(&scale, l, (sx, sy, 3.0)).unwrap();
    let graph = g.build().unwrap();
    let s = gpu.stream().unwrap();
    graph.launch(&s).unwrap();
    s.synchronize().unwrap();
    drop(graph);
    assert_eq!(y.to_vec().unwrap(), vec![3.0f32; 64]);
    record("record checks", 64, true);
}

/// A graph keeps the module whose kernels it runs: recorded, built, then
/// the module and every handle of it dropped, the graph still replays the
/// user kernels (before the fix, it ran the kernels of an unloaded module:
/// a segmentation fault), and the results are the CPU rules' bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_keeps_its_module_loaded() {
    let gpu = Gpu::new(0).unwrap();
    let n = 4099;
    let x = inputs::<f32>(n, 23);
    let dx = gpu.upload(&x).unwrap();
    let (mut y1, mut y2) = (gpu.alloc::<f32>(n + 2 * PAD).unwrap(), gpu.alloc::<f32>(n + 2 * PAD).unwrap());
    y1.fill_bits(POISON).unwrap();
    y2.fill_bits(POISON).unwrap();
    let stream = gpu.stream().unwrap();
    {
        let module = load(&gpu).unwrap();
        let silu = module.unary::<f32>("silu").unwrap();
        let scale = module.kernel::<custom_kernels::scale>().unwrap();
        let mut g = gpu.graph();
        let sx = g.input(&dx).unwrap();
        let s1 = g.output(y1.slice_mut(PAD..PAD + n).unwrap()).unwrap();
        let s2 = g.output(y2.slice_mut(PAD..PAD + n).unwrap()).unwrap();
        g.custom_unary(&silu, sx, s1, [0.0; 2]).unwrap();
        let grid = (n.div_ceil(BLOCK as usize) as u32, 1, 1);
        g.kernel(&scale, Launch { grid, block: (BLOCK, 1, 1), shared_bytes: 0 }, (s1, s2, 0.5f32)).unwrap();
        let graph = g.build().unwrap();
        drop((silu, scale, module));
        // Something else loaded and unloaded meanwhile, where the old module was.
        drop(load(&gpu).unwrap());
        for _ in 0..3 {
            graph.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
    }
    let want1: Vec<f32> = x.iter().map(|&v| f32::silu(v)).collect();
    let want2: Vec<f32> = want1.iter().map(|&v| 0.5 * v).collect();
    let r = compare("silu", &y1.to_vec().unwrap(), &want1).and(compare("scale", &y2.to_vec().unwrap(), &want2));
    record("graph after its module was dropped", n, r.is_ok());
    r.unwrap();
}
