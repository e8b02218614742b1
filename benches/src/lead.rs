//! The lead table: the automatic path against the best of CUB and torch, per
//! dtype and n >= 2^20, all measured in the same run with the same method.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One (dtype, n) of the lead table; `report.json`'s `lead` array.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeadRow {
    pub dtype: String,
    pub n: usize,
    /// The kernel the automatic path launched.
    pub kernel: String,
    /// The automatic path's GB/s (spin-isolated events, median, like the peers).
    pub gbps: f64,
    pub cub_gbps: Option<f64>,
    pub torch_gbps: Option<f64>,
    /// `gbps / max(cub_gbps, torch_gbps)`; `None` without peers.
    pub vs_best_peer: Option<f64>,
}

/// Joins the automatic path's measurements with the peers'.
pub fn rows(
    auto: &[(String, usize, String, f64)],
    cub: &BTreeMap<(String, usize), f64>,
    torch: &BTreeMap<(String, usize), f64>,
) -> Vec<LeadRow> {
    auto.iter()
        .filter(|(_, n, _, _)| *n >= 1 << 20)
        .map(|(d, n, k, g)| {
            let key = (d.clone(), *n);
            let (c, t) = (cub.get(&key).copied(), torch.get(&key).copied());
            let best = c.into_iter().chain(t).fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
            LeadRow {
                dtype: d.clone(),
                n: *n,
                kernel: k.clone(),
                gbps: *g,
                cub_gbps: c,
                torch_gbps: t,
                vs_best_peer: best.map(|b| g / b),
            }
        })
        .collect()
}

/// Markdown table of the rows whose n is in `only` (all rows when empty).
pub fn table(rows: &[LeadRow], only: &[usize], peak: f64) -> String {
    let mut s = String::new();
    let opt = |x: Option<f64>, digits: usize| x.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "-".into());
    let _ = writeln!(s, "| dtype | n | automatic path | GB/s | % peak | CUB GB/s | torch GB/s | vs best peer |");
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|");
    for r in rows.iter().filter(|r| only.is_empty() || only.contains(&r.n)) {
        let ratio = r.vs_best_peer.map(|v| if v >= 1.0 { format!("**{v:.3}**") } else { format!("{v:.3}") });
        let _ = writeln!(
            s,
            "| {} | 2^{} | {} | {:.0} | {:.1} | {} | {} | {} |",
            r.dtype,
            r.n.trailing_zeros(),
            r.kernel,
            r.gbps,
            100.0 * r.gbps / peak,
            opt(r.cub_gbps, 0),
            opt(r.torch_gbps, 0),
            ratio.unwrap_or_else(|| "-".into())
        );
    }
    s
}
