//! The pipelined plan's walk (sm_90): persistent blocks take row groups
//! `blockIdx.x, blockIdx.x + gridDim.x, …` (a group is one row for a block
//! group, `block / 32` consecutive rows for warp groups), and the rows come
//! into shared memory by `cp.async.bulk` through a ring of stages
//! (`gpukern_device::ring`): while a block reduces and writes one group, the
//! copies of the next `stages - 1` groups are in flight, which the
//! one-row-per-thread plans cannot do (nothing is loaded while their block
//! reduces). Each thread then reads its chunks from the slot into registers
//! and does exactly what the plan of the same group does ([`finish`]), so
//! the order, and the bits, are those of the block or warp plan of the same
//! block and `K`.
//!
//! A slot holds the group's rows back to back, each as its whole 16-byte
//! chunks (`cols / L · 16` bytes) and, for `add_rms_norm`, the residual's
//! after each row's x. A row's last partial chunk (when `cols` is not a
//! multiple of `L`) is read from global memory by its owner.

use gpukern_device::lanes::Elem;
use gpukern_device::ring::Ring;
use gpukern_device::thread;

use super::device::{each_lane, lane_bits, load_chunk, unroll, Args};
use super::row::{finish, residual, Place};
use super::{has_residual, pipe_slot_bytes, Family, FLAG_WARP};

/// The pipelined walk of one block (see the module docs).
///
/// # Safety
/// As `row::finish` for the plan of the same group, with `FLAG_VEC` (every
/// operand and pitch 16-byte aligned); a grid of at most the row groups
/// along x (one along y); dynamic shared memory of at least one slot
/// (`ring_shared_bytes(pipe_slot_bytes(..), stages)`, stages ≥ 1).
#[inline(always)]
pub(super) unsafe fn norm_pipe<E: Elem, const K: usize>(fam: Family, a: Args<E::T>) {
    let (tid, _) = thread::thread_xy();
    let (bx, _) = thread::block_xy();
    let (bdim, _) = thread::block_dim_xy();
    let (gx, _) = thread::grid_dim_xy();
    let warp_mode = a.flags & FLAG_WARP != 0;
    let residual_in = has_residual(fam, a.flags);
    let rpg = if warp_mode { bdim / 32 } else { 1 };
    let groups = a.rows.div_ceil(rpg);
    let count = if bx < groups { (groups - bx).div_ceil(gx) } else { 0 };
    let lanes = E::LANES as u32;
    let size = core::mem::size_of::<E::T>() as u32;
    let whole = a.cols / lanes * 16;
    let ins = if residual_in { 2 } else { 1 };
    // The host's launch holds at least one slot of this size (so it fits u32).
    let ring = Ring::new(pipe_slot_bytes(lanes, a.cols, rpg, residual_in) as u32);
    if ring.stages() == 0 {
        // The host always gives a slot; without one there is nothing to do safely.
        return;
    }
    let wrow = if warp_mode { tid / 32 } else { 0 };
    let place = #[inline(always)]
    |j: u32| {
        let row = (bx + j * gx) * rpg + wrow;
        Place {
            t: if warp_mode { tid % 32 } else { tid },
            g: if warp_mode { 32 } else { bdim },
            row,
            s: 0,
            segs: 1,
            active: row < a.rows,
            start: 0,
            end: a.cols,
        }
    };
    // Leader only: the copies of item j's rows (those inside the rows).
    let fill = #[inline(always)]
    |j: u32| {
        let first = (bx + j * gx) * rpg;
        let n = (a.rows - first).min(rpg);
        // SAFETY: the walk arms item j once, after its slot was released; the
        // bytes armed are the bytes loaded below: rows first..first + n < rows,
        // their whole chunks, 16-byte aligned (FLAG_VEC), into the slot's
        // n · ins · whole ≤ slot bytes.
        unsafe {
            ring.expect(j, n * ins * whole);
            let mut r = 0;
            while r < n {
                let at = (first + r) as usize * a.xp as usize;
                ring.load(j, r * ins * whole, a.x.add(at) as *const u8, whole);
                if residual_in {
                    ring.load(j, (r * ins + 1) * whole, a.r.add(at) as *const u8, whole);
                }
                r += 1;
            }
        }
    };
    // Every thread: its chunks of item j, from the slot (whole chunks) or
    // global memory (the row's partial last chunk).
    let read = #[inline(always)]
    |j: u32| {
        let p = place(j);
        let mut v = [[0.0f32; 8]; K];
        let (xrow, rrow) = (p.base(a.x, a.xp), p.base(a.r, a.xp));
        let at = wrow * ins * whole;
        unroll::<K>(
            #[inline(always)]
            |c| {
                if !p.has::<E>(c) {
                    return;
                }
                let e0 = p.e0::<E>(c);
                let mut r = [0.0f32; 8];
                if e0 + lanes <= p.end {
                    // SAFETY: a whole chunk of an active row of item j, landed
                    // (waited for) and not yet released.
                    let (px, pr) = unsafe {
                        let px = ring.read128(j, at + e0 * size);
                        (px, if residual_in { ring.read128(j, at + whole + e0 * size) } else { px })
                    };
                    each_lane::<E>(
                        #[inline(always)]
                        |l| {
                            v[c][l] = E::widen(E::from_bits(lane_bits::<E>(&px, l)));
                            r[l] = E::widen(E::from_bits(lane_bits::<E>(&pr, l)));
                        },
                    );
                } else {
                    // SAFETY: the row's partial chunk, inside the plan's ranges.
                    unsafe {
                        load_chunk::<E>(xrow, e0, p.end, true, &mut v[c]);
                        if residual_in {
                            load_chunk::<E>(rrow, e0, p.end, true, &mut r);
                        }
                    }
                }
                if residual_in {
                    // SAFETY: this thread's chunk of an active row of h.
                    unsafe { residual::<E>(&a, &p, c, &mut v[c], &r) };
                }
            },
        );
        v
    };
    let done = #[inline(always)]
    |j: u32, mut v: [[f32; 8]; K]| {
        // SAFETY: the host's plan (forwarded); every thread of the block
        // calls it for every item (the group is the warp or the block).
        unsafe { finish::<E, K, false>(fam, &a, &place(j), &mut v) }
    };
    // SAFETY: stages ≥ 1 (checked above); `fill` arms and loads exactly its
    // bytes; `read` reads only item j's landed slot; `done` touches global
    // memory and the reductions' static scratch, never the ring.
    unsafe { ring.walk(count, fill, read, done) }
}
