//! The launch of the gated-activation kernels (`kernels_gpu::glu`): pitched
//! rows of `gate`, `up` and `out`. Everything the kernels' contract needs is
//! checked here ([`check_glu`]), before the unsafe block; a graph's record
//! runs the same check.

use super::{arg, launch_overlapped, reads, writes, DevRead, DevWrite, Geometry3, Queue, RawFn};
use crate::error::{Error, Result};

/// One gated-activation launch, as the host's choice made it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GluLaunch {
    pub name: &'static str,
    pub func: RawFn,
    /// Rows (grid y walks them) and elements per row.
    pub rows: u32,
    pub n: u64,
    /// Elements from one row to the next: gate, up, out.
    pub pitches: [u64; 3],
    /// Blocks along a row and along the rows (at most 65535).
    pub grid: (u32, u32),
    pub block: u32,
    /// Byte alignment of every operand row (the element, or 16 for packs).
    pub align: usize,
    /// Elements per lane group (1, or a 16-byte pack's).
    pub lanes: u32,
    /// `func` is a PDL twin (`kernels_gpu::glu::GLU_PDL_KERNELS`), which
    /// waits first; set only on sm_90.
    pub pdl: bool,
}

/// Elements an operand of `rows` rows of `n`, `pitch` apart, spans
/// (saturating: no view holds that many).
fn extent(rows: u32, n: u64, pitch: u64) -> u64 {
    (rows as u64).saturating_sub(1).saturating_mul(pitch).saturating_add(n)
}

/// Checks everything the kernels rely on for operands at `spans` (`(address,
/// elements)`: gate, up, out) of `size`-byte elements: every row inside its
/// operand, every row aligned as the kernel needs, output rows apart (a
/// pitch of at least `n`, or one row), and a launch shape the hardware takes.
pub(crate) fn check_glu(l: &GluLaunch, spans: [(u64, usize); 3], size: u64) -> Result<()> {
    let bad = |detail: String| Err(Error::Shape { kernel: l.name, detail });
    if l.rows == 0 || l.n == 0 || l.grid.0 == 0 || l.grid.1 == 0 || l.grid.1 > 65535 {
        return bad(format!("{} rows of {} on a grid of {:?}", l.rows, l.n, l.grid));
    }
    if l.block == 0 || l.block > 1024 {
        return Err(Error::BlockSize { kernel: l.name, block: l.block, max: 1024 });
    }
    if l.rows > 1 && l.pitches[2] < l.n {
        return bad(format!("output rows of {} are {} apart: they overlap", l.n, l.pitches[2]));
    }
    let names = ["gate", "up", "out"];
    for ((what, (addr, len)), pitch) in names.into_iter().zip(spans).zip(l.pitches) {
        let need = extent(l.rows, l.n, pitch);
        if (len as u64) < need {
            return bad(format!("{what} has {len} elements, {} rows of {} at pitch {pitch} need {need}", l.rows, l.n));
        }
        let offset = addr % l.align as u64;
        if offset != 0 {
            return Err(Error::Misaligned { kernel: l.name, operand: what, addr, offset, required: l.align });
        }
        // A row's start is aligned when the first one's is and the pitch is
        // whole lane groups of `size`-byte elements.
        if l.rows > 1 && !pitch.is_multiple_of((l.align as u64 / size).max(1)) {
            return bad(format!("{what}'s pitch {pitch} is not a multiple of {} elements", l.lanes));
        }
    }
    Ok(())
}

/// Queues `out = act(gate) · up` over the rows. Queued after other streams'
/// work on the operands (`order.rs`).
///
/// # Safety
/// `l.func` is the kernel of `kernels_gpu::glu` named `l.name` (or, with
/// `l.pdl`, its PDL twin on an sm_90 device), from a module of the stream's
/// context, whose alignment and lanes `l.align` and `l.lanes` are.
pub(crate) unsafe fn launch_glu<T, R: DevRead<T>, W: DevWrite<T>>(
    l: &GluLaunch,
    gate: &R,
    up: &R,
    out: &mut W,
    queue: Queue<'_>,
) -> Result<()> {
    let spans = [(gate.addr(), gate.len()), (up.addr(), up.len()), (out.addr(), out.len())];
    check_glu(l, spans, std::mem::size_of::<T>() as u64)?;
    queue.order(&[reads(gate), reads(up), writes(&*out)])?;
    let (mut pg, mut pu, mut po) = (gate.addr(), up.addr(), out.addr());
    let (mut rows, mut n) = (l.rows, l.n);
    let [mut gp, mut upp, mut op] = l.pitches;
    let mut params = [
        arg(&mut pg),
        arg(&mut pu),
        arg(&mut po),
        arg(&mut rows),
        arg(&mut n),
        arg(&mut gp),
        arg(&mut upp),
        arg(&mut op),
    ];
    let g = Geometry3 { grid: (l.grid.0, l.grid.1, 1), block: (l.block, 1, 1), shared_bytes: 0 };
    // SAFETY: the parameter list of every glu kernel, in order. The kernel
    // touches gate, up, out at r·pitch + i for r < rows, i < n: inside each
    // operand (checked above), every row start aligned to `l.align` (the
    // first row's address and the pitches checked). `out` is an exclusively
    // borrowed view, so no input aliases it, and its rows are at least `n`
    // apart. `pdl` only for a twin on sm_90 (the caller's contract), which
    // waits before touching memory.
    unsafe { launch_overlapped(l.func, g, queue.handle(), &mut params, l.pdl) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> GluLaunch {
        GluLaunch {
            name: "t",
            func: RawFn(std::ptr::null_mut()),
            rows: 3,
            n: 100,
            pitches: [208, 208, 104],
            grid: (1, 3),
            block: 256,
            align: 16,
            lanes: 4,
            pdl: false,
        }
    }

    #[test]
    fn check_glu_refuses_what_the_kernels_cannot_do() {
        let l = launch();
        let spans = [(0x1000, 2 * 208 + 100), (0x1000 + 400, 2 * 208 + 100), (0x8000, 2 * 104 + 100)];
        check_glu(&l, spans, 4).unwrap();
        let bad = |l: &GluLaunch, s: [(u64, usize); 3]| check_glu(l, s, 4).is_err();
        assert!(bad(&l, [spans[0], spans[1], (0x8000, 2 * 104 + 99)]), "out short");
        assert!(bad(&l, [(0x1000, 2 * 208 + 99), spans[1], spans[2]]), "gate short");
        assert!(bad(&l, [spans[0], (0x1004, 600), spans[2]]), "up misaligned");
        assert!(bad(&GluLaunch { pitches: [206, 208, 104], ..l }, spans), "pitch of half a pack");
        assert!(bad(&GluLaunch { pitches: [208, 208, 99], ..l }, spans), "output rows overlap");
        assert!(bad(&GluLaunch { grid: (1, 70000), ..l }, spans), "grid y");
        assert!(bad(&GluLaunch { rows: 0, ..l }, spans), "no rows");
        assert!(bad(&GluLaunch { pitches: [u64::MAX / 2, 208, 104], ..l }, spans), "a pitch no view holds");
        // Element alignment for the scalar kernels.
        let scalar = GluLaunch { align: 4, lanes: 1, pitches: [205, 205, 101], ..l };
        check_glu(&scalar, [(0x1004, 2 * 205 + 100), (0x1004 + 400, 2 * 205 + 100), (0x8004, 302)], 4).unwrap();
    }
}
