//! The report's Markdown, rendered from its JSON alone (so `report render` can
//! redraw it without a GPU).

use std::fmt::Write as _;

use serde_json::Value;

pub use super::schema::f;

/// The main table (all rows, or only n == `only_n`) of a report's JSON.
pub fn main_table(r: &Value, only_n: Option<u64>) -> String {
    super::main_table::render(&section(r, "rows"), only_n.map(|n| n as usize))
}

/// A typed section of the report (empty when absent or unreadable).
fn section<T: serde::de::DeserializeOwned>(r: &Value, key: &str) -> Vec<T> {
    serde_json::from_value(r[key].clone()).unwrap_or_default()
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
    let lead: Vec<crate::report::lead::LeadRow> = serde_json::from_value(r["lead"].clone()).unwrap_or_default();
    if !lead.is_empty() {
        let _ = writeln!(
            s,
            "## Lead at 2^24 and 2^28\n\n{}",
            crate::report::lead::table(&lead, &[1 << 24, 1 << 28], f(&r["peak_gbps"]))
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
            crate::report::lead::table(&lead, &[], f(&r["peak_gbps"]))
        );
        let _ = writeln!(
            s,
            "Each cell: {} rounds, interleaved in this run (ours at every size, then CUB, then torch); \
             `vs best peer` is the median of the rounds' ratios to the faster peer, `worst round` the lowest. \
             `burst`: {} automatic adds queued back to back behind one spin, GB/s per launch, PDL off; \
             `burst + PDL`: the same with the plan's programmatic dependent launch (`Pdl::Auto`, sm_90 up to 16 waves); \
             `torch burst`: torch.add timed the same way (CUB's peer times single launches only).\n",
            lead.first().map_or(0, |l| l.rounds),
            crate::workload::BURST
        );
    }
    let warm: Vec<crate::report::lead::LeadRow> = serde_json::from_value(r["lead_warm"].clone()).unwrap_or_default();
    if !warm.is_empty() {
        let _ = writeln!(
            s,
            "## Lead with L2 warm: no input rotation\n\nThe same rounds with one input set, resident in L2 \
             after the warm-up (as in fused pipelines and training loops).\n\n{}\n![ratio to the best peer vs n](lead.svg)\n",
            crate::report::lead::table(&warm, &[], f(&r["peak_gbps"]))
        );
    }
    let _ = writeln!(s, "## At n = 2^{}\n\n{}", max_n.trailing_zeros(), main_table(r, Some(max_n)));
    let _ = writeln!(s, "![GB/s vs n](report.svg)\n");
    let block = r["block"].as_u64().unwrap_or(0) as u32;
    super::roofline::render_resources(&mut s, &section(r, "kernels"), block);
    super::roofline::render(&mut s, &section(r, "roofline"));
    super::auto::render(&mut s, &section(r, "auto"));
    super::sweeps::render_blocks(&mut s, &section(r, "block_sweep"), max_n as usize);
    super::sweeps::render_grid(&mut s, &section(r, "grid_sweep"));
    super::launch::render(&mut s, &section(r, "batched"));
    super::cpu::render(&mut s, &section(r, "cpu"));
    super::studies_md::studies_markdown(&mut s, r);
    let bulk: Vec<crate::hopper::TuneRow> = serde_json::from_value(r["tuning"].clone()).unwrap_or_default();
    let ceiling: Vec<crate::hopper::CeilingRow> = serde_json::from_value(r["ceiling"].clone()).unwrap_or_default();
    let foreach: Vec<crate::foreach::ForeachRow> = serde_json::from_value(r["foreach"].clone()).unwrap_or_default();
    crate::hopper::render(&mut s, &bulk, &ceiling, &foreach, f(&r["copy_gbps"]), f(&r["peak_gbps"]));
    let ops: Vec<crate::ops::OpRow> = serde_json::from_value(r["ops"].clone()).unwrap_or_default();
    crate::ops::render(&mut s, &ops);
    // The device's bytes per SM cycle, as `DeviceInfo::bytes_per_sm_cycle`.
    let dev = &r["device"];
    let cycles = f(&dev["sm_count"]) * f(&dev["sm_clock_khz"]) * 1e3;
    let bytes_per_cycle = if cycles > 0.0 { f(&r["peak_gbps"]) * 1e9 / cycles } else { 0.0 };
    crate::ops::render_grid(&mut s, &ops, bytes_per_cycle);
    let custom: Vec<crate::custom::CustomRow> = serde_json::from_value(r["custom"].clone()).unwrap_or_default();
    if !custom.is_empty() {
        let _ = writeln!(
            s,
            "\n## Custom operations\n\nThe worked example's own operations (examples/custom-kernels: `silu`, and `relu_axpy` = relu(1.5·a − 0.75·b)), built with gpukern-build and run through `Module::unary`/`binary`, beside the built-in `neg` (one input) and `add`'s automatic path (two inputs), same dtype and n, in this run.\n"
        );
        crate::custom::render(&mut s, &custom);
    }
    let sum: Vec<crate::sum::SumRow> = serde_json::from_value(r["custom_sum"].clone()).unwrap_or_default();
    if !sum.is_empty() {
        crate::sum::render(&mut s, &sum);
    }
    let chains: Vec<crate::report::chains::ChainRow> = serde_json::from_value(r["chains"].clone()).unwrap_or_default();
    if !chains.is_empty() {
        let _ = writeln!(
            s,
            "\n## Chains: programmatic dependent launch and graphs\n\n16 dependent operations at 2^12 … 2^26 (each output the next input; `add`: 16 adds, `mixed`: mul, add, relu, sigmoid four times), µs per operation, median, timed from an idle GPU: event, the launches (or one graph launch), event. `plain`: every launch waits for the previous kernel; `PDL`: programmatic dependent launch forced on (sm_90); `graph`: a CUDA graph of the plain launches (`Gpu::graph`); `graph+PDL`: with programmatic edges; `auto`: the library's default (`Pdl::Auto`: PDL where the work fits 16 waves of resident threads, 2^24 f32 on an H200). torch: eager calls, and `torch.cuda.CUDAGraph` of the same calls (relu as `clamp_min`). Targets at 2^12–2^20: plain/auto ≥ ×1.2, torch eager/auto ≥ ×1.5, torch graph/graph+PDL ≥ ×1.3; from 2^22, plain/auto ≥ ×0.99.\n\n{}",
            crate::report::chains::markdown(&chains)
        );
    }
    let copies: Vec<super::copies::CopyRow> = serde_json::from_value(r["copies"].clone()).unwrap_or_default();
    super::copies::render(&mut s, &copies);
    let norms: Vec<crate::report::norms::NormRow> = serde_json::from_value(r["norms"].clone()).unwrap_or_default();
    if !norms.is_empty() {
        let _ = writeln!(
            s,
            "\n## Norms and softmax\n\n`Gpu::norm` with the automatic plan (`strategy/block/k`), every row bit-exact against the CPU reference's replay of the plan (shapes up to 2^22 elements), timed as the element-wise rows. GB/s counts x read and y written (add_rms_norm: x, residual, h, y); `×neg` divides by neg's GB/s over the same elements of the same dtype in this run (target from 2^22 elements: ×0.90). torch (`peers.py --norms`): `F.rms_norm`, `F.layer_norm`, `torch.softmax`, `torch.log_softmax`, `rms_norm(x + r)`, eager and `torch.compile`. The main columns use a plain stream's PDL setting (automatic: on sm_90 the small launches take the PDL twins). Small shapes: 16 back-to-back calls from an idle GPU, µs per call: `16-call` plain (PDL off), `16 PDL` with PDL on (each norm's twin, the same bits), `16 graph` one replay of the 16 calls recorded with `GraphBuilder::norm` (programmatic edges on sm_90); torch's columns are the same 16 calls eager and as a `CUDAGraph`.\n\n{}",
            crate::report::norms::markdown(&norms)
        );
    }
    let study: Vec<crate::report::norms_study::NormPlanRow> =
        serde_json::from_value(r["norms_plans"].clone()).unwrap_or_default();
    if !study.is_empty() {
        let _ = writeln!(
            s,
            "\n### Norms: the plan study\n\nEvery plan (`strategy/block/k`) that holds the rows, f32 and bf16, rms_norm, layer_norm and softmax, timed as above; `×neg` is neg's time over the plan's at the same elements. The automatic plan and the three fastest with their kernels' registers per thread.\n\n{}",
            crate::report::norms_study::study_markdown(&study)
        );
    }
    let _ = writeln!(s, "\n## Peers\n\n{}\n", r["peers_note"].as_str().unwrap_or(""));
    let _ = writeln!(s, "## All sizes\n\n{}", main_table(r, None));
    s
}
