//! Buffers are ordered across streams: work queued on one stream waits for
//! earlier work on the same buffer queued on another, with no synchronisation
//! by the caller. Each case holds the first stream back with a 20 ms spin, so
//! without the ordering the second stream's work would run first and the
//! bits would differ. And reset is atomic with this crate's own threads.
//! Results are read with `to_vec` (a legacy-stream copy, which waits for the
//! blocking streams' earlier work), compared bit for bit, with canaries on
//! both sides of each output.

mod common;

use common::{canaries_hold, gpu, in_child, run_alone, CANARY, POISONS};
use gpukern::{BinaryOp, DeviceVec, Error, Gpu, UnaryOp};

/// Long enough that an unordered second stream would overtake the first.
const SPIN_NS: u64 = 20_000_000;
const SIZES: [usize; 4] = [1, 1000, 4099, (1 << 20) + 3];

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 * 1e-6 - 2000.0).collect()
}

/// An output band of `n` elements with poisoned canaries on both sides.
fn band(gpu: &Gpu, n: usize) -> DeviceVec<f32> {
    let mut b = gpu.alloc::<f32>(n + 2 * CANARY).unwrap();
    b.fill_bits(POISONS[0].into()).unwrap();
    b
}

/// The band's middle equals `want` bit for bit, and its canaries are intact.
fn check_band(b: &DeviceVec<f32>, want: &[f32], what: &str) {
    let n = want.len();
    let got = b.slice(CANARY..CANARY + n).unwrap().to_vec().unwrap();
    let bad = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits());
    assert_eq!(bad, None, "{what}, n = {n}: first mismatch at {bad:?}");
    assert!(canaries_hold(b, n, |v| v.to_bits() == POISONS[0]), "{what}, n = {n}: a canary was written");
    common::record("gpu_order", what, n, true);
}

fn neg(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| -x).collect()
}

fn sum(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The case: a long kernel on `s1` reads `x`, then `s2` writes `x`;
/// `s1`'s output is the old `x`'s, exactly.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_write_on_another_stream_waits_for_the_reader() {
    let gpu = gpu();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    for n in SIZES {
        let (xv, zv) = (values(n, 1), values(n, 2));
        let (mut x, z) = (gpu.upload(&xv).unwrap(), gpu.upload(&zv).unwrap());
        let mut y = band(&gpu, n);
        gpu.studies().spin(&s1, SPIN_NS).unwrap();
        gpu.unary(UnaryOp::Neg, &x, y.slice_mut(CANARY..CANARY + n).unwrap(), &s1).unwrap();
        gpu.binary(BinaryOp::Add, &z, &z, &mut x, &s2).unwrap();
        check_band(&y, &neg(&xv), "reader on s1 before a writer on s2");
        assert_eq!(x.to_vec().unwrap(), sum(&zv, &zv), "the write on s2 happened, n = {n}");
    }
}

/// A read on `s2` waits for the write queued on `s1`, through every path:
/// an element-wise op, a copy, add_many, a graph replay.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_read_on_another_stream_waits_for_the_writer() {
    let gpu = gpu();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    for n in SIZES {
        let (av, bv) = (values(n, 3), values(n, 4));
        let (a, b) = (gpu.upload(&av).unwrap(), gpu.upload(&bv).unwrap());
        let want = sum(&av, &bv);
        let write_x = |x: &mut DeviceVec<f32>| {
            x.fill_bits(POISONS[1].into()).unwrap();
            gpu.studies().spin(&s1, SPIN_NS).unwrap();
            gpu.binary(BinaryOp::Add, &a, &b, x, &s1).unwrap();
        };
        let mut x = gpu.alloc::<f32>(n).unwrap();

        let mut y = band(&gpu, n);
        write_x(&mut x);
        gpu.unary(UnaryOp::Neg, &x, y.slice_mut(CANARY..CANARY + n).unwrap(), &s2).unwrap();
        check_band(&y, &neg(&want), "unary on s2 after a write on s1");

        let mut y = band(&gpu, n);
        write_x(&mut x);
        y.slice_mut(CANARY..CANARY + n).unwrap().copy_from(&x, &s2).unwrap();
        check_band(&y, &want, "copy on s2 after a write on s1");

        // Two triples, so the foreach kernel runs (one would be a plain add).
        let (mut y, mut w) = (band(&gpu, n), band(&gpu, n));
        write_x(&mut x);
        let triples = vec![
            (x.view(), x.view(), y.slice_mut(CANARY..CANARY + n).unwrap()),
            (x.view(), a.view(), w.slice_mut(CANARY..CANARY + n).unwrap()),
        ];
        gpu.add_many(triples, &s2).unwrap();
        check_band(&y, &sum(&want, &want), "add_many on s2 after a write on s1");
        check_band(&w, &sum(&want, &av), "add_many on s2 after a write on s1 (second triple)");

        let mut y = band(&gpu, n);
        write_x(&mut x);
        {
            let mut g = gpu.graph();
            let (sx, sy) = (g.input(&x).unwrap(), g.output(y.slice_mut(CANARY..CANARY + n).unwrap()).unwrap());
            g.unary(UnaryOp::Neg, sx, sy).unwrap();
            g.build().unwrap().launch(&s2).unwrap();
        }
        check_band(&y, &neg(&want), "graph replay on s2 after a write on s1");
    }
}

/// A chain that alternates streams at every step (each step reads what the
/// other stream just wrote), and halves of one buffer written on two streams
/// from two threads at once, then read whole on a third.
#[test]
#[ignore = "needs a CUDA GPU"]
fn chains_and_split_buffers_across_streams() {
    let gpu = gpu();
    let streams = [gpu.stream().unwrap(), gpu.stream().unwrap(), gpu.stream().unwrap()];
    let n = (1 << 18) + 5;
    let (xv, one) = (values(n, 5), vec![1.0f32; n]);
    let ones = gpu.upload(&one).unwrap();
    let (mut x, mut y) = (gpu.upload(&xv).unwrap(), gpu.alloc::<f32>(n).unwrap());
    gpu.studies().spin(&streams[0], SPIN_NS).unwrap();
    let mut want = xv.clone();
    for step in 0..32 {
        let s = &streams[step % 2];
        gpu.binary(BinaryOp::Add, &x, &ones, &mut y, s).unwrap();
        std::mem::swap(&mut x, &mut y);
        want = sum(&want, &one);
    }
    let mut out = band(&gpu, n);
    gpu.unary(UnaryOp::Neg, &x, out.slice_mut(CANARY..CANARY + n).unwrap(), &streams[2]).unwrap();
    check_band(&out, &neg(&want), "32 steps alternating two streams");

    let mut halves = gpu.alloc::<f32>(n).unwrap();
    {
        let (lo, hi) = halves.view_mut().into_split_at(n / 2).unwrap();
        let (x, ones, gpu) = (&x, &ones, &gpu);
        std::thread::scope(|t| {
            let (s0, s1) = (&streams[0], &streams[1]);
            t.spawn(move || {
                gpu.studies().spin(s0, SPIN_NS).unwrap();
                gpu.binary(BinaryOp::Add, x.slice(..n / 2).unwrap(), ones.slice(..n / 2).unwrap(), lo, s0).unwrap();
            });
            t.spawn(move || {
                gpu.binary(BinaryOp::Add, x.slice(n / 2..).unwrap(), ones.slice(n / 2..).unwrap(), hi, s1).unwrap();
            });
        });
    }
    let mut out = band(&gpu, n);
    gpu.unary(UnaryOp::Neg, &halves, out.slice_mut(CANARY..CANARY + n).unwrap(), &streams[2]).unwrap();
    check_band(&out, &neg(&sum(&want, &one)), "halves written on two streams, read whole on a third");
}

/// Dropping a buffer with work queued on it waits for that work: the memory
/// is not handed out again (and overwritten) while a kernel still reads it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_free_waits_for_queued_work() {
    let gpu = gpu();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    for n in SIZES {
        let xv = values(n, 6);
        let x = gpu.upload(&xv).unwrap();
        let mut y = band(&gpu, n);
        gpu.studies().spin(&s1, SPIN_NS).unwrap();
        gpu.unary(UnaryOp::Neg, &x, y.slice_mut(CANARY..CANARY + n).unwrap(), &s1).unwrap();
        drop(x);
        // New buffers, likely at the freed address, overwritten on another stream.
        let mut again: Vec<DeviceVec<f32>> = (0..4).map(|_| gpu.alloc::<f32>(n).unwrap()).collect();
        let zeros = gpu.upload(&vec![0.0f32; n]).unwrap();
        for buf in &mut again {
            gpu.binary(BinaryOp::Add, &zeros, &zeros, buf, &s2).unwrap();
        }
        check_band(&y, &neg(&xv), "buffer freed while a kernel on s1 read it");
    }
}

/// A thread loops operations while another resets the device: every call
/// either ran before the reset or is refused with `DeviceReset`; none reaches
/// the driver with a dead stream or buffer (that would be a `Driver` error,
/// or a crash). Afterwards the old handles refuse, a second reset through a
/// dead handle is refused, and the new handle computes exactly.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reset_is_atomic_with_the_crates_own_threads() {
    if !in_child() {
        let (ok, text) = run_alone("reset_is_atomic_with_the_crates_own_threads");
        assert!(ok && text.contains("RESET-RACE-OK"), "child failed:\n{text}");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let n = 1 << 16;
    let xv = values(n, 7);
    let (x, mut y, stream) = (gpu.upload(&xv).unwrap(), gpu.alloc::<f32>(n).unwrap(), gpu.stream().unwrap());
    let started = std::sync::atomic::AtomicUsize::new(0);
    let (fresh, (ran, refused)) = std::thread::scope(|t| {
        let looping = t.spawn(|| {
            let (mut ran, mut refused) = (0usize, 0usize);
            while refused < 100 {
                let scratch = gpu.alloc::<f32>(n);
                let r = gpu.unary(UnaryOp::Neg, &x, &mut y, &stream).and_then(|_| stream.synchronize());
                match (scratch, r) {
                    (Ok(_), Ok(())) => ran += 1,
                    (Err(Error::DeviceReset { .. }), _) | (_, Err(Error::DeviceReset { .. })) => refused += 1,
                    (a, r) => panic!("neither done nor refused: {:?} {r:?}", a.err()),
                }
                started.fetch_add(1, std::sync::atomic::Ordering::Release);
            }
            (ran, refused)
        });
        while started.load(std::sync::atomic::Ordering::Acquire) < 20 {
            std::thread::yield_now();
        }
        // SAFETY: this child process uses the device through gpukern alone.
        let fresh = unsafe { gpu.reset() };
        (fresh, looping.join().unwrap())
    });
    assert!(ran >= 20 && refused == 100, "ran {ran}, refused {refused}");
    assert!(matches!(stream.synchronize(), Err(Error::DeviceReset { .. })));
    assert!(matches!(x.to_vec(), Err(Error::DeviceReset { .. })));
    // SAFETY: as above.
    assert!(matches!(unsafe { gpu.reset() }, Err(Error::DeviceReset { .. })), "a dead handle cannot reset again");
    match fresh {
        Ok(fresh) => {
            let s = fresh.stream().unwrap();
            let (x, mut y) = (fresh.upload(&xv).unwrap(), band(&fresh, n));
            fresh.unary(UnaryOp::Neg, &x, y.slice_mut(CANARY..CANARY + n).unwrap(), &s).unwrap();
            check_band(&y, &neg(&xv), "after a reset raced by another thread");
        }
        Err(e) => assert!(matches!(e, Error::DeviceLost { .. }), "{e:?}"),
    }
    println!("RESET-RACE-OK");
}
