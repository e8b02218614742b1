//! The add variants, one per kernel of `kernels_gpu::add`, and launch settings.

use kernels_gpu::add::{AddKernel, Pattern, ADD_KERNELS};
use kernels_gpu::launch::{DEFAULT_BLOCK, MAX_BLOCK, MAX_GRID_X};
use kernels_gpu::Dtype;

use crate::error::{Error, Result};

/// One add kernel. The order matches `kernels_gpu::add::ADD_KERNELS`: by dtype,
/// naive to fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// V1: f32, one element per thread.
    F32,
    /// V2: f32x4, 128-bit accesses.
    F32x4,
    /// V3: f16 scalar.
    F16,
    /// V4: f16x2, 32-bit accesses, packed add.
    F16x2,
    /// V5: f16x8, four 32-bit loads per operand.
    F16x8,
    /// V6: f16x8 pack, one 128-bit load per operand.
    F16x8Pack,
    /// bf16 scalar.
    Bf16,
    /// bf16x2, 32-bit accesses.
    Bf16x2,
    /// bf16x8 pack, 128-bit accesses.
    Bf16x8Pack,
    /// f32x4 with evict-first (`.cs`) loads and store.
    F32x4Cs,
    /// f16x8 pack with evict-first (`.cs`) loads and store.
    F16x8Cs,
    /// bf16x8 pack with evict-first (`.cs`) loads and store.
    Bf16x8Cs,
    /// f32x4, two packs per thread per tile, all loads before any store.
    F32x4U2,
    /// f32x4, four packs per thread per tile.
    F32x4U4,
    /// f16x8, two packs per thread per tile.
    F16x8U2,
    /// f16x8, four packs per thread per tile.
    F16x8U4,
    /// bf16x8, two packs per thread per tile.
    Bf16x8U2,
    /// bf16x8, four packs per thread per tile.
    Bf16x8U4,
    /// f32x4 with `ld.global.nc` loads.
    F32x4Nc,
    /// f16x8 with `ld.global.nc` loads.
    F16x8Nc,
    /// bf16x8 with `ld.global.nc` loads.
    Bf16x8Nc,
    /// f32x4 with `ld.global.nc.L2::256B` loads (sm_90 module only).
    F32x4L2,
    /// f16x8 with `ld.global.nc.L2::256B` loads (sm_90 module only).
    F16x8L2,
    /// bf16x8 with `ld.global.nc.L2::256B` loads (sm_90 module only).
    Bf16x8L2,
    /// f32 through Hopper's bulk-copy engine (sm_90 module only).
    F32Bulk,
    /// f16 through the bulk-copy engine (sm_90 module only).
    F16Bulk,
    /// bf16 through the bulk-copy engine (sm_90 module only).
    Bf16Bulk,
    /// f32 through the bulk-copy engine both ways (loads and write-back).
    F32BulkSt,
    /// f16 through the bulk-copy engine both ways.
    F16BulkSt,
    /// bf16 through the bulk-copy engine both ways.
    Bf16BulkSt,
    /// bf16x8 pack with sm_90's `add.rn.bf16x2` (sm_90 module only).
    Bf16x8Sm90,
}

impl Variant {
    /// Every variant, in kernel-table order.
    pub const ALL: [Variant; 31] = [
        Variant::F32,
        Variant::F32x4,
        Variant::F16,
        Variant::F16x2,
        Variant::F16x8,
        Variant::F16x8Pack,
        Variant::Bf16,
        Variant::Bf16x2,
        Variant::Bf16x8Pack,
        Variant::F32x4Cs,
        Variant::F16x8Cs,
        Variant::Bf16x8Cs,
        Variant::F32x4U2,
        Variant::F32x4U4,
        Variant::F16x8U2,
        Variant::F16x8U4,
        Variant::Bf16x8U2,
        Variant::Bf16x8U4,
        Variant::F32x4Nc,
        Variant::F16x8Nc,
        Variant::Bf16x8Nc,
        Variant::F32x4L2,
        Variant::F16x8L2,
        Variant::Bf16x8L2,
        Variant::F32Bulk,
        Variant::F16Bulk,
        Variant::Bf16Bulk,
        Variant::F32BulkSt,
        Variant::F16BulkSt,
        Variant::Bf16BulkSt,
        Variant::Bf16x8Sm90,
    ];

    /// The kernel's static facts, shared with the device code.
    pub const fn kernel(self) -> &'static AddKernel {
        &ADD_KERNELS[self as usize]
    }

    /// PTX entry name, e.g. `add_f16x8_pack`.
    pub const fn name(self) -> &'static str {
        self.kernel().name
    }

    /// Element type.
    pub const fn dtype(self) -> Dtype {
        self.kernel().dtype
    }

    /// Elements per thread per step.
    pub const fn lanes(self) -> u32 {
        self.kernel().lanes
    }

    /// Bytes per global access of one operand.
    pub const fn access_bytes(self) -> u32 {
        self.kernel().access_bytes
    }

    /// Required operand alignment in bytes.
    pub const fn align(self) -> usize {
        self.kernel().align()
    }

    /// V-number in the seed article, if any.
    pub const fn seed_version(self) -> Option<u8> {
        self.kernel().seed_version
    }

    /// Looks a variant up by kernel name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The variants of one dtype, naive to fastest.
    pub fn of_dtype(dtype: Dtype) -> impl Iterator<Item = Variant> {
        Self::ALL.into_iter().filter(move |v| v.dtype() == dtype)
    }

    /// True for the evict-first (`_cs`) study variants. The report measured no
    /// gain from the hint on an H200 (within 0.1% at 2^28), so the automatic
    /// choice keeps to the seed's plain 128-bit variants.
    pub const fn is_cache_hint_study(self) -> bool {
        matches!(self, Variant::F32x4Cs | Variant::F16x8Cs | Variant::Bf16x8Cs)
    }

    /// True for the Hopper bulk-copy kernels (sm_90 module; launched with a
    /// [`crate::BulkConfig`]).
    pub const fn is_bulk(self) -> bool {
        self.kernel().is_bulk()
    }

    /// True for the kernels of the sm_90 module (bulk copies, `.L2::256B`,
    /// packed bf16).
    pub const fn needs_sm90(self) -> bool {
        self.kernel().needs_sm90()
    }

    /// True for the bulk-copy kernels that also write back by bulk copies.
    pub const fn bulk_store(self) -> bool {
        matches!(self.kernel().pattern, Pattern::BulkTiles { bulk_store: true })
    }

    /// Packs per thread per tile of the unrolled tile kernels, `None` for the others.
    pub const fn unroll(self) -> Option<u32> {
        match self.kernel().pattern {
            Pattern::Unrolled { unroll } => Some(unroll),
            _ => None,
        }
    }

    /// The bulk-copy variant of `dtype`.
    pub fn bulk(dtype: Dtype) -> Variant {
        Self::of_dtype(dtype).find(|v| v.is_bulk()).unwrap_or(Variant::F32Bulk)
    }

    /// The per-thread variants the alignment-based choice picks from for
    /// `dtype`, narrow to wide (the seed's family: no cache-hint study, no
    /// unrolled tile or bulk kernel).
    fn auto_candidates(dtype: Dtype) -> impl Iterator<Item = Variant> {
        Self::of_dtype(dtype).filter(|v| !v.is_cache_hint_study() && v.kernel().pattern == Pattern::Lanes)
    }

    /// The fastest variant of `dtype` whose alignment every address meets. The
    /// scalar variant always qualifies, since addresses of `T` are `T`-aligned.
    pub fn widest_for(dtype: Dtype, addrs: &[u64]) -> Variant {
        let mut best = None::<Variant>;
        for v in Self::auto_candidates(dtype) {
            if addrs.iter().all(|a| a % v.align() as u64 == 0) {
                // Later variants in the table are faster: wider accesses or more
                // elements per thread at the same alignment.
                best = Some(v);
            }
        }
        best.unwrap_or(Self::of_dtype(dtype).next().unwrap_or(Variant::F32))
    }

    /// The widest per-thread variant of `dtype` regardless of alignment (what the
    /// automatic choice uses on aligned operands where `AutoPlan` does not pick a
    /// bulk kernel): `add_f32x4`, `add_f16x8_pack`, `add_bf16x8_pack`.
    pub fn widest(dtype: Dtype) -> Variant {
        Self::auto_candidates(dtype).last().unwrap_or(Variant::F32)
    }

    /// The one-element-per-thread variant of `dtype`.
    pub fn scalar(dtype: Dtype) -> Variant {
        Self::of_dtype(dtype).next().unwrap_or(Variant::F32)
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape of a launch: threads per block and a cap on the grid (the
/// kernels' grid-stride walks cover any `n` with any grid). Not cudarc's
/// `LaunchConfig` (grid, block and shared memory of one raw launch, which is
/// [`crate::Launch`] here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Threads per block, 1..=1024. Default 256.
    pub block: u32,
    /// Most blocks to launch; the kernels' grid-stride loops cover the rest.
    /// Default `MAX_GRID_X` (2^31 - 1), the hardware limit.
    pub max_grid: u32,
}

impl Default for LaunchShape {
    fn default() -> Self {
        LaunchShape { block: DEFAULT_BLOCK, max_grid: MAX_GRID_X }
    }
}

impl LaunchShape {
    /// Default settings with another block size.
    pub fn with_block(block: u32) -> Self {
        LaunchShape { block, ..Self::default() }
    }

    /// Errors unless the block size and the grid cap are within the hardware
    /// limits; `kernel` names the launch in the error.
    pub(crate) fn check(self, kernel: &'static str) -> Result<()> {
        if self.block == 0 || self.block > MAX_BLOCK {
            return Err(Error::BlockSize { kernel, block: self.block, max: MAX_BLOCK });
        }
        if self.max_grid == 0 || self.max_grid > MAX_GRID_X {
            return Err(Error::GridLimit { kernel, max_grid: self.max_grid, limit: MAX_GRID_X });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_follow_the_kernel_table() {
        for (v, k) in Variant::ALL.iter().zip(ADD_KERNELS.iter()) {
            assert_eq!(v.name(), k.name);
            assert_eq!(Variant::from_name(k.name), Some(*v));
        }
    }

    #[test]
    fn widest_for_respects_alignment() {
        assert_eq!(Variant::widest_for(Dtype::F32, &[0, 16, 32]), Variant::F32x4);
        assert_eq!(Variant::widest_for(Dtype::F32, &[0, 20, 32]), Variant::F32);
        assert_eq!(Variant::widest_for(Dtype::F16, &[0, 16, 48]), Variant::F16x8Pack);
        assert_eq!(Variant::widest_for(Dtype::F16, &[4, 16, 48]), Variant::F16x8);
        assert_eq!(Variant::widest_for(Dtype::F16, &[2, 16, 48]), Variant::F16);
        assert_eq!(Variant::widest_for(Dtype::Bf16, &[8, 16, 48]), Variant::Bf16x2);
        assert_eq!(Variant::widest(Dtype::Bf16), Variant::Bf16x8Pack);
        assert_eq!(Variant::scalar(Dtype::F16), Variant::F16);
        assert_eq!(Variant::widest(Dtype::F32), Variant::F32x4);
        assert_eq!(Variant::bulk(Dtype::Bf16), Variant::Bf16Bulk);
    }
}
