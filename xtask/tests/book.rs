//! The book cannot rot silently: every chapter of `docs/src` is listed in
//! `SUMMARY.md` and compiled as a doctest (named in `host/src/lib.rs`'s
//! `chapters!` or included by `candle/src/lib.rs`), and the README and
//! ARCHITECTURE.md keep their size limits.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn every_chapter_is_in_the_summary_and_compiled() {
    let summary = read("docs/src/SUMMARY.md");
    let doctests = read("host/src/lib.rs") + &read("candle/src/lib.rs");
    let mut chapters = 0;
    for e in std::fs::read_dir(root().join("docs/src")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".md") || name == "SUMMARY.md" {
            continue;
        }
        chapters += 1;
        assert!(summary.contains(&format!("({name})")), "docs/src/{name} is not in SUMMARY.md");
        assert!(
            doctests.contains(&format!("\"{name}\"")) || doctests.contains(&format!("docs/src/{name}\"")),
            "docs/src/{name} is not compiled: add it to `chapters!` in host/src/lib.rs"
        );
    }
    assert!(chapters >= 10, "only {chapters} chapters found");
}

#[test]
fn the_readme_and_architecture_stay_short() {
    for (file, max) in [("README.md", 15_000), ("ARCHITECTURE.md", 20_000)] {
        let n = read(file).chars().count();
        assert!(n <= max, "{file} has {n} characters, more than {max}: move detail to the book or results/");
    }
}
