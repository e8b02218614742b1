//! Shared memory and barriers.
//!
//! * Dynamic shared memory ([`dynamic_shared`]): one region per block whose size
//!   the host sets at launch (the `shared_bytes` of the launch).
//! * Static shared memory ([`static_shared!`](crate::static_shared)): an array
//!   whose size is fixed at compile time, declared at module scope of the PTX.
//! * [`sync_threads`]: the block barrier; [`thread_fence`] and
//!   [`thread_fence_block`]: memory fences.

use core::arch::nvptx;

/// `bar.sync 0` (`__syncthreads()`): waits until every thread of the block has
/// arrived, and orders the block's shared- and global-memory accesses around it.
///
/// Every thread of the block must reach the same call (uniform control flow); a
/// barrier some threads skip hangs or corrupts the block. That is a logic error,
/// not undefined behaviour of Rust, so the function is safe.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier; callers keep it in uniform control flow (see above).
    unsafe { nvptx::_syncthreads() }
}

/// The block's dynamic shared memory (its size set at launch), as `*mut T`,
/// aligned for `T`. Reading or writing it is `unsafe`: the pointer is valid for
/// the bytes the launch gave, and threads of the block share it.
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// `membar.gl` (`__threadfence()`): this thread's writes before it are seen by
/// every thread of the grid before its writes after it.
#[inline(always)]
pub fn thread_fence() {
    // SAFETY: a fence; no operands.
    unsafe { core::arch::asm!("membar.gl;", options(nostack, preserves_flags)) }
}

/// `membar.cta` (`__threadfence_block()`): as [`thread_fence`], for the block.
#[inline(always)]
pub fn thread_fence_block() {
    // SAFETY: a fence; no operands.
    unsafe { core::arch::asm!("membar.cta;", options(nostack, preserves_flags)) }
}

/// Declares a static shared-memory array and binds a `*mut [T; N]` to it:
///
/// ```ignore
/// let tile: *mut [f32; 256] = gpukern_device::static_shared!(TILE: [f32; 256]);
/// ```
///
/// The array is one `.shared` variable of the PTX module, named `TILE` (the name
/// must be unique in the crate), 16-byte aligned, and every block gets its own
/// copy; it counts against the block's shared memory with the dynamic part.
/// Its contents start undefined. Accesses through the pointer are `unsafe`:
/// threads of the block share it, so writes and reads of different threads
/// must be separated by [`sync_threads`].
#[macro_export]
macro_rules! static_shared {
    ($name:ident : [$t:ty; $n:expr]) => {{
        const BYTES: usize = ::core::mem::size_of::<[$t; $n]>();
        const _: () = assert!(::core::mem::align_of::<$t>() <= 16, "static_shared!: at most 16-byte alignment");
        ::core::arch::global_asm!(
            concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
            bytes = const BYTES,
        );
        let p: u64;
        // SAFETY: takes the generic address of the variable declared above; no
        // memory is touched.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                p = out(reg64) p,
                options(pure, nomem, nostack, preserves_flags),
            )
        };
        p as *mut [$t; $n]
    }};
}
