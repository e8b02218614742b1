//! The loaded device: its context, the resolved kernels and the device's facts.
//! Shared by every handle, buffer and stream of one [`crate::Gpu`]; builds only on
//! `raw` and `error`, so `buffer` and `gpu` can both build on it without a circle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use gpukern_device::debug::{AssertRecord, ASSERT_DONE, ASSERT_SLOT};

use crate::raw::{Kernel, Live, MappedHost, PrimaryContext, RawFn, RawModule};

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

    /// Theoretical DRAM bytes per SM per SM clock cycle: how many bytes each
    /// SM must move per cycle to keep the memory busy, so how little issue
    /// time a memory-bound kernel has per byte. An H100 SXM has 12.8
    /// (3352 GB/s over 132 SMs at 1980 MHz), an H200 18.4 (4814 GB/s).
    pub fn bytes_per_sm_cycle(&self) -> f64 {
        let cycles = self.sm_count as f64 * self.sm_clock_khz as f64 * 1e3;
        if cycles > 0.0 {
            self.peak_gbps() * 1e9 / cycles
        } else {
            0.0
        }
    }

    /// Peak rate of independent f32 adds (one per lane per clock), in GFLOP/s.
    pub fn peak_fp32_add_gflops(&self) -> f64 {
        self.sm_count as f64 * self.fp32_lanes_per_sm() as f64 * self.sm_clock_khz as f64 * 1e3 / 1e9
    }
}

/// What every handle of one GPU shares.
pub(crate) struct Shared {
    pub(crate) ctx: Arc<PrimaryContext>,
    // Kept alive: the kernel handles below point into them (unloaded on drop,
    // while the context is live).
    pub(crate) _modules: Vec<RawModule>,
    pub(crate) funcs: HashMap<&'static str, Kernel>,
    pub(crate) info: DeviceInfo,
    /// The last kernel of a user module queued through this handle, named in
    /// [`Error::KernelFault`]: its interned id (`crate::device::names`, 0 for none),
    /// so a launch notes it with one atomic store.
    pub(crate) last_user_kernel: AtomicU32,
    /// Where a failing `gpu_assert!` of any module of this handle writes its
    /// record (mapped host memory: readable after the fault).
    pub(crate) assert_record: MappedHost,
}

/// Points module `m`'s assert slot at `record`, when the module has one.
pub(crate) fn connect_asserts(m: &RawModule, record: &MappedHost) -> Result<()> {
    m.write_global_u64(ASSERT_SLOT, record.device_addr()).map(|_| ())
}

impl Shared {
    /// Makes this context current on the calling thread when it is not (no
    /// lock: one atomic add that counts the call in and checks liveness, and
    /// one driver query). Refuses a context that was reset, or is being
    /// reset: [`Error::DeviceReset`]. Hold the guard across the driver calls
    /// that follow: a reset waits for it.
    pub(crate) fn bind(&self) -> Result<Live<'_>> {
        self.ctx.bind()
    }

    /// A kernel of the library's modules, resolved at load.
    pub(crate) fn kernel(&self, name: &'static str) -> Result<&Kernel> {
        self.funcs.get(name).ok_or(Error::MissingKernel {
            kernel: name,
            source: crate::error::DriverError {
                code: 500,
                name: "CUDA_ERROR_NOT_FOUND".into(),
                message: "not resolved at load".into(),
            },
        })
    }

    /// The function handle of [`Shared::kernel`].
    pub(crate) fn func(&self, name: &'static str) -> Result<RawFn> {
        self.kernel(name).map(|k| k.func)
    }

    /// Notes a user kernel queued now (for the fault report): no lock, and no
    /// store when it is the same as last time (the cache line stays shared).
    pub(crate) fn note_user_kernel(&self, name: crate::device::names::Name) {
        if self.last_user_kernel.load(Ordering::Relaxed) != name.id {
            self.last_user_kernel.store(name.id, Ordering::Relaxed);
        }
    }

    /// `e` as the fault it reports, when it is one: a failed wait
    /// (`KernelFault` without a kernel, from raw) or a driver call refused
    /// because an earlier kernel faulted (the sticky codes, e.g.
    /// `CUDA_ERROR_ILLEGAL_ADDRESS`), which other threads meet first in
    /// their own calls. Other errors pass through.
    pub(crate) fn fault_of(&self, e: Error) -> Error {
        // The errors after which the context is unusable: ILLEGAL_ADDRESS
        // (700), LAUNCH_TIMEOUT (702), ASSERT (710), HARDWARE_STACK_ERROR
        // (714), ILLEGAL_INSTRUCTION (715), MISALIGNED_ADDRESS (716),
        // INVALID_ADDRESS_SPACE (717), INVALID_PC (718), LAUNCH_FAILED (719).
        let sticky = |code: u32| matches!(code, 700 | 702 | 710 | 714..=719);
        match e {
            Error::KernelFault { kernel: None, source } => self.fault(source),
            Error::Driver { source, .. } if sticky(source.code) => self.fault(source),
            e => e,
        }
    }

    /// A synchronisation failure as [`Error::KernelFault`], naming the last
    /// user kernel, or as [`Error::KernelAssert`] when a `gpu_assert!` left its
    /// record. Callable without the caller's guard: the record is read under
    /// its own (`MappedHost::read`), since a reset frees it; once a reset has
    /// begun the fault is reported without it.
    pub(crate) fn fault(&self, source: crate::error::DriverError) -> Error {
        let kernel = crate::device::names::name_of(self.last_user_kernel.load(Ordering::Relaxed)).map(String::from);
        match self.assert_record.read::<AssertRecord>() {
            Some(r) if r.state == ASSERT_DONE => {
                let text = |b: &[u8]| {
                    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                    String::from_utf8_lossy(&b[..end]).into_owned()
                };
                Error::KernelAssert(Box::new(crate::error::AssertFailure {
                    kernel,
                    file: text(&r.file),
                    line: r.line,
                    message: text(&r.message),
                    block: r.block,
                    thread: r.thread,
                    source,
                }))
            }
            _ => Error::KernelFault { kernel, source },
        }
    }
}
