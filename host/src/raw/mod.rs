//! The unsafe edge: every driver call and every kernel launch of the crate.
//!
//! Nothing outside this module uses `unsafe`. Each function here checks what makes
//! its own unsafe block sound (lengths against the views it is given, alignment
//! against the kernel's needs) instead of trusting its caller, so that the safe API
//! above cannot produce undefined behaviour or an out-of-range write.

use std::ffi::{c_void, CStr};
use std::os::raw::c_char;

use cudarc::driver::sys as cu;

use crate::error::{DriverError, Error, Result};

mod add;
mod driver;
mod graph;
mod many;
mod math;
mod ops;
mod studies;
mod user;

pub(crate) use add::*;
pub(crate) use driver::*;
pub(crate) use graph::*;
pub(crate) use many::*;
pub(crate) use math::*;
pub(crate) use ops::*;
pub(crate) use studies::*;
pub(crate) use user::*;

/// Turns a `CUresult` into a [`DriverError`] with the driver's own name and text.
pub(crate) fn check(result: cu::CUresult) -> Result<(), DriverError> {
    if result == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const c_char = std::ptr::null();
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: both calls only write a pointer to a static string, or leave it null.
    unsafe {
        cu::cuGetErrorName(result, &mut name);
        cu::cuGetErrorString(result, &mut text);
    }
    let read = |p: *const c_char, fallback: String| {
        if p.is_null() {
            fallback
        } else {
            // SAFETY: the driver returned a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    Err(DriverError {
        code: result as u32,
        name: read(name, format!("CUresult {}", result as u32)),
        message: read(text, "unknown error".into()),
    })
}

/// Plain data that device bytes may be copied into: every bit pattern is a
/// valid value and there is no padding. Sealed by being declared here, in a
/// private module; `buffer::Pod` builds on it.
///
/// # Safety
/// Implement only for types with the property above.
pub unsafe trait AnyBits: Copy + Send + Sync + 'static {}

// SAFETY: IEEE binary formats and integers: every bit pattern is a value, no padding.
unsafe impl AnyBits for f32 {}
// SAFETY: as above (a 16-bit IEEE format).
unsafe impl AnyBits for half::f16 {}
// SAFETY: as above (the top half of an f32).
unsafe impl AnyBits for half::bf16 {}
// SAFETY: integers.
unsafe impl AnyBits for u8 {}
// SAFETY: integers.
unsafe impl AnyBits for u16 {}
// SAFETY: integers.
unsafe impl AnyBits for u32 {}
// SAFETY: integers.
unsafe impl AnyBits for u64 {}
// SAFETY: integers.
unsafe impl AnyBits for i32 {}

/// A range of device memory raw may read: its address and its length in
/// elements of `T`. Implemented by `buffer`'s views and buffers, whose borrows
/// keep the memory alive while raw uses it; raw checks lengths and alignment
/// against what each launch needs.
pub(crate) trait DevRead<T> {
    /// Device address of the first element.
    fn addr(&self) -> u64;
    /// Elements.
    fn len(&self) -> usize;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A range raw may write: implemented only by exclusive borrows, so an output
/// never aliases an input.
pub(crate) trait DevWrite<T>: DevRead<T> {}

/// A resolved kernel handle. CUDA function handles may be used from any thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawFn(pub(crate) cu::CUfunction);
// SAFETY: a CUfunction is an immutable driver handle, valid on every thread that
// has its context current; the driver synchronises its use.
unsafe impl Send for RawFn {}
// SAFETY: as above.
unsafe impl Sync for RawFn {}

/// Allocates `bytes` of device memory in the current context.
pub(crate) fn alloc(bytes: usize) -> Result<u64> {
    let mut ptr: cu::CUdeviceptr = 0;
    // SAFETY: writes one device pointer.
    check(unsafe { cu::cuMemAlloc_v2(&mut ptr, bytes.max(1)) }).map_err(|source| {
        if source.code == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32 {
            Error::OutOfMemory { bytes, source }
        } else {
            Error::Driver { context: "cuMemAlloc", source }
        }
    })?;
    Ok(ptr)
}

/// Frees device memory. Errors are ignored: a context that faulted can refuse the
/// free, and dropping must never panic.
pub(crate) fn free(ptr: u64) {
    // SAFETY: `ptr` came from `alloc` and is freed once (DeviceVec's Drop).
    let _ = unsafe { cu::cuMemFree_v2(ptr) };
}

/// Host to device copy of a whole view.
pub(crate) fn upload<T: AnyBits>(dst: &mut impl DevWrite<T>, src: &[T]) -> Result<()> {
    if dst.len() != src.len() {
        return Err(Error::CopyLength { host: src.len(), device: dst.len() });
    }
    let bytes = std::mem::size_of_val(src);
    // SAFETY: dst is a live device range of exactly `bytes`; src is a host slice of it.
    check(unsafe { cu::cuMemcpyHtoD_v2(dst.addr(), src.as_ptr() as *const c_void, bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyHtoD", source })
}

/// Device to host copy of a whole view.
pub(crate) fn download<T: AnyBits>(dst: &mut [T], src: &impl DevRead<T>) -> Result<()> {
    if dst.len() != src.len() {
        return Err(Error::CopyLength { host: dst.len(), device: src.len() });
    }
    let bytes = std::mem::size_of_val(dst);
    // SAFETY: src is a live device range of `bytes`; dst is a host slice of that size,
    // and every bit pattern is a valid T (AnyBits).
    check(unsafe { cu::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, src.addr(), bytes) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoH", source })
}

/// Device to device copy between views of equal length, on a stream.
pub(crate) fn copy_async<T: AnyBits>(
    dst: &mut impl DevWrite<T>,
    src: &impl DevRead<T>,
    stream: cu::CUstream,
) -> Result<()> {
    if dst.len() != src.len() {
        return Err(Error::CopyLength { host: src.len(), device: dst.len() });
    }
    let bytes = dst.len() * std::mem::size_of::<T>();
    // SAFETY: both are live device ranges of `bytes`; `&mut` on dst excludes overlap.
    check(unsafe { cu::cuMemcpyDtoDAsync_v2(dst.addr(), src.addr(), bytes, stream) })
        .map_err(|source| Error::Driver { context: "cuMemcpyDtoDAsync", source })
}

/// Fills a view with one bit pattern (of the element's width).
pub(crate) fn fill_bits<T: AnyBits>(dst: &mut impl DevWrite<T>, bits: u32) -> Result<()> {
    let n = dst.len();
    // SAFETY: dst is a live device range of n elements of T's width.
    let r = unsafe {
        match std::mem::size_of::<T>() {
            4 => cu::cuMemsetD32_v2(dst.addr(), bits, n),
            2 => cu::cuMemsetD16_v2(dst.addr(), bits as u16, n),
            _ => cu::cuMemsetD8_v2(dst.addr(), bits as u8, n * std::mem::size_of::<T>()),
        }
    };
    check(r).map_err(|source| Error::Driver { context: "cuMemset", source })
}

/// Free and total device memory of the current context's device, in bytes.
pub(crate) fn mem_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two integers.
    check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) })
        .map_err(|source| Error::Driver { context: "cuMemGetInfo", source })?;
    Ok((free, total))
}

/// Launches `func` with the given parameter pointers.
///
/// # Safety
/// `params` must match the kernel's parameter list in number, order and type, and
/// every device pointer among them must be valid for what the kernel does with the
/// given grid.
pub(super) unsafe fn launch(
    func: RawFn,
    grid: u32,
    block: u32,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { launch_2d(func, Geometry { grid: (grid, 1), block: (block, 1), shared_bytes: 0 }, stream, params) }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub grid: (u32, u32),
    pub block: (u32, u32),
    pub shared_bytes: u32,
}

/// As [`launch`], with a 2-D grid and block and dynamic shared memory.
///
/// # Safety
/// As [`launch`]; the kernel must not use more shared memory than given.
pub(super) unsafe fn launch_2d(
    func: RawFn,
    g: Geometry,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: forwarded to the caller's contract.
    let r = unsafe {
        cu::cuLaunchKernel(
            func.0,
            g.grid.0,
            g.grid.1,
            1,
            g.block.0,
            g.block.1,
            1,
            g.shared_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    check(r).map_err(|source| Error::Driver { context: "cuLaunchKernel", source })
}

/// A pointer to one kernel parameter's value.
pub(super) fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// What makes an element-wise launch over `n` elements sound: `a`, `b` (when
/// the kernel reads it) and `out` hold at least `n` elements, and each address
/// meets the kernel's alignment `align`. Shared by the library's and user
/// modules' element-wise launches.
pub(super) fn check_elementwise<T, R: DevRead<T>>(
    name: &'static str,
    align: usize,
    a: &R,
    b: Option<&R>,
    out: &impl DevWrite<T>,
    n: usize,
) -> Result<()> {
    match b {
        Some(b) if a.len() < n || b.len() < n || out.len() < n => {
            return Err(Error::LengthMismatch { variant: name, a: a.len(), b: b.len(), out: out.len() });
        }
        None if a.len() < n || out.len() < n => {
            return Err(Error::UnaryLengthMismatch { variant: name, a: a.len(), out: out.len() });
        }
        _ => {}
    }
    let addrs = [("a", Some(a.addr())), ("b", b.map(|b| b.addr())), ("out", Some(out.addr()))];
    for (operand, addr) in addrs.into_iter().filter_map(|(o, a)| a.map(|a| (o, a))) {
        let offset = addr % align as u64;
        if offset != 0 {
            return Err(Error::Misaligned { variant: name, operand, addr, offset, required: align });
        }
    }
    Ok(())
}

pub(super) fn need(kernel: &'static str, what: &str, have: usize, want: u64) -> Result<()> {
    if (have as u64) < want {
        return Err(Error::Shape { kernel, detail: format!("{what} has {have} elements, needs {want}") });
    }
    Ok(())
}

/// One attribute of a kernel.
pub(crate) fn func_attribute(func: RawFn, attr: cu::CUfunction_attribute) -> Result<i32> {
    let mut value = 0i32;
    // SAFETY: writes one integer.
    let r = unsafe { cu::cuFuncGetAttribute(&mut value, attr, func.0) };
    check(r).map_err(|source| Error::Driver { context: "cuFuncGetAttribute", source })?;
    Ok(value)
}

/// Registers, local memory, static shared memory and block limit of a kernel.
pub(crate) fn kernel_resources(f: RawFn) -> Result<crate::gpu::KernelResources> {
    use cu::CUfunction_attribute as A;
    let get = |a: A| func_attribute(f, a).map(|v| v as u32);
    Ok(crate::gpu::KernelResources {
        registers: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        local_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        shared_bytes: get(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        max_threads_per_block: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
    })
}

/// Most dynamic shared memory a block of device `ordinal` may use after opting in.
pub(crate) fn shared_per_block_optin(ordinal: usize) -> Result<u32> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let (mut dev, mut v): (cu::CUdevice, i32) = (0, 0);
    // SAFETY: each call writes one integer.
    check(unsafe { cu::cuDeviceGet(&mut dev, ordinal as i32) }).map_err(driver("cuDeviceGet"))?;
    // SAFETY: as above.
    check(unsafe {
        cu::cuDeviceGetAttribute(
            &mut v,
            cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            dev,
        )
    })
    .map_err(driver("cuDeviceGetAttribute"))?;
    Ok(v as u32)
}

/// Lets `func` use up to `bytes` of dynamic shared memory per block
/// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub(crate) fn set_max_dynamic_shared(func: RawFn, bytes: u32) -> Result<()> {
    // SAFETY: sets one attribute of a live function handle.
    let r = unsafe {
        cu::cuFuncSetAttribute(
            func.0,
            cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    };
    check(r).map_err(|source| Error::Driver { context: "cuFuncSetAttribute", source })
}

/// Resident blocks per SM for `func` at `block` threads and `shared` bytes of
/// dynamic shared memory per block.
pub(crate) fn occupancy(func: RawFn, block: u32, shared: usize) -> Result<u32> {
    let mut blocks = 0i32;
    // SAFETY: writes one integer.
    let r = unsafe { cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, func.0, block as i32, shared) };
    check(r).map_err(|source| Error::Driver { context: "cuOccupancyMaxActiveBlocksPerMultiprocessor", source })?;
    Ok(blocks as u32)
}

/// The CUDA version the driver supports, e.g. 13000 for 13.0.
pub(crate) fn driver_version() -> Result<i32> {
    let mut v = 0i32;
    // SAFETY: writes one integer.
    check(unsafe { cu::cuDriverGetVersion(&mut v) })
        .map_err(|source| Error::Driver { context: "cuDriverGetVersion", source })?;
    Ok(v)
}
