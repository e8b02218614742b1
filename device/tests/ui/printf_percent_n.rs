// `%n` writes through its argument.
fn main() {
    let p = core::ptr::null_mut::<i32>();
    gpukern_device::gpu_printf!("%n\n", p);
}
