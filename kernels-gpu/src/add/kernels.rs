//! The add family's entry points (the portable module): each one generic access
//! pattern of [`crate::patterns`] instantiated with [`gpukern_device::lanes::Add`] on one
//! dtype. The table describing them is [`super::ADD_KERNELS`].

use gpukern_device::lanes::{Add, Bf16, F16, F32};
use gpukern_device::patterns::{pack, pair, scalar, tile, words4, CS, NC, PLAIN};

/// Declares add entry points `(a, b, c, n)`, each one generic access pattern of
/// [`crate::patterns`] instantiated with [`gpukern_device::lanes::Add`] on one dtype.
macro_rules! add_kernels {
    ($($(#[$doc:meta])* $name:ident: $e:ident => $pattern:ident $(::<$($arg:tt),*>)?;)*) => {$(
        gpukern_device::ew_entry! {
        $(#[$doc])*
        ///
        /// # Safety
        /// `a`, `b`, `c` each hold `n` elements, aligned to the access width of
        /// the table (`AddKernel::align`); `c` overlaps neither input.
        ///
        /// # Parameters
        /// `a`, `b`: inputs (bf16 as `u16` bits). `c`: output, the correctly
        /// rounded sum (round to nearest even, no flush-to-zero). `n`: elements,
        /// any value.
        #[no_mangle]
        binary $name<$e>(a, b, c, n) {
            unsafe { $pattern::<$e, Add $($(, $arg)*)?>(Add, a, b, c, n) }
        }
        }
    )*};
}

add_kernels! {
    /// **V1.** f32, one element per thread: the baseline. One 32-bit load per
    /// operand and one 32-bit store; a warp moves 128 bytes per instruction.
    ///
    /// # Thread mapping
    /// Thread `t` handles element `t`, then `t + gridDim.x * blockDim.x`, …
    add_f32: F32 => scalar;
    /// **V2.** f32x4: what changed from V1 is one 128-bit load per operand and
    /// one 128-bit store for four elements, a quarter of the instructions.
    ///
    /// # Thread mapping
    /// Thread `t` handles elements `4t .. 4t + 4` (grid-stride); the thread
    /// owning the partial last group adds its 1–3 elements one by one.
    add_f32x4: F32 => pack::<PLAIN>;
    /// **V3.** f16 scalar: what changed from V1 is the dtype; half the bytes
    /// per element, one 16-bit load per operand and `add.rn.f16`.
    ///
    /// # Thread mapping
    /// As V1.
    add_f16: F16 => scalar;
    /// **V4.** f16x2: what changed from V3 is one 32-bit load per operand for
    /// two halves and one packed `add.rn.f16x2`.
    ///
    /// # Thread mapping
    /// Thread `t` handles elements `2t, 2t + 1`; an odd last element alone.
    add_f16x2: F16 => pair;
    /// **V5.** f16x8 unrolled: what changed from V4 is eight halves per thread,
    /// as four independent 32-bit loads per operand, so four loads are in
    /// flight before the first add. Still 32-bit instructions: the seed's
    /// intermediate step.
    ///
    /// # Thread mapping
    /// Thread `t` handles elements `8t .. 8t + 8`; the partial last group
    /// element by element.
    add_f16x8: F16 => words4;
    /// **V6.** f16x8 pack: what changed from V5 is one 128-bit load per operand
    /// for all eight halves, four `add.rn.f16x2`, and one 128-bit store.
    ///
    /// # Thread mapping
    /// As V5.
    add_f16x8_pack: F16 => pack::<PLAIN>;
    /// bf16 scalar: each element widened to f32, added with `add.rn.f32` and
    /// rounded once to bf16 (ties to even), which is the correctly rounded
    /// bf16 sum (see [`gpukern_device::bits::bf16_add`]); sm_70 has no bf16 add.
    ///
    /// # Thread mapping
    /// As V1.
    add_bf16: Bf16 => scalar;
    /// bf16x2: one 32-bit load per operand for two values.
    ///
    /// # Thread mapping
    /// As V4.
    add_bf16x2: Bf16 => pair;
    /// bf16x8 pack: one 128-bit load per operand for eight values.
    ///
    /// # Thread mapping
    /// As V5.
    add_bf16x8_pack: Bf16 => pack::<PLAIN>;
    /// f32x4 with evict-first (`.cs`) loads and store, since each byte is
    /// used once.
    ///
    /// # Thread mapping
    /// As V2.
    add_f32x4_cs: F32 => pack::<CS>;
    /// f16x8 pack with evict-first (`.cs`) loads and store.
    ///
    /// # Thread mapping
    /// As V5.
    add_f16x8_cs: F16 => pack::<CS>;
    /// bf16x8 pack with evict-first (`.cs`) loads and store.
    ///
    /// # Thread mapping
    /// As V5.
    add_bf16x8_cs: Bf16 => pack::<CS>;
    /// f32x4 with `ld.global.nc` loads (inputs not written during the launch).
    ///
    /// # Thread mapping
    /// As V2.
    add_f32x4_nc: F32 => pack::<NC>;
    /// f16x8 with `ld.global.nc` loads.
    ///
    /// # Thread mapping
    /// As V5.
    add_f16x8_nc: F16 => pack::<NC>;
    /// bf16x8 with `ld.global.nc` loads.
    ///
    /// # Thread mapping
    /// As V5.
    add_bf16x8_nc: Bf16 => pack::<NC>;
    /// f32x4 unrolled: two packs per thread per tile, every load of a tile
    /// before its first store ([`gpukern_device::patterns::tile`]).
    ///
    /// # Thread mapping
    /// Block `b` takes tiles `b, b + gridDim, …` of `U × blockDim` packs;
    /// thread `t` packs `t, t + blockDim, …` of each; then the remainder in
    /// lane groups, grid-stride.
    add_f32x4_u2: F32 => tile::<2>;
    /// As `add_f32x4_u2` with four packs per thread per tile.
    ///
    /// # Thread mapping
    /// As `add_f32x4_u2`.
    add_f32x4_u4: F32 => tile::<4>;
    /// f16x8, two packs per thread per tile.
    ///
    /// # Thread mapping
    /// As `add_f32x4_u2`.
    add_f16x8_u2: F16 => tile::<2>;
    /// f16x8, four packs per thread per tile.
    ///
    /// # Thread mapping
    /// As `add_f32x4_u2`.
    add_f16x8_u4: F16 => tile::<4>;
    /// bf16x8, two packs per thread per tile.
    ///
    /// # Thread mapping
    /// As `add_f32x4_u2`.
    add_bf16x8_u2: Bf16 => tile::<2>;
    /// bf16x8, four packs per thread per tile.
    ///
    /// # Thread mapping
    /// As `add_f32x4_u2`.
    add_bf16x8_u4: Bf16 => tile::<4>;
}
