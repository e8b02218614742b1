//! The operands of one element-wise call and the automatic choice's split,
//! shared by the built-in operations (`ops.rs`) and user modules' operations
//! (`module.rs`).

use crate::buffer::{Pod, View, ViewMut};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::pdl::Pdl;
use kernels_gpu::ops::{OpKernel, OpKind};
use kernels_gpu::Dtype;

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
                Err(Error::LengthMismatch { variant: name, a: n, b: b.len(), out: self.out.len() })
            }
            None if self.out.len() != n => Err(Error::UnaryLengthMismatch { variant: name, a: n, out: self.out.len() }),
            _ => Ok(()),
        }
    }

    /// The `Gpu`s the operands belong to.
    pub(crate) fn owners(&self) -> impl Iterator<Item = &std::sync::Arc<crate::context::Shared>> {
        [Some(self.a.owner()), self.b.as_ref().map(|b| b.owner()), Some(self.out.owner())].into_iter().flatten()
    }

    /// The automatic choice's split for elements of `elem` bytes: all operands
    /// 16-byte aligned → the pack kernel; misaligned alike (and long enough) →
    /// the scalar kernel on a head of that many elements, then the pack kernel;
    /// else the scalar kernel.
    pub(crate) fn auto_split(&self, elem: usize) -> AutoSplit {
        let addrs = self.addrs();
        let offset = addrs[0] % 16;
        if addrs.iter().all(|x| x % 16 == 0) {
            AutoSplit::Pack
        } else if addrs.iter().all(|x| x % 16 == offset) && self.a.len() >= PEEL_MIN_ELEMENTS {
            // Same misalignment everywhere: after `head` elements all are aligned.
            AutoSplit::Peel((16 - offset as usize) / elem)
        } else {
            AutoSplit::Scalar
        }
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

impl Gpu {
    /// The PDL twin to launch instead of the automatic choice, when `pdl` says
    /// so for `n` elements at operand addresses `addrs` (all 16-byte aligned:
    /// the twins are 128-bit kernels, and a split head would be a second
    /// launch). `None`: launch as without PDL.
    pub(crate) fn pdl_choice(
        &self,
        pdl: Pdl,
        kind: OpKind,
        dtype: Dtype,
        n: usize,
        addrs: &[u64],
    ) -> Option<&'static OpKernel> {
        if n == 0 || !addrs.iter().all(|a| a % 16 == 0) {
            return None;
        }
        let k = crate::pdl::twin(kind, dtype)?;
        pdl.pays(self.info(), n, k.lanes()).then_some(k)
    }
}
