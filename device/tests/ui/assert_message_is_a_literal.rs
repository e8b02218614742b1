// `gpu_assert!` stores its message NUL-terminated at compile time: a literal.
fn main() {
    let msg = "not a literal";
    gpukern_device::gpu_assert!(1 + 1 == 2, msg);
}
