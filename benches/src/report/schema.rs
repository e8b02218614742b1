//! The typed rows of the report's older sections (main sweep, automatic choice,
//! launch-bound sizes, grid and block sweeps, CPU baseline, kernel resources,
//! roofline, torch.add, seed-003 studies). `report.json` is their serde
//! serialisation; the newer sections carry their own rows ([`crate::lead`],
//! [`crate::foreach`], [`crate::hopper`], [`crate::ops`]).

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

/// The CPU baseline at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CpuRow {
    pub dtype: String,
    pub n: usize,
    pub cpu_1t_gbps: f64,
    pub cpu_all_gbps: f64,
    pub threads: usize,
    pub method: String,
    pub verified: bool,
    pub gpu_best_gbps: f64,
    pub speedup_vs_1t: f64,
    pub speedup_vs_all: f64,
}

/// A kernel's resources after the driver's JIT, and its occupancy.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelRow {
    pub kernel: String,
    pub registers: u32,
    pub local_bytes: u32,
    pub shared_bytes: u32,
    pub block: u32,
    pub blocks_per_sm: u32,
    pub occupancy: f64,
}

/// Add on the roofline, per dtype.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RooflineRow {
    pub dtype: String,
    pub flops_per_byte: f64,
    pub bandwidth_bound_gflops: f64,
    pub fp32_add_peak_gflops: f64,
    pub ridge_flops_per_byte: f64,
    pub memory_bound_by: f64,
}

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
