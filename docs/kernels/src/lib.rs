// kernels/src/lib.rs
#![no_std]
// Every nightly feature a kernel crate can need, on the device build only:
// `abi_ptx` for entry points (`elementwise!`, `#[kernel]`, hand-written
// `extern "ptx-kernel"`), `asm_experimental_arch` for `static_shared!` and
// any inline PTX of your own. The host build needs none (stable Rust).
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]
#[cfg(not(target_arch = "nvptx64"))]
extern crate std; // the host build of the cdylib uses std's panic handler

// The book's kernel crate. The lines above are the chapter "Writing your own
// kernels"'s first block, word for word (build.rs checks it); the rest is
// every `// kernels/src/lib.rs` block of docs/src and of the README, each in
// a module of its own, re-exported here (build.rs writes them).
include!(concat!(env!("OUT_DIR"), "/book_kernels.rs"));
