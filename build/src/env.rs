//! Paths, toolchain files and the outer cargo's environment: the small
//! helpers `Builder` resolves its inputs with.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::BuildError;

/// The canonical path when it exists (cargo reports canonical manifest
/// paths), else the absolute one.
pub(crate) fn absolute(p: &Path) -> Result<PathBuf, BuildError> {
    p.canonicalize()
        .or_else(|_| std::path::absolute(p))
        .map_err(|source| BuildError::Io { what: format!("resolving {}", p.display()), source })
}

/// The `channel` of the nearest `rust-toolchain.toml` (or `rust-toolchain`)
/// in `dir` or above.
pub(crate) fn toolchain_file_channel(dir: &Path) -> Option<String> {
    let dir = std::path::absolute(dir).ok()?;
    for d in dir.ancestors() {
        for name in ["rust-toolchain.toml", "rust-toolchain"] {
            let Ok(text) = std::fs::read_to_string(d.join(name)) else { continue };
            return parse_channel(&text);
        }
    }
    None
}

/// `channel = "…"` of a toolchain file, or a bare toolchain name (the old
/// one-line format).
fn parse_channel(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("channel") {
            let v = rest.trim_start().strip_prefix('=')?.trim().trim_matches('"');
            return Some(v.to_string());
        }
    }
    let first = text.lines().next()?.trim();
    (!first.is_empty() && !first.starts_with('[') && !first.contains('=')).then(|| first.to_string())
}

/// Environment variables of the outer cargo that must not reach the inner one:
/// they describe the outer build (its compiler, flags, target, folders).
pub(crate) fn is_outer_build_var(key: &OsString) -> bool {
    let k = key.to_string_lossy();
    let keep = ["CARGO_HOME", "CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRIES_", "CARGO_REGISTRY_", "CARGO_TERM_"];
    if k.starts_with("CARGO") {
        return !keep.iter().any(|p| k.starts_with(p));
    }
    matches!(
        k.as_ref(),
        "RUSTC"
            | "RUSTC_WRAPPER"
            | "RUSTC_WORKSPACE_WRAPPER"
            | "RUSTDOC"
            | "RUSTFLAGS"
            | "RUSTDOCFLAGS"
            | "RUSTUP_TOOLCHAIN"
            | "OUT_DIR"
            | "TARGET"
            | "HOST"
            | "OPT_LEVEL"
            | "PROFILE"
            | "DEBUG"
            | "NUM_JOBS"
            | "RUSTC_LINKER"
            | "__CARGO_FIX_PLZ"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PINNED_TOOLCHAIN;

    #[test]
    fn channel_from_toolchain_files() {
        assert_eq!(
            parse_channel("[toolchain]\nchannel = \"nightly-2026-10-15\"\n").as_deref(),
            Some("nightly-2026-10-15")
        );
        assert_eq!(parse_channel("nightly-2025-01-01\n").as_deref(), Some("nightly-2025-01-01"));
        assert_eq!(parse_channel("[toolchain]\ncomponents = []\n"), None);
    }

    #[test]
    fn this_repository_pins_the_builders_toolchain() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(toolchain_file_channel(here).as_deref(), Some(PINNED_TOOLCHAIN));
    }

    #[test]
    fn outer_build_variables_are_dropped_and_network_settings_kept() {
        for k in [
            "CARGO",
            "CARGO_TARGET_DIR",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_MANIFEST_DIR",
            "RUSTC",
            "RUSTFLAGS",
            "OUT_DIR",
        ] {
            assert!(is_outer_build_var(&OsString::from(k)), "{k}");
        }
        for k in ["CARGO_HOME", "CARGO_NET_OFFLINE", "PATH", "HOME", "RUSTUP_HOME"] {
            assert!(!is_outer_build_var(&OsString::from(k)), "{k}");
        }
    }
}
