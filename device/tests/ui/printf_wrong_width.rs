// `%u` reads 4 bytes; a u64 needs `%llu`.
fn main() {
    gpukern_device::gpu_printf!("%u\n", 1u64 << 40);
}
