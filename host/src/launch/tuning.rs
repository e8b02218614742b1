//! How the bulk-copy kernels are tiled ([`BulkConfig`]) and the tuned automatic
//! choice ([`AutoPlan`]), both set from the report's tuning sweep on an H200.

use kernels_gpu::bulk::MAX_STAGES;
use kernels_gpu::Dtype;

use crate::device::context::DeviceInfo;
use crate::error::{Error, Result};
use crate::launch::variant::Variant;

/// Tiling of the bulk-copy variants: bytes per operand per tile and tiles in
/// flight per block (shared memory per block: `kernels_gpu::bulk::shared_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkConfig {
    /// Bytes of each operand per tile: a multiple of 16, 16..=2^18.
    pub tile_bytes: u32,
    /// Shared-memory slots per block, 1..=16.
    pub stages: u32,
}

impl Default for BulkConfig {
    /// One 4 KiB tile per operand per block, one block per tile: the best
    /// setting at the default 256 threads in the report's tuning sweep on an H200
    /// (one 16-byte pack per thread; pipelines of 2–4 stages in persistent
    /// blocks were 4–6% slower).
    fn default() -> Self {
        BulkConfig { tile_bytes: 4096, stages: 1 }
    }
}

/// How the automatic choice launches 16-byte aligned operands: kernel, block
/// size and (bulk kernels) tiling. The table is the report's tuning sweep on an
/// H200 (`results/nvidia-h200/report.md`, "Tuning sweep", and the lead
/// study's per-size sweep); block sizes other than the seed's 256 are only used
/// where those sweeps ran, on sm_90.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoPlan {
    /// The kernel.
    pub variant: Variant,
    /// Threads per block.
    pub block: u32,
    /// The tiling; used by the bulk-copy variants only.
    pub bulk: BulkConfig,
}

impl AutoPlan {
    /// From this many elements the bulk-copy kernels (f32, f16) lead on sm_90.
    pub const BULK_MIN: usize = 1 << 26;
    /// From this many elements 1024-thread blocks lead on sm_90.
    pub const WIDE_BLOCK_MIN: usize = 1 << 22;

    /// The plan for `n` aligned elements of `dtype`.
    ///
    /// On sm_90, bf16 uses the packed `add.rn.bf16x2` kernel at every size: the
    /// portable kernel rounds with integer instructions and issues 3.9× the
    /// instructions per warp (ncu at 2^20: 626,688 against 159,744), which costs
    /// up to 5% where launches are short.
    pub fn new(dtype: Dtype, n: usize, sm90: bool) -> AutoPlan {
        // One pack per thread: a 2 KiB tile per operand for 128 threads.
        let small_tiles = BulkConfig { tile_bytes: 2048, stages: 1 };
        let variant = if dtype == Dtype::Bf16 && sm90 { Variant::Bf16x8Sm90 } else { Variant::widest(dtype) };
        let plain = AutoPlan { variant, block: Self::pack_block(n, sm90), bulk: BulkConfig::default() };
        match dtype {
            Dtype::F32 if sm90 && n >= Self::BULK_MIN => {
                AutoPlan { variant: Variant::F32BulkSt, block: 128, bulk: small_tiles }
            }
            Dtype::F16 if sm90 && n >= Self::BULK_MIN => {
                AutoPlan { variant: Variant::F16Bulk, block: 128, bulk: small_tiles }
            }
            _ => plain,
        }
    }

    /// The block of add's one-pack-per-thread kernels at `n` elements: 1024
    /// threads from [`AutoPlan::WIDE_BLOCK_MIN`] on sm_90, else the seed's 256.
    pub fn pack_block(n: usize, sm90: bool) -> u32 {
        if sm90 && n >= Self::WIDE_BLOCK_MIN {
            1024
        } else {
            kernels_gpu::launch::DEFAULT_BLOCK
        }
    }

    /// The block of an element-wise operation's pack kernel (built-in or
    /// custom) that reads `inputs` arrays and uses `registers` per thread: add's
    /// block ([`AutoPlan::pack_block`]) for two-input kernels of at most 32
    /// registers, else 256.
    ///
    /// Measured on an H200 (reports at 51de167 and 407776b): with 1024-thread
    /// blocks the two-input operations gained 0.2–1% at 2^24–2^28, but the
    /// one-input ones (`neg`, `abs`, `relu`: a copy's read/write mix) lost 4–7%,
    /// the custom SiLU 8%, and f32 `div` (34 registers: a 1024-thread block then
    /// leaves half of an SM's 2048 threads idle) 14%.
    pub fn op_block(n: usize, sm90: bool, inputs: u32, registers: u32) -> u32 {
        if inputs == 2 && registers <= 32 {
            Self::pack_block(n, sm90)
        } else {
            kernels_gpu::launch::DEFAULT_BLOCK
        }
    }
    /// The most blocks an activation's pack kernel launches with `block`
    /// threads: one wave of resident threads (`sm_count × max_threads_per_sm`),
    /// whose grid-stride loop then takes several packs per thread.
    ///
    /// Why: one pack per thread pays the thread's set-up (parameters, special
    /// registers, the walk's index width and tail checks: about 40
    /// instructions) for 4 or 8 elements. ncu on the H200 at 2^24 counted
    /// 11.5 instructions per element for f32 `neg` and 5.75 for bf16, most of
    /// it set-up; the activations are bound by instruction issue, not memory,
    /// so that set-up is a quarter of bf16 `exp`'s 27 and of f32 `exp`'s 31.
    /// The memory-bound operations keep their tuned one-pack-per-thread grid.
    pub fn activation_max_grid(sm_count: u32, max_threads_per_sm: u32, block: u32) -> u32 {
        (sm_count * (max_threads_per_sm / block.max(1))).max(1)
    }

    /// Bytes per SM cycle ([`DeviceInfo::bytes_per_sm_cycle`]) from which the
    /// long activations are bound by instruction issue rather than by memory,
    /// so that capping their grid pays. Set between the two GPUs measured: the
    /// H200 (18.4) gains from the cap, the H100 (12.8) loses (see
    /// [`AutoPlan::caps_grid`]).
    pub const ISSUE_BOUND_BYTES_PER_SM_CYCLE: f64 = 16.0;

    /// Whether this device's memory outruns its instruction issue enough that
    /// arithmetic-heavy element-wise kernels take the capped grid
    /// ([`AutoPlan::activation_max_grid`]); the custom operations' proxy
    /// (registers) applies it too.
    pub fn issue_bound(info: &DeviceInfo) -> bool {
        info.bytes_per_sm_cycle() >= Self::ISSUE_BOUND_BYTES_PER_SM_CYCLE
    }

    /// Whether the automatic choice caps unary `op` on `dtype` at
    /// [`AutoPlan::activation_max_grid`] on the device `info`. The grid-stride
    /// loop has one pack in flight per thread at a time, so the cap trades
    /// memory parallelism for less set-up: it pays where the arithmetic
    /// dominates, which depends on the device's bytes per SM cycle
    /// ([`AutoPlan::issue_bound`]) as much as on the kernel. The report's
    /// element-wise section times the other grid beside the chosen one on
    /// every run, so each GPU's record shows the choice.
    ///
    /// H100 (12.8 bytes per SM cycle): one pack per thread won for most (the
    /// same SiLU lane rule ran at ×0.976 of `neg` in f32 on the full grid
    /// against ×0.883 capped, c92c8d5), the cap only for the longest
    /// ([`AutoPlan::caps_where_memory_bound`]).
    pub fn caps_grid(op: kernels_gpu::ops::UnaryOp, dtype: Dtype, info: &DeviceInfo) -> bool {
        if Self::issue_bound(info) {
            Self::caps_where_issue_bound(op, dtype)
        } else {
            Self::caps_where_memory_bound(op, dtype)
        }
    }

    /// Whether a user's element-wise operation ([`crate::CustomUnary`],
    /// [`crate::CustomBinary`]) on `dtype` takes the capped grid on `info`.
    /// One declared like a built-in activation
    /// ([`crate::CustomUnary::tuned_as`]) follows that activation's measured
    /// choice ([`AutoPlan::caps_grid`]), so the same lane rule launches the
    /// same way on every GPU. Any other uses a proxy: a pack kernel of more
    /// than [`AutoPlan::CUSTOM_ARITHMETIC_REGISTERS`] registers counts as
    /// arithmetic bound, capped where [`AutoPlan::issue_bound`] holds.
    pub fn custom_caps_grid(
        like: Option<kernels_gpu::ops::UnaryOp>,
        dtype: Dtype,
        pack_registers: u32,
        info: &DeviceInfo,
    ) -> bool {
        match like {
            Some(op) => Self::caps_grid(op, dtype, info),
            None => Self::issue_bound(info) && pack_registers > Self::CUSTOM_ARITHMETIC_REGISTERS,
        }
    }

    /// Registers per thread above which a custom pack kernel that declares no
    /// built-in twin counts as arithmetic bound ([`AutoPlan::custom_caps_grid`]).
    /// A proxy, and a coarse one: the worked example's f32 SiLU has 32
    /// registers, so it leaves that kernel on the full grid on the H200,
    /// where the library's `silu` is capped (hence `tuned_as`).
    pub const CUSTOM_ARITHMETIC_REGISTERS: u32 = 32;

    /// The activations whose capped grid won on the H100 (12.8 bytes per SM
    /// cycle), same run, the kernels of this PTX
    /// (`results/nvidia-h100-80gb-hbm3/session-2026-11-25c/ops-report.md`):
    /// only the longest, where the set-up saved outweighs the memory
    /// parallelism lost: f32 `gelu` and `gelu_tanh` (the full grid ×0.95 and
    /// ×0.93 of the capped one at 2^28), f16 `log`, `tanh` and `gelu` (×0.90,
    /// ×0.98, ×0.95) and bf16 `gelu` (×0.94). The full grid won for every
    /// other activation (capped ×0.86–0.97 of it at 2^28, bf16 `tanh` and
    /// `silu` within 3% either way).
    pub fn caps_where_memory_bound(op: kernels_gpu::ops::UnaryOp, dtype: Dtype) -> bool {
        use kernels_gpu::ops::UnaryOp::*;
        match dtype {
            Dtype::F32 => matches!(op, Gelu | GeluTanh),
            Dtype::F16 => matches!(op, Log | Tanh | Gelu),
            Dtype::Bf16 => matches!(op, Gelu),
        }
    }

    /// The activations whose capped grid won on the H200 (18.4 bytes per SM
    /// cycle), same run, n = 2^28, the kernels of this PTX (16-bit: 32
    /// registers, 8 blocks per SM; session 2026-11-25c): f32 `tanh`,
    /// `sigmoid`, `silu`, `gelu`, `gelu_tanh`, `rsqrt` (the full grid
    /// ×0.91–0.99 of the capped one); f16 `exp`, `log`, `tanh`, `gelu`,
    /// `gelu_tanh` and bf16 `exp`, `log`, `tanh`, `silu`, `gelu` (full
    /// ×0.87–0.98). The full grid won for the 16-bit `sigmoid` and `rsqrt`,
    /// f16 `silu` and bf16 `gelu_tanh` (capped ×0.90–0.95 of it: their SFU
    /// fast path is short enough that memory parallelism counts more), and for
    /// the short functions in f32 (`exp`, `log`, `sqrt`) and `sqrt` anywhere.
    pub fn caps_where_issue_bound(op: kernels_gpu::ops::UnaryOp, dtype: Dtype) -> bool {
        use kernels_gpu::ops::UnaryOp::*;
        match dtype {
            Dtype::F32 => matches!(op, Tanh | Sigmoid | Silu | Gelu | GeluTanh | Rsqrt),
            Dtype::F16 => matches!(op, Exp | Log | Tanh | Gelu | GeluTanh),
            Dtype::Bf16 => matches!(op, Exp | Log | Tanh | Silu | Gelu),
        }
    }
}

impl BulkConfig {
    /// Largest tile: both tiles of a slot count against one barrier phase, whose
    /// transaction count must stay below 2^20 bytes.
    pub const MAX_TILE_BYTES: u32 = 1 << 18;

    /// Errors unless the tiling is valid and fits in `shared_limit` bytes of
    /// shared memory per block.
    pub(crate) fn check(self, kernel: &'static str, bulk_store: bool, shared_limit: u32) -> Result<()> {
        let shape = |detail: String| Err(Error::Shape { kernel, detail });
        if self.tile_bytes == 0 || !self.tile_bytes.is_multiple_of(16) || self.tile_bytes > Self::MAX_TILE_BYTES {
            return shape(format!(
                "tile of {} bytes; must be a non-zero multiple of 16 up to {}",
                self.tile_bytes,
                Self::MAX_TILE_BYTES
            ));
        }
        if self.stages == 0 || self.stages > MAX_STAGES {
            return shape(format!("{} stages; must be 1..={MAX_STAGES}", self.stages));
        }
        let need = kernels_gpu::bulk::shared_bytes(self.tile_bytes, self.stages, bulk_store);
        if need > shared_limit as u64 {
            return shape(format!(
                "{} stages of {} {}-byte tiles need {need} bytes of shared memory per block; the device allows {shared_limit}",
                self.stages,
                if bulk_store { "three" } else { "two" },
                self.tile_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Hopper part with the driver's memory clock and bus width.
    fn hopper(memory_clock_khz: u64, bus_width_bits: u64) -> DeviceInfo {
        DeviceInfo {
            index: 0,
            name: "test".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            l2_bytes: 50 << 20,
            total_memory: 80 << 30,
            memory_clock_khz,
            bus_width_bits,
            max_threads_per_sm: 2048,
            registers_per_sm: 65536,
            sm_clock_khz: 1_980_000,
            driver_version: 13000,
            shared_per_block_optin: 227 * 1024,
        }
    }

    #[test]
    fn long_activations_cap_their_grid_at_one_resident_wave_where_issue_bound() {
        use kernels_gpu::ops::UnaryOp;
        // An H200: 132 SMs of 2048 threads, 256-thread blocks.
        assert_eq!(AutoPlan::activation_max_grid(132, 2048, 256), 1056);
        assert_eq!(AutoPlan::activation_max_grid(132, 2048, 4096), 1, "never zero");
        // The driver's figures of the two GPUs measured.
        let (h100, h200) = (hopper(2_619_000, 5120), hopper(3_201_000, 6016));
        assert!((h100.bytes_per_sm_cycle() - 12.83).abs() < 0.01, "{}", h100.bytes_per_sm_cycle());
        assert!((h200.bytes_per_sm_cycle() - 18.42).abs() < 0.01, "{}", h200.bytes_per_sm_cycle());
        assert!(AutoPlan::issue_bound(&h200) && !AutoPlan::issue_bound(&h100));
        let no_clock = DeviceInfo { sm_clock_khz: 0, ..h200.clone() };
        assert!(!AutoPlan::issue_bound(&no_clock), "an unknown clock keeps the full grid");
        for d in Dtype::ALL {
            let cap = |op| AutoPlan::caps_grid(op, d, &h200);
            assert!(cap(UnaryOp::Gelu) && cap(UnaryOp::Tanh));
            assert!(!cap(UnaryOp::Sqrt) && !cap(UnaryOp::Neg));
            assert_eq!(cap(UnaryOp::Exp), d != Dtype::F32);
            assert_eq!(cap(UnaryOp::Sigmoid), d == Dtype::F32);
            assert_eq!(cap(UnaryOp::Silu), d != Dtype::F16);
            let h100_cap = |op| AutoPlan::caps_grid(op, d, &h100);
            assert!(h100_cap(UnaryOp::Gelu) && !h100_cap(UnaryOp::Silu) && !h100_cap(UnaryOp::Sigmoid));
            assert_eq!(h100_cap(UnaryOp::Tanh), d == Dtype::F16);
        }
    }

    #[test]
    fn custom_operations_follow_the_activation_they_are_tuned_as() {
        use kernels_gpu::ops::UnaryOp;
        let (h100, h200) = (hopper(2_619_000, 5120), hopper(3_201_000, 6016));
        for d in Dtype::ALL {
            for info in [&h100, &h200] {
                for op in [UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::Sqrt, UnaryOp::Neg] {
                    for regs in [16, 32, 40] {
                        assert_eq!(
                            AutoPlan::custom_caps_grid(Some(op), d, regs, info),
                            AutoPlan::caps_grid(op, d, info),
                            "{op:?} {d:?} {regs} registers"
                        );
                    }
                }
                // Undeclared: the register proxy, only where issue bound.
                let issue = AutoPlan::issue_bound(info);
                assert!(!AutoPlan::custom_caps_grid(None, d, 32, info));
                assert_eq!(AutoPlan::custom_caps_grid(None, d, 33, info), issue);
            }
        }
        // The worked example's case: f32 SiLU at 32 registers is capped on the
        // H200 only when declared like the library's.
        assert!(AutoPlan::custom_caps_grid(Some(UnaryOp::Silu), Dtype::F32, 32, &h200));
        assert!(!AutoPlan::custom_caps_grid(None, Dtype::F32, 32, &h200));
        assert!(!AutoPlan::custom_caps_grid(Some(UnaryOp::Silu), Dtype::F32, 32, &h100));
    }

    #[test]
    fn bulk_config_limits() {
        let ok = |c: BulkConfig| c.check("k", false, 227 * 1024).is_ok();
        assert!(ok(BulkConfig::default()));
        assert!(ok(BulkConfig { tile_bytes: 16, stages: 1 }));
        assert!(!ok(BulkConfig { tile_bytes: 24, stages: 1 }));
        assert!(!ok(BulkConfig { tile_bytes: 0, stages: 1 }));
        assert!(!ok(BulkConfig { tile_bytes: 4096, stages: 0 }));
        assert!(!ok(BulkConfig { tile_bytes: 4096, stages: 17 }));
        assert!(!ok(BulkConfig { tile_bytes: 1 << 19, stages: 1 }));
        assert!(BulkConfig { tile_bytes: 32768, stages: 3 }.check("k", false, 227 * 1024).is_ok());
        // Wide blocks only for light two-input kernels, and only where add takes them.
        assert_eq!(AutoPlan::op_block(1 << 24, true, 2, 28), 1024);
        assert_eq!(AutoPlan::op_block(1 << 24, true, 2, 34), 256);
        assert_eq!(AutoPlan::op_block(1 << 24, true, 1, 26), 256);
        assert_eq!(AutoPlan::op_block(1 << 20, true, 2, 28), 256);
        assert_eq!(AutoPlan::op_block(1 << 24, false, 2, 28), 256);
        assert!(BulkConfig { tile_bytes: 32768, stages: 3 }.check("k", true, 227 * 1024).is_err());
        let e = BulkConfig { tile_bytes: 65536, stages: 2 }.check("k", false, 227 * 1024).unwrap_err();
        assert_eq!(
            e.to_string(),
            "k: 2 stages of two 65536-byte tiles need 262272 bytes of shared memory per block; the device allows 232448"
        );
    }
}
