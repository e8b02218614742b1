//! The element-wise library: every operation × dtype × access pattern as a PTX
//! entry point, instantiated by one macro from the generic definitions of
//! [`crate::lanes`] (the lane rules) and [`crate::patterns`] (the walks).
//!
//! | kind   | operations                           | entry point `(…)`                    |
//! |--------|--------------------------------------|--------------------------------------|
//! | binary | add, sub, mul, div, min, max         | `(a, b, c, n)`                       |
//! | unary  | neg, abs, relu                       | `(a, c, n)`                          |
//! | unary  | exp, log, tanh, sigmoid, silu, gelu, gelu_tanh, rsqrt, sqrt (activations) | `(a, c, n)` |
//! | axpby  | `alpha·a + beta·b`                   | `(a, b, c, n, alpha: f32, beta: f32)` |
//!
//! Each has a scalar kernel (`sub_f16`: one element per thread, any element
//! alignment) and a 128-bit pack kernel (`sub_f16x8`: one 16-byte load per
//! operand, 16-byte aligned operands), both in the portable module; bf16 has a
//! third, the pack kernel with sm_90's packed bf16 instructions and hardware
//! rounding (`sub_bf16x8_sm90`, sm_90 module). Add's table rows name the seed's
//! kernels of [`crate::add`] (V1/V3 and V2/V6), which are built from the same
//! patterns. Adding an operation is one lane rule in `lanes` and one line below.
//!
//! The activations' lane rules are `gpukern_device::activations`: widen to f32,
//! the `gpukern_device::math` function (IEEE f32 and FMA only, the same bits on
//! the host), one rounding to the dtype (`exp_bf16x8_sm90` rounds with
//! `cvt.rn.bf16.f32`).

use crate::Dtype;

mod kinds;
pub use kinds::{BinaryOp, OpKind, OpPattern, UnaryOp};

/// Static facts about one element-wise kernel, shared with the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpKernel {
    /// Entry-point name in the portable PTX module.
    pub name: &'static str,
    /// What it computes.
    pub kind: OpKind,
    /// Element type.
    pub dtype: Dtype,
    /// How it moves data.
    pub pattern: OpPattern,
}

impl OpKernel {
    /// Elements per lane group (the grid is one thread per group).
    pub const fn lanes(&self) -> u32 {
        self.pattern.lanes(self.dtype)
    }
    /// Byte alignment every operand must have.
    pub const fn align(&self) -> usize {
        self.pattern.align(self.dtype)
    }
    /// True for the kernels of the sm_90 module.
    pub const fn needs_sm90(&self) -> bool {
        self.pattern.needs_sm90()
    }
}

/// The kernel for `(kind, dtype, pattern)`: every operation has `Scalar` and
/// `Pack` for every dtype, and `PackSm90` for bf16.
pub fn op_kernel(kind: OpKind, dtype: Dtype, pattern: OpPattern) -> Option<&'static OpKernel> {
    OP_KERNELS.iter().find(|k| k.kind == kind && k.dtype == dtype && k.pattern == pattern)
}

/// Declares the table and, for the device, the entry points: one row per
/// operation with its seven kernels (f32, f32x4, f16, f16x8, bf16, bf16x8, and
/// bf16x8 with sm_90's instructions).
macro_rules! op_kernels {
    ($($kind:ident $op:ident [$f32:ident $f32x4:ident $f16:ident $f16x8:ident $bf16:ident $bf16x8:ident $bf16x8_sm90:ident])*) => {
        /// Every element-wise kernel, by operation (the order of [`OpKind::ALL`]),
        /// then f32, f16, bf16, scalar before pack.
        pub const OP_KERNELS: &[OpKernel] = &[$(
            op_kernels!(@row $kind $op (stringify!($f32)) F32 Scalar),
            op_kernels!(@row $kind $op (stringify!($f32x4)) F32 Pack),
            op_kernels!(@row $kind $op (stringify!($f16)) F16 Scalar),
            op_kernels!(@row $kind $op (stringify!($f16x8)) F16 Pack),
            op_kernels!(@row $kind $op (stringify!($bf16)) Bf16 Scalar),
            op_kernels!(@row $kind $op (stringify!($bf16x8)) Bf16 Pack),
            op_kernels!(@row $kind $op (stringify!($bf16x8_sm90)) Bf16 PackSm90),
        )*];

        /// The PDL twins (sm_90 module): for every operation, the 128-bit kernel
        /// the automatic choice runs on sm_90 (f32x4, f16x8, bf16x8_sm90), with
        /// [`gpukern_device::hopper::pdl_enter`] before its walk; named after
        /// it with `_pdl`. The host launches these, and only these, with the
        /// programmatic-serialisation attribute.
        pub const PDL_KERNELS: &[OpKernel] = &[$(
            op_kernels!(@row $kind $op (concat!(stringify!($f32x4), "_pdl")) F32 Pack),
            op_kernels!(@row $kind $op (concat!(stringify!($f16x8), "_pdl")) F16 Pack),
            op_kernels!(@row $kind $op (concat!(stringify!($bf16x8_sm90), "_pdl")) Bf16 PackSm90),
        )*];

        #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
        mod kernels {
            use gpukern_device::activations::{Exp, Gelu, GeluTanh, Log, Rsqrt, Sigmoid, Silu, Sqrt, Tanh};
            use gpukern_device::lanes::{Abs, Axpby, Bf16, Div, Max, Min, Mul, Neg, Relu, Sub, F16, F32};
            use gpukern_device::patterns::{pack, scalar, PLAIN};
            $(
                op_kernels!(@entry $kind $op $f32 F32 scalar);
                op_kernels!(@entry $kind $op $f32x4 F32 pack);
                op_kernels!(@entry $kind $op $f16 F16 scalar);
                op_kernels!(@entry $kind $op $f16x8 F16 pack);
                op_kernels!(@entry $kind $op $bf16 Bf16 scalar);
                op_kernels!(@entry $kind $op $bf16x8 Bf16 pack);
            )*
        }

        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        mod kernels_sm90 {
            use gpukern_device::activations::{Exp, Gelu, GeluTanh, Log, Rsqrt, Sigmoid, Silu, Sqrt, Tanh};
            use gpukern_device::hopper::Bf16Sm90;
            use gpukern_device::lanes::{Abs, Add, Axpby, Div, Max, Min, Mul, Neg, Relu, Sub};
            use gpukern_device::patterns::{pack, PLAIN};
            $(op_kernels!(@entry_sm90 $kind $op $bf16x8_sm90);)*
        }

        // The PDL twins: the same walks behind `pdl_enter`, exported as `<name>_pdl`.
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        mod kernels_pdl {
            use gpukern_device::activations::{Exp, Gelu, GeluTanh, Log, Rsqrt, Sigmoid, Silu, Sqrt, Tanh};
            use gpukern_device::hopper::{pdl_enter, Bf16Sm90};
            use gpukern_device::lanes::{Abs, Add, Axpby, Div, Max, Min, Mul, Neg, Relu, Sub, F16, F32};
            use gpukern_device::patterns::{pack, PLAIN};
            $(
                op_kernels!(@pdl $kind $op $f32x4 F32);
                op_kernels!(@pdl $kind $op $f16x8 F16);
                op_kernels!(@pdl $kind $op $bf16x8_sm90 Bf16Sm90);
            )*
        }
    };
    (@pdl binary $op:ident $name:ident $e:ident) => { gpukern_device::ew_entry! {
        #[doc = concat!("`", stringify!($name), "` behind `pdl_enter` (see [`crate::ops::PDL_KERNELS`]).")]
        ///
        /// # Safety
        /// As the kernel it twins.
        #[export_name = concat!(stringify!($name), "_pdl")]
        binary $name<$e>(a, b, c, n) {
            pdl_enter();
            unsafe { pack::<$e, $op, PLAIN>($op, a, b, c, n) }
        }
    } };
    (@pdl unary $op:ident $name:ident $e:ident) => { gpukern_device::ew_entry! {
        #[doc = concat!("`", stringify!($name), "` behind `pdl_enter` (see [`crate::ops::PDL_KERNELS`]).")]
        ///
        /// # Safety
        /// As the kernel it twins.
        #[export_name = concat!(stringify!($name), "_pdl")]
        unary $name<$e>(a, c, n) {
            pdl_enter();
            unsafe { pack::<$e, $op, PLAIN>($op, a, core::ptr::null(), c, n) }
        }
    } };
    (@pdl axpby $op:ident $name:ident $e:ident) => { gpukern_device::ew_entry! {
        #[doc = concat!("`", stringify!($name), "` behind `pdl_enter` (see [`crate::ops::PDL_KERNELS`]).")]
        ///
        /// # Safety
        /// As the kernel it twins.
        #[export_name = concat!(stringify!($name), "_pdl")]
        binary $name<$e>(a, b, c, n, alpha: f32, beta: f32) {
            pdl_enter();
            let op = Axpby::<$e>::new(alpha, beta);
            unsafe { pack::<$e, Axpby<$e>, PLAIN>(op, a, b, c, n) }
        }
    } };
    // The sm_90 module's bf16 kernels (add's included: it has no seed kernel here).
    (@entry_sm90 binary Add $name:ident) => { op_kernels!(@binary Add $name Bf16Sm90 pack); };
    (@entry_sm90 $kind:ident $op:ident $name:ident) => { op_kernels!(@entry $kind $op $name Bf16Sm90 pack); };
    (@row binary $op:ident ($name:expr) $e:ident $p:ident) => {
        OpKernel { name: $name, kind: OpKind::Binary(BinaryOp::$op), dtype: Dtype::$e, pattern: OpPattern::$p }
    };
    (@row unary $op:ident ($name:expr) $e:ident $p:ident) => {
        OpKernel { name: $name, kind: OpKind::Unary(UnaryOp::$op), dtype: Dtype::$e, pattern: OpPattern::$p }
    };
    (@row axpby $op:ident ($name:expr) $e:ident $p:ident) => {
        OpKernel { name: $name, kind: OpKind::Axpby, dtype: Dtype::$e, pattern: OpPattern::$p }
    };
    (@walk scalar $e:ident $op:ty) => { scalar::<$e, $op> };
    (@walk pack $e:ident $op:ty) => { pack::<$e, $op, PLAIN> };
    // Add's entries are the seed's kernels, declared in `crate::add`.
    (@entry binary Add $name:ident $e:ident $walk:ident) => {};
    (@entry binary $op:ident $name:ident $e:ident $walk:ident) => { op_kernels!(@binary $op $name $e $walk); };
    (@binary $op:ident $name:ident $e:ident $walk:ident) => { gpukern_device::ew_entry! {
        #[doc = concat!("`c = ", stringify!($op), "(a, b)` on ", stringify!($e), ", pattern `", stringify!($walk), "` (see [`crate::ops`]).")]
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `n` elements, aligned as the pattern needs (the
        /// element, or 16 bytes for `pack`); `c` overlaps neither input.
        ///
        /// # Thread mapping
        /// One lane group (1 element, or one 16-byte pack) per thread, grid-stride.
        #[no_mangle]
        binary $name<$e>(a, b, c, n) {
            unsafe { op_kernels!(@walk $walk $e $op)($op, a, b, c, n) }
        }
    } };
    (@entry unary $op:ident $name:ident $e:ident $walk:ident) => { gpukern_device::ew_entry! {
        #[doc = concat!("`c = ", stringify!($op), "(a)` on ", stringify!($e), ", pattern `", stringify!($walk), "` (see [`crate::ops`]).")]
        ///
        /// # Safety
        /// `a`, `c` hold `n` elements, aligned as the pattern needs; they do not
        /// overlap.
        ///
        /// # Thread mapping
        /// One lane group per thread, grid-stride.
        #[no_mangle]
        unary $name<$e>(a, c, n) {
            unsafe { op_kernels!(@walk $walk $e $op)($op, a, core::ptr::null(), c, n) }
        }
    } };
    (@entry axpby $op:ident $name:ident $e:ident $walk:ident) => { gpukern_device::ew_entry! {
        #[doc = concat!("`c = alpha·a + beta·b` on ", stringify!($e), ", pattern `", stringify!($walk), "`: `alpha`, `beta` rounded once to the element type, each product and the sum rounded (no FMA).")]
        ///
        /// # Safety
        /// As the binary kernels.
        ///
        /// # Thread mapping
        /// One lane group per thread, grid-stride.
        #[no_mangle]
        binary $name<$e>(a, b, c, n, alpha: f32, beta: f32) {
            let op = Axpby::<$e>::new(alpha, beta);
            unsafe { op_kernels!(@walk $walk $e Axpby<$e>)(op, a, b, c, n) }
        }
    } };
}

op_kernels! {
    binary Add [add_f32 add_f32x4 add_f16 add_f16x8_pack add_bf16 add_bf16x8_pack add_bf16x8_sm90]
    binary Sub [sub_f32 sub_f32x4 sub_f16 sub_f16x8 sub_bf16 sub_bf16x8 sub_bf16x8_sm90]
    binary Mul [mul_f32 mul_f32x4 mul_f16 mul_f16x8 mul_bf16 mul_bf16x8 mul_bf16x8_sm90]
    binary Div [div_f32 div_f32x4 div_f16 div_f16x8 div_bf16 div_bf16x8 div_bf16x8_sm90]
    binary Min [min_f32 min_f32x4 min_f16 min_f16x8 min_bf16 min_bf16x8 min_bf16x8_sm90]
    binary Max [max_f32 max_f32x4 max_f16 max_f16x8 max_bf16 max_bf16x8 max_bf16x8_sm90]
    unary Neg [neg_f32 neg_f32x4 neg_f16 neg_f16x8 neg_bf16 neg_bf16x8 neg_bf16x8_sm90]
    unary Abs [abs_f32 abs_f32x4 abs_f16 abs_f16x8 abs_bf16 abs_bf16x8 abs_bf16x8_sm90]
    unary Relu [relu_f32 relu_f32x4 relu_f16 relu_f16x8 relu_bf16 relu_bf16x8 relu_bf16x8_sm90]
    unary Exp [exp_f32 exp_f32x4 exp_f16 exp_f16x8 exp_bf16 exp_bf16x8 exp_bf16x8_sm90]
    unary Log [log_f32 log_f32x4 log_f16 log_f16x8 log_bf16 log_bf16x8 log_bf16x8_sm90]
    unary Tanh [tanh_f32 tanh_f32x4 tanh_f16 tanh_f16x8 tanh_bf16 tanh_bf16x8 tanh_bf16x8_sm90]
    unary Sigmoid [sigmoid_f32 sigmoid_f32x4 sigmoid_f16 sigmoid_f16x8 sigmoid_bf16 sigmoid_bf16x8 sigmoid_bf16x8_sm90]
    unary Silu [silu_f32 silu_f32x4 silu_f16 silu_f16x8 silu_bf16 silu_bf16x8 silu_bf16x8_sm90]
    unary Gelu [gelu_f32 gelu_f32x4 gelu_f16 gelu_f16x8 gelu_bf16 gelu_bf16x8 gelu_bf16x8_sm90]
    unary GeluTanh [gelu_tanh_f32 gelu_tanh_f32x4 gelu_tanh_f16 gelu_tanh_f16x8 gelu_tanh_bf16 gelu_tanh_bf16x8 gelu_tanh_bf16x8_sm90]
    unary Rsqrt [rsqrt_f32 rsqrt_f32x4 rsqrt_f16 rsqrt_f16x8 rsqrt_bf16 rsqrt_bf16x8 rsqrt_bf16x8_sm90]
    unary Sqrt [sqrt_f32 sqrt_f32x4 sqrt_f16 sqrt_f16x8 sqrt_bf16 sqrt_bf16x8 sqrt_bf16x8_sm90]
    axpby Axpby [axpby_f32 axpby_f32x4 axpby_f16 axpby_f16x8 axpby_bf16 axpby_bf16x8 axpby_bf16x8_sm90]
}

#[cfg(test)]
mod tests;
