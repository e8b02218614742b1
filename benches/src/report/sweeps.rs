//! The block-size and grid-size sweeps (measured in [`super::sweep`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gpukern::Variant;
use serde::{Deserialize, Serialize};

/// The widest variant with its grid capped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GridRow {
    pub kernel: String,
    pub n: usize,
    pub block: u32,
    pub max_grid: u32,
    /// `None` for the uncapped grid.
    pub blocks_per_sm_cap: Option<u32>,
    pub median_us: f64,
    pub gbps: f64,
    pub verified: bool,
}

/// One variant at one block size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlockRow {
    pub kernel: String,
    pub n: usize,
    pub block: u32,
    pub median_us: f64,
    pub gbps: f64,
    pub verified: bool,
    /// The block size the seed article used for this variant.
    pub seed_config: bool,
}

/// Every variant at every block size of the sweep, at n = `max_n`.
pub fn render_blocks(s: &mut String, rows: &[BlockRow], max_n: usize) {
    let _ = writeln!(
        s,
        "\n## Block-size sweep at n = 2^{} (GB/s; * = the seed article's configuration)\n",
        max_n.trailing_zeros()
    );
    let blocks = [32u32, 64, 128, 256, 512, 1024];
    let _ = writeln!(
        s,
        "| kernel | {} |\n|---|{}",
        blocks.map(|b| b.to_string()).join(" | "),
        "---:|".repeat(blocks.len())
    );
    let mut by_kernel: BTreeMap<&str, Vec<&BlockRow>> = BTreeMap::new();
    for k in rows {
        by_kernel.entry(&k.kernel).or_default().push(k);
    }
    for v in Variant::ALL {
        if let Some(cells) = by_kernel.get(v.name()) {
            let c: Vec<String> = blocks
                .iter()
                .map(|b| {
                    cells
                        .iter()
                        .find(|x| x.block == *b)
                        .map(|x| format!("{:.0}{}", x.gbps, if x.seed_config { "*" } else { "" }))
                        .unwrap_or("-".into())
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", v.name(), c.join(" | "));
        }
    }
}

/// The widest variants with their grids capped.
pub fn render_grid(s: &mut String, rows: &[GridRow]) {
    let _ = writeln!(s, "\n## Grid-size sweep, widest variants (GB/s; grid capped at k blocks per SM, grid-stride loop covers the rest)\n\n| kernel | n | 1 | 2 | 4 | 8 | 16 | 64 | uncapped |\n|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut by_kn: BTreeMap<(&str, usize), Vec<f64>> = BTreeMap::new();
    for k in rows {
        by_kn.entry((&k.kernel, k.n)).or_default().push(k.gbps);
    }
    for ((k, n), g) in &by_kn {
        let _ = writeln!(
            s,
            "| {k} | 2^{} | {} |",
            n.trailing_zeros(),
            g.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" | ")
        );
    }
}
