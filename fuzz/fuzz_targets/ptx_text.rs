//! PTX text in, the host's readers over it: no panic, and what they answer is
//! consistent (a wait is found only in an entry that exists; an entry whose
//! parameters were read is found again the same when the text is wrapped in
//! comments that mention it).
#![no_main]

use gpukern::fuzzing::{declared_ops, entry_params, waits_first};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `name \0 ptx`, or the whole input as PTX with a fixed name.
    let (name, ptx) = match data.iter().position(|&b| b == 0) {
        Some(k) => (&data[..k], &data[k + 1..]),
        None => (&b"k_pdl"[..], data),
    };
    let (Ok(name), Ok(ptx)) = (std::str::from_utf8(name), std::str::from_utf8(ptx)) else { return };
    let ops = declared_ops(ptx);
    if let Ok(ops) = &ops {
        assert!(ops.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
    }
    let params = entry_params(ptx, name);
    let waits = waits_first(ptx, name);
    if waits {
        assert!(matches!(params, Ok(Some(_))), "a wait in an entry the reader does not find");
    }
    // A comment that claims another entry changes nothing (for a name that is
    // a PTX identifier: another name could close the comment itself).
    let ident = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    if !ident {
        return;
    }
    let forged = format!("// .entry {name}(.param .u64 x)\n{{ griddepcontrol.wait; }}\n{ptx}\n/* .entry {name}( */\n");
    if let Ok(p) = &params {
        assert_eq!(&entry_params(&forged, name), &Ok(p.clone()), "a comment changed the entry");
        assert_eq!(waits_first(&forged, name), waits, "a comment changed the wait");
    }
});
