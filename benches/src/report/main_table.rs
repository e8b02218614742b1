//! The main sweep's table: every add variant at every n (or at one n), with the
//! peers and the ceiling beside it when the run measured them. The rows are
//! measured by [`super::sweep`].

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One kernel at one size of the main sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MainRow {
    pub kernel: String,
    /// Seed version (V1–V6), if any.
    pub v: Option<u8>,
    pub dtype: String,
    pub n: usize,
    pub block: u32,
    pub median_us: f64,
    pub gbps: f64,
    pub pct_peak: f64,
    pub pct_copy: f64,
    pub verified: bool,
    pub input_sets: usize,
    /// `DRAM`, or `L2-sized: inputs rotate`.
    pub cache: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_vs_torch: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cub_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_vs_cub: Option<f64>,
    /// Percent of the best streaming rate of the ceiling section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_stream: Option<f64>,
}

/// The table of all rows, or of the rows at n == `only_n`.
pub fn render(rows: &[MainRow], only_n: Option<usize>) -> String {
    let has_peers = rows.iter().any(|x| x.torch_gbps.is_some());
    let has_cub = rows.iter().any(|x| x.cub_gbps.is_some());
    let has_stream = rows.iter().any(|x| x.pct_stream.is_some());
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
    for row in rows.iter().filter(|r| only_n.is_none_or(|k| k == r.n)) {
        let v = row.v.map(|v| format!("V{v}")).unwrap_or("-".into());
        let _ = write!(
            s,
            "| {} | {} | 2^{} | {:.2} | {:.0} | {:.1} | {:.1} |",
            row.kernel,
            v,
            row.n.trailing_zeros(),
            row.median_us,
            row.gbps,
            row.pct_peak,
            row.pct_copy,
        );
        if has_stream {
            let _ = write!(s, " {:.1} |", row.pct_stream.unwrap_or(f64::NAN));
        }
        s.push_str(if row.verified { " ✓ |" } else { " ✗ |" });
        if has_peers {
            match row.torch_gbps {
                Some(t) => {
                    let _ = write!(s, " {:.0} | {:.2} |", t, row.ratio_vs_torch.unwrap_or(f64::NAN));
                }
                None => s.push_str(" - | - |"),
            }
        }
        if has_cub {
            match row.cub_gbps {
                Some(c) => {
                    let _ = write!(s, " {:.0} | {:.3} |", c, row.ratio_vs_cub.unwrap_or(f64::NAN));
                }
                None => s.push_str(" - | - |"),
            }
        }
        s.push('\n');
    }
    s
}
