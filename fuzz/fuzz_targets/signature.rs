//! A typed kernel's manifest bytes, the handle's parameters and the entry's
//! sizes, all from the input: the check never panics, and it passes exactly
//! when the manifest is the handle's words and the entry its sizes.
#![no_main]

use gpukern::fuzzing::check_signature;
use gpukern_device::kernel::{Param, ParamKind, KERNEL_MAGIC, KERNEL_VERSION};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&np, rest)) = data.split_first() else { return };
    // Up to 8 parameters, two bytes each: kind, element code.
    let np = (np % 9) as usize;
    if rest.len() < 2 * np + 1 {
        return;
    }
    let (pbytes, rest) = rest.split_at(2 * np);
    let params: Vec<Param> = pbytes
        .chunks(2)
        .map(|c| {
            let kind = match c[0] % 3 {
                0 => ParamKind::In,
                1 => ParamKind::Out,
                _ => ParamKind::Scalar,
            };
            let elem = (c[1] % 14) as u32;
            Param { kind, elem, size: [1, 2, 4, 8][(c[1] / 14 % 4) as usize] }
        })
        .collect();
    let (&mode, rest) = rest.split_first().unwrap_or((&0, &[]));
    let want: Vec<u32> =
        [KERNEL_MAGIC, KERNEL_VERSION, np as u32].into_iter().chain(params.iter().flat_map(|p| p.words())).collect();
    let sizes: Vec<u32> = params
        .iter()
        .flat_map(|p| match p.kind {
            ParamKind::In | ParamKind::Out => vec![8, 8],
            ParamKind::Scalar => vec![p.size],
        })
        .collect();
    // The manifest: the right words with bytes of the input written over a
    // prefix (mode & 1), or the input's bytes alone.
    let mut manifest: Vec<u8> = want.iter().flat_map(|w| w.to_le_bytes()).collect();
    if mode & 1 == 0 {
        let k = rest.len().min(manifest.len());
        manifest[..k].copy_from_slice(&rest[..k]);
        if mode & 4 != 0 {
            manifest.extend_from_slice(rest);
        }
    } else {
        manifest = rest.to_vec();
    }
    let entry = match mode >> 3 & 3 {
        0 => Ok(Some(sizes.clone())),
        1 => Ok(Some(rest.iter().map(|&b| b as u32 % 10).collect())),
        2 => Ok(None),
        _ => Err("unreadable".to_string()),
    };
    let entry_ok = matches!(&entry, Ok(Some(e)) if *e == sizes);
    let r = check_signature(&manifest, &params, entry);
    let manifest_ok = manifest.len() / 4 == want.len()
        && manifest
            .chunks(4)
            .zip(&want)
            .all(|(c, w)| c.len() < 4 || u32::from_le_bytes([c[0], c[1], c[2], c[3]]) == *w);
    assert_eq!(r.is_ok(), manifest_ok && entry_ok, "{r:?} for {params:?}");
    if let Err(e) = r {
        assert!(!e.is_empty());
    }
});
