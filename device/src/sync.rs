//! Shared memory and barriers.
//!
//! * Dynamic shared memory ([`dynamic_shared`]): one region per block whose size
//!   the host sets at launch (the `shared_bytes` of the launch).
//! * Static shared memory ([`static_shared!`](crate::static_shared)): an array
//!   whose size is fixed at compile time, declared at module scope of the PTX.
//! * [`sync_threads`]: the block barrier; [`thread_fence`] and
//!   [`thread_fence_block`]: memory fences.

/// `barrier.sync 0` (`__syncthreads()`): waits until every non-exited thread of
/// the block has arrived, and orders the block's shared- and global-memory
/// accesses around it.
///
/// Safe in any control flow. This is `barrier.sync` *without* `.aligned`
/// (PTX's `bar.sync` means `barrier.sync.aligned`, undefined unless every
/// thread of the block executes the same instruction). On sm_70 and later (the
/// crate refuses older targets) the PTX ISA defines the unaligned barrier for
/// divergent threads: arrival is counted per thread, from any instruction, and
/// a thread that has exited counts as arrived. So a barrier some threads skip
/// can make the block wait for ever (the host then waits on the launch), or
/// can complete with threads at different barriers, but it never makes a
/// memory access undefined: accesses to shared memory are `unsafe` anyway, and
/// their `// SAFETY:` comment is where the barrier placement is argued.
///
/// The unaligned form is also the one the compiler cannot break: a compiler
/// pass that duplicates a barrier into two branches would turn a uniform
/// `.aligned` barrier into a divergent one. On a converged warp, ptxas's code
/// for it is the same `BAR.SYNC`, behind at most one uniform branch.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier, defined in any control flow on sm_70+ (see above).
    unsafe { barrier_cta_sync_all(0) }
}

// LLVM's intrinsic rather than an `asm!`: it is `convergent`, so LLVM neither
// duplicates it into branches nor moves it across them (an `asm!` barrier was
// tail-duplicated: more barriers in the PTX, and more code), and it prints
// `barrier.sync 0;`, the unaligned form.
#[allow(improper_ctypes)]
unsafe extern "llvm-intrinsic" {
    #[link_name = "llvm.nvvm.barrier.cta.sync.all"]
    fn barrier_cta_sync_all(id: u32);
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

/// Declares a static shared-memory array at module scope, and a function of
/// the same name that returns its address as `*mut [T; N]`:
///
/// ```ignore
/// // At module scope (an item, not a statement):
/// gpukern_device::static_shared!(TILE: [f32; 256]);
///
/// // In a kernel:
/// let tile: *mut [f32; 256] = TILE();
/// ```
///
/// (The example is `ignore`d only because doctests run on the host; the
/// device crate's `block` module and `kernels-gpu`'s `block_static_shared`
/// kernel use it, and the PTX tests check what it emits.)
///
/// It expands to a module-level `global_asm!` declaring
/// `.shared .align 16 .b8 NAME[bytes];` (one variable of the PTX module; every
/// block gets its own copy, counted in the block's shared memory beside the
/// dynamic part), and `fn NAME() -> *mut [T; N]`, which takes the variable's
/// generic address with `cvta.shared.u64`. An attribute list and a visibility
/// may precede the name (`static_shared!(pub(crate) TILE: [u32; 32]);`).
///
/// Rules:
/// * `NAME` becomes a PTX symbol, so it must be unique in the whole PTX module
///   (every crate linked into it), and a valid PTX identifier;
/// * `T` is aligned to at most 16 bytes (checked at compile time);
/// * the contents start undefined, and threads of the block share them: writes
///   and reads of different threads must be separated by
///   [`sync_threads`]; accesses through the pointer are `unsafe`;
/// * the invoking crate enables `asm_experimental_arch` (inline PTX) and, as
///   every kernel crate, `abi_ptx` (see the README's kernel-crate template);
///
/// (A statement-position form cannot work: `global_asm!` is an item that Rust
/// accepts only at module scope.)
#[macro_export]
macro_rules! static_shared {
    ($(#[$attr:meta])* $vis:vis $name:ident : [$t:ty; $n:expr] $(;)?) => {
        ::core::arch::global_asm!(
            concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
            bytes = const ::core::mem::size_of::<[$t; $n]>(),
        );

        $(#[$attr])*
        #[inline(always)]
        #[allow(non_snake_case)]
        $vis fn $name() -> *mut [$t; $n] {
            const { assert!(::core::mem::align_of::<$t>() <= 16, "static_shared!: at most 16-byte alignment") };
            let p: u64;
            // SAFETY: takes the generic address of the variable declared
            // above; no memory is touched.
            unsafe {
                ::core::arch::asm!(
                    concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                    p = out(reg64) p,
                    options(pure, nomem, nostack, preserves_flags),
                )
            };
            p as *mut [$t; $n]
        }
    };
}
