//! A LLaMA-style decoder MLP block on candle tensors, run once with candle's
//! native ops and once with gpukern's, and each element-wise op against
//! candle's native one.
//!
//! The block: `h = x + r` → `y = rms_norm(h)·w` → `g = y·Wgᵀ`, `u = y·Wuᵀ`
//! (candle's matmuls) → `a = silu(g) · u` → `o = a·Wdᵀ` → `h + o`; bf16, 8 × 512
//! tokens of width 4096, hidden 11008 (LLaMA-7B's). candle's run adds and
//! then calls `candle_nn::ops::rms_norm` (its fused kernel); ours is one
//! `add_rms_norm` kernel writing `h` and `y`.
//!
//! `cargo run --release -p candle-block --features cuda` on a GPU machine (the
//! build needs `eval "$(cargo xtask candle-env)"`); `-- --ops` also prints
//! the report section `candle` (`report/`): each op's GB/s against candle's
//! at 2^20, 2^24 and 2^28 elements and the norms against `candle_nn::ops` at
//! the issue's shapes, with each side's error against an f64 reference;
//! `-- --report DIR` runs only that section and writes `DIR/candle.md` and
//! `DIR/candle.json` (exit status 1 when our errors pass the checked bounds).
//! Without the `cuda` feature it runs a small block on the CPU (the same bits
//! check, no timing worth reading); the report needs a CUDA device.

mod report;
mod timing;

use std::path::PathBuf;
use std::process::ExitCode;

use candle_core::{DType, Device, Result, Tensor};
use clap::Parser;
use gpukern_candle as gc;

/// The block's sizes.
#[derive(Clone, Copy)]
struct Dims {
    tokens: usize,
    dim: usize,
    hidden: usize,
}

/// The block's tensors.
struct Block {
    x: Tensor,
    r: Tensor,
    norm_w: Tensor,
    w_gate: Tensor,
    w_up: Tensor,
    w_down: Tensor,
}

impl Block {
    fn random(d: Dims, dev: &Device) -> Result<Block> {
        let rand = |shape: (usize, usize), scale: f64| -> Result<Tensor> {
            Tensor::randn(0f32, scale as f32, shape, dev)?.to_dtype(DType::BF16)
        };
        Ok(Block {
            x: rand((d.tokens, d.dim), 1.0)?,
            r: rand((d.tokens, d.dim), 1.0)?,
            norm_w: (Tensor::randn(0f32, 0.1, d.dim, dev)? + 1.0)?.to_dtype(DType::BF16)?,
            w_gate: rand((d.hidden, d.dim), (d.dim as f64).powf(-0.5))?,
            w_up: rand((d.hidden, d.dim), (d.dim as f64).powf(-0.5))?,
            w_down: rand((d.dim, d.hidden), (d.hidden as f64).powf(-0.5))?,
        })
    }
}

/// Whose element-wise ops a forward uses.
#[derive(Clone, Copy, PartialEq)]
enum Ops {
    Candle,
    Gpukern,
}

/// `h = x + r` and `y = rms_norm(h)·w`: candle's add and fused rms_norm, or
/// gpukern's one kernel.
fn add_norm(b: &Block, ops: Ops) -> Result<(Tensor, Tensor)> {
    match ops {
        Ops::Gpukern => gc::add_rms_norm(&b.x, &b.r, &b.norm_w, EPS),
        Ops::Candle => {
            let h = (&b.x + &b.r)?;
            let y = candle_nn::ops::rms_norm(&h, &b.norm_w, EPS)?;
            Ok((h, y))
        }
    }
}

/// The norm's epsilon.
const EPS: f32 = 1e-5;

/// The block's stages, in order, as (name, output) — one function for both runs.
fn forward(b: &Block, ops: Ops) -> Result<Vec<(&'static str, Tensor)>> {
    let add = |p: &Tensor, q: &Tensor| if ops == Ops::Gpukern { gc::add(p, q) } else { p + q };
    let (h, y) = add_norm(b, ops)?;
    let g = y.matmul(&b.w_gate.t()?)?;
    let u = y.matmul(&b.w_up.t()?)?;
    let a = match ops {
        Ops::Gpukern => gc::mul(&gc::silu(&g)?, &u)?,
        Ops::Candle => (g.silu()? * &u)?,
    };
    let o = a.matmul(&b.w_down.t()?)?;
    let out = add(&h, &o)?;
    Ok(vec![
        ("h = x + r", h),
        ("rms_norm", y),
        ("gate, up matmuls", u),
        ("silu(g)·u", a),
        ("down matmul", o),
        ("out = h + o", out),
    ])
}

/// Seconds per call of `f` on the host's clock (calls and a synchronisation),
/// through the example's one timing helper.
fn time(dev: &Device, iters: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    Ok(timing::measure(dev, timing::Reps { reps: iters, chain: 1, spin: false }, |_| f())?.host_s)
}

/// Each stage alone (its inputs from a first forward), in seconds.
fn stage_times(b: &Block, ops: Ops, dev: &Device, iters: usize) -> Result<Vec<(&'static str, f64)>> {
    let s = forward(b, ops)?;
    let (h, y) = (&s[0].1, &s[1].1);
    let g = y.matmul(&b.w_gate.t()?)?;
    let (u, a, o) = (&s[2].1, &s[3].1, &s[4].1);
    let add = |p: &Tensor, q: &Tensor| if ops == Ops::Gpukern { gc::add(p, q) } else { p + q };
    Ok(vec![
        ("h = x + r, y = rms_norm(h)·w", time(dev, iters, || add_norm(b, ops).map(drop))?),
        (
            "gate, up matmuls",
            time(dev, iters, || {
                y.matmul(&b.w_gate.t()?)?;
                y.matmul(&b.w_up.t()?).map(drop)
            })?,
        ),
        (
            "silu(g)·u",
            time(dev, iters, || match ops {
                Ops::Gpukern => gc::mul(&gc::silu(&g)?, u).map(drop),
                Ops::Candle => (g.silu()? * u).map(drop),
            })?,
        ),
        ("down matmul", time(dev, iters, || a.matmul(&b.w_down.t()?).map(drop))?),
        ("out = h + o", time(dev, iters, || add(h, o).map(drop))?),
    ])
}

/// Elements that differ, and the largest absolute difference, in f32.
fn difference(p: &Tensor, q: &Tensor) -> Result<(usize, f32)> {
    let p: Vec<f32> = p.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let q: Vec<f32> = q.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let differ = p.iter().zip(&q).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    let max = p.iter().zip(&q).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    Ok((differ, max))
}

fn block(dev: &Device, d: Dims, iters: usize) -> Result<()> {
    println!("## MLP block: {} tokens × {} (hidden {}), bf16, {dev:?}", d.tokens, d.dim, d.hidden);
    let b = Block::random(d, dev)?;
    let native = forward(&b, Ops::Candle)?;
    let ours = forward(&b, Ops::Gpukern)?;
    println!("\n| stage | elements that differ | max abs difference |\n|---|---|---|");
    for ((name, n), (_, o)) in native.iter().zip(&ours) {
        let (differ, max) = difference(n, o)?;
        println!("| {name} | {differ} of {} | {max:e} |", n.elem_count());
    }
    let whole = |ops| time(dev, iters, || forward(&b, ops).map(drop));
    let (t_native, t_ours) = (whole(Ops::Candle)?, whole(Ops::Gpukern)?);
    println!(
        "\nper forward: candle {:.3} ms, gpukern {:.3} ms (×{:.3})",
        t_native * 1e3,
        t_ours * 1e3,
        t_native / t_ours
    );
    let (sn, so) = (stage_times(&b, Ops::Candle, dev, iters)?, stage_times(&b, Ops::Gpukern, dev, iters)?);
    let (tn, to): (f64, f64) = (sn.iter().map(|s| s.1).sum(), so.iter().map(|s| s.1).sum());
    println!("\n| stage | candle ms | share | gpukern ms | share | ×candle |\n|---|---|---|---|---|---|");
    for ((name, n), (_, o)) in sn.iter().zip(&so) {
        println!(
            "| {name} | {:.4} | {:.1}% | {:.4} | {:.1}% | {:.2} |",
            n * 1e3,
            100.0 * n / tn,
            o * 1e3,
            100.0 * o / to,
            n / o
        );
    }
    Ok(())
}

/// The command line.
#[derive(Parser)]
#[command(about = "A LLaMA MLP block on candle with candle's ops and with gpukern's; the report section `candle`")]
struct Args {
    /// Also print each op against candle's (the report section, as Markdown, no files).
    #[arg(long)]
    ops: bool,
    /// Run only the report section `candle` and write candle.md and candle.json into DIR.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Forwards timed per block measurement.
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// Repetitions per report cell (the median is reported).
    #[arg(long, default_value_t = 9)]
    reps: usize,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("candle-block: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<ExitCode> {
    let dev = if cfg!(feature = "cuda") { Device::new_cuda(0)? } else { Device::Cpu };
    if let Some(dir) = &args.report {
        let r = report::run(&dev, args.reps)?;
        report::write(&r, dir)?;
        for f in &r.failures {
            eprintln!("candle report: FAILED: {f}");
        }
        return Ok(if r.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let dims = match dev {
        Device::Cpu => Dims { tokens: 16, dim: 256, hidden: 688 },
        _ => Dims { tokens: 8 * 512, dim: 4096, hidden: 11008 },
    };
    block(&dev, dims, if dev.is_cpu() { 2 } else { args.iters })?;
    if args.ops && !dev.is_cpu() {
        let r = report::run(&dev, args.reps)?;
        println!("\n{}", report::markdown(&r));
        if !r.failures.is_empty() {
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
