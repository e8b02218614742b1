//! The report's plots (SVG, drawn with `plotters` from the report's JSON alone):
//! GB/s vs n with the peak and copy lines (`report.svg`), the roofline of seed
//! 002 (`roofline.svg`), the variants at the largest n beside the peers
//! (`bars.svg`) and the lead tables' ratio to the best peer (`lead.svg`).

use plotters::prelude::*;
use serde_json::Value;

use super::schema::f;

const SIZE: (u32, u32) = (1100, 720);

fn rows(r: &Value) -> Vec<&Value> {
    r["rows"].as_array().into_iter().flatten().collect()
}

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// Draws with `draw` into an SVG string; a drawing error becomes a note in the SVG.
fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<(), String>) -> String {
    let mut out = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|_| draw(&root))
            .and_then(|_| root.present().map_err(|e| e.to_string()))
    };
    match result {
        Ok(()) => out,
        Err(e) => {
            format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">plot failed: {e}</text></svg>")
        }
    }
}

/// A chart on `root` with the report's caption style and label areas of
/// `x_area` and `y_area` pixels.
fn builder<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x_area: u32,
    y_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 22)).margin(12).x_label_area_size(x_area).y_label_area_size(y_area);
    b
}

/// GB/s vs n, log–log, one line per kernel of the seed's family, the fastest
/// Hopper kernels and the automatic path, with the peak and copy lines.
pub fn gbps_vs_n(r: &Value) -> String {
    let all = rows(r);
    let mut kernels: Vec<String> = Vec::new();
    for x in &all {
        let k = x["kernel"].as_str().unwrap_or("").to_string();
        let keep = x["v"].is_u64() || k.ends_with("_bulk") || k == "add_f32_bulk_st" || k == "add_bf16x8_pack";
        if keep && !kernels.contains(&k) {
            kernels.push(k);
        }
    }
    let (peak, copy) = (f(&r["peak_gbps"]), f(&r["copy_gbps"]));
    let ns: Vec<f64> = all.iter().filter_map(|x| x["n"].as_u64()).map(|n| (n as f64).log2()).collect();
    let (lo, hi) = (ns.iter().cloned().fold(f64::MAX, f64::min), ns.iter().cloned().fold(0.0, f64::max));
    let title = format!("Element-wise add on {}: GB/s vs n", r["gpu"].as_str().unwrap_or("GPU"));
    svg(|root| {
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let mut c = builder(root, &title, 40, 60)
            .build_cartesian_2d(lo.min(hi)..hi.max(lo + 1.0), (1f64..peak * 1.25).log_scale())
            .map_err(e)?;
        c.configure_mesh()
            .x_desc("n (log2: 2^x elements)")
            .y_desc("GB/s (log scale)")
            .x_label_formatter(&|x| format!("2^{x:.0}"))
            .draw()
            .map_err(e)?;
        for (label, value, style) in
            [("theoretical peak", peak, BLACK.stroke_width(2)), ("measured copy", copy, RED.stroke_width(1))]
        {
            c.draw_series(LineSeries::new([(lo, value), (hi, value)], style))
                .map_err(e)?
                .label(format!("{label} {value:.0}"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        for (i, k) in kernels.iter().enumerate() {
            let pts: Vec<(f64, f64)> = all
                .iter()
                .filter(|x| x["kernel"] == k.as_str())
                .map(|x| ((x["n"].as_u64().unwrap_or(1) as f64).log2(), f(&x["gbps"]).max(1.0)))
                .collect();
            let style = color(i).stroke_width(2);
            c.draw_series(LineSeries::new(pts, style))
                .map_err(e)?
                .label(k.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
        Ok(())
    })
}

/// The roofline: attainable GFLOP/s against arithmetic intensity, with the
/// measured points of add (f32, f16, bf16 at the largest n), the fused add+scale
/// and SAXPY, and the three matmuls at their largest size.
pub fn roofline(r: &Value) -> String {
    let copy = f(&r["copy_gbps"]);
    let add_peak = r["roofline"].get(0).map(|x| f(&x["fp32_add_peak_gflops"])).unwrap_or(f64::NAN);
    let mut points: Vec<(String, f64, f64)> = Vec::new();
    let max_n = rows(r).iter().filter_map(|x| x["n"].as_u64()).max().unwrap_or(0);
    for (dtype, size) in [("f32", 4.0), ("f16", 2.0), ("bf16", 2.0)] {
        let best = rows(r)
            .iter()
            .filter(|x| x["dtype"] == dtype && x["n"] == max_n)
            .map(|x| f(&x["gbps"]))
            .fold(0.0, f64::max);
        let ai = 1.0 / (3.0 * size);
        if best > 0.0 {
            points.push((format!("add {dtype}"), ai, best * ai));
        }
    }
    for s in r["studies"].as_array().into_iter().flatten() {
        let k = s["kernel"].as_str().unwrap_or("");
        match s["family"].as_str() {
            // Fused kernels: 2 FLOP per element over 12 bytes (a, b, out) of f32.
            Some("fusion") if k.contains("fused") => points.push((k.into(), 2.0 / 12.0, f(&s["gbps"]) * 2.0 / 12.0)),
            Some("matmul") if s["m"].as_u64() == Some(4096) || s["n"].as_u64() == Some(1 << 24) => {
                // 2·m³ FLOP over 3·m²·4 bytes moved at least once.
                let m = s["m"].as_f64().unwrap_or(4096.0);
                points.push((k.into(), 2.0 * m / 12.0, f(&s["gflops"])));
            }
            _ => {}
        }
    }
    let fma_peak = 2.0 * add_peak;
    let title = format!("Roofline on {} (FP32; bandwidth = measured copy)", r["gpu"].as_str().unwrap_or("GPU"));
    svg(|root| {
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let mut c = builder(root, &title, 40, 70)
            .build_cartesian_2d((0.01f64..2000.0).log_scale(), (10f64..fma_peak * 2.0).log_scale())
            .map_err(e)?;
        c.configure_mesh().x_desc("arithmetic intensity (FLOP/byte)").y_desc("GFLOP/s").draw().map_err(e)?;
        for (label, peak, style) in
            [("FP32 add peak", add_peak, BLUE.stroke_width(1)), ("FP32 FMA peak", fma_peak, BLACK.stroke_width(2))]
        {
            let ridge = peak / copy;
            let roof = [(0.01, 0.01 * copy), (ridge, peak), (2000.0, peak)];
            c.draw_series(LineSeries::new(roof, style))
                .map_err(e)?
                .label(format!("{label} {:.1} TFLOP/s, ridge {ridge:.1} FLOP/B", peak / 1e3))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        for (i, (label, ai, gflops)) in points.iter().enumerate() {
            let col = color(i);
            c.draw_series([Circle::new((*ai, *gflops), 5, col.filled())])
                .map_err(e)?
                .label(format!("{label}: {gflops:.0} GFLOP/s at {ai:.3} FLOP/B"))
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, col.filled()));
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
        Ok(())
    })
}

/// Every variant at the largest n (GB/s, main-sweep launch settings), grouped by
/// dtype, with the automatic path (its tuned settings) and torch and CUB beside
/// them where the run had peers.
pub fn bars(r: &Value) -> String {
    let max_n = rows(r).iter().filter_map(|x| x["n"].as_u64()).max().unwrap_or(0);
    let mut bars: Vec<(String, f64, usize)> = Vec::new();
    for (g, dtype) in ["f32", "f16", "bf16"].into_iter().enumerate() {
        let here: Vec<&Value> = rows(r).into_iter().filter(|x| x["dtype"] == dtype && x["n"] == max_n).collect();
        for x in &here {
            bars.push((x["kernel"].as_str().unwrap_or("").to_string(), f(&x["gbps"]), g));
        }
        let auto = r["lead"].as_array().into_iter().flatten().find(|l| l["dtype"] == dtype && l["n"] == max_n);
        if let Some(l) = auto {
            bars.push((format!("automatic path {dtype}"), f(&l["gbps"]), 5));
        }
        if let Some(x) = here.first() {
            if let Some(t) = x.get("torch_gbps") {
                bars.push((format!("torch.add {dtype}"), f(t), 3));
            }
            if let Some(c) = x.get("cub_gbps") {
                bars.push((format!("CUB {dtype}"), f(c), 4));
            }
        }
    }
    let peak = f(&r["peak_gbps"]);
    let title = format!(
        "Add at n = 2^{} on {}: every variant and the peers",
        max_n.trailing_zeros(),
        r["gpu"].as_str().unwrap_or("GPU")
    );
    let names: Vec<String> = bars.iter().map(|b| format!("{} {:.0}", b.0, b.1)).collect();
    svg(|root| {
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let mut c = builder(root, &title, 40, 230)
            .build_cartesian_2d(0f64..peak * 1.02, (0..bars.len()).into_segmented())
            .map_err(e)?;
        c.configure_mesh()
            .x_desc("GB/s (black line: theoretical peak)")
            .y_labels(bars.len())
            .y_label_style(("sans-serif", 13))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .disable_y_mesh()
            .draw()
            .map_err(e)?;
        c.draw_series(bars.iter().enumerate().map(|(i, (_, g, group))| {
            let col = [color(0), color(1), color(2), color(3), color(7), RGBColor(0, 0, 0)][*group];
            let mut bar =
                Rectangle::new([(0.0, SegmentValue::Exact(i)), (*g, SegmentValue::Exact(i + 1))], col.filled());
            bar.set_margin(2, 2, 0, 0);
            bar
        }))
        .map_err(e)?;
        c.draw_series(LineSeries::new(
            [(peak, SegmentValue::Exact(0)), (peak, SegmentValue::Exact(bars.len()))],
            BLACK.stroke_width(2),
        ))
        .map_err(e)?;
        Ok(())
    })
}

/// The lead tables' `vs_best_peer` against n: one line per dtype, solid for L2
/// cold and dashed for warm, the worst round as a dot, and a line at 1.0 (above
/// it we lead).
pub fn lead(r: &Value) -> String {
    let series = |key: &str, dtype: &str| -> Vec<(f64, f64, f64)> {
        r[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["dtype"] == dtype && l["vs_best_peer"].is_number())
            .map(|l| {
                let n = l["n"].as_u64().unwrap_or(1) as f64;
                (n.log2(), f(&l["vs_best_peer"]), l["vs_best_peer_min"].as_f64().unwrap_or(f(&l["vs_best_peer"])))
            })
            .collect()
    };
    let all: Vec<(f64, f64, f64)> = ["lead", "lead_warm"]
        .into_iter()
        .flat_map(|k| ["f32", "f16", "bf16"].into_iter().flat_map(move |d| series(k, d)))
        .collect();
    let lo = all.iter().map(|p| p.2).fold(1.0f64, f64::min) - 0.01;
    let hi = all.iter().map(|p| p.1).fold(1.0f64, f64::max) + 0.01;
    let (x0, x1) = (all.iter().map(|p| p.0).fold(16.0, f64::min), all.iter().map(|p| p.0).fold(28.0, f64::max));
    let title = format!("Automatic path vs the best of CUB and torch on {}", r["gpu"].as_str().unwrap_or("GPU"));
    svg(|root| {
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let mut c = builder(root, &title, 50, 70).build_cartesian_2d(x0 - 0.3..x1 + 0.3, lo..hi).map_err(e)?;
        c.configure_mesh()
            .x_desc("log2 n (elements)")
            .y_desc("GB/s ÷ best peer's GB/s (median of rounds; dots: worst round)")
            .draw()
            .map_err(e)?;
        c.draw_series(LineSeries::new([(x0 - 0.3, 1.0), (x1 + 0.3, 1.0)], BLACK.stroke_width(2))).map_err(e)?;
        for (i, dtype) in ["f32", "f16", "bf16"].into_iter().enumerate() {
            for (key, warm) in [("lead", false), ("lead_warm", true)] {
                let pts = series(key, dtype);
                if pts.is_empty() {
                    continue;
                }
                let col = color(i);
                let line: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
                let label = format!("{dtype} {}", if warm { "L2 warm" } else { "L2 cold" });
                if warm {
                    c.draw_series(DashedLineSeries::new(line, 8, 5, col.stroke_width(2)))
                        .map_err(e)?
                        .label(label)
                        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2)));
                } else {
                    c.draw_series(LineSeries::new(line, col.stroke_width(3)))
                        .map_err(e)?
                        .label(label)
                        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(3)));
                }
                c.draw_series(pts.iter().map(|p| Circle::new((p.0, p.2), 3, col.filled()))).map_err(e)?;
            }
        }
        c.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw().map_err(e)?;
        Ok(())
    })
}
