// `printf_raw` dereferences what its format says: calling it needs `unsafe`.
fn main() {
    gpukern_device::debug::printf_raw("%s\0", 8 as *const u8);
}
