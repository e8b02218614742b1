//! The one timing helper of the example: GPU time between two CUDA events
//! recorded on candle's own stream (the stream our ops and candle's queue
//! on), and the host's wall time of the same calls; a warm-up, then the
//! median of several repetitions. A repetition runs `chain` calls back to
//! back between its events, so ops of a few µs are timed as a chain (µs per
//! op), not one launch against the events' own cost. With `spin`, the
//! project's method: a spin kernel on the stream first, long enough for the
//! host to queue the events and every call while the GPU waits, so that the
//! events time the GPU's work and not the host's queueing (which the host
//! column then shows apart).

use std::time::Instant;

use candle_core::{Device, Result};

/// Seconds per call: on the GPU between events (`None` on the CPU device) and
/// on the host: without `spin`, from before the first call to after the
/// synchronisation; with it, the time to queue the calls (the GPU was busy
/// spinning, so no call waited for it).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub gpu_s: Option<f64>,
    pub host_s: f64,
}

/// How a measurement repeats.
#[derive(Clone, Copy, Debug)]
pub struct Reps {
    /// Repetitions whose median is taken (after one warm-up repetition).
    pub reps: usize,
    /// Calls per repetition, back to back.
    pub chain: usize,
    /// A spin kernel before each repetition's first event (CUDA only).
    pub spin: bool,
}

/// The spin before a repetition, per call of its chain (and once more for
/// the events): well above what the host takes to queue one call, ours or
/// candle's (6–10 µs per op at 2^20 on the H200, session 2026-11-25c).
const SPIN_NS_PER_CALL: u64 = 50_000;

/// Queues gpukern's spin kernel on candle's stream of `dev`.
#[cfg(feature = "cuda")]
fn spin(dev: &Device, ns: u64) -> Result<()> {
    match dev {
        Device::Cuda(d) => gpukern::CudarcExt::spin_cudarc(gpukern_candle::gpu(d)?, &d.cuda_stream(), ns)
            .map_err(|e| candle_core::Error::Cuda(Box::new(e))),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "cuda"))]
fn spin(_dev: &Device, _ns: u64) -> Result<()> {
    Ok(())
}

/// An event recorded now on candle's stream of `dev`, timing enabled.
#[cfg(feature = "cuda")]
fn event(dev: &Device) -> Result<Option<candle_core::cuda_backend::cudarc::driver::CudaEvent>> {
    use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags;
    match dev {
        Device::Cuda(d) => d
            .cuda_stream()
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map(Some)
            .map_err(|e| candle_core::Error::Cuda(Box::new(e))),
        _ => Ok(None),
    }
}

/// Seconds between two events (both recorded, or neither).
#[cfg(feature = "cuda")]
fn between(
    start: Option<candle_core::cuda_backend::cudarc::driver::CudaEvent>,
    end: Option<candle_core::cuda_backend::cudarc::driver::CudaEvent>,
) -> Result<Option<f64>> {
    match (start, end) {
        (Some(s), Some(e)) => {
            s.elapsed_ms(&e).map(|ms| Some(ms as f64 * 1e-3)).map_err(|e| candle_core::Error::Cuda(Box::new(e)))
        }
        _ => Ok(None),
    }
}

#[cfg(not(feature = "cuda"))]
fn event(_dev: &Device) -> Result<Option<()>> {
    Ok(None)
}

#[cfg(not(feature = "cuda"))]
fn between(_start: Option<()>, _end: Option<()>) -> Result<Option<f64>> {
    Ok(None)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

/// Times `f(i)`, `i` counting every call from 0 (a caller rotates its inputs
/// by it): one warm-up repetition, then `r.reps` repetitions of `r.chain`
/// calls, each between two events (behind a spin with `r.spin`) and ended by
/// a synchronisation.
pub fn measure(dev: &Device, r: Reps, mut f: impl FnMut(usize) -> Result<()>) -> Result<Timing> {
    let (chain, mut call) = (r.chain.max(1), 0usize);
    for _ in 0..chain {
        f(call)?;
        call += 1;
    }
    dev.synchronize()?;
    let (mut gpu, mut host) = (Vec::new(), Vec::new());
    for _ in 0..r.reps.max(1) {
        if r.spin {
            spin(dev, SPIN_NS_PER_CALL * (chain as u64 + 1))?;
        }
        let t = Instant::now();
        let start = event(dev)?;
        for _ in 0..chain {
            f(call)?;
            call += 1;
        }
        let end = event(dev)?;
        let queued = t.elapsed();
        dev.synchronize()?;
        let wall = if r.spin { queued } else { t.elapsed() };
        host.push(wall.as_secs_f64() / chain as f64);
        if let Some(s) = between(start, end)? {
            gpu.push(s / chain as f64);
        }
    }
    let gpu_s = (!gpu.is_empty()).then(|| median(gpu));
    Ok(Timing { gpu_s, host_s: median(host) })
}
