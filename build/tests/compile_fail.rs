//! What a safe build script cannot do (trybuild; the expected compiler
//! output is in `tests/ui/*.stderr`, from the pinned nightly): make a
//! `Built` of its own for `rust_consts`, or skip the kernel crate's
//! `-F unsafe_code` without an `unsafe` call.

#[test]
fn a_build_script_cannot_vouch_without_unsafe() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
