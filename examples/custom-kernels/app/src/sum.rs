//! The typed `block_sum` kernel of the kernel crate, launched through
//! `Module::kernel`: two launches, the blocks' partial sums, then one block
//! over the partials.

use gpukern::{DeviceVec, Gpu, Launch, Module, Result, Stream, TypedKernel, View};

/// Threads per block of both launches.
pub const BLOCK: u32 = 256;

/// A reusable sum of f32 arrays: the kernel handle and a buffer of partials.
pub struct Sum {
    kernel: TypedKernel<custom_kernels::block_sum>,
    partials: DeviceVec<f32>,
    total: DeviceVec<f32>,
}

impl Sum {
    /// Blocks of the first launch for `n` elements: enough for four 16-byte
    /// packs per thread, at most 8 per SM (the partials stay few).
    pub fn blocks(gpu: &Gpu, n: usize) -> u32 {
        let per_block = BLOCK as usize * 16;
        (n.div_ceil(per_block).max(1) as u32).min(gpu.info().sm_count * 8)
    }

    /// Resolves and checks the kernel in `module`.
    pub fn new(gpu: &Gpu, module: &Module) -> Result<Sum> {
        let kernel = module.kernel::<custom_kernels::block_sum>()?;
        let partials = gpu.alloc::<f32>(gpu.info().sm_count as usize * 8)?;
        Ok(Sum { kernel, partials, total: gpu.alloc::<f32>(1)? })
    }

    /// Queues the sum of `x` into the one-element total (read it with
    /// [`Sum::total`] after synchronising).
    pub fn queue(&mut self, gpu: &Gpu, x: View<'_, f32>, stream: &Stream) -> Result<()> {
        let blocks = Self::blocks(gpu, x.len());
        let l = Launch { grid: (blocks, 1, 1), block: (BLOCK, 1, 1), shared_bytes: 0 };
        self.kernel.launch(l, (x, self.partials.slice_mut(..blocks as usize)?), stream)?;
        let one = Launch { grid: (1, 1, 1), block: (BLOCK, 1, 1), shared_bytes: 0 };
        self.kernel.launch(one, (self.partials.slice(..blocks as usize)?, self.total.view_mut()), stream)
    }

    /// The total of the last [`Sum::queue`] (after the stream synchronised).
    pub fn total(&self) -> Result<f32> {
        Ok(self.total.to_vec()?[0])
    }

    /// The kernel handle (resources, name).
    pub fn kernel(&self) -> &TypedKernel<custom_kernels::block_sum> {
        &self.kernel
    }
}
