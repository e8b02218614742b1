//! The access patterns of the element-wise kernels, each written once over an
//! element type ([`Elem`]) and an operation ([`Op`]).
//!
//! | pattern       | per thread and step                  | seed instances |
//! |---------------|--------------------------------------|----------------|
//! | [`scalar`]    | one element                          | V1, V3         |
//! | [`pair`]      | one 32-bit word (two 16-bit lanes)   | V4             |
//! | [`words4`]    | four 32-bit words per operand        | V5             |
//! | [`pack`]      | one 16-byte pack, with a load/store hint | V2, V6     |
//! | [`tile`]      | `U` packs per thread, loads first    | -              |
//! | [`range`]     | one block over one range (foreach chunks) | -         |
//! | [`rows`]      | pitched rows of [`pack`] or [`scalar`] (grid y) | - |
//!
//! Every pattern walks with [`for_each_group`] (or, for [`tile`],
//! [`for_each_unrolled`]; for [`range`], [`for_each_in_range`]), handles any
//! `n` (a partial group is done element by element) and reads the second
//! operand only when the operation has two.
//!
//! # Safety (every function)
//! `a`, `c` (and `b` for two-input operations) hold `n` elements, aligned as the
//! pattern's access needs (element, 4 bytes, 16 bytes); `c` overlaps no input.
//! For the `ld.global.nc` hints nobody writes the inputs during the kernel.

/// A closure inlined into each of its call sites on the device
/// (`#[inline(always)]`; the walks call their step closure from two loops,
/// one per index width, and LLVM otherwise keeps a long lane rule, such as
/// the 16-bit activations with their slow path, as one out-of-line function
/// whose call convention costs the kernel about 16 registers). The host
/// build takes the closure as it is (expression attributes are unstable).
macro_rules! always_inline {
    ($c:expr) => {{
        #[cfg(target_arch = "nvptx64")]
        let f = #[inline(always)]
        $c;
        #[cfg(not(target_arch = "nvptx64"))]
        let f = $c;
        f
    }};
}

use crate::lanes::{Elem, Op};
use crate::pack::{load128, load128_cs, load128_nc, store128_cs, unrolled, Pack16};
use crate::walk::{for_each_group, for_each_group_within, for_each_in_range, for_each_unrolled};

/// Plain 128-bit loads and stores (V2, V6).
pub const PLAIN: u8 = 0;
/// Evict-first loads and stores (`.cs`).
pub const CS: u8 = 1;
/// Loads through the non-coherent path (`ld.global.nc`).
pub const NC: u8 = 2;
/// `ld.global.nc.L2::256B` (sm_80 and up: the sm_90 module).
#[cfg_attr(not(target_feature = "sm_90"), allow(dead_code))]
pub const NC_L2: u8 = 3;

/// The second operand of element `i`: `b[i]`, or `x` again for unary operations.
#[inline(always)]
unsafe fn second<T: Copy>(inputs: u32, b: *const T, i: usize, x: T) -> T {
    // SAFETY: per the module contract, b holds i when the operation reads it.
    if inputs == 2 {
        unsafe { *b.add(i) }
    } else {
        x
    }
}

/// `c[i] = op(a[i], b[i])` for `first <= i < n`, one element at a time.
#[inline(always)]
pub unsafe fn tail<E: Elem, O: Op<E>>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, first: u64, n: u64) {
    let mut i = first;
    while i < n {
        let i_ = i as usize;
        // SAFETY: i < n.
        unsafe { *c.add(i_) = op.one(*a.add(i_), second(O::INPUTS, b, i_, *a.add(i_))) };
        i += 1;
    }
}

/// One element per thread, grid-stride.
#[inline(always)]
pub unsafe fn scalar<E: Elem, O: Op<E>>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, n: u64) {
    for_each_group::<1>(
        n,
        // SAFETY: the walk passes g < n.
        |g| unsafe {
            let g = g as usize;
            *c.add(g) = if O::INPUTS == 2 { op.one(*a.add(g), *b.add(g)) } else { op.one(*a.add(g), *a.add(g)) };
        },
        // SAFETY: elements first..n (never called: one lane per group).
        |f| unsafe { tail(op, a, b, c, f, n) },
    );
}

/// One 32-bit word (two 16-bit lanes) per thread; an odd last element alone.
#[inline(always)]
pub unsafe fn pair<E: Elem, O: Op<E>>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, n: u64) {
    let (wa, wb, wc) = (a as *const u32, b as *const u32, c as *mut u32);
    for_each_group::<2>(
        n,
        // SAFETY: word g lies below n; 4-byte aligned per the contract.
        |g| unsafe {
            let x = *wa.add(g as usize);
            *wc.add(g as usize) = op.word(x, second(O::INPUTS, wb, g as usize, x));
        },
        // SAFETY: elements first..n.
        |f| unsafe { tail(op, a, b, c, f, n) },
    );
}

/// Eight 16-bit lanes per thread as four independent 32-bit words per operand,
/// every load before the first operation (V5).
#[inline(always)]
pub unsafe fn words4<E: Elem, O: Op<E>>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, n: u64) {
    let (wa, wb, wc) = (a as *const u32, b as *const u32, c as *mut u32);
    for_each_group::<8>(
        n,
        // SAFETY: words 4g..4g+4 lie below n; 4-byte aligned.
        |g| unsafe {
            let w = g as usize * 4;
            let (a0, a1, a2, a3) = (*wa.add(w), *wa.add(w + 1), *wa.add(w + 2), *wa.add(w + 3));
            let y = |k: usize, x: u32| second(O::INPUTS, wb, w + k, x);
            let (b0, b1, b2, b3) = (y(0, a0), y(1, a1), y(2, a2), y(3, a3));
            *wc.add(w) = op.word(a0, b0);
            *wc.add(w + 1) = op.word(a1, b1);
            *wc.add(w + 2) = op.word(a2, b2);
            *wc.add(w + 3) = op.word(a3, b3);
        },
        // SAFETY: elements first..n.
        |f| unsafe { tail(op, a, b, c, f, n) },
    );
}

/// One 16-byte load with hint `H`.
#[inline(always)]
unsafe fn load<const H: u8>(p: *const Pack16) -> Pack16 {
    // SAFETY: p is 16 readable, aligned bytes (and, for NC, not written).
    unsafe {
        match H {
            PLAIN => *p,
            CS => load128_cs(p),
            NC => load128_nc::<false>(p),
            _ => load128_nc::<true>(p),
        }
    }
}

/// One 16-byte pack per thread (4 f32 or 8 16-bit lanes), grid-stride, loads and
/// store with hint `H`; the partial last group element by element.
#[inline(always)]
pub unsafe fn pack<E: Elem, O: Op<E>, const H: u8>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, n: u64) {
    let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
    // SAFETY: pack g lies below n; 16-byte aligned per the contract.
    let group = always_inline!(|g: u64| unsafe {
        let g = g as usize;
        let x = load::<H>(pa.add(g));
        let y = if O::INPUTS == 2 { load::<H>(pb.add(g)) } else { x };
        let v = op.pack(x, y);
        if H == CS {
            store128_cs(pc.add(g), v)
        } else {
            *pc.add(g) = v
        }
    });
    // SAFETY: elements first..n.
    let rest = |f: u64| unsafe { tail(op, a, b, c, f, n) };
    match E::LANES {
        4 => for_each_group::<4>(n, group, rest),
        _ => for_each_group::<8>(n, group, rest),
    }
}

/// [`pack`] (plain loads and stores) for an `n` below one tile of the bulk-copy
/// kernels, so small that every index fits in 32 bits: the walk's 32-bit loop
/// alone, with no 64-bit copy beside it.
#[inline(always)]
pub unsafe fn pack_within<E: Elem, O: Op<E>>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, n: u64) {
    let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
    // SAFETY: pack g lies below n; 16-byte aligned per the contract.
    let group = |g: u64| unsafe {
        let g = g as usize;
        let x = *pa.add(g);
        let y = if O::INPUTS == 2 { *pb.add(g) } else { x };
        *pc.add(g) = op.pack(x, y);
    };
    // SAFETY: elements first..n.
    let rest = |f: u64| unsafe { tail(op, a, b, c, f, n) };
    match E::LANES {
        4 => for_each_group_within::<4>(n, group, rest),
        _ => for_each_group_within::<8>(n, group, rest),
    }
}

/// The unrolled pattern ([`for_each_unrolled`]): each block takes whole tiles of
/// `U × blockDim` packs, each thread loads all `U` of its packs of every input
/// before it computes and stores any; the partial last tile is done pack by pack
/// with a bound check, and the elements after the last whole pack one by one.
/// Within a tile, thread `t` owns packs `t, t + blockDim, …`.
#[inline(always)]
pub unsafe fn tile<E: Elem, O: Op<E>, const U: usize>(op: O, a: *const E::T, b: *const E::T, c: *mut E::T, n: u64) {
    let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
    let whole = |ps: [u64; U]| {
        let (mut xs, mut ys) = ([Pack16([0; 4]); U], [Pack16([0; 4]); U]);
        unrolled::<U>(|k| {
            let p = ps[k] as usize;
            // SAFETY: the tile is whole, so every pack of it lies below n. Spelled
            // out: array elements that are only moved may be split into 64-bit loads.
            unsafe {
                xs[k] = load128(pa.add(p));
                ys[k] = if O::INPUTS == 2 { load128(pb.add(p)) } else { xs[k] };
            }
        });
        unrolled::<U>(|k| {
            // SAFETY: as above.
            unsafe { *pc.add(ps[k] as usize) = op.pack(xs[k], ys[k]) };
        });
    };
    // SAFETY: pack p lies below n / LANES.
    let part = |p: u64| unsafe {
        let p = p as usize;
        let x = load128(pa.add(p));
        let y = if O::INPUTS == 2 { load128(pb.add(p)) } else { x };
        *pc.add(p) = op.pack(x, y);
    };
    // SAFETY: elements first..n.
    let rest = |f: u64| unsafe { tail(op, a, b, c, f, n) };
    match E::LANES {
        4 => for_each_unrolled::<U, 4>(n, whole, part, rest),
        _ => for_each_unrolled::<U, 8>(n, whole, part, rest),
    }
}

/// `c[i] = op(a[i], b[i])` for `start <= i < end` by one block: thread `t` of
/// `step` ([`for_each_in_range`]). 16-byte packs when all three operands are
/// 16-byte aligned (then `start` must be a multiple of the lane count), every
/// load of the thread before its first store when the range is exactly `U`
/// packs per thread; elements one by one otherwise. The foreach kernels run it
/// on each chunk of each triple.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn range<E: Elem, O: Op<E>, const U: usize>(
    op: O,
    a: *const E::T,
    b: *const E::T,
    c: *mut E::T,
    start: u64,
    end: u64,
    t: u64,
    step: u64,
) {
    let (pa, pb, pc) = (a as *const Pack16, b as *const Pack16, c as *mut Pack16);
    // A unary operation's `b` is null, which is aligned.
    let aligned = (a as u64 | b as u64 | c as u64) % 16 == 0;
    let whole = |g: u64, step: u64| {
        let (mut xs, mut ys) = ([Pack16([0; 4]); U], [Pack16([0; 4]); U]);
        unrolled::<U>(|k| {
            let p = (g + k as u64 * step) as usize;
            // SAFETY: the range holds U whole packs per thread, all below end.
            unsafe {
                xs[k] = load128(pa.add(p));
                ys[k] = if O::INPUTS == 2 { load128(pb.add(p)) } else { xs[k] };
            }
        });
        unrolled::<U>(|k| {
            let p = (g + k as u64 * step) as usize;
            // SAFETY: as above.
            unsafe { *pc.add(p) = op.pack(xs[k], ys[k]) };
        });
    };
    // SAFETY: pack g lies below end; aligned.
    let group = |g: u64| unsafe {
        let g = g as usize;
        let x = *pa.add(g);
        let y = if O::INPUTS == 2 { *pb.add(g) } else { x };
        *pc.add(g) = op.pack(x, y);
    };
    // SAFETY: i < end <= n.
    let one = |i: u64| unsafe {
        let i = i as usize;
        *c.add(i) = op.one(*a.add(i), second(O::INPUTS, b, i, *a.add(i)));
    };
    match E::LANES {
        4 => for_each_in_range::<4, U>(start, end, t, step, aligned, whole, group, one),
        _ => for_each_in_range::<8, U>(start, end, t, step, aligned, whole, group, one),
    }
}

/// Pitched rows: `c[r·pc + i] = op(a[r·pa + i], b[r·pb + i])` for `r < rows`,
/// `i < n`. Grid rows (`blockIdx.y`, stride `gridDim.y`) take rows; in each,
/// the grid's x dimension runs [`pack`] (`PACK`, plain accesses) or
/// [`scalar`] over the row's `n` elements, so a row is the 1-D walk and one
/// row of `n` is the 1-D kernel. The gated activations' `[gate | up]` rows
/// are `a` and `b` in one buffer, `n` apart.
///
/// # Safety
/// Each row's three ranges meet the 1-D pattern's contract: `a + r·pa`, `b +
/// r·pb`, `c + r·pc` hold `n` elements, aligned as the pattern needs (16 bytes
/// for `PACK`); no output row overlaps an input row or another output row.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn rows<E: Elem, O: Op<E>, const PACK: bool>(
    op: O,
    a: *const E::T,
    b: *const E::T,
    c: *mut E::T,
    rows: u32,
    n: u64,
    pitches: [u64; 3],
) {
    let (mut r, step) = (crate::thread::block_xy().1, crate::thread::grid_dim_xy().1);
    while r < rows {
        let at = |p: u64| (r as u64 * p) as usize;
        // SAFETY: row r < rows, per the contract.
        unsafe {
            let (ra, rb, rc) = (a.add(at(pitches[0])), b.add(at(pitches[1])), c.add(at(pitches[2])));
            if PACK {
                pack::<E, O, PLAIN>(op, ra, rb, rc, n)
            } else {
                scalar::<E, O>(op, ra, rb, rc, n)
            }
        }
        r += step;
    }
}
