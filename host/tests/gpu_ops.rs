//! Bit-exact GPU checks of the element-wise library: every operation × dtype ×
//! pattern against the CPU reference, with canaries, capped grids, misaligned
//! views, the automatic choice, the errors, and n past 2^32.
//! Marked ignored: CI has no GPU. Run with `--include-ignored` on a GPU machine.

mod common;

use common::{canaries_hold, gpu, inputs, record, Data, CANARY, POISONS, SIZES};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{BinaryOp, Call, CudarcExt, Dtype, Error, LaunchShape, OpKind, OpPattern, Opts, UnaryOp};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// How a case launches.
#[derive(Clone, Copy, Debug)]
enum How {
    Explicit(OpPattern, LaunchShape),
    Auto,
}

/// Scales for axpby, chosen per case: values that round in f16 and bf16, a
/// negative one, zero, and one large enough to overflow f16 products.
const SCALES: [(f32, f32); 4] = [(0.1, -3.5), (1.0, 1.0), (0.0, 2.5e-3), (300.0, -0.333)];

/// Queues one operation on views; returns the kernel name for the automatic choice.
fn launch<T: gpukern::Element>(
    kind: OpKind,
    how: How,
    a: gpukern::View<'_, T>,
    b: gpukern::View<'_, T>,
    out: gpukern::ViewMut<'_, T>,
    scales: (f32, f32),
    stream: &gpukern::Stream,
) -> gpukern::Result<Option<&'static str>> {
    let b = (kind.inputs() == 2).then_some(b);
    match how {
        How::Auto => {
            // The plan the call makes, asked apart (the stream's PDL setting included).
            let addrs: Vec<u64> =
                [Some(a.addr()), b.map(|b| b.addr()), Some(out.addr())].into_iter().flatten().collect();
            let plan = gpu().plan(Call::elementwise(kind, T::DTYPE, a.len(), &addrs), stream, &Opts::auto())?;
            gpu().apply(kind, a, b, out, scales, stream, &Opts::auto()).map(|_| Some(plan.kernel))
        }
        How::Explicit(p, cfg) => {
            let opts = Opts::auto().pattern(p).shape(cfg);
            gpu().apply(kind, a, b, out, scales, stream, &opts).map(|_| None)
        }
    }
}

/// One case: inputs starting `offsets` elements into their buffers, the output
/// poisoned with a canary band on each side, launch, then bit-exact comparison
/// with the reference and intact canaries. Returns the first problem.
fn check<T: ReferenceOps>(kind: OpKind, how: How, n: usize, data: Data, offsets: [usize; 3]) -> Result<(), String> {
    let gpu = gpu();
    let seed: u64 = rand::random();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let (a, b) = inputs::<T>(data, n + offsets[0].max(offsets[1]), &mut rng);
    let scales = SCALES[n % SCALES.len()];
    let (sa, sb) = (&a[offsets[0]..offsets[0] + n], &b[offsets[1]..offsets[1] + n]);
    let want = reference::map(kind, sa, (kind.inputs() == 2).then_some(sb), scales);
    let what = format!("{} {how:?} n={n} {data:?} offsets={offsets:?} (seed {seed})", kind.name());
    let e = |e: gpukern::Error| format!("{what}: {e}");
    let stream = gpu.stream().map_err(e)?;
    let (da, db) = (gpu.upload(&a).map_err(e)?, gpu.upload(&b).map_err(e)?);
    let lead = CANARY + offsets[2];
    let mut band = gpu.alloc::<T>(n + lead + CANARY).map_err(e)?;
    for poison in POISONS {
        band.fill(T::from_bits32(poison)).map_err(e)?;
        let out = band.slice_mut(lead..lead + n).map_err(e)?;
        let (va, vb) =
            (da.slice(offsets[0]..offsets[0] + n).map_err(e)?, db.slice(offsets[1]..offsets[1] + n).map_err(e)?);
        launch(kind, how, va, vb, out, scales, &stream).map_err(e)?;
        stream.synchronize().map_err(e)?;
        let got = band.to_vec().map_err(e)?;
        let p = T::from_bits32(poison);
        if let Some(i) = got[..lead].iter().chain(&got[lead + n..]).position(|x| !x.same_as(p)) {
            return Err(format!("{what}: canary element {i} overwritten"));
        }
        if let Some(i) = reference::first_mismatch(&got[lead..lead + n], &want) {
            return Err(format!(
                "{what}: element {i}: a={:#x} b={:#x} gave {:#x}, want {:#x}",
                sa[i].to_bits32(),
                sb[i].to_bits32(),
                got[lead + i].to_bits32(),
                want[i].to_bits32()
            ));
        }
    }
    Ok(())
}

fn check_dyn(dtype: Dtype, kind: OpKind, how: How, n: usize, data: Data, offsets: [usize; 3]) -> Result<(), String> {
    match dtype {
        Dtype::F32 => check::<f32>(kind, how, n, data, offsets),
        Dtype::F16 => check::<f16>(kind, how, n, data, offsets),
        Dtype::Bf16 => check::<bf16>(kind, how, n, data, offsets),
    }
}

/// Every operation, dtype and pattern at every size of `SIZES`, on random and
/// special values (two poisons each), then at odd blocks and capped grids.
fn every_pattern(kind: OpKind) {
    let test = format!("op_{}", kind.name());
    let mut failures = Vec::new();
    let cfgs =
        [LaunchShape { block: 1, max_grid: 3 }, LaunchShape { block: 100, max_grid: 7 }, LaunchShape::with_block(1024)];
    for dtype in Dtype::ALL {
        for pattern in OpPattern::ALL {
            let Some(k) = kernels_gpu::ops::op_kernel(kind, dtype, pattern) else { continue };
            if k.needs_sm90() && !gpu().info().has_sm90() {
                common::record_skip(&test, k.name, 0, "needs compute capability 9.0");
                continue;
            }
            // Under the sanitizer, a subset around the lane and block edges.
            let sizes = SIZES.iter().filter(|&&n| !common::sanitizing() || [0, 1, 7, 9, 17, 257, 4097].contains(&n));
            for (&n, data) in sizes.flat_map(|n| [(n, Data::Random), (n, Data::Special)]) {
                let how = How::Explicit(pattern, LaunchShape::default());
                let r = check_dyn(dtype, kind, how, n, data, [0; 3]);
                record(&test, &format!("{dtype:?} {pattern:?} {data:?}"), n, r.is_ok());
                failures.extend(r.err());
            }
            for cfg in cfgs {
                for n in [1usize, 9, 4097, 100_003] {
                    let r = check_dyn(dtype, kind, How::Explicit(pattern, cfg), n, Data::Random, [0; 3]);
                    record(&test, &format!("{dtype:?} {pattern:?} {cfg:?}"), n, r.is_ok());
                    failures.extend(r.err());
                }
            }
        }
        // The scalar kernels take any element alignment.
        for offsets in [[1, 2, 3], [3, 0, 1]] {
            let how = How::Explicit(OpPattern::Scalar, LaunchShape::default());
            let r = check_dyn(dtype, kind, how, 1001, Data::Random, offsets);
            record(&test, &format!("{dtype:?} Scalar offsets={offsets:?}"), 1001, r.is_ok());
            failures.extend(r.err());
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}

macro_rules! op_tests {
    ($($test:ident => $kind:expr),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $test() {
            every_pattern($kind);
        }
    )*};
}

op_tests! {
    add_every_dtype_and_pattern_is_bit_exact => OpKind::Binary(BinaryOp::Add),
    sub_every_dtype_and_pattern_is_bit_exact => OpKind::Binary(BinaryOp::Sub),
    mul_every_dtype_and_pattern_is_bit_exact => OpKind::Binary(BinaryOp::Mul),
    div_every_dtype_and_pattern_is_bit_exact => OpKind::Binary(BinaryOp::Div),
    min_every_dtype_and_pattern_is_bit_exact => OpKind::Binary(BinaryOp::Min),
    max_every_dtype_and_pattern_is_bit_exact => OpKind::Binary(BinaryOp::Max),
    neg_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Neg),
    abs_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Abs),
    relu_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Relu),
    exp_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Exp),
    log_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Log),
    tanh_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Tanh),
    sigmoid_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Sigmoid),
    silu_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Silu),
    gelu_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Gelu),
    gelu_tanh_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::GeluTanh),
    rsqrt_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Rsqrt),
    sqrt_every_dtype_and_pattern_is_bit_exact => OpKind::Unary(UnaryOp::Sqrt),
    axpby_every_dtype_and_pattern_is_bit_exact => OpKind::Axpby,
}

/// The automatic choice on aligned, alike-misaligned and differently misaligned
/// operands: bit-exact, and the kernel it names is the one the rule says.
#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_choice_is_bit_exact_at_every_alignment() {
    let mut failures = Vec::new();
    for kind in gpukern::OpKind::ALL {
        for dtype in Dtype::ALL {
            for offsets in [[0, 0, 0], [1, 1, 1], [1, 2, 3], [0, 0, 1]] {
                for n in [0usize, 5, 5000, 100_003] {
                    let r = check_dyn(dtype, kind, How::Auto, n, Data::Random, offsets);
                    record("op_auto", &format!("{} {dtype:?} offsets={offsets:?}", kind.name()), n, r.is_ok());
                    failures.extend(r.err());
                }
            }
            // The name it reports follows the rule (add has its own tuned plan).
            if kind != OpKind::Binary(BinaryOp::Add) {
                let hw = dtype == Dtype::Bf16 && gpu().info().has_sm90();
                let pack = if hw { OpPattern::PackSm90 } else { OpPattern::Pack };
                let want_pack = kernels_gpu_name(kind, dtype, pack);
                let s = gpu().stream_with(gpukern::Pdl::Off).unwrap();
                let plan = |a: &[u64]| gpu().plan(Call::elementwise(kind, dtype, 1 << 20, a), &s, &Opts::auto());
                let plan = |addrs: &[u64]| plan(addrs).unwrap().kernel;
                assert_eq!(plan(&[0, 16, 32]), want_pack);
                let want_scalar = kernels_gpu_name(kind, dtype, OpPattern::Scalar);
                assert_eq!(plan(&[0, 4, 32]), want_scalar);
            }
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}

fn kernels_gpu_name(kind: OpKind, dtype: Dtype, pattern: OpPattern) -> &'static str {
    kernels_gpu::ops::op_kernel(kind, dtype, pattern).expect("a kernel of the table").name
}

/// Bad input is an error, never a launch: misaligned pack operands, lengths
/// that differ, a foreign stream.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_operands_are_errors() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let (a, b) = (gpu.upload(&[1.0f32; 64]).unwrap(), gpu.upload(&[2.0f32; 64]).unwrap());
    let mut out = gpu.upload(&[7.0f32; 64]).unwrap();
    let cfg = LaunchShape::default();
    let pattern = |p| Opts::auto().pattern(p).shape(cfg);
    let (a1, b1) = (a.slice(1..).unwrap(), b.slice(1..).unwrap());
    let e = gpu.binary_opts(BinaryOp::Mul, a1, b1, out.slice_mut(1..).unwrap(), &stream, &pattern(OpPattern::Pack));
    let e = e.unwrap_err();
    assert!(matches!(e, Error::Misaligned { kernel: "mul_f32x4", operand: "a", .. }), "{e:?}");
    let out4 = out.slice_mut(4..).unwrap();
    let e = gpu.unary_opts(UnaryOp::Neg, a.view(), out4, &stream, &pattern(OpPattern::Pack)).unwrap_err();
    assert!(matches!(e, Error::UnaryLengthMismatch { kernel: "neg_f32x4", a: 64, out: 60 }), "{e:?}");
    assert!(!e.to_string().contains(" b "), "a unary error names no b: {e}");
    let e = gpu.axpby(1.0, a.slice(..3).unwrap(), 1.0, b.view(), out.view_mut(), &stream).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e:?}");
    let e = gpu.binary_opts(BinaryOp::Mul, &a, &b, &mut out, &stream, &pattern(OpPattern::PackSm90)).unwrap_err();
    assert!(matches!(e, Error::Shape { kernel: "mul", .. }), "PackSm90 is bf16 only: {e:?}");
    // A kind chosen at run time: its second operand must match it.
    let sub = OpKind::Binary(BinaryOp::Sub);
    let auto = Opts::auto();
    let e = gpu.apply(sub, &a, None, &mut out, (0.0, 0.0), &stream, &auto).unwrap_err();
    assert!(matches!(e, Error::WrongOperands { kernel: "sub", .. }), "a binary kind without b: {e:?}");
    let neg = OpKind::Unary(UnaryOp::Neg);
    let e = gpu.apply(neg, &a, Some(b.view()), &mut out, (0.0, 0.0), &stream, &auto).unwrap_err();
    assert!(matches!(e, Error::WrongOperands { kernel: "neg", .. }), "a unary kind with b: {e:?}");
    let e = gpukern::blocking::binary(&gpu, BinaryOp::Div, &[1.0f32; 3], &[1.0f32; 4]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e:?}");
    let bad_cfg = LaunchShape { block: 0, ..cfg };
    let bad = Opts::auto().pattern(OpPattern::Scalar).shape(bad_cfg);
    let e = gpu.binary_opts(BinaryOp::Sub, &a, &b, &mut out, &stream, &bad).unwrap_err();
    assert!(!matches!(e, Error::KernelFault { .. }), "{e:?}");
    let other = gpukern::Gpu::new(0).unwrap();
    let e = gpu.unary(UnaryOp::Abs, &a, &mut out, &other.stream().unwrap()).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "stream", .. }), "{e:?}");
    let e = other.binary(BinaryOp::Max, &a, &b, &mut out, &other.stream().unwrap()).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "buffers", .. }), "{e:?}");
    // Nothing was written by any refused call.
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![7.0f32; 64]);
    // The host conveniences compute.
    assert_eq!(gpukern::blocking::binary(&gpu, BinaryOp::Div, &[1.0f32, 3.0], &[4.0, 2.0]).unwrap(), vec![0.25, 1.5]);
    assert_eq!(gpukern::blocking::unary(&gpu, UnaryOp::Relu, &[-1.0f32, 2.0]).unwrap(), vec![0.0, 2.0]);
    assert_eq!(gpukern::blocking::axpby(&gpu, 2.0, &[1.0f32], -1.0, &[0.5]).unwrap(), vec![1.5]);
}

/// n = 2^32 + 2^20 for one binary, one unary and axpby per dtype (and bf16's
/// sm_90 axpby), pack and scalar (the scalar with one thread per block, so its grid is clamped at the
/// hardware limit): compared in full on the device with the uploaded reference,
/// canaries intact.
fn huge<T: ReferenceOps>() {
    // One at a time: each needs tens of GB of device and host memory.
    static HUGE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = HUGE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = gpu();
    let n = (1usize << 32) + (1 << 20);
    let size = T::DTYPE.size();
    let (free, _) = gpu.mem_info().unwrap();
    let avail = common::host_available_bytes().unwrap_or(usize::MAX);
    if 4 * n * size + (2 << 30) > free || 3 * n * size + (4 << 30) > avail {
        common::record_skip("op_huge", &format!("{:?}", T::DTYPE), n, "not enough device or host memory");
        return;
    }
    let seed: u64 = rand::random();
    let gen = |salt: u64| -> Vec<T> {
        let mut v = vec![T::from_bits32(0); n];
        v.par_chunks_mut(1 << 22).enumerate().for_each(|(i, c)| {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ salt ^ (i as u64) << 20);
            c.iter_mut().for_each(|x| *x = T::from_bits32(rng.gen()));
        });
        v
    };
    let (a, b) = (gen(1), gen(2));
    let stream = gpu.stream().unwrap();
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mut band = gpu.alloc::<T>(n + 2 * CANARY).unwrap();
    let clamped = LaunchShape { block: 1, max_grid: kernels_gpu::launch::MAX_GRID_X };
    let mut runs = vec![
        (OpKind::Binary(BinaryOp::Sub), OpPattern::Pack, LaunchShape::default()),
        (OpKind::Unary(UnaryOp::Relu), OpPattern::Pack, LaunchShape::default()),
        (OpKind::Axpby, OpPattern::Pack, LaunchShape::default()),
        (OpKind::Binary(BinaryOp::Mul), OpPattern::Scalar, clamped),
    ];
    if T::DTYPE == Dtype::Bf16 && gpu.info().has_sm90() {
        runs.push((OpKind::Axpby, OpPattern::PackSm90, LaunchShape::default()));
    }
    let mut failures = Vec::new();
    for (kind, pattern, cfg) in runs {
        let scales = SCALES[0];
        let mut want = vec![T::from_bits32(0); n];
        want.par_chunks_mut(1 << 22).enumerate().for_each(|(i, w)| {
            let s = i << 22;
            let bs = (kind.inputs() == 2).then(|| &b[s..s + w.len()]);
            w.copy_from_slice(&reference::map(kind, &a[s..s + w.len()], bs, scales));
        });
        let dwant = gpu.upload(&want).unwrap();
        drop(want);
        band.fill(T::from_bits32(POISONS[0])).unwrap();
        let out = band.slice_mut(CANARY..CANARY + n).unwrap();
        launch(kind, How::Explicit(pattern, cfg), da.view(), db.view(), out, scales, &stream).unwrap();
        stream.synchronize().unwrap();
        let bad =
            gpu.studies().count_mismatches(band.slice(CANARY..CANARY + n).unwrap(), dwant.view(), &stream).unwrap();
        let p = T::from_bits32(POISONS[0]);
        let canaries_ok = canaries_hold(&band, n, |x| x.same_as(p));
        let case =
            format!("{} {pattern:?} block={} mismatches={bad} canaries_ok={canaries_ok}", kind.name(), cfg.block);
        record("op_huge", &format!("{:?} {case}", T::DTYPE), n, bad == 0 && canaries_ok);
        if bad != 0 || !canaries_ok {
            failures.push(case);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_past_2_32_f32() {
    huge::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_past_2_32_f16() {
    huge::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_n_past_2_32_bf16() {
    huge::<bf16>();
}

/// cudarc buffers in, gpukern operations on a cudarc stream, the result read
/// back through cudarc; a stream of a non-primary context is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_buffers_on_a_cudarc_stream() {
    use cudarc::driver::CudaContext;
    let gpu = gpu();
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    let n = 100_003;
    let (a, b) = inputs::<bf16>(Data::Random, n, &mut rng);
    let (da, db) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
    let mut out = stream.alloc_zeros::<bf16>(n).unwrap();
    let mut failures = Vec::new();
    for kind in OpKind::ALL {
        let scales = SCALES[0];
        match kind {
            OpKind::Binary(op) => gpu.binary_cudarc(op, &da, &db, &mut out, &stream),
            OpKind::Unary(op) => gpu.unary_cudarc(op, &da, &mut out, &stream),
            OpKind::Axpby => gpu.axpby_cudarc(scales.0, &da, scales.1, &db, &mut out, &stream),
        }
        .unwrap();
        // What ran: the plan of the call, from cudarc's addresses.
        let addr = |s: &cudarc::driver::CudaSlice<bf16>| cudarc::driver::DevicePtr::device_ptr(s, &stream).0;
        let addrs =
            if kind.inputs() == 2 { vec![addr(&da), addr(&db), addr(&out)] } else { vec![addr(&da), addr(&out)] };
        let call = Call::elementwise(kind, gpukern::Dtype::Bf16, n, &addrs);
        let k = gpu.plan(call, &gpu.stream().unwrap(), &Opts::auto()).unwrap().kernel;
        let got: Vec<bf16> = stream.clone_dtoh(&out).unwrap();
        let want = reference::map(kind, &a, (kind.inputs() == 2).then_some(&b[..]), scales);
        let ok = reference::first_mismatch(&got, &want).is_none();
        record("op_cudarc", &format!("{} bf16 {k}", kind.name()), n, ok);
        if !ok {
            failures.push(kind.name());
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    // Views of part of a cudarc buffer work too (an unaligned start takes the scalar head).
    let mut tail = out.slice_mut(3..);
    gpu.unary_cudarc(UnaryOp::Neg, &da.slice(3..), &mut tail, &stream).unwrap();
    let got: Vec<bf16> = stream.clone_dtoh(&out).unwrap();
    assert!(got[3..].iter().zip(&a[3..]).all(|(g, x)| g.to_bits() == x.to_bits() ^ 0x8000));
    // Another context's stream is an error; nothing is launched.
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let other_stream = other.new_stream().unwrap();
    let x = other_stream.alloc_zeros::<f32>(4).unwrap();
    let mut y = other_stream.clone_htod(&[5.0f32; 4]).unwrap();
    let e = gpu.unary_cudarc(UnaryOp::Neg, &x, &mut y, &other_stream).unwrap_err();
    assert!(matches!(e, Error::ForeignContext { kernel: "neg", device: 0 }), "{e:?}");
    assert_eq!(other_stream.clone_dtoh(&y).unwrap(), vec![5.0f32; 4]);
}
