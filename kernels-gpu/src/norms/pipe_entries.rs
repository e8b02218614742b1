//! The pipelined kernels' entry points (sm_90 module): [`super::pipe::norm_pipe`]
//! instantiated per (family, dtype, K), named `<norm kernel>_pipe`
//! ([`super::pipe_kernel`]), with the norm kernels' parameter list.

use gpukern_device::lanes::{Bf16, Elem, F16, F32};

use super::device::Args;
use super::pipe::norm_pipe;
use super::Family;

macro_rules! pipe_entries {
    ($($name:ident $fam:ident $e:ident $k:literal),* $(,)?) => {$(
        /// A pipelined norm kernel (see [`super::NormKernel`] for the
        /// parameters; `part` and `seg` are unused).
        ///
        /// # Safety
        /// The host's plan (see `norm_pipe`).
        #[export_name = concat!(stringify!($name), "_pipe")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            x: *const <$e as Elem>::T, r: *const <$e as Elem>::T, w: *const <$e as Elem>::T,
            b: *const <$e as Elem>::T, y: *mut <$e as Elem>::T, h: *mut <$e as Elem>::T, part: *mut f32,
            rows: u32, cols: u32, xp: u64, yp: u64, eps: f32, flags: u32, seg: u32,
        ) {
            let a = Args { x, r, w, b, y, h, part, rows, cols, xp, yp, eps, flags, seg };
            // SAFETY: forwarded.
            unsafe { norm_pipe::<$e, $k>(Family::$fam, a) }
        }
    )*};
}

pipe_entries!(
    norm_rms_f32_k1 Rms F32 1, norm_rms_f32_k2 Rms F32 2, norm_rms_f32_k4 Rms F32 4, norm_rms_f32_k8 Rms F32 8,
    norm_rms_f16_k1 Rms F16 1, norm_rms_f16_k2 Rms F16 2, norm_rms_f16_k4 Rms F16 4, norm_rms_f16_k8 Rms F16 8,
    norm_rms_bf16_k1 Rms Bf16 1, norm_rms_bf16_k2 Rms Bf16 2, norm_rms_bf16_k4 Rms Bf16 4,
    norm_rms_bf16_k8 Rms Bf16 8,
    norm_layer_f32_k1 Layer F32 1, norm_layer_f32_k2 Layer F32 2, norm_layer_f32_k4 Layer F32 4,
    norm_layer_f32_k8 Layer F32 8,
    norm_layer_f16_k1 Layer F16 1, norm_layer_f16_k2 Layer F16 2, norm_layer_f16_k4 Layer F16 4,
    norm_layer_f16_k8 Layer F16 8,
    norm_layer_bf16_k1 Layer Bf16 1, norm_layer_bf16_k2 Layer Bf16 2, norm_layer_bf16_k4 Layer Bf16 4,
    norm_layer_bf16_k8 Layer Bf16 8,
    norm_softmax_f32_k1 Softmax F32 1, norm_softmax_f32_k2 Softmax F32 2, norm_softmax_f32_k4 Softmax F32 4,
    norm_softmax_f32_k8 Softmax F32 8,
    norm_softmax_f16_k1 Softmax F16 1, norm_softmax_f16_k2 Softmax F16 2, norm_softmax_f16_k4 Softmax F16 4,
    norm_softmax_f16_k8 Softmax F16 8,
    norm_softmax_bf16_k1 Softmax Bf16 1, norm_softmax_bf16_k2 Softmax Bf16 2,
    norm_softmax_bf16_k4 Softmax Bf16 4, norm_softmax_bf16_k8 Softmax Bf16 8,
);
