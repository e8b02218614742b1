//! PTX-level checks of the norm kernels (`kernels_gpu::norms`) on the tracked
//! modules, without a GPU: where each kernel lives, the 128-bit accesses,
//! IEEE arithmetic only (no `.approx`, no `.ftz`), the warp and block
//! reductions, and the cluster kernels' barriers and distributed shared
//! memory reads (the device crate's `cluster` module).

use kernels_gpu::norms::{cluster_kernel_names, sm90_kernel_names, NORM_KERNELS};

mod ptx_common;

use ptx_common::*;

fn lines_with(ptx: &'static str, name: &str, s: &str) -> usize {
    body_in(ptx, name).iter().filter(|l| l.contains(s)).count()
}

#[test]
fn norm_kernels_live_in_the_portable_module_and_cluster_kernels_in_the_sm90_one() {
    for k in NORM_KERNELS {
        assert!(PTX.contains(&format!(".visible .entry {}(", k.name)), "missing .entry {}", k.name);
        let twin = sm90_kernel_names().any(|n| n == k.name);
        assert_eq!(PTX90.contains(&format!(".entry {}(", k.name)), twin, "{}: in the sm_90 module", k.name);
    }
    assert_eq!(sm90_kernel_names().count(), 12);
    for name in cluster_kernel_names() {
        assert!(PTX90.contains(&format!(".visible .entry {name}(")), "missing .entry {name}");
        assert!(!PTX.contains(&format!(".entry {name}(")), "{name} belongs to the sm_90 module");
    }
}

#[test]
fn norm_kernels_load_and_store_16_bytes_and_stay_ieee() {
    let sm90 = NORM_KERNELS.iter().filter(|k| sm90_kernel_names().any(|n| n == k.name)).map(|k| (k, PTX90));
    for (k, ptx) in NORM_KERNELS.iter().map(|k| (k, PTX)).chain(sm90) {
        let b = body_in(ptx, k.name);
        let ld = b.iter().filter(|l| l.contains("ld.global.v4.")).count();
        let st = b.iter().filter(|l| l.contains("st.global.v4.")).count();
        // x (and the residual), the weight (and bias) per chunk; y (and h).
        assert!(ld >= k.k as usize, "{}: {ld} 128-bit loads", k.name);
        assert!(st >= k.k as usize, "{}: {st} 128-bit stores", k.name);
        assert!(b.iter().all(|l| !l.contains(".approx") && !l.contains(".ftz")), "{}: not IEEE", k.name);
        let rounded = ["sqrt.rn.f32", "div.rn.f32", "rcp.rn.f32"];
        assert!(
            b.iter().any(|l| rounded.iter().any(|r| l.starts_with(r))),
            "{}: no correctly rounded division",
            k.name
        );
    }
}

#[test]
fn norm_reductions_are_butterflies_with_one_barrier_each() {
    for k in NORM_KERNELS {
        let reductions = if k.family == kernels_gpu::norms::Family::Rms { 1 } else { 2 };
        // Two butterflies of five shuffles per reduction (the warp's, the warps' totals).
        let shfl = lines_with(PTX, k.name, "shfl.sync.bfly");
        assert_eq!(shfl, 10 * reductions, "{}: {shfl} butterfly shuffles", k.name);
        let bars = lines_with(PTX, k.name, "bar.sync") + lines_with(PTX, k.name, "barrier.sync");
        assert_eq!(bars, reductions, "{}: {bars} block barriers", k.name);
        assert_eq!(lines_with(PTX, k.name, "barrier.cluster"), 0, "{}", k.name);
    }
}

#[test]
fn sm90_bf16_kernels_round_in_hardware() {
    for name in sm90_kernel_names() {
        assert!(lines_with(PTX90, name, "cvt.rn.bf16") >= 8, "{name}: no cvt.rn.bf16");
        assert_eq!(lines_with(PTX, name, "cvt.rn.bf16"), 0, "{name}: sm_70 has no bf16 conversion");
    }
}

#[test]
fn cluster_kernels_sync_twice_and_read_their_peers_shared_memory() {
    for name in cluster_kernel_names() {
        let arrive = lines_with(PTX90, name, "barrier.cluster.arrive");
        let wait = lines_with(PTX90, name, "barrier.cluster.wait");
        assert_eq!((arrive, wait), (2, 2), "{name}: the exchange's sync and the one before exit");
        assert!(lines_with(PTX90, name, "mapa.shared::cluster") >= 2, "{name}: no mapa");
        assert!(lines_with(PTX90, name, "ld.shared::cluster") >= 2, "{name}: no remote load");
    }
}
