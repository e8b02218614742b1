//! Every error variant, produced through the public API, with its message checked.

mod common;

use common::{gpu, in_child, run_alone};
use gpukern::half::f16;
use gpukern::{CountVariant, Error, Gpu, LaunchShape, MatmulVariant, TransposeVariant, Variant};

/// Runs everywhere: without a GPU (CI) `Gpu::new` must fail cleanly with NoDevice;
/// with one, an index past the last device must.
#[test]
fn missing_device_is_a_clear_error() {
    match Gpu::new(0) {
        Err(e @ Error::NoDevice(_)) => {
            assert!(e.to_string().starts_with("no CUDA device: "), "{e}")
        }
        Err(other) => panic!("expected NoDevice, got {other}"),
        Ok(_) => {
            let count = gpukern::device_count().unwrap();
            let e = Gpu::new(count + 7).unwrap_err();
            assert!(matches!(e, Error::NoDevice(_)), "{e:?}");
            assert!(e.to_string().contains(&format!("index {}", count + 7)), "{e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argument_errors_name_the_variant_and_values() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let a = gpu.upload(&[1.0f32; 100]).unwrap();
    let b = gpu.upload(&[2.0f32; 99]).unwrap();
    let mut out = gpu.alloc::<f32>(100).unwrap();

    let e = gpu.studies().add(Variant::F32x4, &a, &b, &mut out, &stream).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { a: 100, b: 99, out: 100, .. }), "{e:?}");
    assert_eq!(e.to_string(), "add_f32x4: length mismatch: a has 100 elements, b has 99, out has 100");

    let e = gpu
        .studies()
        .add(Variant::F32x4, a.slice(1..).unwrap(), b.view(), out.slice_mut(..99).unwrap(), &stream)
        .unwrap_err();
    assert!(matches!(e, Error::Misaligned { operand: "a", offset: 4, required: 16, .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("add_f32x4: operand `a` at device address 0x")
            && msg.contains("4 bytes past a 16-byte boundary"),
        "{msg}"
    );

    let e = gpu.studies().add(Variant::F16, &a, &a, &mut out, &stream).unwrap_err();
    assert_eq!(e.to_string(), "add_f16: works on f16 data, but the buffers hold f32");

    for block in [0, 1025] {
        let e = gpu
            .studies()
            .add_with(Variant::F32, LaunchShape::with_block(block), &a, &a, &mut out, &stream)
            .unwrap_err();
        assert_eq!(e.to_string(), format!("add_f32: block size {block} is out of range (1..=1024 threads)"));
    }
    let e = gpu
        .studies()
        .add_with(Variant::F32, LaunchShape { block: 256, max_grid: 0 }, &a, &a, &mut out, &stream)
        .unwrap_err();
    assert_eq!(e.to_string(), "add_f32: grid limit 0 is out of range (1..=2147483647 blocks)");

    let e = a.slice(50..101).map(|_| ()).unwrap_err();
    assert_eq!(e.to_string(), "view 50..101 is out of bounds for a buffer of 100 elements");

    let e = out.copy_from_slice(&[0.0f32; 3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "host to device copy: the source has 3 elements, the destination 100; they must be equal"
    );

    let e = gpukern::blocking::binary(&gpu, gpukern::BinaryOp::Add, &[f16::ONE; 3], &[f16::ONE; 4]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { a: 3, b: 4, .. }), "{e:?}");

    let other = Gpu::new(0).unwrap();
    let e = other.studies().add(Variant::F32, &a, &a, &mut out, &other.stream().unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "add_f32: the buffers belong to another Gpu handle; use buffers and streams of the Gpu that launches"
    );
    let e = gpu.studies().add(Variant::F32, &a, &a, &mut out, &other.stream().unwrap()).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "stream", .. }), "{e:?}");
    // Every other launching entry point refuses foreign handles the same way.
    let other_stream = other.stream().unwrap();
    let foreign: Vec<Error> = vec![
        other.studies().count_mismatches(a.view(), a.view(), &other_stream).unwrap_err(),
        other.studies().scale(a.view(), 2.0, out.view_mut(), &other_stream).unwrap_err(),
        other.studies().add_scale(a.view(), a.view(), 2.0, out.view_mut(), &other_stream).unwrap_err(),
        other.studies().saxpy(2.0, a.view(), a.view(), out.view_mut(), &other_stream).unwrap_err(),
        other.studies().copy_strided(a.view(), out.view_mut(), 1, &other_stream).unwrap_err(),
        other
            .studies()
            .transpose(TransposeVariant::Padded, a.view(), out.view_mut(), (10, 10), &other_stream)
            .unwrap_err(),
        other
            .studies()
            .matmul(MatmulVariant::Naive, a.view(), a.view(), out.view_mut(), (10, 10, 10), &other_stream)
            .unwrap_err(),
        gpu.studies().scale(a.view(), 2.0, out.view_mut(), &other_stream).unwrap_err(),
    ];
    for (i, e) in foreign.iter().enumerate() {
        let what = if i == foreign.len() - 1 { "stream" } else { "buffers" };
        assert!(matches!(e, Error::ForeignHandle { what: w, .. } if *w == what), "{i}: {e:?}");
    }
    let mut marks = gpu.alloc::<i32>(10).unwrap();
    let e = other.studies().mark_visits(1, LaunchShape::default(), &mut marks, &other_stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { kernel: "mark_visits_1", what: "buffers" }), "{e:?}");
    let mut counter = gpu.alloc::<u64>(1).unwrap();
    let ints = gpu.alloc::<i32>(10).unwrap();
    let e = other
        .studies()
        .count_eq_into(CountVariant::Atomic, ints.view(), 0, counter.view_mut(), &other_stream)
        .unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { what: "buffers", .. }), "{e:?}");

    // n = 0 succeeds without launching.
    let (z, mut zo) = (gpu.alloc::<f32>(0).unwrap(), gpu.alloc::<f32>(0).unwrap());
    gpu.studies().add(Variant::F32x4, &z, &z, &mut zo, &stream).unwrap();
    stream.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ptx_problems_fail_at_load_naming_the_cause() {
    // SAFETY: neither module loads, so no kernel of it is ever launched.
    let e = unsafe { Gpu::with_ptx(0, "this is not PTX") }.unwrap_err();
    assert!(matches!(e, Error::PtxLoad(_)), "{e:?}");
    assert!(e.to_string().starts_with("failed to load the PTX module: CUDA_ERROR_"), "{e}");

    let without = gpukern::PTX.replace("add_bf16x8_pack", "renamed_bf16x8_pack");
    // SAFETY: as above (a kernel is missing, so the load fails).
    let e = unsafe { Gpu::with_ptx(0, &without) }.unwrap_err();
    assert!(matches!(e, Error::MissingKernel { kernel: "add_bf16x8_pack", .. }), "{e:?}");
    assert!(
        e.to_string().starts_with("kernel `add_bf16x8_pack` is missing from the PTX module: CUDA_ERROR_NOT_FOUND"),
        "{e}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn impossible_allocation_is_out_of_memory() {
    let e = gpu().alloc::<f32>(1 << 50).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { bytes, .. } if bytes == 4 << 50), "{e:?}");
    assert!(e.to_string().starts_with(&format!("out of device memory allocating {} bytes", 4u64 << 50)), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_fault_surfaces_at_sync_and_later_calls_fail_cleanly() {
    if !in_child() {
        let (ok, text) = run_alone("kernel_fault_surfaces_at_sync_and_later_calls_fail_cleanly");
        assert!(ok && text.contains("FAULT-CHILD-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let stream = gpu.stream().unwrap();
    let keep = gpu.upload(&[1.0f32; 1024]).unwrap();
    let (old_src, mut old_dst) = (gpu.upload(&[2.0f32; 64]).unwrap(), gpu.alloc::<f32>(64).unwrap());
    gpukern::test_hooks::launch_faulting_kernel(&gpu, &stream).unwrap();
    let e = stream.synchronize().unwrap_err();
    assert!(matches!(e, Error::KernelFault { kernel: None, .. }), "{e:?}");
    assert!(e.to_string().starts_with("a kernel faulted: CUDA_ERROR_"), "{e}");
    // The context is now broken: later calls return the fault, never panic.
    let e = gpu.alloc::<f32>(16).unwrap_err();
    assert!(matches!(e, Error::KernelFault { kernel: None, .. }), "{e:?}");
    assert!(e.to_string().starts_with("a kernel faulted: CUDA_ERROR_"), "{e}");
    let e = keep.to_vec().unwrap_err();
    assert!(matches!(e, Error::KernelFault { kernel: None, .. }), "a copy after the fault: {e:?}");
    drop(keep); // must not panic
                // Recovery: reset, then the device works again with new buffers, and the
                // old handles are refused rather than reaching the destroyed context.
                // Where the driver allows it, the device works again with new buffers;
                // where it keeps the fault for the process (driver 580 does), reset says
                // so. Either way the old handles are refused from now on.
                // SAFETY: this child process uses the device through this library alone.
    let reset = unsafe { gpu.reset() };
    let e = gpu.alloc::<f32>(16).unwrap_err();
    assert!(matches!(e, Error::DeviceReset { .. }), "{e:?}");
    let e = stream.synchronize().unwrap_err();
    assert!(matches!(e, Error::DeviceReset { .. }), "{e:?}");
    // A copy between dead buffers is refused before it reaches the driver
    // (their addresses may belong to new allocations now).
    let e = old_dst.copy_from(&old_src, &stream).unwrap_err();
    assert!(matches!(e, Error::DeviceReset { .. }), "{e:?}");
    match reset {
        Ok(fresh) => {
            let a: Vec<f32> = (0..4099).map(|i| i as f32 * 0.25 - 7.0).collect();
            let b: Vec<f32> = (0..4099).map(|i| 1.0 / (i as f32 + 1.0)).collect();
            let c = gpukern::blocking::binary(&fresh, gpukern::BinaryOp::Add, &a, &b).unwrap();
            assert_eq!(gpukern::reference::first_mismatch(&c, &gpukern::reference::add(&a, &b)), None);
            println!("RESET recovered the device");
        }
        Err(e) => {
            assert!(matches!(e, Error::DeviceLost { .. }), "{e:?}");
            assert!(e.to_string().contains("restart"), "{e}");
            println!("RESET: {e}");
        }
    }
    println!("FAULT-CHILD-OK");
}

/// 1,000 allocate/launch/free cycles free every allocation they make. Counts
/// this process's own allocations (`gpukern::test_hooks::live_allocations`), not
/// the device's free memory, which any other process on the GPU moves.
#[test]
#[ignore = "needs a CUDA GPU"]
fn alloc_launch_free_cycles_do_not_leak() {
    if !in_child() {
        // Alone in its process: the counts are process-wide.
        let (ok, text) = run_alone("alloc_launch_free_cycles_do_not_leak");
        assert!(ok && text.contains("LEAK-CHILD-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    let n = 65_536;
    let run = |i: usize| {
        let held = gpukern::test_hooks::live_allocations();
        let a = gpu.upload(&vec![f16::ONE; n]).unwrap();
        let mut c = gpu.alloc::<f16>(n).unwrap();
        let bytes = 2 * n * std::mem::size_of::<f16>();
        assert_eq!(
            gpukern::test_hooks::live_allocations(),
            (held.0 + 2, held.1 + bytes),
            "cycle {i}: two buffers counted"
        );
        gpu.binary(gpukern::BinaryOp::Add, &a, &a, &mut c, &s1).unwrap();
        // Every other cycle the sum is read on a second stream, and both are
        // dropped with work queued: the frees wait for it.
        if !i.is_multiple_of(2) {
            let mut d = gpu.alloc::<f16>(n).unwrap();
            gpu.unary(gpukern::UnaryOp::Neg, &c, &mut d, &s2).unwrap();
        } else {
            s1.synchronize().unwrap();
        }
    };
    for i in 0..20 {
        run(i);
    }
    let before = gpukern::test_hooks::live_allocations();
    for i in 0..1000 {
        run(i);
    }
    s2.synchronize().unwrap();
    assert_eq!(
        gpukern::test_hooks::live_allocations(),
        before,
        "allocations left behind by 1,000 cycles (count, bytes)"
    );
    println!("LEAK-CHILD-OK");
}

/// A failing `gpu_assert!` reaches the host as `Error::KernelAssert` with its
/// message, file, line and thread; `gpu_printf!` output reaches stdout at the
/// synchronisation; the parent process goes on (the fault is the child's).
#[test]
#[ignore = "needs a CUDA GPU"]
fn device_assert() {
    if !in_child() {
        let (ok, text) = run_alone("device_assert");
        let printed = text.contains("debug_probe: n = 4096, x[0] = 0, limit = 5000");
        let asserted = text.contains("gpu_assert failed: block");
        common::record("device_assert", "printf line, assert record and fault in a child", 4096, ok && printed);
        assert!(ok && printed && asserted && text.contains("ASSERT-CHILD-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let stream = gpu.stream().unwrap();
    let x: Vec<u32> = (0..4096).collect();
    let dx = gpu.upload(&x).unwrap();
    // The library's own module again, as a user module: the escape hatch
    // launches its probe kernel.
    // SAFETY: the library's own PTX (built by gpukern-build from kernels-gpu).
    let m = unsafe { gpu.load_ptx(gpukern::PTX) }.unwrap();
    let launch = |limit: u32| {
        let l = gpukern::Launch { grid: (4, 1, 1), block: (256, 1, 1), shared_bytes: 0 };
        let args = [gpukern::Arg::Ptr(dx.device_addr()), gpukern::Arg::U64(4096), gpukern::Arg::U32(limit)];
        // SAFETY: debug_probe takes (x: *const u32, n: u64, limit: u32) and
        // reads x[..n], which `dx` holds and outlives the synchronisation.
        unsafe { m.launch("debug_probe", l, &args, &stream) }.unwrap();
    };
    launch(5000);
    stream.synchronize().unwrap();
    launch(100);
    let e = stream.synchronize().unwrap_err();
    match &e {
        Error::KernelAssert(a) => {
            let gpukern::AssertFailure { kernel, file, line, message, block, thread, .. } = &**a;
            assert_eq!(kernel.as_deref(), Some("debug_probe"));
            assert!(file.ends_with("debug.rs") && file.contains("kernels-gpu"), "{file}");
            assert!(*line > 0);
            assert_eq!(message, "debug_probe: an element is not below the limit");
            // Every thread reaches a failing element (grid-stride from 1024
            // threads over 4096 elements, limit 100): the first one is any
            // thread of the launch.
            assert!(block[0] < 4 && thread[0] < 256 && block[1..] == [0, 0] && thread[1..] == [0, 0]);
        }
        e => panic!("expected KernelAssert, got {e:?}"),
    }
    assert!(e.to_string().starts_with("gpu_assert failed (last user kernel queued: `debug_probe`) at "), "{e}");
    println!("ASSERT-CHILD-OK");
}

/// `gpu_assert!`'s printed line is exact (issue 30: `%.*s`, which CUDA's
/// vprintf lacks, printed garbage): the child prints, from the host's
/// `Error::KernelAssert` record, the line the first failing thread must have
/// printed; the parent finds that line, character for character, in the
/// child's stdout, and checks every printed assert line has the same form.
#[test]
#[ignore = "needs a CUDA GPU"]
fn device_assert_prints_its_line() {
    const MESSAGE: &str = "debug_probe: an element is not below the limit";
    if !in_child() {
        let (ok, text) = run_alone("device_assert_prints_its_line");
        let want = text.lines().find_map(|l| l.strip_prefix("EXPECTED-LINE: ")).map(str::to_owned);
        let printed: Vec<&str> = text.lines().filter(|l| l.starts_with("gpu_assert failed: block (")).collect();
        let exact = want.as_deref().is_some_and(|w| printed.contains(&w));
        let well_formed =
            printed.iter().all(|l| l.ends_with(&format!("kernels-gpu/src/debug.rs:{}: {MESSAGE}", line_of(&want))));
        common::record(
            "device_assert_prints_its_line",
            "the printed gpu_assert line, exact",
            printed.len(),
            ok && exact,
        );
        assert!(
            ok && exact && well_formed && !printed.is_empty(),
            "expected {want:?} among {printed:#?}; child:\n{text}"
        );
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let stream = gpu.stream().unwrap();
    let x: Vec<u32> = (0..4096).collect();
    let dx = gpu.upload(&x).unwrap();
    // SAFETY: the library's own PTX (built by gpukern-build from kernels-gpu).
    let m = unsafe { gpu.load_ptx(gpukern::PTX) }.unwrap();
    let l = gpukern::Launch { grid: (4, 1, 1), block: (256, 1, 1), shared_bytes: 0 };
    let args = [gpukern::Arg::Ptr(dx.device_addr()), gpukern::Arg::U64(4096), gpukern::Arg::U32(100)];
    // SAFETY: debug_probe takes (x: *const u32, n: u64, limit: u32) and reads
    // x[..n], which `dx` holds and outlives the synchronisation.
    unsafe { m.launch("debug_probe", l, &args, &stream) }.unwrap();
    match stream.synchronize().unwrap_err() {
        Error::KernelAssert(a) => {
            assert_eq!(a.message, MESSAGE);
            let ([b0, b1, b2], [t0, t1, t2]) = (a.block, a.thread);
            println!(
                "EXPECTED-LINE: gpu_assert failed: block ({b0}, {b1}, {b2}) thread ({t0}, {t1}, {t2}): {}:{}: {}",
                a.file, a.line, a.message
            );
        }
        e => panic!("expected KernelAssert, got {e:?}"),
    }
}

/// The line number in an expected assert line (`…:LINE: message`), or 0.
fn line_of(want: &Option<String>) -> u32 {
    let w = want.as_deref().unwrap_or("");
    w.rsplit_once(": debug_probe").and_then(|(head, _)| head.rsplit(':').next()?.parse().ok()).unwrap_or(0)
}
