//! What an operation accepts, checked before anything runs: f32, f16 or bf16;
//! operands of one dtype and one shape; each a dense range of its storage (any
//! start offset). Each refusal is a `candle_core::Error` that names the
//! operation and, for a layout, its shape, strides and offset.

use std::ops::Range;

use candle_core::{DType, Error, Layout, Result};

/// The dense range `start..end` of `layout` in its storage: a contiguous
/// layout goes straight through at its start offset, with no copy. Any other
/// stride is an error naming the layout (gpukern's element-wise kernels walk one
/// dense range; `.contiguous()` makes one, as an explicit copy).
pub(crate) fn dense(op: &str, operand: &str, layout: &Layout) -> Result<Range<usize>> {
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(start..end),
        None => Err(Error::Msg(format!(
            "gpukern_candle::{op}: {operand} has shape {:?}, stride {:?}, start offset {}: not one dense range \
             (gpukern's element-wise kernels take contiguous tensors at any offset; call .contiguous() first)",
            layout.dims(),
            layout.stride(),
            layout.start_offset()
        ))
        .bt()),
    }
}

/// The dtypes gpukern's kernels have.
pub(crate) fn dtype(op: &'static str, dtype: DType) -> Result<DType> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => Ok(dtype),
        other => Err(Error::UnsupportedDTypeForOp(other, op).bt()),
    }
}

/// Every operand has the first one's dtype and shape (no broadcasting: a
/// broadcast operand is a stride-0 layout, which [`dense`] refuses anyway).
pub(crate) fn same(op: &'static str, operands: &[(DType, &Layout)]) -> Result<DType> {
    let (lhs, first) = operands[0];
    for &(rhs, layout) in &operands[1..] {
        if rhs != lhs {
            return Err(Error::DTypeMismatchBinaryOp { lhs, rhs, op }.bt());
        }
        if layout.shape() != first.shape() {
            return Err(
                Error::ShapeMismatchBinaryOp { lhs: first.shape().clone(), rhs: layout.shape().clone(), op }.bt()
            );
        }
    }
    dtype(op, lhs)
}

/// A row layout: `rows` rows of `cols` elements (the last dimension, stride
/// 1), row `i` at `start + i·pitch` of the storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowLayout {
    pub start: usize,
    pub rows: usize,
    pub cols: usize,
    pub pitch: usize,
}

impl RowLayout {
    /// Elements from the first row's start to the last row's end.
    pub fn extent(self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.pitch + self.cols
        }
    }
}

/// An error naming an operand's layout.
pub(crate) fn layout_err(op: &str, operand: &str, layout: &Layout) -> Error {
    Error::Msg(format!(
        "gpukern_candle::{op}: {operand} has shape {:?}, stride {:?}, start offset {}",
        layout.dims(),
        layout.stride(),
        layout.start_offset()
    ))
    .bt()
}

/// A storage shorter than its layout says (candle would not make one).
pub(crate) fn short(op: &str, needs: usize, has: usize) -> Error {
    Error::Msg(format!("gpukern_candle::{op}: the layout needs {needs} elements, the storage has {has}")).bt()
}

/// The rows of `layout` along its last dimension: that dimension has stride 1
/// (or one element), and the dimensions before it fold into one row pitch at
/// least the row length (a contiguous tensor at any offset, or one narrowed
/// along its last dimension). Anything else is an error naming the layout.
pub(crate) fn rows(op: &str, operand: &str, layout: &Layout) -> Result<RowLayout> {
    let (dims, stride) = (layout.dims(), layout.stride());
    let Some((&cols, lead)) = dims.split_last() else {
        return Err(layout_err(op, &format!("{operand} (a scalar: the rows need a last dimension)"), layout));
    };
    if cols > 1 && stride[dims.len() - 1] != 1 {
        return Err(layout_err(op, &format!("{operand} (the last dimension must have stride 1)"), layout));
    }
    // The leading dimensions of more than one element, innermost first: the
    // innermost one's stride is the pitch, and each outer one's stride spans
    // the dimensions inside it.
    let folded = || lead.iter().zip(stride).filter(|(&d, _)| d > 1).rev();
    let rows: usize = lead.iter().product();
    let pitch = folded().next().map_or(cols, |(_, &s)| s);
    let mut expect = pitch;
    for (&d, &s) in folded() {
        if s != expect {
            return Err(layout_err(op, &format!("{operand} (its rows are not one pitch apart)"), layout));
        }
        expect = s * d;
    }
    if rows > 1 && pitch < cols {
        return Err(layout_err(op, &format!("{operand} (its rows overlap)"), layout));
    }
    Ok(RowLayout { start: layout.start_offset(), rows, cols, pitch })
}

/// A dense vector of `cols` elements (a weight or a bias): its start.
pub(crate) fn vector(op: &str, operand: &str, layout: &Layout, cols: usize) -> Result<usize> {
    let range = dense(op, operand, layout)?;
    if range.len() != cols {
        return Err(layout_err(op, &format!("{operand} (it needs {cols} elements, one per column)"), layout));
    }
    Ok(range.start)
}

/// Every operand has the first one's dtype, one gpukern has.
pub(crate) fn same_dtype(op: &'static str, operands: &[(DType, &Layout)]) -> Result<DType> {
    let lhs = operands[0].0;
    if let Some(&(rhs, _)) = operands.iter().find(|(d, _)| *d != lhs) {
        return Err(Error::DTypeMismatchBinaryOp { lhs, rhs, op }.bt());
    }
    dtype(op, lhs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contiguous_layout_at_an_offset_is_its_range() {
        let l = Layout::contiguous_with_offset((3, 4), 7);
        assert_eq!(dense("silu", "x", &l).unwrap(), 7..19);
        // A narrowed first dimension stays dense.
        let n = Layout::contiguous((5, 4)).narrow(0, 1, 3).unwrap();
        assert_eq!(dense("silu", "x", &n).unwrap(), 4..16);
    }

    #[test]
    fn other_strides_are_refused_naming_the_layout() {
        let t = Layout::contiguous((3, 4)).transpose(0, 1).unwrap();
        let e = dense("silu", "x", &t).unwrap_err().to_string();
        assert!(e.contains("gpukern_candle::silu: x has shape [4, 3], stride [1, 4], start offset 0"), "{e}");
        let narrowed = Layout::contiguous((3, 4)).narrow(1, 1, 2).unwrap();
        let e = dense("exp", "x", &narrowed).unwrap_err().to_string();
        assert!(e.contains("stride [4, 1], start offset 1"), "{e}");
        let broadcast = Layout::contiguous(4).broadcast_as((3, 4)).unwrap();
        assert!(dense("add", "b", &broadcast).unwrap_err().to_string().contains("stride [0, 1]"));
    }

    #[test]
    fn dtypes_and_shapes_are_checked() {
        let l = Layout::contiguous((2, 2));
        let m = Layout::contiguous(4);
        assert_eq!(same("add", &[(DType::BF16, &l), (DType::BF16, &l)]).unwrap(), DType::BF16);
        assert!(matches!(
            same("add", &[(DType::F32, &l), (DType::F16, &l)]).unwrap_err(),
            Error::WithBacktrace { .. } | Error::DTypeMismatchBinaryOp { .. }
        ));
        let e = same("add", &[(DType::F32, &l), (DType::F32, &m)]).unwrap_err().to_string();
        assert!(e.contains("shape mismatch in add"), "{e}");
        let e = dtype("silu", DType::F64).unwrap_err().to_string();
        assert!(e.contains("unsupported dtype F64 for op silu"), "{e}");
    }
}
