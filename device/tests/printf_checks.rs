//! Compile-fail tests of the device crate's host-compilable safety checks
//! (trybuild): `gpu_printf!`'s format against its arguments, and
//! `printf_raw` being `unsafe`. The nvptx-only ones (kernel bodies, block
//! collectives) are in `macros/tests/device_safety.rs`.

#[test]
fn printf_misuse_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
