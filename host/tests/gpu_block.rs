//! GPU checks of the block collectives (`gpukern_device::block`) through the
//! test kernels of `kernels_gpu::block`: every kind (reduce, inclusive and
//! exclusive scan) × operation × type × block size, a partial last block, a
//! canary band around the output, and a CPU reference; plus back-to-back
//! calls on the managed scratch and a `static_shared!` tile. The kernels are
//! launched through the escape hatch (`Module::launch`) on the portable PTX.

mod common;

use common::{gpu, record, CANARY};
use gpukern::{Arg, Launch, Module, Pod, Stream};
use kernels_gpu::block::{block_kernel, BLOCK_CASES, BLOCK_CHAIN, BLOCK_KINDS, BLOCK_STATIC_SHARED};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Every block size checked: one thread, a partial single warp, whole warps,
/// a partial last warp of every fill, and the largest block.
const BLOCKS: [u32; 13] = [1, 7, 32, 33, 64, 100, 128, 255, 256, 512, 777, 1000, 1024];

const TEST: &str = "block_primitives";

/// An element type of the kernels, with the operations' CPU reference.
trait Val: Pod + std::fmt::Debug {
    fn bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
    /// An input for `op` in block `block` (odd blocks of f32 min/max hold
    /// only zeros of both signs and NaN).
    fn gen(op: &str, block: usize, r: &mut SmallRng) -> Self;
    /// `op(a, b)`: `a` comes first in thread order.
    fn apply(op: &str, a: Self, b: Self) -> Self;
    /// What threads past `n` pass, and the exclusive scan's `init`.
    fn identity(op: &str) -> Self;
}

macro_rules! int_val {
    ($($t:ty),*) => {$(
        impl Val for $t {
            fn bits(self) -> u64 { self as u64 }
            fn from_bits(b: u64) -> Self { b as $t }
            fn gen(_: &str, _: usize, r: &mut SmallRng) -> Self {
                // Small values half the time, so that min and max see ties.
                if r.gen() { r.gen_range(0..8) as $t } else { r.gen() }
            }
            fn apply(op: &str, a: Self, b: Self) -> Self {
                match op {
                    "sum" => a.wrapping_add(b),
                    "min" => a.min(b),
                    "max" => a.max(b),
                    "xor" => a ^ b,
                    "affine" => affine(a as u64, b as u64) as $t,
                    _ => unreachable!("{op}"),
                }
            }
            fn identity(op: &str) -> Self {
                match op {
                    "sum" | "xor" => 0,
                    "min" => <$t>::MAX,
                    "max" => <$t>::MIN,
                    "affine" => 1,
                    _ => unreachable!("{op}"),
                }
            }
        }
    )*};
}
int_val!(u32, i32, u64);

/// `x ↦ a·x + b` (a in the low word, b in the high word, wrapping u32), then
/// `y`'s map.
fn affine(x: u64, y: u64) -> u64 {
    let (ax, bx, ay, by) = (x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32);
    ay.wrapping_mul(ax) as u64 | (ay.wrapping_mul(bx).wrapping_add(by) as u64) << 32
}

/// f32 values that min and max must order: both zeros, the infinities,
/// subnormals, the extremes, and the one NaN used (a single payload, so the
/// NaN a min or max passes on has known bits).
const F32_SPECIAL: [u32; 10] =
    [0, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 1, 0x8000_0001, 0x7f7f_ffff, 0xff7f_ffff, 0x7fc0_0000, 0x3f80_0000];

impl Val for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    fn gen(op: &str, block: usize, r: &mut SmallRng) -> Self {
        match op {
            // Small integers: every partial sum is exact in any order, so the
            // tree's order cannot change the bits; no -0.0, so no sum is -0.0.
            "sum" => r.gen_range(-64i32..64) as f32,
            _ if block % 2 == 1 => f32::from_bits([0, 0x8000_0000, 0x7fc0_0000][r.gen_range(0..3)]),
            _ if r.gen_range(0..4) == 0 => f32::from_bits(F32_SPECIAL[r.gen_range(0..F32_SPECIAL.len())]),
            _ => {
                let x = f32::from_bits(r.gen());
                if x.is_nan() {
                    f32::NAN
                } else {
                    x
                }
            }
        }
    }
    /// The documented f32 rules: NaN operands are ignored, -0.0 < +0.0.
    fn apply(op: &str, a: Self, b: Self) -> Self {
        match op {
            "sum" => a + b,
            "min" if b.is_nan() || a < b || (a == b && a.is_sign_negative()) => a,
            "max" if b.is_nan() || a > b || (a == b && a.is_sign_positive()) => a,
            "min" | "max" => b,
            _ => unreachable!("{op}"),
        }
    }
    fn identity(op: &str) -> Self {
        match op {
            "sum" => 0.0,
            "min" => f32::INFINITY,
            "max" => f32::NEG_INFINITY,
            _ => unreachable!("{op}"),
        }
    }
}

/// The values block `b` of size `bs` sees: the inputs, then the identity for
/// threads past `n` (the reference folds those too, as the kernels do).
fn block_values<T: Val>(op: &str, input: &[T], b: usize, bs: usize) -> Vec<T> {
    (b * bs..(b + 1) * bs).map(|i| input.get(i).copied().unwrap_or(T::identity(op))).collect()
}

/// What a `kind` kernel must write for `input`, blocks of `bs` threads.
fn reference<T: Val>(kind: &str, op: &str, input: &[T], bs: usize) -> Vec<T> {
    let blocks = input.len().div_ceil(bs);
    let mut out = Vec::new();
    for b in 0..blocks {
        let v = block_values(op, input, b, bs);
        let mut acc = T::identity(op);
        for (t, &x) in v.iter().enumerate() {
            let incl = if t == 0 && kind != "excl" { x } else { T::apply(op, acc, x) };
            match kind {
                "incl" => out.push(incl),
                "excl" => out.push(acc),
                _ => {}
            }
            acc = incl;
        }
        if kind == "reduce" {
            out.push(acc);
        }
    }
    out.truncate(if kind == "reduce" { blocks } else { input.len() });
    out
}

/// Launches `name` on `input` in blocks of `bs` threads, its output in the
/// middle of a poisoned band, and compares with `want`; `Err` says what was
/// wrong first.
fn run<T: Val>(module: &Module, stream: &Stream, name: &str, bs: u32, input: &[T], want: &[T]) -> Result<(), String> {
    let n = input.len();
    let blocks = n.div_ceil(bs as usize) as u32;
    let e = |e: gpukern::Error| format!("{name} block {bs} n={n}: {e}");
    let poison = T::from_bits(0xdead_beef_5a5a_1234);
    let gpu = gpu();
    let din = gpu.upload(input).map_err(e)?;
    let mut band = gpu.upload(&vec![poison; want.len() + 2 * CANARY]).map_err(e)?;
    let out = band.slice_mut(CANARY..CANARY + want.len()).map_err(e)?;
    let l = Launch { grid: (blocks, 1, 1), block: (bs, 1, 1), shared_bytes: 0 };
    let args = [Arg::Ptr(din.device_addr()), Arg::view_mut(&out), Arg::U64(n as u64)];
    // SAFETY: every kernel of kernels_gpu::block takes (input: *const T, out:
    // *mut T, n: u64), as `args` are; it reads input[..n] (din holds n
    // elements of T), and writes out[..n] for scans or out[..blocks] for
    // reductions: `want` has that length, and `out` is that view of `band`.
    // It uses static shared memory only. din and band live past the
    // synchronisation below, and nothing else touches them meanwhile.
    unsafe { module.launch(name, l, &args, stream) }.map_err(e)?;
    stream.synchronize().map_err(e)?;
    let got = band.to_vec().map_err(e)?;
    let canary = got[..CANARY].iter().chain(&got[CANARY + want.len()..]).position(|x| x.bits() != poison.bits());
    if let Some(i) = canary {
        return Err(format!("{name} block {bs} n={n}: canary {i} overwritten"));
    }
    match got[CANARY..CANARY + want.len()].iter().zip(want).position(|(g, w)| g.bits() != w.bits()) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{name} block {bs} n={n}: out[{i}] = {:?} ({:#x}), want {:?} ({:#x})",
            got[CANARY + i],
            got[CANARY + i].bits(),
            want[i],
            want[i].bits()
        )),
    }
}

/// Elements for blocks of `bs`: two whole blocks and a partial third (a
/// whole one for `bs = 1`), so threads past `n` take part too.
fn len_for(bs: u32) -> usize {
    2 * bs as usize + (bs as usize).div_ceil(2)
}

/// Every kind of one (op, type) family at every block size.
fn family<T: Val>(module: &Module, stream: &Stream, op: &str, ty: &str, r: &mut SmallRng) -> Vec<String> {
    let mut failures = Vec::new();
    for bs in BLOCKS {
        let n = len_for(bs);
        let input: Vec<T> = (0..n).map(|i| T::gen(op, i / bs as usize, r)).collect();
        for kind in BLOCK_KINDS {
            let name = block_kernel(kind, op, ty);
            let want = reference(kind, op, &input, bs as usize);
            let res = run(module, stream, &name, bs, &input, &want);
            record(TEST, &format!("{name} block {bs}"), n, res.is_ok());
            failures.extend(res.err());
        }
    }
    failures
}

/// `block_chain_u32`'s reference: inclusive sum, the block's max, the
/// exclusive xor-scan, mixed.
fn chain_reference(input: &[u32], bs: usize) -> Vec<u32> {
    let (s, e) = (reference("incl", "sum", input, bs), reference("excl", "xor", input, bs));
    (0..input.len())
        .map(|i| {
            let m = block_values("max", input, i / bs, bs).into_iter().max().unwrap();
            s[i] ^ m.rotate_left(8) ^ e[i].rotate_left(16)
        })
        .collect()
}

/// `block_static_shared`'s reference: each block's slice reversed, zeros
/// standing for the threads past `n`.
fn reversed(input: &[u32], bs: usize) -> Vec<u32> {
    (0..input.len())
        .map(|i| {
            let j = i / bs * bs + (bs - 1 - i % bs);
            input.get(j).copied().unwrap_or(0)
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn block_primitives() {
    let gpu = gpu();
    // SAFETY: the library's own PTX (xtask build-ptx through gpukern-build,
    // from kernels-gpu), whose typed kernels' manifests are #[kernel]'s.
    let module = unsafe { gpu.load_ptx(gpukern::PTX) }.unwrap();
    let stream = gpu.stream().unwrap();
    let seed: u64 = rand::random();
    let mut r = SmallRng::seed_from_u64(seed);
    let mut failures = Vec::new();
    for (op, ty) in BLOCK_CASES {
        failures.extend(match ty {
            "u32" => family::<u32>(&module, &stream, op, ty, &mut r),
            "i32" => family::<i32>(&module, &stream, op, ty, &mut r),
            "u64" => family::<u64>(&module, &stream, op, ty, &mut r),
            "f32" => family::<f32>(&module, &stream, op, ty, &mut r),
            _ => unreachable!("{ty}"),
        });
    }
    for bs in BLOCKS {
        let n = len_for(bs);
        let input: Vec<u32> = (0..n).map(|_| r.gen()).collect();
        let cases =
            [(BLOCK_CHAIN, chain_reference(&input, bs as usize)), (BLOCK_STATIC_SHARED, reversed(&input, bs as usize))];
        for (name, want) in cases {
            let res = run(&module, &stream, name, bs, &input, &want);
            record(TEST, &format!("{name} block {bs}"), n, res.is_ok());
            failures.extend(res.err());
        }
    }
    assert!(failures.is_empty(), "{} failing cases (seed {seed}):\n{}", failures.len(), failures.join("\n"));
}

/// The CPU reference itself, on cases worked by hand (runs without a GPU).
#[test]
fn reference_by_hand() {
    let x = [3u32, 1, 4, 1, 5];
    assert_eq!(reference("incl", "sum", &x, 2), [3, 4, 4, 5, 5]);
    assert_eq!(reference("excl", "sum", &x, 2), [0, 3, 0, 4, 0]);
    assert_eq!(reference("reduce", "max", &x, 2), [3, 4, 5]);
    assert_eq!(reference("reduce", "min", &x, 4), [1, 5]);
    // Affine maps compose in thread order: (2x+1) then (3x+0) is 6x+3.
    let maps = [2u64 | 1 << 32, 3];
    assert_eq!(reference("reduce", "affine", &maps, 2), [6 | 3 << 32]);
    assert_eq!(reference("excl", "affine", &maps, 2), [1, 2 | 1 << 32]);
    // -0.0 below +0.0; NaN ignored.
    let z = [0.0f32, -0.0, f32::NAN];
    assert_eq!(reference("reduce", "min", &z, 3)[0].to_bits(), 0x8000_0000);
    assert_eq!(reference("reduce", "max", &z, 3)[0].to_bits(), 0);
    assert_eq!(chain_reference(&[1, 2], 2), [1 ^ 2u32.rotate_left(8), 3 ^ 2u32.rotate_left(8) ^ 1u32.rotate_left(16)]);
    assert_eq!(reversed(&[1, 2, 3, 4, 5], 2), [2, 1, 4, 3, 0]);
}

/// The managed scratch is a module-scope `.shared` variable of both modules:
/// only kernels that use it pay for it (the driver's static shared size of a
/// kernel without shared memory stays 0).
#[test]
#[ignore = "needs a CUDA GPU"]
fn scratch_costs_only_its_users() {
    let gpu = gpu();
    let mut names = vec!["add_f32", "add_f32x4"];
    if gpu.info().has_sm90() {
        names.push("add_bf16x8_sm90");
    }
    for name in names {
        let shared = gpu.studies().kernel_resources(name).unwrap().shared_bytes;
        record(TEST, &format!("{name} static shared {shared}"), 0, shared == 0);
        assert_eq!(shared, 0, "{name}");
    }
}
