//! Kernel fusion: the same arithmetic as one kernel or as two with a temporary.
//!
//! * `d = (a + b) · alpha`: `add_f32` then `scale_f32` (5 n·4 bytes moved) vs
//!   `add_scale_f32` (3 n·4 bytes).
//! * `y = alpha · x + b`: `scale_f32` then `add_f32` (5 n·4 bytes) vs `saxpy_f32`
//!   (3 n·4 bytes).
//!
//! Bit-exactness: each operation is rounded separately (`mul.rn`, `add.rn`); the
//! fused kernels do **not** contract `alpha·x + b` into one FMA, so they give the
//! same bits as the two-kernel versions. (An FMA would round once and differ in
//! the last bit for some inputs; the PTX tests assert there is none.)

/// Kernel names: scale (unfused building block), add+scale fused, saxpy fused.
pub const FUSION: [&str; 3] = ["scale_f32", "add_scale_f32", "saxpy_f32"];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use gpukern_device::for_each_group;

    /// `y[i] = alpha · x[i]`: the second kernel of the unfused pipelines.
    ///
    /// # Safety
    /// `x`, `y` hold `n` f32; `y` does not overlap `x`.
    ///
    /// # Parameters
    /// `x`: input. `alpha`: factor. `y`: output. `n`: length.
    ///
    /// # Thread mapping
    /// Grid-stride, one element per step.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn scale_f32(x: *const f32, alpha: f32, y: *mut f32, n: u64) {
        // SAFETY: i < n.
        for_each_group::<1>(n, |i| unsafe { *y.add(i as usize) = *x.add(i as usize) * alpha }, |_| {});
    }

    /// `d[i] = (a[i] + b[i]) · alpha` in one pass: the sum stays in a register.
    ///
    /// # Safety
    /// `a`, `b`, `d` hold `n` f32; `d` overlaps neither input.
    ///
    /// # Parameters
    /// `a`, `b`: inputs. `alpha`: factor. `d`: output. `n`: length.
    ///
    /// # Thread mapping
    /// Grid-stride, one element per step.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn add_scale_f32(a: *const f32, b: *const f32, alpha: f32, d: *mut f32, n: u64) {
        // SAFETY: i < n.
        for_each_group::<1>(
            n,
            |i| unsafe { *d.add(i as usize) = (*a.add(i as usize) + *b.add(i as usize)) * alpha },
            |_| {},
        );
    }

    /// `y[i] = alpha · x[i] + b[i]` in one pass, product and sum rounded separately.
    ///
    /// # Safety
    /// `x`, `b`, `y` hold `n` f32; `y` overlaps neither input.
    ///
    /// # Parameters
    /// `alpha`: factor. `x`, `b`: inputs. `y`: output. `n`: length.
    ///
    /// # Thread mapping
    /// Grid-stride, one element per step.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn saxpy_f32(alpha: f32, x: *const f32, b: *const f32, y: *mut f32, n: u64) {
        // SAFETY: i < n.
        for_each_group::<1>(
            n,
            |i| unsafe { *y.add(i as usize) = alpha * *x.add(i as usize) + *b.add(i as usize) },
            |_| {},
        );
    }
}
