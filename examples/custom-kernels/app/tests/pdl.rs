//! GPU tests of programmatic dependent launch for a user's kernels (cases of
//! the verification record's `pdl_chains`; ignored without a GPU): chains of
//! the example's operations, each output the next input, with PDL on, off and
//! automatic, bit-exact against the CPU rules with canaries; the typed sum
//! (`#[kernel(pdl)]`) under each setting; and modules whose PDL twins do not
//! wait first, refused at load.

use custom_kernels_app::{first_mismatch, inputs, load, Lane, Sum, PTX_SM90};
use gpukern::half::bf16;
use gpukern::{Error, Gpu, Module, Pdl, Stream};

fn record(case: &str, n: usize, ok: bool) {
    use std::io::Write;
    if let Ok(path) = std::env::var("GPUKERN_CASES") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{{\"test\":\"pdl_chains\",\"case\":\"{case}\",\"n\":{n},\"ok\":{ok}}}");
        }
    }
}

/// Steps of each chain: silu, then relu_axpy with `b`, alternately.
const STEPS: usize = 8;
/// Canary elements on each side of every output.
const PAD: usize = 32;

/// Runs one chain of `n` elements at element `offset` on `stream` (under its
/// PDL setting) and checks every step's output and canaries against the CPU
/// rules.
fn chain<T: Lane>(gpu: &Gpu, module: &Module, stream: &Stream, n: usize, offset: usize) -> Result<(), String> {
    let e = |e: gpukern::Error| e.to_string();
    let (silu, relu) = (module.unary::<T>("silu").map_err(e)?, module.binary::<T>("relu_axpy").map_err(e)?);
    let (alpha, beta) = (0.75f32, -0.5f32);
    let x0 = inputs::<T>(n + offset, 3 + n as u64);
    let b = inputs::<T>(n + offset, 5 + n as u64);
    let (dx0, db) = (gpu.upload(&x0).map_err(e)?, gpu.upload(&b).map_err(e)?);
    // One buffer per step: the output of step i at [offset + PAD, + n).
    let mut outs =
        (0..STEPS).map(|_| gpu.alloc::<T>(n + offset + 2 * PAD)).collect::<Result<Vec<_>, _>>().map_err(e)?;
    for o in &mut outs {
        o.fill(T::from_bits32(0xffff_ffff)).map_err(e)?;
    }
    let r = offset + PAD..offset + PAD + n;
    for i in 0..STEPS {
        let (done, rest) = outs.split_at_mut(i);
        let input = if i == 0 { dx0.slice(offset..offset + n) } else { done[i - 1].slice(r.clone()) }.map_err(e)?;
        let out = rest[0].slice_mut(r.clone()).map_err(e)?;
        if i % 2 == 0 {
            silu.run(input, out, [0.0; 2], stream).map_err(e)?;
        } else {
            relu.run(input, db.slice(offset..offset + n).map_err(e)?, out, [alpha, beta], stream).map_err(e)?;
        }
    }
    stream.synchronize().map_err(e)?;
    let mut want: Vec<T> = x0[offset..].to_vec();
    for (i, o) in outs.iter().enumerate() {
        want = if i % 2 == 0 {
            want.iter().map(|&x| T::silu(x)).collect()
        } else {
            want.iter().zip(&b[offset..]).map(|(&x, &y)| T::relu_axpy(alpha, beta, x, y)).collect()
        };
        let got = o.to_vec().map_err(e)?;
        if let Some(j) = first_mismatch(&got[r.clone()], &want) {
            return Err(format!(
                "step {i} element {j}: got {:#x}, want {:#x}",
                got[r.start + j].bits(),
                want[j].bits()
            ));
        }
        let poison = if std::mem::size_of::<T>() == 2 { 0xffff } else { u32::MAX };
        if !got[..r.start].iter().chain(&got[r.end..]).all(|x| x.bits() == poison) {
            return Err(format!("step {i}: a canary changed"));
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pdl_chains_of_custom_ops_and_typed_kernels() {
    let gpu = Gpu::new(0).unwrap();
    let streams = [Pdl::On, Pdl::Auto, Pdl::Off].map(|p| gpu.stream_with(p).unwrap());
    let module = load(&gpu).unwrap();
    // The twins exist exactly where PDL can run.
    let sm90 = gpu.info().has_sm90();
    assert_eq!(module.unary::<f32>("silu").unwrap().pdl_kernel(), sm90.then_some("silu_f32x4_pdl"));
    assert_eq!(module.binary::<bf16>("relu_axpy").unwrap().pdl_kernel(), sm90.then_some("relu_axpy_bf16x8_pdl"));
    let mut failures = Vec::new();
    for n in [1usize, 8, 9, 1000, 4096, 65_537, 1 << 20, (1 << 22) + 3] {
        for offset in [0usize, 1, 8] {
            for stream in &streams {
                let pdl = stream.pdl();
                for (dtype, r) in [
                    ("f32", chain::<f32>(&gpu, &module, stream, n, offset)),
                    ("bf16", chain::<bf16>(&gpu, &module, stream, n, offset)),
                ] {
                    record(&format!("custom chain {dtype} offset {offset} {pdl:?}"), n, r.is_ok());
                    if let Err(m) = r {
                        failures.push(format!("{dtype} n={n} offset={offset} {pdl:?}: {m}"));
                    }
                }
            }
        }
    }
    // The typed sum's two launches, back to back over several arrays.
    let mut sum = Sum::new(&gpu, &module).unwrap();
    assert_eq!(sum.kernel().has_pdl(), sm90);
    // What a typed launch runs, asked through the one `plan`: the kernel by
    // its name, with PDL only where the stream (or the call) says so.
    let l = gpukern::Launch { grid: (1024, 1, 1), block: (256, 1, 1), shared_bytes: 0 };
    for (stream, call) in streams.iter().flat_map(|s| [(s, None), (s, Some(gpukern::Pdl::Off))]) {
        let opts = call.map_or(gpukern::Opts::auto(), |p| gpukern::Opts::auto().pdl(p));
        let plan = gpu.plan(gpukern::Call::typed(sum.kernel(), l), stream, &opts).unwrap();
        assert_eq!(plan.kernel, sum.kernel().name());
        let on = sm90 && call.unwrap_or(stream.pdl()) != gpukern::Pdl::Off;
        assert_eq!(plan.pdl, on, "stream {:?}, call {call:?}", stream.pdl());
    }
    for stream in &streams {
        let pdl = stream.pdl();
        for n in [1usize, 4097, 1 << 20] {
            let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
            let dx = gpu.upload(&x).unwrap();
            let mut ok = true;
            for _ in 0..4 {
                sum.queue(&gpu, dx.view(), stream).unwrap();
                stream.synchronize().unwrap();
                ok &= sum.total().unwrap() as f64 == x.iter().map(|&v| v as f64).sum::<f64>();
            }
            record(&format!("typed block_sum {pdl:?}"), n, ok);
            if !ok {
                failures.push(format!("block_sum n={n} {pdl:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn twins_that_do_not_wait_first_are_refused() {
    let gpu = Gpu::new(0).unwrap();
    if !gpu.info().has_sm90() {
        return;
    }
    // The sm_90 module with the wait taken out of one twin and of the typed
    // kernel: still valid PTX, but launching it with PDL would race.
    let cut = |ptx: &str, entry: &str| -> String {
        let start = ptx.find(&format!(".entry {entry}(")).unwrap();
        let wait = start + ptx[start..].find("griddepcontrol.wait;").unwrap();
        format!("{}{}", &ptx[..wait], &ptx[wait + "griddepcontrol.wait;".len()..])
    };
    // SAFETY: the example's own PTX with one instruction removed: every
    // manifest still describes the macro's kernels, which now only lack the
    // wait (the check below must refuse their PDL launch, not trust it).
    let module = unsafe { gpu.load_ptx(&cut(PTX_SM90, "silu_f32x4_pdl")) }.unwrap();
    assert!(matches!(module.unary::<f32>("silu"), Err(Error::CustomOp { .. })));
    assert!(module.unary::<bf16>("silu").unwrap().pdl_kernel().is_some(), "the other dtype's twin still waits");
    // SAFETY: as above, with the wait removed from the typed kernel.
    let module = unsafe { gpu.load_ptx(&cut(PTX_SM90, "block_sum")) }.unwrap();
    assert!(matches!(module.kernel::<custom_kernels::block_sum>(), Err(Error::CustomOp { .. })));
    record("twin without the wait refused", 0, true);
}
