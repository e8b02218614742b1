//! A probe of the device `printf` and assert (`gpukern_device::debug`): the
//! GPU tests launch it to check that the printed line and the assert record
//! reach the host.

/// Entry point `(x: *const u32, n: u64, limit: u32)`.
pub const DEBUG_PROBE: &str = "debug_probe";

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use gpukern_device::{global_thread, gpu_assert, gpu_printf, grid_threads};

    /// Thread 0 prints `n` and `x[0]`; every thread asserts that its elements
    /// of `x` are below `limit`.
    ///
    /// # Safety
    /// `x` holds `n` u32.
    ///
    /// # Thread mapping
    /// Grid-stride over the `n` elements.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn debug_probe(x: *const u32, n: u64, limit: u32) {
        let (mut i, step) = (global_thread(), grid_threads());
        if i == 0 && n > 0 {
            // SAFETY: n > 0.
            gpu_printf!("debug_probe: n = %llu, x[0] = %u, limit = %u\n", n, unsafe { *x }, limit);
        }
        while i < n {
            // SAFETY: i < n.
            let v = unsafe { *x.add(i as usize) };
            gpu_assert!(v < limit, "debug_probe: an element is not below the limit");
            i += step;
        }
    }
}
