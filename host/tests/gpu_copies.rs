//! Copies on a stream, each direction: host to device and device to host
//! from and into slices, `Vec`s and `PinnedVec`s, and device to device, at
//! sizes × offsets on both sides, with canaries around every destination
//! (device bands poisoned, host bands of a known pattern), compared bit for
//! bit. Pinned copies are only queued: the `PinnedVec` must wait for them
//! when the host reads or writes it, which the spin cases check.

mod common;

use common::{canaries_hold, gpu, CANARY, POISONS};
use gpukern::{DeviceVec, Error, Gpu, HostCopyFrom};

const SIZES: [usize; 5] = [1, 3, 1000, 4099, (1 << 20) + 3];
/// Element offsets into the device buffers (misaligned ones included).
const OFFSETS: [usize; 3] = [0, 1, 5];
/// Long enough that a copy not waited for would be read before it ran.
const SPIN_NS: u64 = 20_000_000;
/// The host canary pattern.
const HOST_CANARY: u32 = 0x7fc0_0bad;

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| f32::from_bits((i as u32).wrapping_mul(2_654_435_761) ^ seed)).collect()
}

fn same_bits(got: &[f32], want: &[f32]) -> Option<usize> {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits())
}

/// A device band of `off + n + CANARY` elements poisoned, after `CANARY` more.
fn band(gpu: &Gpu, off: usize, n: usize) -> DeviceVec<f32> {
    let mut b = gpu.alloc::<f32>(CANARY + off + n + CANARY).unwrap();
    b.fill_bits(POISONS[0].into()).unwrap();
    b
}

/// `want` sits at `CANARY + off` of `b`, and the rest still holds the poison.
fn check_band(b: &DeviceVec<f32>, off: usize, want: &[f32], what: &str) {
    let all = b.to_vec().unwrap();
    let (n, start) = (want.len(), CANARY + off);
    assert_eq!(same_bits(&all[start..start + n], want), None, "{what}, n = {n}, offset {off}");
    let poisoned = |s: &[f32]| s.iter().all(|v| v.to_bits() == POISONS[0]);
    assert!(poisoned(&all[..start]) && poisoned(&all[start + n..]), "{what}, n = {n}, offset {off}: canary written");
    common::record("gpu_copies", what, n, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_to_device_from_slices_vecs_and_pinned() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    for n in SIZES {
        for off in OFFSETS {
            // The host source at an offset of a larger slice.
            let host = values(n + off, 1);
            let want = &host[off..];
            let mut d = band(&gpu, off, n);
            d.slice_mut(CANARY + off..CANARY + off + n).unwrap().copy_from(want, &stream).unwrap();
            check_band(&d, off, want, "host to device, slice");

            let v = want.to_vec();
            let mut d = band(&gpu, off, n);
            d.slice_mut(CANARY + off..CANARY + off + n).unwrap().copy_from(&v, &stream).unwrap();
            check_band(&d, off, want, "host to device, Vec");

            let mut p = gpukern::PinnedVec::<f32>::new(&gpu, n).unwrap();
            p.as_mut_slice().unwrap().copy_from_slice(want);
            let mut d = band(&gpu, off, n);
            d.slice_mut(CANARY + off..CANARY + off + n).unwrap().copy_from(&p, &stream).unwrap();
            stream.synchronize().unwrap();
            check_band(&d, off, want, "host to device, pinned");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_to_host_into_slices_vecs_and_pinned() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    for n in SIZES {
        for off in OFFSETS {
            let all = values(off + n + 7, 2);
            let d = gpu.upload(&all).unwrap();
            let src = d.slice(off..off + n).unwrap();
            let want = &all[off..off + n];

            // Into the middle of a host band whose canaries must survive.
            let mut host = vec![f32::from_bits(HOST_CANARY); CANARY + n + CANARY];
            host[CANARY..CANARY + n].copy_from(src, &stream).unwrap();
            assert_eq!(same_bits(&host[CANARY..CANARY + n], want), None, "slice, n = {n}, offset {off}");
            let intact = host[..CANARY].iter().chain(&host[CANARY + n..]).all(|v| v.to_bits() == HOST_CANARY);
            assert!(intact, "slice, n = {n}, offset {off}: a host canary was written");
            common::record("gpu_copies", "device to host, slice", n, true);

            let mut v = vec![0.0f32; n];
            v.copy_from(src, &stream).unwrap();
            assert_eq!(same_bits(&v, want), None, "Vec, n = {n}, offset {off}");

            let mut p = gpukern::PinnedVec::<f32>::new(&gpu, n).unwrap();
            p.copy_from(src, &stream).unwrap();
            assert_eq!(same_bits(p.as_slice().unwrap(), want), None, "pinned, n = {n}, offset {off}");
            common::record("gpu_copies", "device to host, Vec and pinned", n, true);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_to_device_at_offsets() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    for n in SIZES {
        for (src_off, dst_off) in OFFSETS.iter().flat_map(|&s| OFFSETS.map(|d| (s, d))) {
            let all = values(src_off + n, 3);
            let s = gpu.upload(&all).unwrap();
            let mut d = band(&gpu, dst_off, n);
            let mut dst = d.slice_mut(CANARY + dst_off..CANARY + dst_off + n).unwrap();
            dst.copy_from(s.slice(src_off..).unwrap(), &stream).unwrap();
            stream.synchronize().unwrap();
            check_band(&d, dst_off, &all[src_off..], "device to device");
        }
    }
}

/// Pinned copies are queued, not waited for: reading the `PinnedVec` waits
/// for the copy into it, and writing it waits for the copy out of it, each
/// held back behind a spin; a copy on a second stream waits for the first.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_access_waits_for_queued_copies() {
    let gpu = gpu();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    for n in SIZES {
        let want = values(n, 4);
        let d = gpu.upload(&want).unwrap();

        let mut p = gpukern::PinnedVec::<f32>::new(&gpu, n).unwrap();
        gpu.studies().spin(&s1, SPIN_NS).unwrap();
        p.copy_from(&d, &s1).unwrap();
        assert_eq!(same_bits(p.as_slice().unwrap(), &want), None, "read after a queued copy in, n = {n}");

        // Out of the pinned memory, then the host overwrites it at once.
        let mut e = band(&gpu, 0, n);
        gpu.studies().spin(&s1, SPIN_NS).unwrap();
        e.slice_mut(CANARY..CANARY + n).unwrap().copy_from(&p, &s1).unwrap();
        p.as_mut_slice().unwrap().fill(f32::from_bits(HOST_CANARY));
        s1.synchronize().unwrap();
        check_band(&e, 0, &want, "pinned source overwritten after a queued copy out");

        // A copy in on s1 (held back), then a copy out on s2: s2 waits for s1.
        let fresh = gpu.upload(&values(n, 5)).unwrap();
        let mut e = band(&gpu, 0, n);
        gpu.studies().spin(&s1, SPIN_NS).unwrap();
        p.copy_from(&fresh, &s1).unwrap();
        e.slice_mut(CANARY..CANARY + n).unwrap().copy_from(&p, &s2).unwrap();
        s2.synchronize().unwrap();
        check_band(&e, 0, &values(n, 5), "pinned copied in on s1, out on s2");
        assert!(canaries_hold(&e, n, |v| v.to_bits() == POISONS[0]));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copy_errors_name_the_direction_and_queue_nothing() {
    let gpu = gpu();
    let stream = gpu.stream().unwrap();
    let mut d = gpu.alloc::<f32>(50).unwrap();
    d.fill_bits(POISONS[1].into()).unwrap();
    let s = gpu.upload(&[1.0f32; 51]).unwrap();

    let e = d.copy_from(&s, &stream).unwrap_err();
    assert!(matches!(e, Error::CopyLength { direction: "device to device", src: 51, dst: 50 }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "device to device copy: the source has 51 elements, the destination 50; they must be equal"
    );
    let e = d.copy_from(&[1.0f32; 49][..], &stream).unwrap_err();
    assert!(matches!(e, Error::CopyLength { direction: "host to device", src: 49, dst: 50 }), "{e:?}");
    let mut p = gpukern::PinnedVec::<f32>::new(&gpu, 52).unwrap();
    let e = p.copy_from(&d, &stream).unwrap_err();
    assert!(matches!(e, Error::CopyLength { direction: "device to host", src: 50, dst: 52 }), "{e:?}");
    assert!(d.to_vec().unwrap().iter().all(|v| v.to_bits() == POISONS[1]), "a refused copy wrote");

    // Memory of another Gpu handle is refused, pinned memory included.
    let other = Gpu::new(0).unwrap();
    let q = gpukern::PinnedVec::<f32>::new(&other, 50).unwrap();
    let e = d.copy_from(&q, &stream).unwrap_err();
    assert!(matches!(e, Error::ForeignHandle { .. }), "{e:?}");
    common::record("gpu_copies", "errors", 50, true);
}
