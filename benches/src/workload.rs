//! The measured workload: device-resident inputs of one dtype with their
//! reference, and how one variant (or the automatic choice) is launched,
//! verified and timed on them.

use gpukern::reference::ReferenceAdd;
use gpukern::{BulkConfig, DeviceVec, Element, Gpu, LaunchShape, Stream, Variant};

use crate::{add_bytes, first_mismatch_par, median, random_inputs, reference_par, SPIN_NS};

/// An explicit variant or the library's automatic choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Variant(Variant),
    /// A bulk-copy variant with explicit tiling.
    Bulk(Variant, BulkConfig),
    /// The automatic add with the stream's PDL setting.
    Auto,
    /// The automatic add with this PDL setting for each call.
    AutoPdl(gpukern::Pdl),
}

impl From<Variant> for Pick {
    fn from(v: Variant) -> Pick {
        Pick::Variant(v)
    }
}

/// Launches per burst in [`Workload::time_burst`] (as the chains section's length).
pub const BURST: usize = 16;

/// The longest spin before a burst (the host queues 16 launches in ~60 µs).
const BURST_SPIN_MAX_NS: u64 = 1_000_000;

/// Device-resident inputs for one dtype, with several disjoint input sets when the
/// working set would fit in L2 (so repeated launches do not just measure the cache).
pub struct Workload<T: Element> {
    pub a: DeviceVec<T>,
    pub b: DeviceVec<T>,
    pub out: DeviceVec<T>,
    /// Host copies, for the reference.
    pub host_a: Vec<T>,
    pub host_b: Vec<T>,
    /// Reference for the whole capacity (prefixes serve every n).
    pub want: Vec<T>,
    /// The reference on the device, so large results are compared there.
    pub dwant: DeviceVec<T>,
}

impl<T: ReferenceAdd> Workload<T> {
    /// Allocates `capacity` elements per operand and fills a and b with random data.
    pub fn new(gpu: &Gpu, capacity: usize, seed: u64) -> gpukern::Result<Self> {
        let host_a = random_inputs::<T>(capacity, seed);
        let host_b = random_inputs::<T>(capacity, seed + 1);
        let want = reference_par(&host_a, &host_b);
        let a = gpu.upload(&host_a)?;
        let b = gpu.upload(&host_b)?;
        let out = gpu.alloc::<T>(capacity)?;
        let dwant = gpu.upload(&want)?;
        Ok(Workload { a, b, out, host_a, host_b, want, dwant })
    }

    /// How many disjoint input sets of n elements to rotate through so that the
    /// sets together are at least 4x the L2 (1 when one set already is; 0 never).
    pub fn rotation(&self, gpu: &Gpu, n: usize) -> usize {
        let set_bytes = add_bytes(T::DTYPE, n).max(1);
        let need = (4 * gpu.info().l2_bytes).div_ceil(set_bytes) as usize;
        need.clamp(1, (self.a.len() / n.max(1)).max(1))
    }

    /// Launches `pick` on input set `set` (elements `set*n .. set*n + n`).
    pub fn launch(
        &mut self,
        gpu: &Gpu,
        pick: impl Into<Pick>,
        cfg: LaunchShape,
        n: usize,
        set: usize,
        stream: &Stream,
    ) -> gpukern::Result<()> {
        let r = set * n..set * n + n;
        let (a, b, out) = (self.a.slice(r.clone())?, self.b.slice(r.clone())?, self.out.slice_mut(r)?);
        match pick.into() {
            Pick::Variant(v) => gpu.studies().add_with(v, cfg, a, b, out, stream),
            Pick::Bulk(v, bulk) => gpu.studies().add_bulk_with(v, cfg, bulk, a, b, out, stream),
            // The automatic path as users call it: its own tuned launch settings.
            Pick::Auto => gpu.binary(gpukern::BinaryOp::Add, a, b, out, stream),
            Pick::AutoPdl(pdl) => {
                let opts = gpukern::Opts::auto().pdl(pdl);
                gpu.binary_opts(gpukern::BinaryOp::Add, a, b, out, stream, &opts)
            }
        }
    }

    /// Runs `variant` once on set 0 with a poisoned output and checks every element
    /// bit for bit. Returns the first bad index on failure.
    pub fn verify(
        &mut self,
        gpu: &Gpu,
        v: impl Into<Pick> + Copy,
        cfg: LaunchShape,
        n: usize,
        stream: &Stream,
    ) -> gpukern::Result<Result<(), usize>> {
        self.out.slice_mut(..n)?.fill(T::from_bits32(0xdead_beef))?;
        self.launch(gpu, v, cfg, n, 0, stream)?;
        stream.synchronize()?;
        // Large results: count differences on the device (NaN matching NaN, as
        // the host comparison); only a failure is downloaded, to name the index.
        if n >= 1 << 22 && gpu.studies().count_mismatches(self.out.slice(..n)?, self.dwant.slice(..n)?, stream)? == 0 {
            return Ok(Ok(()));
        }
        let got = self.out.slice(..n)?.to_vec()?;
        Ok(match first_mismatch_par(&got, &self.want[..n]) {
            None => Ok(()),
            Some(i) => Err(i),
        })
    }

    /// Median device time in ms of one launch, over `reps` launches each timed by
    /// its own event pair, after `warmup` untimed launches; input sets rotate.
    ///
    /// With `isolate`, a spin kernel runs before each timed launch, so the host has
    /// queued the events and the launch before the GPU reaches them: the time is
    /// the kernel's alone. Without it, an idle GPU waits for the host's launch path
    /// between the start event and the kernel, and the time includes that latency.
    #[allow(clippy::too_many_arguments)]
    pub fn time(
        &mut self,
        gpu: &Gpu,
        v: impl Into<Pick> + Copy,
        cfg: LaunchShape,
        n: usize,
        reps: usize,
        warmup: usize,
        isolate: bool,
        stream: &Stream,
    ) -> gpukern::Result<f64> {
        let sets = self.rotation(gpu, n);
        self.time_sets(gpu, v, cfg, n, sets, reps, warmup, isolate, stream)
    }

    /// Median device time in ms of one launch on input set 0 every time, so the
    /// inputs stay resident in L2 when they fit (the warm case: fused pipelines
    /// and training loops reuse what the previous kernel wrote). Spin-isolated,
    /// after 5 untimed launches.
    pub fn time_in_place(
        &mut self,
        gpu: &Gpu,
        v: impl Into<Pick> + Copy,
        cfg: LaunchShape,
        n: usize,
        reps: usize,
        stream: &Stream,
    ) -> gpukern::Result<f64> {
        self.time_sets(gpu, v, cfg, n, 1, reps, 5, true, stream)
    }

    /// Median device time in ms per launch of a burst of [`BURST`] automatic
    /// adds queued back to back behind one spin (long enough for the host to
    /// queue the whole burst first), so the GPU sets the pace: the gap between
    /// consecutive kernels counts, the host's launch path does not. Each add
    /// of the burst is called with `pdl`. Input sets rotate launch by
    /// launch when `warm` is false (set 0 every time when true).
    #[allow(clippy::too_many_arguments)]
    pub fn time_burst(
        &mut self,
        gpu: &Gpu,
        n: usize,
        warm: bool,
        pdl: gpukern::Pdl,
        reps: usize,
        stream: &Stream,
    ) -> gpukern::Result<f64> {
        let sets = if warm { 1 } else { self.rotation(gpu, n) };
        let mut burst = |i: usize, s: &Stream| -> gpukern::Result<()> {
            let pick = Pick::AutoPdl(pdl);
            (0..BURST).try_for_each(|k| self.launch(gpu, pick, LaunchShape::default(), n, (i * BURST + k) % sets, s))
        };
        // The host's time to queue a burst, measured on the second one (the
        // first may pay one-time driver costs); the spin covers three times it,
        // capped so that a stall cannot make every repetition slow.
        let r = burst(0, stream).and_then(|_| stream.synchronize());
        let host = std::time::Instant::now();
        let r = r.and_then(|_| burst(0, stream));
        let spin = (3 * host.elapsed().as_nanos() as u64).clamp(SPIN_NS, BURST_SPIN_MAX_NS);
        let mut t = Vec::with_capacity(reps);
        let timed = r.and_then(|_| {
            for i in 0..reps + 2 {
                gpu.studies().spin(stream, spin)?;
                let ms = stream.time(|s| burst(i + 1, s))?;
                if i >= 2 {
                    t.push(ms as f64 / BURST as f64);
                }
            }
            Ok(())
        });
        timed.map(|_| median(&mut t))
    }

    /// [`Workload::time`] over the first `sets` input sets.
    #[allow(clippy::too_many_arguments)]
    fn time_sets(
        &mut self,
        gpu: &Gpu,
        v: impl Into<Pick> + Copy,
        cfg: LaunchShape,
        n: usize,
        sets: usize,
        reps: usize,
        warmup: usize,
        isolate: bool,
        stream: &Stream,
    ) -> gpukern::Result<f64> {
        for i in 0..warmup {
            self.launch(gpu, v, cfg, n, i % sets, stream)?;
        }
        let mut t = Vec::with_capacity(reps);
        for i in 0..reps {
            if isolate {
                gpu.studies().spin(stream, SPIN_NS)?;
            }
            let ms = stream.time(|s| self.launch(gpu, v, cfg, n, i % sets, s))?;
            t.push(ms as f64);
        }
        Ok(median(&mut t))
    }

    /// Median device times (ms) of `p` and `q`, timed alternately launch by launch
    /// (spin-isolated, order swapped every round, distinct input sets), so both
    /// see the same drift and neither finds the other's data in L2.
    #[allow(clippy::too_many_arguments)]
    pub fn time_pair(
        &mut self,
        gpu: &Gpu,
        p: Pick,
        q: Pick,
        cfg: LaunchShape,
        n: usize,
        reps: usize,
        stream: &Stream,
    ) -> gpukern::Result<(f64, f64)> {
        let sets = self.rotation(gpu, n);
        let (mut tp, mut tq) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
        for i in 0..reps + 5 {
            // Each launch gets its own input set: had q re-read what p just read,
            // q would find it in L2 and look faster than it is.
            // Order alternates (p q, q p, …) so that an effect of going first or
            // second cancels out.
            let order = if i % 2 == 0 { [(p, &mut tp), (q, &mut tq)] } else { [(q, &mut tq), (p, &mut tp)] };
            for (j, (pick, t)) in order.into_iter().enumerate() {
                gpu.studies().spin(stream, SPIN_NS)?;
                let ms = stream.time(|s| self.launch(gpu, pick, cfg, n, (2 * i + j) % sets, s))?;
                if i >= 5 {
                    t.push(ms as f64);
                }
            }
        }
        Ok((median(&mut tp), median(&mut tq)))
    }

    /// Device time in ms per launch when `batch` launches go back to back on one
    /// stream between a single event pair, median of `reps`.
    #[allow(clippy::too_many_arguments)]
    pub fn time_batched(
        &mut self,
        gpu: &Gpu,
        v: impl Into<Pick> + Copy,
        cfg: LaunchShape,
        n: usize,
        batch: usize,
        reps: usize,
        stream: &Stream,
    ) -> gpukern::Result<f64> {
        let sets = self.rotation(gpu, n);
        self.launch(gpu, v, cfg, n, 0, stream)?;
        let mut t = Vec::with_capacity(reps);
        for _ in 0..reps {
            gpu.studies().spin(stream, SPIN_NS)?;
            let ms = stream.time(|s| {
                for i in 0..batch {
                    self.launch(gpu, v, cfg, n, i % sets, s)?;
                }
                Ok(())
            })?;
            t.push(ms as f64 / batch as f64);
        }
        Ok(median(&mut t))
    }

    /// Device time in ms per add when `batch` adds are captured in one CUDA graph
    /// and the graph is replayed, median of `reps` replays. The captured adds
    /// rotate through the input sets like the other timings.
    #[allow(clippy::too_many_arguments)]
    pub fn time_graph(
        &mut self,
        gpu: &Gpu,
        v: Variant,
        cfg: LaunchShape,
        n: usize,
        batch: usize,
        reps: usize,
        stream: &Stream,
    ) -> gpukern::Result<f64> {
        let sets = self.rotation(gpu, n).min(batch);
        let mut rest = self.out.slice_mut(..sets * n)?;
        let mut ops = Vec::with_capacity(sets);
        for i in 0..sets {
            let (head, tail) = rest.into_split_at(n)?;
            ops.push((self.a.slice(i * n..i * n + n)?, self.b.slice(i * n..i * n + n)?, head));
            rest = tail;
        }
        let graph = gpu.studies().add_graph(v, cfg, ops, batch)?;
        graph.launch(stream)?;
        let mut t = Vec::with_capacity(reps);
        for _ in 0..reps {
            gpu.studies().spin(stream, SPIN_NS)?;
            t.push(stream.time(|s| graph.launch(s))? as f64 / batch as f64);
        }
        Ok(median(&mut t))
    }
}
