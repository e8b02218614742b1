//! What the PTX tests share: the two tracked modules, one entry's instruction
//! lines, and the spellings of each access width.
#![allow(dead_code)]

pub const PTX: &str = include_str!("../../../ptx/kernels_gpu.ptx");
pub const PTX90: &str = include_str!("../../../ptx/kernels_gpu_sm90.ptx");

/// The instruction lines of one `.entry` of the portable module, comments stripped.
pub fn body(name: &str) -> Vec<&'static str> {
    body_in(PTX, name)
}

/// The instruction lines of one `.entry` of `ptx`, comments stripped, with the
/// body of each `.func` it calls put in at the call (once per call site): LLVM
/// may outline a large lane group (eight f16 `tanh`s, say), which moves its
/// loads and stores into the function without changing what runs.
pub fn body_in(ptx: &'static str, name: &str) -> Vec<&'static str> {
    let lines = lines_of(ptx, &format!(".entry {name}(")).unwrap_or_else(|| panic!("no .entry {name} in the PTX"));
    let mut out = Vec::new();
    for l in lines {
        out.push(l);
        let callee = l.strip_prefix("call.uni ").or_else(|| l.strip_prefix("call "));
        let callee = callee.map(|c| c.trim_start_matches(|ch: char| ch == '(' || ch.is_whitespace()));
        let Some(callee) = callee.and_then(|c| c.split([',', ' ', ';']).next()) else { continue };
        if let Some(f) = lines_of(ptx, &format!(".func {callee}(")) {
            out.extend(f);
        }
    }
    out
}

/// The lines of the function or entry whose header starts with `head`.
fn lines_of(ptx: &'static str, head: &str) -> Option<Vec<&'static str>> {
    let start = ptx.find(head)?;
    let rest = &ptx[start..];
    let end = rest.find("\n}\n").expect("unterminated function");
    Some(rest[..end].lines().map(|l| l.split("//").next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect())
}

/// Number of instructions in `name` whose opcode starts with `prefix`.
pub fn count(name: &str, prefix: &str) -> usize {
    body(name).iter().filter(|l| l.starts_with(prefix)).count()
}

/// Width-agnostic scalar access: the backend may spell 32 bits as b32, u32 or f32.
pub fn count_any(name: &str, prefixes: &[&str]) -> usize {
    prefixes.iter().map(|p| count(name, p)).sum()
}

pub const LD32: &[&str] =
    &["ld.global.b32", "ld.global.u32", "ld.global.f32", "ld.global.nc.b32", "ld.global.nc.u32", "ld.global.nc.f32"];
pub const ST32: &[&str] = &["st.global.b32", "st.global.u32", "st.global.f32"];
pub const LD16: &[&str] = &["ld.global.b16", "ld.global.u16", "ld.global.nc.b16", "ld.global.nc.u16"];
pub const ST16: &[&str] = &["st.global.b16", "st.global.u16"];
/// 128-bit loads; the generic `ld.v4` too: where LLVM outlines a large lane
/// group (the f16/bf16 activations), the pointer reaches the function as a
/// generic one.
pub const LD128: &[&str] = &[
    "ld.v4.b32",
    "ld.v4.u32",
    "ld.global.v4.b32",
    "ld.global.v4.u32",
    "ld.global.v4.f32",
    "ld.global.nc.v4.b32",
    "ld.global.nc.v4.u32",
    "ld.global.nc.v4.f32",
];
/// 128-bit stores, generic ones included (as for [`LD128`]).
pub const ST128: &[&str] = &["st.v4.b32", "st.v4.u32", "st.global.v4.b32", "st.global.v4.u32", "st.global.v4.f32"];

/// The approximate instructions the 16-bit activations' fast paths use
/// (`gpukern_device::math::fast16`): `.ftz` and `.approx` appear nowhere else.
pub const SFU: &[&str] = &["ex2.approx.ftz.f32", "rcp.approx.ftz.f32", "lg2.approx.ftz.f32", "rsqrt.approx.ftz.f32"];

/// Every line of `ptx` with `.ftz` or `.approx` is one of the [`SFU`]
/// instructions: flush-to-zero and approximate arithmetic break IEEE results
/// everywhere but behind the fast paths' rounding test.
pub fn assert_only_sfu_approx(ptx: &str) {
    for l in ptx.lines().map(str::trim).filter(|l| l.contains(".ftz") || l.contains(".approx")) {
        assert!(SFU.iter().any(|s| l.starts_with(s)), "not an SFU fast-path instruction: {l}");
    }
}
