// `PrintfArg` is sealed: a type of one's own cannot promise `vprintf` an
// address for `%s` (or a one-byte value where `%f` reads eight).
use gpukern_device::debug::printf::conv;
use gpukern_device::debug::PrintfArg;

struct Addr(u64);

impl PrintfArg<{ conv::STR }> for Addr {
    type Out = u64;
    fn promote(self) -> u64 {
        self.0
    }
}

fn main() {
    gpukern_device::gpu_printf!("%s\n", Addr(0x1000));
}
