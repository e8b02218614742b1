//! Device `printf` and assert.
//!
//! * [`gpu_printf!`](crate::gpu_printf): C's `printf` through the CUDA
//!   driver's `vprintf`. The output reaches the process's stdout when the
//!   host next synchronises (the driver's buffer is 1 MiB by default; what
//!   does not fit is dropped). Arguments are promoted as C's varargs are
//!   (`f32` → `f64`), so `%f` prints an `f32`; `%d`/`%u` take `i32`/`u32`,
//!   `%lld`/`%llu` take `i64`/`u64`, `%p` a pointer. Nothing checks the format
//!   against the arguments, as in C: a mismatch prints garbage, never more.
//! * [`gpu_assert!`](crate::gpu_assert): when the condition is false, the
//!   first failing thread of the launch writes the message, file, line, block
//!   and thread into an [`AssertRecord`] the host mapped into the device's
//!   address space (the module global `gpukern_assert_slot` holds its
//!   address), prints the same line, and traps. The host library reads the
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

/// C's default argument promotion for one `printf` argument.
pub trait PrintfArg {
    /// The promoted type, as `vprintf` reads it.
    type Out: Copy;
    /// The promoted value.
    fn promote(self) -> Self::Out;
}

macro_rules! printf_args {
    ($($t:ty => $o:ty),*) => {$(
        impl PrintfArg for $t {
            type Out = $o;
            #[inline(always)]
            fn promote(self) -> $o {
                self as $o
            }
        }
    )*};
}
printf_args!(f32 => f64, f64 => f64, i32 => i32, u32 => u32, i64 => i64, u64 => u64, usize => u64, isize => i64,
    u8 => u32, i8 => i32, u16 => u32, i16 => i32);

impl PrintfArg for bool {
    type Out = i32;
    #[inline(always)]
    fn promote(self) -> i32 {
        self as i32
    }
}

impl<T> PrintfArg for *const T {
    type Out = *const T;
    #[inline(always)]
    fn promote(self) -> *const T {
        self
    }
}

impl<T> PrintfArg for *mut T {
    type Out = *mut T;
    #[inline(always)]
    fn promote(self) -> *mut T {
        self
    }
}

/// Declares `#[repr(C)]` argument buffers of 1..=12 fields: C lays varargs
/// out as a struct of the promoted values, each at its natural alignment.
macro_rules! arg_structs {
    ($($name:ident($($t:ident),+);)*) => {$(
        #[doc(hidden)]
        #[repr(C)]
        pub struct $name<$($t),+>($(pub $t),+);
    )*};
}
arg_structs! {
    Args1(A);
    Args2(A, B);
    Args3(A, B, C);
    Args4(A, B, C, D);
    Args5(A, B, C, D, E);
    Args6(A, B, C, D, E, F);
    Args7(A, B, C, D, E, F, G);
    Args8(A, B, C, D, E, F, G, H);
    Args9(A, B, C, D, E, F, G, H, I);
    Args10(A, B, C, D, E, F, G, H, I, J);
    Args11(A, B, C, D, E, F, G, H, I, J, K);
    Args12(A, B, C, D, E, F, G, H, I, J, K, L);
}

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
/// docs for the conversions). Does nothing on the host build (so kernel code
/// that prints still compiles there).
#[macro_export]
macro_rules! gpu_printf {
    ($fmt:literal $(,)?) => {
        $crate::debug::printf_raw(concat!($fmt, "\0"), ::core::ptr::null())
    };
    ($fmt:literal, $($a:expr),+ $(,)?) => {{
        let args = $crate::printf_args!($($crate::debug::PrintfArg::promote($a)),+);
        $crate::debug::printf_raw(concat!($fmt, "\0"), &args as *const _ as *const u8)
    }};
}

/// Checks a condition in a kernel: when it is false, records the message with
/// the file and line for the host (`Error::KernelAssert`), prints it, and
/// traps. `gpu_assert!(cond)` uses the condition's text as the message.
#[macro_export]
macro_rules! gpu_assert {
    ($cond:expr $(,)?) => {
        $crate::gpu_assert!($cond, stringify!($cond))
    };
    ($cond:expr, $msg:expr $(,)?) => {
        if !$cond {
            $crate::debug::assert_failed($msg, file!(), line!())
        }
    };
}

/// `vprintf(format, args)`: `format` ends with a NUL; `args` points at the
/// promoted arguments laid out as C does (or is null).
#[inline(always)]
pub fn printf_raw(format: &'static str, args: *const u8) {
    #[cfg(target_arch = "nvptx64")]
    {
        extern "C" {
            fn vprintf(format: *const u8, args: *const u8) -> i32;
        }
        // SAFETY: the format is a NUL-terminated static string; `args` is
        // null or points at a live buffer laid out for it (the macro's), and
        // vprintf only reads them.
        unsafe { vprintf(format.as_ptr(), args) };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (format, args);
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{AssertRecord, ASSERT_DONE, ASSERT_WRITING};
    use core::arch::nvptx;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// The address of this module's assert record, written by the host when it
    /// loads the module; 0 when no host set it.
    #[export_name = "gpukern_assert_slot"]
    static mut ASSERT_SLOT: u64 = 0;

    /// Claimed by the first failing thread of the module (in device memory:
    /// atomics on mapped host memory are not portable).
    static ASSERT_CLAIM: AtomicU32 = AtomicU32::new(0);

    /// Copies `s` into `dst` as a NUL-terminated string, truncated to fit.
    fn copy_str(dst: &mut [u8], s: &str) {
        let n = s.len().min(dst.len() - 1);
        dst[..n].copy_from_slice(&s.as_bytes()[..n]);
        dst[n] = 0;
    }

    /// A failed [`gpu_assert!`](crate::gpu_assert): the record, a line on
    /// stdout, then `trap`.
    #[cold]
    #[inline(never)]
    pub fn assert_failed(message: &str, file: &str, line: u32) -> ! {
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
        crate::gpu_printf!(
            "gpu_assert failed: block (%u, %u, %u) thread (%u, %u, %u): %.*s:%u: %.*s\n",
            block[0],
            block[1],
            block[2],
            thread[0],
            thread[1],
            thread[2],
            file.len() as i32,
            file.as_ptr(),
            line,
            message.len() as i32,
            message.as_ptr()
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
pub fn assert_failed(message: &str, file: &str, line: u32) -> ! {
    panic!("gpu_assert failed at {file}:{line}: {message}")
}
