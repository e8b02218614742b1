//! f32 matrix product `C = A · B`, row-major, any M, N, K: naive, shared-memory
//! tiled (the seed's 16×16), and register-blocked.
//!
//! Figure of merit: GFLOP/s = 2·M·N·K / time. Accumulation is in f32 with fused
//! multiply-add (`fma.rn.f32`) in every variant, so the variants differ only in
//! summation order, not in operation.

/// Tile edge of the shared-memory variant (the seed's 16×16).
pub const TILE: u32 = 16;
/// Register-blocked variant: block tile rows (M) and columns (N).
pub const RB_BM: u32 = 64;
/// See [`RB_BM`].
pub const RB_BN: u32 = 64;
/// Register-blocked variant: depth of one shared-memory stage.
pub const RB_BK: u32 = 16;
/// Register-blocked variant: outputs per thread along M and along N.
pub const RB_TM: u32 = 4;
/// See [`RB_TM`].
pub const RB_TN: u32 = 4;
/// Register-blocked variant: threads per block ((64/4)·(64/4)).
pub const RB_THREADS: u32 = (RB_BM / RB_TM) * (RB_BN / RB_TN);

/// Dynamic shared memory bytes of the tiled variant (one A and one B tile).
pub const TILED_SHARED_BYTES: u32 = 2 * TILE * TILE * 4;
/// Dynamic shared memory bytes of the register-blocked variant.
pub const RB_SHARED_BYTES: u32 = (RB_BK * RB_BM + RB_BK * RB_BN) * 4;

/// Kernel names: naive, tiled, register-blocked.
pub const MATMUL: [&str; 3] = ["matmul_naive", "matmul_tiled16", "matmul_regblock"];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use super::*;
    use core::f32::math::mul_add;
    use gpukern_device::{at, block_xy, dynamic_shared, sync_threads, thread_xy};

    /// Naive: one thread per element of C, reading its row of A and column of B
    /// straight from global memory (K loads of each per output).
    ///
    /// # Safety
    /// `a` holds m·k, `b` k·n and `c` m·n f32; `c` overlaps neither input.
    ///
    /// # Parameters
    /// `a` (m×k), `b` (k×n), `c` (m×n), all row-major; `m`, `n`, `k` any sizes.
    ///
    /// # Thread mapping
    /// 2-D grid of 16×16 blocks: thread (x, y) of block (bx, by) computes
    /// `C[by·16 + y][bx·16 + x]`; threads outside C do nothing.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let ((tx, ty), (bx, by)) = (thread_xy(), block_xy());
        let (row, col) = (by * TILE + ty, bx * TILE + tx);
        if row >= m || col >= n {
            return;
        }
        let mut acc = 0.0f32;
        for i in 0..k {
            // SAFETY: row < m, col < n, i < k.
            unsafe { acc = mul_add(*a.add(at(row, k, i)), *b.add(at(i, n, col)), acc) };
        }
        // SAFETY: in bounds as above.
        unsafe { *c.add(at(row, n, col)) = acc };
    }

    /// Tiled 16×16 (the seed's): what changed from naive is that each block stages
    /// a 16×16 tile of A and of B in shared memory per step of K, so each global
    /// element is loaded once per block instead of once per thread (16× fewer
    /// global loads). Out-of-range tile elements are filled with zeros.
    ///
    /// # Safety
    /// As naive; launch with 16×16 threads and `TILED_SHARED_BYTES` of dynamic
    /// shared memory.
    ///
    /// # Parameters
    /// As naive.
    ///
    /// # Thread mapping
    /// As naive; every thread of the block also loads one element of each tile.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn matmul_tiled16(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let ((tx, ty), (bx, by)) = (thread_xy(), block_xy());
        let (row, col) = (by * TILE + ty, bx * TILE + tx);
        let sa = dynamic_shared::<f32>();
        // SAFETY: the launch provides 2·16·16 floats of shared memory.
        let sb = unsafe { sa.add((TILE * TILE) as usize) };
        let t = (ty * TILE + tx) as usize;
        let mut acc = 0.0f32;
        let mut k0 = 0;
        while k0 < k {
            let (ak, bk) = (k0 + tx, k0 + ty);
            // SAFETY: guarded global reads; t < 256 shared slots per tile.
            unsafe {
                *sa.add(t) = if row < m && ak < k { *a.add(at(row, k, ak)) } else { 0.0 };
                *sb.add(t) = if bk < k && col < n { *b.add(at(bk, n, col)) } else { 0.0 };
            }
            sync_threads();
            for i in 0..TILE as usize {
                // SAFETY: indices below 256 within each tile.
                unsafe {
                    acc =
                        mul_add(*sa.add(ty as usize * TILE as usize + i), *sb.add(i * TILE as usize + tx as usize), acc)
                };
            }
            sync_threads();
            k0 += TILE;
        }
        if row < m && col < n {
            // SAFETY: in bounds.
            unsafe { *c.add(at(row, n, col)) = acc };
        }
    }

    /// 16 bytes of f32 in shared memory, read as one `ld.shared.v4.f32`.
    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    struct F4([f32; 4]);

    /// Register-blocked: what changed from tiled is that each thread computes a
    /// 4×4 block of C in registers from a 64×64 block tile, reading its A and B
    /// fragments from shared memory with 128-bit loads: 8 shared loads feed 16
    /// FMAs (tiled: 2 loads per FMA). A is stored transposed in shared memory so
    /// both fragments are contiguous.
    ///
    /// # Safety
    /// As naive; launch with `RB_THREADS` (256) threads in x and `RB_SHARED_BYTES`
    /// of dynamic shared memory.
    ///
    /// # Parameters
    /// As naive.
    ///
    /// # Thread mapping
    /// Block (bx, by) owns `C[by·64 ..][bx·64 ..]`; thread t computes rows
    /// `(t / 16)·4 .. +4` and columns `(t % 16)·4 .. +4` of it. For loading, the
    /// 256 threads each copy 4 elements of the 64×16 A tile and of the 16×64 B tile.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn matmul_regblock(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let (t, _) = thread_xy();
        let (bx, by) = block_xy();
        let (row0, col0) = (by * RB_BM, bx * RB_BN);
        let (tr, tc) = ((t / (RB_BN / RB_TN)) * RB_TM, (t % (RB_BN / RB_TN)) * RB_TN);
        let sa = dynamic_shared::<F4>() as *mut f32; // [RB_BK][RB_BM], A transposed
                                                     // SAFETY: the launch provides RB_BK·(RB_BM + RB_BN) floats.
        let sb = unsafe { sa.add((RB_BK * RB_BM) as usize) }; // [RB_BK][RB_BN]
        let mut acc = [[0.0f32; RB_TN as usize]; RB_TM as usize];
        let mut k0 = 0;
        while k0 < k {
            for j in 0..4 {
                let e = t + j * RB_THREADS; // 0..1024
                                            // A tile: 64 rows × 16 k; element e -> (r = e / 16, kk = e % 16).
                let (r, kk) = (e / RB_BK, e % RB_BK);
                let (gr, gk) = (row0 + r, k0 + kk);
                // B tile: 16 k × 64 cols; element e -> (kk = e / 64, cc = e % 64).
                let (kb, cc) = (e / RB_BN, e % RB_BN);
                let (gkb, gc) = (k0 + kb, col0 + cc);
                // SAFETY: guarded global reads; shared indices < 1024 per tile.
                unsafe {
                    *sa.add(at(kk, RB_BM, r)) = if gr < m && gk < k { *a.add(at(gr, k, gk)) } else { 0.0 };
                    *sb.add(at(kb, RB_BN, cc)) = if gkb < k && gc < n { *b.add(at(gkb, n, gc)) } else { 0.0 };
                }
            }
            sync_threads();
            for kk in 0..RB_BK {
                // SAFETY: 16-byte aligned fragments inside the tiles.
                let (fa, fb) =
                    unsafe { (*(sa.add(at(kk, RB_BM, tr)) as *const F4), *(sb.add(at(kk, RB_BN, tc)) as *const F4)) };
                for i in 0..RB_TM as usize {
                    for j in 0..RB_TN as usize {
                        acc[i][j] = mul_add(fa.0[i], fb.0[j], acc[i][j]);
                    }
                }
            }
            sync_threads();
            k0 += RB_BK;
        }
        for i in 0..RB_TM {
            for j in 0..RB_TN {
                let (r, cc) = (row0 + tr + i, col0 + tc + j);
                if r < m && cc < n {
                    // SAFETY: in bounds.
                    unsafe { *c.add(at(r, n, cc)) = acc[i as usize][j as usize] };
                }
            }
        }
    }
}
