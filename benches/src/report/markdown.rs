//! The report's Markdown, rendered from its JSON alone (so `report render` can
//! redraw it without a GPU).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gpukern::Variant;
use serde_json::Value;

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The main table (all rows, or only n == `only_n`).
pub fn main_table(r: &Value, only_n: Option<u64>) -> String {
    let has_peers = r["rows"].as_array().map(|a| a.iter().any(|x| x.get("torch_gbps").is_some())).unwrap_or(false);
    let has_cub = r["rows"].as_array().map(|a| a.iter().any(|x| x.get("cub_gbps").is_some())).unwrap_or(false);
    let has_stream = r["rows"].as_array().map(|a| a.iter().any(|x| x.get("pct_stream").is_some())).unwrap_or(false);
    let mut s = String::new();
    let _ = write!(s, "| kernel | V | n | median µs | GB/s | % peak | % copy |");
    if has_stream {
        s.push_str(" % best stream |");
    }
    s.push_str(" verified |");
    if has_peers {
        s.push_str(" torch GB/s | vs torch |");
    }
    if has_cub {
        s.push_str(" CUB GB/s | vs CUB |");
    }
    s.push('\n');
    s.push_str("|---|---|---|---:|---:|---:|---:|");
    if has_stream {
        s.push_str("---:|");
    }
    s.push_str("---|");
    if has_peers {
        s.push_str("---:|---:|");
    }
    if has_cub {
        s.push_str("---:|---:|");
    }
    s.push('\n');
    for row in r["rows"].as_array().into_iter().flatten() {
        let n = row["n"].as_u64().unwrap_or(0);
        if only_n.is_some_and(|k| k != n) {
            continue;
        }
        let v = row["v"].as_u64().map(|v| format!("V{v}")).unwrap_or("-".into());
        let _ = write!(
            s,
            "| {} | {} | 2^{} | {:.2} | {:.0} | {:.1} | {:.1} |",
            row["kernel"].as_str().unwrap_or(""),
            v,
            n.trailing_zeros(),
            f(&row["median_us"]),
            f(&row["gbps"]),
            f(&row["pct_peak"]),
            f(&row["pct_copy"]),
        );
        if has_stream {
            let _ = write!(s, " {:.1} |", f(&row["pct_stream"]));
        }
        s.push_str(if row["verified"] == true { " ✓ |" } else { " ✗ |" });
        if has_peers {
            match row.get("torch_gbps") {
                Some(t) => {
                    let _ = write!(s, " {:.0} | {:.2} |", f(t), f(&row["ratio_vs_torch"]));
                }
                None => s.push_str(" - | - |"),
            }
        }
        if has_cub {
            match row.get("cub_gbps") {
                Some(c) => {
                    let _ = write!(s, " {:.0} | {:.3} |", f(c), f(&row["ratio_vs_cub"]));
                }
                None => s.push_str(" - | - |"),
            }
        }
        s.push('\n');
    }
    s
}

pub fn markdown(r: &Value) -> String {
    let mut s = String::new();
    let d = &r["device"];
    let _ = writeln!(s, "# Element-wise add: bandwidth report\n");
    let _ = writeln!(
        s,
        "- GPU: **{}** (sm_{}, {} SMs, L2 {} MiB), driver {}",
        r["gpu"].as_str().unwrap_or(""),
        d["compute_capability"].as_str().unwrap_or("").replace('.', ""),
        d["sm_count"],
        d["l2_bytes"].as_u64().unwrap_or(0) >> 20,
        r["driver"].as_str().unwrap_or("")
    );
    let _ = writeln!(s, "- Theoretical peak: **{:.0} GB/s** (2 × {} MHz × {} bit / 8). Measured device-to-device copy: **{:.0} GB/s** ({:.1}% of peak; bytes read + written, 1 GiB, median of 20).", f(&r["peak_gbps"]), d["memory_clock_khz"].as_u64().unwrap_or(0) / 1000, d["bus_width_bits"], f(&r["copy_gbps"]), 100.0 * f(&r["copy_gbps"]) / f(&r["peak_gbps"]));
    let _ = writeln!(
        s,
        "- Commit `{}`, PTX sha256 `{}` (sm_70 module) and `{}` (sm_90 module).",
        r["git_commit"].as_str().unwrap_or(""),
        r["ptx_sha256"].as_str().unwrap_or(""),
        r["ptx_sm90_sha256"].as_str().unwrap_or("-")
    );
    let _ = writeln!(
        s,
        "- Launch floor (empty kernel): {:.2} µs per launch back to back, {:.2} µs launch + synchronize (host clock).",
        f(&r["launch_floor_us"]["back_to_back"]),
        f(&r["launch_floor_us"]["launch_and_sync"])
    );
    let _ = writeln!(s, "- Timing: CUDA events around each launch, with a spin kernel queued first so the events time the kernel and not the host launch path; median; block {} threads; every result verified bit-exact against the CPU reference before it is timed. Sizes whose working set is under 4× L2 rotate through disjoint input sets.\n", r["block"]);
    let max_n = r["rows"].as_array().and_then(|a| a.iter().filter_map(|x| x["n"].as_u64()).max()).unwrap_or(0);
    let lead: Vec<crate::lead::LeadRow> = serde_json::from_value(r["lead"].clone()).unwrap_or_default();
    if !lead.is_empty() {
        let _ = writeln!(
            s,
            "## Lead at 2^24 and 2^28\n\n{}",
            crate::lead::table(&lead, &[1 << 24, 1 << 28], f(&r["peak_gbps"]))
        );
        let _ = writeln!(
            s,
            "## Lead: the automatic path against the best peer\n\nCUB: {}.{} torch: {}.\n\n{}",
            r["cub_note"].as_str().unwrap_or("-"),
            r["cub_mismatch"]
                .as_object()
                .map(|m| m
                    .iter()
                    .map(|(d, w)| format!(" CUB {d} is **not bit-exact**: {}.", w.as_str().unwrap_or("")))
                    .collect::<String>())
                .unwrap_or_default(),
            r["peers_note"].as_str().unwrap_or("-"),
            crate::lead::table(&lead, &[], f(&r["peak_gbps"]))
        );
    }
    let _ = writeln!(s, "## At n = 2^{}\n\n{}", max_n.trailing_zeros(), main_table(r, Some(max_n)));
    let _ = writeln!(s, "![GB/s vs n](report.svg)\n");
    let _ = writeln!(s, "## Kernel resources at block {} (driver's JIT of the sm_70 PTX)\n\n| kernel | registers | local bytes | blocks/SM | occupancy |\n|---|---:|---:|---:|---:|", r["block"]);
    for k in r["kernels"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0}% |",
            k["kernel"].as_str().unwrap_or(""),
            k["registers"],
            k["local_bytes"],
            k["blocks_per_sm"],
            100.0 * f(&k["occupancy"])
        );
    }
    let _ = writeln!(s, "\n## Roofline\n\nOne add per element: arithmetic intensity 1/(3·size) FLOP/byte. The FP32 add peak ({:.0} GFLOP/s) over the copy bandwidth puts the ridge at {:.1} FLOP/byte, far right of add.\n\n| dtype | FLOP/byte | bandwidth-bound GFLOP/s | compute peak GFLOP/s | memory-bound by |\n|---|---:|---:|---:|---:|", r["roofline"][0]["fp32_add_peak_gflops"].as_f64().unwrap_or(0.0), r["roofline"][0]["ridge_flops_per_byte"].as_f64().unwrap_or(0.0));
    for k in r["roofline"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | {:.4} | {:.0} | {:.0} | {:.0}× |",
            k["dtype"].as_str().unwrap_or(""),
            f(&k["flops_per_byte"]),
            f(&k["bandwidth_bound_gflops"]),
            f(&k["fp32_add_peak_gflops"]),
            f(&k["memory_bound_by"])
        );
    }
    let _ = writeln!(s, "\n## Automatic choice vs the best variant\n\n| dtype | n | chose | GB/s | best | best GB/s | auto/best |\n|---|---|---|---:|---|---:|---:|");
    for k in r["auto"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {} | {:.0} | {} | {:.0} | {:.1}% |",
            k["dtype"].as_str().unwrap_or(""),
            k["n"].as_u64().unwrap_or(0).trailing_zeros(),
            k["chosen"].as_str().unwrap_or(""),
            f(&k["gbps"]),
            k["best_kernel"].as_str().unwrap_or(""),
            f(&k["best_gbps"]),
            f(&k["auto_vs_best_pct"])
        );
    }
    let _ = writeln!(
        s,
        "\n## Block-size sweep at n = 2^{} (GB/s; * = the seed article's configuration)\n",
        max_n.trailing_zeros()
    );
    let blocks = [32, 64, 128, 256, 512, 1024];
    let _ = writeln!(
        s,
        "| kernel | {} |\n|---|{}",
        blocks.map(|b| b.to_string()).join(" | "),
        "---:|".repeat(blocks.len())
    );
    let mut by_kernel: BTreeMap<String, Vec<(u64, f64, bool)>> = BTreeMap::new();
    for k in r["block_sweep"].as_array().into_iter().flatten() {
        by_kernel.entry(k["kernel"].as_str().unwrap_or("").to_string()).or_default().push((
            k["block"].as_u64().unwrap_or(0),
            f(&k["gbps"]),
            k["seed_config"] == true,
        ));
    }
    for v in Variant::ALL {
        if let Some(cells) = by_kernel.get(v.name()) {
            let c: Vec<String> = blocks
                .iter()
                .map(|b| {
                    cells
                        .iter()
                        .find(|x| x.0 == *b)
                        .map(|x| format!("{:.0}{}", x.1, if x.2 { "*" } else { "" }))
                        .unwrap_or("-".into())
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", v.name(), c.join(" | "));
        }
    }
    let _ = writeln!(s, "\n## Grid-size sweep, widest variants (GB/s; grid capped at k blocks per SM, grid-stride loop covers the rest)\n\n| kernel | n | 1 | 2 | 4 | 8 | 16 | 64 | uncapped |\n|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut by_kn: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    for k in r["grid_sweep"].as_array().into_iter().flatten() {
        by_kn
            .entry((k["kernel"].as_str().unwrap_or("").to_string(), k["n"].as_u64().unwrap_or(0)))
            .or_default()
            .push(f(&k["gbps"]));
    }
    for ((k, n), g) in &by_kn {
        let _ = writeln!(
            s,
            "| {k} | 2^{} | {} |",
            n.trailing_zeros(),
            g.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" | ")
        );
    }
    let _ = writeln!(s, "\n## Launch-bound sizes: µs per add\n\nkernel only = spin-isolated event time (as in the tables above); single launch = event time on an idle GPU, so it includes the launch path; back-to-back = 100 launches on one stream; graph = 100 adds captured in one CUDA graph and replayed.\n\n| kernel | n | kernel only | single launch | back-to-back | graph | graph GB/s |\n|---|---|---:|---:|---:|---:|---:|");
    for k in r["batched"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |",
            k["kernel"].as_str().unwrap_or(""),
            k["n"].as_u64().unwrap_or(0).trailing_zeros(),
            f(&k["kernel_us"]),
            f(&k["single_us"]),
            f(&k["batched_us_per_op"]),
            f(&k["graph_us_per_op"]),
            f(&k["graph_gbps"])
        );
    }
    if r["cpu"].as_array().is_some_and(|a| !a.is_empty()) {
        let checked = r["cpu"][0].get("verified").is_some();
        let _ = writeln!(
            s,
            "\n## CPU baseline (host clock, median{})\n",
            if checked { "; every result checked against the reference" } else { "" }
        );
        let mut seen = Vec::new();
        for k in r["cpu"].as_array().into_iter().flatten() {
            let (d, m) = (
                k["dtype"].as_str().unwrap_or(""),
                k["method"].as_str().unwrap_or("`c[i] = a[i] + b[i]` with the type's own `+`"),
            );
            if !seen.contains(&d) {
                seen.push(d);
                let _ = writeln!(s, "- {d}: {m}");
            }
        }
        let _ = writeln!(s, "\n| dtype | n | CPU 1 thread GB/s | CPU {} threads GB/s | GPU best GB/s | speedup vs 1 thread | vs all threads |\n|---|---|---:|---:|---:|---:|---:|", r["cpu"][0]["threads"]);
        for k in r["cpu"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "| {} | 2^{} | {:.1} | {:.1} | {:.0} | {:.1}× | {:.1}× |",
                k["dtype"].as_str().unwrap_or(""),
                k["n"].as_u64().unwrap_or(0).trailing_zeros(),
                f(&k["cpu_1t_gbps"]),
                f(&k["cpu_all_gbps"]),
                f(&k["gpu_best_gbps"]),
                f(&k["speedup_vs_1t"]),
                f(&k["speedup_vs_all"])
            );
        }
    }
    super::studies_md::studies_markdown(&mut s, r);
    let bulk: Vec<crate::hopper::TuneRow> = serde_json::from_value(r["tuning"].clone()).unwrap_or_default();
    let ceiling: Vec<crate::hopper::CeilingRow> = serde_json::from_value(r["ceiling"].clone()).unwrap_or_default();
    let foreach: Vec<crate::foreach::ForeachRow> = serde_json::from_value(r["foreach"].clone()).unwrap_or_default();
    crate::hopper::render(&mut s, &bulk, &ceiling, &foreach, f(&r["copy_gbps"]), f(&r["peak_gbps"]));
    let ops: Vec<crate::ops::OpRow> = serde_json::from_value(r["ops"].clone()).unwrap_or_default();
    crate::ops::render(&mut s, &ops);
    let _ = writeln!(s, "\n## Peers\n\n{}\n", r["peers_note"].as_str().unwrap_or(""));
    let _ = writeln!(s, "## All sizes\n\n{}", main_table(r, None));
    s
}
