//! Property test of the element-wise library on the GPU: random operation, dtype
//! and pattern (or the automatic choice), lengths weighted to lane and block
//! edges, per-operand start offsets of 0–16 bytes, raw bit patterns as values and
//! as axpby scales. Property: the result is bit-exact (or, for an explicit pack
//! kernel on a misaligned operand, a `Misaligned` error) and nothing outside the
//! output view changes. Fixed seed, 5,000 cases (about 260 per operation).

mod common;

use common::{gpu, record, POISONS};
use gpukern::half::{bf16, f16};
use gpukern::reference::{self, ReferenceOps};
use gpukern::{Dtype, Error, LaunchShape, OpKind, OpPattern};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use rand::{Rng, SeedableRng};

#[derive(Clone, Debug)]
struct Case {
    kind: OpKind,
    dtype: Dtype,
    /// `None`: the automatic choice.
    pattern: Option<OpPattern>,
    n: usize,
    /// Start offsets of a, b and out, in bytes (multiples of the element size).
    offsets: [usize; 3],
    scales: (f32, f32),
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let n = prop_oneof![
        0usize..=40,
        (prop::sample::select(vec![8usize, 16, 256, 1024, 4096, 65536]), -3i64..=3)
            .prop_map(|(base, d)| (base as i64 + d).max(0) as usize),
        0usize..20_000,
    ];
    let pattern = prop_oneof![
        Just(None),
        Just(Some(OpPattern::Scalar)),
        Just(Some(OpPattern::Pack)),
        Just(Some(OpPattern::PackSm90))
    ];
    (
        prop::sample::select(OpKind::ALL.to_vec()),
        prop::sample::select(Dtype::ALL.to_vec()),
        pattern,
        n,
        [0usize..=16, 0usize..=16, 0usize..=16],
        (any::<u32>(), any::<u32>()),
        any::<u64>(),
    )
        .prop_map(|(kind, dtype, pattern, n, offsets, (s0, s1), seed)| {
            let size = dtype.size();
            let scales = (f32::from_bits(s0), f32::from_bits(s1));
            Case { kind, dtype, pattern, n, offsets: offsets.map(|o| o / size * size), scales, seed }
        })
}

/// Runs one case; Err describes a violated property.
fn run<T: ReferenceOps>(c: &Case) -> Result<(), String> {
    let gpu = gpu();
    let e = |e: Error| format!("{c:?}: {e}");
    let stream = gpu.stream().map_err(e)?;
    let size = T::DTYPE.size();
    let [oa, ob, oc] = c.offsets.map(|o| o / size);
    let pad = 64;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(c.seed);
    let mut raw = |len: usize| -> Vec<T> { (0..len).map(|_| T::from_bits32(rng.gen())).collect() };
    let (a, b) = (raw(oa + c.n), raw(ob + c.n));
    let two = c.kind.inputs() == 2;
    let want = reference::map(c.kind, &a[oa..], two.then_some(&b[ob..]), c.scales);
    let (da, db) = (gpu.upload(&a).map_err(e)?, gpu.upload(&b).map_err(e)?);
    let mut band = gpu.alloc::<T>(oc + c.n + pad).map_err(e)?;
    band.fill(T::from_bits32(POISONS[0])).map_err(e)?;
    let (va, vb) = (da.slice(oa..).map_err(e)?, db.slice(ob..).map_err(e)?);
    let out = band.slice_mut(oc..oc + c.n).map_err(e)?;
    let opts = match c.pattern {
        Some(p) => gpukern::Opts::auto().pattern(p).shape(LaunchShape::default()),
        None => gpukern::Opts::auto(),
    };
    let result = gpu.apply(c.kind, va, two.then_some(vb), out, c.scales, &stream, &opts);
    let used = if two { [oa, ob, oc] } else { [oa, oc, oc] };
    let wide = matches!(c.pattern, Some(OpPattern::Pack | OpPattern::PackSm90));
    let aligned = !wide || used.iter().all(|o| (o * size) % 16 == 0);
    // PackSm90 exists for bf16 only, and runs on sm_90 only.
    let exists = c.pattern != Some(OpPattern::PackSm90) || c.dtype == Dtype::Bf16;
    let runs = exists && (c.pattern != Some(OpPattern::PackSm90) || gpu.info().has_sm90());
    match result {
        Err(Error::Shape { .. }) if !exists => return unchanged(&band, oc + c.n + pad),
        Err(Error::Unsupported { .. }) if exists && !runs => return unchanged(&band, oc + c.n + pad),
        Ok(()) if runs && aligned => {}
        Err(Error::Misaligned { .. }) if runs && !aligned => return unchanged(&band, oc + c.n + pad),
        other => return Err(format!("{c:?}: unexpected {other:?}")),
    }
    stream.synchronize().map_err(e)?;
    let got = band.to_vec().map_err(e)?;
    let p = T::from_bits32(POISONS[0]);
    if !got[..oc].iter().chain(&got[oc + c.n..]).all(|x| x.same_as(p)) {
        return Err(format!("{c:?}: wrote outside the output view"));
    }
    match reference::first_mismatch(&got[oc..oc + c.n], &want) {
        None => Ok(()),
        Some(i) => {
            Err(format!("{c:?}: element {i}: got {:#x}, want {:#x}", got[oc + i].to_bits32(), want[i].to_bits32()))
        }
    }
}

/// A refused call must leave the whole band as poisoned.
fn unchanged<T: gpukern::Element>(band: &gpukern::DeviceVec<T>, len: usize) -> Result<(), String> {
    let got = band.to_vec().map_err(|e| e.to_string())?;
    let p = T::from_bits32(POISONS[0]);
    match got[..len].iter().all(|x| x.same_as(p)) {
        true => Ok(()),
        false => Err("a refused call wrote to the output".into()),
    }
}

fn check(c: &Case) -> Result<(), String> {
    let r = match c.dtype {
        Dtype::F32 => run::<f32>(c),
        Dtype::F16 => run::<f16>(c),
        Dtype::Bf16 => run::<bf16>(c),
    };
    let how = c.pattern.map_or("auto".to_string(), |p| format!("{p:?}"));
    record("proptest_ops", &format!("{} {:?} {how} offsets {:?}", c.kind.name(), c.dtype, c.offsets), c.n, r.is_ok());
    r
}

proptest! {
    #![proptest_config(Config {
        cases: 5_000,
        rng_seed: RngSeed::Fixed(0x0b5e_2026),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn every_op_is_bit_exact_for_any_length_offset_and_bits(c in case()) {
        check(&c).map_err(TestCaseError::fail)?;
    }
}
