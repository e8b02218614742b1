//! The escape hatch's parameters: [`Arg`], [`Launch`], and the checks
//! `Module::launch` (in `raw/user.rs`, the unsafe part) makes first.

use crate::buffer::{View, ViewMut};
use crate::error::{Error, Result};
use crate::gpu::Stream;
use crate::module::{intern, Module};
use crate::raw::RawFn;

/// One parameter of a kernel launched through [`Module::launch`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A device address (`*const T` / `*mut T` in the kernel).
    Ptr(u64),
    /// `u64`.
    U64(u64),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
}

impl Arg {
    /// The address of a view's first element.
    pub fn view<T: crate::Pod>(v: &View<'_, T>) -> Arg {
        Arg::Ptr(v.addr())
    }
    /// The address of a mutable view's first element.
    pub fn view_mut<T: crate::Pod>(v: &ViewMut<'_, T>) -> Arg {
        Arg::Ptr(v.addr())
    }
}

/// Grid, block and dynamic shared memory of a [`Module::launch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks, x y z (each at least 1).
    pub grid: (u32, u32, u32),
    /// Threads per block, x y z (at least 1, at most 1024 in all).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

impl Module {
    /// Checks a raw launch's geometry and stream before the unsafe part.
    pub(crate) fn check_launch(&self, name: &str, l: &Launch, stream: &Stream) -> Result<RawFn> {
        let gpu = &self.inner.gpu;
        gpu.shared.bind()?;
        let name = intern(name);
        gpu.check_stream_owned(name, stream)?;
        let (b, g) = (l.block, l.grid);
        let threads = b.0 as u64 * b.1 as u64 * b.2 as u64;
        if threads == 0 || threads > 1024 {
            return Err(Error::BlockSize { variant: name, block: threads.min(u32::MAX as u64) as u32, max: 1024 });
        }
        if g.0 == 0 || g.1 == 0 || g.2 == 0 || g.0 > i32::MAX as u32 || g.1 > 65535 || g.2 > 65535 {
            return Err(Error::Shape {
                kernel: name,
                detail: format!("grid {g:?} outside 1..=(2^31-1, 65535, 65535)"),
            });
        }
        let f = self.inner.raw.function(name).map_err(|source| Error::MissingKernel { name, source })?;
        gpu.shared.note_user_kernel(name);
        Ok(f)
    }
}
