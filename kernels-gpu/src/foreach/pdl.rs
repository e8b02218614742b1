//! The foreach add's PDL twins (sm_90 module): the table and inline-list
//! kernels behind `hopper::pdl_enter`, so a foreach launch may start while the
//! stream's previous kernel finishes (the host launches them with the
//! programmatic-dependent-launch attribute where its `Pdl` setting says so).
//! Nothing is read before the wait: the table kernel's table was copied by the
//! stream's previous operation, and the inputs may be a predecessor's output.

/// Entry points `(meta, owners: *const u32, chunks: u64)`, by dtype (f32, f16,
/// bf16): `add_many_<dtype>` behind the PDL prologue.
pub const ADD_MANY_PDL: [&str; 3] = ["add_many_f32_pdl", "add_many_f16_pdl", "add_many_bf16_pdl"];

/// Entry points `(list: ManyInline)`, by dtype: `add_many_inline_<dtype>`
/// behind the PDL prologue.
pub const ADD_MANY_INLINE_PDL: [&str; 3] =
    ["add_many_inline_f32_pdl", "add_many_inline_f16_pdl", "add_many_inline_bf16_pdl"];

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod twins {
    use super::super::inline::inline_kernels::{add_inline, param_list, ParamList};
    use super::super::kernels::add_many;
    use super::super::{ManyDesc, ManyInline};
    use gpukern_device::hopper::pdl_enter;
    use gpukern_device::lanes::{Add, Bf16, F16, F32};

    macro_rules! twins {
        ($($table:ident $inline:ident $e:ty;)*) => {$(
            /// `add_many_<dtype>` behind the PDL prologue.
            ///
            /// # Safety
            /// As the table kernel it twins.
            ///
            /// # Parameters
            /// As `add_many_f32`.
            ///
            /// # Thread mapping
            /// As `add_many_f32`.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $table(meta: *const ManyDesc, owners: *const u32, chunks: u64) {
                pdl_enter();
                // SAFETY: forwarded.
                unsafe { add_many::<$e, Add>(meta, owners, chunks) }
            }

            /// `add_many_inline_<dtype>` behind the PDL prologue.
            ///
            /// # Safety
            /// As the inline-list kernel it twins.
            ///
            /// # Parameters
            /// As `add_many_inline_f32`.
            ///
            /// # Thread mapping
            /// As `add_many_f32`.
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $inline(_list: ManyInline) {
                pdl_enter();
                let list: ParamList = param_list!($inline);
                // SAFETY: forwarded; the list is this entry's parameter.
                unsafe { add_inline::<$e, Add>(&list) }
            }
        )*};
    }

    twins! {
        add_many_f32_pdl add_many_inline_f32_pdl F32;
        add_many_f16_pdl add_many_inline_f16_pdl F16;
        add_many_bf16_pdl add_many_inline_bf16_pdl Bf16;
    }
}
