//! Where the report's typed rows live: each section's module owns its rows and
//! renders them ([`super::main_table`], [`super::auto`], [`super::sweeps`],
//! [`super::launch`], [`super::cpu`], [`super::roofline`]); this module gathers
//! them for readers of `report.json` and holds the rows without a section module
//! of their own (torch.add, the seed-003 studies). `report.json` is their serde
//! serialisation; the newer sections carry their own rows ([`crate::report::lead`],
//! [`crate::foreach`], [`crate::hopper`], [`crate::ops`]).

use serde::{Deserialize, Serialize};

/// A JSON number, or NaN: what the renderers read rows' optional numbers with.
pub fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

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

pub use crate::studies::Study;

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

/// The device as the report describes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceFacts {
    pub index: usize,
    /// e.g. `9.0`.
    pub compute_capability: String,
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub memory_clock_khz: u64,
    pub bus_width_bits: u64,
    pub total_memory: u64,
    pub sm_clock_khz: u64,
}

/// The empty kernel's cost, µs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LaunchFloor {
    pub back_to_back: f64,
    pub launch_and_sync: f64,
}

/// The whole report: `report.json` is this struct's serde serialisation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub gpu: String,
    pub driver: String,
    pub git_commit: String,
    pub ptx_sha256: String,
    pub ptx_sm90_sha256: String,
    pub device: DeviceFacts,
    pub peak_gbps: f64,
    pub copy_gbps: f64,
    pub block: u32,
    pub launch_floor_us: LaunchFloor,
    pub kernels: Vec<KernelRow>,
    pub roofline: Vec<RooflineRow>,
    pub rows: Vec<MainRow>,
    pub auto: Vec<AutoRow>,
    pub block_sweep: Vec<BlockRow>,
    pub batched: Vec<BatchedRow>,
    pub grid_sweep: Vec<GridRow>,
    pub cpu: Vec<CpuRow>,
    pub peers: Vec<PeerRow>,
    pub peers_note: String,
    pub cub_note: String,
    /// Per dtype: CUB's output matched the references.
    pub cub_verified: std::collections::BTreeMap<String, bool>,
    /// Per dtype that failed: CUB's first differing element.
    pub cub_mismatch: std::collections::BTreeMap<String, String>,
    pub lead: Vec<crate::report::lead::LeadRow>,
    /// As `lead` with the inputs resident in L2 (no rotation), 2^16…2^22.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lead_warm: Vec<crate::report::lead::LeadRow>,
    pub foreach: Vec<crate::foreach::ForeachRow>,
    #[serde(default)]
    pub ops: Vec<crate::ops::OpRow>,
    /// User-defined operations (the worked example's) beside the built-in ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom: Vec<crate::custom::CustomRow>,
    /// The example's typed sum beside CUB's and torch's (under the custom table).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_sum: Vec<crate::sum::SumRow>,
    /// Chains of 16 dependent operations: plain, PDL, graphs, torch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chains: Vec<crate::report::chains::ChainRow>,
    /// Our copies beside the plain driver copies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<crate::report::copies::CopyRow>,
    /// The norms section (absent from reports before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub norms: Vec<crate::report::norms::NormRow>,
    /// The norms' plan study.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub norms_plans: Vec<crate::report::norms_study::NormPlanRow>,
    pub ceiling: Vec<crate::hopper::CeilingRow>,
    pub tuning: Vec<crate::hopper::TuneRow>,
    /// torch.matmul rows, as peers.py prints them.
    pub peer_matmul: Vec<serde_json::Value>,
    pub studies: Vec<Study>,
    pub failures: Vec<String>,
    pub elapsed_s: f64,
}
