// `%s` makes vprintf read a string at the argument's address: an integer is refused.
fn main() {
    let addr = 0xdead_beef_u64;
    gpukern_device::gpu_printf!("%s\n", addr);
}
