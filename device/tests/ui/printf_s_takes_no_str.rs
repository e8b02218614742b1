// A `&str` has no NUL terminator: `%s` takes a `&'static CStr` only.
fn main() {
    let name: &'static str = "probe";
    gpukern_device::gpu_printf!("%s\n", name);
}
