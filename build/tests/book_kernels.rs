//! The book's kernel code on the device: `docs/kernels`, the crate made of
//! every `// kernels/src/lib.rs` block of the chapters (`docs/src`) and the
//! README, compiled to both PTX modules, so a chapter's kernel bodies (which
//! the host build of a kernel crate does not compile) cannot rot.

use std::path::Path;

use gpukern_build::{Arch, Builder, PINNED_TOOLCHAIN};

#[test]
fn the_books_kernel_crate_compiles_to_both_modules() {
    let krate = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/kernels").canonicalize().unwrap();
    // A target folder kept between runs (build-std's core is built once).
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("book-kernels");
    let out = tempfile::tempdir().unwrap();
    // SAFETY: the book's kernel crate declares manifests only through
    // `elementwise!` and `#[kernel]`; its unsafe blocks (block collectives
    // called by every thread, shared-memory slots inside the tile, a
    // hand-written entry that writes below `n`) each argue their contract in
    // the chapter that shows them. It is compiled, never loaded here.
    let builder = unsafe { Builder::new(&krate).trust_unsafe_code() };
    let built = builder
        .arch(Arch::Sm70)
        .arch(Arch::Sm90)
        .target_dir(&target)
        .out_dir(out.path())
        .toolchain(PINNED_TOOLCHAIN)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.len(), 2);
    let (sm70, sm90) = (&built[0], &built[1]);
    // Each chapter's kernels, in both modules (the hand-written one is
    // under no cfg of its own, so it is in both too).
    let entries = [
        "my_silu_f32x4",
        "my_silu_bf16x8",
        "relu_axpy_f32x4",
        "relu_axpy_bf16",
        "book_fill_index",
        "scale",
        "block_sum",
        "gelu_bf16",
        "block_prefix",
        "reverse_256",
    ];
    for name in entries {
        for b in &built {
            assert!(b.ptx().contains(&format!(".visible .entry {name}(")), "{name} missing in {}", b.arch().name());
        }
    }
    for manifest in
        ["gpukern_ew_my_silu", "gpukern_ew_relu_axpy", "gpukern_kernel_block_sum", "gpukern_kernel_reverse_256"]
    {
        assert!(sm70.ptx().contains(manifest), "{manifest} missing");
    }
    // `#[kernel(pdl)]` and the element-wise twins exist in the sm_90 module only.
    assert!(sm90.ptx().contains("gpukern_pdl_block_sum") && !sm70.ptx().contains("gpukern_pdl_block_sum"));
    assert!(sm90.ptx().contains(".visible .entry my_silu_f32x4_pdl("));
    // The static shared tile of the shared-memory chapter.
    assert!(sm70.ptx().contains(".shared .align 16 .b8 BOOK_TILE[1024]"), "BOOK_TILE missing");
}
