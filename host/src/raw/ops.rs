//! Launches of the element-wise library's kernels (`kernels_gpu::ops`): binary
//! `(a, b, c, n)`, unary `(a, c, n)` and axpby `(a, b, c, n, alpha, beta)`.

use cudarc::driver::sys as cu;
use kernels_gpu::ops::OpKind;

use super::{arg, check_elementwise, launch, AnyBits, DevRead, DevWrite, RawFn};
use crate::error::{Error, Result};

/// One element-wise launch, made by `ops.rs` from the kernel table.
pub(crate) struct MapLaunch {
    pub name: &'static str,
    pub func: RawFn,
    /// What the kernel computes, which fixes its parameter list.
    pub kind: OpKind,
    pub grid: u32,
    pub block: u32,
    /// Byte alignment the kernel's accesses need.
    pub align: usize,
}

/// Launches an element-wise kernel over the first `n` elements. `b` must be
/// given exactly for two-input kinds and `scales` exactly for axpby, so the
/// parameters always match the kernel's signature; checks every view holds `n`
/// elements and meets the alignment, so the kernel touches only their insides.
pub(crate) fn launch_map<T: AnyBits, R: DevRead<T>>(
    l: &MapLaunch,
    a: &R,
    b: Option<&R>,
    out: &mut impl DevWrite<T>,
    n: usize,
    scales: Option<(f32, f32)>,
    stream: cu::CUstream,
) -> Result<()> {
    let shape_ok = match l.kind {
        OpKind::Unary(_) => b.is_none() && scales.is_none(),
        OpKind::Binary(_) => b.is_some() && scales.is_none(),
        OpKind::Axpby => b.is_some() && scales.is_some(),
    };
    if !shape_ok {
        return Err(Error::Shape { kernel: l.name, detail: "operands do not match the operation".into() });
    }
    check_elementwise(l.name, l.align, a, b, out, n)?;
    if n == 0 || l.grid == 0 {
        return Ok(());
    }
    let (mut pa, mut pb, mut pc, mut pn) = (a.addr(), b.map_or(0, |b| b.addr()), out.addr(), n as u64);
    let (mut alpha, mut beta) = scales.unwrap_or((0.0, 0.0));
    match l.kind {
        OpKind::Unary(_) => {
            let mut params = [arg(&mut pa), arg(&mut pc), arg(&mut pn)];
            // SAFETY: unary kernels take (ptr, ptr, u64); a and out hold n
            // elements, aligned as the kernel needs, out is exclusively borrowed;
            // the kernel touches indices < n only, whatever the grid.
            unsafe { launch(l.func, l.grid, l.block, stream, &mut params) }
        }
        OpKind::Binary(_) => {
            let mut params = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn)];
            // SAFETY: binary kernels take (ptr, ptr, ptr, u64); otherwise as above.
            unsafe { launch(l.func, l.grid, l.block, stream, &mut params) }
        }
        OpKind::Axpby => {
            let mut params = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn), arg(&mut alpha), arg(&mut beta)];
            // SAFETY: axpby kernels take (ptr, ptr, ptr, u64, f32, f32); as above.
            unsafe { launch(l.func, l.grid, l.block, stream, &mut params) }
        }
    }
}
