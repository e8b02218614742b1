//! Coalescing: the same copy `dst[j] = src[j]` over all `n` elements, but warp
//! lanes visit elements `stride` apart. Stride 1 is fully coalesced (a warp's
//! 32 loads fall in one 128-byte line); stride s spreads them over s lines, so the
//! memory system moves up to s times the useful bytes. Figure: GB/s of useful data.

/// Kernel name.
pub const STRIDED_COPY: &str = "copy_strided";

/// The element thread `i` copies for a given stride: a permutation of `0..n` when
/// `stride` divides `n` (the host pads n to a multiple of the stride otherwise).
/// Thread i goes to row `i % rows`, column `i / rows` of an n/stride × stride
/// matrix, so consecutive threads are `stride` elements apart.
#[inline(always)]
pub const fn strided_index(i: u64, n: u64, stride: u64) -> u64 {
    let rows = n / stride;
    (i % rows) * stride + i / rows
}

#[cfg(target_arch = "nvptx64")]
pub use kernels::*;

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::strided_index;
    use crate::device::for_each_group;

    /// Copies `src` to `dst` with warp lanes `stride` elements apart.
    ///
    /// # Safety
    /// `src` and `dst` hold `n` f32 each and do not overlap; `stride` divides `n`
    /// and is at least 1.
    ///
    /// # Parameters
    /// `src`, `dst`: arrays of `n` f32. `stride`: distance between the elements of
    /// neighbouring threads.
    ///
    /// # Thread mapping
    /// Grid-stride over `i < n`; thread i copies element `strided_index(i, n, stride)`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn copy_strided(src: *const f32, dst: *mut f32, n: u64, stride: u64) {
        for_each_group::<1>(
            n,
            |i| {
                let j = strided_index(i, n, stride) as usize;
                // SAFETY: j < n because the index map is a permutation of 0..n.
                unsafe { *dst.add(j) = *src.add(j) };
            },
            |_| {},
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_index_is_a_permutation_with_the_right_spacing() {
        for stride in [1u64, 2, 4, 8, 32] {
            let n = 32 * 40;
            let mut seen = std::vec![false; n as usize];
            for i in 0..n {
                let j = strided_index(i, n, stride);
                assert!(!seen[j as usize], "stride {stride}: {j} twice");
                seen[j as usize] = true;
            }
            if stride < n {
                assert_eq!(strided_index(1, n, stride) - strided_index(0, n, stride), stride);
            }
        }
    }
}
