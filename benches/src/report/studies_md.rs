//! Markdown of the seed-003 studies.

use std::fmt::Write as _;

use serde_json::Value;

use super::markdown::f;

pub(super) fn studies_markdown(s: &mut String, r: &Value) {
    let all: Vec<&Value> = r["studies"].as_array().into_iter().flatten().collect();
    if all.is_empty() {
        return;
    }
    let fam = |f: &'static str| all.iter().copied().filter(move |x| x["family"] == f);
    let ok = |x: &Value| if x["verified"] == true { "✓" } else { "✗" };
    let _ = writeln!(s, "\n## Seed 003: performance-engineering studies\n");
    let _ = writeln!(s, "### Matrix product (f32, square, FMA in f32; checked against f64 on sampled rows, ‖ΔC‖/‖C‖ ≤ 1e-5)\n\n| kernel | size | median ms | GFLOP/s | vs naive | rel. error | verified |\n|---|---|---:|---:|---:|---:|---|");
    for x in fam("matmul") {
        let _ = writeln!(
            s,
            "| {} | {}³ | {:.3} | {:.0} | {:.2}× | {:.1e} | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["m"],
            f(&x["median_us"]) / 1e3,
            f(&x["gflops"]),
            f(&x["speedup_vs_naive"]),
            f(&x["rel_error"]),
            ok(x)
        );
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
    for x in fam("count_eq") {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.0}% | {:.1} | {:.0} | {:.2}× | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["n"].as_u64().unwrap_or(0).trailing_zeros(),
            100.0 * f(&x["match_rate"]),
            f(&x["median_us"]),
            f(&x["gbps"]),
            f(&x["speedup_vs_naive"]),
            ok(x)
        );
    }
    let _ = writeln!(s, "\n### Coalescing (f32 copy, warp lanes `stride` elements apart; GB/s of useful data)\n\n| stride | n | median µs | useful GB/s | slowdown vs stride 1 | exact |\n|---:|---|---:|---:|---:|---|");
    for x in fam("coalesce") {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.1} | {:.0} | {:.1}× | {} |",
            x["stride"],
            x["n"].as_u64().unwrap_or(0).trailing_zeros(),
            f(&x["median_us"]),
            f(&x["gbps"]),
            f(&x["slowdown_vs_stride_1"]),
            ok(x)
        );
    }
    let _ = writeln!(s, "\n### Transpose (f32; bank conflicts and padding)\n\n| kernel | size | median µs | GB/s | vs naive | exact |\n|---|---|---:|---:|---:|---|");
    for x in fam("transpose") {
        let _ = writeln!(
            s,
            "| {} | {}² | {:.1} | {:.0} | {:.2}× | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["rows"],
            f(&x["median_us"]),
            f(&x["gbps"]),
            f(&x["speedup_vs_naive"]),
            ok(x)
        );
    }
    let _ = writeln!(s, "\n### Fusion (f32; fused kernels round each operation separately, no FMA, so they give the unfused bits)\n\n| pipeline | n | median µs | bytes moved | ideal bytes | GB/s | time vs ideal | speedup | same bits |\n|---|---|---:|---:|---:|---:|---:|---:|---|");
    for x in fam("fusion") {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.1} | {} MB | {} MB | {:.0} | {:.2}× | {:.2}× | {} |",
            x["kernel"].as_str().unwrap_or(""),
            x["n"].as_u64().unwrap_or(0).trailing_zeros(),
            f(&x["median_us"]),
            x["bytes_moved"].as_u64().unwrap_or(0) / 1_000_000,
            x["ideal_bytes"].as_u64().unwrap_or(0) / 1_000_000,
            f(&x["gbps"]),
            f(&x["vs_ideal_time"]),
            f(&x["speedup_vs_unfused"]),
            ok(x)
        );
    }
}
