//! The launch primitive: every kernel launch of the crate goes through
//! [`launch_overlapped`] (plain `cuLaunchKernel`, or `cuLaunchKernelEx` with the
//! programmatic-dependent-launch attribute) or, for thread-block clusters,
//! [`launch_clustered`] (`cuLaunchKernelEx` with the cluster dimension, and
//! for a norm cluster twin the PDL attribute too); the attributed launches
//! share `launch_ex`.

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::{check, Geometry3, RawFn};
use crate::error::{Error, Result};

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
    let g3 =
        Geometry3 { grid: (g.grid.0, g.grid.1, 1), block: (g.block.0, g.block.1, 1), shared_bytes: g.shared_bytes };
    // SAFETY: forwarded to the caller's contract.
    unsafe { launch_3d(func, g3, stream, params) }
}

/// The one launch of the crate: every launch, the element-wise ones, the
/// studies', the escape hatch's and the typed kernels', ends here.
///
/// # Safety
/// As [`launch`], for a 3-D grid and block.
pub(crate) unsafe fn launch_3d(
    func: RawFn,
    g: Geometry3,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: forwarded; without the attribute no kernel contract is added.
    unsafe { launch_overlapped(func, g, stream, params, false) }
}

/// As [`launch_3d`]; with `pdl`, through `cuLaunchKernelEx` with the
/// programmatic-stream-serialisation attribute: the kernel may start before
/// the stream's previous kernel has finished (programmatic dependent launch).
///
/// # Safety
/// As [`launch`]. With `pdl`, the kernel also executes `griddepcontrol.wait`
/// before its first access to memory (the PDL twins of
/// `kernels_gpu::ops::PDL_KERNELS` and of the norms, `kernels_gpu::norms::pdl_twin`,
/// whose entry is `pdl_enter`): without the
/// wait it would race with its predecessor. The device must be sm_90 or later.
pub(crate) unsafe fn launch_overlapped(
    func: RawFn,
    g: Geometry3,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
    pdl: bool,
) -> Result<()> {
    if !pdl {
        // SAFETY: forwarded to the caller's contract.
        let r = unsafe {
            cu::cuLaunchKernel(
                func.0,
                g.grid.0,
                g.grid.1,
                g.grid.2,
                g.block.0,
                g.block.1,
                g.block.2,
                g.shared_bytes,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        return check(r).map_err(|source| Error::Driver { context: "cuLaunchKernel", source });
    }
    // SAFETY: forwarded to the caller's contract (the kernel waits first).
    unsafe { launch_ex(func, g, stream, params, &mut [pdl_attr()]) }
}

/// The programmatic-stream-serialisation attribute (PDL).
fn pdl_attr() -> cu::CUlaunchAttribute {
    // SAFETY: a plain C union of integers; zero is a valid value of every field.
    let mut value: cu::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let id = cu::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    cu::CUlaunchAttribute { id, pad: [0; 4], value }
}

/// As [`launch_3d`], as thread-block clusters of `cluster` blocks along y
/// (`cuLaunchKernelEx` with the cluster-dimension attribute; `grid.1` a
/// multiple of `cluster`). Clusters of more than 8 blocks are allowed for the
/// kernel first (the non-portable size; the launch fails where the device
/// cannot place them). With `pdl`, also with the programmatic-serialisation
/// attribute, as [`launch_overlapped`].
///
/// # Safety
/// As [`launch`]; the device is sm_90 or later and the kernel was built for
/// clusters (it may read other blocks' shared memory of its cluster). With
/// `pdl`, the kernel executes `griddepcontrol.wait` before its first access
/// to memory (the norms' cluster twins, `kernels_gpu::norms::pdl_twin`).
pub(crate) unsafe fn launch_clustered(
    func: RawFn,
    g: Geometry3,
    cluster: u32,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
    pdl: bool,
) -> Result<()> {
    let mut attrs = [cluster_attr(func, cluster)?, pdl_attr()];
    let n = if pdl { 2 } else { 1 };
    // SAFETY: forwarded to the caller's contract.
    unsafe { launch_ex(func, g, stream, params, &mut attrs[..n]) }
}

/// The cluster-dimension attribute of clusters of `cluster` blocks along y,
/// after allowing sizes above 8 (the non-portable ones) for `func`.
fn cluster_attr(func: RawFn, cluster: u32) -> Result<cu::CUlaunchAttribute> {
    if cluster > 8 {
        let a = cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
        // SAFETY: sets one attribute of a live function handle.
        check(unsafe { cu::cuFuncSetAttribute(func.0, a, 1) })
            .map_err(|source| Error::Driver { context: "cuFuncSetAttribute", source })?;
    }
    // SAFETY: a plain C union of integers; zero is a valid value of every field.
    let mut value: cu::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.clusterDim = cu::CUlaunchAttributeValue_union__bindgen_ty_1 { x: 1, y: cluster, z: 1 };
    let id = cu::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    Ok(cu::CUlaunchAttribute { id, pad: [0; 4], value })
}

/// How many clusters of `cluster` blocks of `block` threads (along y) of
/// `func` the device can hold at once (`cuOccupancyMaxActiveClusters`): 0
/// where it cannot place one (a non-portable size on a part with fewer SMs
/// per GPC). The caller's context is current; `func` is a cluster kernel
/// without dynamic shared memory.
pub(crate) fn max_active_clusters(func: RawFn, block: u32, cluster: u32) -> Result<u32> {
    let mut attr = cluster_attr(func, cluster)?;
    let config = cu::CUlaunchConfig {
        gridDimX: 1,
        gridDimY: cluster,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        hStream: std::ptr::null_mut(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    let mut n: std::ffi::c_int = 0;
    // SAFETY: writes one integer; `config` and `attr` live across the call,
    // and the occupancy query launches nothing.
    check(unsafe { cu::cuOccupancyMaxActiveClusters(&mut n, func.0, &config) })
        .map_err(|source| Error::Driver { context: "cuOccupancyMaxActiveClusters", source })?;
    Ok(n.max(0) as u32)
}

/// `cuLaunchKernelEx` with the given attributes: the PDL and cluster
/// launches (a cluster twin with both).
///
/// # Safety
/// As [`launch`], and what each attribute asks of the kernel.
unsafe fn launch_ex(
    func: RawFn,
    g: Geometry3,
    stream: cu::CUstream,
    params: &mut [*mut c_void],
    attrs: &mut [cu::CUlaunchAttribute],
) -> Result<()> {
    let config = cu::CUlaunchConfig {
        gridDimX: g.grid.0,
        gridDimY: g.grid.1,
        gridDimZ: g.grid.2,
        blockDimX: g.block.0,
        blockDimY: g.block.1,
        blockDimZ: g.block.2,
        sharedMemBytes: g.shared_bytes,
        hStream: stream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    };
    // SAFETY: forwarded to the caller's contract; `config` and `attrs` live
    // across the call, and `numAttrs` is their count (one or two).
    let r = unsafe { cu::cuLaunchKernelEx(&config, func.0, params.as_mut_ptr(), std::ptr::null_mut()) };
    check(r).map_err(|source| Error::Driver { context: "cuLaunchKernelEx", source })
}

/// A pointer to one kernel parameter's value.
pub(super) fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

pub(super) fn need(kernel: &'static str, what: &str, have: usize, want: u64) -> Result<()> {
    if (have as u64) < want {
        return Err(Error::Shape { kernel, detail: format!("{what} has {have} elements, needs {want}") });
    }
    Ok(())
}
