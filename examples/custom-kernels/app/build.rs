//! Compiles the kernel crate to PTX (sm_70: runs on every GPU from Volta up)
//! into OUT_DIR; main.rs embeds it.
fn main() {
    gpukern_build::Builder::new("../kernels")
        .arch(gpukern_build::Arch::Sm70)
        .build_script()
        .unwrap_or_else(|e| panic!("{e}"));
}
