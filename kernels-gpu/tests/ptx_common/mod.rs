//! What the PTX tests share: the two tracked modules, one entry's instruction
//! lines, and the spellings of each access width.
#![allow(dead_code)]

pub const PTX: &str = include_str!("../../../ptx/kernels_gpu.ptx");
pub const PTX90: &str = include_str!("../../../ptx/kernels_gpu_sm90.ptx");

/// The instruction lines of one `.entry` of the portable module, comments stripped.
pub fn body(name: &str) -> Vec<&'static str> {
    body_in(PTX, name)
}

/// The instruction lines of one `.entry` of `ptx`, comments stripped.
pub fn body_in(ptx: &'static str, name: &str) -> Vec<&'static str> {
    let head = format!(".entry {name}(");
    let start = ptx.find(&head).unwrap_or_else(|| panic!("no .entry {name} in the PTX"));
    let rest = &ptx[start..];
    let end = rest.find("\n}\n").expect("unterminated entry");
    rest[..end].lines().map(|l| l.split("//").next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect()
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
pub const LD128: &[&str] = &[
    "ld.global.v4.b32",
    "ld.global.v4.u32",
    "ld.global.v4.f32",
    "ld.global.nc.v4.b32",
    "ld.global.nc.v4.u32",
    "ld.global.nc.v4.f32",
];
pub const ST128: &[&str] = &["st.global.v4.b32", "st.global.v4.u32", "st.global.v4.f32"];
