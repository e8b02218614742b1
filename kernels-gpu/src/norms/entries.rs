//! The norm kernels' entry points: [`super::device::norm`] instantiated per
//! (family, dtype, K), in the portable module, and in the sm_90 module as
//! cluster kernels (`_cluster`, K = 2, 4, 8) and, under the portable names,
//! the bf16 kernels (rounding with `cvt.rn.bf16.f32`: see
//! [`super::sm90_kernel_names`]); and there, every one of them again as its
//! PDL twin (`<name>_pdl`, [`super::pdl_twin`]): the same body behind
//! `pdl_enter`, so a twin reduces in the same order as the kernel it twins.

use gpukern_device::lanes::{Bf16, Elem, F16, F32};

use super::device::{norm, Args};
use super::Family;

macro_rules! norm_entries {
    // The PDL twins: `<name>_pdl`, waiting for the stream's previous grid
    // (and letting the next one launch) before anything else.
    (pdl $cluster:literal; $($name:ident $fam:ident $e:ident $k:literal),* $(,)?) => {$(
        /// The PDL twin of the norm kernel of the same name (see
        /// [`super::pdl_twin`]).
        ///
        /// # Safety
        /// As the kernel it twins.
        #[export_name = concat!(stringify!($name), "_pdl")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            x: *const <$e as Elem>::T, r: *const <$e as Elem>::T, w: *const <$e as Elem>::T,
            b: *const <$e as Elem>::T, y: *mut <$e as Elem>::T, h: *mut <$e as Elem>::T, part: *mut f32,
            rows: u32, cols: u32, xp: u64, yp: u64, eps: f32, flags: u32, seg: u32,
        ) {
            gpukern_device::hopper::pdl_enter();
            let a = Args { x, r, w, b, y, h, part, rows, cols, xp, yp, eps, flags, seg };
            // SAFETY: forwarded.
            unsafe { norm::<$e, $k, $cluster>(Family::$fam, a) }
        }
    )*};
    ($cluster:literal; $($name:ident $fam:ident $e:ident $k:literal),* $(,)?) => {$(
        /// A norm kernel (see [`super::NormKernel`] for the parameters).
        ///
        /// # Safety
        /// The host's plan (see `norm`).
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            x: *const <$e as Elem>::T, r: *const <$e as Elem>::T, w: *const <$e as Elem>::T,
            b: *const <$e as Elem>::T, y: *mut <$e as Elem>::T, h: *mut <$e as Elem>::T, part: *mut f32,
            rows: u32, cols: u32, xp: u64, yp: u64, eps: f32, flags: u32, seg: u32,
        ) {
            let a = Args { x, r, w, b, y, h, part, rows, cols, xp, yp, eps, flags, seg };
            // SAFETY: forwarded.
            unsafe { norm::<$e, $k, $cluster>(Family::$fam, a) }
        }
    )*};
}

#[cfg(not(target_feature = "sm_90"))]
norm_entries!(false;
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

// The bf16 kernels again (sm_90 module, same names): the same bits, with the
// hardware's rounding instead of the integer one.
#[cfg(target_feature = "sm_90")]
norm_entries!(false;
    norm_rms_bf16_k1 Rms Bf16 1, norm_rms_bf16_k2 Rms Bf16 2, norm_rms_bf16_k4 Rms Bf16 4,
    norm_rms_bf16_k8 Rms Bf16 8,
    norm_layer_bf16_k1 Layer Bf16 1, norm_layer_bf16_k2 Layer Bf16 2, norm_layer_bf16_k4 Layer Bf16 4,
    norm_layer_bf16_k8 Layer Bf16 8,
    norm_softmax_bf16_k1 Softmax Bf16 1, norm_softmax_bf16_k2 Softmax Bf16 2,
    norm_softmax_bf16_k4 Softmax Bf16 4, norm_softmax_bf16_k8 Softmax Bf16 8,
);

// The cluster kernels (sm_90 module): a row's segments are a cluster's blocks.
#[cfg(target_feature = "sm_90")]
norm_entries!(true;
    norm_rms_f32_k2_cluster Rms F32 2, norm_rms_f32_k4_cluster Rms F32 4, norm_rms_f32_k8_cluster Rms F32 8,
    norm_rms_f16_k2_cluster Rms F16 2, norm_rms_f16_k4_cluster Rms F16 4, norm_rms_f16_k8_cluster Rms F16 8,
    norm_rms_bf16_k2_cluster Rms Bf16 2, norm_rms_bf16_k4_cluster Rms Bf16 4, norm_rms_bf16_k8_cluster Rms Bf16 8,
    norm_layer_f32_k2_cluster Layer F32 2, norm_layer_f32_k4_cluster Layer F32 4,
    norm_layer_f32_k8_cluster Layer F32 8,
    norm_layer_f16_k2_cluster Layer F16 2, norm_layer_f16_k4_cluster Layer F16 4,
    norm_layer_f16_k8_cluster Layer F16 8,
    norm_layer_bf16_k2_cluster Layer Bf16 2, norm_layer_bf16_k4_cluster Layer Bf16 4,
    norm_layer_bf16_k8_cluster Layer Bf16 8,
    norm_softmax_f32_k2_cluster Softmax F32 2, norm_softmax_f32_k4_cluster Softmax F32 4,
    norm_softmax_f32_k8_cluster Softmax F32 8,
    norm_softmax_f16_k2_cluster Softmax F16 2, norm_softmax_f16_k4_cluster Softmax F16 4,
    norm_softmax_f16_k8_cluster Softmax F16 8,
    norm_softmax_bf16_k2_cluster Softmax Bf16 2, norm_softmax_bf16_k4_cluster Softmax Bf16 4,
    norm_softmax_bf16_k8_cluster Softmax Bf16 8,
);

// The PDL twins (sm_90 module), in modules of their own: the Rust names are
// the plain kernels', the exported ones end in `_pdl`.
#[cfg(target_feature = "sm_90")]
mod pdl {
    use gpukern_device::lanes::{Bf16, Elem, F16, F32};

    use super::super::device::{norm, Args};
    use super::super::Family;

    norm_entries!(pdl false;
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
}

#[cfg(target_feature = "sm_90")]
mod pdl_cluster {
    use gpukern_device::lanes::{Bf16, Elem, F16, F32};

    use super::super::device::{norm, Args};
    use super::super::Family;

    norm_entries!(pdl true;
        norm_rms_f32_k2_cluster Rms F32 2, norm_rms_f32_k4_cluster Rms F32 4, norm_rms_f32_k8_cluster Rms F32 8,
        norm_rms_f16_k2_cluster Rms F16 2, norm_rms_f16_k4_cluster Rms F16 4, norm_rms_f16_k8_cluster Rms F16 8,
        norm_rms_bf16_k2_cluster Rms Bf16 2, norm_rms_bf16_k4_cluster Rms Bf16 4, norm_rms_bf16_k8_cluster Rms Bf16 8,
        norm_layer_f32_k2_cluster Layer F32 2, norm_layer_f32_k4_cluster Layer F32 4,
        norm_layer_f32_k8_cluster Layer F32 8,
        norm_layer_f16_k2_cluster Layer F16 2, norm_layer_f16_k4_cluster Layer F16 4,
        norm_layer_f16_k8_cluster Layer F16 8,
        norm_layer_bf16_k2_cluster Layer Bf16 2, norm_layer_bf16_k4_cluster Layer Bf16 4,
        norm_layer_bf16_k8_cluster Layer Bf16 8,
        norm_softmax_f32_k2_cluster Softmax F32 2, norm_softmax_f32_k4_cluster Softmax F32 4,
        norm_softmax_f32_k8_cluster Softmax F32 8,
        norm_softmax_f16_k2_cluster Softmax F16 2, norm_softmax_f16_k4_cluster Softmax F16 4,
        norm_softmax_f16_k8_cluster Softmax F16 8,
        norm_softmax_bf16_k2_cluster Softmax Bf16 2, norm_softmax_bf16_k4_cluster Softmax Bf16 4,
        norm_softmax_bf16_k8_cluster Softmax Bf16 8,
    );
}
