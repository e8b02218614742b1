//! `#[kernel]`: a typed CUDA kernel from one Rust function.
//!
//! ```ignore
//! use gpukern_macros::kernel;
//!
//! /// `y[i] = k · x[i]`.
//! #[kernel]
//! pub fn scale(x: &[f32], y: &mut [f32], k: f32) {
//!     let i = gpukern_device::global_thread() as usize;
//!     if i < x.len() {
//!         y.set(i, k * x[i]);
//!     }
//! }
//! ```
//!
//! On every target this declares a type `scale` implementing
//! `gpukern_device::kernel::KernelSig` (the name and parameter list: the
//! host launches through it, `Module::kernel::<scale>()`). On `nvptx64` it
//! also emits the entry point `scale` (each slice as a pointer and a `u64`
//! length; inputs arrive as `&[T]`, outputs — `&mut [T]` or
//! `Out<T>` in the signature — as `gpukern_device::kernel::Out<T>`) and the
//! manifest global `gpukern_kernel_scale` that the host checks at load.
//! Scalars are any `KernelElem` (f32, u32, i32, u64, …).
//!
//! The body is safe Rust: the macro compiles it as a safe function
//! `__gpukern_body_<name>` (`#[inline(always)]`, so the PTX is the one the
//! body would give inside the entry), which the `unsafe extern "ptx-kernel"`
//! entry calls after turning its pointers into slices. A raw-pointer
//! dereference, an `unsafe fn` call (a block collective, a 128-bit load) or
//! `static mut` access inside the body needs an `unsafe { }` block, with its
//! `// SAFETY:` comment, as in any safe function; `#[kernel] unsafe fn` is
//! refused. (The body is compiled for nvptx64 only, where the device crate's
//! intrinsics exist; the host build gets the signature type.)
//!
//! `#[kernel(pdl)]` makes the kernel a programmatic-dependent-launch kernel in
//! an sm_90 build: its entry starts with `gpukern_device::hopper::pdl_enter()`
//! (wait for the stream's previous kernel, then let the next one launch) and
//! the module gets the marker global `gpukern_pdl_<name>`, so the host may
//! launch it with the attribute (`gpukern::Pdl`, per stream). In an sm_70
//! build the attribute changes nothing.

// On a nightly compiler (build.rs): `#[kernel]`'s expansion is exempt from
// the kernel crate's `-F unsafe_code` (see `kernel`).
#![cfg_attr(gpukern_nightly, feature(allow_internal_unsafe))]
#![cfg_attr(gpukern_nightly, allow(internal_features))]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::{parse_macro_input, FnArg, Ident, ItemFn, Pat, Type};

/// How one parameter is passed, and its element type.
enum Kind {
    In(Type),
    Out(Type),
    Scalar(Type),
}

/// The element type of an `Out<T>` / `Out<'_, T>` path, if it is one.
fn out_elem(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Out" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    args.args.iter().find_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

fn classify(ty: &Type) -> Kind {
    if let Type::Reference(r) = ty {
        if let Type::Slice(s) = &*r.elem {
            let elem = (*s.elem).clone();
            return if r.mutability.is_some() { Kind::Out(elem) } else { Kind::In(elem) };
        }
    }
    match out_elem(ty) {
        Some(elem) => Kind::Out(elem),
        None => Kind::Scalar(ty.clone()),
    }
}

/// Declares a typed kernel; see the crate docs.
///
/// The expansion's own `unsafe` (the `extern "ptx-kernel"` entry, the binds of
/// its pointers, the manifest's `export_name`) is exempt from `unsafe_code`
/// (`allow_internal_unsafe`, on a nightly compiler), so kernel crates built
/// under gpukern-build's `-F unsafe_code` may use `#[kernel]`. That is sound
/// for every input: the manifest and the entry's parameters are derived from
/// the same signature, slices only of `KernelElem` types (an `unsafe trait`),
/// and the body stays a safe fn of its own whose tokens keep the user's spans,
/// so its `unsafe` blocks, attributes and items are linted as the user's code.
#[proc_macro_attribute]
#[cfg_attr(gpukern_nightly, allow_internal_unsafe)]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = attr.to_string();
    let pdl = match attr.trim() {
        "" => false,
        "pdl" => true,
        _ => {
            let e = syn::Error::new(Span::call_site(), "#[kernel] takes no arguments but `pdl`");
            return e.to_compile_error().into();
        }
    };
    let f = parse_macro_input!(item as ItemFn);
    match expand(f, pdl) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(f: ItemFn, pdl: bool) -> syn::Result<Tokens> {
    let name = &f.sig.ident;
    let vis = &f.vis;
    let docs: Vec<_> = f.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    if !f.sig.generics.params.is_empty() || !matches!(f.sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new_spanned(&f.sig, "#[kernel]: a kernel has no generics and returns nothing"));
    }
    if let Some(u) = &f.sig.unsafety {
        let msg = "#[kernel]: the body is safe Rust; remove `unsafe` and write `unsafe { }` blocks (with a `// SAFETY:` comment) inside it";
        return Err(syn::Error::new_spanned(u, msg));
    }
    if f.sig.constness.is_some() || f.sig.asyncness.is_some() || f.sig.abi.is_some() || f.sig.variadic.is_some() {
        return Err(syn::Error::new_spanned(&f.sig, "#[kernel]: a kernel is a plain `fn`"));
    }
    let attrs: Vec<_> = f.attrs.iter().filter(|a| !a.path().is_ident("doc")).collect();
    let dev = quote!(::gpukern_device::kernel);
    let (mut params, mut markers, mut words, mut entry_args, mut binds) = (vec![], vec![], vec![], vec![], vec![]);
    // The safe body's parameters (the user's patterns, `mut` kept) and the
    // entry's arguments to it.
    let (mut body_params, mut body_args, mut names) = (vec![], vec![], vec![]);
    for (i, arg) in f.sig.inputs.iter().enumerate() {
        let FnArg::Typed(pt) = arg else {
            return Err(syn::Error::new_spanned(arg, "#[kernel]: no self parameter"));
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new_spanned(&pt.pat, "#[kernel]: parameters are plain names"));
        };
        let id = &pi.ident;
        body_args.push(quote!(#id));
        names.push(id.to_string());
        // The entry's pointer and length of a slice: by position, and
        // mixed-site hygiene keeps them apart from the user's names.
        let site = Span::mixed_site();
        let (ptr, len) = (format_ident!("ptr{}", i, span = site), format_ident!("len{}", i, span = site));
        match classify(&pt.ty) {
            Kind::In(t) => {
                params.push(quote!(#dev::input::<#t>()));
                markers.push(quote!(#dev::InArg<#t>));
                words.push(quote!(#dev::input::<#t>().words()));
                entry_args.push(quote!(#ptr: *const #t, #len: u64));
                body_params.push(quote!(#pi: &[#t]));
                binds.push(quote! {
                    // SAFETY: the host passes a live range of `len` elements
                    // (checked against the manifest at load), or a dangling
                    // pointer when it is empty.
                    let #id: &[#t] = unsafe {
                        ::core::slice::from_raw_parts(if #len == 0 { ::core::ptr::NonNull::dangling().as_ptr() } else { #ptr }, #len as usize)
                    };
                });
            }
            Kind::Out(t) => {
                params.push(quote!(#dev::output::<#t>()));
                markers.push(quote!(#dev::OutArg<#t>));
                words.push(quote!(#dev::output::<#t>().words()));
                entry_args.push(quote!(#ptr: *mut #t, #len: u64));
                body_params.push(quote!(#pi: #dev::Out<'_, #t>));
                binds.push(quote! {
                    // SAFETY: the host passes an exclusively borrowed range of
                    // `len` elements of global memory, aligned, that no input
                    // overlaps; the body writes it only through this `Out`.
                    let #id = unsafe { #dev::Out::<#t>::from_raw(#ptr, #len) };
                });
            }
            Kind::Scalar(t) => {
                params.push(quote!(#dev::scalar::<#t>()));
                markers.push(quote!(#dev::Scalar<#t>));
                words.push(quote!(#dev::scalar::<#t>().words()));
                entry_args.push(quote!(#id: #t));
                body_params.push(quote!(#pi: #t));
            }
        }
    }
    let count = params.len();
    let manifest_len = 3 + 2 * count;
    let manifest_name = format!("gpukern_kernel_{name}");
    let entry = Ident::new(&format!("__gpukern_entry_{name}"), name.span());
    let body_fn = Ident::new(&format!("__gpukern_body_{name}"), name.span());
    let name_str = name.to_string();
    let body = &f.block;
    // The PDL prologue and marker, in sm_90 builds of a `#[kernel(pdl)]`.
    let pdl_marker_name = format!("gpukern_pdl_{name}");
    let (pdl_enter, pdl_marker) = if pdl {
        (
            quote! {
                #[cfg(target_feature = "sm_90")]
                ::gpukern_device::hopper::pdl_enter();
            },
            quote! {
                #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
                const _: () = {
                    #[used]
                    #[export_name = #pdl_marker_name]
                    static PDL: u32 = #dev::KERNEL_MAGIC;
                };
            },
        )
    } else {
        (quote!(), quote!())
    };
    let word_list = words.iter().enumerate().map(|(i, w)| {
        let (k, e) = (2 * i + 3, 2 * i + 4);
        quote!(m[#k] = #w[0]; m[#e] = #w[1];)
    });
    Ok(quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #vis enum #name {}

        impl #dev::KernelSig for #name {
            const NAME: &'static str = #name_str;
            const PARAMS: &'static [#dev::Param] = &[#(#params),*];
            type Params = (#(#markers,)*);
            const PARAM_NAMES: &'static [&'static str] = &[#(#names),*];
        }

        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[used]
            #[export_name = #manifest_name]
            static MANIFEST: [u32; #manifest_len] = {
                let mut m = [0u32; #manifest_len];
                m[0] = #dev::KERNEL_MAGIC;
                m[1] = #dev::KERNEL_VERSION;
                m[2] = #count as u32;
                #(#word_list)*
                m
            };
        };

        #pdl_marker

        /// The kernel's body, as written: a safe function, so any unsafe
        /// operation in it needs its own `unsafe` block.
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        #[doc(hidden)]
        #(#attrs)*
        fn #body_fn(#(#body_params),*) #body

        #(#docs)*
        ///
        /// # Safety
        /// Launched by the host library's typed launch, which passes every
        /// slice as a live range of its length, outputs exclusively.
        #[cfg(target_arch = "nvptx64")]
        #[export_name = #name_str]
        pub unsafe extern "ptx-kernel" fn #entry(#(#entry_args),*) {
            #pdl_enter
            #(#binds)*
            #body_fn(#(#body_args),*)
        }
    })
}
