//! Sweeps of `gpukern_device::math` on the GPU, for the exhaustive accuracy
//! test (`host/tests/gpu_math.rs`): every one-input function as a kernel
//! `math_<name>(start: u32, out: *mut f32, n: u64)` writing
//! `out[i] = f(f32::from_bits(start + i))` (wrapping), so 2^32 inputs need no
//! input buffer; and `pow` for one exponent over such a sweep, or over pairs
//! read from memory. Portable module.

/// The one-input functions with a sweep kernel: (function name as in
/// `math::check::FUNCTIONS`, entry point).
pub const MATH_UNARY: [(&str, &str); 17] = [
    ("exp", "math_exp"),
    ("exp2", "math_exp2"),
    ("expm1", "math_expm1"),
    ("log", "math_log"),
    ("log2", "math_log2"),
    ("log1p", "math_log1p"),
    ("tanh", "math_tanh"),
    ("sigmoid", "math_sigmoid"),
    ("erf", "math_erf"),
    ("sin", "math_sin"),
    ("cos", "math_cos"),
    ("rsqrt", "math_rsqrt"),
    ("sqrt", "math_sqrt"),
    ("rcp", "math_rcp"),
    ("silu", "math_silu"),
    ("gelu", "math_gelu"),
    ("gelu_tanh", "math_gelu_tanh"),
];

/// `math_pow_sweep(start: u32, y: f32, out: *mut f32, n: u64)`:
/// `out[i] = pow(f32::from_bits(start + i), y)`.
pub const POW_SWEEP: &str = "math_pow_sweep";

/// `math_pow_pairs(x: *const f32, y: *const f32, out: *mut f32, n: u64)`:
/// `out[i] = pow(x[i], y[i])`.
pub const POW_PAIRS: &str = "math_pow_pairs";

/// Every entry point of this file.
pub fn kernel_names() -> impl Iterator<Item = &'static str> {
    MATH_UNARY.iter().map(|(_, k)| *k).chain([POW_SWEEP, POW_PAIRS])
}

/// The sweep kernel of the function called `name`.
pub fn sweep_kernel(name: &str) -> Option<&'static str> {
    MATH_UNARY.iter().find(|(f, _)| *f == name).map(|(_, k)| *k)
}

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use gpukern_device::{for_each_group, math};

    /// `out[i] = f(start + i as bits)` for `i < n`, grid-stride.
    #[inline(always)]
    unsafe fn sweep(start: u32, out: *mut f32, n: u64, f: impl Fn(f32) -> f32) {
        let one = |i: u64| unsafe { *out.add(i as usize) = f(f32::from_bits(start.wrapping_add(i as u32))) };
        for_each_group::<1>(n, one, |_| {});
    }

    macro_rules! sweeps {
        ($($entry:ident => $f:path;)*) => {$(
            #[doc = concat!("`out[i] = ", stringify!($f), "(f32::from_bits(start + i))` (see [`crate::math`]).")]
            ///
            /// # Safety
            /// `out` holds `n` f32.
            ///
            /// # Thread mapping
            /// One element per thread, grid-stride.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $entry(start: u32, out: *mut f32, n: u64) {
                unsafe { sweep(start, out, n, $f) }
            }
        )*};
    }

    sweeps! {
        math_exp => math::exp;
        math_exp2 => math::exp2;
        math_expm1 => math::expm1;
        math_log => math::log;
        math_log2 => math::log2;
        math_log1p => math::log1p;
        math_tanh => math::tanh;
        math_sigmoid => math::sigmoid;
        math_erf => math::erf;
        math_sin => math::sin;
        math_cos => math::cos;
        math_rsqrt => math::rsqrt;
        math_sqrt => math::sqrt;
        math_rcp => math::rcp;
        math_silu => math::silu;
        math_gelu => math::gelu;
        math_gelu_tanh => math::gelu_tanh;
    }

    /// `out[i] = pow(f32::from_bits(start + i), y)`.
    ///
    /// # Safety
    /// `out` holds `n` f32.
    ///
    /// # Thread mapping
    /// One element per thread, grid-stride.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn math_pow_sweep(start: u32, y: f32, out: *mut f32, n: u64) {
        unsafe { sweep(start, out, n, |x| math::pow(x, y)) }
    }

    /// `out[i] = pow(x[i], y[i])`.
    ///
    /// # Safety
    /// `x`, `y`, `out` hold `n` f32; `out` overlaps neither input.
    ///
    /// # Thread mapping
    /// One element per thread, grid-stride.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn math_pow_pairs(x: *const f32, y: *const f32, out: *mut f32, n: u64) {
        let one = |i: u64| unsafe {
            let i = i as usize;
            *out.add(i) = math::pow(*x.add(i), *y.add(i));
        };
        for_each_group::<1>(n, one, |_| {});
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_prefixed() {
        let names: std::vec::Vec<_> = super::kernel_names().collect();
        assert!(names.iter().all(|k| k.starts_with("math_")));
        let set: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len());
        assert_eq!(super::sweep_kernel("gelu_tanh"), Some("math_gelu_tanh"));
    }
}
