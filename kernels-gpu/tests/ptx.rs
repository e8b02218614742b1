//! PTX-level checks on the tracked `ptx/kernels_gpu.ptx`, runnable without a GPU.
//!
//! Each kernel must contain the instructions its name promises. A change that
//! silently de-vectorises a variant (a lost `align(16)`, a split load) or pulls in
//! local memory or flush-to-zero fails here, in CI.

use kernels_gpu::add::{Pattern, ADD_KERNELS};
use kernels_gpu::ceiling::CEILING;
use kernels_gpu::foreach::{ADD_MANY, ADD_MANY_INLINE, MARK_MANY};
use kernels_gpu::verify::{COUNT_MISMATCH, EMPTY, MARK_TILES, MARK_UNROLLED, MARK_VISITS, SPIN};
use kernels_gpu::{count::COUNT, fusion::FUSION, matmul::MATMUL, transpose::TRANSPOSE};

mod ptx_common;

use ptx_common::*;

#[test]
fn every_expected_entry_exists() {
    let names = ADD_KERNELS
        .iter()
        .filter(|k| !k.needs_sm90())
        .map(|k| k.name)
        .chain(CEILING)
        .chain(ADD_MANY)
        .chain(ADD_MANY_INLINE)
        .chain(MARK_MANY.map(|(name, _)| name))
        .chain(MARK_TILES.map(|(name, _)| name))
        .chain(MARK_UNROLLED.map(|(name, _, _)| name))
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

/// The functions and kernels of a module that use local memory. Only a
/// `printf` may: `vprintf` reads its arguments from a buffer in memory.
fn local_users(ptx: &str) -> Vec<String> {
    let mut users = Vec::new();
    for f in ptx.split("\n.visible .entry ").chain(ptx.split("\n.func ")).skip(1) {
        let end = f.find("\n}\n").unwrap_or(f.len());
        let head = &f[..end];
        if head.contains(".local") {
            let name: String = head.chars().take_while(|c| *c != '(' && !c.is_whitespace()).collect();
            users.push(name);
        }
        if head.contains(".local") && !head.contains("vprintf") {
            panic!("{}: local memory without printf", &head[..head.len().min(80)]);
        }
    }
    users
}

#[test]
fn no_local_memory_and_no_flush_to_zero_anywhere() {
    let users = local_users(PTX);
    assert!(
        users.iter().all(|u| u == "debug_probe" || u.contains("assert_failed")),
        "local memory outside the printf users: {users:?}"
    );
    // Except the 16-bit activations' SFU fast paths (`tests/ptx_ops.rs`).
    assert_only_sfu_approx(PTX);
}

/// Copies of a grid-stride loop body: `for_each_group` walks in 32-bit indices
/// below about 2^32 elements and in 64-bit ones above, each its own loop.
const W: usize = 2;

#[test]
fn targets_the_sm70_baseline() {
    assert!(PTX.contains("\n.target sm_70\n"), "the PTX must load on every GPU from sm_70 up");
}

#[test]
fn v1_f32_uses_32_bit_scalar_accesses() {
    assert_eq!(count_any("add_f32", LD32), 2 * W, "one 32-bit load per operand and index width");
    assert_eq!(count_any("add_f32", ST32), W);
    assert_eq!(count("add_f32", "ld.global.v"), 0);
    assert_eq!(count("add_f32", "add.rn.f32"), W);
}

#[test]
fn v2_f32x4_uses_128_bit_loads_and_store() {
    assert_eq!(count_any("add_f32x4", LD128), 2 * W, "one 128-bit load for a and one for b");
    assert_eq!(count_any("add_f32x4", ST128), W, "one 128-bit store for c");
    assert!(count("add_f32x4", "add.rn.f32") >= 4);
}

#[test]
fn v3_f16_uses_16_bit_loads_and_add_rn_f16() {
    assert_eq!(count_any("add_f16", LD16), 2 * W);
    assert_eq!(count_any("add_f16", ST16), W);
    assert_eq!(count("add_f16", "add.rn.f16 "), W);
    assert_eq!(count("add_f16", "add.rn.f16x2"), 0);
}

#[test]
fn v4_f16x2_uses_32_bit_loads_and_add_rn_f16x2() {
    assert_eq!(count_any("add_f16x2", LD32), 2 * W);
    assert_eq!(count_any("add_f16x2", ST32), W);
    assert_eq!(count("add_f16x2", "add.rn.f16x2"), W);
}

#[test]
fn v5_f16x8_uses_four_32_bit_loads_per_operand() {
    assert_eq!(count_any("add_f16x8", LD32), 8 * W, "four half2 loads for a and four for b");
    assert_eq!(count("add_f16x8", "ld.global.v"), 0, "V5 is the unpacked step: no vector loads");
    assert_eq!(count("add_f16x8", "add.rn.f16x2"), 4 * W);
}

#[test]
fn v6_f16x8_pack_uses_one_128_bit_load_per_operand_and_four_half2_adds() {
    assert_eq!(count_any("add_f16x8_pack", LD128), 2 * W);
    assert_eq!(count_any("add_f16x8_pack", ST128), W);
    assert_eq!(count("add_f16x8_pack", "add.rn.f16x2"), 4 * W);
}

#[test]
fn bf16_family_widths_and_f32_arithmetic() {
    assert_eq!(count_any("add_bf16", LD16), 2 * W);
    assert_eq!(count_any("add_bf16", ST16), W);
    assert_eq!(count_any("add_bf16x2", LD32), 2 * W);
    assert_eq!(count_any("add_bf16x2", ST32), W);
    assert_eq!(count_any("add_bf16x8_pack", LD128), 2 * W);
    assert_eq!(count_any("add_bf16x8_pack", ST128), W);
    // 8 adds in the packed path plus one in the scalar tail, per index width.
    assert_eq!(count("add_bf16x8_pack", "add.rn.f32"), 9 * W);
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
        assert_eq!((ld, st), (2 * W, W), "{k}: two evict-first 128-bit loads and one store");
    }
    assert_eq!(count("add_f16x8_cs", "add.rn.f16x2"), 4 * W);
    assert_eq!(count("add_f32x4_cs", "add.rn.f32"), 5 * W, "4 in the vector path, 1 in the tail");
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
        assert!(has(k, "barrier.sync") > 0, "{k}: no barrier");
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
    // Per element in the walk (one per index width), or once per block after it.
    for (k, atomics) in [("count_eq_atomic", W), ("count_eq_block", 1), ("count_eq_warp", 1)] {
        assert_eq!(has(k, "atom."), atomics, "{k}");
    }
    assert!(has("count_eq_warp", "shfl.sync.down.b32") >= 5, "warp reduction by shuffles");
    assert_eq!(has("count_eq_atomic", "barrier.sync"), 0);
}

#[test]
fn fused_kernels_round_each_operation_separately() {
    for k in FUSION {
        assert_eq!(has(k, "fma"), 0, "{k}: an FMA would change the bits vs the unfused kernels");
    }
    assert_eq!((has("saxpy_f32", "mul.rn.f32"), has("saxpy_f32", "add.rn.f32")), (W, W));
    assert_eq!((has("add_scale_f32", "add.rn.f32"), has("add_scale_f32", "mul.rn.f32")), (W, W));
}

#[test]
fn visit_markers_add_atomically_once_per_lane() {
    // One atomic add per lane of a full group plus one in the tail loop (which
    // one lane never needs): a plain load-add-store could hide a double visit
    // when two threads race.
    for (name, lanes) in MARK_VISITS {
        let atomics = count(name, "atom.") + count(name, "red.");
        assert_eq!(atomics, W * (lanes as usize + usize::from(lanes > 1)), "{name}");
        assert_eq!(count_any(name, ST32), 0, "{name} must not store marks non-atomically");
    }
}

#[test]
fn strided_copy_takes_its_column_from_the_grid_and_divides_once() {
    // The column is blockIdx.y, so the loop body has no division; the single
    // division computes the row count before the loop.
    assert_eq!(body("copy_strided").iter().filter(|l| l.contains("%ctaid.y")).count(), 1);
    assert!(count("copy_strided", "div.") + count("copy_strided", "rem.") <= 2, "{:?}", body("copy_strided"));
    assert_eq!(count_any("copy_strided", LD32), W);
    assert_eq!(count_any("copy_strided", ST32), W);
}

#[test]
fn hopper_module_holds_exactly_the_bulk_and_sm90_bf16_kernels() {
    let bulk: Vec<&str> = ADD_KERNELS.iter().filter(|k| k.needs_sm90()).map(|k| k.name).collect();
    assert_eq!(
        bulk,
        [
            "add_f32x4_l2",
            "add_f16x8_l2",
            "add_bf16x8_l2",
            "add_f32_bulk",
            "add_f16_bulk",
            "add_bf16_bulk",
            "add_f32_bulk_st",
            "add_f16_bulk_st",
            "add_bf16_bulk_st",
            "add_bf16x8_sm90"
        ]
    );
    let entries: Vec<&str> = PTX90.lines().filter_map(|l| l.strip_prefix(".visible .entry ")).collect();
    let ops = kernels_gpu::ops::OP_KERNELS.iter().filter(|k| k.needs_sm90()).count();
    assert_eq!(ops, kernels_gpu::ops::OpKind::ALL.len(), "one bf16 kernel per operation with sm_90's instructions");
    // add_bf16x8_sm90 is in both tables (an add variant and the library's add); the PDL twins of every operation,
    // of the foreach add (`tests/ptx_pdl.rs`) and of every norm kernel; the norms' cluster and bf16 kernels.
    let norms = kernels_gpu::norms::cluster_kernel_names().count() + kernels_gpu::norms::sm90_kernel_names().count();
    let norms = norms + kernels_gpu::norms::pdl_kernel_names().count();
    // The pipelined norm kernels, and the checks of their building blocks.
    let norms = norms + kernels_gpu::norms::pipe_kernel_names().count() + 2;
    for name in kernels_gpu::norms::pipe_kernel_names()
        .chain([kernels_gpu::pipeline::RING_COPY, kernels_gpu::pipeline::CLUSTER_FOLD])
    {
        assert!(PTX90.contains(&format!(".visible .entry {name}(")), "missing .entry {name} in the sm_90 module");
    }
    let pdl = kernels_gpu::ops::PDL_KERNELS.len() + kernels_gpu::foreach::ADD_MANY_PDL.len();
    let pdl = pdl + kernels_gpu::foreach::ADD_MANY_INLINE_PDL.len() + norms;
    // The gated activations' bf16 kernels and their twins.
    let glu = kernels_gpu::glu::GLU_KERNELS.iter().filter(|k| k.needs_sm90()).count();
    let glu = glu + kernels_gpu::glu::GLU_PDL_KERNELS.len();
    assert_eq!(entries.len(), bulk.len() + ops - 1 + pdl + glu, "{entries:?}");
    for name in &bulk {
        assert!(PTX90.contains(&format!(".visible .entry {name}(")), "missing .entry {name} in the sm_90 module");
        assert!(!PTX.contains(&format!(".entry {name}(")), "{name} must not be in the sm_70 module");
    }
}

#[test]
fn inline_lists_are_read_through_the_parameters_address() {
    // The list's words are read with `ld.param` from a register (its address,
    // `mov` of the parameter's name): a binary search of 5 starts and one
    // descriptor of 5 words, plus the chunk count; no copy to local memory and
    // no hoisted load of every descriptor (foreach/inline.rs).
    for (name, ptx) in kernels_gpu::foreach::ADD_MANY_INLINE
        .iter()
        .map(|n| (*n, PTX))
        .chain(kernels_gpu::foreach::ADD_MANY_INLINE_PDL.iter().map(|n| (*n, PTX90)))
    {
        let b = body_in(ptx, name);
        assert!(b.iter().any(|l| l.starts_with("mov.u64") && l.contains(&format!("{name}_param_0;"))), "{name}");
        let params = b.iter().filter(|l| l.starts_with("ld.param")).count();
        assert_eq!(params, 11, "{name}: chunks, 5 starts, 5 descriptor words");
        assert!(b.iter().all(|l| !l.contains(".local") && !l.contains("local.")), "{name}: local memory");
    }
}

#[test]
fn hopper_module_targets_sm90_with_ptx_8_and_stays_ieee() {
    assert!(PTX90.contains("\n.version 8.0\n"), "cp.async.bulk and expect_tx need PTX ISA 8.0");
    assert!(PTX90.contains("\n.target sm_90\n"));
    let users = local_users(PTX90);
    assert!(users.iter().all(|u| u.contains("assert_failed")), "an sm_90 kernel uses local memory: {users:?}");
    assert_only_sfu_approx(PTX90);
}

#[test]
fn bulk_kernels_load_tiles_with_the_copy_engine_and_store_128_bits() {
    for name in
        ["add_f32_bulk", "add_f16_bulk", "add_bf16_bulk", "add_f32_bulk_st", "add_f16_bulk_st", "add_bf16_bulk_st"]
    {
        let b = body_in(PTX90, name);
        let n = |s: &str| b.iter().filter(|l| l.contains(s)).count();
        let copies = n("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes");
        assert!(copies >= 2 && copies % 2 == 0, "{name}: one bulk copy per operand per tile ({copies})");
        assert!(n("mbarrier.arrive.expect_tx.shared::cta.b64") >= 1, "{name}: transaction count");
        assert!(n("mbarrier.try_wait.parity.shared::cta.b64") >= 1, "{name}: waits on the phase");
        assert!(n("fence.proxy.async.shared::cta") >= 1, "{name}: barrier init visible to the copy engine");
        assert!(n("mbarrier.inval.shared::cta.b64") >= 1, "{name}: barriers retired");
        assert_eq!(n("ld.shared.v4"), 2, "{name}: one 128-bit shared load per operand per pack");
        assert!(n("st.global.v4") >= 1, "{name}: 128-bit stores (all of them in the remainder for _st)");
        let stores = n("cp.async.bulk.global.shared::cta.bulk_group");
        if name.ends_with("_st") {
            assert_eq!(stores, 1, "{name}: one bulk store per tile");
            assert_eq!(n("st.shared.v4"), 1, "{name}: sums go to the shared output tile");
            assert!(n("cp.async.bulk.wait_group.read 0") == 1 && n("cp.async.bulk.commit_group") == 1);
        } else {
            assert_eq!(stores, 0, "{name}: stores from registers");
        }
        assert!(n("barrier.sync") >= 2, "{name}: after init and before refilling a slot");
    }
    let count90 = |name: &str, op: &str| body_in(PTX90, name).iter().filter(|l| l.starts_with(op)).count();
    assert!(count90("add_f16_bulk", "add.rn.f16x2") >= 4);
    assert!(count90("add_bf16_bulk", "add.rn.f32") >= 8, "bf16 is added in f32 and rounded once");
    assert_eq!(count90("add_bf16_bulk", "add.rn.bf16"), 0);
    assert!(count90("add_f32_bulk", "add.rn.f32") >= 4);
}

#[test]
fn ceiling_kernels_use_128_bit_accesses() {
    assert_eq!(count_any("ceiling_read", LD128), 2 * W, "read: one 128-bit load per input");
    assert_eq!(count_any("ceiling_read", ST128), 0, "read: nothing stored per element");
    assert_eq!(count_any("ceiling_fill", ST128), W);
    assert_eq!(count_any("ceiling_fill", LD128) + count_any("ceiling_fill", LD32), 0, "fill reads nothing");
    let copy = body("ceiling_copy");
    assert_eq!(copy.iter().filter(|l| l.contains("ld.global.v4.u32")).count(), W);
    assert_eq!(copy.iter().filter(|l| l.contains("st.global.v4.u32")).count(), W);
}

#[test]
fn foreach_kernels_move_16_byte_packs() {
    for (i, name) in ADD_MANY.into_iter().chain(ADD_MANY_INLINE).enumerate() {
        // A whole chunk: U = 4 (f32) or 2 (16-bit) packs per thread, all loaded
        // (`ld.global.v4.u32`, inline PTX) before any is stored; the rest one
        // pack at a time. The descriptors come from memory, so the operand
        // pointers are generic.
        let u = if i % 3 == 0 { 4 } else { 2 };
        let b = body(name);
        let whole = b.iter().filter(|l| l.contains("ld.global.v4.u32")).count();
        assert_eq!(whole, 2 * u, "{name}: every load of a whole chunk's packs");
        let first_store = b.iter().position(|l| l.starts_with("st.v4.b32")).expect("a 128-bit store");
        let loads_before = b[..first_store].iter().filter(|l| l.contains("ld.global.v4.u32")).count();
        assert!(loads_before == 2 * u || loads_before == 0, "{name}: loads and stores of a chunk interleave");
        assert_eq!(count(name, "ld.v4.b32"), 2, "{name}: one 128-bit load per input");
        assert_eq!(count(name, "st.v4.b32"), 1 + u, "{name}: one 128-bit store per pack");
    }
    assert_eq!(count("add_many_f16", "add.rn.f16x2"), 4 * 3, "four per pack: two packs of a whole chunk, one alone");
}

#[test]
fn walk_markers_of_bulk_and_foreach_only_add_atomically() {
    let unrolled = MARK_UNROLLED.map(|(name, lanes, _)| (name, lanes));
    for (name, lanes) in MARK_TILES.into_iter().chain(MARK_MANY).chain(unrolled) {
        let atomics = count(name, "atom.") + count(name, "red.");
        assert!(atomics > lanes as usize, "{name}: {atomics} atomics");
        assert_eq!(count_any(name, ST32), 0, "{name} must not store marks non-atomically");
        assert_eq!(count(name, "st.b32"), 0, "{name} must not store marks non-atomically");
    }
}

#[test]
fn unrolled_kernels_issue_every_load_of_a_tile_before_its_first_store() {
    for k in ADD_KERNELS {
        let Pattern::Unrolled { unroll } = k.pattern else { continue };
        let b = body(k.name);
        // Runs of 128-bit loads (`ld.global.v4.u32`, inline PTX) with no store in
        // between. The walk has a 32-bit and a 64-bit copy; in each, the whole
        // tile issues all 2·U loads as one run, and the partial tile one pack (2
        // loads) at a time.
        let mut runs = Vec::new();
        let mut run = 0usize;
        for l in &b {
            if l.contains("ld.global.v4.u32") {
                run += 1;
            } else if l.starts_with("st.global") && run > 0 {
                runs.push(run);
                run = 0;
            }
        }
        let whole = runs.iter().filter(|&&r| r == 2 * unroll as usize).count();
        assert_eq!(whole, 2, "{}: one run of {} loads per index width, got runs {runs:?}", k.name, 2 * unroll);
        assert!(runs.iter().all(|&r| r == 2 || r == 2 * unroll as usize), "{}: runs {runs:?}", k.name);
    }
}
