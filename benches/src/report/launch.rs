//! Launch-bound sizes: what one add costs alone, back to back and replayed from
//! a CUDA graph (measured in [`super::sweep`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// What one add costs at a launch-bound size, four ways.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchedRow {
    pub kernel: String,
    pub n: usize,
    pub kernel_us: f64,
    pub single_us: f64,
    pub batched_us_per_op: f64,
    pub graph_us_per_op: f64,
    pub kernel_gbps: f64,
    pub single_gbps: f64,
    pub batched_gbps: f64,
    pub graph_gbps: f64,
}

pub fn render(s: &mut String, rows: &[BatchedRow]) {
    let _ = writeln!(s, "\n## Launch-bound sizes: µs per add\n\nkernel only = spin-isolated event time (as in the tables above); single launch = event time on an idle GPU, so it includes the launch path; back-to-back = 100 launches on one stream; graph = 100 adds captured in one CUDA graph and replayed.\n\n| kernel | n | kernel only | single launch | back-to-back | graph | graph GB/s |\n|---|---|---:|---:|---:|---:|---:|");
    for k in rows {
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |",
            k.kernel,
            k.n.trailing_zeros(),
            k.kernel_us,
            k.single_us,
            k.batched_us_per_op,
            k.graph_us_per_op,
            k.graph_gbps
        );
    }
}
