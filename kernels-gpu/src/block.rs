//! Test kernels of the block collectives (`gpukern_device::block`) and of
//! `static_shared!`, for the GPU test `host/tests/gpu_block.rs`.
//!
//! Every kernel takes `(input: *const T, out: *mut T, n: u64)` and runs on a
//! 1-D grid of any block size: block `b` covers `input[b·blockDim ..]`, and
//! threads past `n` still call the collective, with the operation's identity,
//! so that every thread of the block takes part (uniform control flow).
//!
//! * `block_reduce_<op>_<ty>`: thread 0 writes its block's result to `out[b]`;
//! * `block_incl_<op>_<ty>`, `block_excl_<op>_<ty>`: thread `i < n` writes its
//!   inclusive or exclusive prefix (within its block) to `out[i]`.
//!
//! The operations: `sum`, `min`, `max` (the device crate's
//! `block::BlockNum` ones) for u32, i32, u64, f32; `xor` (u32) and `affine` (u64), two user
//! operations. `affine` composes maps `x ↦ a·x + b` over u32 (a in the low
//! word, b in the high word), which is associative but not commutative: it
//! proves the threads are combined in order.

/// The block-kernel families, as (operation, element type); each has a
/// `block_{kind}_{op}_{ty}` kernel for every kind of [`BLOCK_KINDS`].
pub const BLOCK_CASES: [(&str, &str); 14] = [
    ("sum", "u32"),
    ("min", "u32"),
    ("max", "u32"),
    ("sum", "i32"),
    ("min", "i32"),
    ("max", "i32"),
    ("sum", "u64"),
    ("min", "u64"),
    ("max", "u64"),
    ("sum", "f32"),
    ("min", "f32"),
    ("max", "f32"),
    ("xor", "u32"),
    ("affine", "u64"),
];

/// The kinds: reduction (thread 0 writes), inclusive and exclusive scan.
pub const BLOCK_KINDS: [&str; 3] = ["reduce", "incl", "excl"];

/// `block_chain_u32`: three collectives back to back on the same scratch:
/// `out[i] = s ^ m.rotate_left(8) ^ e.rotate_left(16)` with `s` the inclusive
/// sum, `m` the block's max (`reduce_all`, every thread) and `e` the exclusive
/// xor-scan.
pub const BLOCK_CHAIN: &str = "block_chain_u32";

/// `block_static_shared` (u32): reverses each block's slice through a
/// `static_shared!` tile: `out[b·B + t] = v(b·B + B-1-t)`, with `v(j) =
/// input[j]` for `j < n` and 0 past it.
pub const BLOCK_STATIC_SHARED: &str = "block_static_shared";

/// Name of the kernel of one kind, operation and type.
#[cfg(not(target_arch = "nvptx64"))]
pub fn block_kernel(kind: &str, op: &str, ty: &str) -> std::string::String {
    std::format!("block_{kind}_{op}_{ty}")
}

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
pub use kernels::*;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
mod kernels {
    use gpukern_device::block::{self, BlockNum};
    use gpukern_device::{global_thread, sync_threads, thread};

    /// This thread's index and value: `input[i]`, or `id` past `n`.
    #[inline(always)]
    unsafe fn value<T: Copy>(input: *const T, n: u64, id: T) -> (u64, T) {
        let i = global_thread();
        // SAFETY: i < n, and the caller's input holds n elements.
        (i, if i < n { unsafe { *input.add(i as usize) } } else { id })
    }

    /// Thread 0 of the block writes `r` to `out[blockIdx.x]`.
    #[inline(always)]
    unsafe fn write_block<T>(out: *mut T, r: T) {
        if thread::thread_xy().0 == 0 {
            // SAFETY: the caller's out holds one element per block.
            unsafe { *out.add(thread::block_xy().0 as usize) = r };
        }
    }

    /// Thread `i < n` writes `r` to `out[i]`.
    #[inline(always)]
    unsafe fn write_own<T>(out: *mut T, i: u64, n: u64, r: T) {
        if i < n {
            // SAFETY: i < n, and the caller's out holds n elements.
            unsafe { *out.add(i as usize) = r };
        }
    }

    /// One family: a reduce, an inclusive and an exclusive kernel, each
    /// `$f(x)` of the value with `$id` past `n`.
    macro_rules! family {
        ($t:ty, $id:expr, $reduce:ident = $rf:expr, $incl:ident = $if:expr, $excl:ident = $ef:expr) => {
            /// Block reduction; thread 0 writes `out[blockIdx.x]`.
            ///
            /// # Safety
            /// `input` holds `n` elements and `out` one per block; 1-D block.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $reduce(input: *const $t, out: *mut $t, n: u64) {
                // SAFETY: per the contract above; every thread of the block
                // calls the collective once (threads past n with the identity).
                unsafe {
                    let (_, x) = value(input, n, $id);
                    write_block(out, $rf(x));
                }
            }

            /// Inclusive block scan; thread `i < n` writes `out[i]`.
            ///
            /// # Safety
            /// `input` and `out` hold `n` elements; 1-D block.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $incl(input: *const $t, out: *mut $t, n: u64) {
                // SAFETY: per the contract above; every thread of the block
                // calls the collective once (threads past n with the identity).
                unsafe {
                    let (i, x) = value(input, n, $id);
                    write_own(out, i, n, $if(x));
                }
            }

            /// Exclusive block scan (thread 0 of a block gets the identity);
            /// thread `i < n` writes `out[i]`.
            ///
            /// # Safety
            /// `input` and `out` hold `n` elements; 1-D block.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $excl(input: *const $t, out: *mut $t, n: u64) {
                // SAFETY: per the contract above; every thread of the block
                // calls the collective once (threads past n with the identity).
                unsafe {
                    let (i, x) = value(input, n, $id);
                    write_own(out, i, n, $ef(x));
                }
            }
        };
    }

    /// The sum, min and max families of one type: sums through the
    /// conveniences, min and max through the general scans.
    macro_rules! num_families {
        ($t:ty: $rs:ident $is:ident $es:ident, $rmin:ident $imin:ident $emin:ident, $rmax:ident $imax:ident $emax:ident) => {
            family!($t, <$t>::ZERO, $rs = block::sum, $is = block::inclusive_sum, $es = block::exclusive_sum);
            family!(
                $t,
                <$t>::HIGHEST,
                $rmin = block::min,
                $imin = |x| block::inclusive_scan(x, <$t>::min_op),
                $emin = |x| block::exclusive_scan(x, <$t>::min_op, <$t>::HIGHEST)
            );
            family!(
                $t,
                <$t>::LOWEST,
                $rmax = block::max,
                $imax = |x| block::inclusive_scan(x, <$t>::max_op),
                $emax = |x| block::exclusive_scan(x, <$t>::max_op, <$t>::LOWEST)
            );
        };
    }

    num_families!(u32: block_reduce_sum_u32 block_incl_sum_u32 block_excl_sum_u32,
        block_reduce_min_u32 block_incl_min_u32 block_excl_min_u32,
        block_reduce_max_u32 block_incl_max_u32 block_excl_max_u32);
    num_families!(i32: block_reduce_sum_i32 block_incl_sum_i32 block_excl_sum_i32,
        block_reduce_min_i32 block_incl_min_i32 block_excl_min_i32,
        block_reduce_max_i32 block_incl_max_i32 block_excl_max_i32);
    num_families!(u64: block_reduce_sum_u64 block_incl_sum_u64 block_excl_sum_u64,
        block_reduce_min_u64 block_incl_min_u64 block_excl_min_u64,
        block_reduce_max_u64 block_incl_max_u64 block_excl_max_u64);
    num_families!(f32: block_reduce_sum_f32 block_incl_sum_f32 block_excl_sum_f32,
        block_reduce_min_f32 block_incl_min_f32 block_excl_min_f32,
        block_reduce_max_f32 block_incl_max_f32 block_excl_max_f32);

    #[inline(always)]
    fn xor(a: u32, b: u32) -> u32 {
        a ^ b
    }

    /// `x ↦ a·x + b` (a low, b high) then `y`'s map: `(ay·a, ay·b + by)`.
    #[inline(always)]
    fn affine(x: u64, y: u64) -> u64 {
        let (ax, bx, ay, by) = (x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32);
        ay.wrapping_mul(ax) as u64 | (ay.wrapping_mul(bx).wrapping_add(by) as u64) << 32
    }

    /// The identity map (a = 1, b = 0).
    const AFFINE_ID: u64 = 1;

    family!(
        u32,
        0,
        block_reduce_xor_u32 = |x| block::reduce(x, xor),
        block_incl_xor_u32 = |x| block::inclusive_scan(x, xor),
        block_excl_xor_u32 = |x| block::exclusive_scan(x, xor, 0)
    );
    family!(
        u64,
        AFFINE_ID,
        block_reduce_affine_u64 = |x| block::reduce(x, affine),
        block_incl_affine_u64 = |x| block::inclusive_scan(x, affine),
        block_excl_affine_u64 = |x| block::exclusive_scan(x, affine, AFFINE_ID)
    );

    /// Three collectives back to back on the managed scratch (see
    /// [`BLOCK_CHAIN`](super::BLOCK_CHAIN)): racecheck and the results prove a
    /// call does not overwrite what the previous one's readers still read.
    ///
    /// # Safety
    /// `input` and `out` hold `n` elements; 1-D block.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn block_chain_u32(input: *const u32, out: *mut u32, n: u64) {
        // SAFETY: per the contract above; every thread of the block makes the
        // same three collective calls (threads past n with 0).
        unsafe {
            let (i, x) = value(input, n, 0);
            let s = block::inclusive_sum(x);
            let m = block::reduce_all(x, <u32>::max_op);
            let e = block::exclusive_scan(x, xor, 0);
            write_own(out, i, n, s ^ m.rotate_left(8) ^ e.rotate_left(16));
        }
    }

    gpukern_device::static_shared!(
        /// The tile of `block_static_shared`: one u32 per thread of the largest block.
        BLOCK_TILE: [u32; 1024]
    );

    /// Reverses each block's slice through a `static_shared!` tile (see
    /// [`BLOCK_STATIC_SHARED`](super::BLOCK_STATIC_SHARED)).
    ///
    /// # Safety
    /// `input` and `out` hold `n` elements; 1-D block.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn block_static_shared(input: *const u32, out: *mut u32, n: u64) {
        let (t, _) = thread::thread_xy();
        let (b, _) = thread::block_dim_xy();
        let tile = BLOCK_TILE().cast::<u32>();
        // SAFETY: per the contract; t and b - 1 - t are below b <= 1024, the
        // tile's length; the barrier orders every write before the reads.
        unsafe {
            let (i, x) = value(input, n, 0);
            *tile.add(t as usize) = x;
            sync_threads();
            write_own(out, i, n, *tile.add((b - 1 - t) as usize));
        }
    }
}
