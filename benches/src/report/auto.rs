//! The automatic choice against the best explicit variant (measured in
//! [`super::sweep`], interleaved so drift hits both alike).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// The automatic choice against the best explicit variant, timed interleaved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AutoRow {
    pub dtype: String,
    pub n: usize,
    pub chosen: String,
    pub median_us: f64,
    pub gbps: f64,
    pub verified: bool,
    pub best_kernel: String,
    pub best_gbps: f64,
    pub auto_vs_best_pct: f64,
}

pub fn render(s: &mut String, rows: &[AutoRow]) {
    let _ = writeln!(s, "\n## Automatic choice vs the best variant\n\n| dtype | n | chose | GB/s | best | best GB/s | auto/best |\n|---|---|---|---:|---|---:|---:|");
    for k in rows {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {} | {:.0} | {} | {:.0} | {:.1}% |",
            k.dtype,
            k.n.trailing_zeros(),
            k.chosen,
            k.gbps,
            k.best_kernel,
            k.best_gbps,
            k.auto_vs_best_pct
        );
    }
}
