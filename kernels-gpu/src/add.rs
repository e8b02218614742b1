//! Element-wise add, `c[i] = a[i] + b[i]`, from naive to fastest.
//!
//! The family follows the seed article (V1 to V6) and adds bfloat16. What each
//! variant changes is about *instructions per byte*: every variant moves the same
//! `3 * n * size_of::<T>()` bytes, but wider accesses need fewer load/store
//! instructions to keep the memory system busy.
//!
//! | kernel            | V  | dtype | lanes | access | what changed                         |
//! |-------------------|----|-------|-------|--------|--------------------------------------|
//! | `add_f32`         | V1 | f32   | 1     | 4 B    | baseline: one element per thread     |
//! | `add_f32x4`       | V2 | f32   | 4     | 16 B   | one 128-bit load per operand         |
//! | `add_f16`         | V3 | f16   | 1     | 2 B    | half the bytes, `add.rn.f16`         |
//! | `add_f16x2`       | V4 | f16   | 2     | 4 B    | 32-bit accesses, `add.rn.f16x2`      |
//! | `add_f16x8`       | V5 | f16   | 8     | 4 B    | four half2 loads per operand, unrolled |
//! | `add_f16x8_pack`  | V6 | f16   | 8     | 16 B   | one 128-bit load for 8 halves        |
//! | `add_bf16`        | -  | bf16  | 1     | 2 B    | bf16 via f32, rounded once           |
//! | `add_bf16x2`      | -  | bf16  | 2     | 4 B    | 32-bit accesses                      |
//! | `add_bf16x8_pack` | -  | bf16  | 8     | 16 B   | one 128-bit load for 8 values        |
//! | `add_f32x4_cs`    | -  | f32   | 4     | 16 B   | V2 + evict-first (`.cs`) cache hints |
//! | `add_f16x8_cs`    | -  | f16   | 8     | 16 B   | V6 + evict-first (`.cs`) cache hints |
//! | `add_bf16x8_cs`   | -  | bf16  | 8     | 16 B   | bf16x8 pack + `.cs` cache hints      |
//! | `add_*_u2`, `_u4` | -  | all   | tile  | 16 B   | 2 or 4 packs per thread, all loads before any store |
//! | `add_*_nc`        | -  | all   | 8/4   | 16 B   | loads through the non-coherent path (`ld.global.nc`) |
//! | `add_*_l2`        | -  | all   | 8/4   | 16 B   | `ld.global.nc.L2::256B` (sm_90 module)          |
//! | `add_*_bulk`      | -  | all   | tile  | bulk   | Hopper bulk copies into shared memory ([`crate::bulk`]) |
//! | `add_bf16x8_sm90` | -  | bf16  | 8     | 16 B   | sm_90's `add.rn.bf16x2`: 4 instructions per pack, not the integer rounding (sm_90 module; [`crate::ops`]) |
//!
//! The `_cs` variants go past the seed: data that is touched once is marked
//! evict-first in L2 (`ld.global.cs` / `st.global.cs`), so the stream does not
//! displace other lines; whether that buys bandwidth is measured in the report.
//!
//! Every kernel takes the element count as `u64`, handles any `n` (the last,
//! partial lane group is done element by element) and walks the data with a
//! grid-stride loop, so a grid capped at `launch::MAX_GRID_X` still covers it.

use crate::Dtype;

/// Static facts about one add kernel, shared with the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddKernel {
    /// Entry-point name in the PTX.
    pub name: &'static str,
    /// Operand element type.
    pub dtype: Dtype,
    /// Elements one thread handles per lane group.
    pub lanes: u32,
    /// Width in bytes of one global load or store of one operand.
    pub access_bytes: u32,
    /// Loads per operand per full lane group.
    pub loads_per_group: u32,
    /// Version number in the seed article (V1..V6), if it has one.
    pub seed_version: Option<u8>,
    /// How the kernel moves data, which decides its parameters and grid.
    pub pattern: Pattern,
}

/// Access pattern of an add kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `(a, b, c, n)`: each thread loads its lane groups itself, grid-stride
    /// (`launch::grid_for`). In the portable sm_70 module.
    Lanes,
    /// `(a, b, c, n, tile_bytes, stages)`: tiles move by `cp.async.bulk` into
    /// dynamic shared memory ([`crate::bulk`]). In the sm_90 module only.
    BulkTiles {
        /// The sums go back to global memory by bulk copies too.
        bulk_store: bool,
    },
    /// `(a, b, c, n)`: as `Lanes` with 128-bit loads through the non-coherent
    /// path, `ld.global.nc` (`l2_256: false`, portable module), plus the
    /// `.L2::256B` prefetch hint (`l2_256: true`, sm_90 module: it needs sm_80).
    LoadHint {
        /// Adds `.L2::256B`.
        l2_256: bool,
    },
    /// `(a, b, c, n)`: whole tiles of `unroll × blockDim` 16-byte packs per
    /// block, every load of a thread issued before its first store
    /// (`gpukern_device::walk::for_each_unrolled`; grid:
    /// `launch::unrolled_grid`). In the portable module.
    Unrolled {
        /// Packs per thread per tile.
        unroll: u32,
    },
    /// `(a, b, c, n)`: as `Lanes` with sm_90's packed bf16 instructions and
    /// hardware rounding (the element-wise library's `PackSm90` kernel). In the
    /// sm_90 module.
    PackSm90,
}

impl AddKernel {
    /// True for the bulk-copy kernels.
    pub const fn is_bulk(&self) -> bool {
        matches!(self.pattern, Pattern::BulkTiles { .. })
    }

    /// True for the kernels of the sm_90 module (`ptx/kernels_gpu_sm90.ptx`).
    pub const fn needs_sm90(&self) -> bool {
        self.is_bulk() || matches!(self.pattern, Pattern::LoadHint { l2_256: true } | Pattern::PackSm90)
    }

    /// Byte alignment every operand pointer must have.
    pub const fn align(&self) -> usize {
        self.access_bytes as usize
    }
}

macro_rules! kernel_info {
    ($name:literal, $dtype:ident, $lanes:expr, $access:expr, $loads:expr, $v:expr) => {
        kernel_info!($name, $dtype, $lanes, $access, $loads, $v, Lanes)
    };
    ($name:literal, $dtype:ident, $lanes:expr, $access:expr, $loads:expr, $v:expr, $($pattern:tt)+) => {
        AddKernel {
            name: $name,
            dtype: Dtype::$dtype,
            lanes: $lanes,
            access_bytes: $access,
            loads_per_group: $loads,
            seed_version: $v,
            pattern: Pattern::$($pattern)+,
        }
    };
}

/// V1.
pub const ADD_F32: AddKernel = kernel_info!("add_f32", F32, 1, 4, 1, Some(1));
/// V2.
pub const ADD_F32X4: AddKernel = kernel_info!("add_f32x4", F32, 4, 16, 1, Some(2));
/// V3.
pub const ADD_F16: AddKernel = kernel_info!("add_f16", F16, 1, 2, 1, Some(3));
/// V4.
pub const ADD_F16X2: AddKernel = kernel_info!("add_f16x2", F16, 2, 4, 1, Some(4));
/// V5.
pub const ADD_F16X8: AddKernel = kernel_info!("add_f16x8", F16, 8, 4, 4, Some(5));
/// V6.
pub const ADD_F16X8_PACK: AddKernel = kernel_info!("add_f16x8_pack", F16, 8, 16, 1, Some(6));
/// bf16 scalar.
pub const ADD_BF16: AddKernel = kernel_info!("add_bf16", Bf16, 1, 2, 1, None);
/// bf16 pairs.
pub const ADD_BF16X2: AddKernel = kernel_info!("add_bf16x2", Bf16, 2, 4, 1, None);
/// bf16 pack of 8.
pub const ADD_BF16X8_PACK: AddKernel = kernel_info!("add_bf16x8_pack", Bf16, 8, 16, 1, None);

/// f32x4 with streaming cache hints.
pub const ADD_F32X4_CS: AddKernel = kernel_info!("add_f32x4_cs", F32, 4, 16, 1, None);
/// f16x8 pack with streaming cache hints.
pub const ADD_F16X8_CS: AddKernel = kernel_info!("add_f16x8_cs", F16, 8, 16, 1, None);
/// bf16x8 pack with streaming cache hints.
pub const ADD_BF16X8_CS: AddKernel = kernel_info!("add_bf16x8_cs", Bf16, 8, 16, 1, None);

/// f32x4, two packs per thread per tile, loads first.
pub const ADD_F32X4_U2: AddKernel = kernel_info!("add_f32x4_u2", F32, 4, 16, 1, None, Unrolled { unroll: 2 });
/// f32x4, four packs per thread per tile, loads first.
pub const ADD_F32X4_U4: AddKernel = kernel_info!("add_f32x4_u4", F32, 4, 16, 1, None, Unrolled { unroll: 4 });
/// f16x8, two packs per thread per tile.
pub const ADD_F16X8_U2: AddKernel = kernel_info!("add_f16x8_u2", F16, 8, 16, 1, None, Unrolled { unroll: 2 });
/// f16x8, four packs per thread per tile.
pub const ADD_F16X8_U4: AddKernel = kernel_info!("add_f16x8_u4", F16, 8, 16, 1, None, Unrolled { unroll: 4 });
/// bf16x8, two packs per thread per tile.
pub const ADD_BF16X8_U2: AddKernel = kernel_info!("add_bf16x8_u2", Bf16, 8, 16, 1, None, Unrolled { unroll: 2 });
/// bf16x8, four packs per thread per tile.
pub const ADD_BF16X8_U4: AddKernel = kernel_info!("add_bf16x8_u4", Bf16, 8, 16, 1, None, Unrolled { unroll: 4 });

/// f32x4 with `ld.global.nc` loads.
pub const ADD_F32X4_NC: AddKernel = kernel_info!("add_f32x4_nc", F32, 4, 16, 1, None, LoadHint { l2_256: false });
/// f16x8 with `ld.global.nc` loads.
pub const ADD_F16X8_NC: AddKernel = kernel_info!("add_f16x8_nc", F16, 8, 16, 1, None, LoadHint { l2_256: false });
/// bf16x8 with `ld.global.nc` loads.
pub const ADD_BF16X8_NC: AddKernel = kernel_info!("add_bf16x8_nc", Bf16, 8, 16, 1, None, LoadHint { l2_256: false });
/// f32x4 with `ld.global.nc.L2::256B` loads (sm_90 module).
pub const ADD_F32X4_L2: AddKernel = kernel_info!("add_f32x4_l2", F32, 4, 16, 1, None, LoadHint { l2_256: true });
/// f16x8 with `ld.global.nc.L2::256B` loads (sm_90 module).
pub const ADD_F16X8_L2: AddKernel = kernel_info!("add_f16x8_l2", F16, 8, 16, 1, None, LoadHint { l2_256: true });
/// bf16x8 with `ld.global.nc.L2::256B` loads (sm_90 module).
pub const ADD_BF16X8_L2: AddKernel = kernel_info!("add_bf16x8_l2", Bf16, 8, 16, 1, None, LoadHint { l2_256: true });

/// f32 through the bulk-copy engine (sm_90 module; lanes are the remainder's groups).
pub const ADD_F32_BULK: AddKernel = kernel_info!("add_f32_bulk", F32, 4, 16, 1, None, BulkTiles { bulk_store: false });
/// f16 through the bulk-copy engine.
pub const ADD_F16_BULK: AddKernel = kernel_info!("add_f16_bulk", F16, 8, 16, 1, None, BulkTiles { bulk_store: false });
/// bf16 through the bulk-copy engine.
pub const ADD_BF16_BULK: AddKernel =
    kernel_info!("add_bf16_bulk", Bf16, 8, 16, 1, None, BulkTiles { bulk_store: false });
/// f32 through the bulk-copy engine both ways.
pub const ADD_F32_BULK_ST: AddKernel =
    kernel_info!("add_f32_bulk_st", F32, 4, 16, 1, None, BulkTiles { bulk_store: true });
/// f16 through the bulk-copy engine both ways.
pub const ADD_F16_BULK_ST: AddKernel =
    kernel_info!("add_f16_bulk_st", F16, 8, 16, 1, None, BulkTiles { bulk_store: true });
/// bf16 through the bulk-copy engine both ways.
pub const ADD_BF16_BULK_ST: AddKernel =
    kernel_info!("add_bf16_bulk_st", Bf16, 8, 16, 1, None, BulkTiles { bulk_store: true });

/// bf16x8 with sm_90's `add.rn.bf16x2` (sm_90 module; the element-wise
/// library's kernel, [`crate::ops`]).
pub const ADD_BF16X8_SM90: AddKernel = kernel_info!("add_bf16x8_sm90", Bf16, 8, 16, 1, None, PackSm90);

/// Every add kernel: the seed's family by dtype, naive to fastest, then bf16,
/// then the cache-hint variants, the unrolled tile kernels, the Hopper
/// bulk-copy kernels and sm_90's bf16 pack kernel.
pub const ADD_KERNELS: [AddKernel; 31] = [
    ADD_F32,
    ADD_F32X4,
    ADD_F16,
    ADD_F16X2,
    ADD_F16X8,
    ADD_F16X8_PACK,
    ADD_BF16,
    ADD_BF16X2,
    ADD_BF16X8_PACK,
    ADD_F32X4_CS,
    ADD_F16X8_CS,
    ADD_BF16X8_CS,
    ADD_F32X4_U2,
    ADD_F32X4_U4,
    ADD_F16X8_U2,
    ADD_F16X8_U4,
    ADD_BF16X8_U2,
    ADD_BF16X8_U4,
    ADD_F32X4_NC,
    ADD_F16X8_NC,
    ADD_BF16X8_NC,
    ADD_F32X4_L2,
    ADD_F16X8_L2,
    ADD_BF16X8_L2,
    ADD_F32_BULK,
    ADD_F16_BULK,
    ADD_BF16_BULK,
    ADD_F32_BULK_ST,
    ADD_F16_BULK_ST,
    ADD_BF16_BULK_ST,
    ADD_BF16X8_SM90,
];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        for k in ADD_KERNELS {
            assert!(k.name.starts_with("add_") && k.name.contains(k.dtype.name()), "{}", k.name);
            assert_eq!(
                k.lanes as usize * k.dtype.size(),
                (k.access_bytes * k.loads_per_group) as usize,
                "{}: a lane group must be exactly the bytes its loads move",
                k.name
            );
        }
        let versions: std::vec::Vec<u8> = ADD_KERNELS.iter().filter_map(|k| k.seed_version).collect();
        assert_eq!(versions, [1, 2, 3, 4, 5, 6]);
        assert!(ADD_KERNELS.iter().all(|k| k.name.ends_with("_cs") == (k.name.contains("_cs"))));
    }
}
