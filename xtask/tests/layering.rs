//! The layering the ARCHITECTURE promises, checked on the sources: no import
//! circle between the modules of `gpukern` (host) and of the benches, `raw`
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

/// Edges `module → module` from every path to a sibling module in the
/// sources under `src` (`crate::x`, or for a folder module `crate::folder::x`
/// and `super::x`). Comments are skipped: a doc link to the module that
/// measures a table is a pointer for the reader, not an import.
fn imports(src: &Path, prefixes: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let from = module_of(src, &f);
        let text: String = std::fs::read_to_string(&f)
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let hits = prefixes.iter().flat_map(|p| text.match_indices(p).map(move |(i, _)| (i, p.len())));
        for (i, len) in hits {
            if i > 0 && text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `kernels_gpu::…` or `$crate::` are other crates
            }
            let rest = &text[i + len..];
            let to: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let is_module = src.join(format!("{to}.rs")).exists() || src.join(&to).is_dir();
            if is_module && to != from {
                edges.entry(from.clone()).or_default().insert(to);
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
fn no_import_circle_in_the_host_or_the_benches() {
    let folders: [(&str, &[&str]); 4] = [
        ("host/src", &["crate::"]),
        ("candle/src", &["crate::"]),
        ("benches/src", &["crate::"]),
        ("benches/src/report", &["crate::report::", "super::"]),
    ];
    for (krate, prefixes) in folders {
        let edges = imports(&root().join(krate), prefixes);
        assert_eq!(circle(&edges), None, "{krate}: modules import each other in a circle");
    }
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
