// CUDA's vprintf does not support `*` (issue 30: `%.*s` printed garbage).
fn main() {
    gpukern_device::gpu_printf!("%.*s\n", 3i32, c"abc");
}
