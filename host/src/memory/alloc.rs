//! Device memory from a [`Gpu`]: [`Gpu::alloc`] and [`Gpu::upload`].

use crate::device::gpu::Gpu;
use crate::error::Result;
use crate::memory::buffer::{DeviceVec, Pod};

impl Gpu {
    /// Allocates `len` elements. The contents are unspecified until written.
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<DeviceVec<T>> {
        DeviceVec::alloc(self.shared.clone(), len)
    }

    /// Allocates and fills from a host slice (returns once the copy is done).
    ///
    /// ```no_run
    /// let gpu = gpukern::Gpu::new(0)?;
    /// let a = gpu.upload(&[1.0f32, 2.0, 3.0])?;
    /// let mut out = gpu.alloc::<f32>(3)?;
    /// gpu.unary(gpukern::UnaryOp::Neg, &a, &mut out, &gpu.stream()?)?;
    /// assert_eq!(out.to_vec()?, [-1.0, -2.0, -3.0]);
    /// # Ok::<(), gpukern::Error>(())
    /// ```
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<DeviceVec<T>> {
        let mut v = self.alloc(data.len())?;
        v.copy_from_slice(data)?;
        Ok(v)
    }
}
