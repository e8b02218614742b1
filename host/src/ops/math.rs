//! The math sweeps on the GPU (`kernels_gpu::math`): `gpukern_device::math`
//! evaluated over runs of consecutive f32 bit patterns, or `pow` over pairs,
//! for tests that compare the GPU with the same functions on the CPU (all 2^32
//! inputs in `host/tests/gpu_math.rs`).

use kernels_gpu::launch::{grid_for, DEFAULT_BLOCK};
use kernels_gpu::math::{sweep_kernel, POW_PAIRS, POW_SWEEP};

use crate::device::gpu::Stream;
use crate::error::{Error, Result};
use crate::memory::buffer::{AsView, AsViewMut, View};
use crate::raw::{self, MathArgs, MathLaunch};
use crate::studies::Studies;

impl Studies<'_> {
    /// Queues `out[i] = f(f32::from_bits(start + i))` (the sum wrapping at
    /// 2^32) for the one-input function `f` of `gpukern_device::math` called
    /// `function` (`"exp"`, `"gelu_tanh"`, … as in `math::check::FUNCTIONS`).
    ///
    /// Errors: no sweep kernel for that name; `out` or the stream of another `Gpu`.
    pub fn math_sweep<'a>(
        &self,
        function: &str,
        start: u32,
        out: impl AsViewMut<'a, f32>,
        stream: &Stream,
    ) -> Result<()> {
        let Some(name) = sweep_kernel(function) else {
            return Err(Error::Shape { kernel: "math_sweep", detail: format!("no GPU sweep of `{function}`") });
        };
        let args: MathArgs<'_, View<'_, f32>> = MathArgs::Sweep { start };
        self.math_launch(name, args, out, stream)
    }

    /// Queues `out[i] = pow(f32::from_bits(start + i), y)`.
    pub fn math_pow_sweep<'a>(&self, start: u32, y: f32, out: impl AsViewMut<'a, f32>, stream: &Stream) -> Result<()> {
        let args: MathArgs<'_, View<'_, f32>> = MathArgs::PowSweep { start, y };
        self.math_launch(POW_SWEEP, args, out, stream)
    }

    /// Queues `out[i] = pow(x[i], y[i])`. Errors also when the lengths differ.
    pub fn math_pow_pairs<'a>(
        &self,
        x: impl AsView<'a, f32>,
        y: impl AsView<'a, f32>,
        out: impl AsViewMut<'a, f32>,
        stream: &Stream,
    ) -> Result<()> {
        let (x, y) = (x.into_view(), y.into_view());
        self.check_buffers_owned(POW_PAIRS, [x.owner(), y.owner()])?;
        self.math_launch(POW_PAIRS, MathArgs::PowPairs { x: &x, y: &y }, out, stream)
    }

    fn math_launch<'a>(
        &self,
        name: &'static str,
        args: MathArgs<'_, View<'_, f32>>,
        out: impl AsViewMut<'a, f32>,
        stream: &Stream,
    ) -> Result<()> {
        let mut out = out.into_view_mut();
        self.check_stream_owned(name, stream)?;
        self.check_buffers_owned(name, [out.owner()])?;
        let n = out.len() as u64;
        let l = MathLaunch {
            name,
            func: self.shared.func(name)?,
            grid: grid_for(n, 1, DEFAULT_BLOCK, kernels_gpu::launch::MAX_GRID_X),
            block: DEFAULT_BLOCK,
        };
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `l.name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_math(&l, args, &mut out, stream.raw()) }
    }
}
