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
    /// (`pack::tile_add`). In the portable module.
    Unrolled {
        /// Packs per thread per tile.
        unroll: u32,
    },
}

impl AddKernel {
    /// True for the bulk-copy kernels.
    pub const fn is_bulk(&self) -> bool {
        matches!(self.pattern, Pattern::BulkTiles { .. })
    }

    /// True for the kernels of the sm_90 module (`ptx/kernels_gpu_sm90.ptx`).
    pub const fn needs_sm90(&self) -> bool {
        self.is_bulk() || matches!(self.pattern, Pattern::LoadHint { l2_256: true })
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

/// Every add kernel: the seed's family by dtype, naive to fastest, then bf16,
/// then the cache-hint variants, the unrolled tile kernels, and the Hopper
/// bulk-copy kernels.
pub const ADD_KERNELS: [AddKernel; 30] = [
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
];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use crate::bits::bf16_add;
    use crate::device::for_each_group;
    use crate::pack::{bf16x2_add, half2_add, load128_cs, store128_cs, tile_add, Bf16Add, F16Add, F32Add, Pack16};

    /// 16 bytes of f32, 16-byte aligned (`float4`).
    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    struct F32x4([f32; 4]);

    /// Scalar tail shared by every variant of one dtype: elements `first..n`.
    macro_rules! scalar_tail {
        ($a:ident, $b:ident, $c:ident, $n:ident, $op:expr) => {
            |first: u64| {
                let mut i = first;
                while i < $n {
                    let i_ = i as usize;
                    // SAFETY: i < n and the caller guarantees n elements per operand.
                    unsafe { *$c.add(i_) = $op(*$a.add(i_), *$b.add(i_)) };
                    i += 1;
                }
            }
        };
    }

    #[inline(always)]
    fn f32_add(x: f32, y: f32) -> f32 {
        x + y
    }

    #[inline(always)]
    fn f16_add(x: f16, y: f16) -> f16 {
        x + y
    }

    /// **V1.** f32, one element per thread: the baseline.
    ///
    /// One 32-bit load per operand and one 32-bit store per element; a warp moves
    /// 128 bytes per load instruction.
    ///
    /// # Safety
    /// `a`, `b` and `c` must each point to `n` valid f32 in global memory, 4-byte
    /// aligned; `c` must not overlap `a` or `b`.
    ///
    /// # Parameters
    /// `a`, `b`: inputs. `c`: output, `c[i] = a[i] + b[i]` (round to nearest even,
    /// no flush-to-zero). `n`: element count, any value.
    ///
    /// # Thread mapping
    /// Global thread `t` handles element `t`, then `t + gridDim.x * blockDim.x`, …
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f32(a: *const f32, b: *const f32, c: *mut f32, n: u64) {
        for_each_group::<1>(
            n,
            |g| unsafe { *c.add(g as usize) = *a.add(g as usize) + *b.add(g as usize) },
            scalar_tail!(a, b, c, n, f32_add),
        );
    }

    /// **V2.** f32x4: what changed from V1 is one 128-bit load per operand and one
    /// 128-bit store for four elements, a quarter of the memory instructions.
    ///
    /// # Safety
    /// As V1, and `a`, `b`, `c` must be 16-byte aligned.
    ///
    /// # Parameters
    /// As V1.
    ///
    /// # Thread mapping
    /// Global thread `t` handles elements `4t .. 4t + 4` (grid-stride); the thread
    /// owning the partial last group adds its 1–3 elements one by one.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f32x4(a: *const f32, b: *const f32, c: *mut f32, n: u64) {
        let (va, vb, vc) = (a as *const F32x4, b as *const F32x4, c as *mut F32x4);
        for_each_group::<4>(
            n,
            |g| unsafe {
                let (x, y) = (*va.add(g as usize), *vb.add(g as usize));
                *vc.add(g as usize) = F32x4([x.0[0] + y.0[0], x.0[1] + y.0[1], x.0[2] + y.0[2], x.0[3] + y.0[3]]);
            },
            scalar_tail!(a, b, c, n, f32_add),
        );
    }

    /// **V3.** f16 scalar: what changed from V1 is the dtype; half the bytes per
    /// element, one 16-bit load per operand and `add.rn.f16`.
    ///
    /// # Safety
    /// `a`, `b` and `c` must each point to `n` valid f16, 2-byte aligned; `c` must not
    /// overlap `a` or `b`.
    ///
    /// # Parameters
    /// `a`, `b`: inputs. `c`: output, the correctly rounded f16 sum (overflow gives
    /// ±inf). `n`: element count, any value.
    ///
    /// # Thread mapping
    /// Global thread `t` handles element `t` (grid-stride).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f16(a: *const f16, b: *const f16, c: *mut f16, n: u64) {
        for_each_group::<1>(
            n,
            |g| unsafe { *c.add(g as usize) = *a.add(g as usize) + *b.add(g as usize) },
            scalar_tail!(a, b, c, n, f16_add),
        );
    }

    /// **V4.** f16x2: what changed from V3 is one 32-bit load per operand for two
    /// halves and one packed `add.rn.f16x2`.
    ///
    /// # Safety
    /// As V3, and `a`, `b`, `c` must be 4-byte aligned.
    ///
    /// # Parameters
    /// As V3.
    ///
    /// # Thread mapping
    /// Global thread `t` handles elements `2t, 2t + 1` (grid-stride); an odd last
    /// element is added on its own.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f16x2(a: *const f16, b: *const f16, c: *mut f16, n: u64) {
        let (wa, wb, wc) = (a as *const u32, b as *const u32, c as *mut u32);
        for_each_group::<2>(
            n,
            |g| unsafe { *wc.add(g as usize) = half2_add(*wa.add(g as usize), *wb.add(g as usize)) },
            scalar_tail!(a, b, c, n, f16_add),
        );
    }

    /// **V5.** f16x8 unrolled: what changed from V4 is eight halves per thread, as
    /// four independent 32-bit half2 loads per operand, so four loads are in flight
    /// before the first add. Still 32-bit instructions: the seed's intermediate step.
    ///
    /// # Safety
    /// As V4 (4-byte alignment is enough).
    ///
    /// # Parameters
    /// As V3.
    ///
    /// # Thread mapping
    /// Global thread `t` handles elements `8t .. 8t + 8` (grid-stride); the partial
    /// last group is added element by element.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f16x8(a: *const f16, b: *const f16, c: *mut f16, n: u64) {
        let (wa, wb, wc) = (a as *const u32, b as *const u32, c as *mut u32);
        for_each_group::<8>(
            n,
            |g| unsafe {
                let w = g as usize * 4;
                let (a0, a1, a2, a3) = (*wa.add(w), *wa.add(w + 1), *wa.add(w + 2), *wa.add(w + 3));
                let (b0, b1, b2, b3) = (*wb.add(w), *wb.add(w + 1), *wb.add(w + 2), *wb.add(w + 3));
                *wc.add(w) = half2_add(a0, b0);
                *wc.add(w + 1) = half2_add(a1, b1);
                *wc.add(w + 2) = half2_add(a2, b2);
                *wc.add(w + 3) = half2_add(a3, b3);
            },
            scalar_tail!(a, b, c, n, f16_add),
        );
    }

    /// **V6.** f16x8 pack: what changed from V5 is one 128-bit load per operand for
    /// all eight halves, four `add.rn.f16x2`, and one 128-bit store.
    ///
    /// # Safety
    /// As V3, and `a`, `b`, `c` must be 16-byte aligned.
    ///
    /// # Parameters
    /// As V3.
    ///
    /// # Thread mapping
    /// As V5.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f16x8_pack(a: *const f16, b: *const f16, c: *mut f16, n: u64) {
        let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
        for_each_group::<8>(
            n,
            |g| unsafe {
                let (x, y) = (*pa.add(g as usize), *pb.add(g as usize));
                *pc.add(g as usize) = Pack16([
                    half2_add(x.0[0], y.0[0]),
                    half2_add(x.0[1], y.0[1]),
                    half2_add(x.0[2], y.0[2]),
                    half2_add(x.0[3], y.0[3]),
                ]);
            },
            scalar_tail!(a, b, c, n, f16_add),
        );
    }

    /// bf16 scalar: each element widened to f32, added with `add.rn.f32` and rounded
    /// once to bf16 (ties to even), which is the correctly rounded bf16 sum (see
    /// [`crate::bits::bf16_add`]); works from sm_70 up, where no bf16 add exists.
    ///
    /// # Safety
    /// `a`, `b` and `c` must each point to `n` valid bf16 (as `u16` bits), 2-byte
    /// aligned; `c` must not overlap `a` or `b`.
    ///
    /// # Parameters
    /// `a`, `b`: inputs as bf16 bits. `c`: output bits. `n`: element count.
    ///
    /// # Thread mapping
    /// Global thread `t` handles element `t` (grid-stride).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_bf16(a: *const u16, b: *const u16, c: *mut u16, n: u64) {
        for_each_group::<1>(
            n,
            |g| unsafe { *c.add(g as usize) = bf16_add(*a.add(g as usize), *b.add(g as usize)) },
            scalar_tail!(a, b, c, n, bf16_add),
        );
    }

    /// bf16x2: what changed from `add_bf16` is one 32-bit load per operand for two
    /// values.
    ///
    /// # Safety
    /// As `add_bf16`, and 4-byte aligned.
    ///
    /// # Parameters
    /// As `add_bf16`.
    ///
    /// # Thread mapping
    /// Global thread `t` handles elements `2t, 2t + 1` (grid-stride).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_bf16x2(a: *const u16, b: *const u16, c: *mut u16, n: u64) {
        let (wa, wb, wc) = (a as *const u32, b as *const u32, c as *mut u32);
        for_each_group::<2>(
            n,
            |g| unsafe { *wc.add(g as usize) = bf16x2_add(*wa.add(g as usize), *wb.add(g as usize)) },
            scalar_tail!(a, b, c, n, bf16_add),
        );
    }

    /// bf16x8 pack: what changed from `add_bf16x2` is one 128-bit load per operand
    /// for eight values and one 128-bit store.
    ///
    /// # Safety
    /// As `add_bf16`, and 16-byte aligned.
    ///
    /// # Parameters
    /// As `add_bf16`.
    ///
    /// # Thread mapping
    /// Global thread `t` handles elements `8t .. 8t + 8` (grid-stride).
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_bf16x8_pack(a: *const u16, b: *const u16, c: *mut u16, n: u64) {
        let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
        for_each_group::<8>(
            n,
            |g| unsafe {
                let (x, y) = (*pa.add(g as usize), *pb.add(g as usize));
                *pc.add(g as usize) = Pack16([
                    bf16x2_add(x.0[0], y.0[0]),
                    bf16x2_add(x.0[1], y.0[1]),
                    bf16x2_add(x.0[2], y.0[2]),
                    bf16x2_add(x.0[3], y.0[3]),
                ]);
            },
            scalar_tail!(a, b, c, n, bf16_add),
        );
    }

    /// f32x4 with streaming cache hints: what changed from V2 is that the 128-bit
    /// loads and the store are evict-first (`.cs`), since each byte is used once.
    ///
    /// # Safety
    /// As V2 (16-byte aligned operands of `n` elements; `c` not overlapping).
    ///
    /// # Parameters
    /// As V1.
    ///
    /// # Thread mapping
    /// As V2.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f32x4_cs(a: *const f32, b: *const f32, c: *mut f32, n: u64) {
        let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
        for_each_group::<4>(
            n,
            |g| unsafe {
                let (x, y) = (load128_cs(pa.add(g as usize)), load128_cs(pb.add(g as usize)));
                let add = |i: usize| (f32::from_bits(x.0[i]) + f32::from_bits(y.0[i])).to_bits();
                store128_cs(pc.add(g as usize), Pack16([add(0), add(1), add(2), add(3)]));
            },
            scalar_tail!(a, b, c, n, f32_add),
        );
    }

    /// f16x8 with streaming cache hints: what changed from V6 is that the 128-bit
    /// loads and the store are evict-first (`.cs`).
    ///
    /// # Safety
    /// As V6.
    ///
    /// # Parameters
    /// As V3.
    ///
    /// # Thread mapping
    /// As V5.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_f16x8_cs(a: *const f16, b: *const f16, c: *mut f16, n: u64) {
        let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
        for_each_group::<8>(
            n,
            |g| unsafe {
                let (x, y) = (load128_cs(pa.add(g as usize)), load128_cs(pb.add(g as usize)));
                let s = |i: usize| half2_add(x.0[i], y.0[i]);
                store128_cs(pc.add(g as usize), Pack16([s(0), s(1), s(2), s(3)]));
            },
            scalar_tail!(a, b, c, n, f16_add),
        );
    }

    /// bf16x8 with streaming cache hints: what changed from `add_bf16x8_pack` is
    /// that the 128-bit loads and the store are evict-first (`.cs`).
    ///
    /// # Safety
    /// As `add_bf16x8_pack`.
    ///
    /// # Parameters
    /// As `add_bf16`.
    ///
    /// # Thread mapping
    /// As `add_bf16x8_pack`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_bf16x8_cs(a: *const u16, b: *const u16, c: *mut u16, n: u64) {
        let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
        for_each_group::<8>(
            n,
            |g| unsafe {
                let (x, y) = (load128_cs(pa.add(g as usize)), load128_cs(pb.add(g as usize)));
                let s = |i: usize| bf16x2_add(x.0[i], y.0[i]);
                store128_cs(pc.add(g as usize), Pack16([s(0), s(1), s(2), s(3)]));
            },
            scalar_tail!(a, b, c, n, bf16_add),
        );
    }

    /// Declares the unrolled tile kernels, one generic definition each.
    macro_rules! unrolled {
        ($($name:ident: $op:ty, $t:ty, $u:literal;)*) => {$(
            /// Unrolled tile add (see `pack::tile_add`): what changed from the
            /// 128-bit pack kernel is that each thread loads several packs of both
            /// inputs before it stores any, so more bytes are in flight per thread.
            ///
            /// # Safety
            /// 16-byte aligned operands of `n` elements; `c` overlaps neither input.
            ///
            /// # Parameters
            /// As V1.
            ///
            /// # Thread mapping
            /// Block `b` takes tiles `b, b + gridDim, …` of `U × blockDim` packs;
            /// thread `t` packs `t, t + blockDim, …` of each; then the remainder in
            /// lane groups, grid-stride.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $name(a: *const $t, b: *const $t, c: *mut $t, n: u64) {
                unsafe { tile_add::<$op, $u>(a, b, c, n) }
            }
        )*};
    }

    /// Declares the load-hint kernels: the V2/V6 walk with `ld.global.nc` loads.
    macro_rules! nc_kernels {
        ($($name:ident: $op:ty, $t:ty;)*) => {$(
            /// 128-bit pack add whose loads take the non-coherent path
            /// (`ld.global.nc.v4`): what changed from V2/V6 is only the load.
            ///
            /// # Safety
            /// 16-byte aligned operands of `n` elements, not written by anyone
            /// during the launch; `c` overlaps neither input.
            ///
            /// # Parameters
            /// As V1.
            ///
            /// # Thread mapping
            /// As V2/V6: one pack per thread, grid-stride.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $name(a: *const $t, b: *const $t, c: *mut $t, n: u64) {
                unsafe { crate::pack::hinted_add::<$op, false>(a, b, c, n) }
            }
        )*};
    }

    nc_kernels! {
        add_f32x4_nc: F32Add, f32;
        add_f16x8_nc: F16Add, f16;
        add_bf16x8_nc: Bf16Add, u16;
    }

    unrolled! {
        add_f32x4_u2: F32Add, f32, 2;
        add_f32x4_u4: F32Add, f32, 4;
        add_f16x8_u2: F16Add, f16, 2;
        add_f16x8_u4: F16Add, f16, 4;
        add_bf16x8_u2: Bf16Add, u16, 2;
        add_bf16x8_u4: Bf16Add, u16, 4;
    }
}

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
