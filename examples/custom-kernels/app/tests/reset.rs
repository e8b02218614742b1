//! A reset raced by a thread that runs this module's operations (issue 38,
//! item 5): `CustomUnary::run`, `run_with`, `CustomBinary::run` and
//! `Module::unary` make every driver call under the reset's guard, so each
//! is done or refused with `DeviceReset`, never another error or a crash;
//! pinned copies, their reads and `Stream::time` (nested) in the same loop.
//! In a child process: a reset ends every handle of the process's device.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use custom_kernels_app::load;
use gpukern::{Error, Gpu, LaunchShape, OpPattern, Opts, Result};

/// `r`'s value, `None` for a refusal by the reset; any other error fails.
fn ok_or_reset<T>(what: &str, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Error::DeviceReset { .. }) => None,
        Err(e) => panic!("{what}: neither done nor refused by the reset: {e:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_ops_racing_a_reset_are_done_or_refused() {
    if std::env::var_os("GPUKERN_CHILD").is_none() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args(["--exact", "custom_ops_racing_a_reset_are_done_or_refused", "--include-ignored", "--nocapture"])
            .env("GPUKERN_CHILD", "1")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("CUSTOM-RACE-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let module = load(&gpu).unwrap();
    let n = 1 << 14;
    let (a, b) = (gpu.upload(&vec![0.5f32; n]).unwrap(), gpu.upload(&vec![-1.0f32; n]).unwrap());
    let (mut out, stream) = (gpu.alloc::<f32>(n).unwrap(), gpu.stream().unwrap());
    let (rounds, refused, stop) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|t| {
        let racing = t.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                let mut round = || -> Option<()> {
                    let silu = ok_or_reset("Module::unary", module.unary::<f32>("silu"))?;
                    let relu = ok_or_reset("Module::binary", module.binary::<f32>("relu_axpy"))?;
                    ok_or_reset("run", silu.run(&a, &mut out, [0.0; 2], &stream))?;
                    let pack = Opts::auto().pattern(OpPattern::Pack).shape(LaunchShape::default());
                    ok_or_reset("run_opts", silu.run_opts(&a, &mut out, [0.0; 2], &stream, &pack))?;
                    ok_or_reset("binary run", relu.run(&a, &b, &mut out, [1.0, 1.0], &stream))?;
                    let mut p = ok_or_reset("alloc_pinned", gpukern::PinnedVec::<f32>::new(&gpu, n))?;
                    ok_or_reset("copy_to_host", p.copy_from(&out, &stream))?;
                    // relu(0.5 - 1) = 0.
                    assert_eq!(ok_or_reset("as_slice", p.as_slice().map(|s| s[n - 1]))?, 0.0);
                    let timed = stream.time(|s| {
                        silu.run(&a, &mut out, [0.0; 2], s)?;
                        s.time(|s| relu.run(&a, &b, &mut out, [1.0, 1.0], s)).map(drop)
                    });
                    ok_or_reset("time", timed)?;
                    Some(())
                };
                if round().is_none() {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                rounds.fetch_add(1, Ordering::Release);
            }
        });
        // (A racing thread that panicked ends the waits: its join reports it.)
        while rounds.load(Ordering::Acquire) < 20 && !racing.is_finished() {
            std::thread::yield_now();
        }
        // SAFETY: this child process uses the device through gpukern alone.
        let fresh = unsafe { gpu.reset() };
        assert!(matches!(fresh, Ok(_) | Err(Error::DeviceLost { .. })), "{:?}", fresh.err());
        let after = rounds.load(Ordering::Acquire);
        while rounds.load(Ordering::Acquire) < after + 50 && !racing.is_finished() {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Release);
        racing.join().unwrap();
    });
    assert!(refused.load(Ordering::Relaxed) >= 50, "refused {}", refused.load(Ordering::Relaxed));
    println!("CUSTOM-RACE-OK");
}
