//! Runs every activation (and `neg`, the memory-speed reference) once per
//! dtype at 2^24 elements through the automatic choice, for a profiler:
//! `ncu --metrics smsp__inst_executed.sum ... activations` counts the
//! instructions per element the README reports. Inputs in [-8, 8) (log, sqrt
//! and rsqrt on (0, 8]); each result is checked against the CPU reference on
//! its first 4096 elements.

use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{Gpu, OpKind, Opts, UnaryOp};

fn run<T: ReferenceOps>(gpu: &Gpu, n: usize) -> gpukern::Result<()> {
    let stream = gpu.stream()?;
    let mut out = gpu.alloc::<T>(n)?;
    let positive = |op: UnaryOp| matches!(op, UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt);
    for op in [UnaryOp::Neg].into_iter().chain(UnaryOp::ACTIVATIONS) {
        let (lo, hi) = if positive(op) { (1e-3f32, 8.0) } else { (-8.0, 8.0) };
        let host: Vec<T> =
            (0..n).map(|i| T::round_from((lo + (hi - lo) * (i % 65_521) as f32 / 65_521.0) as f64)).collect();
        let a = gpu.upload(&host)?;
        // What the call launches, asked apart from it.
        let kernel = gpu.plan(gpukern::Call::unary(op, &a, &out), &stream, &Opts::auto())?.kernel;
        gpu.unary(op, &a, &mut out, &stream)?;
        stream.synchronize()?;
        let got = out.slice(..4096)?.to_vec()?;
        let want = reference::map(OpKind::Unary(op), &host[..4096], None, (0.0, 0.0));
        let ok = reference::first_mismatch(&got, &want).is_none();
        println!("{} {} n={n} kernel={kernel} verified={ok}", op.name(), T::DTYPE.name());
        if !ok {
            std::process::exit(1);
        }
    }
    Ok(())
}

fn main() {
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let n = 1 << 24;
    let r = run::<f32>(&gpu, n).and_then(|_| run::<f16>(&gpu, n)).and_then(|_| run::<bf16>(&gpu, n));
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
