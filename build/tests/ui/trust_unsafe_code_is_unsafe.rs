// Compiling a kernel crate without `-F unsafe_code` vouches for its unsafe
// code: only an `unsafe` call does that.
fn main() {
    let _ = gpukern_build::Builder::new("../kernels").trust_unsafe_code();
}
