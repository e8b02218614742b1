//! Warp-level primitives over the full warp (mask `0xffffffff`): shuffles,
//! votes and reductions.
//!
//! Each function is a collective meant for all 32 lanes of the warp, called
//! together. They are safe in any control flow, because on sm_70 and later
//! (the crate refuses older targets) the PTX ISA defines the `.sync`
//! instructions in divergent code: the executing lane waits until every
//! non-exited lane of the mask has executed a `shfl.sync` (`vote.sync`) with
//! the same qualifiers and mask, and a value sourced from a lane that is not
//! active is unspecified bits. The one undefined case, an executing lane
//! outside the mask, cannot happen with the full mask. So a call from a
//! diverged warp (or a partial last warp, whose missing lanes never run)
//! gives unspecified numbers or makes the warp wait, never undefined
//! behaviour: every result is a plain `u32`/`bool`/`f32`, valid for any bits,
//! and no memory is touched. For results that mean something, call from
//! converged code; [`crate::block`]'s collectives pass the lanes present
//! instead of the full mask.

use core::arch::asm;

/// `shfl.sync.down.b32`: the value of lane `lane + delta` (or this lane's own
/// when that is past 31).
#[inline(always)]
pub fn shfl_down(v: u32, delta: u32) -> u32 {
    let r: u32;
    // SAFETY: register exchange within the warp, the executing lane in the
    // full mask; defined in divergent code on sm_70+ (module docs); no memory.
    unsafe {
        asm!("shfl.sync.down.b32 {0}, {1}, {2}, 31, -1;", out(reg32) r, in(reg32) v, in(reg32) delta, options(nomem, nostack, preserves_flags));
    }
    r
}

/// `shfl.sync.bfly.b32`: the value of lane `lane ^ mask`.
#[inline(always)]
pub fn shfl_xor(v: u32, mask: u32) -> u32 {
    let r: u32;
    // SAFETY: as above.
    unsafe {
        asm!("shfl.sync.bfly.b32 {0}, {1}, {2}, 31, -1;", out(reg32) r, in(reg32) v, in(reg32) mask, options(nomem, nostack, preserves_flags));
    }
    r
}

/// `shfl.sync.idx.b32`: the value of lane `src` (0..32) for every lane.
#[inline(always)]
pub fn shfl_idx(v: u32, src: u32) -> u32 {
    let r: u32;
    // SAFETY: as above.
    unsafe {
        asm!("shfl.sync.idx.b32 {0}, {1}, {2}, 31, -1;", out(reg32) r, in(reg32) v, in(reg32) src, options(nomem, nostack, preserves_flags));
    }
    r
}

/// `vote.sync.ballot.b32`: bit `i` set when lane `i`'s `p` is true.
#[inline(always)]
pub fn ballot(p: bool) -> u32 {
    let r: u32;
    // SAFETY: as above.
    unsafe {
        asm!(
            "{{ .reg .pred q; setp.ne.u32 q, {1}, 0; vote.sync.ballot.b32 {0}, q, -1; }}",
            out(reg32) r, in(reg32) p as u32,
            options(nomem, nostack, preserves_flags),
        );
    }
    r
}

/// True when `p` holds on every lane (`vote.sync.all`).
#[inline(always)]
pub fn all(p: bool) -> bool {
    ballot(p) == u32::MAX
}

/// True when `p` holds on some lane (`vote.sync.any`).
#[inline(always)]
pub fn any(p: bool) -> bool {
    ballot(p) != 0
}

/// Sum of `v` over the warp, on every lane (butterfly, wrapping).
#[inline(always)]
pub fn warp_sum_u32(mut v: u32) -> u32 {
    for m in [16, 8, 4, 2, 1] {
        v = v.wrapping_add(shfl_xor(v, m));
    }
    v
}

/// Largest `v` of the warp, on every lane.
#[inline(always)]
pub fn warp_max_u32(mut v: u32) -> u32 {
    for m in [16, 8, 4, 2, 1] {
        v = v.max(shfl_xor(v, m));
    }
    v
}

/// Sum of `v` over the warp, on every lane, in a fixed butterfly order (each
/// lane adds the same pairs, so every lane gets the same bits).
#[inline(always)]
pub fn warp_sum_f32(mut v: f32) -> f32 {
    for m in [16, 8, 4, 2, 1] {
        v += f32::from_bits(shfl_xor(v.to_bits(), m));
    }
    v
}
