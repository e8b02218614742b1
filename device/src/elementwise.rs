//! Element-wise entry points for your own operations: [`elementwise!`](crate::elementwise)
//! turns a type implementing [`Op`](crate::lanes::Op) and [`Params`] into PTX
//! kernels of every access width, with a parameter list the host library
//! (`gpukern::Module`) knows, and a manifest it checks before it launches them.
//!
//! For an operation `name` and each dtype listed, two kernels:
//!
//! | dtype | scalar (any element alignment) | pack (16-byte aligned operands) |
//! |---|---|---|
//! | `F32` | `name_f32` | `name_f32x4` |
//! | `F16` | `name_f16` | `name_f16x8` |
//! | `Bf16` | `name_bf16` | `name_bf16x8` |
//!
//! Parameters: unary `(a, c, n: u64, p0: f32, p1: f32)`, binary
//! `(a, b, c, n: u64, p0: f32, p1: f32)`, where `p0`, `p1` are the launch's
//! scalars, handed to [`Params::from_params`]. The walks are the library's
//! own ([`crate::patterns`]): grid-stride over lane groups, any grid, any `n`.
//!
//! Built for sm_90 (`gpukern_build::Arch::Sm90`), each pack kernel also has a
//! **PDL twin** `name_f32x4_pdl` (…`_f16x8_pdl`, `_bf16x8_pdl`): the same walk
//! behind [`pdl_enter`](crate::hopper::pdl_enter), which the host launches with
//! the programmatic-dependent-launch attribute where the stream's `Pdl` setting
//! says so (the host also checks, in the PTX, that the twin waits before
//! anything else).
//!
//! The manifest is a global `gpukern_ew_<name>` of four `u32`:
//! [`ABI_MAGIC`], [`ABI_VERSION`], the [`EwKind`] and a mask: the dtypes (bit 0
//! f32, bit 1 f16, bit 2 bf16) and [`EW_PDL`] when the module has the twins. The host refuses to launch an operation whose
//! manifest is missing or says otherwise, so a hand-written kernel that merely
//! shares a name cannot be launched through the safe API with the wrong
//! parameters.

use crate::lanes::{Elem, Op};

/// First word of every manifest ("gpke").
pub const ABI_MAGIC: u32 = 0x6770_6b65;
/// Version of the parameter lists above.
pub const ABI_VERSION: u32 = 1;

/// The dtypes of a manifest, in mask-bit order (f32, f16, bf16): the bit of
/// each and the suffixes of its scalar and pack kernels. The host library
/// reads the same table; the macro's literal suffixes are checked against it
/// at compile time.
pub const EW_DTYPES: [(u32, &str, &str); 3] = [(1, "_f32", "_f32x4"), (2, "_f16", "_f16x8"), (4, "_bf16", "_bf16x8")];

/// Manifest mask bit: the module (an sm_90 build) has a PDL twin
/// `<pack kernel>_pdl` of every pack kernel of the operation.
pub const EW_PDL: u32 = 1 << 8;

/// Suffix of a PDL twin's name (after the pack kernel's).
pub const PDL_SUFFIX: &str = "_pdl";

/// Byte-wise equality in a const context (the suffix check).
#[doc(hidden)]
pub const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The one element-wise kernel signature, written once: `(a: *const T,
/// [b: *const T,] c: *mut T, n: u64, tail…)` with `T` the lane type of the
/// element type. Every element-wise entry point — the library's add, bulk
/// and element-wise kernels and [`elementwise!`](crate::elementwise)'s — is
/// declared through it; the tail (nothing, two `f32`, or the bulk kernels'
/// two `u32`) is what the host's launch passes after `n`.
///
/// The body is compiled as a safe `#[inline(always)]` fn that the entry
/// calls, so it can touch the pointers only through `unsafe` blocks of its
/// own: in a kernel crate that gpukern-build compiles under `-F unsafe_code`
/// (the default), a body that writes through them does not compile. This
/// macro's own `unsafe` (the entry's declaration) is exempt from that lint
/// (`allow_internal_unsafe`) because it is sound for every input: the entry
/// only passes its arguments on to the safe body.
#[doc(hidden)]
#[macro_export]
#[cfg_attr(target_arch = "nvptx64", allow_internal_unsafe)]
macro_rules! ew_entry {
    ($(#[$m:meta])* unary $name:ident<$e:ty>($a:ident, $c:ident, $n:ident $(, $p:ident: $pt:ty)*) $body:block) => {
        $(#[$m])*
        pub unsafe extern "ptx-kernel" fn $name(
            $a: *const <$e as $crate::lanes::Elem>::T,
            $c: *mut <$e as $crate::lanes::Elem>::T,
            $n: u64,
            $($p: $pt),*
        ) {
            // The body is a safe fn: the entry's `unsafe` does not reach it.
            #[inline(always)]
            fn body(
                $a: *const <$e as $crate::lanes::Elem>::T,
                $c: *mut <$e as $crate::lanes::Elem>::T,
                $n: u64,
                $($p: $pt),*
            ) $body
            body($a, $c, $n, $($p),*)
        }
    };
    ($(#[$m:meta])* binary $name:ident<$e:ty>($a:ident, $b:ident, $c:ident, $n:ident $(, $p:ident: $pt:ty)*) $body:block) => {
        $(#[$m])*
        pub unsafe extern "ptx-kernel" fn $name(
            $a: *const <$e as $crate::lanes::Elem>::T,
            $b: *const <$e as $crate::lanes::Elem>::T,
            $c: *mut <$e as $crate::lanes::Elem>::T,
            $n: u64,
            $($p: $pt),*
        ) {
            // The body is a safe fn: the entry's `unsafe` does not reach it.
            #[inline(always)]
            fn body(
                $a: *const <$e as $crate::lanes::Elem>::T,
                $b: *const <$e as $crate::lanes::Elem>::T,
                $c: *mut <$e as $crate::lanes::Elem>::T,
                $n: u64,
                $($p: $pt),*
            ) $body
            body($a, $b, $c, $n, $($p),*)
        }
    };
}

/// What a manifest says an operation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum EwKind {
    /// `c = op(a)`.
    Unary = 1,
    /// `c = op(a, b)`.
    Binary = 2,
}

/// How an operation is built from the launch's two scalars (on the device, once
/// per thread). An operation without parameters ignores them.
pub trait Params<E: Elem>: Op<E> {
    /// The operation for scalars `p` (as the host passed them, in f32).
    fn from_params(p: [f32; 2]) -> Self;
}

/// Declares the element-wise entry points and manifest of user operations.
///
/// ```ignore
/// gpukern_device::elementwise! {
///     unary silu = Silu: [F32, Bf16];
///     binary relu_axpy = ReluAxpy: [F32, Bf16];
/// }
/// ```
///
/// Each line: `unary` or `binary`, the name (the kernels' prefix, unique in
/// the module), the operation type, and the dtypes (`F32`, `F16`, `Bf16`). The
/// type implements [`Op`] and [`Params`] for each dtype; a unary operation has
/// `const INPUTS: u32 = 1` (checked at compile time), a binary one 2. Outside
/// `nvptx64` the macro expands to nothing, so the crate also builds for the host.
///
/// Its expansion's `unsafe` (the walk's call, the manifest's `export_name`)
/// is exempt from `unsafe_code` (`allow_internal_unsafe`), so a kernel crate
/// built under gpukern-build's `-F unsafe_code` may use it: it is sound for
/// every input, since the manifest, the entry points and their walks are all
/// derived here from the same `unary`/`binary` kind and dtype list, and the
/// operation is a safe [`Op`] checked to read as many inputs as the kind says.
#[macro_export]
#[cfg_attr(target_arch = "nvptx64", allow_internal_unsafe)]
macro_rules! elementwise {
    ($($kind:ident $name:ident = $op:ty : [$($e:ident),+ $(,)?];)*) => {
        $($crate::elementwise!(@one $kind $name ($op) [$($e)+]);)*
    };
    (@one $kind:ident $name:ident ($op:ty) [$($e:ident)+]) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[used]
            #[export_name = concat!("gpukern_ew_", stringify!($name))]
            static MANIFEST: [u32; 4] = [
                $crate::ABI_MAGIC,
                $crate::ABI_VERSION,
                $crate::elementwise!(@kind $kind) as u32,
                0 $(| $crate::elementwise!(@bit $e))+
                    | if cfg!(target_feature = "sm_90") { $crate::EW_PDL } else { 0 },
            ];
            $($crate::elementwise!(@dtype $kind $name ($op) $e);)+
        };
    };
    (@kind unary) => { $crate::EwKind::Unary };
    (@kind binary) => { $crate::EwKind::Binary };
    (@bit F32) => { $crate::EW_DTYPES[0].0 };
    (@bit F16) => { $crate::EW_DTYPES[1].0 };
    (@bit Bf16) => { $crate::EW_DTYPES[2].0 };
    (@inputs unary) => { 1 };
    (@inputs binary) => { 2 };
    (@dtype $kind:ident $name:ident ($op:ty) F32) => { $crate::elementwise!(@entries $kind $name ($op) F32 0 "_f32" "_f32x4" "_f32x4_pdl"); };
    (@dtype $kind:ident $name:ident ($op:ty) F16) => { $crate::elementwise!(@entries $kind $name ($op) F16 1 "_f16" "_f16x8" "_f16x8_pdl"); };
    (@dtype $kind:ident $name:ident ($op:ty) Bf16) => { $crate::elementwise!(@entries $kind $name ($op) Bf16 2 "_bf16" "_bf16x8" "_bf16x8_pdl"); };
    (@entries $kind:ident $name:ident ($op:ty) $e:ident $i:literal $scalar:literal $pack:literal $twin:literal) => {
        const _: () = {
            assert!(
                $crate::const_str_eq($scalar, $crate::EW_DTYPES[$i].1) && $crate::const_str_eq($pack, $crate::EW_DTYPES[$i].2),
                "the kernel suffixes follow EW_DTYPES",
            );
            assert!(
                <$op as $crate::lanes::Op<$crate::lanes::$e>>::INPUTS == $crate::elementwise!(@inputs $kind),
                concat!(stringify!($name), ": Op::INPUTS does not match `", stringify!($kind), "`"),
            );
            $crate::elementwise!(@entry $kind $name ($op) $e $scalar scalar);
            $crate::elementwise!(@entry $kind $name ($op) $e $pack pack);
            #[cfg(target_feature = "sm_90")]
            $crate::elementwise!(@entry $kind $name ($op) $e $twin pdl);
        };
    };
    (@walk scalar $e:ident $op:ty) => { $crate::patterns::scalar::<$crate::lanes::$e, $op> };
    (@walk pack $e:ident $op:ty) => { $crate::patterns::pack::<$crate::lanes::$e, $op, { $crate::patterns::PLAIN }> };
    // The pack walk behind the PDL prologue: nothing touches memory before the wait.
    (@walk pdl $e:ident $op:ty) => {
        {
            $crate::hopper::pdl_enter();
            $crate::patterns::pack::<$crate::lanes::$e, $op, { $crate::patterns::PLAIN }>
        }
    };
    (@entry unary $name:ident ($op:ty) $e:ident $suffix:literal $walk:ident) => {
        $crate::ew_entry! {
            /// A user element-wise kernel (see `gpukern_device::elementwise!`).
            ///
            /// # Safety
            /// `a`, `c` hold `n` elements, aligned as the walk needs; `c` overlaps no input.
            #[export_name = concat!(stringify!($name), $suffix)]
            unary $walk<$crate::lanes::$e>(a, c, n, p0: f32, p1: f32) {
                let op = <$op as $crate::Params<$crate::lanes::$e>>::from_params([p0, p1]);
                // SAFETY: per the contract; a unary operation never reads b.
                unsafe { $crate::elementwise!(@walk $walk $e $op)(op, a, ::core::ptr::null(), c, n) }
            }
        }
    };
    (@entry binary $name:ident ($op:ty) $e:ident $suffix:literal $walk:ident) => {
        $crate::ew_entry! {
            /// A user element-wise kernel (see `gpukern_device::elementwise!`).
            ///
            /// # Safety
            /// `a`, `b`, `c` hold `n` elements, aligned as the walk needs; `c` overlaps no input.
            #[export_name = concat!(stringify!($name), $suffix)]
            binary $walk<$crate::lanes::$e>(a, b, c, n, p0: f32, p1: f32) {
                let op = <$op as $crate::Params<$crate::lanes::$e>>::from_params([p0, p1]);
                // SAFETY: per the contract.
                unsafe { $crate::elementwise!(@walk $walk $e $op)(op, a, b, c, n) }
            }
        }
    };
}
