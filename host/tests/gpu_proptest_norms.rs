//! Property test of the norms on the GPU: random operation, dtype, plan (or
//! the automatic one), rows, row length weighted to chunk and warp edges,
//! pitches and start offsets, data fill and eps. Property: every output is
//! the CPU reference's replay of the plan that ran, bit for bit, and nothing
//! outside the rows is written. Fixed seed.

mod common;
mod norms_common;

use common::{gpu, record};
use gpukern::{Dtype, NormOp};
use norms_common::{plans, run_dtype, Case, Fill};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

fn case() -> impl Strategy<Value = (Dtype, Case, usize)> {
    let cols =
        prop_oneof![
            1usize..=40,
            (prop::sample::select(vec![64usize, 256, 512, 1024, 2048, 4096, 8192, 16384]), -9i64..=9)
                .prop_map(|(b, d)| (b as i64 + d).max(1) as usize),
            1usize..20_000,
        ];
    (
        prop::sample::select(NormOp::ALL.to_vec()),
        prop::sample::select(Dtype::ALL.to_vec()),
        1usize..12,
        cols,
        (0usize..20, 0usize..20),
        (0usize..9, 0usize..9, 0usize..9),
        prop::sample::select(Fill::ALL.to_vec()),
        prop::sample::select(vec![0.0f32, 1e-6, 1e-5, 1.0]),
        any::<bool>(),
        any::<u64>(),
        0usize..8,
    )
        .prop_map(|(op, dtype, rows, cols, gaps, offsets, fill, eps, scalar, seed, pick)| {
            let c = Case { op, rows, cols, gaps, offsets, plan: None, scalar, pdl: None, fill, eps, seed };
            (dtype, c, pick)
        })
}

proptest! {
    #![proptest_config(Config {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        rng_seed: RngSeed::Fixed(31),
        ..Config::default()
    })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn proptest_norms((dtype, c, pick) in case()) {
        let p = plans(dtype, c.cols);
        let c = Case { plan: p[pick % p.len()], ..c };
        let r = run_dtype(&gpu(), dtype, &c);
        record("proptest_norms", &format!("{} {:?} {}x{} {:?}", c.op.name(), dtype, c.rows, c.cols, c.plan), c.rows * c.cols, r.is_ok());
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}
