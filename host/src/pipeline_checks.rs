//! [`Studies`]' checks of the device's pipeline building blocks
//! (`kernels_gpu::pipeline`, sm_90): rows copied through a ring of
//! bulk-copy stages, and a cluster-wide sum over distributed shared memory.
//! The GPU tests compare them bit for bit with the obvious results.

use kernels_gpu::pipeline::{CLUSTER_FOLD, RING_COPY};

use crate::device::gpu::Stream;
use crate::error::{Error, Result};
use crate::memory::buffer::{View, ViewMut};
use crate::raw;
use crate::studies::Studies;

impl Studies<'_> {
    fn needs_sm90(&self, kernel: &'static str) -> Result<()> {
        if self.info().has_sm90() {
            return Ok(());
        }
        let has = format!("{}.{}", self.info().compute_capability.0, self.info().compute_capability.1);
        Err(Error::Unsupported { kernel, needs: "9.0", has })
    }

    /// Queues a copy of `rows` rows of `cols` f32 every `pitch` elements from
    /// `x` to `y` through `gpukern_device::ring::Ring`'s walk: `grid`
    /// persistent blocks of `block` threads, `stages` slots of a row each.
    /// Errors (nothing queued): not sm_90, rows not of whole 16-byte packs
    /// or longer than the block holds, a ring past the block's shared
    /// memory, a grid of more blocks than rows, short or misaligned views.
    #[allow(clippy::too_many_arguments)]
    pub fn ring_copy_rows(
        &self,
        x: View<'_, f32>,
        mut y: ViewMut<'_, f32>,
        (rows, cols, pitch): (u32, u32, u32),
        (stages, grid, block): (u32, u32, u32),
        stream: &Stream,
    ) -> Result<()> {
        self.needs_sm90(RING_COPY)?;
        self.check_owned(RING_COPY, [x.owner(), y.owner()], stream)?;
        let _live = self.shared.bind()?;
        let optin = self.info().shared_per_block_optin;
        // SAFETY: the kernel RING_COPY names, resolved from this Gpu's sm_90
        // module, whose dynamic shared memory limit was raised at load to the
        // block's limit (it has no static shared memory).
        unsafe {
            raw::launch_ring_copy(
                self.shared.func(RING_COPY)?,
                &x,
                &mut y,
                (rows, cols, pitch),
                (stages, grid, block),
                optin,
                stream.raw(),
            )
        }
    }

    /// Queues the cluster-wide sum: `x` holds one f32 per block, in clusters
    /// of `cluster` blocks (1 to 8); every thread of block `b` writes the
    /// sum of its cluster's values, in rank order, to `y[b · block + t]`.
    /// Errors (nothing queued): not sm_90, a cluster size that does not
    /// divide the blocks, a bad block, `y` short.
    pub fn cluster_fold_sum(
        &self,
        x: View<'_, f32>,
        mut y: ViewMut<'_, f32>,
        cluster: u32,
        block: u32,
        stream: &Stream,
    ) -> Result<()> {
        self.needs_sm90(CLUSTER_FOLD)?;
        self.check_owned(CLUSTER_FOLD, [x.owner(), y.owner()], stream)?;
        let _live = self.shared.bind()?;
        // SAFETY: the kernel CLUSTER_FOLD names, resolved from this Gpu's
        // sm_90 module.
        unsafe { raw::launch_cluster_fold(self.shared.func(CLUSTER_FOLD)?, &x, &mut y, cluster, block, stream.raw()) }
    }
}
