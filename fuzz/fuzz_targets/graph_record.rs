//! The graph builder's record-time checks on slots from the input: never a
//! panic, and an operation passes exactly when its slots are the builder's,
//! the output is writable, the lengths are equal and the output overlaps no
//! input. Slots come from real views, so addresses and lengths stay within a
//! 48-bit address space here too.
#![no_main]

use gpukern::fuzzing::{check_record, SlotParts};
use gpukern::{BinaryOp, OpKind, UnaryOp};
use libfuzzer_sys::fuzz_target;

fn slot(b: &[u8]) -> SlotParts {
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    SlotParts {
        builder: (b[0] % 3) as u64,
        addr: word(1) & ((1 << 44) - 1) & !3,
        len: (word(9) & ((1 << 30) - 1)) as usize % if b[17] & 1 == 0 { 64 } else { 1 << 30 },
        writable: b[17] & 2 != 0,
    }
}

fuzz_target!(|data: &[u8]| {
    const SLOT: usize = 18;
    let Some((&sel, rest)) = data.split_first() else { return };
    if rest.len() < 3 * SLOT {
        return;
    }
    let (a, b, out) = (slot(&rest[..SLOT]), slot(&rest[SLOT..2 * SLOT]), slot(&rest[2 * SLOT..3 * SLOT]));
    let kind = match sel % 3 {
        0 => OpKind::Binary(BinaryOp::Add),
        1 => OpKind::Unary(UnaryOp::Neg),
        _ => OpKind::Axpby,
    };
    let b = (kind.inputs() == 2).then_some(b);
    let id = 1;
    let r = check_record(id, kind, a, b, out);
    let bytes = |s: &SlotParts| s.addr..s.addr + 4 * s.len as u64;
    let o = bytes(&out);
    let overlap = [Some(a), b].iter().flatten().any(|s| {
        let r = bytes(s);
        r.start < o.end && o.start < r.end && !o.is_empty()
    });
    let ok = [Some(a), b, Some(out)].iter().flatten().all(|s| s.builder == id)
        && out.writable
        && a.len == out.len
        && b.is_none_or(|b| b.len == out.len)
        && !overlap;
    assert_eq!(r.is_ok(), ok, "{r:?}: {a:?} {b:?} {out:?}");
});
