//! Collects the kernel-crate code of the book (every Rust block of
//! `docs/src/*.md` and of the README whose first line is
//! `// kernels/src/lib.rs`) into `$OUT_DIR/book_kernels.rs`, each block in a
//! module of its own, so the chapters' kernel code is compiled as a real
//! crate: for the host here, for nvptx64 in `build/tests/book_kernels.rs`.
//! The block that holds the crate's attributes (`#![no_std]`) must be the
//! first lines of `src/lib.rs`, word for word.

use std::path::{Path, PathBuf};

const MARK: &str = "// kernels/src/lib.rs";

/// The Rust blocks of a Markdown file whose first line is [`MARK`], with
/// rustdoc's hidden-line prefix (`# `) removed.
fn kernel_blocks(md: &str) -> Vec<String> {
    let (mut blocks, mut cur): (Vec<String>, Option<(bool, Vec<&str>)>) = (Vec::new(), None);
    for line in md.lines() {
        let t = line.trim_start();
        match cur.as_mut() {
            None if t.starts_with("```") => cur = Some((t[3..].trim().starts_with("rust"), Vec::new())),
            None => {}
            Some((rust, lines)) if t.starts_with("```") => {
                if *rust && lines.first().is_some_and(|l| l.trim() == MARK) {
                    let code: Vec<&str> = lines
                        .iter()
                        .map(|l| if l.trim() == "#" { "" } else { l.strip_prefix("# ").unwrap_or(l) })
                        .collect();
                    blocks.push(code.join("\n"));
                }
                cur = None;
            }
            Some((_, lines)) => lines.push(line),
        }
    }
    blocks
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let src = here.join("../src");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.push(here.join("../../README.md"));
    println!("cargo:rerun-if-changed={}", src.display());
    let lib = std::fs::read_to_string(here.join("src/lib.rs")).unwrap();
    let (mut out, mut seen, mut header) = (String::new(), Vec::new(), false);
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let md = std::fs::read_to_string(f).unwrap_or_default();
        for block in kernel_blocks(&md) {
            if block.contains("#![no_std]") {
                assert!(
                    lib.starts_with(&block),
                    "{}: the crate-attribute block is not src/lib.rs's first lines",
                    f.display()
                );
                header = true;
            } else if !seen.contains(&block) {
                let name = Path::new(f).file_stem().unwrap().to_string_lossy().replace(['-', '.'], "_").to_lowercase();
                let m = format!("{name}_{}", seen.len());
                out += &format!("#[allow(unused_imports, dead_code)]\nmod {m} {{\n{block}\n}}\n#[allow(unused_imports)]\npub use {m}::*;\n\n");
                seen.push(block);
            }
        }
    }
    assert!(header, "no chapter holds the kernel crate's attribute block");
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("book_kernels.rs"), out).unwrap();
}
