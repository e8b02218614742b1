//! Device `printf` and assert.
//!
//! * [`gpu_printf!`](crate::gpu_printf): C's `printf` through the CUDA
//!   driver's `vprintf`. The output reaches the process's stdout when the
//!   host next synchronises (the driver's buffer is 1 MiB by default; what
//!   does not fit is dropped). Arguments are promoted as C's varargs are
//!   (`f32` → `f64`), so `%f` prints an `f32`; `%d`/`%u` take `i32`/`u32`,
//!   `%lld`/`%llu` take `i64`/`u64`, `%p` a pointer, `%s` a `&'static CStr`
//!   (`c"…"`: NUL-terminated by construction). The format is checked against
//!   the arguments at compile time ([`printf`]): a wrong type, a missing or
//!   extra argument, `%n` or `*` is a compile error.
//! * [`gpu_assert!`](crate::gpu_assert): when the condition is false, the
//!   first failing thread of the launch writes the message, file, line, block
//!   and thread into an [`AssertRecord`] the host mapped into the device's
//!   address space (the module global `gpukern_assert_slot` holds its
//!   address), prints the same line (`gpu_assert failed: block (x, y, z)
//!   thread (x, y, z): file:line: message`), and traps. The host library reads the
//!   record after the fault and reports `Error::KernelAssert`. As after any
//!   fault, the context is unusable afterwards (see `gpukern::Gpu::reset`).

/// What a failed [`gpu_assert!`](crate::gpu_assert) leaves for the host: a
/// `#[repr(C)]` record of 512 bytes in host memory mapped into the device.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AssertRecord {
    /// 0: empty; 1: a thread is writing it; 2: complete.
    pub state: u32,
    /// Source line of the assert.
    pub line: u32,
    /// `blockIdx` (x, y, z) of the failing thread.
    pub block: [u32; 3],
    /// `threadIdx` (x, y, z) of the failing thread.
    pub thread: [u32; 3],
    /// Source file, NUL-terminated (truncated to fit).
    pub file: [u8; 120],
    /// The message, NUL-terminated (truncated to fit).
    pub message: [u8; 360],
}

/// The name of the module global that holds the record's device address (0:
/// no record; the assert then only prints and traps).
pub const ASSERT_SLOT: &str = "gpukern_assert_slot";

/// Record states.
pub const ASSERT_EMPTY: u32 = 0;
/// A thread claimed the record and is writing it.
pub const ASSERT_WRITING: u32 = 1;
/// The record is complete.
pub const ASSERT_DONE: u32 = 2;

const _: () = assert!(core::mem::size_of::<AssertRecord>() == 512);

use core::ffi::CStr;

pub mod printf;
#[doc(hidden)]
pub use printf::{
    Args1, Args10, Args11, Args12, Args2, Args3, Args4, Args5, Args6, Args7, Args8, Args9, PrintfArg, Spec,
};

/// The argument buffer of a [`gpu_printf!`](crate::gpu_printf) call, by count.
#[doc(hidden)]
#[macro_export]
macro_rules! printf_args {
    ($a:expr) => {
        $crate::debug::Args1($a)
    };
    ($a:expr, $b:expr) => {
        $crate::debug::Args2($a, $b)
    };
    ($a:expr, $b:expr, $c:expr) => {
        $crate::debug::Args3($a, $b, $c)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr) => {
        $crate::debug::Args4($a, $b, $c, $d)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
        $crate::debug::Args5($a, $b, $c, $d, $e)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr) => {
        $crate::debug::Args6($a, $b, $c, $d, $e, $f)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr) => {
        $crate::debug::Args7($a, $b, $c, $d, $e, $f, $g)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr, $h:expr) => {
        $crate::debug::Args8($a, $b, $c, $d, $e, $f, $g, $h)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr, $h:expr, $i:expr) => {
        $crate::debug::Args9($a, $b, $c, $d, $e, $f, $g, $h, $i)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr, $h:expr, $i:expr, $j:expr) => {
        $crate::debug::Args10($a, $b, $c, $d, $e, $f, $g, $h, $i, $j)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr, $h:expr, $i:expr, $j:expr, $k:expr) => {
        $crate::debug::Args11($a, $b, $c, $d, $e, $f, $g, $h, $i, $j, $k)
    };
    ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr, $h:expr, $i:expr, $j:expr, $k:expr, $l:expr) => {
        $crate::debug::Args12($a, $b, $c, $d, $e, $f, $g, $h, $i, $j, $k, $l)
    };
}

/// `printf` with a compile-time format and up to 12 arguments (see the module
/// docs for the conversions). The format is checked against the arguments
/// when the kernel compiles:
///
/// ```
/// use core::ffi::CStr;
/// let (n, x, name): (u64, f32, &'static CStr) = (4, 0.5, c"probe");
/// gpukern_device::gpu_printf!("%s: n = %llu, x = %f\n", name, n, x);
/// ```
///
/// ```compile_fail
/// // `%s` needs a NUL-terminated C string; an integer is refused.
/// gpukern_device::gpu_printf!("%s\n", 7u64);
/// ```
///
/// Does nothing on the host build (so kernel code that prints still compiles
/// there, with the same checks).
///
/// Its `vprintf` call is exempt from `unsafe_code` (`allow_internal_unsafe`)
/// for kernel crates built under gpukern-build's `-F unsafe_code`: every
/// argument passes through the sealed `PrintfArg` for its conversion, so no
/// input reaches `vprintf` as a type other than the one it reads.
#[macro_export]
#[cfg_attr(target_arch = "nvptx64", allow_internal_unsafe)]
macro_rules! gpu_printf {
    ($fmt:literal $(,)?) => {{
        const _: $crate::debug::Spec = $crate::debug::Spec::of(concat!($fmt, "\0"), 0);
        // SAFETY: a NUL-terminated literal format with no conversion (checked
        // above), so vprintf reads no argument.
        unsafe { $crate::debug::printf_raw(concat!($fmt, "\0"), ::core::ptr::null()) }
    }};
    ($fmt:literal, $($a:expr),+ $(,)?) => {{
        const __GPUKERN_SPEC: $crate::debug::Spec =
            $crate::debug::Spec::of(concat!($fmt, "\0"), [$(stringify!($a)),+].len());
        let args = $crate::__printf_pack!(__GPUKERN_SPEC; []; (0usize); $($a,)+);
        // SAFETY: a NUL-terminated literal format; each argument was promoted
        // through `PrintfArg` for its conversion's class (checked when this
        // compiled), laid out as C's varargs in `args`, which outlives the call;
        // `%s` arguments are `&'static CStr`s; `%n` was refused.
        unsafe { $crate::debug::printf_raw(concat!($fmt, "\0"), &args as *const _ as *const u8) }
    }};
}

/// Promotes each argument through `PrintfArg<{ kind of its conversion }>`,
/// then packs them (an internal step of [`gpu_printf!`](crate::gpu_printf)).
#[doc(hidden)]
#[macro_export]
macro_rules! __printf_pack {
    ($spec:ident; [$($done:expr,)*]; ($i:expr); ) => {
        $crate::printf_args!($($done),*)
    };
    ($spec:ident; [$($done:expr,)*]; ($i:expr); $a:expr, $($rest:expr,)*) => {
        $crate::__printf_pack!(
            $spec;
            [$($done,)* $crate::debug::PrintfArg::<{ $spec.kinds[$i] }>::promote($a),];
            ($i + 1);
            $($rest,)*
        )
    };
}

/// Checks a condition in a kernel: when it is false, records the message with
/// the file and line for the host (`Error::KernelAssert`), prints it, and
/// traps. `gpu_assert!(cond)` uses the condition's text as the message; a
/// message is a string literal (it is stored NUL-terminated, for `%s`).
#[macro_export]
macro_rules! gpu_assert {
    (@fail $cond:expr, $msg:expr) => {
        if !$cond {
            $crate::debug::assert_failed(
                const { $crate::debug::c_str(concat!($msg, "\0")) },
                const { $crate::debug::c_str(concat!(file!(), "\0")) },
                line!(),
            )
        }
    };
    ($cond:expr $(,)?) => {
        $crate::gpu_assert!(@fail $cond, stringify!($cond))
    };
    ($cond:expr, $msg:literal $(,)?) => {
        $crate::gpu_assert!(@fail $cond, $msg)
    };
}

/// `s` (ending with its only NUL) as a C string; a compile error in the
/// `const` that [`gpu_assert!`](crate::gpu_assert) evaluates it in otherwise.
#[doc(hidden)]
pub const fn c_str(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("gpu_assert!: the message holds a NUL byte"),
    }
}

/// `vprintf(format, args)`, unchecked: what [`gpu_printf!`](crate::gpu_printf)
/// calls after its compile-time checks.
///
/// # Safety
/// `format` ends with a NUL; `args` is null when the format has no
/// conversion, and otherwise points at a live buffer of the promoted
/// arguments laid out as C's varargs (a `#[repr(C)]` struct of them), one per
/// conversion and of the type `vprintf` reads for it; every `%s` argument
/// points at a NUL-terminated string that lives until the host has flushed
/// the output (a `'static` one); the format has no `%n`.
#[inline(always)]
pub unsafe fn printf_raw(format: &'static str, args: *const u8) {
    #[cfg(target_arch = "nvptx64")]
    {
        extern "C" {
            fn vprintf(format: *const u8, args: *const u8) -> i32;
        }
        // SAFETY: the caller's contract is vprintf's.
        unsafe { vprintf(format.as_ptr(), args) };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (format, args);
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{AssertRecord, ASSERT_DONE, ASSERT_WRITING};
    use core::arch::nvptx;
    use core::ffi::CStr;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// The address of this module's assert record, written by the host when it
    /// loads the module; 0 when no host set it.
    #[export_name = "gpukern_assert_slot"]
    static mut ASSERT_SLOT: u64 = 0;

    /// Claimed by the first failing thread of the module (in device memory:
    /// atomics on mapped host memory are not portable).
    static ASSERT_CLAIM: AtomicU32 = AtomicU32::new(0);

    /// Copies `s` into `dst` as a NUL-terminated string, truncated to fit.
    fn copy_str(dst: &mut [u8], s: &CStr) {
        let s = s.to_bytes();
        let n = s.len().min(dst.len() - 1);
        dst[..n].copy_from_slice(&s[..n]);
        dst[n] = 0;
    }

    /// A failed [`gpu_assert!`](crate::gpu_assert): the record, a line on
    /// stdout, then `trap`.
    #[cold]
    #[inline(never)]
    pub fn assert_failed(message: &'static CStr, file: &'static CStr, line: u32) -> ! {
        // SAFETY: a plain read of the module global the host wrote before launch.
        let slot = unsafe { core::ptr::read_volatile(&raw const ASSERT_SLOT) };
        // SAFETY: special registers.
        let (block, thread) = unsafe {
            (
                [nvptx::_block_idx_x() as u32, nvptx::_block_idx_y() as u32, nvptx::_block_idx_z() as u32],
                [nvptx::_thread_idx_x() as u32, nvptx::_thread_idx_y() as u32, nvptx::_thread_idx_z() as u32],
            )
        };
        if slot != 0 {
            let rec = slot as *mut AssertRecord;
            if ASSERT_CLAIM.compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                // SAFETY: the host mapped 512 bytes of host memory at `slot`
                // for this record; the claim above lets one thread of the
                // module write it, once.
                unsafe {
                    core::ptr::write_volatile(&raw mut (*rec).state, ASSERT_WRITING);
                    (*rec).line = line;
                    (*rec).block = block;
                    (*rec).thread = thread;
                    copy_str(&mut (*rec).file, file);
                    copy_str(&mut (*rec).message, message);
                    // The fields reach host memory before the state says done.
                    core::arch::asm!("fence.sc.sys;", options(nostack, preserves_flags));
                    core::ptr::write_volatile(&raw mut (*rec).state, ASSERT_DONE);
                    core::arch::asm!("fence.sc.sys;", options(nostack, preserves_flags));
                }
            }
        }
        // Plain `%s` of NUL-terminated strings: CUDA's vprintf has no `%.*s`.
        crate::gpu_printf!(
            "gpu_assert failed: block (%u, %u, %u) thread (%u, %u, %u): %s:%u: %s\n",
            block[0],
            block[1],
            block[2],
            thread[0],
            thread[1],
            thread[2],
            file,
            line,
            message
        );
        // SAFETY: trap ends the kernel; the host sees the fault at its next sync.
        unsafe { nvptx::trap() }
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::assert_failed;

/// On the host build a failed assert panics with the same message, so a
/// kernel's code can be run and tested on the CPU.
#[cfg(not(target_arch = "nvptx64"))]
pub fn assert_failed(message: &'static CStr, file: &'static CStr, line: u32) -> ! {
    let (m, f) = (message.to_str().unwrap_or("(not UTF-8)"), file.to_str().unwrap_or("(not UTF-8)"));
    panic!("gpu_assert failed at {f}:{line}: {m}")
}
