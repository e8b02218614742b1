//! Programmatic dependent launch (PDL, sm_90): the plan that decides when an
//! element-wise launch overlaps the stream's previous kernel, and the setting
//! a user chooses per call (`Opts::pdl`) or when a stream is created
//! (`Gpu::stream_with`). It builds on `context` alone, so `gpu` (the
//! stream's setting) and `ops` (the choice) can both use it.
//!
//! A launch with the attribute may start while its predecessor in the stream
//! is still running; the kernel (a PDL twin of `kernels_gpu::ops::PDL_KERNELS`,
//! or of a norm kernel: `kernels_gpu::norms::pdl_twin`)
//! waits with `griddepcontrol.wait` before touching memory, so results are
//! those of plain stream order. What it saves is the launch latency between
//! dependent kernels, which is most of a small kernel's time.

use kernels_gpu::ops::{OpKernel, OpKind, PDL_KERNELS};
use kernels_gpu::Dtype;

use crate::device::context::DeviceInfo;

/// When launches use programmatic dependent launch: per call
/// (`Opts::pdl`), or for a stream, chosen when it is created
/// (`Gpu::stream_with`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pdl {
    /// The plan decides ([`Pdl::pays`]): on sm_90 and later, for 16-byte
    /// aligned operands whose work fits in [`Pdl::AUTO_MAX_WAVES`] waves of
    /// resident threads (up to 2^24 f32 elements on an H200). The default.
    #[default]
    Auto,
    /// Always on sm_90 and later, for 16-byte aligned operands (the PDL
    /// kernels are 128-bit kernels). Never on older devices, where the
    /// instruction does not exist.
    On,
    /// Never: every launch waits for its predecessor to finish.
    Off,
}

impl Pdl {
    /// The most waves of resident threads [`Pdl::Auto`] overlaps (see [`Pdl::pays`]).
    pub const AUTO_MAX_WAVES: u64 = 16;

    /// The plan: whether a launch over `n` elements, `lanes` per thread, gains
    /// from overlapping its predecessor on this device.
    ///
    /// The report's `chains` section on an H200 (16 dependent operations, add
    /// and mul/add/relu/sigmoid, f32 and bf16) measured PDL faster than plain
    /// launches at every size from 2^12 to 2^24: ×1.15–1.37 up to 2^20, where
    /// the launch gap is most of an operation's time, and still 3–13% at 2^22
    /// and 2^24, where a grid's last wave overlaps the next grid's launch. A
    /// CUDA C probe had lost 9% at 2^22 inside a graph with the trigger at the
    /// end of the kernel; ours triggers after the wait, at the start. Past what
    /// was measured, the gain shrinks with the share of the launch gap, and the
    /// per-operation tables at 2^26–2^28 keep the tuned plain kernels. So the
    /// line is [`Pdl::AUTO_MAX_WAVES`] waves of resident threads (2^24 f32
    /// elements on an H200: 132 SMs × 2048 threads × 4 lanes × 15.5).
    pub fn pays(self, info: &DeviceInfo, n: usize, lanes: u32) -> bool {
        if !info.has_sm90() {
            return false;
        }
        match self {
            Pdl::On => true,
            Pdl::Off => false,
            Pdl::Auto => {
                let wave = info.sm_count as u64 * info.max_threads_per_sm as u64;
                (n as u64).div_ceil(lanes.max(1) as u64) <= Self::AUTO_MAX_WAVES * wave
            }
        }
    }
}

/// The PDL twin of the 128-bit kernel of `(kind, dtype)` on sm_90.
pub(crate) fn twin(kind: OpKind, dtype: Dtype) -> Option<&'static OpKernel> {
    PDL_KERNELS.iter().find(|k| k.kind == kind && k.dtype == dtype)
}

/// Instructions a PDL entry may run before its `griddepcontrol.wait`, by
/// opcode (the word before the first `.`; `ld` only as `ld.param`): parameter loads and
/// register arithmetic, none of which touches memory or jumps.
const BEFORE_WAIT: [&str; 17] = [
    "ld", "mov", "cvta", "cvt", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "setp", "selp", "min",
    "max",
];

/// Whether an opcode is one of [`BEFORE_WAIT`].
fn harmless(opcode: &str) -> bool {
    let mut parts = opcode.split('.');
    let (first, second) = (parts.next().unwrap_or(""), parts.next());
    // `ld` only as `ld.param.<type>`; the others in any form (`mad.wide.u32`).
    if first == "ld" {
        return second == Some("param") && parts.next().is_some();
    }
    BEFORE_WAIT.contains(&first)
}

/// True when `.entry entry` of `ptx` executes `griddepcontrol.wait` before
/// anything that could touch memory, branch or call: its body, read from the
/// top as instructions (the text tokenized, comments and strings dropped:
/// `ptx_text`), holds only [`BEFORE_WAIT`] instructions and `.reg`
/// declarations up to an unguarded wait. A label, a guarded instruction, any
/// other directive or an entry defined twice answers false. A user module's
/// kernel is launched with the PDL attribute only after this check (a kernel
/// that read before waiting would race with its predecessor), so a manifest
/// or marker that claims a twin is not taken on trust.
pub(crate) fn waits_first(ptx: &str, entry: &str) -> bool {
    let Ok(toks) = crate::ptx_text::tokens(ptx) else { return false };
    let Ok(Some(e)) = crate::ptx_text::entry(&toks, entry) else { return false };
    use crate::ptx_text::Stmt;
    for s in crate::ptx_text::statements(e.body) {
        match s {
            Stmt::Directive(".reg") => continue,
            Stmt::Instr { opcode: "griddepcontrol.wait", guarded: false } => return true,
            Stmt::Instr { opcode, guarded: false } if harmless(opcode) => continue,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(major: u32) -> DeviceInfo {
        DeviceInfo {
            index: 0,
            name: "test".into(),
            compute_capability: (major, 0),
            sm_count: 132,
            l2_bytes: 50 << 20,
            total_memory: 140 << 30,
            memory_clock_khz: 2_619_000,
            bus_width_bits: 6144,
            max_threads_per_sm: 2048,
            registers_per_sm: 65536,
            sm_clock_khz: 1_980_000,
            driver_version: 13000,
            shared_per_block_optin: 232448,
        }
    }

    #[test]
    fn the_plan_uses_pdl_up_to_sixteen_waves_on_sm90_only() {
        let (h200, v100) = (info(9), info(7));
        // A wave on this H200: 132 × 2048 threads, 4 f32 or 8 bf16 per thread.
        assert!(Pdl::Auto.pays(&h200, 1 << 12, 4));
        assert!(Pdl::Auto.pays(&h200, 1 << 24, 4));
        assert!(!Pdl::Auto.pays(&h200, 1 << 26, 4));
        assert!(Pdl::Auto.pays(&h200, 16 * 132 * 2048 * 8, 8));
        assert!(!Pdl::Auto.pays(&h200, 16 * 132 * 2048 * 8 + 1, 8));
        assert!(Pdl::On.pays(&h200, 1 << 28, 4));
        assert!(!Pdl::Off.pays(&h200, 1 << 10, 4));
        for p in [Pdl::Auto, Pdl::On, Pdl::Off] {
            assert!(!p.pays(&v100, 1 << 10, 4), "{p:?} on sm_70");
        }
    }

    #[test]
    fn a_pdl_entry_must_wait_before_it_touches_memory_or_jumps() {
        let entry = |body: &str| {
            format!(".visible .entry k_pdl(\n\t.param .u64 k_pdl_param_0\n)\n{{\n\t.reg .b64 %rd<4>;\n{body}\n}}\n")
        };
        let good = "\tld.param.b64 %rd1, [k_pdl_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\t// begin inline asm\n\tgriddepcontrol.wait;\n\tld.global.b32 %r1, [%rd2];";
        assert!(waits_first(&entry(good), "k_pdl"));
        assert!(!waits_first(&entry(good), "other"));
        for bad in [
            "\tld.global.b32 %r1, [%rd2];\n\tgriddepcontrol.wait;",
            "\t@%p1 bra $L__BB0_2;\n\tgriddepcontrol.wait;",
            "$L__BB0_1:\n\tgriddepcontrol.wait;",
            "\tcall.uni f, (%rd1);\n\tgriddepcontrol.wait;",
            "\tst.global.b32 [%rd2], %r1;",
            "\tret;",
            // The wait only in a comment, a string or a guarded form.
            "\t// griddepcontrol.wait;\n\tld.global.b32 %r1, [%rd2];",
            "\t/* griddepcontrol.wait; */ ld.global.b32 %r1, [%rd2];\n\tgriddepcontrol.wait;",
            "\t/*\n\tgriddepcontrol.wait;\n\t*/\n\tst.global.b32 [%rd2], %r1;",
            "\t@%p1 griddepcontrol.wait;\n\tld.global.b32 %r1, [%rd2];",
            "\tgriddepcontrol.waitx;",
            "\tld.paramx.b32 %r1, [%rd2];\n\tgriddepcontrol.wait;",
            "\tld.global.param.b32 %r1, [%rd2];\n\tgriddepcontrol.wait;",
            "\t.local .align 4 .b8 d[4];\n\tgriddepcontrol.wait;",
        ] {
            assert!(!waits_first(&entry(bad), "k_pdl"), "{bad}");
        }
        // An entry whose name is only in a comment before a real wait, or that
        // is defined twice (the second without the wait), does not pass.
        let k = |body: &str| format!(".visible .entry k_pdl(\n\t.param .u64 p\n)\n{{\n{body}\n}}\n");
        let shadow =
            format!("// .entry k_pdl(\n{}", k("\tgriddepcontrol.wait;").replace(".entry k_pdl", ".entry other"));
        assert!(!waits_first(&shadow, "k_pdl"));
        let twice = format!("{}{}", k("\tgriddepcontrol.wait;"), k("\tld.global.b32 %r1, [%rd2];"));
        assert!(!waits_first(&twice, "k_pdl"));
        // The library's twins pass.
        let ptx90 = include_str!("../../../ptx/kernels_gpu_sm90.ptx");
        let many = kernels_gpu::foreach::ADD_MANY_PDL.into_iter().chain(kernels_gpu::foreach::ADD_MANY_INLINE_PDL);
        let norms = kernels_gpu::norms::pdl_kernel_names();
        for name in PDL_KERNELS.iter().map(|k| k.name).chain(many).chain(norms) {
            assert!(waits_first(ptx90, name), "{name}");
        }
    }

    #[test]
    fn every_operation_has_a_twin_per_dtype() {
        for kind in OpKind::ALL {
            for dtype in Dtype::ALL {
                let k = twin(kind, dtype).unwrap_or_else(|| panic!("{kind:?} {dtype:?}"));
                assert!(k.name.ends_with("_pdl") && k.align() == 16, "{}", k.name);
            }
        }
        assert_eq!(Pdl::default(), Pdl::Auto, "a plain stream's setting");
    }
}
