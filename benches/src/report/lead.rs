//! The lead tables: the automatic path against the best of CUB and torch, per
//! dtype and n, with L2 cold (`lead`: inputs rotated through 4× L2, 2^20…2^28)
//! and warm (`lead_warm`: one input set, resident in L2, 2^16…2^22).
//!
//! Each table also has a burst column pair: [`BURST`](crate::workload::BURST) automatic adds queued
//! back to back behind one spin, per launch, with PDL off and with the plan's
//! PDL (`Pdl::Auto`), against torch.add timed the same way (CUB's peer times
//! single launches only). A burst is what a chain of kernels in a model sees:
//! the gap between consecutive kernels counts, which PDL hides.
//!
//! Each cell is measured in [`ROUNDS`] rounds, interleaved within one run: a
//! round times our path at every size, then runs the CUB peer, then torch, so
//! drift hits all three alike. A row keeps the median of the per-round ratios
//! (`vs_best_peer`) and the worst round (`vs_best_peer_min`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use gpukern::half::{bf16, f16};
use gpukern::reference::ReferenceAdd;
use gpukern::{AutoPlan, Dtype, Gpu, LaunchShape, Stream};
use serde::{Deserialize, Serialize};

use super::opts::Opts;
use crate::{add_bytes, gbps, median, reps_for, Pick, Workload};

/// Rounds per cell.
pub const ROUNDS: usize = 3;
/// log2 n of the cold table.
pub const COLD: std::ops::RangeInclusive<u32> = 20..=28;
/// log2 n of the warm table.
pub const WARM: std::ops::RangeInclusive<u32> = 16..=22;

/// One (dtype, n) of a lead table; `report.json`'s `lead` and `lead_warm` arrays.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeadRow {
    pub dtype: String,
    pub n: usize,
    /// The kernel the automatic path launched.
    pub kernel: String,
    /// The automatic path's GB/s (spin-isolated events, median per round; median of the rounds).
    pub gbps: f64,
    /// Median over the rounds.
    pub cub_gbps: Option<f64>,
    /// Median over the rounds.
    pub torch_gbps: Option<f64>,
    /// Median over the rounds of `gbps / max(cub_gbps, torch_gbps)`; `None` without peers.
    pub vs_best_peer: Option<f64>,
    /// The worst round's ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_best_peer_min: Option<f64>,
    /// Rounds measured (0 in reports from before the rounds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounds: usize,
    /// Bursts of [`BURST`](crate::workload::BURST) back-to-back adds, PDL off: GB/s per launch (median of the rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_gbps: Option<f64>,
    /// The same bursts with the plan's PDL (`Pdl::Auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_pdl_gbps: Option<f64>,
    /// torch.add in bursts of the same length behind a spin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_burst_gbps: Option<f64>,
    /// Median over the rounds of `burst_pdl_gbps / torch_burst_gbps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_pdl_vs_torch: Option<f64>,
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

/// What one round measured: GB/s by (dtype, n, warm).
#[derive(Default)]
pub struct Round {
    pub ours: BTreeMap<(String, usize, bool), f64>,
    pub cub: BTreeMap<(String, usize, bool), f64>,
    pub torch: BTreeMap<(String, usize, bool), f64>,
    /// Bursts: ours with PDL off and on (by the flag), torch's.
    pub burst: BTreeMap<(String, usize, bool, bool), f64>,
    pub torch_burst: BTreeMap<(String, usize, bool), f64>,
}

/// The sizes of the cold and warm tables within the run's range.
pub fn sizes(o: &Opts) -> (Vec<usize>, Vec<usize>) {
    let within = |k: &u32| *k <= o.max_log2.max(20);
    (COLD.filter(within).map(|k| 1 << k).collect(), WARM.filter(within).map(|k| 1 << k).collect())
}

/// Our automatic path for one dtype: verified at every size first, then timed
/// per round.
struct Ours<T: ReferenceAdd> {
    w: Workload<T>,
}

impl<T: ReferenceAdd> Ours<T> {
    fn new(
        gpu: &Gpu,
        cold: &[usize],
        warm: &[usize],
        stream: &Stream,
        failures: &mut Vec<String>,
    ) -> Result<Self, String> {
        let cap = cold.iter().chain(warm).copied().max().unwrap_or(1);
        let mut w = Workload::<T>::new(gpu, cap, 23).map_err(|e| e.to_string())?;
        for &n in cold.iter().chain(warm) {
            let cfg = LaunchShape::default();
            if !w.verify(gpu, Pick::Auto, cfg, n, stream).map_err(|e| e.to_string())?.is_ok() {
                failures.push(format!("lead: auto {} n={n}: differs from the CPU reference", T::DTYPE.name()));
            }
        }
        Ok(Ours { w })
    }

    fn round(
        &mut self,
        gpu: &Gpu,
        cold: &[usize],
        warm: &[usize],
        stream: &Stream,
        r: &mut Round,
    ) -> Result<(), String> {
        let e = |e: gpukern::Error| e.to_string();
        let cfg = LaunchShape::default();
        for (sizes, is_warm) in [(cold, false), (warm, true)] {
            for &n in sizes {
                let bytes = add_bytes(T::DTYPE, n);
                let reps = reps_for(bytes);
                let ms = if is_warm {
                    self.w.time_in_place(gpu, Pick::Auto, cfg, n, reps, stream).map_err(e)?
                } else {
                    self.w.time(gpu, Pick::Auto, cfg, n, reps, 5, true, stream).map_err(e)?
                };
                r.ours.insert((T::DTYPE.name().to_string(), n, is_warm), gbps(bytes, ms));
                let reps = (reps / 4).clamp(10, 50);
                for (pdl, on) in [(gpukern::Pdl::Off, false), (gpukern::Pdl::Auto, true)] {
                    let ms = self.w.time_burst(gpu, n, is_warm, pdl, reps, stream).map_err(e)?;
                    r.burst.insert((T::DTYPE.name().to_string(), n, is_warm, on), gbps(bytes, ms));
                }
            }
        }
        Ok(())
    }
}

/// The automatic path's plan at `n`, as the table shows it.
fn plan_name(gpu: &Gpu, dtype: Dtype, n: usize) -> String {
    let plan = AutoPlan::new(dtype, n, gpu.info().has_sm90());
    if plan.variant.is_bulk() {
        format!("{} ({} threads, {} B tiles)", plan.variant, plan.block, plan.bulk.tile_bytes)
    } else if gpukern::Pdl::Auto.pays(gpu.info(), n, plan.variant.lanes()) {
        // The PDL twin: one launch behind a spin kernel has no predecessor to
        // overlap, so this times the same walk as the plain kernel.
        format!("{}_pdl ({} threads)", plan.variant, plan.block)
    } else {
        format!("{} ({} threads)", plan.variant, plan.block)
    }
}

/// Runs the rounds: ours, then CUB (its built executable, when there is one),
/// then torch (when `o.peers`). Returns (cold rows, warm rows).
pub fn measure(
    gpu: &Gpu,
    o: &Opts,
    cub_exe: Option<&Path>,
    out: &Path,
    failures: &mut Vec<String>,
) -> Result<(Vec<LeadRow>, Vec<LeadRow>), String> {
    let (cold, warm) = sizes(o);
    let stream = gpu.stream().map_err(|e| e.to_string())?;
    let has = |d: Dtype| o.dtypes.contains(&d);
    let mut f32s = has(Dtype::F32).then(|| Ours::<f32>::new(gpu, &cold, &warm, &stream, failures)).transpose()?;
    let mut f16s = has(Dtype::F16).then(|| Ours::<f16>::new(gpu, &cold, &warm, &stream, failures)).transpose()?;
    let mut bf16s = has(Dtype::Bf16).then(|| Ours::<bf16>::new(gpu, &cold, &warm, &stream, failures)).transpose()?;
    let warm_max = warm.last().map(|n| n.trailing_zeros());
    let (lo, hi) = (
        warm.first().or(cold.first()).map_or(20, |n| n.trailing_zeros()),
        cold.last().map_or(20, |n| n.trailing_zeros()),
    );
    let mut rounds = Vec::new();
    let start = std::time::Instant::now();
    for i in 0..ROUNDS {
        eprintln!("lead: round {} of {ROUNDS} ({:.0} s) ...", i + 1, start.elapsed().as_secs_f64());
        let mut r = Round::default();
        if let Some(w) = f32s.as_mut() {
            w.round(gpu, &cold, &warm, &stream, &mut r)?;
        }
        if let Some(w) = f16s.as_mut() {
            w.round(gpu, &cold, &warm, &stream, &mut r)?;
        }
        if let Some(w) = bf16s.as_mut() {
            w.round(gpu, &cold, &warm, &stream, &mut r)?;
        }
        if let Some(exe) = cub_exe {
            match crate::cub::time_rows(exe, lo, hi, warm_max, out) {
                Ok(rows) => r.cub = rows,
                Err(why) => eprintln!("lead: CUB round failed: {why}"),
            }
        }
        if o.peers {
            match super::peers::torch_add(o, lo, hi, warm_max) {
                Ok((rows, bursts)) => (r.torch, r.torch_burst) = (rows, bursts),
                Err(why) => eprintln!("lead: torch round failed: {why}"),
            }
        }
        rounds.push(r);
    }
    eprintln!("lead: {:.0} s", start.elapsed().as_secs_f64());
    let rows = |sizes: &[usize], is_warm: bool| -> Vec<LeadRow> {
        let mut out = Vec::new();
        for &d in &o.dtypes {
            for &n in sizes {
                let key = (d.name().to_string(), n, is_warm);
                out.push(row(&rounds, &key, plan_name(gpu, d, n)));
            }
        }
        out
    };
    Ok((rows(&cold, false), rows(&warm, true)))
}

/// One row from the rounds: medians of each party's GB/s, and the median and
/// worst of the per-round ratios to the better peer.
pub fn row(rounds: &[Round], key: &(String, usize, bool), kernel: String) -> LeadRow {
    let mut ours: Vec<f64> = rounds.iter().filter_map(|r| r.ours.get(key).copied()).collect();
    let mut cub: Vec<f64> = rounds.iter().filter_map(|r| r.cub.get(key).copied()).collect();
    let mut torch: Vec<f64> = rounds.iter().filter_map(|r| r.torch.get(key).copied()).collect();
    let mut ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|r| {
            let best = r.cub.get(key).into_iter().chain(r.torch.get(key)).copied().reduce(f64::max)?;
            Some(r.ours.get(key)? / best)
        })
        .collect();
    let med = |v: &mut Vec<f64>| (!v.is_empty()).then(|| median(v));
    let bkey = |on: bool| (key.0.clone(), key.1, key.2, on);
    let mut burst: Vec<f64> = rounds.iter().filter_map(|r| r.burst.get(&bkey(false)).copied()).collect();
    let mut burst_pdl: Vec<f64> = rounds.iter().filter_map(|r| r.burst.get(&bkey(true)).copied()).collect();
    let mut torch_burst: Vec<f64> = rounds.iter().filter_map(|r| r.torch_burst.get(key).copied()).collect();
    let mut burst_ratios: Vec<f64> =
        rounds.iter().filter_map(|r| Some(r.burst.get(&bkey(true))? / r.torch_burst.get(key)?)).collect();
    LeadRow {
        dtype: key.0.clone(),
        n: key.1,
        kernel,
        gbps: med(&mut ours).unwrap_or(0.0),
        cub_gbps: med(&mut cub),
        torch_gbps: med(&mut torch),
        vs_best_peer_min: ratios.iter().copied().reduce(f64::min),
        vs_best_peer: med(&mut ratios),
        rounds: rounds.len(),
        burst_gbps: med(&mut burst),
        burst_pdl_gbps: med(&mut burst_pdl),
        torch_burst_gbps: med(&mut torch_burst),
        burst_pdl_vs_torch: med(&mut burst_ratios),
    }
}

/// Markdown table of the rows whose n is in `only` (all rows when empty).
pub fn table(rows: &[LeadRow], only: &[usize], peak: f64) -> String {
    let mut s = String::new();
    let opt = |x: Option<f64>, digits: usize| x.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "-".into());
    let bold = |x: Option<f64>| x.map(|v| if v >= 1.0 { format!("**{v:.3}**") } else { format!("{v:.3}") });
    let _ = writeln!(
        s,
        "| dtype | n | automatic path | GB/s | % peak | CUB GB/s | torch GB/s | vs best peer | worst round \
         | burst GB/s | burst + PDL GB/s | torch burst GB/s | burst + PDL vs torch burst |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows.iter().filter(|r| only.is_empty() || only.contains(&r.n)) {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.dtype,
            r.n.trailing_zeros(),
            r.kernel,
            r.gbps,
            100.0 * r.gbps / peak,
            opt(r.cub_gbps, 0),
            opt(r.torch_gbps, 0),
            bold(r.vs_best_peer).unwrap_or_else(|| "-".into()),
            opt(r.vs_best_peer_min, 3),
            opt(r.burst_gbps, 0),
            opt(r.burst_pdl_gbps, 0),
            opt(r.torch_burst_gbps, 0),
            bold(r.burst_pdl_vs_torch).unwrap_or_else(|| "-".into()),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_takes_median_and_worst_round_of_the_ratios() {
        let key = ("f32".to_string(), 1usize << 20, false);
        let round = |ours: f64, cub: f64, torch: Option<f64>| {
            let mut r = Round::default();
            r.ours.insert(key.clone(), ours);
            r.cub.insert(key.clone(), cub);
            if let Some(t) = torch {
                r.torch.insert(key.clone(), t);
            }
            r
        };
        let rounds = [round(100.0, 90.0, Some(110.0)), round(100.0, 95.0, Some(98.0)), round(99.0, 100.0, None)];
        let r = row(&rounds, &key, "k".into());
        // Ratios: 100/110, 100/98, 99/100.
        assert!((r.vs_best_peer.unwrap() - 0.99).abs() < 1e-12);
        assert!((r.vs_best_peer_min.unwrap() - 100.0 / 110.0).abs() < 1e-12);
        assert_eq!(r.gbps, 100.0);
        assert_eq!(r.torch_gbps, Some(104.0));
        assert_eq!(r.rounds, 3);
        let none = row(&[Round::default()], &key, "k".into());
        assert_eq!((none.vs_best_peer, none.vs_best_peer_min, none.cub_gbps), (None, None, None));
    }
}
