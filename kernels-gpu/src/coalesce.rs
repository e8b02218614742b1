//! Coalescing: the same copy `dst[j] = src[j]` over all `n` elements, but warp
//! lanes visit elements `stride` apart. Stride 1 is fully coalesced (a warp's
//! 32 loads fall in one 128-byte line); stride s spreads them over s lines, so the
//! memory system moves up to s times the useful bytes. Figure: GB/s of useful data.

/// Kernel name.
pub const STRIDED_COPY: &str = "copy_strided";

/// Largest stride: the column index is `blockIdx.y`, and `gridDim.y` ≤ 65535.
pub const MAX_STRIDE: u64 = 65_535;

/// The element that row `r` of column `c` copies: the data is viewed as an
/// (n / stride) × stride row-major matrix, each `blockIdx.y` walks one column, and
/// threads neighbouring in x take neighbouring rows, so they are `stride` elements
/// apart. Over `r < n / stride`, `c < stride` this is a permutation of `0..n` when
/// `stride` divides `n` (the host checks it). No division per element: an earlier
/// one-dimensional map (`i % rows`, `i / rows`) spent more time on 64-bit division
/// than on memory at stride 1.
#[inline(always)]
pub const fn strided_index(r: u64, c: u64, stride: u64) -> u64 {
    r * stride + c
}

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use super::strided_index;
    use gpukern_device::{block_xy, for_each_group};

    /// Copies `src` to `dst` with warp lanes `stride` elements apart.
    ///
    /// # Safety
    /// `src` and `dst` hold `n` f32 each and do not overlap; `stride` divides `n`,
    /// is at least 1, and equals `gridDim.y`.
    ///
    /// # Parameters
    /// `src`, `dst`: arrays of `n` f32. `stride`: distance between the elements of
    /// neighbouring threads.
    ///
    /// # Thread mapping
    /// `blockIdx.y` is the column `c < stride`; in x, a grid-stride loop over rows
    /// `r < n / stride`. Thread (r, c) copies element `strided_index(r, c, stride)`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn copy_strided(src: *const f32, dst: *mut f32, n: u64, stride: u64) {
        let c = block_xy().1 as u64;
        for_each_group::<1>(
            n / stride,
            |r| {
                let j = strided_index(r, c, stride) as usize;
                // SAFETY: r < n / stride and c < stride, so j < n.
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
            for c in 0..stride {
                for r in 0..n / stride {
                    let j = strided_index(r, c, stride);
                    assert!(!seen[j as usize], "stride {stride}: {j} twice");
                    seen[j as usize] = true;
                }
            }
            assert!(seen.iter().all(|&s| s), "stride {stride}: an element is never copied");
            assert_eq!(strided_index(1, 0, stride) - strided_index(0, 0, stride), stride);
        }
    }
}
