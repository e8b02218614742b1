//! Builds the worked example's kernel crate (examples/custom-kernels/kernels)
//! to PTX with gpukern-build, as a user's build.rs would: the report's `custom`
//! section times its operations beside the built-in ones.
fn main() {
    gpukern_build::Builder::new("../examples/custom-kernels/kernels")
        .arch(gpukern_build::Arch::Sm70)
        .build_script()
        .unwrap_or_else(|e| panic!("{e}"));
}
