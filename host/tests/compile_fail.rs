//! Programs the trust boundary must refuse at compile time (trybuild; the
//! expected compiler output is in `tests/compile_fail/*.stderr`, from the
//! pinned nightly): a forged cudarc buffer as an operand, the sealed interop
//! traits implemented outside the crate, PTX text loaded without `unsafe`.

#[test]
fn forged_operands_and_unvouched_ptx_do_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
