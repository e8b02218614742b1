//! Launches of the math sweeps (`kernels_gpu::math`): `(start, out, n)`,
//! `(start, y, out, n)` and `(x, y, out, n)`.

use super::{arg, launch, map::check_elementwise, reads, writes, DevRead, DevWrite, Queue, RawFn};
use crate::error::Result;

/// One math launch: the kernel, its grid and block.
pub(crate) struct MathLaunch {
    pub name: &'static str,
    pub func: RawFn,
    pub grid: u32,
    pub block: u32,
}

/// What a math kernel reads besides its sweep start.
pub(crate) enum MathArgs<'a, R> {
    /// `math_<f>(start, out, n)`.
    Sweep { start: u32 },
    /// `math_pow_sweep(start, y, out, n)`.
    PowSweep { start: u32, y: f32 },
    /// `math_pow_pairs(x, y, out, n)`.
    PowPairs { x: &'a R, y: &'a R },
}

/// Launches a math kernel over all of `out`, after checking that the inputs
/// (pairs) hold as many elements and every view is f32-aligned.
///
/// # Safety
/// `l.func` is the math sweep `l.name` of `kernels_gpu::math`, taking the
/// parameters `args` stands for, from a module of the stream's context.
pub(crate) unsafe fn launch_math<R: DevRead<f32>>(
    l: &MathLaunch,
    args: MathArgs<'_, R>,
    out: &mut impl DevWrite<f32>,
    stream: Queue<'_>,
) -> Result<()> {
    let n = out.len();
    if let MathArgs::PowPairs { x, y } = &args {
        // Lengths equal to out's and 4-byte alignment, as every element-wise launch.
        check_elementwise(l.name, 4, *x, Some(*y), out, n)?;
    } else if out.addr() % 4 != 0 {
        return Err(crate::error::Error::Misaligned {
            kernel: l.name,
            operand: "out",
            addr: out.addr(),
            offset: out.addr() % 4,
            required: 4,
        });
    }
    if n == 0 || l.grid == 0 {
        return Ok(());
    }
    let inputs = match &args {
        MathArgs::PowPairs { x, y } => [reads(*x), reads(*y)],
        _ => [None, None],
    };
    stream.order(&[inputs[0], inputs[1], writes(out)])?;
    let (mut pc, mut pn) = (out.addr(), n as u64);
    match args {
        MathArgs::Sweep { mut start } => {
            let mut params = [arg(&mut start), arg(&mut pc), arg(&mut pn)];
            // SAFETY: the sweep kernels take (u32, ptr, u64) and write out[..n]
            // alone, whatever the grid; out holds n aligned f32, exclusively borrowed.
            unsafe { launch(l.func, l.grid, l.block, stream.handle(), &mut params) }
        }
        MathArgs::PowSweep { mut start, mut y } => {
            let mut params = [arg(&mut start), arg(&mut y), arg(&mut pc), arg(&mut pn)];
            // SAFETY: (u32, f32, ptr, u64); otherwise as above.
            unsafe { launch(l.func, l.grid, l.block, stream.handle(), &mut params) }
        }
        MathArgs::PowPairs { x, y } => {
            let (mut px, mut py) = (x.addr(), y.addr());
            let mut params = [arg(&mut px), arg(&mut py), arg(&mut pc), arg(&mut pn)];
            // SAFETY: (ptr, ptr, ptr, u64); x and y hold n aligned f32 (checked
            // above) and are read only; out as above, disjoint from them.
            unsafe { launch(l.func, l.grid, l.block, stream.handle(), &mut params) }
        }
    }
}
