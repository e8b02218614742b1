//! The typed handles of a user module's `elementwise!` operations
//! ([`CustomUnary`], [`CustomBinary`], made by [`Module::unary`] and
//! [`Module::binary`]): a call on a stream, an explicit kernel, and the plan
//! a call makes.

use std::marker::PhantomData;

use gpukern_device::EwKind;
use kernels_gpu::ops::{OpPattern, UnaryOp};

use crate::device::gpu::Stream;
use crate::device::pdl::Pdl;
use crate::error::Result;
use crate::launch::operands::Operands;
use crate::launch::opts::{Opts, Plan};
use crate::launch::variant::LaunchShape;
use crate::memory::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::user::module::{Custom, CustomPattern, Module};

impl Module {
    /// The one-input operation `name` of this module on `T` (declared `unary`
    /// for `T`'s dtype with `gpukern_device::elementwise!`).
    pub fn unary<T: Element>(&self, name: &str) -> Result<CustomUnary<T>> {
        Ok(CustomUnary { op: self.custom::<T>(name, EwKind::Unary)?, _t: PhantomData })
    }

    /// The two-input operation `name` of this module on `T`.
    pub fn binary<T: Element>(&self, name: &str) -> Result<CustomBinary<T>> {
        Ok(CustomBinary { op: self.custom::<T>(name, EwKind::Binary)?, _t: PhantomData })
    }
}

/// The operands of a custom call: the parameters travel as `scales`.
fn operands<'a, T: Element>(
    a: View<'a, T>,
    b: Option<View<'a, T>>,
    out: ViewMut<'a, T>,
    params: [f32; 2],
) -> Operands<'a, T> {
    Operands { a, b, out, scales: Some((params[0], params[1])) }
}

/// What both handles have: the operation, its kernels, the plan of a call.
macro_rules! custom_handle {
    ($($(#[$doc:meta])* $ty:ident, $addrs:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $ty<T: Element> {
            op: Custom,
            _t: PhantomData<T>,
        }

        impl<T: Element> $ty<T> {
            /// The operation, for a graph's record (`capture_user.rs`).
            pub(crate) fn custom(&self) -> &Custom {
                &self.op
            }

            #[doc = concat!("What [`Self::run`] launches for `n` elements at operand addresses `addrs` (`", $addrs, "`)")]
            /// on a stream whose setting is `pdl`.
            #[deprecated(note = "use gpu.plan(Call::custom_unary(&op, &a, &out), &stream, &Opts::auto()) (or custom_binary)")]
            #[doc(hidden)]
            pub fn plan(&self, n: usize, addrs: &[u64], pdl: Pdl) -> Plan {
                self.op.plan(n, addrs, pdl)
            }

            /// The scalar and pack kernels' names.
            pub fn kernels(&self) -> (&'static str, &'static str) {
                self.op.kernels()
            }

            /// The pack kernel's PDL twin, which [`Self::run`] launches with
            /// programmatic dependent launch where the stream's [`crate::Pdl`]
            /// setting says it pays: present for a module built for sm_90 on
            /// an sm_90 device.
            pub fn pdl_kernel(&self) -> Option<&'static str> {
                self.op.pdl_kernel()
            }
        }
    )*};
}
custom_handle! {
    /// A one-input operation of a user module on `T`: `out = op(a)`.
    ///
    /// ```no_run
    /// # use gpukern::{DeviceVec as D, Module, Stream}; fn f(m: &Module, x: &D<f32>, y: &mut D<f32>, s: &Stream) -> gpukern::Result<()> {
    /// // `m`: `gpu.load_module(built)?` of a kernel crate that declares `my_silu` unary for f32
    /// let silu = m.unary::<f32>("my_silu")?;
    /// silu.run(x, y, [0.0, 0.0], s)?; // the params reach its `Params::from_params`
    /// # Ok(()) }
    /// ```
    CustomUnary, "[a, out]";
    /// A two-input operation of a user module on `T`: `out = op(a, b)`.
    ///
    /// ```no_run
    /// # use gpukern::{DeviceVec as D, Module, Stream}; fn f(m: &Module, a: &D<f32>, b: &D<f32>, y: &mut D<f32>, s: &Stream) -> gpukern::Result<()> {
    /// let lerp = m.binary::<f32>("my_lerp")?; // declared binary for f32 in `m`'s crate
    /// lerp.run(a, b, y, [0.25, 0.0], s)?; // `[0.25, 0.0]`: the operation's params
    /// # Ok(()) }
    /// ```
    CustomBinary, "[a, b, out]";
}

impl<T: Element> CustomUnary<T> {
    /// This operation launched as the library's `op` is on every GPU: its
    /// measured grid choice ([`crate::AutoPlan::caps_grid`]), for a lane rule
    /// that does what a built-in activation does (the worked example's SiLU
    /// is tuned as [`UnaryOp::Silu`]). Without it the choice is a proxy on
    /// the pack kernel's registers ([`crate::AutoPlan::custom_caps_grid`]).
    /// Only the launch shape follows `op`; the kernels and their bits are
    /// this module's.
    #[must_use]
    pub fn tuned_as(mut self, op: UnaryOp) -> Self {
        self.op.like = Some(op);
        self
    }

    /// The built-in activation this operation is tuned as, if any.
    pub fn tuning(&self) -> Option<UnaryOp> {
        self.op.like
    }

    /// Queues `out = op(a)` with the automatic choice; `params` reach the
    /// operation's `Params::from_params`. What it launches: [`crate::Gpu::plan`]
    /// with [`crate::Call::custom_unary`].
    /// `n = 0` is a no-op. Errors (nothing is
    /// launched): lengths differ; buffers or stream of another `Gpu`.
    pub fn run<'a>(
        &self,
        a: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        params: [f32; 2],
        stream: &Stream,
    ) -> Result<()> {
        self.run_opts(a, out, params, stream, &Opts::auto())
    }

    /// As [`CustomUnary::run`] with options, the one options value of every
    /// call: an explicit pattern (`OpPattern::Scalar` or `Pack`; errors when
    /// the operands are not aligned as it needs), a launch shape, a PDL
    /// setting. An explicit pattern or shape launches plainly (no PDL twin).
    pub fn run_opts<'a>(
        &self,
        a: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        params: [f32; 2],
        stream: &Stream,
        opts: &Opts,
    ) -> Result<()> {
        self.op.run(operands(a.into_view(), None, out.into_view_mut(), params), stream, opts)
    }

    /// With an explicit kernel and launch settings.
    #[deprecated(note = "use op.run_opts(a, out, params, &stream, &Opts::auto().pattern(p).shape(cfg))")]
    #[doc(hidden)]
    pub fn run_with<'a>(
        &self,
        pattern: CustomPattern,
        cfg: LaunchShape,
        a: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        params: [f32; 2],
        stream: &Stream,
    ) -> Result<()> {
        self.run_opts(a, out, params, stream, &Opts::auto().pattern(op_pattern(pattern)).shape(cfg))
    }
}

impl<T: Element> CustomBinary<T> {
    /// Queues `out = op(a, b)` with the automatic choice (see [`CustomUnary::run`]).
    pub fn run<'a>(
        &self,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        params: [f32; 2],
        stream: &Stream,
    ) -> Result<()> {
        self.run_opts(a, b, out, params, stream, &Opts::auto())
    }

    /// As [`CustomBinary::run`] with options (see [`CustomUnary::run_opts`]).
    pub fn run_opts<'a>(
        &self,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        params: [f32; 2],
        stream: &Stream,
        opts: &Opts,
    ) -> Result<()> {
        self.op.run(operands(a.into_view(), Some(b.into_view()), out.into_view_mut(), params), stream, opts)
    }

    /// With an explicit kernel and launch settings.
    #[deprecated(note = "use op.run_opts(a, b, out, params, &stream, &Opts::auto().pattern(p).shape(cfg))")]
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn run_with<'a>(
        &self,
        pattern: CustomPattern,
        cfg: LaunchShape,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        params: [f32; 2],
        stream: &Stream,
    ) -> Result<()> {
        self.run_opts(a, b, out, params, stream, &Opts::auto().pattern(op_pattern(pattern)).shape(cfg))
    }
}

/// The old explicit form's pattern as the options' one.
fn op_pattern(p: CustomPattern) -> OpPattern {
    match p {
        CustomPattern::Scalar => OpPattern::Scalar,
        CustomPattern::Pack => OpPattern::Pack,
    }
}
