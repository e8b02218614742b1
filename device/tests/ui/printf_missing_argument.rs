// Two conversions, one argument: vprintf would read past the buffer.
fn main() {
    gpukern_device::gpu_printf!("%d %d\n", 1i32);
}
