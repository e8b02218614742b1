//! PTX-level checks of the block collectives' test kernels (`kernels_gpu::block`)
//! and of `static_shared!`, on the tracked modules, without a GPU.

use kernels_gpu::block::{block_kernel, BLOCK_CASES, BLOCK_CHAIN, BLOCK_KINDS, BLOCK_STATIC_SHARED};

mod ptx_common;

use ptx_common::*;

/// Every collective kernel, with its kind and its 32-bit words per value.
fn collectives() -> Vec<(String, &'static str, usize)> {
    let mut v = Vec::new();
    for (op, ty) in BLOCK_CASES {
        for kind in BLOCK_KINDS {
            v.push((block_kernel(kind, op, ty), kind, if ty == "u64" { 2 } else { 1 }));
        }
    }
    v
}

fn lines_with(name: &str, s: &str) -> usize {
    body(name).iter().filter(|l| l.contains(s)).count()
}

#[test]
fn every_block_kernel_is_in_the_portable_module_only() {
    let names = collectives().into_iter().map(|(n, _, _)| n).chain([BLOCK_CHAIN.into(), BLOCK_STATIC_SHARED.into()]);
    for name in names {
        assert!(PTX.contains(&format!(".visible .entry {name}(")), "missing .entry {name}");
        assert!(!PTX90.contains(&format!(".entry {name}(")), "{name} belongs to the portable module");
    }
}

#[test]
fn static_shared_declares_module_scope_shared_arrays_before_use() {
    // The managed scratch (64 slots of 8 bytes) in both modules (the device
    // crate's global_asm is emitted wherever it is linked), and the test tile.
    for (ptx, decl) in [
        (PTX, ".shared .align 16 .b8 gpukern_block_scratch[512];"),
        (PTX90, ".shared .align 16 .b8 gpukern_block_scratch[512];"),
        (PTX, ".shared .align 16 .b8 BLOCK_TILE[4096];"),
    ] {
        assert_eq!(ptx.matches(decl).count(), 1, "{decl}");
        let at = ptx.find(decl).unwrap();
        assert!(ptx.find(".entry ").is_none_or(|e| at < e), "{decl} must precede every entry");
    }
    // Local memory is checked module-wide by ptx.rs (only printf may use it).
}

#[test]
fn collectives_take_two_barriers_and_shuffle_with_the_warps_member_mask() {
    for (name, kind, words) in collectives() {
        assert_eq!(count(&name, "barrier.sync"), 2, "{name}: barriers 1 and 2 of the scan, no more");
        // Kogge-Stone within the warp, then over the warps' totals: 5 + 5
        // shuffles up per word; one more for the exclusive scan's lane below.
        let up = words * if kind == "excl" { 11 } else { 10 };
        assert_eq!(lines_with(&name, "shfl.sync.up.b32"), up, "{name}");
        // A reduction hands a single warp's total from its last lane.
        let idx = if kind == "reduce" { words } else { 0 };
        assert_eq!(lines_with(&name, "shfl.sync.idx.b32"), idx, "{name}");
        assert_eq!(lines_with(&name, "shfl.sync.down") + lines_with(&name, "shfl.sync.bfly"), 0, "{name}");
        assert_eq!(lines_with(&name, "cvta.shared.u64"), lines_with(&name, "gpukern_block_scratch"), "{name}");
        assert!(lines_with(&name, "gpukern_block_scratch") > 0, "{name}: the managed scratch");
        // The member mask is computed (the lanes present), never the full
        // warp's literal -1: a partial last warp must not name absent lanes.
        for l in body(&name).iter().filter(|l| l.starts_with("shfl.sync")) {
            let mask = l.trim_end_matches(';').rsplit(',').next().unwrap().trim();
            assert!(mask.starts_with("%r"), "{name}: `{l}` has a literal member mask");
        }
    }
    // Three collectives back to back: three scans' barriers and shuffles.
    assert_eq!(count(BLOCK_CHAIN, "barrier.sync"), 6);
    assert_eq!(lines_with(BLOCK_CHAIN, "shfl.sync.up.b32"), 10 + 10 + 11);
}

#[test]
fn f32_sums_round_each_add_and_min_max_tell_zeros_apart() {
    for kind in BLOCK_KINDS {
        let sum = block_kernel(kind, "sum", "f32");
        assert!(count(&sum, "add.rn.f32") >= 10, "{sum}: one add per scan step");
        assert_eq!(count(&sum, "fma"), 0, "{sum}");
        for op in ["min", "max"] {
            let k = block_kernel(kind, op, "f32");
            // Written out with comparisons (not min.f32/max.f32, whose zero
            // ordering the backend does not promise).
            assert_eq!(count(&k, "min.f32") + count(&k, "max.f32"), 0, "{k}");
            assert!(count(&k, "setp.nan.f32") >= 10, "{k}: a NaN test per step");
        }
    }
}

#[test]
fn static_shared_kernel_uses_its_tile_and_one_barrier() {
    assert_eq!(lines_with(BLOCK_STATIC_SHARED, "cvta.shared.u64"), 1);
    assert_eq!(lines_with(BLOCK_STATIC_SHARED, "BLOCK_TILE"), 1);
    assert_eq!(lines_with(BLOCK_STATIC_SHARED, "gpukern_block_scratch"), 0);
    assert_eq!(count(BLOCK_STATIC_SHARED, "barrier.sync"), 1);
}

/// Every block barrier of both modules is the unaligned `barrier.sync`, which
/// the PTX ISA defines for divergent threads on sm_70+ (`gpukern_device::
/// sync_threads` is safe in any control flow); `bar.sync` means
/// `barrier.sync.aligned`, undefined unless the whole block executes the same
/// instruction, and appears nowhere.
#[test]
fn every_barrier_is_the_unaligned_barrier_sync() {
    for ptx in [PTX, PTX90] {
        let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
        assert!(lines.iter().any(|l| l.starts_with("barrier.sync")), "no barrier at all");
        for l in &lines {
            assert!(!l.starts_with("bar.") && !l.contains(".aligned"), "an aligned barrier: `{l}`");
        }
    }
}
