//! Compiles the kernel crate to PTX into OUT_DIR, twice: sm_70 (runs on every
//! GPU from Volta up) and sm_90 (Hopper: adds the PDL twins and `#[kernel(pdl)]`'s
//! prologue); lib.rs embeds both and loads the one the device can run.
//!
//! gpukern-build compiles a kernel crate with `-F unsafe_code` unless told
//! otherwise. This one has unsafe code of its own (`block_sum`'s 128-bit
//! loads and block reduction, the hand-written faulting kernel `write_one`),
//! so this script vouches for it with the `unsafe` `trust_unsafe_code`.
fn main() {
    // SAFETY: ../kernels declares manifests only through `elementwise!` and
    // `#[kernel]`, and its unsafe blocks keep to their contracts: `block_sum`
    // calls `block::sum` from every thread of the block and loads 16-byte
    // packs only inside its input slice; `write_one` (launched only through
    // the `unsafe` Module::launch, by the fault test) writes the one word it
    // is given.
    let builder = unsafe { gpukern_build::Builder::new("../kernels").trust_unsafe_code() };
    builder
        .arch(gpukern_build::Arch::Sm70)
        .arch(gpukern_build::Arch::Sm90)
        .build_script()
        .unwrap_or_else(|e| panic!("{e}"));
}
