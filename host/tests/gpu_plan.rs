//! `Gpu::plan` answers for every kind of launch: for each, the plan asked
//! apart (from the call's own operands, on its stream, with its options) is
//! what the call itself then launches: the kernel, the PDL twin, a norm's
//! plan. Every PDL setting of the stream and of the call, aligned and
//! misaligned operands. Marked ignored: CI has no GPU.

mod common;

use common::gpu;
use gpukern::half::bf16;
use gpukern::{BinaryOp, Call, DeviceVec, GluIn, GluOp, Norm, NormOp, Opts, Pdl, Rows, UnaryOp, View, ViewMut};

/// The PDL settings of a stream.
const STREAM: [Pdl; 3] = [Pdl::Off, Pdl::Auto, Pdl::On];
/// A call's: none (the stream's), or one of its own.
const CALL: [Option<Pdl>; 4] = [None, Some(Pdl::Off), Some(Pdl::Auto), Some(Pdl::On)];

/// Every (stream, call) pair of settings.
fn settings() -> impl Iterator<Item = (Pdl, Option<Pdl>)> {
    STREAM.into_iter().flat_map(|s| CALL.map(|c| (s, c)))
}

/// The call's options.
fn opts(call: Option<Pdl>) -> Opts {
    call.map_or(Opts::auto(), |p| Opts::auto().pdl(p))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_gated_activation_launches_its_plan() {
    let gpu = gpu();
    let n = 1 << 20;
    let (g, u) = (gpu.upload(&vec![bf16::ONE; n + 8]).unwrap(), gpu.upload(&vec![bf16::ONE; n + 8]).unwrap());
    let mut out = gpu.alloc::<bf16>(n + 8).unwrap();
    for ((stream_pdl, call_pdl), skew) in settings().flat_map(|p| [(p, 0), (p, 1)]) {
        let (s, opts) = (gpu.stream_with(stream_pdl).unwrap(), opts(call_pdl));
        let (gv, uv) = (g.slice(skew..skew + n).unwrap(), u.slice(skew..skew + n).unwrap());
        let asked = Call::glu(GluOp::Silu, &GluIn::pair(gv, uv), out.slice(..n).unwrap());
        let planned = gpu.plan(asked, &s, &opts).unwrap();
        let ran = gpu.glu_opts(GluOp::Silu, GluIn::pair(gv, uv), out.slice_mut(..n).unwrap(), &s, &opts).unwrap();
        assert_eq!(planned, ran, "stream {stream_pdl:?}, call {call_pdl:?}, skew {skew}");
    }
    // The `[gate | up]` rows, one row into a longer output among them.
    let s = gpu.stream().unwrap();
    for (rows, d, yp) in [(4, 1024, 1024), (1, 1000, 1000), (3, 96, 100)] {
        let layout = Rows { rows, cols: d, x_pitch: 2 * d, y_pitch: yp };
        let asked = Call::glu(GluOp::Gelu, &GluIn::split(&g, layout), out.slice(..n).unwrap());
        let planned = gpu.plan(asked, &s, &Opts::auto()).unwrap();
        let ran = gpu.glu_opts(GluOp::Gelu, GluIn::split(&g, layout), out.slice_mut(..n).unwrap(), &s, &Opts::auto());
        assert_eq!(planned, ran.unwrap(), "{rows} rows of {d}, output pitch {yp}");
    }
    // A refused shape is refused by the plan too.
    let s = gpu.stream().unwrap();
    let odd = GluIn::pair(g.slice(..7).unwrap(), u.slice(..8).unwrap());
    assert!(gpu.plan(Call::glu(GluOp::Silu, &odd, out.slice(..8).unwrap()), &s, &Opts::auto()).is_err());
}

/// `op` with its operands (`w` also the bias).
fn norm<'a>(
    op: NormOp,
    r: &'a DeviceVec<bf16>,
    w: &'a DeviceVec<bf16>,
    h: ViewMut<'a, bf16>,
) -> Norm<View<'a, bf16>, ViewMut<'a, bf16>> {
    match op {
        NormOp::Rms => Norm::rms(w.view(), 1e-6),
        NormOp::AddRms => Norm::add_rms(r.view(), h, w.view(), 1e-6),
        NormOp::Layer => Norm::layer(w.view(), w.view(), 1e-5),
        NormOp::AddLayer => Norm::add_layer(r.view(), h, w.view(), w.view(), 1e-5),
        NormOp::Softmax => Norm::Softmax,
        NormOp::LogSoftmax => Norm::LogSoftmax,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_norm_launches_its_plan() {
    let gpu = gpu();
    let (rows, cols) = (512, 4096);
    let x = gpu.upload(&vec![bf16::from_f32(0.5); rows * cols]).unwrap();
    let r = gpu.upload(&vec![bf16::from_f32(0.25); rows * cols]).unwrap();
    let w = gpu.upload(&vec![bf16::ONE; cols]).unwrap();
    let (mut y, mut h) = (gpu.alloc::<bf16>(rows * cols).unwrap(), gpu.alloc::<bf16>(rows * cols).unwrap());
    let shape = Rows::contiguous(rows, cols);
    for op in NormOp::ALL {
        for (stream_pdl, call_pdl) in settings() {
            let (s, opts) = (gpu.stream_with(stream_pdl).unwrap(), opts(call_pdl));
            let asked = norm(op, &r, &w, h.view_mut());
            let planned = gpu.plan(Call::norm(&asked, &x, &y, shape), &s, &opts).unwrap();
            let ran = gpu.norm(norm(op, &r, &w, h.view_mut()), &x, &mut y, shape, &opts, &s).unwrap();
            let what = format!("{} stream {stream_pdl:?} call {call_pdl:?}", op.name());
            assert_eq!(planned.norm, Some(ran), "{what}");
            let pdl = ran.uses_pdl(&gpu, op, gpukern::Dtype::Bf16, shape, call_pdl.unwrap_or(stream_pdl));
            assert_eq!(planned.pdl, pdl, "{what}");
            assert!(planned.kernel.starts_with("norm_"), "{what}: {}", planned.kernel);
            assert_eq!(planned.kernel.ends_with("_pdl"), planned.pdl, "{what}: {}", planned.kernel);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn element_wise_calls_follow_the_streams_setting() {
    let gpu = gpu();
    let n = 1 << 22;
    let (a, b) = (gpu.upload(&vec![1.0f32; n]).unwrap(), gpu.upload(&vec![2.0f32; n]).unwrap());
    let out = gpu.alloc::<f32>(n).unwrap();
    let off = gpu.stream_with(Pdl::Off).unwrap();
    let on = gpu.stream_with(Pdl::On).unwrap();
    let calls: [&dyn Fn() -> Call<'static>; 2] =
        [&|| Call::unary(UnaryOp::Neg, &a, &out), &|| Call::binary(BinaryOp::Mul, &a, &b, &out)];
    for call in calls {
        // The stream's setting, unless the call says otherwise.
        assert!(!gpu.plan(call(), &off, &Opts::auto()).unwrap().pdl);
        assert_eq!(gpu.plan(call(), &on, &Opts::auto()).unwrap().pdl, gpu.info().has_sm90());
        assert!(!gpu.plan(call(), &on, &Opts::auto().pdl(Pdl::Off)).unwrap().pdl);
        assert_eq!(gpu.plan(call(), &off, &Opts::auto().pdl(Pdl::On)).unwrap().pdl, gpu.info().has_sm90());
    }
    // A stream of another Gpu is refused.
    let other = gpukern::Gpu::new(0).unwrap();
    assert!(gpu.plan(Call::unary(UnaryOp::Neg, &a, &out), &other.stream().unwrap(), &Opts::auto()).is_err());
}
