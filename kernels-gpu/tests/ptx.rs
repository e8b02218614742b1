//! PTX-level checks on the tracked `ptx/kernels_gpu.ptx`, runnable without a GPU.
//!
//! Each kernel must contain the instructions its name promises. A change that
//! silently de-vectorises a variant (a lost `align(16)`, a split load) or pulls in
//! local memory or flush-to-zero fails here, in CI.

use kernels_gpu::add::ADD_KERNELS;
use kernels_gpu::verify::{COUNT_MISMATCH, EMPTY, MARK_VISITS, SPIN};
use kernels_gpu::{count::COUNT, fusion::FUSION, matmul::MATMUL, transpose::TRANSPOSE};

const PTX: &str = include_str!("../../ptx/kernels_gpu.ptx");

/// The instruction lines of one `.entry`, comments stripped.
fn body(name: &str) -> Vec<&'static str> {
    let head = format!(".entry {name}(");
    let start = PTX.find(&head).unwrap_or_else(|| panic!("no .entry {name} in the PTX"));
    let rest = &PTX[start..];
    let end = rest.find("\n}\n").expect("unterminated entry");
    rest[..end].lines().map(|l| l.split("//").next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect()
}

/// Number of instructions in `name` whose opcode starts with `prefix`.
fn count(name: &str, prefix: &str) -> usize {
    body(name).iter().filter(|l| l.starts_with(prefix)).count()
}

/// Width-agnostic scalar access: the backend may spell 32 bits as b32, u32 or f32.
fn count_any(name: &str, prefixes: &[&str]) -> usize {
    prefixes.iter().map(|p| count(name, p)).sum()
}

const LD32: &[&str] =
    &["ld.global.b32", "ld.global.u32", "ld.global.f32", "ld.global.nc.b32", "ld.global.nc.u32", "ld.global.nc.f32"];
const ST32: &[&str] = &["st.global.b32", "st.global.u32", "st.global.f32"];
const LD16: &[&str] = &["ld.global.b16", "ld.global.u16", "ld.global.nc.b16", "ld.global.nc.u16"];
const ST16: &[&str] = &["st.global.b16", "st.global.u16"];
const LD128: &[&str] = &[
    "ld.global.v4.b32",
    "ld.global.v4.u32",
    "ld.global.v4.f32",
    "ld.global.nc.v4.b32",
    "ld.global.nc.v4.u32",
    "ld.global.nc.v4.f32",
];
const ST128: &[&str] = &["st.global.v4.b32", "st.global.v4.u32", "st.global.v4.f32"];

#[test]
fn every_expected_entry_exists() {
    let names = ADD_KERNELS
        .iter()
        .map(|k| k.name)
        .chain(COUNT_MISMATCH)
        .chain([EMPTY, SPIN, kernels_gpu::coalesce::STRIDED_COPY])
        .chain(MATMUL)
        .chain(COUNT)
        .chain(TRANSPOSE)
        .chain(FUSION)
        .chain(MARK_VISITS.map(|(name, _)| name));
    for name in names {
        assert!(PTX.contains(&format!(".visible .entry {name}(")), "missing .entry {name}");
    }
}

#[test]
fn no_local_memory_and_no_flush_to_zero_anywhere() {
    assert!(!PTX.contains(".local"), "a kernel spills to or allocates local memory");
    assert!(!PTX.contains(".ftz"), "flush-to-zero would break subnormal results");
    assert!(!PTX.contains(".approx"), "approximate arithmetic is not IEEE");
}

#[test]
fn targets_the_sm70_baseline() {
    assert!(PTX.contains("\n.target sm_70\n"), "the PTX must load on every GPU from sm_70 up");
}

#[test]
fn v1_f32_uses_32_bit_scalar_accesses() {
    assert_eq!(count_any("add_f32", LD32), 2, "one 32-bit load per operand");
    assert_eq!(count_any("add_f32", ST32), 1);
    assert_eq!(count("add_f32", "ld.global.v"), 0);
    assert_eq!(count("add_f32", "add.rn.f32"), 1);
}

#[test]
fn v2_f32x4_uses_128_bit_loads_and_store() {
    assert_eq!(count_any("add_f32x4", LD128), 2, "one 128-bit load for a and one for b");
    assert_eq!(count_any("add_f32x4", ST128), 1, "one 128-bit store for c");
    assert!(count("add_f32x4", "add.rn.f32") >= 4);
}

#[test]
fn v3_f16_uses_16_bit_loads_and_add_rn_f16() {
    assert_eq!(count_any("add_f16", LD16), 2);
    assert_eq!(count_any("add_f16", ST16), 1);
    assert_eq!(count("add_f16", "add.rn.f16 "), 1);
    assert_eq!(count("add_f16", "add.rn.f16x2"), 0);
}

#[test]
fn v4_f16x2_uses_32_bit_loads_and_add_rn_f16x2() {
    assert_eq!(count_any("add_f16x2", LD32), 2);
    assert_eq!(count_any("add_f16x2", ST32), 1);
    assert_eq!(count("add_f16x2", "add.rn.f16x2"), 1);
}

#[test]
fn v5_f16x8_uses_four_32_bit_loads_per_operand() {
    assert_eq!(count_any("add_f16x8", LD32), 8, "four half2 loads for a and four for b");
    assert_eq!(count("add_f16x8", "ld.global.v"), 0, "V5 is the unpacked step: no vector loads");
    assert_eq!(count("add_f16x8", "add.rn.f16x2"), 4);
}

#[test]
fn v6_f16x8_pack_uses_one_128_bit_load_per_operand_and_four_half2_adds() {
    assert_eq!(count_any("add_f16x8_pack", LD128), 2);
    assert_eq!(count_any("add_f16x8_pack", ST128), 1);
    assert_eq!(count("add_f16x8_pack", "add.rn.f16x2"), 4);
}

#[test]
fn bf16_family_widths_and_f32_arithmetic() {
    assert_eq!(count_any("add_bf16", LD16), 2);
    assert_eq!(count_any("add_bf16", ST16), 1);
    assert_eq!(count_any("add_bf16x2", LD32), 2);
    assert_eq!(count_any("add_bf16x2", ST32), 1);
    assert_eq!(count_any("add_bf16x8_pack", LD128), 2);
    assert_eq!(count_any("add_bf16x8_pack", ST128), 1);
    // 8 adds in the packed path plus one in the scalar tail.
    assert_eq!(count("add_bf16x8_pack", "add.rn.f32"), 9);
    for k in ["add_bf16", "add_bf16x2", "add_bf16x8_pack"] {
        assert_eq!(count(k, "add.rn.bf16"), 0, "{k}: sm_70 has no bf16 add; compute in f32");
    }
}

#[test]
fn cs_variants_use_evict_first_128_bit_accesses() {
    for k in ["add_f32x4_cs", "add_f16x8_cs", "add_bf16x8_cs"] {
        let b = body(k);
        let ld = b.iter().filter(|l| l.contains("ld.global.cs.v4.u32")).count();
        let st = b.iter().filter(|l| l.contains("st.global.cs.v4.u32")).count();
        assert_eq!((ld, st), (2, 1), "{k}: two evict-first 128-bit loads and one store");
    }
    assert_eq!(count("add_f16x8_cs", "add.rn.f16x2"), 4);
    assert_eq!(count("add_f32x4_cs", "add.rn.f32"), 5, "4 in the vector path, 1 in the tail");
}

#[test]
fn spin_kernel_reads_the_global_timer() {
    assert!(body("spin_kernel").iter().any(|l| l.contains("%globaltimer")));
}

#[test]
fn mismatch_counters_use_one_global_atomic() {
    for name in COUNT_MISMATCH {
        let atoms = body(name).iter().filter(|l| l.starts_with("atom.") && l.contains(".global.add.u64")).count();
        assert_eq!(atoms, 1, "{name}");
    }
}

fn has(name: &str, op: &str) -> usize {
    body(name).iter().filter(|l| l.starts_with(op)).count()
}

#[test]
fn tiled_kernels_stage_through_shared_memory() {
    for k in ["matmul_tiled16", "matmul_regblock", "transpose_tiled", "transpose_padded", "count_eq_block"] {
        assert!(has(k, "st.shared") > 0 && has(k, "ld.shared") > 0, "{k}: no shared-memory traffic");
        assert!(has(k, "bar.sync") > 0, "{k}: no barrier");
    }
    for k in ["matmul_naive", "transpose_naive"] {
        assert_eq!(has(k, "ld.shared") + has(k, "st.shared"), 0, "{k} is the no-shared-memory baseline");
    }
    assert!(has("matmul_regblock", "ld.shared.v4") >= 2, "register blocking reads fragments with 128-bit shared loads");
}

#[test]
fn matmul_accumulates_with_fma() {
    for k in MATMUL {
        assert!(has(k, "fma.rn.f32") > 0, "{k}");
    }
}

#[test]
fn reductions_use_one_atomic_per_block_and_the_warp_variant_shuffles() {
    for k in COUNT {
        assert_eq!(has(k, "atom."), 1, "{k}: one atomic instruction");
    }
    assert!(has("count_eq_warp", "shfl.sync.down.b32") >= 5, "warp reduction by shuffles");
    assert_eq!(has("count_eq_atomic", "bar.sync"), 0);
}

#[test]
fn fused_kernels_round_each_operation_separately() {
    for k in FUSION {
        assert_eq!(has(k, "fma"), 0, "{k}: an FMA would change the bits vs the unfused kernels");
    }
    assert_eq!((has("saxpy_f32", "mul.rn.f32"), has("saxpy_f32", "add.rn.f32")), (1, 1));
    assert_eq!((has("add_scale_f32", "add.rn.f32"), has("add_scale_f32", "mul.rn.f32")), (1, 1));
}

#[test]
fn visit_markers_add_atomically_once_per_lane() {
    // One atomic add per lane of a full group plus one in the tail loop (which
    // one lane never needs): a plain load-add-store could hide a double visit
    // when two threads race.
    for (name, lanes) in MARK_VISITS {
        let atomics = count(name, "atom.") + count(name, "red.");
        assert_eq!(atomics, lanes as usize + usize::from(lanes > 1), "{name}");
        assert_eq!(count_any(name, ST32), 0, "{name} must not store marks non-atomically");
    }
}

#[test]
fn strided_copy_takes_its_column_from_the_grid_and_divides_once() {
    // The column is blockIdx.y, so the loop body has no division; the single
    // division computes the row count before the loop.
    assert_eq!(body("copy_strided").iter().filter(|l| l.contains("%ctaid.y")).count(), 1);
    assert!(count("copy_strided", "div.") + count("copy_strided", "rem.") <= 2, "{:?}", body("copy_strided"));
    assert_eq!(count_any("copy_strided", LD32), 1);
    assert_eq!(count_any("copy_strided", ST32), 1);
}
