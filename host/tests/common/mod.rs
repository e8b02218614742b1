//! Shared GPU-test machinery: data sets, poison and canaries, the `check` helper.
#![allow(dead_code)]

use std::io::Write;
use std::sync::Mutex;

use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceAdd};
use gpukern::{BulkConfig, Dtype, Element, Gpu, LaunchShape, Variant};
use rand::{Rng, SeedableRng};

/// Sizes every variant is checked at: around every lane, warp and block edge.
pub const SIZES: &[usize] =
    &[0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 257, 4095, 4096, 4097, (1 << 20) + 3, (1 << 24) + 5];

/// Elements before and after the output that must never be written.
pub const CANARY: usize = 64;

/// Two finite, distinct poison patterns: an element the kernel failed to write
/// keeps one of them, and a run with each catches a poison that happens to equal
/// the right answer. Finite on purpose: a NaN poison would pass where NaN is due.
pub const POISONS: [u32; 2] = [0xdead_beef, 0x5a5a_1234];

/// The GPU shared by every test of a binary. It is dropped when the process
/// exits (an `atexit` hook), so that everything it holds (the modules, the
/// mapped assert record) is freed and compute-sanitizer's leak check sees only
/// what the tests themselves leave behind.
pub fn gpu() -> Gpu {
    static GPU: Mutex<Option<Gpu>> = Mutex::new(None);
    extern "C" fn drop_gpu() {
        let gpu = GPU.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(gpu);
    }
    let mut g = GPU.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = Some(Gpu::new(0).expect("these tests need a CUDA GPU (run with --include-ignored only on one)"));
        // SAFETY: registers a plain function; it runs once, at exit, after every test.
        unsafe { libc::atexit(drop_gpu) };
    }
    g.as_ref().expect("set above").clone()
}

/// What fills the inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data {
    /// Fresh random values: three quarters moderate magnitudes (exercise rounding),
    /// one quarter raw bit patterns (any class, NaNs and infinities included).
    Random,
    /// Every pair of the dtype's special values (zeros, subnormals, extremes,
    /// infinities, quiet and signalling NaN, overflow cases), tiled.
    Special,
}

/// Special values per dtype, as bits.
pub fn specials(dtype: Dtype) -> &'static [u32] {
    match dtype {
        Dtype::F32 => &[
            0x0000_0000,
            0x8000_0000,
            0x0000_0001,
            0x8000_0001,
            0x007f_ffff,
            0x807f_ffff,
            0x0080_0000,
            0x8080_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x3f80_0000,
            0xbf80_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7fa0_0000,
            0x7300_0000, // 2^103: half an ulp of f32::MAX, so MAX + it ties to inf
            0x7280_0000, // 2^102: MAX + it rounds back to MAX
        ],
        Dtype::F16 => &[
            0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x7c00,
            0xfc00, 0x7e00, 0x7d00, 0x4c00, // 16: 65504 + 16 -> inf
            0x4800, // 8: 65504 + 8 -> 65504
        ],
        Dtype::Bf16 => &[
            0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x807f, 0x0080, 0x8080, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x7f80,
            0xff80, 0x7fc0, 0x7fa0, 0x7b00, // 2^119: half an ulp of bf16::MAX
            0x7a80, // 2^118
        ],
    }
}

/// Fills `a` and `b` (length n) with the data set.
pub fn inputs<T: Element>(data: Data, n: usize, rng: &mut impl Rng) -> (Vec<T>, Vec<T>) {
    match data {
        Data::Random => {
            let one = |rng: &mut dyn rand::RngCore| -> T {
                if rng.gen_range(0..4) == 0 {
                    T::from_bits32(rng.next_u32())
                } else {
                    let x: f32 = rng.gen_range(-1000.0f32..1000.0) * f32::powi(2.0, rng.gen_range(-12..4));
                    from_f32::<T>(x)
                }
            };
            let a = (0..n).map(|_| one(rng)).collect();
            let b = (0..n).map(|_| one(rng)).collect();
            (a, b)
        }
        Data::Special => {
            let s = specials(T::DTYPE);
            let k = s.len();
            let a = (0..n).map(|i| T::from_bits32(s[i % k])).collect();
            let b = (0..n).map(|i| T::from_bits32(s[(i / k) % k])).collect();
            (a, b)
        }
    }
}

/// Nearest value of T to an f32 (for test data only).
pub fn from_f32<T: Element>(x: f32) -> T {
    match T::DTYPE {
        Dtype::F32 => T::from_bits32(x.to_bits()),
        Dtype::F16 => T::from_bits32(f16::from_f32(x).to_bits() as u32),
        Dtype::Bf16 => T::from_bits32(bf16::from_f32(x).to_bits() as u32),
    }
}

/// Appends one JSON line to `$GPUKERN_CASES`, if set (one writer at a time).
fn append_case(line: &str) {
    static LOCK: Mutex<()> = Mutex::new(());
    if let Ok(path) = std::env::var("GPUKERN_CASES") {
        let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// Appends one line per checked case to `$GPUKERN_CASES`, for the verification record.
pub fn record(test: &str, what: &str, n: usize, ok: bool) {
    record_with(test, what, n, ok, "");
}

/// As [`record`], with more fields: `extra` is a JSON object's members
/// (`"max_ulp":0.5,"argmax":"0x3f800000"`), or empty.
pub fn record_with(test: &str, what: &str, n: usize, ok: bool, extra: &str) {
    let sep = if extra.is_empty() { "" } else { "," };
    append_case(&format!("{{\"test\":\"{test}\",\"case\":\"{what}\",\"n\":{n},\"ok\":{ok}{sep}{extra}}}"));
}

/// Records a case that could not run (too little memory): it appears in the
/// verification record as skipped, with the reason, and never counts as a pass.
pub fn record_skip(test: &str, what: &str, n: usize, reason: &str) {
    eprintln!("SKIP {test} {what} n={n}: {reason}");
    append_case(&format!(
        "{{\"test\":\"{test}\",\"case\":\"{what}\",\"n\":{n},\"ok\":false,\"skipped\":true,\"reason\":\"{reason}\"}}"
    ));
}

/// Host memory the kernel says is available (`MemAvailable`), in bytes.
pub fn host_available_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// How a case launches.
#[derive(Clone, Copy, Debug)]
pub enum Launch {
    Explicit(Variant, LaunchShape),
    /// A bulk-copy variant with explicit tiling.
    Bulk(Variant, LaunchShape, BulkConfig),
    Auto,
}

/// Runs one case: inputs of length n, output poisoned with a canary band on each
/// side, launch, then bit-exact comparison with the CPU reference and intact
/// canaries. Returns a description of the first problem.
pub fn check<T: ReferenceAdd>(launch: Launch, n: usize, data: Data) -> Result<(), String> {
    let gpu = gpu();
    let seed: u64 = rand::random();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let (a, b) = inputs::<T>(data, n, &mut rng);
    let want = reference::add(&a, &b);
    let e = |e: gpukern::Error| format!("{launch:?} n={n} {data:?}: {e}");
    let stream = gpu.stream().map_err(e)?;
    let (da, db) = (gpu.upload(&a).map_err(e)?, gpu.upload(&b).map_err(e)?);
    let mut band = gpu.alloc::<T>(n + 2 * CANARY).map_err(e)?;
    for poison in POISONS {
        band.fill(T::from_bits32(poison)).map_err(e)?;
        let out = band.slice_mut(CANARY..CANARY + n).map_err(e)?;
        match launch {
            Launch::Explicit(v, cfg) => gpu.studies().add_with(v, cfg, &da, &db, out, &stream).map_err(e)?,
            Launch::Bulk(v, cfg, bulk) => {
                gpu.studies().add_bulk_with(v, cfg, bulk, &da, &db, out, &stream).map_err(e)?
            }
            Launch::Auto => {
                gpu.binary(gpukern::BinaryOp::Add, &da, &db, out, &stream).map_err(e)?;
            }
        }
        stream.synchronize().map_err(e)?;
        let got = band.to_vec().map_err(e)?;
        let p = T::from_bits32(poison);
        if let Some(i) = got[..CANARY].iter().chain(&got[CANARY + n..]).position(|x| !x.same_as(p)) {
            return Err(format!("{launch:?} n={n} {data:?}: canary element {i} overwritten (seed {seed})"));
        }
        if let Some(i) = reference::first_mismatch(&got[CANARY..CANARY + n], &want) {
            return Err(format!(
                "{launch:?} n={n} {data:?} poison={poison:#x}: element {i}: {:?} + {:?} gave {:?} ({:#x}), want {:?} ({:#x}) (seed {seed})",
                a[i],
                b[i],
                got[CANARY + i],
                got[CANARY + i].to_bits32(),
                want[i],
                want[i].to_bits32()
            ));
        }
    }
    Ok(())
}

/// True under compute-sanitizer (`run.sh sanitize` sets GPUKERN_SANITIZE):
/// instrumented kernels run hundreds of times slower, so the largest sizes are
/// left to the plain test run.
pub fn sanitizing() -> bool {
    std::env::var_os("GPUKERN_SANITIZE").is_some()
}

/// False under `compute-sanitizer --tool initcheck` (run.sh sets
/// GPUKERN_NO_BULK_STORE there): initcheck does not see the global writes of the
/// bulk-copy engine and reports every byte a bulk store wrote as uninitialized,
/// so those kernels are left to the other tools and to the poisoned-output
/// checks of the plain test run.
pub fn bulk_store_checked() -> bool {
    std::env::var_os("GPUKERN_NO_BULK_STORE").is_none()
}

/// Runs `check` for every size and both data sets; panics listing every failure.
pub fn check_all_sizes<T: ReferenceAdd>(test: &str, launch: Launch) {
    let mut failures = Vec::new();
    for &n in SIZES.iter().filter(|&&n| !sanitizing() || n < 1 << 20) {
        for data in [Data::Random, Data::Special] {
            let r = check::<T>(launch, n, data);
            record(test, &format!("{launch:?} {data:?}"), n, r.is_ok());
            if let Err(msg) = r {
                failures.push(msg);
            }
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}

/// One `check` of an explicit variant, dispatched on its dtype.
pub fn check_explicit(v: Variant, cfg: LaunchShape, n: usize, data: Data) -> Result<(), String> {
    match v.dtype() {
        Dtype::F32 => check::<f32>(Launch::Explicit(v, cfg), n, data),
        Dtype::F16 => check::<f16>(Launch::Explicit(v, cfg), n, data),
        Dtype::Bf16 => check::<bf16>(Launch::Explicit(v, cfg), n, data),
    }
}

/// One `check` of a launch, dispatched on the variant's dtype.
pub fn check_launch(v: Variant, launch: Launch, n: usize, data: Data) -> Result<(), String> {
    match v.dtype() {
        Dtype::F32 => check::<f32>(launch, n, data),
        Dtype::F16 => check::<f16>(launch, n, data),
        Dtype::Bf16 => check::<bf16>(launch, n, data),
    }
}

/// True when the variant can run on this GPU (the bulk-copy ones need sm_90).
/// Tests skip the others and record why.
pub fn runs_here(test: &str, v: Variant) -> bool {
    let ok = !v.needs_sm90() || gpu().info().has_sm90();
    if !ok {
        record_skip(test, v.name(), 0, "needs compute capability 9.0");
    }
    ok && (bulk_store_checked() || !v.bulk_store())
}

/// Dispatches on the variant's dtype.
pub fn check_variant(test: &str, v: Variant, cfg: LaunchShape) {
    if !runs_here(test, v) {
        return;
    }
    match v.dtype() {
        Dtype::F32 => check_all_sizes::<f32>(test, Launch::Explicit(v, cfg)),
        Dtype::F16 => check_all_sizes::<f16>(test, Launch::Explicit(v, cfg)),
        Dtype::Bf16 => check_all_sizes::<bf16>(test, Launch::Explicit(v, cfg)),
    }
}

/// Why a downloaded mark band is wrong, if it is: every one of the `n` marks
/// after the leading canary band must be 1 and every canary 0.
pub fn marks_problem(band: &[i32], n: usize) -> Option<String> {
    let (head, rest) = band.split_at(CANARY);
    let (marks, tail) = rest.split_at(n);
    if let Some(i) = head.iter().chain(&tail[..CANARY]).position(|&m| m != 0) {
        return Some(format!("canary {i} was written"));
    }
    marks.iter().position(|&m| m != 1).map(|i| format!("element {i} visited {} times", marks[i]))
}

/// Runs one visit marker (`mark`, given the `n` marks after the leading canary
/// band) for every `n` of `sizes` on a zeroed `band`, records each case under
/// `test` as `what`, and returns the failures.
pub fn walk_failures(
    band: &mut gpukern::DeviceVec<i32>,
    stream: &gpukern::Stream,
    test: &str,
    what: &str,
    sizes: &[usize],
    mut mark: impl FnMut(gpukern::ViewMut<'_, i32>) -> gpukern::Result<()>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for &n in sizes {
        band.fill_bits(0).unwrap();
        mark(band.slice_mut(CANARY..CANARY + n).unwrap()).unwrap();
        stream.synchronize().unwrap();
        let problem = marks_problem(&band.to_vec().unwrap(), n);
        record(test, what, n, problem.is_none());
        failures.extend(problem.map(|p| format!("{what} n={n}: {p}")));
    }
    failures
}

/// True when the `CANARY` elements on each side of `band[CANARY..CANARY + n]`
/// all pass `intact` (downloads only those, so it suits bands of any size).
pub fn canaries_hold<T: gpukern::Pod>(band: &gpukern::DeviceVec<T>, n: usize, intact: impl Fn(&T) -> bool) -> bool {
    [0..CANARY, CANARY + n..2 * CANARY + n]
        .into_iter()
        .all(|r| band.slice(r).unwrap().to_vec().unwrap().iter().all(&intact))
}

/// Re-runs this test binary filtered to one test, in a child process with
/// `GPUKERN_CHILD` set, and returns (success, combined output). Used where a test
/// must be alone in its process: a fault poisons the whole CUDA context, and a
/// reset destroys every handle of the process.
pub fn run_alone(test: &str) -> (bool, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--include-ignored", "--nocapture", "--test-threads=1"])
        .env("GPUKERN_CHILD", "1")
        .output()
        .unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// True in the child process that [`run_alone`] started.
pub fn in_child() -> bool {
    std::env::var_os("GPUKERN_CHILD").is_some()
}
