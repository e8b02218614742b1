//! Add on the roofline (one FLOP per element), and the kernels' resources and
//! occupancy from the driver.

use std::fmt::Write as _;

use gpukern::{Dtype, Gpu, Variant};
use serde::{Deserialize, Serialize};

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

/// Add's arithmetic intensity against the FP32 add peak and the copy bandwidth.
pub fn rows(dtypes: &[Dtype], copy_gbps: f64, add_gflops: f64) -> Vec<RooflineRow> {
    dtypes
        .iter()
        .map(|d| {
            let ai = 1.0 / (3.0 * d.size() as f64);
            let mem_bound = ai * copy_gbps; // GFLOP/s the memory system allows
            RooflineRow {
                dtype: d.name().into(),
                flops_per_byte: ai,
                bandwidth_bound_gflops: mem_bound,
                fp32_add_peak_gflops: add_gflops,
                ridge_flops_per_byte: add_gflops / copy_gbps,
                memory_bound_by: add_gflops / mem_bound,
            }
        })
        .collect()
}

/// Registers, local and shared memory, and occupancy at `block` threads.
pub fn resources(gpu: &Gpu, variants: &[Variant], block: u32) -> gpukern::Result<Vec<KernelRow>> {
    let per_sm = gpu.info().max_threads_per_sm as f64;
    variants
        .iter()
        .map(|v| {
            let r = gpu.studies().kernel_resources(v.name())?;
            let blocks = gpu.studies().blocks_per_sm(v.name(), block)?;
            Ok(KernelRow {
                kernel: v.name().into(),
                registers: r.registers,
                local_bytes: r.local_bytes,
                shared_bytes: r.shared_bytes,
                block,
                blocks_per_sm: blocks,
                occupancy: (blocks * block) as f64 / per_sm,
            })
        })
        .collect()
}

pub fn render_resources(s: &mut String, rows: &[KernelRow], block: u32) {
    let _ = writeln!(s, "## Kernel resources at block {block} (driver's JIT of the sm_70 PTX)\n\n| kernel | registers | local bytes | blocks/SM | occupancy |\n|---|---:|---:|---:|---:|");
    for k in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0}% |",
            k.kernel,
            k.registers,
            k.local_bytes,
            k.blocks_per_sm,
            100.0 * k.occupancy
        );
    }
}

pub fn render(s: &mut String, rows: &[RooflineRow]) {
    let (peak, ridge) = rows.first().map_or((0.0, 0.0), |r| (r.fp32_add_peak_gflops, r.ridge_flops_per_byte));
    let _ = writeln!(s, "\n## Roofline\n\nOne add per element: arithmetic intensity 1/(3·size) FLOP/byte. The FP32 add peak ({peak:.0} GFLOP/s) over the copy bandwidth puts the ridge at {ridge:.1} FLOP/byte, far right of add.\n\n| dtype | FLOP/byte | bandwidth-bound GFLOP/s | compute peak GFLOP/s | memory-bound by |\n|---|---:|---:|---:|---:|");
    for k in rows {
        let _ = writeln!(
            s,
            "| {} | {:.4} | {:.0} | {:.0} | {:.0}× |",
            k.dtype, k.flops_per_byte, k.bandwidth_bound_gflops, k.fp32_add_peak_gflops, k.memory_bound_by
        );
    }
}
