//! The gated activations: `out = act(gate) · up` for `act` ∈ {SiLU, GELU
//! (erf), GELU (tanh)}, the lane rule [`gpukern_device::activations::Glu`]
//! (the activation's f32 function, the product rounded once), over pitched
//! rows ([`gpukern_device::patterns::rows`]): one row of `n` is the plain
//! element-wise form, and rows `[gate | up]` of one buffer (a fused gate-and-up
//! projection's output) are `gate` and `up` `n` elements apart with the same
//! pitch, read with no copy.
//!
//! Every kernel has the parameters `(gate, up, out, rows: u32, n: u64,
//! gate_pitch: u64, up_pitch: u64, out_pitch: u64)` and is launched with grid
//! `(x, y)`: `y` rows at a time, `x` blocks walking each row. The patterns are
//! those of the element-wise library ([`OpPattern`]): scalar (any element
//! alignment), 128-bit packs (16-byte aligned operands and pitches of whole
//! packs), and for bf16 on sm_90 the packs with `cvt.rn.bf16.f32` rounding;
//! the 128-bit kernels' PDL twins (`<name>_pdl`, sm_90 module) run the same
//! walk behind `pdl_enter`.

use crate::ops::{OpPattern, UnaryOp};
use crate::Dtype;

/// The activation of a gated activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GluOp {
    /// `silu(gate) · up` (SwiGLU).
    Silu,
    /// `gelu(gate) · up` with the erf GELU (GeGLU).
    Gelu,
    /// `gelu_tanh(gate) · up` (GeGLU with GELU's tanh approximation).
    GeluTanh,
}

impl GluOp {
    /// Every gated activation.
    pub const ALL: [GluOp; 3] = [GluOp::Silu, GluOp::Gelu, GluOp::GeluTanh];
    /// Lower-case name, the prefix of its kernels.
    pub const fn name(self) -> &'static str {
        match self {
            GluOp::Silu => "glu_silu",
            GluOp::Gelu => "glu_gelu",
            GluOp::GeluTanh => "glu_gelu_tanh",
        }
    }
    /// The activation applied to the gate (its f32 function is the one the
    /// element-wise activation kernels apply in f32).
    pub const fn activation(self) -> UnaryOp {
        match self {
            GluOp::Silu => UnaryOp::Silu,
            GluOp::Gelu => UnaryOp::Gelu,
            GluOp::GeluTanh => UnaryOp::GeluTanh,
        }
    }
}

/// Static facts about one gated-activation kernel, shared with the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GluKernel {
    /// Entry-point name.
    pub name: &'static str,
    /// What it computes.
    pub op: GluOp,
    /// Element type.
    pub dtype: Dtype,
    /// How it moves data (as the element-wise kernels).
    pub pattern: OpPattern,
}

impl GluKernel {
    /// Elements per lane group.
    pub const fn lanes(&self) -> u32 {
        self.pattern.lanes(self.dtype)
    }
    /// Byte alignment every operand row must have.
    pub const fn align(&self) -> usize {
        self.pattern.align(self.dtype)
    }
    /// True for the kernels of the sm_90 module.
    pub const fn needs_sm90(&self) -> bool {
        self.pattern.needs_sm90()
    }
}

/// The kernel of `(op, dtype, pattern)`: `Scalar` and `Pack` for every dtype,
/// `PackSm90` for bf16.
pub fn glu_kernel(op: GluOp, dtype: Dtype, pattern: OpPattern) -> Option<&'static GluKernel> {
    GLU_KERNELS.iter().find(|k| k.op == op && k.dtype == dtype && k.pattern == pattern)
}

/// The PDL twin of the 128-bit kernel `(op, dtype)` runs on sm_90.
pub fn glu_pdl_kernel(op: GluOp, dtype: Dtype) -> Option<&'static GluKernel> {
    GLU_PDL_KERNELS.iter().find(|k| k.op == op && k.dtype == dtype)
}

macro_rules! glu_kernels {
    ($($op:ident $act:ident [$f32:ident $f32x4:ident $f16:ident $f16x8:ident $bf16:ident $bf16x8:ident $sm90:ident])*) => {
        /// Every gated-activation kernel: by operation, then f32, f16, bf16,
        /// scalar before pack, and bf16's sm_90 pack kernel.
        pub const GLU_KERNELS: &[GluKernel] = &[$(
            glu_kernels!(@row $op (stringify!($f32)) F32 Scalar),
            glu_kernels!(@row $op (stringify!($f32x4)) F32 Pack),
            glu_kernels!(@row $op (stringify!($f16)) F16 Scalar),
            glu_kernels!(@row $op (stringify!($f16x8)) F16 Pack),
            glu_kernels!(@row $op (stringify!($bf16)) Bf16 Scalar),
            glu_kernels!(@row $op (stringify!($bf16x8)) Bf16 Pack),
            glu_kernels!(@row $op (stringify!($sm90)) Bf16 PackSm90),
        )*];

        /// The PDL twins (sm_90 module): the 128-bit kernel the automatic
        /// choice runs on sm_90 per operation and dtype, behind `pdl_enter`.
        pub const GLU_PDL_KERNELS: &[GluKernel] = &[$(
            glu_kernels!(@row $op (concat!(stringify!($f32x4), "_pdl")) F32 Pack),
            glu_kernels!(@row $op (concat!(stringify!($f16x8), "_pdl")) F16 Pack),
            glu_kernels!(@row $op (concat!(stringify!($sm90), "_pdl")) Bf16 PackSm90),
        )*];

        #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
        mod kernels {
            use gpukern_device::activations::{Gelu, GeluTanh, Silu};
            use gpukern_device::lanes::{Bf16, F16, F32};
            $(
                glu_kernels!(@entry $act $f32 F32 false "");
                glu_kernels!(@entry $act $f32x4 F32 true "");
                glu_kernels!(@entry $act $f16 F16 false "");
                glu_kernels!(@entry $act $f16x8 F16 true "");
                glu_kernels!(@entry $act $bf16 Bf16 false "");
                glu_kernels!(@entry $act $bf16x8 Bf16 true "");
            )*
        }

        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        mod kernels_sm90 {
            use gpukern_device::activations::{Gelu, GeluTanh, Silu};
            use gpukern_device::hopper::Bf16Sm90;
            $(glu_kernels!(@entry $act $sm90 Bf16Sm90 true "");)*
        }

        // The PDL twins: the same walk behind `pdl_enter`, exported as `<name>_pdl`.
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        mod kernels_pdl {
            use gpukern_device::activations::{Gelu, GeluTanh, Silu};
            use gpukern_device::hopper::Bf16Sm90;
            use gpukern_device::lanes::{F16, F32};
            $(
                glu_kernels!(@entry $act $f32x4 F32 true "_pdl" gpukern_device::hopper::pdl_enter());
                glu_kernels!(@entry $act $f16x8 F16 true "_pdl" gpukern_device::hopper::pdl_enter());
                glu_kernels!(@entry $act $sm90 Bf16Sm90 true "_pdl" gpukern_device::hopper::pdl_enter());
            )*
        }
    };
    (@row $op:ident ($name:expr) $e:ident $p:ident) => {
        GluKernel { name: $name, op: GluOp::$op, dtype: Dtype::$e, pattern: OpPattern::$p }
    };
    (@entry $act:ident $name:ident $e:ident $pack:literal $suffix:literal $($enter:expr)?) => {
        #[doc = concat!("`out = ", stringify!($act), "(gate) · up` on ", stringify!($e), " (see [`crate::glu`]).")]
        ///
        /// # Safety
        /// For each row `r < rows`: `gate + r·gate_pitch`, `up + r·up_pitch`
        /// and `out + r·out_pitch` hold `n` elements (16-byte aligned for the
        /// pack kernels); no output row overlaps an input or another output.
        ///
        /// # Thread mapping
        /// Grid y over rows; in a row, one lane group (1 element or a 16-byte
        /// pack) per thread of grid x, grid-stride.
        #[export_name = concat!(stringify!($name), $suffix)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            gate: *const <$e as gpukern_device::lanes::Elem>::T,
            up: *const <$e as gpukern_device::lanes::Elem>::T,
            out: *mut <$e as gpukern_device::lanes::Elem>::T,
            rows: u32,
            n: u64,
            gate_pitch: u64,
            up_pitch: u64,
            out_pitch: u64,
        ) {
            // The PDL twins wait for the previous grid before anything else.
            $($enter;)?
            let op = gpukern_device::activations::Glu::<$act>::new();
            let pitches = [gate_pitch, up_pitch, out_pitch];
            // SAFETY: forwarded (the host's checks: `raw::check_glu`).
            unsafe { gpukern_device::patterns::rows::<$e, _, $pack>(op, gate, up, out, rows, n, pitches) }
        }
    };
}

glu_kernels! {
    Silu Silu [glu_silu_f32 glu_silu_f32x4 glu_silu_f16 glu_silu_f16x8 glu_silu_bf16 glu_silu_bf16x8 glu_silu_bf16x8_sm90]
    Gelu Gelu [glu_gelu_f32 glu_gelu_f32x4 glu_gelu_f16 glu_gelu_f16x8 glu_gelu_bf16 glu_gelu_bf16x8 glu_gelu_bf16x8_sm90]
    GeluTanh GeluTanh [glu_gelu_tanh_f32 glu_gelu_tanh_f32x4 glu_gelu_tanh_f16 glu_gelu_tanh_f16x8 glu_gelu_tanh_bf16
        glu_gelu_tanh_bf16x8 glu_gelu_tanh_bf16x8_sm90]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_every_kernel_once() {
        assert_eq!(GLU_KERNELS.len(), 7 * GluOp::ALL.len());
        for op in GluOp::ALL {
            for dtype in Dtype::ALL {
                for p in [OpPattern::Scalar, OpPattern::Pack] {
                    let k = glu_kernel(op, dtype, p).expect("a kernel");
                    assert!(k.name.starts_with(op.name()) && k.name.contains(dtype.name()), "{}", k.name);
                }
                let twin = glu_pdl_kernel(op, dtype).expect("a twin");
                let plain = if dtype == Dtype::Bf16 { OpPattern::PackSm90 } else { OpPattern::Pack };
                assert_eq!(twin.name.strip_suffix("_pdl"), glu_kernel(op, dtype, plain).map(|k| k.name));
            }
            assert!(glu_kernel(op, Dtype::F32, OpPattern::PackSm90).is_none());
        }
        let mut names: std::vec::Vec<_> = GLU_KERNELS.iter().chain(GLU_PDL_KERNELS).map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), GLU_KERNELS.len() + GLU_PDL_KERNELS.len());
    }
}
