//! The layering the ARCHITECTURE promises, checked on the sources: no import
//! circle between the top-level modules of any crate (a path through a
//! crate-root re-export counts as an import of the module behind it), `raw`
//! (the unsafe edge) imports nothing of the safe layer above it, and no Rust
//! file of the repository is over 400 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() && !matches!(name.as_str(), "target" | ".git" | "bundle" | "report-out") {
            rust_files(&p, out);
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// The crate's top-level module a file belongs to (`raw/map.rs` → `raw`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level names a path after a prefix reaches: `x` in `crate::x::…`,
/// or each of `a`, `b` in `crate::{a::…, b}`.
fn first_segments(rest: &str) -> Vec<String> {
    let ident = |t: &str| t.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let Some(inner) = rest.strip_prefix('{') else { return vec![ident(rest)] };
    let (mut depth, mut parts, mut start) = (0, Vec::new(), 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                parts.push(ident(&inner[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(ident(&inner[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The source without comment lines: a doc link to the module that measures
/// a table is a pointer for the reader, not an import.
fn code_of(file: &Path) -> String {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate root's re-exports (`pub use module::Item;`, `pub use
/// module::{A, B};`): item name → the module that defines it, so that a path
/// `crate::Item` counts as an import of that module.
fn root_reexports(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let root = ["lib.rs", "main.rs", "mod.rs"].iter().map(|f| src.join(f)).find(|p| p.exists());
    let Some(root) = root else { return out };
    let code = code_of(&root);
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(path) = ["pub use ", "pub(crate) use "].iter().find_map(|p| stmt.rsplit_once(p).map(|(_, r)| r))
        else {
            continue;
        };
        let path = path.trim_start_matches("crate::").trim_start_matches("self::");
        // A folder's mod.rs re-exports its own modules (`pub use x::Item`).
        let Some((module, items)) = path.split_once("::") else { continue };
        if !(src.join(format!("{module}.rs")).exists() || src.join(module).is_dir()) {
            continue; // another crate's items
        }
        for item in first_segments(items) {
            let name = items_alias(items, &item);
            out.insert(name, module.to_string());
        }
    }
    out
}

/// The name an item is re-exported under (`Item as Other` → `Other`).
fn items_alias(items: &str, item: &str) -> String {
    let after = items.split(item).nth(1).unwrap_or("");
    let alias = after
        .trim_start()
        .strip_prefix("as ")
        .map(|a| a.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>());
    alias.filter(|a| !a.is_empty()).unwrap_or_else(|| item.to_string())
}

/// Edges `module → module` from every path to a sibling module in the
/// sources under `src` (`crate::x`, or for a folder module `crate::folder::x`
/// and `super::x`), and to the module behind a crate-root re-export
/// (`crate::Gpu` is an import of `gpu` when lib.rs says `pub use gpu::Gpu`).
/// Comments are skipped.
fn imports(src: &Path, prefixes: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let reexports = root_reexports(src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let from = module_of(src, &f);
        let text = code_of(&f);
        let hits = prefixes.iter().flat_map(|p| text.match_indices(p).map(move |(i, _)| (i, p.len(), *p)));
        for (i, len, prefix) in hits {
            if i > 0 && text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `kernels_gpu::…` or `$crate::` are other crates
            }
            for to in first_segments(&text[i + len..]) {
                let is_module = src.join(format!("{to}.rs")).exists() || src.join(&to).is_dir();
                let target = match (is_module, prefix) {
                    (true, _) => Some(to),
                    (false, _) => reexports.get(&to).cloned(),
                };
                if let Some(to) = target.filter(|t| *t != from) {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

/// A circle of the import graph, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            return Some(path[at..].iter().cloned().chain([n.to_string()]).collect());
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_import_circle_in_any_crate() {
    let folders: [(&str, &[&str]); 17] = [
        ("host/src", &["crate::"]),
        // Inside each folder of the host crate, its files in no circle either.
        ("host/src/device", &["crate::device::", "super::"]),
        ("host/src/memory", &["crate::memory::", "super::"]),
        ("host/src/launch", &["crate::launch::", "super::"]),
        ("host/src/ops", &["crate::ops::", "super::"]),
        ("host/src/graph", &["crate::graph::", "super::"]),
        ("host/src/user", &["crate::user::", "super::"]),
        ("host/src/interop", &["crate::interop::", "super::"]),
        ("host/src/reference", &["crate::reference::", "super::"]),
        ("device/src", &["crate::"]),
        ("kernels-gpu/src", &["crate::"]),
        ("build/src", &["crate::"]),
        ("macros/src", &["crate::"]),
        ("xtask/src", &["crate::"]),
        ("candle/src", &["crate::"]),
        ("benches/src", &["crate::"]),
        ("benches/src/report", &["crate::report::", "super::"]),
    ];
    let circles: Vec<String> = folders
        .into_iter()
        .filter_map(|(krate, prefixes)| {
            circle(&imports(&root().join(krate), prefixes)).map(|c| format!("{krate}: {}", c.join(" → ")))
        })
        .collect();
    assert!(circles.is_empty(), "modules import each other in a circle: {circles:?}");
}

#[test]
fn crate_root_reexports_count_as_imports() {
    // `buffer.rs` naming `crate::Gpu` imports `gpu` (re-exported at the root):
    // the circle `buffer → gpu → buffer` that a `crate::<module>` reader missed.
    let dir = std::env::temp_dir().join(format!("layering-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod buffer;\nmod gpu;\npub use gpu::{Gpu, Stream as S};\n").unwrap();
    std::fs::write(dir.join("gpu.rs"), "use crate::buffer::DeviceVec;\npub struct Gpu;\n").unwrap();
    std::fs::write(dir.join("buffer.rs"), "pub fn f(_: &crate::Gpu, _: crate::S) {}\n").unwrap();
    let edges = imports(&dir, &["crate::"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(edges.get("buffer"), Some(&BTreeSet::from(["gpu".to_string()])));
    assert_eq!(circle(&edges), Some(vec!["buffer".into(), "gpu".into(), "buffer".into()]));
    // Grouped paths: `crate::{a, b::c}` imports both.
    assert_eq!(first_segments("{gpu::Gpu, buffer::{View, ViewMut}, Error};"), ["gpu", "buffer", "Error"]);
}

#[test]
fn raw_builds_on_error_alone() {
    let edges = imports(&root().join("host/src"), &["crate::"]);
    let above: Vec<_> = edges.get("raw").into_iter().flatten().filter(|m| *m != "error").collect();
    assert!(above.is_empty(), "host/src/raw imports from the safe layer above it: {above:?}");
}

#[test]
fn the_checker_finds_a_circle() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(circle(&edges), Some(vec!["a".into(), "b".into(), "a".into()]));
    edges.get_mut("b").unwrap().clear();
    assert_eq!(circle(&edges), None);
}

#[test]
fn no_rust_file_is_over_400_lines() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > 400).then(|| format!("{} ({lines})", f.strip_prefix(root()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "files over 400 lines: {long:?}");
}
