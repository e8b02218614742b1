//! What the cargo-fuzz targets (`fuzz/`) drive: the host's readers of
//! untrusted-looking input, exposed under the `fuzzing` feature only. Not an
//! API: names and signatures follow the fuzz targets.

use gpukern_device::kernel::Param;
use kernels_gpu::ops::OpKind;

/// `ptx_text::declared_ops`: the `elementwise!` manifests a module declares.
pub fn declared_ops(ptx: &str) -> Result<Vec<String>, String> {
    crate::ptx_text::declared_ops(ptx)
}

/// `ptx_text::entry_params`: the byte size of each parameter of `.entry name`.
pub fn entry_params(ptx: &str, name: &str) -> Result<Option<Vec<u32>>, String> {
    crate::ptx_text::entry_params(ptx, name)
}

/// `pdl::waits_first`: the entry waits before it touches memory.
pub fn waits_first(ptx: &str, name: &str) -> bool {
    crate::device::pdl::waits_first(ptx, name)
}

/// `signature::check_signature`: a typed kernel's manifest and entry against
/// the handle's parameters.
pub fn check_signature(
    manifest: &[u8],
    params: &[Param],
    entry: Result<Option<Vec<u32>>, String>,
) -> Result<(), String> {
    crate::user::signature::check_signature(manifest, params, &[], entry)
}

/// One slot as the graph builder records it: its builder, byte address,
/// length in `f32`s and access.
#[derive(Clone, Copy, Debug)]
pub struct SlotParts {
    pub builder: u64,
    pub addr: u64,
    pub len: usize,
    pub writable: bool,
}

/// `capture::check_record` for builder `id` on `f32` slots.
pub fn check_record(id: u64, kind: OpKind, a: SlotParts, b: Option<SlotParts>, out: SlotParts) -> crate::Result<()> {
    let s = |p: SlotParts| crate::graph::capture::fuzz_slot::<f32>(p.builder, p.addr, p.len, p.writable);
    crate::graph::capture::check_record(id, kind.name(), s(a), b.map(s), s(out))
}
