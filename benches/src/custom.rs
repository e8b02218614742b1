//! The report's `custom` section: user-defined operations (the worked example's
//! `silu` and `relu_axpy`, from examples/custom-kernels: the example program's
//! library embeds the PTX its build.rs made with gpukern-build and holds the
//! CPU rules; loaded with `Gpu::load_module`) timed beside the built-in
//! operations they should match in rate: unary ops beside `neg`, binary ops
//! beside `add`'s automatic path, same dtype, n and run.

use custom_kernels_app::Lane;
use gpukern::half::bf16;
use gpukern::{BinaryOp, Gpu, Module, OpKind, Stream, UnaryOp};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

use crate::{gbps, random_inputs, reps_for, time_op};

/// Scalars of relu_axpy in the report.
const PARAMS: [f32; 2] = [1.5, -0.75];

/// One custom operation at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CustomRow {
    pub op: String,
    pub dtype: String,
    pub n: usize,
    /// The kernel the automatic choice ran.
    pub kernel: String,
    pub gbps: f64,
    /// The built-in operation compared with (`neg` or `add`).
    pub builtin: String,
    pub builtin_gbps: f64,
    /// Ours over the built-in's GB/s, same run.
    pub vs_builtin: f64,
    /// The first 2^20 outputs equal the CPU rule bit for bit.
    pub verified: bool,
}

fn measure_dtype<T: Lane>(
    gpu: &Gpu,
    module: &Module,
    stream: &Stream,
    n: usize,
    rows: &mut Vec<CustomRow>,
) -> gpukern::Result<()> {
    let a = gpu.upload(&random_inputs::<T>(n, 11))?;
    let b = gpu.upload(&random_inputs::<T>(n, 12))?;
    let mut out = gpu.alloc::<T>(n)?;
    let check = 1 << 20;
    let (ha, hb) = (a.slice(..check.min(n))?.to_vec()?, b.slice(..check.min(n))?.to_vec()?);
    let silu = custom_kernels_app::silu_op::<T>(module)?;
    let relu = module.binary::<T>("relu_axpy")?;
    let size = T::DTYPE.size() as u64 * n as u64;
    for (op, inputs) in [("silu", 1u64), ("relu_axpy", 2)] {
        let bytes = (inputs + 1) * size;
        let reps = reps_for(bytes);
        // Built-in first, then ours, then the built-in again: the average of the
        // two built-in medians is what ours is compared with.
        let builtin = |out: &mut gpukern::DeviceVec<T>| {
            time_op(gpu, stream, reps, 3, |s| {
                if inputs == 1 {
                    gpu.unary(UnaryOp::Neg, &a, &mut *out, s).map(|_| ())
                } else {
                    gpu.binary(BinaryOp::Add, &a, &b, &mut *out, s).map(|_| ())
                }
            })
        };
        let t0 = builtin(&mut out)?;
        let ms = time_op(gpu, stream, reps, 3, |s| {
            if inputs == 1 {
                silu.run(&a, &mut out, [0.0; 2], s)
            } else {
                relu.run(&a, &b, &mut out, PARAMS, s)
            }
        })?;
        // What the timed calls launched (the plan of the same call).
        let kernel = if inputs == 1 {
            gpu.plan(gpukern::Call::custom_unary(&silu, &a, &out), stream, &gpukern::Opts::auto())?.kernel
        } else {
            gpu.plan(gpukern::Call::custom_binary(&relu, &a, &b, &out), stream, &gpukern::Opts::auto())?.kernel
        };
        stream.synchronize()?;
        let got = out.slice(..check.min(n))?.to_vec()?;
        let verified = got.iter().enumerate().all(|(i, g)| {
            let w = if inputs == 1 { T::silu(ha[i]) } else { T::relu_axpy(PARAMS[0], PARAMS[1], ha[i], hb[i]) };
            g.bits() == w.bits()
        });
        let t1 = builtin(&mut out)?;
        let (ours, theirs) = (gbps(bytes, ms), gbps(bytes, (t0 + t1) / 2.0));
        let name = if inputs == 1 { OpKind::Unary(UnaryOp::Neg).name() } else { OpKind::Binary(BinaryOp::Add).name() };
        rows.push(CustomRow {
            op: op.into(),
            dtype: T::DTYPE.name().into(),
            n,
            kernel: kernel.into(),
            gbps: ours,
            builtin: name.into(),
            builtin_gbps: theirs,
            vs_builtin: ours / theirs,
            verified,
        });
    }
    Ok(())
}

/// Measures the example's operations in f32 and bf16 at each size.
pub fn measure(gpu: &Gpu, sizes: &[usize]) -> Result<Vec<CustomRow>, String> {
    let e = |e: gpukern::Error| format!("custom: {e}");
    let module = custom_kernels_app::load(gpu).map_err(e)?;
    let stream = gpu.stream().map_err(e)?;
    let mut rows = Vec::new();
    for &n in sizes {
        measure_dtype::<f32>(gpu, &module, &stream, n, &mut rows).map_err(e)?;
        measure_dtype::<bf16>(gpu, &module, &stream, n, &mut rows).map_err(e)?;
    }
    Ok(rows)
}

/// The section's Markdown.
pub fn render(s: &mut String, rows: &[CustomRow]) {
    let _ = writeln!(s, "| op | dtype | n | kernel | GB/s | built-in | its GB/s | vs built-in | verified |");
    let _ = writeln!(s, "|---|---|---:|---|---:|---|---:|---:|---|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | 2^{} | `{}` | {:.0} | {} | {:.0} | {:.3} | {} |",
            r.op,
            r.dtype,
            r.n.trailing_zeros(),
            r.kernel,
            r.gbps,
            r.builtin,
            r.builtin_gbps,
            r.vs_builtin,
            if r.verified { "bit-exact" } else { "**MISMATCH**" }
        );
    }
}
