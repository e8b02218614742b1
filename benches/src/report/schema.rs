//! Where the report's typed rows live: each section's module owns its rows and
//! renders them ([`super::main_table`], [`super::auto`], [`super::sweeps`],
//! [`super::launch`], [`super::cpu`], [`super::roofline`]); this module gathers
//! them for readers of `report.json` and holds the rows without a section module
//! of their own (torch.add, the seed-003 studies). `report.json` is their serde
//! serialisation; the newer sections carry their own rows ([`crate::lead`],
//! [`crate::foreach`], [`crate::hopper`], [`crate::ops`]).

use serde::{Deserialize, Serialize};

pub use super::auto::AutoRow;
pub use super::cpu::CpuRow;
pub use super::launch::BatchedRow;
pub use super::main_table::MainRow;
pub use super::roofline::{KernelRow, RooflineRow};
pub use super::sweeps::{BlockRow, GridRow};

/// torch.add at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerRow {
    pub dtype: String,
    pub n: usize,
    pub torch_gbps: f64,
}

/// One row of the seed-003 studies, by family.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum Study {
    Matmul {
        kernel: String,
        dtype: String,
        n: usize,
        m: usize,
        n_cols: usize,
        k: usize,
        median_us: f64,
        gflops: f64,
        speedup_vs_naive: f64,
        rel_error: f64,
        verified: bool,
    },
    CountEq {
        kernel: String,
        dtype: String,
        n: usize,
        match_rate: f64,
        block: u32,
        median_us: f64,
        gbps: f64,
        speedup_vs_naive: f64,
        count: u64,
        expected: u64,
        verified: bool,
    },
    Coalesce {
        kernel: String,
        stride: u64,
        dtype: String,
        n: usize,
        block: u32,
        median_us: f64,
        gbps: f64,
        slowdown_vs_stride_1: f64,
        verified: bool,
    },
    Transpose {
        kernel: String,
        dtype: String,
        n: usize,
        rows: usize,
        cols: usize,
        median_us: f64,
        gbps: f64,
        speedup_vs_naive: f64,
        verified: bool,
    },
    Fusion {
        kernel: String,
        dtype: String,
        n: usize,
        block: u32,
        median_us: f64,
        bytes_moved: usize,
        ideal_bytes: usize,
        gbps: f64,
        vs_ideal_time: f64,
        speedup_vs_unfused: f64,
        verified: bool,
    },
}

impl Study {
    /// True when the study's result was checked and right.
    pub fn verified(&self) -> bool {
        match self {
            Study::Matmul { verified, .. }
            | Study::CountEq { verified, .. }
            | Study::Coalesce { verified, .. }
            | Study::Transpose { verified, .. }
            | Study::Fusion { verified, .. } => *verified,
        }
    }

    /// (family, kernel) for messages.
    pub fn name(&self) -> (&'static str, &str) {
        match self {
            Study::Matmul { kernel, .. } => ("matmul", kernel),
            Study::CountEq { kernel, .. } => ("count_eq", kernel),
            Study::Coalesce { kernel, .. } => ("coalesce", kernel),
            Study::Transpose { kernel, .. } => ("transpose", kernel),
            Study::Fusion { kernel, .. } => ("fusion", kernel),
        }
    }
}
