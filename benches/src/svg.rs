//! A small dependency-free SVG line chart: GB/s against log2(n).

use std::fmt::Write;

/// One line of the chart.
pub struct Series {
    pub label: String,
    /// (log2 n, GB/s)
    pub points: Vec<(f64, f64)>,
}

/// A horizontal reference line.
pub struct Level {
    pub label: String,
    pub value: f64,
}

const COLORS: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#393b79", "#637939",
];

/// Renders the chart as an SVG document.
pub fn chart(title: &str, series: &[Series], levels: &[Level]) -> String {
    let (w, h) = (960.0, 560.0);
    let (left, right, top, bottom) = (70.0, 230.0, 40.0, 50.0);
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (xmin, xmax) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (xmin, xmax) = if xmin > xmax {
        (0.0, 1.0)
    } else if xmin == xmax {
        (xmin - 1.0, xmax + 1.0)
    } else {
        (xmin, xmax)
    };
    let ymax_data = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(levels.iter().map(|l| l.value))
        .fold(1.0, f64::max);
    let step = nice_step(ymax_data / 8.0);
    let ymax = (ymax_data / step).ceil() * step;
    let px = |x: f64| left + (x - xmin) / (xmax - xmin) * (w - left - right);
    let py = |y: f64| h - bottom - y / ymax * (h - top - bottom);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        (left + w - right) / 2.0,
        esc(title)
    );
    let mut y = 0.0;
    while y <= ymax + 1e-9 {
        let (x2, yy, tx) = (w - right, py(y), left - 6.0);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="#e5e5e5"/><text x="{tx}" y="{ty}" text-anchor="end">{y}</text>"##,
            ty = yy + 4.0
        );
        y += step;
    }
    let mut x = xmin.ceil();
    while x <= xmax {
        let _ = writeln!(
            s,
            r##"<line x1="{0}" x2="{0}" y1="{top}" y2="{1}" stroke="#f0f0f0"/><text x="{0}" y="{2}" text-anchor="middle">2^{3}</text>"##,
            px(x),
            h - bottom,
            h - bottom + 18.0,
            x
        );
        x += if xmax - xmin > 12.0 { 2.0 } else { 1.0 };
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">elements n (log2 scale)</text>"#,
        (left + w - right) / 2.0,
        h - 10.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">GB/s (3·n·size / kernel time)</text>"#,
        (top + h - bottom) / 2.0
    );
    for (i, l) in levels.iter().enumerate() {
        let (x2, yy, dash) = (w - right, py(l.value), if i == 0 { "6 3" } else { "2 3" });
        // Label inside the plot, just above its line at the left end, clear of the legend.
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="#444" stroke-dasharray="{dash}"/><text x="{tx}" y="{ty}" fill="#444">{label} ({value:.0})</text>"##,
            tx = left + 6.0,
            ty = yy - 4.0,
            label = esc(&l.label),
            value = l.value
        );
    }
    for (i, se) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<String> = se.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ = writeln!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#, pts.join(" "));
        let ly = top + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            w - right + 6.0,
            w - right + 26.0,
            w - right + 30.0,
            ly + 4.0,
            esc(&se.label)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.max(1e-9).log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_one_polyline_per_series_and_the_levels() {
        let s = chart(
            "t",
            &[
                Series { label: "a".into(), points: vec![(10.0, 1.0), (11.0, 2.0)] },
                Series { label: "b<c".into(), points: vec![(10.0, 3.0)] },
            ],
            &[Level { label: "peak".into(), value: 5.0 }],
        );
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("peak (5)") && s.contains("b&lt;c"));
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(430.0), 500.0);
    }
}
