//! Issue 38, items 5 and 6 on the GPU: a reset with its contract met (no
//! driver call and no read of memory the reset frees outside the reset's
//! guard, and no pinned memory freed or read while a copy queued before the
//! reset may still write it), fills of the element's width, a nested
//! `Stream::time`, and kernel attributes asked on a thread with no current
//! context. The resets run in child processes (`run_alone`): a reset ends
//! every handle of the process's device.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::{gpu, in_child, run_alone};
use gpukern::{Error, Gpu, Norm, NormPlan, NormStrategy, Opts, Result, Rows, UnaryOp};

/// `r`'s value, `None` for a refusal by a reset; any other error fails.
fn ok_or_reset<T>(what: &str, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Error::DeviceReset { .. }) => None,
        Err(e) => panic!("{what}: neither done nor refused by the reset: {e:?}"),
    }
}

/// Waits (polling) until a reset of `gpu`'s device has begun: its calls are
/// refused from the mark on, while the reset still waits for calls in flight.
/// (A query, not an allocation: freeing one may wait for the device.)
fn wait_for_the_mark(gpu: &Gpu) {
    while !matches!(gpu.mem_info(), Err(Error::DeviceReset { .. })) {
        std::thread::yield_now();
    }
}

/// Pinned memory that copies queued before a reset write, while the reset
/// waits behind a call in flight (a stream's synchronisation): reading it is
/// refused rather than racing the copy, and dropping it does not free what
/// the copy then writes (freed heap reused by small vectors would show the
/// copy's bytes, or the allocator would abort). Memory no copy used stays
/// readable.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_memory_a_copy_may_still_write_is_never_freed_or_read() {
    if !in_child() {
        let (ok, text) = run_alone("pinned_memory_a_copy_may_still_write_is_never_freed_or_read");
        assert!(ok && text.contains("PINNED-RESET-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    // Small, so the memory comes from the heap and freed chunks are reused.
    let n = 1024;
    let src = gpu.upload(&vec![f32::from_bits(0x3c3c_3c3c); n]).unwrap();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    // Allocated first: page-locking may wait for the device.
    let (mut kept, mut dropped) =
        (gpukern::PinnedVec::<f32>::new(&gpu, n).unwrap(), gpukern::PinnedVec::<f32>::new(&gpu, n).unwrap());
    let mut untouched = gpukern::PinnedVec::<f32>::new(&gpu, 4).unwrap();
    untouched.as_mut_slice().unwrap().copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
    // s1: the copies wait behind a spin of 300 ms.
    gpu.studies().spin(&s1, 300_000_000).unwrap();
    kept.copy_from(&src, &s1).unwrap();
    dropped.copy_from(&src, &s1).unwrap();
    // s2: a longer spin that a thread waits for: a call in flight.
    gpu.studies().spin(&s2, 800_000_000).unwrap();
    let junk = std::thread::scope(|t| {
        let waiting = t.spawn(|| s2.synchronize());
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: this child process uses the device through gpukern alone.
        let resetting = t.spawn(|| unsafe { gpu.reset() });
        wait_for_the_mark(&gpu);
        let r = kept.as_slice().map(|s| s.len());
        assert!(matches!(r, Err(Error::DeviceReset { .. })), "read while a copy may write it: {r:?}");
        assert_eq!(untouched.as_slice().unwrap(), &[1.0, 2.0, 3.0, 4.0], "memory no copy used");
        drop(dropped);
        // Heap the drop would have freed, filled before the copy lands.
        let junk: Vec<Vec<u8>> = (0..256).map(|i| vec![i as u8; 4096]).collect();
        // Done (counted in before the mark, as the sleep makes all but certain).
        let waited = waiting.join().unwrap();
        assert!(matches!(waited, Ok(()) | Err(Error::DeviceReset { .. })), "{waited:?}");
        let fresh = resetting.join().unwrap();
        assert!(matches!(fresh, Ok(_) | Err(Error::DeviceLost { .. })), "{:?}", fresh.err());
        junk
    });
    let overwritten = junk.iter().enumerate().filter(|(i, v)| v.iter().any(|&b| b != *i as u8)).count();
    assert_eq!(overwritten, 0, "a copy wrote freed heap");
    assert!(matches!(kept.as_slice(), Err(Error::DeviceReset { .. })));
    drop(kept);
    println!("PINNED-RESET-OK");
}

/// A thread keeps allocating pinned memory, copying into it, reading it,
/// timing (nested) and launching while another resets: every call is done
/// or refused with `DeviceReset`, never another error or a crash.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_racing_thread_sees_only_ok_or_device_reset() {
    if !in_child() {
        let (ok, text) = run_alone("a_racing_thread_sees_only_ok_or_device_reset");
        assert!(ok && text.contains("RACE-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let n = 1 << 12;
    let x = gpu.upload(&vec![1.5f32; n]).unwrap();
    let (mut y, stream) = (gpu.alloc::<f32>(n).unwrap(), gpu.stream().unwrap());
    let (rounds, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let stop = AtomicBool::new(false);
    std::thread::scope(|t| {
        let racing = t.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                let mut round = || -> Option<()> {
                    let mut p = ok_or_reset("alloc_pinned", gpukern::PinnedVec::<f32>::new(&gpu, n))?;
                    ok_or_reset("copy_to_host", p.copy_from(&x, &stream))?;
                    let first = ok_or_reset("as_slice", p.as_slice().map(|s| s[0]))?;
                    assert_eq!(first, 1.5);
                    let timed = stream.time(|s| {
                        gpu.unary(UnaryOp::Neg, &x, &mut y, s)?;
                        s.time(|s| gpu.studies().spin(s, 10_000)).map(drop)
                    });
                    ok_or_reset("time", timed)?;
                    // Dropped with a copy queued: it waits, or leaks under a reset.
                    ok_or_reset("copy_to_host", p.copy_from(&x, &stream))?;
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
    println!("RACE-OK");
}

/// `Stream::time` inside `Stream::time` on the same stream returns (it hung:
/// the event lock was held while the closure ran), and so do two threads
/// timing one stream at once. A hang fails after a minute instead.
#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_and_concurrent_time_return() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let gpu = gpu();
        let s = gpu.stream().unwrap();
        let mut inner = 0.0;
        let outer = s
            .time(|s| {
                inner = s.time(|s| gpu.studies().spin(s, 2_000_000))?;
                gpu.studies().spin(s, 2_000_000)
            })
            .unwrap();
        let spin = || s.time(|s| gpu.studies().spin(s, 1_000_000));
        let both = std::thread::scope(|t| {
            let other = t.spawn(spin);
            (spin(), other.join().unwrap())
        });
        let _ = tx.send((inner, outer, both.0.unwrap(), both.1.unwrap()));
    });
    let (inner, outer, a, b) = rx.recv_timeout(Duration::from_secs(60)).expect("Stream::time hung");
    assert!(inner >= 1.5 && outer >= inner + 1.5, "inner {inner} ms, outer {outer} ms");
    assert!(a > 0.0 && b > 0.0, "{a} {b}");
}

/// Fills give every element the whole pattern of its width, refuse a
/// pattern wider than the element (writing nothing), and stay in their view.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fills_have_the_elements_width() {
    let gpu = gpu();
    let mut w = gpu.alloc::<u64>(1001).unwrap();
    w.fill_bits(1).unwrap();
    assert!(w.to_vec().unwrap().iter().all(|&v| v == 1), "fill_bits(1) on u64");
    w.fill_bits(0x0123_4567_89ab_cdef).unwrap();
    assert!(w.to_vec().unwrap().iter().all(|&v| v == 0x0123_4567_89ab_cdef));
    w.slice_mut(10..20).unwrap().fill_bits(u64::MAX).unwrap();
    let got = w.to_vec().unwrap();
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &v)| v == if (10..20).contains(&i) { u64::MAX } else { 0x0123_4567_89ab_cdef }));
    let mut d = gpu.alloc::<f64>(77).unwrap();
    d.fill(-2.5).unwrap();
    assert!(d.to_vec().unwrap().iter().all(|&v| v == -2.5));
    let mut h = gpu.alloc::<u16>(33).unwrap();
    h.fill_bits(0xbeef).unwrap();
    let e = h.fill_bits(0xdead_beef).unwrap_err();
    assert!(matches!(e, Error::FillBits { bits: 0xdead_beef, bytes: 2 }), "{e:?}");
    assert!(h.to_vec().unwrap().iter().all(|&v| v == 0xbeef), "a refused fill wrote");
    let mut b = gpu.alloc::<i8>(5).unwrap();
    b.fill(-3).unwrap();
    assert_eq!(b.to_vec().unwrap(), [-3; 5]);
    assert!(matches!(b.fill_bits(0x100), Err(Error::FillBits { bytes: 1, .. })));
    let mut f = gpu.alloc::<f32>(9).unwrap();
    f.fill_bits(0x3f80_0000).unwrap();
    assert_eq!(f.to_vec().unwrap(), [1.0; 9]);
    assert!(matches!(f.fill_bits(1 << 32), Err(Error::FillBits { bytes: 4, .. })));
}

/// A kernel's attributes asked first on a thread with no current context
/// (a norm with an explicit plan asks for its kernel's block limit before it
/// binds) give the real limit, not a `BlockSize { max: 0 }`. In a child:
/// the attributes are cached once asked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn attributes_asked_on_a_fresh_thread_are_real() {
    if !in_child() {
        let (ok, text) = run_alone("attributes_asked_on_a_fresh_thread_are_real");
        assert!(ok && text.contains("FRESH-THREAD-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let (x, mut y) = (gpu.upload(&vec![1.0f32; 4 * 256]).unwrap(), gpu.alloc::<f32>(4 * 256).unwrap());
    let s = gpu.stream().unwrap();
    let plan = NormPlan { strategy: NormStrategy::Block, block: 64, k: 1 };
    let opts = Opts::auto().norm_plan(plan);
    let r = std::thread::scope(|t| {
        t.spawn(|| gpu.norm(Norm::Softmax, &x, &mut y, Rows::contiguous(4, 256), &opts, &s)).join().unwrap()
    });
    assert_eq!(r.unwrap(), plan);
    s.synchronize().unwrap();
    let got = y.to_vec().unwrap();
    assert!(got.iter().all(|&v| (v - 1.0 / 256.0).abs() < 1e-6), "{:?}", &got[..4]);
    println!("FRESH-THREAD-OK");
}
