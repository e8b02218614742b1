//! The loaded device: its context, the resolved kernels and the device's facts.
//! Shared by every handle, buffer and stream of one [`crate::Gpu`]; builds only on
//! `raw` and `error`, so `buffer` and `gpu` can both build on it without a circle.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::raw::{PrimaryContext, RawFn, RawModule};

/// Resets per device ordinal: a handle made before the latest [`crate::Gpu::reset`]
/// of its device is dead (its context, memory and modules were destroyed).
fn resets() -> &'static Mutex<HashMap<usize, u64>> {
    static RESETS: OnceLock<Mutex<HashMap<usize, u64>>> = OnceLock::new();
    RESETS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The reset count of device `index` now.
pub(crate) fn generation(index: usize) -> u64 {
    resets().lock().map(|m| m.get(&index).copied().unwrap_or(0)).unwrap_or(0)
}

/// Counts one more reset of device `index`; returns the new count.
pub(crate) fn bump_generation(index: usize) -> u64 {
    let mut m = resets().lock().unwrap_or_else(|p| p.into_inner());
    let g = m.entry(index).or_insert(0);
    *g += 1;
    *g
}

/// Facts about the device, read from the driver.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// CUDA ordinal.
    pub index: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache size in bytes.
    pub l2_bytes: u64,
    /// Device memory in bytes.
    pub total_memory: u64,
    /// Peak memory clock in kHz.
    pub memory_clock_khz: u64,
    /// Memory bus width in bits.
    pub bus_width_bits: u64,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Peak SM clock in kHz.
    pub sm_clock_khz: u64,
    /// CUDA version the driver supports, e.g. 13000 for 13.0.
    pub driver_version: i32,
    /// Most dynamic shared memory one block may use once a kernel opts in, bytes.
    pub shared_per_block_optin: u32,
}

impl DeviceInfo {
    /// True when the Hopper module is loaded (compute capability 9.0 or later), so
    /// the bulk-copy variants can run.
    pub fn has_sm90(&self) -> bool {
        self.compute_capability.0 >= 9
    }
}

impl DeviceInfo {
    /// Theoretical DRAM bandwidth in GB/s (10^9 bytes): 2 transfers per memory clock
    /// (double data rate) times the bus width in bytes.
    pub fn peak_gbps(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * (self.bus_width_bits as f64 / 8.0) / 1e9
    }

    /// FP32 lanes per SM by architecture: 64 on sm_70 and sm_80, 128 on sm_86 and
    /// later (Ampere consumer parts, Ada, Hopper).
    pub fn fp32_lanes_per_sm(&self) -> u32 {
        match self.compute_capability {
            (7, _) | (8, 0) => 64,
            _ => 128,
        }
    }

    /// Peak rate of independent f32 adds (one per lane per clock), in GFLOP/s.
    pub fn peak_fp32_add_gflops(&self) -> f64 {
        self.sm_count as f64 * self.fp32_lanes_per_sm() as f64 * self.sm_clock_khz as f64 * 1e3 / 1e9
    }
}

/// What every handle of one GPU shares.
pub(crate) struct Shared {
    pub(crate) ctx: PrimaryContext,
    // Kept alive: the RawFn handles below point into them.
    pub(crate) modules: Vec<RawModule>,
    pub(crate) funcs: HashMap<&'static str, RawFn>,
    pub(crate) info: DeviceInfo,
    /// The device's reset count when this was made (see [`generation`]).
    pub(crate) generation: u64,
    /// The last kernel of a user module queued through this handle, named in
    /// [`Error::KernelFault`].
    pub(crate) last_user_kernel: Mutex<Option<String>>,
}

impl Shared {
    /// False once the device was reset after this was made.
    pub(crate) fn is_live(&self) -> bool {
        generation(self.info.index) == self.generation
    }

    /// Makes this context current on the calling thread (cheap; done before every
    /// driver call so any thread can use any handle). Refuses a reset context.
    pub(crate) fn bind(&self) -> Result<()> {
        if !self.is_live() {
            return Err(Error::DeviceReset { what: "Gpu" });
        }
        self.ctx.set_current()
    }

    pub(crate) fn func(&self, name: &'static str) -> Result<RawFn> {
        self.funcs.get(name).copied().ok_or(Error::MissingKernel {
            name,
            source: crate::error::DriverError {
                code: 500,
                name: "CUDA_ERROR_NOT_FOUND".into(),
                message: "not resolved at load".into(),
            },
        })
    }

    /// Notes a user kernel queued now (for the fault report).
    pub(crate) fn note_user_kernel(&self, name: &str) {
        if let Ok(mut k) = self.last_user_kernel.lock() {
            *k = Some(name.to_string());
        }
    }

    /// A synchronisation failure as [`Error::KernelFault`], naming the last
    /// user kernel.
    pub(crate) fn fault(&self, source: crate::error::DriverError) -> Error {
        let kernel = self.last_user_kernel.lock().ok().and_then(|k| k.clone());
        Error::KernelFault { kernel, source }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // After a reset the modules died with the old context; unloading them
        // again could hit a new module at the same handle.
        if self.is_live() && self.ctx.set_current().is_ok() {
            for m in &self.modules {
                m.unload();
            }
        }
        // The context's retain is released by PrimaryContext's Drop either way.
    }
}
