//! Safe wrappers for the performance-engineering families of seed 003: matrix
//! product, counting with atomics vs reductions, coalescing, transpose (bank
//! conflicts) and fusion. Each derives its launch geometry from the constants
//! the kernels use.

mod copies;

use kernels_gpu::{coalesce, count, fusion, matmul, transpose};

use crate::device::gpu::{Gpu, KernelResources, Stream};
use crate::error::{Error, Result};
use crate::memory::buffer::{View, ViewMut};
use crate::raw::{self, Elementwise, Geometry};

/// The studies, sweeps and bench helpers of this crate (the seed-003
/// families, the visit markers, mismatch counters, ceiling kernels, math
/// sweeps, the add variants by name, the plain driver copies): what the
/// tests, the report and the benches measure, kept apart from the library's
/// operations on [`Gpu`]. `gpu.studies().matmul(...)`. It dereferences to
/// its [`Gpu`].
#[derive(Clone, Copy, Debug)]
pub struct Studies<'g> {
    gpu: &'g Gpu,
}

impl std::ops::Deref for Studies<'_> {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        self.gpu
    }
}

impl Gpu {
    /// The spin kernel's one launch path ([`Studies::spin`], and
    /// `CudarcExt::spin_cudarc` with the `cudarc` feature), on a queue of this
    /// Gpu's context.
    pub(crate) fn spin_on(&self, queue: raw::Queue<'_>, ns: u64) -> Result<()> {
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one its name names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it); the callers
        // hand a queue of this Gpu's context. It touches no memory.
        unsafe { raw::launch_spin(self.shared.func(kernels_gpu::verify::SPIN)?, ns, queue) }
    }

    /// The studies and bench helpers of this `Gpu` ([`Studies`]).
    pub fn studies(&self) -> Studies<'_> {
        Studies { gpu: self }
    }
}

impl Studies<'_> {
    /// Registers, local memory and limits of one kernel, from the driver.
    pub fn kernel_resources(&self, name: &'static str) -> Result<KernelResources> {
        let _live = self.shared.bind()?;
        self.shared.kernel(name)?.resources()
    }

    /// Resident blocks per SM for `name` at `block` threads (driver occupancy API).
    pub fn blocks_per_sm(&self, name: &'static str, block: u32) -> Result<u32> {
        self.blocks_per_sm_with_shared(name, block, 0)
    }

    /// As [`Studies::blocks_per_sm`], with `shared` bytes of dynamic shared memory
    /// per block (what limits the bulk-copy kernels).
    pub fn blocks_per_sm_with_shared(&self, name: &'static str, block: u32, shared: usize) -> Result<u32> {
        let _live = self.shared.bind()?;
        raw::occupancy(self.shared.func(name)?, block, shared)
    }

    /// Launches the empty kernel once (measures launch overhead).
    pub fn launch_empty(&self, stream: &Stream) -> Result<()> {
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one its name names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_empty(self.shared.func(kernels_gpu::verify::EMPTY)?, stream.raw()) }
    }

    /// Queues a one-thread kernel that busy-waits `ns` nanoseconds. Timing events
    /// queued behind it then measure only the GPU's work, not the host's launch
    /// path (the host queues the next launches while the GPU spins).
    pub fn spin(&self, stream: &Stream, ns: u64) -> Result<()> {
        self.spin_on(stream.raw(), ns)
    }
}

/// Largest `gridDim.y`.
const MAX_GRID_Y: u32 = 65_535;

macro_rules! family {
    ($(#[$m:meta])* $name:ident, $names:expr, [$($(#[$vm:meta])* $v:ident),*]) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $v),* }
        impl $name {
            /// Every variant, naive to optimised.
            pub const ALL: &'static [$name] = &[$($name::$v),*];
            /// PTX entry name.
            pub const fn name(self) -> &'static str {
                $names[self as usize]
            }
        }
    };
}

family!(
    /// Matrix-product variants.
    MatmulVariant,
    matmul::MATMUL,
    [
        /// One thread per output, all operands from global memory.
        Naive,
        /// 16×16 shared-memory tiles (the seed's).
        Tiled16,
        /// 64×64 block tile, 4×4 outputs per thread, 128-bit shared loads.
        RegBlock
    ]
);
family!(
    /// Count-equal variants.
    CountVariant,
    count::COUNT,
    [
        /// One global atomic per match.
        Atomic,
        /// Shared-memory tree, one atomic per block (the seed's).
        BlockReduce,
        /// Warp shuffles, one atomic per block.
        WarpShuffle
    ]
);
family!(
    /// Transpose variants.
    TransposeVariant,
    transpose::TRANSPOSE,
    [
        /// Coalesced reads, strided writes.
        Naive,
        /// 32×32 shared tile (bank conflicts on the column read).
        Tiled,
        /// 32×33 padded tile (no conflicts).
        Padded
    ]
);

fn grid_2d(kernel: &'static str, gx: u64, gy: u64) -> Result<(u32, u32)> {
    if gy > MAX_GRID_Y as u64 || gx > kernels_gpu::launch::MAX_GRID_X as u64 {
        return Err(Error::Shape {
            kernel,
            detail: format!("needs a {gx}×{gy} grid; the limit is 2^31-1 × {MAX_GRID_Y}"),
        });
    }
    Ok((gx as u32, gy as u32))
}

impl Studies<'_> {
    /// Queues `c = a · b` (f32, row-major; `a` is m×k, `b` k×n, `c` m×n).
    #[allow(clippy::too_many_arguments)]
    pub fn matmul(
        &self,
        v: MatmulVariant,
        a: View<'_, f32>,
        b: View<'_, f32>,
        mut c: ViewMut<'_, f32>,
        (m, n, k): (u32, u32, u32),
        stream: &Stream,
    ) -> Result<()> {
        self.check_owned(v.name(), [a.owner(), b.owner(), c.owner()], stream)?;
        // The kernels step through k in u32 tiles of at most 64: a k this
        // close to the top would wrap the counter and never end.
        if k > u32::MAX - 64 {
            return Err(Error::Shape { kernel: v.name(), detail: format!("k = {k} is above u32::MAX - 64") });
        }
        let g = match v {
            MatmulVariant::Naive | MatmulVariant::Tiled16 => Geometry {
                grid: grid_2d(
                    v.name(),
                    (n as u64).div_ceil(matmul::TILE as u64),
                    (m as u64).div_ceil(matmul::TILE as u64),
                )?,
                block: (matmul::TILE, matmul::TILE),
                shared_bytes: if v == MatmulVariant::Tiled16 { matmul::TILED_SHARED_BYTES } else { 0 },
            },
            MatmulVariant::RegBlock => Geometry {
                grid: grid_2d(
                    v.name(),
                    (n as u64).div_ceil(matmul::RB_BN as u64),
                    (m as u64).div_ceil(matmul::RB_BM as u64),
                )?,
                block: (matmul::RB_THREADS, 1),
                shared_bytes: matmul::RB_SHARED_BYTES,
            },
        };
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `v.name()` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_matmul(v.name(), self.shared.func(v.name())?, g, &a, &b, &mut c, (m, n, k), stream.raw()) }
    }

    /// Queues `counter[0] += |{i : x[i] == key}|` (the caller zeroes the counter).
    pub fn count_eq_into(
        &self,
        v: CountVariant,
        x: View<'_, i32>,
        key: i32,
        mut counter: ViewMut<'_, u64>,
        stream: &Stream,
    ) -> Result<()> {
        self.check_owned(v.name(), [x.owner(), counter.owner()], stream)?;
        let shared_bytes = match v {
            CountVariant::Atomic => 0,
            CountVariant::BlockReduce => count::BLOCK_SHARED_BYTES,
            CountVariant::WarpShuffle => count::WARP_SHARED_BYTES,
        };
        // A few waves of resident blocks; the grid-stride loop covers the rest, so
        // the reductions end in few atomics.
        let cap = self.info().sm_count * 8;
        let grid = kernels_gpu::launch::grid_for(x.len() as u64, 1, count::COUNT_THREADS, cap);
        let g = Geometry { grid: (grid, 1), block: (count::COUNT_THREADS, 1), shared_bytes };
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `v.name()` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_count_eq(self.shared.func(v.name())?, g, &x, key, &mut counter, stream.raw()) }
    }

    /// Counts `x[i] == key` and waits for the result.
    pub fn count_eq(&self, v: CountVariant, x: View<'_, i32>, key: i32, stream: &Stream) -> Result<u64> {
        let mut counter = self.upload(&[0u64])?;
        self.count_eq_into(v, x, key, counter.view_mut(), stream)?;
        stream.synchronize()?;
        Ok(counter.to_vec()?[0])
    }

    /// Queues the strided copy `dst = src` with warp lanes `stride` elements apart
    /// (`stride` must divide the length and be at most [`kernels_gpu::coalesce::MAX_STRIDE`]).
    pub fn copy_strided(
        &self,
        src: View<'_, f32>,
        mut dst: ViewMut<'_, f32>,
        stride: u64,
        stream: &Stream,
    ) -> Result<()> {
        self.check_owned(coalesce::STRIDED_COPY, [src.owner(), dst.owner()], stream)?;
        // One grid row (blockIdx.y) per column of the n/stride × stride view; rows
        // in x. A stride the grid cannot hold (or 0) is refused by the launcher.
        let rows = src.len() as u64 / stride.max(1);
        let grid = kernels_gpu::launch::grid_for(rows, 1, 256, kernels_gpu::launch::MAX_GRID_X);
        let cols = stride.min(kernels_gpu::coalesce::MAX_STRIDE + 1) as u32;
        let g = Geometry { grid: (grid, cols), block: (256, 1), shared_bytes: 0 };
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `coalesce::STRIDED_COPY` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_strided_copy(self.shared.func(coalesce::STRIDED_COPY)?, g, &src, &mut dst, stride, stream.raw())
        }
    }

    /// Queues `output = inputᵀ` (`input` rows×cols, `output` cols×rows, f32).
    pub fn transpose(
        &self,
        v: TransposeVariant,
        input: View<'_, f32>,
        mut output: ViewMut<'_, f32>,
        (rows, cols): (u32, u32),
        stream: &Stream,
    ) -> Result<()> {
        self.check_owned(v.name(), [input.owner(), output.owner()], stream)?;
        let t = transpose::TILE as u64;
        let g = Geometry {
            grid: grid_2d(v.name(), (cols as u64).div_ceil(t), (rows as u64).div_ceil(t))?,
            block: (transpose::TILE, transpose::BLOCK_ROWS),
            shared_bytes: transpose::SHARED_BYTES[v as usize],
        };
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `v.name()` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_transpose(
                v.name(),
                self.shared.func(v.name())?,
                g,
                &input,
                &mut output,
                (rows, cols),
                stream.raw(),
            )
        }
    }

    fn elementwise_geometry(n: usize) -> Geometry {
        let grid = kernels_gpu::launch::grid_for(n as u64, 1, 256, kernels_gpu::launch::MAX_GRID_X);
        Geometry { grid: (grid, 1), block: (256, 1), shared_bytes: 0 }
    }

    /// Queues `y = alpha · x` (each product rounded once).
    pub fn scale(&self, x: View<'_, f32>, alpha: f32, mut y: ViewMut<'_, f32>, stream: &Stream) -> Result<()> {
        let name = fusion::FUSION[0];
        self.check_owned(name, [x.owner(), y.owner()], stream)?;
        let _live = self.shared.bind()?;
        let g = Self::elementwise_geometry(x.len());
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_elementwise(
                name,
                self.shared.func(name)?,
                g,
                Elementwise::Scale { x: &x, alpha, y: &mut y },
                stream.raw(),
            )
        }
    }

    /// Queues the fused `d = (a + b) · alpha` (sum and product rounded separately).
    pub fn add_scale(
        &self,
        a: View<'_, f32>,
        b: View<'_, f32>,
        alpha: f32,
        mut d: ViewMut<'_, f32>,
        stream: &Stream,
    ) -> Result<()> {
        let name = fusion::FUSION[1];
        self.check_owned(name, [a.owner(), b.owner(), d.owner()], stream)?;
        let _live = self.shared.bind()?;
        let g = Self::elementwise_geometry(a.len());
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_elementwise(
                name,
                self.shared.func(name)?,
                g,
                Elementwise::AddScale { a: &a, b: &b, alpha, d: &mut d },
                stream.raw(),
            )
        }
    }

    /// Queues the fused `y = alpha · x + b` (no FMA: product and sum rounded
    /// separately, so it matches `scale` followed by `add`).
    pub fn saxpy(
        &self,
        alpha: f32,
        x: View<'_, f32>,
        b: View<'_, f32>,
        mut y: ViewMut<'_, f32>,
        stream: &Stream,
    ) -> Result<()> {
        let name = fusion::FUSION[2];
        self.check_owned(name, [x.owner(), b.owner(), y.owner()], stream)?;
        let _live = self.shared.bind()?;
        let g = Self::elementwise_geometry(x.len());
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_elementwise(
                name,
                self.shared.func(name)?,
                g,
                Elementwise::Saxpy { alpha, x: &x, b: &b, y: &mut y },
                stream.raw(),
            )
        }
    }
}
