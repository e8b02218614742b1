//! Matrix transpose `out[c][r] = in[r][c]` (f32, rows × cols, any size): naive,
//! through a 32×32 shared-memory tile, and through a 32×33 padded tile.
//!
//! Shared memory has 32 banks of 4 bytes. In a 32×32 tile a warp reading one
//! column hits one bank 32 times (a 32-way conflict); padding each row to 33
//! words puts the column's elements in 32 different banks. Figure: GB/s (read +
//! write).

/// Tile edge.
pub const TILE: u32 = 32;
/// Rows of the tile each block's threads cover per step (block is 32 × 8).
pub const BLOCK_ROWS: u32 = 8;
/// Kernel names: naive, tiled 32×32, tiled 32×33.
pub const TRANSPOSE: [&str; 3] = ["transpose_naive", "transpose_tiled", "transpose_padded"];
/// Dynamic shared memory of the tiled variants (32×32 and 32×33 floats).
pub const SHARED_BYTES: [u32; 3] = [0, TILE * TILE * 4, TILE * (TILE + 1) * 4];

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use super::*;
    use gpukern_device::{at, block_xy, dynamic_shared, sync_threads, thread_xy};

    /// Naive: reads rows (coalesced) and writes columns (each warp's 32 stores
    /// land 32 rows apart: uncoalesced).
    ///
    /// # Safety
    /// `input` holds rows·cols f32, `output` cols·rows; no overlap.
    ///
    /// # Parameters
    /// `input` (rows × cols), `output` (cols × rows), row-major.
    ///
    /// # Thread mapping
    /// Blocks of 32×8 threads over 32×32 tiles; each thread moves 4 elements,
    /// rows `y, y+8, y+16, y+24` of its tile column `x`.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn transpose_naive(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let ((tx, ty), (bx, by)) = (thread_xy(), block_xy());
        let c = bx * TILE + tx;
        for j in (0..TILE).step_by(BLOCK_ROWS as usize) {
            let r = by * TILE + ty + j;
            if r < rows && c < cols {
                // SAFETY: r < rows, c < cols.
                unsafe { *output.add(at(c, rows, r)) = *input.add(at(r, cols, c)) };
            }
        }
    }

    /// Stages a tile in shared memory with row pitch `PITCH`: both the global read
    /// and the global write are coalesced; the column read from shared memory is
    /// conflict-free only when `PITCH` is odd.
    #[inline(always)]
    unsafe fn tiled<const PITCH: u32>(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let ((tx, ty), (bx, by)) = (thread_xy(), block_xy());
        let tile = dynamic_shared::<f32>();
        let c = bx * TILE + tx;
        for j in (0..TILE).step_by(BLOCK_ROWS as usize) {
            let r = by * TILE + ty + j;
            if r < rows && c < cols {
                // SAFETY: guarded read; tile index < 32·PITCH.
                unsafe { *tile.add(at(ty + j, PITCH, tx)) = *input.add(at(r, cols, c)) };
            }
        }
        sync_threads();
        // Swap block coordinates: this block writes tile (by, bx) of the output.
        let oc = by * TILE + tx; // output column = input row
        for j in (0..TILE).step_by(BLOCK_ROWS as usize) {
            let or = bx * TILE + ty + j; // output row = input column
            if or < cols && oc < rows {
                // SAFETY: guarded write; reads the element staged above.
                unsafe { *output.add(at(or, rows, oc)) = *tile.add(at(tx, PITCH, ty + j)) };
            }
        }
    }

    /// Tiled 32×32: what changed from naive is that a 32×32 tile is staged in
    /// shared memory so the global write is coalesced too; reading a tile column
    /// from shared memory is a 32-way bank conflict.
    ///
    /// # Safety
    /// As naive; launch with 32×8 threads and `SHARED_BYTES[1]` of dynamic shared
    /// memory.
    ///
    /// # Parameters
    /// As naive.
    ///
    /// # Thread mapping
    /// As naive, for both the load and the store phase.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn transpose_tiled(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        unsafe { tiled::<32>(input, output, rows, cols) }
    }

    /// Tiled 32×33: what changed from tiled is one padding word per tile row, so a
    /// tile column spans all 32 banks: no conflicts.
    ///
    /// # Safety
    /// As naive; launch with 32×8 threads and `SHARED_BYTES[2]` of dynamic shared
    /// memory.
    ///
    /// # Parameters
    /// As naive.
    ///
    /// # Thread mapping
    /// As naive.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn transpose_padded(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        unsafe { tiled::<33>(input, output, rows, cols) }
    }
}
