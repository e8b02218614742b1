//! Compiles the kernel crate to PTX into OUT_DIR, twice: sm_70 (runs on every
//! GPU from Volta up) and sm_90 (Hopper: adds the PDL twins and `#[kernel(pdl)]`'s
//! prologue); lib.rs embeds both and loads the one the device can run.
fn main() {
    gpukern_build::Builder::new("../kernels")
        .arch(gpukern_build::Arch::Sm70)
        .arch(gpukern_build::Arch::Sm90)
        .build_script()
        .unwrap_or_else(|e| panic!("{e}"));
}
