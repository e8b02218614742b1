//! The main sweep, one dtype at a time over one workload: GB/s of every variant
//! at every n, the automatic choice (interleaved with the best variant; the lead
//! tables time it alone, `crate::report::lead`), launch-bound sizes (single, batched, graph), the grid and
//! block sweeps, and the tuning sweep.

use super::schema::{AutoRow, BatchedRow, BlockRow, GridRow};
use gpukern::reference::ReferenceAdd;
use gpukern::{Gpu, LaunchShape, Variant};

use super::{reps_for, Collected, Opts, Row};
use crate::{add_bytes, gbps, Pick, Workload};

#[allow(clippy::too_many_arguments)]
pub fn sweep_dtype<T: ReferenceAdd>(
    gpu: &Gpu,
    o: &Opts,
    sizes: &[usize],
    max_n: usize,
    cfg: LaunchShape,
    sweep_blocks: &[u32],
    bar: &indicatif::ProgressBar,
    c: &mut Collected,
) -> Result<(), String> {
    let dtype = T::DTYPE;
    let variants: Vec<Variant> = o.variants.iter().copied().filter(|v| v.dtype() == dtype).collect();
    let e = |e: gpukern::Error| e.to_string();
    if variants.is_empty() {
        // `--variant` named none of this dtype's kernels: nothing to sweep.
        return Ok(());
    }
    bar.set_message(format!("{}: preparing {} random inputs", dtype.name(), max_n));
    // Capacity: the largest n, but at least enough for the L2 rotation of small n.
    let cap = max_n.max((8 * gpu.info().l2_bytes as usize) / (3 * dtype.size()));
    let mut w = Workload::<T>::new(gpu, cap, 7 + dtype as u64).map_err(e)?;
    let stream = gpu.stream().map_err(e)?;
    for &n in sizes {
        let bytes = add_bytes(dtype, n);
        let mut best = (String::new(), 0.0f64);
        for &v in &variants {
            bar.set_message(format!("{v} n=2^{}", n.trailing_zeros()));
            let verified = match w.verify(gpu, v, cfg, n, &stream).map_err(e)? {
                Ok(()) => true,
                Err(i) => {
                    c.failures.push(format!("{v} n={n}: element {i} differs from the CPU reference"));
                    false
                }
            };
            let ms = w.time(gpu, v, cfg, n, reps_for(bytes), 5, true, &stream).map_err(e)?;
            let g = gbps(bytes, ms);
            if g > best.1 {
                best = (v.name().to_string(), g);
            }
            c.rows.push(Row {
                kernel: v.name().into(),
                v: v.seed_version(),
                dtype,
                n,
                block: cfg.block,
                median_us: ms * 1e3,
                gbps: g,
                verified,
                sets: w.rotation(gpu, n),
            });
            bar.inc(1);
        }
        // The automatic choice, verified and timed the same way.
        let ok = w.verify(gpu, Pick::Auto, cfg, n, &stream).map_err(e)?.is_ok();
        if !ok {
            c.failures.push(format!("auto {} n={n}: differs from the CPU reference", dtype.name()));
        }
        // Auto against the best explicit variant, timed interleaved (A, B, A, B…)
        // so that drift and bimodal timings hit both alike.
        let best_v = Variant::from_name(&best.0).unwrap_or(variants[0]);
        let (auto_ms, best_ms) =
            w.time_pair(gpu, Pick::Auto, Pick::Variant(best_v), cfg, n, reps_for(bytes), &stream).map_err(e)?;
        let addrs = [w.a.device_addr(), w.b.device_addr(), w.out.device_addr()];
        let add = gpukern::Call::elementwise(gpukern::OpKind::Binary(gpukern::BinaryOp::Add), dtype, n, &addrs);
        let chosen = gpu.plan(add, &stream, &gpukern::Opts::auto()).map_err(e)?;
        c.auto_rows.push(AutoRow {
            dtype: dtype.name().into(),
            n,
            chosen: chosen.kernel.into(),
            median_us: auto_ms * 1e3,
            gbps: gbps(bytes, auto_ms),
            verified: ok,
            best_kernel: best.0.clone(),
            best_gbps: gbps(bytes, best_ms),
            auto_vs_best_pct: 100.0 * best_ms / auto_ms,
        });
        bar.inc(1);
    }
    // The tuning sweep behind the automatic choice.
    if o.lead {
        let at: Vec<usize> =
            [1usize << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28].into_iter().filter(|&n| n <= max_n).collect();
        if !at.is_empty() {
            bar.set_message(format!("{}: tuning sweep", dtype.name()));
            c.tuning.extend(crate::hopper::tune(gpu, &mut w, &at, &stream)?);
        }
    }
    // Launch-bound sizes: what one add costs alone (kernel only, and with the
    // host's launch latency), back to back on a stream, and replayed from a graph.
    for &v in variants.iter().filter(|_| !o.quick) {
        for n in [1usize << 10, 1 << 20].into_iter().filter(|n| *n <= max_n) {
            let bytes = add_bytes(dtype, n);
            let kernel = w.time(gpu, v, cfg, n, 200, 5, true, &stream).map_err(e)?;
            let single = w.time(gpu, v, cfg, n, 200, 5, false, &stream).map_err(e)?;
            let batch = w.time_batched(gpu, v, cfg, n, 100, 20, &stream).map_err(e)?;
            let graph = w.time_graph(gpu, v, cfg, n, 100, 20, &stream).map_err(e)?;
            c.batched.push(BatchedRow {
                kernel: v.name().into(),
                n,
                kernel_us: kernel * 1e3,
                single_us: single * 1e3,
                batched_us_per_op: batch * 1e3,
                graph_us_per_op: graph * 1e3,
                kernel_gbps: gbps(bytes, kernel),
                single_gbps: gbps(bytes, single),
                batched_gbps: gbps(bytes, batch),
                graph_gbps: gbps(bytes, graph),
            });
        }
    }
    // Grid-size sweep: the same kernels with the grid capped to a few waves of
    // resident blocks (the grid-stride loop does the rest) vs one thread per group.
    if o.sweep {
        let sms = gpu.info().sm_count;
        let widest = Variant::widest(dtype);
        for n in [1usize << 24, max_n].into_iter().filter(|n| *n <= max_n && *n >= 1 << 20) {
            for cap in [sms, 2 * sms, 4 * sms, 8 * sms, 16 * sms, 64 * sms, kernels_gpu::launch::MAX_GRID_X] {
                for v in variants.iter().copied().filter(|v| *v == widest) {
                    let lc = LaunchShape { block: cfg.block, max_grid: cap };
                    let ok = w.verify(gpu, v, lc, n, &stream).map_err(e)?.is_ok();
                    if !ok {
                        c.failures.push(format!("{v} max_grid={cap}: differs from the CPU reference"));
                    }
                    let ms = w.time(gpu, v, lc, n, reps_for(add_bytes(dtype, n)), 5, true, &stream).map_err(e)?;
                    c.grid_rows.push(GridRow {
                        kernel: v.name().into(),
                        n,
                        block: cfg.block,
                        max_grid: cap,
                        blocks_per_sm_cap: (cap != kernels_gpu::launch::MAX_GRID_X).then_some(cap / sms),
                        median_us: ms * 1e3,
                        gbps: gbps(add_bytes(dtype, n), ms),
                        verified: ok,
                    });
                }
            }
        }
    }
    if o.sweep {
        let n = max_n;
        for &v in &variants {
            for &block in sweep_blocks {
                let lc = LaunchShape::with_block(block);
                bar.set_message(format!("{v} block {block}"));
                let ok = w.verify(gpu, v, lc, n, &stream).map_err(e)?.is_ok();
                if !ok {
                    c.failures.push(format!("{v} block={block}: differs from the CPU reference"));
                }
                let ms = w.time(gpu, v, lc, n, 20, 3, true, &stream).map_err(e)?;
                let seed_block = match v.seed_version() {
                    Some(2) => Some(64),
                    Some(5 | 6) => Some(32),
                    Some(_) => Some(256),
                    None => None,
                };
                c.block_rows.push(BlockRow {
                    kernel: v.name().into(),
                    n,
                    block,
                    median_us: ms * 1e3,
                    gbps: gbps(add_bytes(dtype, n), ms),
                    verified: ok,
                    seed_config: seed_block == Some(block),
                });
                bar.inc(1);
            }
        }
    }
    Ok(())
}
