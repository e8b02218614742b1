//! The typed-kernel signature check: a module's manifest
//! (`gpukern_kernel_<name>`) and its PTX `.entry` parameter sizes against the
//! handle's parameter markers, with an error that names the parameter that
//! differs (its index, and its name where the handle knows it:
//! `KernelSig::PARAM_NAMES`, which `#[kernel]` fills in on the host side
//! only), the type the handle expects and the type the kernel takes.

use gpukern_device::kernel::{Param, ParamKind, KERNEL_MAGIC, KERNEL_VERSION};

/// How a parameter reads in a `#[kernel]` signature: `&[f32]`, `&mut [bf16]`, `u64`.
pub(crate) fn describe(kind: u32, elem: u32) -> String {
    const NAMES: [&str; 12] = ["f32", "f64", "u32", "i32", "u64", "i64", "u16", "i16", "u8", "i8", "bf16", "f16"];
    let t = match elem.checked_sub(1).and_then(|i| NAMES.get(i as usize)) {
        Some(t) => t.to_string(),
        None => format!("<element code {elem}>"),
    };
    match kind {
        k if k == ParamKind::In as u32 => format!("&[{t}]"),
        k if k == ParamKind::Out as u32 => format!("&mut [{t}]"),
        k if k == ParamKind::Scalar as u32 => t,
        k => format!("<parameter kind {k}> of {t}"),
    }
}

fn list(params: &[[u32; 2]]) -> String {
    params.iter().map(|p| describe(p[0], p[1])).collect::<Vec<_>>().join(", ")
}

/// Parameter `i`, by index and, where `names` has it, by name.
fn label(i: usize, names: &[&str]) -> String {
    match names.get(i) {
        Some(n) => format!("parameter {i} `{n}`"),
        None => format!("parameter {i}"),
    }
}

/// Whether a module's manifest bytes and the byte sizes of its `.entry`
/// parameters say what `params` (the handle's, named `names`) says; when
/// not, which parameter differs, what the handle expects and what the
/// module has.
pub(crate) fn check_signature(
    manifest: &[u8],
    params: &[Param],
    names: &[&str],
    entry: Result<Option<Vec<u32>>, String>,
) -> Result<(), String> {
    let words: Vec<u32> = manifest.as_chunks::<4>().0.iter().map(|w| u32::from_le_bytes(*w)).collect();
    let (version, count, rest) = match words[..] {
        [KERNEL_MAGIC, v, c, ref rest @ ..] => (v, c, rest),
        _ => return Err("its manifest is not a typed-kernel manifest (no gpukern magic word)".into()),
    };
    if version != KERNEL_VERSION {
        return Err(format!(
            "manifest version {version}, this library reads {KERNEL_VERSION}: rebuild the kernel crate against this gpukern-device"
        ));
    }
    let want: Vec<[u32; 2]> = params.iter().map(|p| p.words()).collect();
    let (pairs, odd) = rest.as_chunks::<2>();
    if !odd.is_empty() || pairs.len() != count as usize {
        return Err(format!("its manifest is malformed: {count} parameters declared, {} words follow", rest.len()));
    }
    if pairs.len() != want.len() {
        return Err(format!(
            "the kernel takes {} parameters ({}), this handle passes {} ({})",
            pairs.len(),
            list(pairs),
            want.len(),
            list(&want)
        ));
    }
    if let Some(i) = (0..want.len()).find(|&i| pairs[i] != want[i]) {
        return Err(format!(
            "{}: this handle expects `{}`, the kernel takes `{}`",
            label(i, names),
            describe(want[i][0], want[i][1]),
            describe(pairs[i][0], pairs[i][1])
        ));
    }
    // The PTX entry: two 8-byte slots per slice, the value's size per scalar.
    let sizes: Vec<(usize, u32)> = params
        .iter()
        .enumerate()
        .flat_map(|(i, p)| match p.kind {
            ParamKind::In | ParamKind::Out => vec![(i, 8), (i, 8)],
            ParamKind::Scalar => vec![(i, p.size)],
        })
        .collect();
    let found = match entry {
        Ok(Some(found)) => found,
        Ok(None) => return Err("the module has no such .entry".into()),
        Err(e) => return Err(format!("its PTX cannot be read: {e}")),
    };
    if let Some(k) = (0..sizes.len().min(found.len())).find(|&k| sizes[k].1 != found[k]) {
        let i = sizes[k].0;
        return Err(format!(
            "{} (`{}`): the PTX entry's slot {k} is {} bytes, the handle passes {}",
            label(i, names),
            describe(want[i][0], want[i][1]),
            found[k],
            sizes[k].1
        ));
    }
    if found.len() != sizes.len() {
        return Err(format!("the PTX entry takes {} parameter slots, the handle passes {}", found.len(), sizes.len()));
    }
    Ok(())
}
