//! `gpu_printf!`'s compile-time check: the format string is parsed in a
//! `const` ([`Spec::of`]), each conversion becomes a class ([`conv`]), and each
//! argument must implement [`PrintfArg`] for its conversion's class, so a
//! mismatch, a missing or extra argument, or an unsupported conversion is a
//! compile error, never a `vprintf` that reads the wrong bytes.

use core::ffi::{c_char, CStr};

/// The conversion classes: what C's `vprintf` reads for a conversion, after
/// C's default argument promotion.
pub mod conv {
    /// `%d`, `%i` (also with `h`, `hh`): a signed `int`.
    pub const INT: u8 = 1;
    /// `%u`, `%x`, `%X`, `%o` (also with `h`, `hh`): an `unsigned int`.
    pub const UINT: u8 = 2;
    /// `%ld`, `%lld`, `%zd`, … : a signed 64-bit integer.
    pub const LONG: u8 = 3;
    /// `%lu`, `%llu`, `%lx`, `%zu`, … : an unsigned 64-bit integer.
    pub const ULONG: u8 = 4;
    /// `%f`, `%e`, `%g`, `%a` (any case, also with `l`): a `double`.
    pub const DOUBLE: u8 = 5;
    /// `%s`: a pointer to a NUL-terminated string.
    pub const STR: u8 = 6;
    /// `%p`: a pointer, printed, never read.
    pub const PTR: u8 = 7;
    /// `%c`: an `int` holding a byte.
    pub const CHAR: u8 = 8;
}

/// The most arguments one `gpu_printf!` takes.
pub const MAX_ARGS: usize = 12;

/// A format's conversions, in order.
#[derive(Clone, Copy)]
pub struct Spec {
    /// The class of conversion `i` ([`conv`]), for `i < count`.
    pub kinds: [u8; MAX_ARGS],
    /// How many conversions take an argument.
    pub count: usize,
}

impl Spec {
    /// Parses `fmt` and checks it takes `args` arguments; any problem is a
    /// panic, which in the `const` that `gpu_printf!` evaluates it in is a
    /// compile error with this message.
    pub const fn of(fmt: &str, args: usize) -> Spec {
        let b = fmt.as_bytes();
        let mut spec = Spec { kinds: [0; MAX_ARGS], count: 0 };
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'%' {
                i += 1;
                continue;
            }
            i += 1;
            if i < b.len() && b[i] == b'%' {
                i += 1;
                continue;
            }
            while i < b.len() && matches!(b[i], b'-' | b'+' | b' ' | b'#' | b'0') {
                i += 1;
            }
            if i < b.len() && b[i] == b'*' {
                panic!("gpu_printf!: `*` (a width or precision from the arguments) is not supported by CUDA's vprintf");
            }
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' {
                i += 1;
                if i < b.len() && b[i] == b'*' {
                    panic!("gpu_printf!: `.*` (a precision from the arguments) is not supported by CUDA's vprintf");
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // Length: none, h, hh (still an int), or l, ll, z, j, t (64 bits).
            let mut wide = false;
            let mut short = false;
            while i < b.len() && matches!(b[i], b'h' | b'l' | b'z' | b'j' | b't' | b'L' | b'q') {
                match b[i] {
                    b'h' => short = true,
                    b'L' | b'q' => panic!("gpu_printf!: `L`/`q` (long double, quad) have no argument type here"),
                    _ => wide = true,
                }
                i += 1;
            }
            if i >= b.len() {
                panic!("gpu_printf!: the format ends inside a conversion");
            }
            let kind = match b[i] {
                b'd' | b'i' if wide => conv::LONG,
                b'd' | b'i' => conv::INT,
                b'u' | b'x' | b'X' | b'o' if wide => conv::ULONG,
                b'u' | b'x' | b'X' | b'o' => conv::UINT,
                b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' if !short => conv::DOUBLE,
                b's' if !wide && !short => conv::STR,
                b'p' if !wide && !short => conv::PTR,
                b'c' if !wide && !short => conv::CHAR,
                b'n' => panic!("gpu_printf!: `%n` is refused (it writes through a pointer)"),
                _ => panic!(
                    "gpu_printf!: unsupported conversion (use d i u x X o c s p f F e E g G a A, with h hh l ll z j t)"
                ),
            };
            if spec.count == MAX_ARGS {
                panic!("gpu_printf!: at most 12 conversions");
            }
            spec.kinds[spec.count] = kind;
            spec.count += 1;
            i += 1;
        }
        if spec.count != args {
            panic!("gpu_printf!: the number of arguments differs from the format's conversions");
        }
        spec
    }
}

/// An argument for a conversion of class `CONV` ([`conv`]), with C's default
/// argument promotion: the type `vprintf` reads for it.
#[diagnostic::on_unimplemented(
    message = "gpu_printf!: `{Self}` does not match its conversion in the format",
    label = "this argument's type does not fit the conversion at its position",
    note = "%d %i: i32 i16 i8 bool; %u %x %X %o: u32 u16 u8; %ld %lld (z, j, t): i64 isize; %lu %llu %lx: u64 usize; %c: u8; %f %e %g %a: f32 f64; %s: &'static CStr (c\"…\"); %p: *const T, *mut T"
)]
pub trait PrintfArg<const CONV: u8>: sealed::Sealed {
    /// The promoted type, as `vprintf` reads it.
    type Out: Copy;
    /// The promoted value.
    fn promote(self) -> Self::Out;
}

/// Sealed: `gpu_printf!` hands `promote`'s value to `vprintf` as the type its
/// conversion reads (a `%s` argument as a pointer to a live NUL-terminated
/// string), so only the impls below, each of which promotes to exactly that
/// type, may exist. A user impl could hand `vprintf` any address for `%s`, or
/// a one-byte value where `%f` reads eight.
mod sealed {
    pub trait Sealed {}
}

macro_rules! printf_arg {
    ($($conv:ident: $($t:ty),+ => $o:ty;)*) => {$($(
        impl PrintfArg<{ conv::$conv }> for $t {
            type Out = $o;
            #[inline(always)]
            fn promote(self) -> $o {
                self as $o
            }
        }
    )+)*};
}
impl sealed::Sealed for i32 {}
impl sealed::Sealed for i16 {}
impl sealed::Sealed for i8 {}
impl sealed::Sealed for bool {}
impl sealed::Sealed for u32 {}
impl sealed::Sealed for u16 {}
impl sealed::Sealed for u8 {}
impl sealed::Sealed for i64 {}
impl sealed::Sealed for isize {}
impl sealed::Sealed for u64 {}
impl sealed::Sealed for usize {}
impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}
impl sealed::Sealed for &'static CStr {}
impl<T> sealed::Sealed for *const T {}
impl<T> sealed::Sealed for *mut T {}

printf_arg! {
    INT: i32, i16, i8, bool => i32;
    UINT: u32, u16, u8 => u32;
    LONG: i64, isize => i64;
    ULONG: u64, usize => u64;
    DOUBLE: f32, f64 => f64;
    CHAR: u8 => i32;
}

/// `%s`: a C string, NUL-terminated by construction, that lives for the
/// program (`vprintf` may read it when the host flushes the buffer).
impl PrintfArg<{ conv::STR }> for &'static CStr {
    type Out = *const c_char;
    #[inline(always)]
    fn promote(self) -> *const c_char {
        self.as_ptr()
    }
}

impl<T> PrintfArg<{ conv::PTR }> for *const T {
    type Out = *const T;
    #[inline(always)]
    fn promote(self) -> *const T {
        self
    }
}

impl<T> PrintfArg<{ conv::PTR }> for *mut T {
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

#[cfg(test)]
mod tests {
    use super::{conv, Spec};

    #[test]
    fn conversions_map_to_their_classes() {
        let s = Spec::of("%d %5.2f %llu %x %s %p %c %% %-08lld %hhu %zu\0", 10);
        let want = [conv::INT, conv::DOUBLE, conv::ULONG, conv::UINT, conv::STR, conv::PTR, conv::CHAR, conv::LONG];
        assert_eq!(&s.kinds[..8], &want);
        assert_eq!(&s.kinds[8..10], &[conv::UINT, conv::ULONG]);
        assert_eq!(Spec::of("100%% sure\0", 0).count, 0);
    }

    #[test]
    #[should_panic(expected = "`%n` is refused")]
    fn percent_n_is_refused() {
        Spec::of("%n\0", 1);
    }

    #[test]
    #[should_panic(expected = "`.*`")]
    fn star_precision_is_refused() {
        Spec::of("%.*s\0", 2);
    }

    #[test]
    #[should_panic(expected = "number of arguments")]
    fn a_missing_argument_is_refused() {
        Spec::of("%d %d\0", 1);
    }
}
