//! GPU tests of the example (ignored without a GPU): the custom operations
//! across sizes × offsets with canaries, the checks of the typed handles, and a
//! user kernel that faults, then a reset, then a correct add.

use custom_kernels_app::{check, load};
use gpukern::half::bf16;
use gpukern::{Arg, Error, Gpu, Launch};

fn record(case: &str, n: usize, ok: bool) {
    use std::io::Write;
    if let Ok(path) = std::env::var("GPUKERN_CASES") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{{\"test\":\"custom_ops\",\"case\":\"{case}\",\"n\":{n},\"ok\":{ok}}}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_ops_are_bit_exact_at_every_size_and_offset() {
    let gpu = Gpu::new(0).unwrap();
    let module = load(&gpu).unwrap();
    let stream = gpu.stream().unwrap();
    let mut failures = Vec::new();
    for n in [
        0usize,
        1,
        2,
        3,
        4,
        5,
        7,
        8,
        9,
        15,
        16,
        17,
        31,
        33,
        255,
        256,
        257,
        4095,
        4096,
        4097,
        65_537,
        1 << 20,
        (1 << 22) + 5,
    ] {
        for offset in [0usize, 1, 2, 5, 8] {
            for (dtype, r) in [
                ("f32", check::<f32>(&gpu, &module, &stream, n, offset)),
                ("bf16", check::<bf16>(&gpu, &module, &stream, n, offset)),
            ] {
                record(&format!("silu+relu_axpy {dtype} offset {offset}"), n, r.is_ok());
                if let Err(m) = r {
                    failures.push(m);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn handles_check_the_manifest_and_the_operands() {
    let gpu = Gpu::new(0).unwrap();
    let module = load(&gpu).unwrap();
    let stream = gpu.stream().unwrap();
    // Kind, dtype and name come from the manifest.
    assert!(matches!(module.binary::<f32>("silu"), Err(Error::CustomOp { .. })));
    assert!(
        matches!(module.unary::<gpukern::half::f16>("silu"), Err(Error::CustomOp { .. })),
        "no f16 kernels declared"
    );
    assert!(matches!(module.unary::<f32>("write_one"), Err(Error::CustomOp { .. })), "a plain kernel has no manifest");
    assert!(matches!(module.unary::<f32>("nope"), Err(Error::CustomOp { .. })));
    let silu = module.unary::<f32>("silu").unwrap();
    assert_eq!(silu.kernels(), ("silu_f32", "silu_f32x4"));
    assert_eq!(silu.tuning(), None);
    assert_eq!(custom_kernels_app::silu_op::<f32>(&module).unwrap().tuning(), Some(gpukern::UnaryOp::Silu));
    let a = gpu.upload(&[1.0f32; 64]).unwrap();
    let mut out = gpu.alloc::<f32>(64).unwrap();
    // The plan of a call: the pack kernel on aligned operands (its PDL twin
    // where PDL is on and the device has it), the scalar one on misaligned.
    // `gpu.plan` answers for a user operation as for the library's.
    use gpukern::{Call, Opts, Pdl};
    let plan = gpu.plan(Call::custom_unary(&silu, &a, &out), &stream, &Opts::auto().pdl(Pdl::Off)).unwrap();
    assert_eq!((plan.kernel, plan.head, plan.pdl), ("silu_f32x4", None, false));
    let plan = gpu.plan(Call::custom_unary(&silu, &a, &out), &stream, &Opts::auto().pdl(Pdl::On)).unwrap();
    let sm90 = gpu.info().has_sm90();
    assert_eq!((plan.kernel, plan.pdl), (if sm90 { "silu_f32x4_pdl" } else { "silu_f32x4" }, sm90));
    let odd = Call::custom_unary(&silu, a.slice(1..61).unwrap(), out.slice(..60).unwrap());
    assert_eq!(gpu.plan(odd, &stream, &Opts::auto().pdl(Pdl::On)).unwrap().kernel, "silu_f32");
    let e = silu.run(&a, out.slice_mut(..60).unwrap(), [0.0; 2], &stream).unwrap_err();
    assert!(matches!(e, Error::UnaryLengthMismatch { a: 64, out: 60, .. }), "{e:?}");
    let pack = Opts::auto().pattern(gpukern::OpPattern::Pack);
    let e = silu.run_opts(a.slice(1..).unwrap(), out.slice_mut(1..).unwrap(), [0.0; 2], &stream, &pack).unwrap_err();
    assert!(matches!(e, Error::Misaligned { operand: "a", .. }), "{e:?}");
    let sm90 = Opts::auto().pattern(gpukern::OpPattern::PackSm90);
    let e = silu.run_opts(&a, &mut out, [0.0; 2], &stream, &sm90).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "a user operation has no PackSm90 kernel: {e:?}");
    let other = Gpu::new(0).unwrap();
    let e = silu.run(&a, &mut out, [0.0; 2], &other.stream().unwrap()).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "stream", .. }), "{e:?}");
    let b = other.upload(&[1.0f32; 64]).unwrap();
    let relu = module.binary::<f32>("relu_axpy").unwrap();
    let e = relu.run(&a, &b, &mut out, [1.0, 1.0], &stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "buffers", .. }), "{e:?}");
    // The escape hatch checks what it can: geometry and stream.
    let bad = Launch { grid: (0, 1, 1), block: (32, 1, 1), shared_bytes: 0 };
    // SAFETY: refused before launching (grid of zero blocks).
    let e = unsafe { module.launch("write_one", bad, &[Arg::view_mut(&out.view_mut())], &stream) }.unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    stream.synchronize().unwrap();
}

fn in_child() -> bool {
    std::env::var_os("GPUKERN_CHILD").is_some()
}

/// A user kernel faults: the error names it. `Gpu::reset` then recovers the
/// device where the driver allows it (a new add and the module are checked),
/// or reports `DeviceLost` where the driver keeps the fault for the process
/// (driver 580 does). The fault runs in a child process, and the parent goes on:
/// after the child, a new add here is checked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_faulting_user_kernel_is_named_and_reset_recovers() {
    if !in_child() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args(["--exact", "a_faulting_user_kernel_is_named_and_reset_recovers", "--include-ignored", "--nocapture"])
            .env("GPUKERN_CHILD", "1")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let ok = out.status.success() && text.contains("USER-FAULT-OK");
        record("user kernel fault, reset", 1 << 16, ok);
        assert!(ok, "child failed:\n{text}");
        // This process goes on: the child's fault did not reach it.
        let gpu = Gpu::new(0).unwrap();
        let a: Vec<f32> = (0..1 << 16).map(|i| i as f32 * 0.5).collect();
        let c = gpukern::blocking::binary(&gpu, gpukern::BinaryOp::Add, &a, &a).unwrap();
        let ok = c.iter().zip(&a).all(|(c, a)| c.to_bits() == (a + a).to_bits());
        record("after a child's fault, add in the parent", 1 << 16, ok);
        assert!(ok);
        println!("{}", text.lines().filter(|l| l.starts_with("RESET")).collect::<Vec<_>>().join("\n"));
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let module = load(&gpu).unwrap();
    let stream = gpu.stream().unwrap();
    let one = Launch { grid: (1, 1, 1), block: (1, 1, 1), shared_bytes: 0 };
    // SAFETY: deliberately not: write_one stores through address 0, which faults.
    unsafe { module.launch("write_one", one, &[Arg::Ptr(0)], &stream) }.unwrap();
    let e = stream.synchronize().unwrap_err();
    assert!(matches!(&e, Error::KernelFault { kernel: Some(k), .. } if k == "write_one"), "{e:?}");
    assert!(e.to_string().contains("`write_one`"), "{e}");
    // SAFETY: this child process uses the device through gpukern alone.
    let gpu = match unsafe { gpu.reset() } {
        Ok(gpu) => gpu,
        Err(e) => {
            assert!(matches!(e, Error::DeviceLost { .. }), "{e:?}");
            println!("RESET: {e}");
            println!("USER-FAULT-OK");
            return;
        }
    };
    println!("RESET recovered the device");
    let a: Vec<f32> = (0..1 << 16).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..1 << 16).map(|i| 3.0 - i as f32).collect();
    let c = gpukern::blocking::binary(&gpu, gpukern::BinaryOp::Add, &a, &b).unwrap();
    assert!(c.iter().zip(a.iter().zip(&b)).all(|(c, (a, b))| c.to_bits() == (a + b).to_bits()));
    // User modules load again on the new handle and run correctly.
    let module = load(&gpu).unwrap();
    let stream = gpu.stream().unwrap();
    check::<f32>(&gpu, &module, &stream, 10_000, 3).unwrap();
    println!("USER-FAULT-OK");
}
