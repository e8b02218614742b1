//! `Gpu`'s own surface stays small (issue 41: fewer than 28 public methods,
//! counting every feature): the library's calls, not every form of them.
//! Host-slice forms live in `gpukern::blocking`, cudarc calls on the
//! `CudarcExt` trait, studies on `Studies`, test hooks in a hidden module.
//! Deprecated shims (hidden, for one release) are not counted.

use std::path::{Path, PathBuf};

fn host_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("host/src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The public methods of `impl Gpu` blocks in `text`, each with whether the
/// attributes above it deprecate or hide it.
fn gpu_methods(text: &str) -> Vec<(String, bool)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let (mut inside, mut hidden_block) = (false, false);
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("impl Gpu {") {
            inside = true;
            // `#[doc(hidden)] impl Gpu` hides the whole block.
            hidden_block = i > 0 && lines[i - 1].contains("doc(hidden)");
            continue;
        }
        if inside && line.starts_with('}') {
            inside = false;
        }
        let Some(rest) = line.strip_prefix("    pub fn ").or_else(|| line.strip_prefix("    pub unsafe fn ")) else {
            continue;
        };
        if !inside {
            continue;
        }
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let attrs = lines[..i].iter().rev().take_while(|l| l.trim_start().starts_with(['#', '/']));
        let shim = hidden_block || attrs.clone().any(|l| l.contains("#[deprecated") || l.contains("doc(hidden)"));
        out.push((name, shim));
    }
    out
}

#[test]
fn gpu_has_fewer_than_28_public_methods() {
    let mut files = Vec::new();
    rust_files(&host_src(), &mut files);
    let mut public: Vec<String> = files
        .iter()
        .flat_map(|f| gpu_methods(&std::fs::read_to_string(f).unwrap()))
        .filter(|(_, shim)| !shim)
        .map(|(name, _)| name)
        .collect();
    public.sort();
    assert!(public.len() >= 10, "the scan found too few methods to be right: {public:?}");
    assert!(public.len() < 28, "Gpu has {} public methods: {public:?}", public.len());
    for gone in ["binary_host", "binary_cudarc", "alloc_pinned", "live_allocations", "norm_cudarc"] {
        assert!(!public.iter().any(|m| m == gone), "{gone} is back on Gpu");
    }
}

#[test]
fn the_scan_sees_shims_and_hidden_blocks() {
    let text = "impl Gpu {\n    /// a\n    pub fn a(&self) {}\n    #[deprecated(note = \"x\")]\n    pub fn b() {}\n}\n\
                #[doc(hidden)]\nimpl Gpu {\n    pub fn c() {}\n}\nimpl Other {\n    pub fn d() {}\n}\n";
    let got = gpu_methods(text);
    assert_eq!(got, [("a".into(), false), ("b".into(), true), ("c".into(), true)]);
}
