//! `candle.md`: the method, then one table for the element-wise ops and one
//! for the norms.

use std::fmt::Write;

use super::{Cell, Errors, Report};

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

fn err(e: Option<Errors>, ulp: bool) -> String {
    match e {
        None => "–".into(),
        Some(e) if ulp => e.max_ulp.map_or("inf".into(), |u| format!("{u:.2}")),
        Some(e) => format!(
            "{} / {}",
            e.max_abs.map_or("inf".into(), |v| format!("{v:.1e}")),
            e.max_rel.map_or("inf".into(), |v| format!("{v:.1e}"))
        ),
    }
}

fn size(c: &Cell) -> String {
    match c.shape[..] {
        [n] => format!("2^{}", n.trailing_zeros()),
        [rows, cols] => format!("{rows} × {cols}"),
        _ => format!("{:?}", c.shape),
    }
}

/// One table of cells; `ulp`: element-wise errors, else abs / rel.
fn table(out: &mut String, cells: &[Cell], ulp: bool) {
    let errs = if ulp { "max ulp ours | max ulp candle" } else { "max abs / rel ours | max abs / rel candle" };
    let _ = writeln!(
        out,
        "| op | candle's op | dtype | size | GB/s ours | GB/s candle | ×candle | µs ours | µs candle | host µs/op ours | host µs/op candle | {errs} |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in cells {
        let chain = if c.chain > 1 { " (×16)" } else { "" };
        let refused = c.candle_error.as_deref().map(|e| format!(" (refused: {e})")).unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {}{refused} | {} | {}{chain} | {:.0} | {} | {} | {:.2} | {} | {:.2} | {} | {} | {} |",
            c.op,
            c.candle_op,
            c.dtype,
            size(c),
            c.ours.gbps,
            num(c.candle.map(|s| s.gbps), 0),
            num(c.ratio, 2),
            c.ours.gpu_us,
            num(c.candle.map(|s| s.gpu_us), 2),
            c.ours.host_us,
            num(c.candle.map(|s| s.host_us), 2),
            err(Some(c.ours_err), ulp),
            err(c.candle_err, ulp),
        );
    }
}

/// The whole section.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## candle: gpukern-candle's ops against candle {}'s\n", r.candle_version);
    let _ = writeln!(out, "{} (L2 {} MiB), {} repetitions per cell.\n", r.device, r.l2_bytes >> 20, r.reps);
    for m in &r.method {
        let _ = writeln!(out, "- {m}");
    }
    let _ = writeln!(out, "- Sizes marked (×16) were timed as 16 back-to-back calls; µs are per call.");
    let _ = writeln!(out, "- Not compared (no single candle op): {}.", r.not_compared.join("; "));
    let _ = writeln!(out, "\n### Element-wise\n");
    table(&mut out, &r.elementwise, true);
    let _ = writeln!(out, "\n### Norms and softmax (last dimension)\n");
    table(&mut out, &r.norms, false);
    let refused: Vec<String> = r
        .elementwise
        .iter()
        .chain(&r.norms)
        .filter(|c| c.candle.is_none())
        .map(|c| format!("{} {} {}", c.op, c.dtype, size(c)))
        .collect();
    let _ = writeln!(
        out,
        "\ncandle refused: {}.",
        if refused.is_empty() { "nothing (every op, dtype and size ran)".into() } else { refused.join(", ") }
    );
    if !r.failures.is_empty() {
        let _ = writeln!(out, "\n**Failures** (our error past the checked bound):\n");
        for f in &r.failures {
            let _ = writeln!(out, "- {f}");
        }
    }
    out
}
