//! The operands of one element-wise call and the automatic choice's split,
//! shared by the built-in operations (`ops.rs`) and user modules' operations
//! (`module.rs`).

use crate::error::{Error, Result};
use crate::memory::buffer::{Pod, View, ViewMut};

/// Below this many elements the automatic choice does not split off an unaligned
/// head: the second launch would cost more than the narrower kernel.
pub(crate) const PEEL_MIN_ELEMENTS: usize = 4096;

/// The operands of one element-wise call: `b` for two-input kinds, the scales
/// for axpby.
pub(crate) struct Operands<'a, T: Pod> {
    pub a: View<'a, T>,
    pub b: Option<View<'a, T>>,
    pub out: ViewMut<'a, T>,
    pub scales: Option<(f32, f32)>,
}

impl<'a, T: Pod> Operands<'a, T> {
    /// Splits every operand at element `mid`.
    pub(crate) fn split(self, mid: usize) -> Result<(Operands<'a, T>, Operands<'a, T>)> {
        let (o1, o2) = self.out.into_split_at(mid)?;
        let b = |r: std::ops::Range<usize>| self.b.map(|b| b.slice(r)).transpose();
        let head = Operands { a: self.a.slice(..mid)?, b: b(0..mid)?, out: o1, scales: self.scales };
        let rest = Operands { a: self.a.slice(mid..)?, b: b(mid..self.a.len())?, out: o2, scales: self.scales };
        Ok((head, rest))
    }

    pub(crate) fn addrs(&self) -> Vec<u64> {
        [Some(self.a.addr()), self.b.map(|b| b.addr()), Some(self.out.addr())].into_iter().flatten().collect()
    }

    /// `b` (when given) and `out` have `a`'s length; `name` names the error.
    pub(crate) fn check_lengths(&self, name: &'static str) -> Result<()> {
        let n = self.a.len();
        match self.b {
            Some(b) if b.len() != n || self.out.len() != n => {
                Err(Error::LengthMismatch { kernel: name, a: n, b: b.len(), out: self.out.len() })
            }
            None if self.out.len() != n => Err(Error::UnaryLengthMismatch { kernel: name, a: n, out: self.out.len() }),
            _ => Ok(()),
        }
    }

    /// The `Gpu`s the operands belong to.
    pub(crate) fn owners(&self) -> impl Iterator<Item = &std::sync::Arc<crate::device::context::Shared>> {
        [Some(self.a.owner()), self.b.as_ref().map(|b| b.owner()), Some(self.out.owner())].into_iter().flatten()
    }
}

/// The automatic choice's split of `n` elements of `elem` bytes at operand
/// addresses `addrs`, for a wide kernel that needs `align`-byte aligned
/// operands (every element-wise call and the add's tuned plan): all aligned
/// → the wide kernel; misaligned alike (and long enough) → the scalar kernel
/// on a head of that many elements, then the wide kernel; else a narrower one.
pub(crate) fn split_for(addrs: &[u64], n: usize, elem: usize, align: u64) -> AutoSplit {
    let align = align.max(1);
    let offset = addrs.first().map_or(0, |a| a % align);
    if addrs.iter().all(|x| x % align == 0) {
        AutoSplit::Pack
    } else if addrs.iter().all(|x| x % align == offset) && n >= PEEL_MIN_ELEMENTS {
        // Same misalignment everywhere: after `head` elements all are aligned.
        AutoSplit::Peel((align - offset) as usize / elem.max(1))
    } else {
        AutoSplit::Scalar
    }
}

/// What the automatic choice of an element-wise call launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AutoSplit {
    /// The pack kernel on everything.
    Pack,
    /// The scalar kernel on this many elements, the pack kernel on the rest.
    Peel(usize),
    /// The scalar kernel on everything.
    Scalar,
}

#[cfg(test)]
mod tests {
    use super::{split_for, AutoSplit, PEEL_MIN_ELEMENTS};

    #[test]
    fn split_for_follows_the_alignment_of_every_operand() {
        let n = PEEL_MIN_ELEMENTS;
        assert_eq!(split_for(&[0, 16, 4096], n, 4, 16), AutoSplit::Pack);
        // Misaligned alike: the head brings every operand to the boundary.
        assert_eq!(split_for(&[4, 20, 4100], n, 4, 16), AutoSplit::Peel(3));
        assert_eq!(split_for(&[14, 30, 46], n, 2, 16), AutoSplit::Peel(1));
        assert_eq!(split_for(&[2, 18], n, 2, 16), AutoSplit::Peel(7));
        // Too short for a second launch, or misaligned differently.
        assert_eq!(split_for(&[4, 20, 4100], n - 1, 4, 16), AutoSplit::Scalar);
        assert_eq!(split_for(&[4, 24, 4100], n, 4, 16), AutoSplit::Scalar);
        // A narrower wide kernel: 8-byte alignment suffices.
        assert_eq!(split_for(&[8, 24, 40], n, 4, 8), AutoSplit::Pack);
        // No addresses, or a zero alignment, never panic.
        assert_eq!(split_for(&[], n, 4, 16), AutoSplit::Pack);
        assert_eq!(split_for(&[3], n, 4, 0), AutoSplit::Pack);
    }
}
