//! The commands: finding the toolchain and running the inner cargo.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::env::is_outer_build_var;
use crate::{Arch, BuildError, Network, TARGET};

/// The toolchain's library workspace (what `-Zbuild-std` resolves), from the sysroot.
pub(crate) const LIBRARY_MANIFEST: &str = "lib/rustlib/src/rust/library/Cargo.toml";

/// The cargo cache the inner cargo uses, for messages.
fn cargo_home() -> String {
    match std::env::var_os("CARGO_HOME") {
        Some(h) => PathBuf::from(h).display().to_string(),
        None => "~/.cargo".into(),
    }
}

/// An offline attempt's outcome.
struct Held {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    /// Whether cargo got past resolution (its stderr was then passed on live).
    resolved: bool,
    /// The stderr lines held back before that.
    held: Vec<String>,
}

impl Held {
    /// The failure was cargo's offline resolution or download failing for want
    /// of crates, before anything compiled.
    fn lacks_crates(&self) -> bool {
        !self.resolved && self.held.iter().any(|l| l.contains("--offline") || l.contains("offline mode"))
    }
}

/// Runs `c` with stderr held back until cargo starts compiling (then passed on
/// live); a failure before that leaves the held lines for the caller, who
/// prints them unless it retries.
fn run_held(mut c: Command) -> Result<Held, BuildError> {
    use std::io::{BufRead, Read};
    let mut child = c.stderr(Stdio::piped()).spawn().map_err(|e| BuildError::NoRustup(e.to_string()))?;
    let err = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let (mut resolved, mut held) = (false, Vec::new());
        for line in std::io::BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if resolved {
                eprintln!("{line}");
                continue;
            }
            let t = line.trim_start();
            if t.starts_with("Compiling ") || t.starts_with("Finished ") || t.starts_with("Fresh ") {
                resolved = true;
                for h in held.drain(..) {
                    eprintln!("{h}");
                }
                eprintln!("{line}");
            } else {
                held.push(line);
            }
        }
        (resolved, held)
    });
    let mut stdout = Vec::new();
    let read = child.stdout.take().expect("stdout is piped").read_to_end(&mut stdout);
    let status = child.wait().map_err(|e| BuildError::NoRustup(e.to_string()))?;
    read.map_err(|source| BuildError::Io { what: "reading cargo's output".into(), source })?;
    let (resolved, held) = reader.join().unwrap_or((false, Vec::new()));
    let attempt = Held { status, stdout, resolved, held };
    // Nothing to retry, or a success that printed only warnings: show them.
    if attempt.status.success() || !attempt.lacks_crates() {
        for h in &attempt.held {
            eprintln!("{h}");
        }
    }
    Ok(attempt)
}

/// `rustup` (or `$RUSTUP`).
fn rustup() -> Command {
    Command::new(std::env::var("RUSTUP").unwrap_or_else(|_| "rustup".into()))
}

/// `rustup run <toolchain> <program>`, with the outer build's variables removed.
fn rustup_run(toolchain: &str, program: &str) -> Command {
    let mut c = rustup();
    c.args(["run", toolchain, program]);
    for (k, _) in std::env::vars_os() {
        if is_outer_build_var(&k) {
            c.env_remove(k);
        }
    }
    c
}

/// Checks that `toolchain` is installed with `rust-src` and
/// `llvm-bitcode-linker`; returns its sysroot.
pub(crate) fn check_toolchain(toolchain: &str) -> Result<PathBuf, BuildError> {
    let rustup = rustup().arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if let Err(e) = rustup {
        return Err(BuildError::NoRustup(e.to_string()));
    }
    let out = rustup_run(toolchain, "rustc")
        .args(["--print", "sysroot"])
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| BuildError::NoRustup(e.to_string()))?;
    if !out.status.success() {
        return Err(BuildError::ToolchainMissing { toolchain: toolchain.to_string() });
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    check_sysroot(&sysroot, toolchain)?;
    Ok(sysroot)
}

/// The components of a sysroot that the PTX build needs.
pub(crate) fn check_sysroot(sysroot: &Path, toolchain: &str) -> Result<(), BuildError> {
    let core = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
    if !core.is_file() {
        return Err(BuildError::ComponentMissing {
            toolchain: toolchain.into(),
            component: "rust-src",
            why: format!("no {}; -Zbuild-std=core compiles core from it", core.display()),
        });
    }
    // rustc links nvptx64 code with llvm-bitcode-linker, under the host's
    // rustlib folder (bin/ or bin/self-contained/).
    let rustlib = sysroot.join("lib/rustlib");
    let found = std::fs::read_dir(&rustlib).into_iter().flatten().flatten().any(|host| {
        let bin = host.path().join("bin");
        bin.join("llvm-bitcode-linker").is_file() || bin.join("self-contained/llvm-bitcode-linker").is_file()
    });
    if !found {
        return Err(BuildError::ComponentMissing {
            toolchain: toolchain.into(),
            component: "llvm-bitcode-linker",
            why: format!("no llvm-bitcode-linker under {}; rustc links nvptx64 code with it", rustlib.display()),
        });
    }
    Ok(())
}

/// Builds one module; returns the PTX file cargo wrote and the sources it read.
///
/// With [`Network::Auto`], the offline attempt's stderr is held back until
/// cargo is past resolution (its first `Compiling`/`Finished` line): a
/// resolution failure for want of crates is then retried with the network,
/// without the confusing offline error on the screen.
pub(crate) fn cargo_build(
    krate: &Path,
    toolchain: &str,
    sysroot: &Path,
    arch: Arch,
    target_dir: &Path,
    network: Network,
    lints: &[&str],
) -> Result<(PathBuf, Vec<PathBuf>), BuildError> {
    // `cargo rustc` hands the flags after `--` to the kernel crate's own
    // compilation only (core and the dependencies keep their `unsafe`).
    let subcommand = if lints.is_empty() { "build" } else { "rustc" };
    let command = |offline: bool| {
        let mut c = rustup_run(toolchain, "cargo");
        c.current_dir(krate)
            .args([subcommand, "--release", "--lib", "-Zbuild-std=core", "--target", TARGET])
            .arg("--manifest-path")
            .arg(krate.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir)
            .arg("--message-format=json-render-diagnostics")
            // The arch's flags, and nothing else: they replace .cargo/config.toml's.
            .env("CARGO_ENCODED_RUSTFLAGS", arch.rustflags().join("\u{1f}"))
            .stdout(Stdio::piped());
        if offline {
            c.arg("--offline");
        }
        if !lints.is_empty() {
            c.arg("--").args(lints);
        }
        c
    };
    let failed = |status: std::process::ExitStatus| BuildError::Cargo {
        krate: krate.into(),
        arch: arch.name(),
        status: status.to_string(),
        hint: if lints.is_empty() { "" } else { crate::error::FORBID_HINT },
    };
    let stdout = if network == Network::Online {
        let out = command(false).stderr(Stdio::inherit()).output().map_err(|e| BuildError::NoRustup(e.to_string()))?;
        if !out.status.success() {
            return Err(failed(out.status));
        }
        out.stdout
    } else {
        let attempt = run_held(command(true))?;
        if attempt.status.success() {
            attempt.stdout
        } else if !attempt.lacks_crates() {
            return Err(failed(attempt.status));
        } else if network == Network::Offline {
            for h in &attempt.held {
                eprintln!("{h}");
            }
            return Err(BuildError::OfflineCacheMissing {
                krate: krate.into(),
                arch: arch.name(),
                toolchain: toolchain.into(),
                cargo_home: cargo_home(),
                library: sysroot.join(LIBRARY_MANIFEST),
            });
        } else {
            eprintln!(
                "gpukern-build: the cargo cache ({}) lacks crates that -Zbuild-std=core resolves (the toolchain's library workspace); fetching them once",
                cargo_home()
            );
            let out =
                command(false).stderr(Stdio::inherit()).output().map_err(|e| BuildError::NoRustup(e.to_string()))?;
            if !out.status.success() {
                return Err(failed(out.status));
            }
            out.stdout
        }
    };
    let manifest = krate.join("Cargo.toml");
    let mut ptx = None;
    for line in String::from_utf8_lossy(&stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v["reason"] != "compiler-artifact" || v["manifest_path"].as_str().map(Path::new) != Some(manifest.as_path())
        {
            continue;
        }
        let files = v["filenames"].as_array().cloned().unwrap_or_default();
        ptx = files.iter().filter_map(|f| f.as_str()).find(|f| f.ends_with(".ptx")).map(PathBuf::from).or(ptx);
    }
    let ptx = ptx.ok_or_else(|| BuildError::NoPtx(krate.into()))?;
    let sources = dep_info(&ptx.with_extension("d"));
    Ok((ptx, sources))
}

/// The sources listed in a dep-info file (`target: src1 src2 …`), without the
/// toolchain's own (core's sources do not change under a pinned toolchain).
fn dep_info(path: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let Some((_, deps)) = text.lines().next().and_then(|l| l.split_once(": ")) else { return Vec::new() };
    // Spaces inside paths are escaped as `\ `.
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = deps.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out.retain(|p| !p.components().any(|c| c.as_os_str() == "rustlib"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sysroot_without_rust_src_names_the_component() {
        let dir = tempfile::tempdir().unwrap();
        let e = check_sysroot(dir.path(), "nightly-x").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("rust-src") && msg.contains("rustup component add rust-src --toolchain nightly-x"),
            "{msg}"
        );
    }

    #[test]
    fn a_sysroot_without_the_bitcode_linker_names_the_component() {
        let dir = tempfile::tempdir().unwrap();
        let core = dir.path().join("lib/rustlib/src/rust/library/core");
        std::fs::create_dir_all(&core).unwrap();
        std::fs::write(core.join("Cargo.toml"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("lib/rustlib/x86_64-unknown-linux-gnu/bin")).unwrap();
        let msg = check_sysroot(dir.path(), "nightly-x").unwrap_err().to_string();
        assert!(msg.contains("rustup component add llvm-bitcode-linker --toolchain nightly-x"), "{msg}");
    }

    #[cfg(unix)]
    #[test]
    fn only_a_failure_before_compiling_that_names_offline_mode_is_retried() {
        use std::os::unix::process::ExitStatusExt;
        let held = |resolved: bool, lines: &[&str]| Held {
            status: std::process::ExitStatus::from_raw(101 << 8),
            stdout: Vec::new(),
            resolved,
            held: lines.iter().map(|l| l.to_string()).collect(),
        };
        let offline = [
            "error: no matching package named `rustc-literal-escaper` found",
            "note: offline mode (via `--offline`) can sometimes cause surprising resolution failures",
        ];
        assert!(held(false, &offline).lacks_crates());
        assert!(held(false, &["error: attempting to make an HTTP request, but --offline was specified"]).lacks_crates());
        assert!(!held(true, &offline).lacks_crates(), "a compile error after resolution is not retried");
        assert!(!held(false, &["error: failed to parse manifest"]).lacks_crates());
    }

    #[test]
    fn dep_info_lists_sources_and_unescapes_spaces() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("k.d");
        std::fs::write(&d, "/t/k.ptx: /a/src/lib.rs /b/my\\ dir/x.rs /r/lib/rustlib/src/rust/library/core/src/lib.rs\n\n/a/src/lib.rs:\n")
            .unwrap();
        assert_eq!(dep_info(&d), vec![PathBuf::from("/a/src/lib.rs"), PathBuf::from("/b/my dir/x.rs")]);
    }
}
