//! Add with Hopper's bulk-copy engine: the entry points of the bulk-copy walk
//! ([`gpukern_device::bulk`], whose docs describe the walk, the write-back and the
//! shared-memory layout) instantiated with `Add`, and the `.L2::256B` load-hint
//! kernels. All are in the sm_90 module.

pub use gpukern_device::bulk::{shared_bytes, BARRIER_BYTES, MAX_STAGES};

/// Blocks to launch for `n` elements: one per whole tile, or enough threads for
/// the remainder's lane groups if that is more, capped at `max_grid`. 0 only for
/// `n = 0`.
pub const fn grid_for(n: u64, elem_bytes: u32, tile_bytes: u32, block: u32, max_grid: u32) -> u32 {
    let tile = (tile_bytes / elem_bytes) as u64;
    let tiles = n / tile;
    let rest = n - tiles * tile;
    let rest_blocks = gpukern_device::launch::grid_for(rest, 16 / elem_bytes, block, max_grid) as u64;
    let blocks = if tiles > rest_blocks { tiles } else { rest_blocks };
    if blocks > max_grid as u64 {
        max_grid
    } else {
        blocks as u32
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod kernels {
    use gpukern_device::bulk::bulk_map;
    use gpukern_device::lanes::{Add, Bf16, F16, F32};
    use gpukern_device::patterns::{pack, NC_L2};

    /// Declares the bulk-copy entry points, one generic definition each.
    macro_rules! bulk_kernels {
        ($($name:ident: $e:ident, $store:literal, $what:literal;)*) => {$(
            gpukern_device::ew_entry! {
            #[doc = concat!("Add through the bulk-copy engine: ", $what, ".")]
            ///
            /// # Safety
            /// 16-byte aligned operands of `n` elements, `c` not overlapping the
            /// inputs; `tile_bytes` a non-zero multiple of 16 up to 2^18; `1 <= stages
            /// <= MAX_STAGES`; `shared_bytes(tile_bytes, stages, bulk_store)` of
            /// dynamic shared memory; a 1-D block.
            ///
            /// # Parameters
            /// `a`, `b`: inputs; `c`: output; `n`: elements; `tile_bytes`: bytes per
            /// operand per tile; `stages`: tiles in flight per block.
            ///
            /// # Thread mapping
            /// Block `b` owns tiles `b, b + gridDim, …`; thread `t` adds packs `t, t +
            /// blockDim, …` of each; the remainder is walked grid-stride in lane groups.
            #[no_mangle]
            binary $name<$e>(a, b, c, n, tile_bytes: u32, stages: u32) {
                unsafe { bulk_map::<$e, Add, $store>(a, b, c, n, tile_bytes, stages) }
            }
            }
        )*};
    }

    /// Declares the `.L2::256B` load-hint kernels (they need sm_80, so they live
    /// in this module).
    macro_rules! l2_kernels {
        ($($name:ident: $e:ident;)*) => {$(
            gpukern_device::ew_entry! {
            /// 128-bit pack add whose loads are `ld.global.nc.L2::256B.v4`: what
            /// changed from `add_*_nc` is the hint to fetch 256-byte L2 sectors.
            ///
            /// # Safety
            /// 16-byte aligned operands of `n` elements, not written by anyone
            /// during the launch; `c` overlaps neither input.
            ///
            /// # Parameters
            /// `a`, `b`: inputs; `c`: output; `n`: elements.
            ///
            /// # Thread mapping
            /// One pack per thread, grid-stride (as V2/V6).
            #[no_mangle]
            binary $name<$e>(a, b, c, n) {
                unsafe { pack::<$e, Add, NC_L2>(Add, a, b, c, n) }
            }
            }
        )*};
    }

    l2_kernels! {
        add_f32x4_l2: F32;
        add_f16x8_l2: F16;
        add_bf16x8_l2: Bf16;
    }

    bulk_kernels! {
        add_f32_bulk: F32, false, "f32, 128-bit stores from registers";
        add_f16_bulk: F16, false, "f16 (`add.rn.f16x2`), 128-bit stores from registers";
        add_bf16_bulk: Bf16, false, "bf16 (added in f32, rounded once), 128-bit stores from registers";
        add_f32_bulk_st: F32, true, "f32, written back by bulk copies too";
        add_f16_bulk_st: F16, true, "f16, written back by bulk copies too";
        add_bf16_bulk_st: Bf16, true, "bf16, written back by bulk copies too";
    }
}
