//! PTX-level checks of the PDL twins (`kernels_gpu::ops::PDL_KERNELS`, the
//! foreach add's, `kernels_gpu::norms::pdl_kernel_names`, the gated
//! activations' `kernels_gpu::glu::GLU_PDL_KERNELS`): the
//! host launches them, and only them, with the programmatic-serialisation
//! attribute, which is sound only if each waits before touching memory.

use kernels_gpu::ops::{op_kernel, OpPattern, PDL_KERNELS};

mod ptx_common;

use ptx_common::*;

/// True for an instruction that reads or writes global memory.
fn touches_memory(l: &str) -> bool {
    ["ld.global", "st.global", "ld.", "st.", "atom.", "red.", "cp.async"].iter().any(|p| l.starts_with(p))
        && !l.starts_with("ld.param")
}

/// Every PDL twin of the library: the element-wise operations', the
/// foreach add's (table and inline list) and the norms'.
fn twins() -> Vec<&'static str> {
    let many = kernels_gpu::foreach::ADD_MANY_PDL.into_iter().chain(kernels_gpu::foreach::ADD_MANY_INLINE_PDL);
    let norms = kernels_gpu::norms::pdl_kernel_names();
    let glu = kernels_gpu::glu::GLU_PDL_KERNELS.iter().map(|k| k.name);
    PDL_KERNELS.iter().map(|k| k.name).chain(many).chain(norms).chain(glu).collect()
}

#[test]
fn every_twin_waits_before_any_memory_access_and_then_triggers() {
    assert_eq!(PDL_KERNELS.len(), 3 * kernels_gpu::ops::OpKind::ALL.len());
    for name in twins() {
        assert!(!PTX.contains(&format!(".entry {}(", name)), "{} must not be in the sm_70 module", name);
        let body = body_in(PTX90, name);
        let wait = body
            .iter()
            .position(|l| l.starts_with("griddepcontrol.wait"))
            .unwrap_or_else(|| panic!("{}: no wait", name));
        let trigger = body.iter().position(|l| l.starts_with("griddepcontrol.launch_dependents"));
        assert!(trigger.is_some_and(|t| t > wait), "{}: the trigger must follow the wait", name);
        let first = body.iter().position(|l| touches_memory(l)).unwrap_or_else(|| panic!("{}: no memory access", name));
        assert!(wait < first, "{}: `{}` comes before the wait", name, body[first]);
        assert_eq!(body.iter().filter(|l| l.starts_with("griddepcontrol.wait")).count(), 1, "{}", name);
    }
}

#[test]
fn each_foreach_twin_runs_the_walk_of_the_kernel_it_twins() {
    for name in kernels_gpu::foreach::ADD_MANY_PDL.into_iter().chain(kernels_gpu::foreach::ADD_MANY_INLINE_PDL) {
        let base = name.strip_suffix("_pdl").expect("named <kernel>_pdl");
        let (twin, plain) = (body_in(PTX90, name), body_in(PTX, base));
        for width in ["ld.global.v4", "st.global.v4", "ld.global.nc.v4"] {
            let n = |b: &[&str]| b.iter().filter(|l| l.starts_with(width)).count();
            assert_eq!(n(&twin), n(&plain), "{name}: {width}");
        }
    }
}

#[test]
fn each_twin_runs_the_walk_of_the_kernel_it_twins() {
    for k in PDL_KERNELS {
        let base = k.name.strip_suffix("_pdl").expect("named <kernel>_pdl");
        let plain = op_kernel(k.kind, k.dtype, k.pattern).expect("a plain kernel");
        assert_eq!(plain.name, base, "{}", k.name);
        assert!(matches!(k.pattern, OpPattern::Pack | OpPattern::PackSm90));
        // The same 128-bit loads and stores as the plain kernel, wherever it lives.
        let home = if plain.needs_sm90() { PTX90 } else { PTX };
        let (twin, plain) = (body_in(PTX90, k.name), body_in(home, base));
        for width in ["ld.global.v4", "st.global.v4"] {
            let n = |b: &[&str]| b.iter().filter(|l| l.starts_with(width)).count();
            assert_eq!(n(&twin), n(&plain), "{}: {width}", k.name);
        }
    }
}

#[test]
fn no_other_kernel_waits_on_a_grid_dependency() {
    // Only the twins carry griddepcontrol: the host never launches anything
    // else with the attribute, and a stray wait would be a silent no-op.
    let entries = PTX90.lines().filter_map(|l| l.strip_prefix(".visible .entry ")).map(|l| l.trim_end_matches('('));
    for e in entries.filter(|e| !e.ends_with("_pdl")) {
        assert!(!body_in(PTX90, e).iter().any(|l| l.starts_with("griddepcontrol")), "{e}");
    }
    assert!(!PTX.contains("griddepcontrol"));
}

#[test]
fn each_norm_twin_runs_the_body_of_the_kernel_it_twins() {
    // The same memory accesses, barriers, shuffles and cluster exchange as the
    // plain kernel (in the sm_90 module for bf16 and cluster kernels, else the
    // portable one): the twin reduces in the same order, so gives the same bits.
    let kinds = [
        "ld.global",
        "st.global",
        "barrier.sync",
        "shfl.sync",
        "ld.shared",
        "st.shared",
        "barrier.cluster",
        "mapa",
        "cvt.rn.bf16",
    ];
    for name in kernels_gpu::norms::pdl_kernel_names() {
        let base = name.strip_suffix("_pdl").expect("named <kernel>_pdl");
        assert_eq!(kernels_gpu::norms::pdl_twin(base), Some(name));
        let home = if PTX90.contains(&format!(".entry {base}(")) { PTX90 } else { PTX };
        let (twin, plain) = (body_in(PTX90, name), body_in(home, base));
        for kind in kinds {
            let n = |b: &[&str]| b.iter().filter(|l| l.starts_with(kind)).count();
            assert_eq!(n(&twin), n(&plain), "{name}: {kind}");
        }
    }
}
