//! `gpukern_device::math` on the GPU against the same functions on the CPU and
//! against their f64 references, over every f32 input.
//!
//! For each one-input function of `math::check::FUNCTIONS`, all 2^32 bit
//! patterns are evaluated on the GPU (`Gpu::math_sweep`, 2^28 per launch) and
//! on the CPU (all cores, in parallel), compared bit for bit (NaN as any NaN,
//! the project's rule: the GPU's NaN payloads are canonical, x86's are not),
//! and measured in ulps against the f64 reference with `math::check::ulp_error`.
//! `pow` gets every x for a fixed set of exponents and 10^7 random pairs. One
//! case per function goes to the verification record with its maximum error,
//! where it is, how many results are correctly rounded and the mismatches.
//! The test fails on any GPU/CPU mismatch or an error above the bound.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{gpu, record_with};
use gpukern::{DeviceVec, Stream};
use gpukern_device::math::{self, check::ulp_error};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// Inputs per launch and per CPU pass: 2^28 f32, 1 GiB each way.
const CHUNK: usize = 1 << 28;

/// The exponents for which `pow` sweeps every x.
const POW_EXPONENTS: [f32; 6] = [0.5, 2.0, 3.0, -1.0, 1.0 / 3.0, 10.5];

/// Random (x, y) pairs of `pow`.
const POW_PAIRS: usize = 10_000_000;

/// Largest error allowed, in ulps of the f32 result: the math module's
/// documented bounds (`device/src/math/README.md`). The targets are 1 ulp
/// (`pow` 2: it measures 0.944 over every x of its six exponents and 0.907 over
/// the random pairs on the H200). `gelu` (6.355 on the H200 before its rework)
/// is within 1 ulp over all inputs on the host, whose bits are the GPU's.
fn ulp_bound(function: &str) -> f64 {
    if function.starts_with("pow") {
        2.0
    } else {
        1.0
    }
}

/// Two results are the same: equal bits, or both NaN.
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// What one function did over its inputs.
#[derive(Clone, Debug, Default)]
struct Stats {
    n: u64,
    max_ulp: f64,
    /// The input (x's bits; for pairs, `(x, y)`) of the largest error.
    argmax: String,
    correctly_rounded: u64,
    mismatches: u64,
    /// The first few GPU/CPU mismatches, for the failure message.
    examples: Vec<String>,
}

impl Stats {
    fn merge(mut self, o: Stats) -> Stats {
        if o.max_ulp > self.max_ulp || (self.argmax.is_empty() && !o.argmax.is_empty()) {
            (self.max_ulp, self.argmax) = (o.max_ulp, o.argmax);
        }
        self.n += o.n;
        self.correctly_rounded += o.correctly_rounded;
        self.mismatches += o.mismatches;
        self.examples.extend(o.examples.into_iter().take(5usize.saturating_sub(self.examples.len())));
        self
    }

    /// One result: `gpu` from the device, `cpu` the same function here, `want`
    /// the f64 reference, `what` names the input.
    fn add(&mut self, gpu: f32, cpu: f32, want: f64, what: impl Fn() -> String) {
        self.n += 1;
        if !same(gpu, cpu) {
            self.mismatches += 1;
            if self.examples.len() < 5 {
                self.examples.push(format!("{}: gpu {:#010x} cpu {:#010x}", what(), gpu.to_bits(), cpu.to_bits()));
            }
        }
        self.correctly_rounded += u64::from(same(gpu, want as f32));
        let e = ulp_error(gpu, want);
        // NaN errors (a NaN where a number is due) count as the worst.
        let e = if e.is_nan() { f64::INFINITY } else { e };
        if e > self.max_ulp || self.argmax.is_empty() {
            (self.max_ulp, self.argmax) = (e, what());
        }
    }
}

/// Checks `got[i]` (the GPU's `f` at input `x(i)`) against `f` here and the
/// reference `g`, on all cores.
fn check_chunk<X: Copy>(
    got: &[f32],
    x: impl Fn(usize) -> X + Sync,
    f: impl Fn(X) -> f32 + Sync,
    g: impl Fn(X) -> f64 + Sync,
    what: impl Fn(usize) -> String + Sync,
) -> Stats {
    got.par_chunks(1 << 16)
        .enumerate()
        .map(|(c, part)| {
            let mut s = Stats::default();
            for (j, &v) in part.iter().enumerate() {
                let i = (c << 16) + j;
                let xi = x(i);
                s.add(v, f(xi), g(xi), || what(i));
            }
            s
        })
        .reduce(Stats::default, Stats::merge)
}

/// Every f32 input through `launch(start, out)` (2^28 per launch) and checked.
fn sweep_all(
    stream: &Stream,
    out: &mut DeviceVec<f32>,
    launch: impl Fn(u32, &mut DeviceVec<f32>) -> gpukern::Result<()>,
    f: impl Fn(f32) -> f32 + Sync,
    g: impl Fn(f32) -> f64 + Sync,
) -> Stats {
    let mut stats = Stats::default();
    for chunk in 0..(1usize << 32) / CHUNK {
        let start = (chunk * CHUNK) as u32;
        launch(start, out).unwrap();
        stream.synchronize().unwrap();
        let got = out.to_vec().unwrap();
        let x = |i: usize| f32::from_bits(start.wrapping_add(i as u32));
        let s = check_chunk(&got, x, &f, &g, |i| format!("{:#010x}", start.wrapping_add(i as u32)));
        stats = stats.merge(s);
    }
    stats
}

/// Records the function's case and notes a failure: any GPU/CPU mismatch, an
/// error above the bound, or not every input checked.
fn judge(function: &str, want_n: u64, s: &Stats, failures: &mut Vec<String>) {
    let bound = ulp_bound(function);
    let ok = s.mismatches == 0 && s.max_ulp <= bound && s.n == want_n;
    let extra = format!(
        "\"max_ulp\":{},\"argmax\":\"{}\",\"correctly_rounded\":{},\"mismatches\":{},\"ulp_bound\":{bound}",
        if s.max_ulp.is_finite() { format!("{:.4}", s.max_ulp) } else { "null".into() },
        s.argmax,
        s.correctly_rounded,
        s.mismatches
    );
    record_with("math_exhaustive", function, s.n as usize, ok, &extra);
    eprintln!("math {function}: n={} {extra}", s.n);
    if !ok {
        failures.push(format!("{function}: n={} {extra}; mismatches: {}", s.n, s.examples.join("; ")));
    }
}

/// `GPUKERN_MATH_ONLY=exp,log,pow`: only these functions (`pow` for its
/// sweeps and pairs). The whole test takes about 45 s per function on an
/// H200 machine (the CPU side), more than one 10-minute call, so a GPU
/// session can split it; unset, every function runs.
fn selected(name: &str) -> bool {
    match std::env::var("GPUKERN_MATH_ONLY") {
        Ok(list) => list.split(',').any(|n| n.trim() == name),
        Err(_) => true,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn math_exhaustive() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut out = gpu.alloc::<f32>(CHUNK).unwrap();
    let mut failures = Vec::new();
    for &(name, f, g) in math::check::FUNCTIONS.iter().filter(|(n, _, _)| selected(n)) {
        if kernels_gpu::math::sweep_kernel(name).is_none() {
            record_with("math_exhaustive", name, 0, false, "\"reason\":\"no GPU sweep kernel\"");
            failures.push(format!("{name}: no GPU sweep kernel in kernels_gpu::math"));
            continue;
        }
        let launch = |start, out: &mut DeviceVec<f32>| gpu.studies().math_sweep(name, start, out, &stream);
        let s = sweep_all(&stream, &mut out, launch, f, |x| g(x as f64));
        judge(name, 1 << 32, &s, &mut failures);
    }
    if !selected("pow") {
        assert!(failures.is_empty(), "{} failing functions:\n{}", failures.len(), failures.join("\n"));
        return;
    }
    // pow: every x for each fixed exponent.
    for y in POW_EXPONENTS {
        let launch = |start, out: &mut DeviceVec<f32>| gpu.studies().math_pow_sweep(start, y, out, &stream);
        let f = |x: f32| math::pow(x, y);
        let s = sweep_all(&stream, &mut out, launch, f, |x| (x as f64).powf(y as f64));
        judge(&format!("pow(x, {y})"), 1 << 32, &s, &mut failures);
    }
    drop(out);
    // pow: random pairs, half of them moderate (x in (0, 100), y in [-20, 20]),
    // half raw bit patterns (every class, signs and specials included).
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x90a7);
    let (xs, ys): (Vec<f32>, Vec<f32>) = (0..POW_PAIRS)
        .map(|i| match i % 2 {
            0 => (rng.gen_range(0.0f32..100.0), rng.gen_range(-20.0f32..20.0)),
            _ => (f32::from_bits(rng.gen()), f32::from_bits(rng.gen())),
        })
        .unzip();
    let (dx, dy) = (gpu.upload(&xs).unwrap(), gpu.upload(&ys).unwrap());
    let mut dout = gpu.alloc::<f32>(POW_PAIRS).unwrap();
    gpu.studies().math_pow_pairs(&dx, &dy, &mut dout, &stream).unwrap();
    stream.synchronize().unwrap();
    let got = dout.to_vec().unwrap();
    let s = check_chunk(
        &got,
        |i| (xs[i], ys[i]),
        |(x, y)| math::pow(x, y),
        |(x, y)| (x as f64).powf(y as f64),
        |i| format!("({:#010x}, {:#010x})", xs[i].to_bits(), ys[i].to_bits()),
    );
    judge("pow random pairs", POW_PAIRS as u64, &s, &mut failures);
    assert!(failures.is_empty(), "{} failing functions:\n{}", failures.len(), failures.join("\n"));
}

/// The sweeps' own contract, small: wrapping starts, any length, the errors.
#[test]
#[ignore = "needs a CUDA GPU"]
fn math_sweeps_cover_exactly_their_output() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut band = gpu.alloc::<f32>(1000 + 2 * common::CANARY).unwrap();
    for (n, start) in [(0usize, 0u32), (1, 7), (1000, u32::MAX - 10), (999, 0x3f80_0000)] {
        band.fill_bits(common::POISONS[0].into()).unwrap();
        let out = band.slice_mut(common::CANARY..common::CANARY + n).unwrap();
        gpu.studies().math_sweep("sqrt", start, out, &stream).unwrap();
        stream.synchronize().unwrap();
        let got = band.to_vec().unwrap();
        let p = f32::from_bits(common::POISONS[0]);
        let (head, rest) = got.split_at(common::CANARY);
        assert!(head.iter().chain(&rest[n..]).all(|&v| v.to_bits() == p.to_bits()), "n={n}: canary written");
        for (i, &v) in rest[..n].iter().enumerate() {
            let x = f32::from_bits(start.wrapping_add(i as u32));
            assert!(same(v, math::sqrt(x)), "n={n} start={start:#x} i={i}");
        }
        common::record("math_sweep", &format!("sqrt start={start:#x}"), n, true);
    }
    // Every sweep kernel once over a short run (so the sanitizer sees each).
    for &(name, f, _) in math::check::FUNCTIONS {
        let mut out = gpu.alloc::<f32>(4097).unwrap();
        gpu.studies().math_sweep(name, 0xbf00_0000, &mut out, &stream).unwrap();
        stream.synchronize().unwrap();
        let got = out.to_vec().unwrap();
        let ok = got.iter().enumerate().all(|(i, &v)| same(v, f(f32::from_bits(0xbf00_0000 + i as u32))));
        common::record("math_sweep", &format!("{name} 4097 inputs from -0.5"), 4097, ok);
        assert!(ok, "{name}: the GPU differs from the CPU");
    }
    let e = gpu.studies().math_sweep("no_such_function", 0, &mut band, &stream).unwrap_err();
    assert!(matches!(e, gpukern::Error::Shape { .. }), "{e:?}");
    let (x, y) = (gpu.alloc::<f32>(3).unwrap(), gpu.alloc::<f32>(4).unwrap());
    let mut o = gpu.alloc::<f32>(3).unwrap();
    assert!(gpu.studies().math_pow_pairs(&x, &y, &mut o, &stream).is_err(), "lengths differ");
}
