//! Markdown of the seed-003 studies, from their typed rows.

use std::fmt::Write as _;

use serde_json::Value;

use super::schema::f;
use super::schema::Study;

fn ok(verified: bool) -> &'static str {
    if verified {
        "✓"
    } else {
        "✗"
    }
}

pub(super) fn studies_markdown(s: &mut String, r: &Value) {
    let all: Vec<Study> = serde_json::from_value(r["studies"].clone()).unwrap_or_default();
    if all.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Seed 003: performance-engineering studies\n");
    let _ = writeln!(s, "### Matrix product (f32, square, FMA in f32; checked against f64 on sampled rows, ‖ΔC‖/‖C‖ ≤ 1e-5)\n\n| kernel | size | median ms | GFLOP/s | vs naive | rel. error | verified |\n|---|---|---:|---:|---:|---:|---|");
    for x in &all {
        if let Study::Matmul { kernel, m, median_us, gflops, speedup_vs_naive, rel_error, verified, .. } = x {
            let _ = writeln!(
                s,
                "| {kernel} | {m}³ | {:.3} | {gflops:.0} | {speedup_vs_naive:.2}× | {rel_error:.1e} | {} |",
                median_us / 1e3,
                ok(*verified)
            );
        }
    }
    for p in r["peer_matmul"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| torch.matmul (cuBLAS, TF32 off) | {}³ | {:.3} | {:.0} | | | |",
            p["size"],
            f(&p["median_us"]) / 1e3,
            f(&p["gflops"])
        );
    }
    let _ = writeln!(s, "\n### Count equal (i32; one atomic per match vs per block)\n\n| kernel | n | matches | median µs | GB/s | vs atomic | exact |\n|---|---|---:|---:|---:|---:|---|");
    for x in &all {
        if let Study::CountEq { kernel, n, match_rate, median_us, gbps, speedup_vs_naive, verified, .. } = x {
            let _ = writeln!(
                s,
                "| {kernel} | 2^{} | {:.0}% | {median_us:.1} | {gbps:.0} | {speedup_vs_naive:.2}× | {} |",
                n.trailing_zeros(),
                100.0 * match_rate,
                ok(*verified)
            );
        }
    }
    let _ = writeln!(s, "\n### Coalescing (f32 copy, warp lanes `stride` elements apart; GB/s of useful data)\n\n| stride | n | median µs | useful GB/s | slowdown vs stride 1 | exact |\n|---:|---|---:|---:|---:|---|");
    for x in &all {
        if let Study::Coalesce { stride, n, median_us, gbps, slowdown_vs_stride_1, verified, .. } = x {
            let _ = writeln!(
                s,
                "| {stride} | 2^{} | {median_us:.1} | {gbps:.0} | {slowdown_vs_stride_1:.1}× | {} |",
                n.trailing_zeros(),
                ok(*verified)
            );
        }
    }
    let _ = writeln!(s, "\n### Transpose (f32; bank conflicts and padding)\n\n| kernel | size | median µs | GB/s | vs naive | exact |\n|---|---|---:|---:|---:|---|");
    for x in &all {
        if let Study::Transpose { kernel, rows, median_us, gbps, speedup_vs_naive, verified, .. } = x {
            let _ = writeln!(
                s,
                "| {kernel} | {rows}² | {median_us:.1} | {gbps:.0} | {speedup_vs_naive:.2}× | {} |",
                ok(*verified)
            );
        }
    }
    let _ = writeln!(s, "\n### Fusion (f32; fused kernels round each operation separately, no FMA, so they give the unfused bits)\n\n| pipeline | n | median µs | bytes moved | ideal bytes | GB/s | time vs ideal | speedup | same bits |\n|---|---|---:|---:|---:|---:|---:|---:|---|");
    for x in &all {
        if let Study::Fusion {
            kernel,
            n,
            median_us,
            bytes_moved,
            ideal_bytes,
            gbps,
            vs_ideal_time,
            speedup_vs_unfused,
            verified,
            ..
        } = x
        {
            let _ = writeln!(
                s,
                "| {kernel} | 2^{} | {median_us:.1} | {} MB | {} MB | {gbps:.0} | {vs_ideal_time:.2}× | {speedup_vs_unfused:.2}× | {} |",
                n.trailing_zeros(),
                bytes_moved / 1_000_000,
                ideal_bytes / 1_000_000,
                ok(*verified)
            );
        }
    }
}
