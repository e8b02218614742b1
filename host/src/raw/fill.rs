//! Fills: every element of a range set to one bit pattern of the element's
//! width, with the driver's memsets (1-, 2- and 4-byte words) on the legacy
//! stream.

use cudarc::driver::sys as cu;

use super::{check, AnyBits, DevWrite};
use crate::error::{Error, Result};

/// How a fill of elements of one width is queued. The driver has no 8-byte
/// memset: an 8-byte pattern whose halves differ is two strided 4-byte
/// memsets (every element's low word, then its high word; device memory is
/// little-endian, as every host CUDA runs on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memset {
    /// Each byte.
    D8(u8),
    /// Each 2-byte word.
    D16(u16),
    /// Each 4-byte word (an 8-byte element with equal halves is two).
    D32(u32),
    /// The low, then the high 4-byte word of each 8-byte element.
    D32Pair(u32, u32),
}

/// The memset that gives each element of `width` bytes the bits `bits`
/// (the element read as an unsigned integer of its width). Refuses a
/// pattern wider than the element, rather than truncate it, and a width no
/// memset writes ([`Error::FillBits`]).
pub(crate) fn memset_for(width: usize, bits: u64) -> Result<Memset> {
    let refuse = Error::FillBits { bits, bytes: width };
    let (lo, hi) = (bits as u32, (bits >> 32) as u32);
    match width {
        1 if bits <= u8::MAX.into() => Ok(Memset::D8(bits as u8)),
        2 if bits <= u16::MAX.into() => Ok(Memset::D16(bits as u16)),
        4 if bits <= u32::MAX.into() => Ok(Memset::D32(lo)),
        8 if lo == hi => Ok(Memset::D32(lo)),
        8 => Ok(Memset::D32Pair(lo, hi)),
        _ => Err(refuse),
    }
}

/// Sets every element of `dst` to the bits `bits` (of the element's width,
/// see [`memset_for`]); asynchronous on the legacy stream (the free waits
/// for it). The caller holds the context's guard.
pub(crate) fn fill_bits<T: AnyBits>(dst: &mut impl DevWrite<T>, bits: u64) -> Result<()> {
    let width = std::mem::size_of::<T>();
    let memset = memset_for(width, bits)?;
    let n = dst.len();
    if n == 0 {
        // Touches nothing (a 2-D memset of no rows may be refused).
        return Ok(());
    }
    // In bytes a live range holds, so it fits; checked all the same.
    let bytes = n.checked_mul(width).ok_or(Error::OutOfBounds { start: 0, end: n, len: usize::MAX / width })?;
    if let Some(t) = dst.track() {
        t.note_legacy();
    }
    let addr = dst.addr();
    // SAFETY: `addr` starts a live device range of `bytes` (DevWrite), `n`
    // elements of `width` bytes, exclusively borrowed. Each memset writes
    // inside it: D8 `bytes` bytes (width 1), D16 `n` words (width 2), D32
    // `bytes / 4` words (width 4 or 8), D32Pair `n` rows of one word at
    // pitch 8 from `addr` and from `addr + 4` (width 8: rows end at
    // `addr + 8n`). A misaligned address is the driver's error, not a write.
    let r = unsafe {
        match memset {
            Memset::D8(v) => cu::cuMemsetD8_v2(addr, v, bytes),
            Memset::D16(v) => cu::cuMemsetD16_v2(addr, v, n),
            Memset::D32(v) => cu::cuMemsetD32_v2(addr, v, bytes / 4),
            Memset::D32Pair(lo, hi) => match cu::cuMemsetD2D32_v2(addr, 8, lo, 1, n) {
                cu::CUresult::CUDA_SUCCESS => cu::cuMemsetD2D32_v2(addr + 4, 8, hi, 1, n),
                e => e,
            },
        }
    };
    check(r).map_err(|source| Error::Driver { context: "cuMemset", source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the driver's memsets leave in `n` elements of `width` bytes,
    /// replayed on the host (little-endian words, as on the device).
    fn replay(m: Memset, width: usize, n: usize) -> Vec<u8> {
        let mut mem = vec![0xa5u8; width * n];
        match m {
            Memset::D8(v) => mem.fill(v),
            Memset::D16(v) => mem.as_chunks_mut::<2>().0.iter_mut().for_each(|w| *w = v.to_le_bytes()),
            Memset::D32(v) => mem.as_chunks_mut::<4>().0.iter_mut().for_each(|w| *w = v.to_le_bytes()),
            Memset::D32Pair(lo, hi) => mem.as_chunks_mut::<8>().0.iter_mut().for_each(|e| {
                e[..4].copy_from_slice(&lo.to_le_bytes());
                e[4..].copy_from_slice(&hi.to_le_bytes());
            }),
        }
        mem
    }

    #[test]
    fn every_element_holds_the_whole_pattern_of_its_width() {
        let patterns = [0u64, 1, 0xff, 0x1234, 0xdead_beef, 0x0101_0101, 0xdead_beef_dead_beef, 0x0123_4567_89ab_cdef];
        for width in [1usize, 2, 4, 8] {
            for &bits in &patterns {
                let max = if width == 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
                match memset_for(width, bits) {
                    Ok(m) => {
                        assert!(bits <= max, "width {width}: {bits:#x} accepted");
                        let want: Vec<u8> = (0..5).flat_map(|_| bits.to_le_bytes()[..width].to_vec()).collect();
                        assert_eq!(replay(m, width, 5), want, "width {width}, bits {bits:#x}: {m:?}");
                    }
                    Err(Error::FillBits { bits: b, bytes }) => {
                        assert!(bits > max, "width {width}: {bits:#x} refused");
                        assert_eq!((b, bytes), (bits, width));
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }

    #[test]
    fn eight_byte_patterns_are_not_a_repeated_byte() {
        // The bug this replaces: `fill_bits(1)` on u64 gave 0x0101_0101_0101_0101.
        let m = memset_for(8, 1).unwrap();
        assert_eq!(m, Memset::D32Pair(1, 0));
        assert_eq!(u64::from_le_bytes(replay(m, 8, 1).try_into().unwrap()), 1);
        assert_eq!(memset_for(8, 0xdead_beef_dead_beef).unwrap(), Memset::D32(0xdead_beef));
    }

    #[test]
    fn patterns_wider_than_the_element_are_refused() {
        for (width, bits) in [(1usize, 0x100u64), (2, 0x1_0000), (2, 0xdead_beef), (4, 1 << 32), (3, 0), (16, 0)] {
            let e = memset_for(width, bits).unwrap_err();
            assert!(matches!(e, Error::FillBits { .. }), "{e}");
            assert!(e.to_string().contains(&format!("{bits:#x}")), "{e}");
        }
    }
}
