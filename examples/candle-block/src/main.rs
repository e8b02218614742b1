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
//! each op's GB/s against candle's at 2^20, 2^24 and 2^28 elements, and the
//! norms against `candle_nn::ops` at the issue's shapes. Without
//! the `cuda` feature it runs a small block on the CPU (the same bits check,
//! no timing worth reading).

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};
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

/// Seconds per call of `f`, after a warm-up, over `iters` calls.
fn time(dev: &Device, iters: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    dev.synchronize()?;
    let t = Instant::now();
    for _ in 0..iters {
        f()?;
    }
    dev.synchronize()?;
    Ok(t.elapsed().as_secs_f64() / iters as f64)
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

/// One element-wise op, ours and candle's: name, inputs, and both forms.
type OpPair = (&'static str, usize, fn(&Tensor, &Tensor) -> Result<Tensor>, fn(&Tensor, &Tensor) -> Result<Tensor>);

const OPS: &[OpPair] = &[
    ("silu", 1, |x, _| gc::silu(x), |x, _| x.silu()),
    ("gelu (tanh)", 1, |x, _| gc::gelu_tanh(x), |x, _| x.gelu()),
    ("gelu_erf", 1, |x, _| gc::gelu(x), |x, _| x.gelu_erf()),
    ("exp", 1, |x, _| gc::exp(x), |x, _| x.exp()),
    ("tanh", 1, |x, _| gc::tanh(x), |x, _| x.tanh()),
    ("sqrt", 1, |x, _| gc::sqrt(x), |x, _| x.sqrt()),
    ("relu", 1, |x, _| gc::relu(x), |x, _| x.relu()),
    ("neg", 1, |x, _| gc::neg(x), |x, _| x.neg()),
    ("add", 2, |x, y| gc::add(x, y), |x, y| x + y),
    ("mul", 2, |x, y| gc::mul(x, y), |x, y| x * y),
    ("sub", 2, |x, y| gc::sub(x, y), |x, y| x - y),
    ("div", 2, |x, y| gc::div(x, y), |x, y| x / y),
    ("maximum", 2, |x, y| gc::maximum(x, y), |x, y| x.maximum(y)),
];

/// Each op's GB/s (inputs read + output written), ours and candle's, in one run.
fn ops_table(dev: &Device, iters: usize) -> Result<()> {
    println!("\n## Element-wise ops, gpukern vs candle (GB/s of inputs + output), {dev:?}");
    println!("\n| op | dtype | n | gpukern GB/s | candle GB/s | ×candle | elements that differ |\n|---|---|---|---|---|---|---|");
    for dtype in [DType::BF16, DType::F32] {
        for log2 in [20u32, 24, 28] {
            let n = 1usize << log2;
            let x = Tensor::randn(0f32, 3.0, n, dev)?.to_dtype(dtype)?;
            let y = (Tensor::randn(0f32, 3.0, n, dev)? + 0.5)?.to_dtype(dtype)?;
            let x_abs = x.abs()?;
            for &(name, inputs, ours, theirs) in OPS {
                // sqrt on |x| (taken before, outside the timing).
                let xa = if name == "sqrt" { &x_abs } else { &x };
                let bytes = ((inputs + 1) * n * dtype.size_in_bytes()) as f64;
                let t_ours = time(dev, iters, || ours(xa, &y).map(drop))?;
                let t_theirs = time(dev, iters, || theirs(xa, &y).map(drop))?;
                // Compared on the host up to 2^24 elements.
                let differ = match log2 <= 24 {
                    true => difference(&ours(xa, &y)?, &theirs(xa, &y)?)?.0.to_string(),
                    false => "-".into(),
                };
                println!(
                    "| {name} | {dtype:?} | 2^{log2} | {:.0} | {:.0} | {:.2} | {differ} |",
                    bytes / t_ours / 1e9,
                    bytes / t_theirs / 1e9,
                    t_theirs / t_ours
                );
            }
        }
    }
    Ok(())
}

/// One norm, ours and candle_nn's: name, and both forms on (x, weight, bias).
type NormPair =
    (&'static str, fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>, fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>);

const NORMS: &[NormPair] = &[
    ("rms_norm", |x, w, _| gc::rms_norm(x, w, EPS), |x, w, _| candle_nn::ops::rms_norm(x, w, EPS)),
    ("layer_norm", |x, w, b| gc::layer_norm(x, w, b, EPS), |x, w, b| candle_nn::ops::layer_norm(x, w, b, EPS)),
    ("softmax_last_dim", |x, _, _| gc::softmax_last_dim(x), |x, _, _| candle_nn::ops::softmax_last_dim(x)),
];

/// Each norm's GB/s (x read + y written), ours and candle_nn's, in one run.
fn norms_table(dev: &Device, iters: usize) -> Result<()> {
    println!("\n## Norms, gpukern vs candle_nn::ops (GB/s of x + y), {dev:?}");
    println!("\n| op | dtype | rows × cols | gpukern GB/s | candle GB/s | ×candle | max abs difference |\n|---|---|---|---|---|---|---|");
    for dtype in [DType::BF16, DType::F32] {
        for (rows, cols) in [(4096, 4096), (16384, 4096), (1024, 16384), (64, 262144)] {
            let x = Tensor::randn(0f32, 2.0, (rows, cols), dev)?.to_dtype(dtype)?;
            let w = (Tensor::randn(0f32, 0.1, cols, dev)? + 1.0)?.to_dtype(dtype)?;
            let b = Tensor::randn(0f32, 0.1, cols, dev)?.to_dtype(dtype)?;
            let bytes = (2 * rows * cols * dtype.size_in_bytes()) as f64;
            for &(name, ours, theirs) in NORMS {
                let t_ours = time(dev, iters, || ours(&x, &w, &b).map(drop))?;
                let t_theirs = time(dev, iters, || theirs(&x, &w, &b).map(drop))?;
                let (_, max) = difference(&ours(&x, &w, &b)?, &theirs(&x, &w, &b)?)?;
                println!(
                    "| {name} | {dtype:?} | {rows} × {cols} | {:.0} | {:.0} | {:.2} | {max:e} |",
                    bytes / t_ours / 1e9,
                    bytes / t_theirs / 1e9,
                    t_theirs / t_ours
                );
            }
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let with_ops = args.iter().any(|a| a == "--ops");
    let iters = args
        .iter()
        .position(|a| a == "--iters")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dev = if cfg!(feature = "cuda") { Device::new_cuda(0)? } else { Device::Cpu };
    let dims = match dev {
        Device::Cpu => Dims { tokens: 16, dim: 256, hidden: 688 },
        _ => Dims { tokens: 8 * 512, dim: 4096, hidden: 11008 },
    };
    block(&dev, dims, if dev.is_cpu() { 2 } else { iters })?;
    if with_ops && !dev.is_cpu() {
        ops_table(&dev, iters)?;
        norms_table(&dev, iters)?;
    }
    Ok(())
}
