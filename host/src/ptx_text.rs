//! What the host reads from a user module's PTX text, by tokens: the
//! `elementwise!` manifests it declares, the parameter sizes of a `.entry`,
//! the statements of an entry's body (`pdl::waits_first`). Comments and
//! string literals are dropped by the tokenizer, so nothing in them can
//! declare an entry, a manifest or an instruction; a name matches only as a
//! whole token, and an entry defined twice is refused rather than guessed.
//!
//! The driver has the last word on what the module holds (it resolves
//! functions and globals by exact name); these readers only check what the
//! text says about them, and fail closed on anything they do not understand.

/// One PTX token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A directive (`.entry`), an opcode (`ld.param.u64`, `cp.async.bulk.shared::cluster`),
    /// a name, a register or a number.
    Word(&'a str),
    /// A string literal (its contents are never read).
    Str,
    /// One other character: `( ) { } [ ] , ; : @ ! = + - < > |` …
    Punct(char),
}

/// Directives that end with their line instead of a `;`.
const LINE_DIRECTIVES: [&str; 5] = [".version", ".target", ".address_size", ".file", ".loc"];

fn word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

/// The tokens of `ptx`; an unterminated comment or string is an error.
pub(crate) fn tokens(ptx: &str) -> Result<Vec<Tok<'_>>, String> {
    let b = ptx.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            i = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p + 1);
        } else if b[i..].starts_with(b"/*") {
            let end = ptx[i + 2..].find("*/").ok_or("an unterminated /* comment")?;
            i += 2 + end + 2;
        } else if c == b'"' {
            let mut j = i + 1;
            loop {
                match b.get(j) {
                    None | Some(b'\n') => return Err("an unterminated string literal".into()),
                    Some(b'\\') => j += 2,
                    Some(b'"') => break,
                    Some(_) => j += 1,
                }
            }
            out.push(Tok::Str);
            i = j + 1;
        } else if word_char(c) {
            let start = i;
            // `::` belongs to the word (`.shared::cta`, `.L2::256B`); one `:` ends a label.
            while i < b.len() && (word_char(b[i]) || (b[i..].starts_with(b"::") && i + 2 < b.len())) {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            let w = &ptx[start..i];
            if LINE_DIRECTIVES.contains(&w) {
                // A directive that ends with its line (no `;`): dropped, with
                // its operands. Fail closed when the line holds more than that
                // (another statement, or a comment that would run past it).
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                let rest = ptx[i..end].split("//").next().unwrap_or("");
                if rest.contains(';') || rest.contains("/*") {
                    return Err(format!("`{w}` shares its line with other text"));
                }
                i = end;
            } else {
                out.push(Tok::Word(w));
            }
        } else {
            // A whole character (the text is UTF-8; PTX is ASCII, anything else
            // is one punctuation token that matches nothing).
            let ch = ptx[i..].chars().next().unwrap_or('\u{fffd}');
            out.push(Tok::Punct(ch));
            i += ch.len_utf8();
        }
    }
    Ok(out)
}

/// The index just past the bracket that closes the one at `open`.
fn close(toks: &[Tok<'_>], open: usize, (l, r): (char, char)) -> Result<usize, String> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if *t == Tok::Punct(l) {
            depth += 1;
        } else if *t == Tok::Punct(r) {
            depth -= 1;
            if depth == 0 {
                return Ok(k + 1);
            }
        }
    }
    Err(format!("an unbalanced `{l}`"))
}

/// A module-scope statement: its header, and its `{ … }` body (empty for a declaration).
type Statement<'t, 'a> = (&'t [Tok<'a>], &'t [Tok<'a>]);

/// The module-scope statements of a token list: each `;`-terminated
/// declaration, and each header with the `{ … }` body after it (as two
/// slices: header, body with its braces).
fn top_level<'t, 'a>(toks: &'t [Tok<'a>]) -> Result<Vec<Statement<'t, 'a>>, String> {
    let (mut out, mut start, mut k) = (Vec::new(), 0, 0);
    while k < toks.len() {
        match toks[k] {
            Tok::Punct(';') => {
                out.push((&toks[start..k], &toks[k..k]));
                k += 1;
                start = k;
            }
            Tok::Punct('{') => {
                let end = close(toks, k, ('{', '}'))?;
                out.push((&toks[start..k], &toks[k..end]));
                k = end;
                start = k;
            }
            Tok::Punct('}') => return Err("an unbalanced `}`".into()),
            _ => k += 1,
        }
    }
    Ok(out)
}

/// The names of the `gpukern_ew_<name>` manifests the module declares at
/// module scope in `.global` space, sorted, each once.
pub(crate) fn declared_ops(ptx: &str) -> Result<Vec<String>, String> {
    let toks = tokens(ptx)?;
    let mut ops: Vec<String> = top_level(&toks)?
        .into_iter()
        .filter(|(head, _)| head.contains(&Tok::Word(".global")))
        .filter_map(|(head, _)| {
            // The declared name: the first word that is not a directive or a number.
            head.iter().find_map(|t| match t {
                Tok::Word(w) if !w.starts_with('.') && !w.starts_with(|c: char| c.is_ascii_digit()) => Some(*w),
                _ => None,
            })
        })
        .filter_map(|name| name.strip_prefix("gpukern_ew_").map(String::from))
        .collect();
    ops.sort();
    ops.dedup();
    Ok(ops)
}

/// One `.entry` definition: its parameter list (inside the parentheses) and
/// its body (inside the braces).
pub(crate) struct Entry<'t, 'a> {
    pub(crate) params: &'t [Tok<'a>],
    pub(crate) body: &'t [Tok<'a>],
}

/// The definition of `.entry name` among `toks`: `Ok(None)` when there is
/// none, an error when there are two (a shadowed name is refused) or the
/// header is malformed.
pub(crate) fn entry<'t, 'a>(toks: &'t [Tok<'a>], name: &str) -> Result<Option<Entry<'t, 'a>>, String> {
    let mut found = None;
    for (head, body) in top_level(toks)? {
        let Some(at) = head.iter().position(|t| *t == Tok::Word(".entry")) else { continue };
        if head.get(at + 1) != Some(&Tok::Word(name)) || body.is_empty() {
            continue; // another entry, or a declaration without a body
        }
        if head.get(at + 2) != Some(&Tok::Punct('(')) {
            return Err(format!("`.entry {name}` has no parameter list"));
        }
        let end = close(head, at + 2, ('(', ')'))?;
        if found.is_some() {
            return Err(format!("`.entry {name}` is defined twice"));
        }
        found = Some(Entry { params: &head[at + 3..end - 1], body: &body[1..body.len() - 1] });
    }
    Ok(found)
}

/// The byte size of a PTX fundamental type directive (`.u64`, `.f16x2`, `.b8`, `.pred`…).
fn type_bytes(ty: &str) -> Option<u32> {
    let t = ty.strip_prefix('.')?;
    let (t, lanes) = t.strip_suffix("x2").map_or((t, 1), |t| (t, 2));
    let bits = t.strip_prefix("bf").or_else(|| t.strip_prefix(['b', 'u', 's', 'f']))?;
    let bits: u32 = bits.parse().ok()?;
    matches!(bits, 8 | 16 | 32 | 64).then_some(bits / 8 * lanes)
}

/// The byte size of each `.param` of `entry`, in order: the fundamental type
/// times the array length (`.param .align 8 .b8 p[16]` is 16 bytes); 0 for a
/// parameter whose size cannot be read.
pub(crate) fn param_sizes(entry: &Entry<'_, '_>) -> Vec<u32> {
    if entry.params.is_empty() {
        return Vec::new();
    }
    entry
        .params
        .split(|t| *t == Tok::Punct(','))
        .map(|p| {
            let Some(Tok::Word(".param")) = p.first() else { return 0 };
            let Some(size) = p.iter().find_map(|t| if let Tok::Word(w) = t { type_bytes(w) } else { None }) else {
                return 0;
            };
            match p.iter().position(|t| *t == Tok::Punct('[')) {
                Some(k) => match (p.get(k + 1), p.get(k + 2)) {
                    (Some(Tok::Word(n)), Some(Tok::Punct(']'))) => {
                        n.parse::<u32>().map_or(0, |n| size.saturating_mul(n))
                    }
                    _ => 0,
                },
                None => size,
            }
        })
        .collect()
}

/// The byte size of each parameter of `.entry name` in `ptx`; `Ok(None)` when
/// the module defines no such entry.
pub(crate) fn entry_params(ptx: &str, name: &str) -> Result<Option<Vec<u32>>, String> {
    let toks = tokens(ptx)?;
    Ok(entry(&toks, name)?.map(|e| param_sizes(&e)))
}

/// One statement of an entry's body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stmt<'a> {
    /// `name:`.
    Label,
    /// A directive (`.reg …;`, `.local …;`), by its first word.
    Directive(&'a str),
    /// An instruction: its opcode and whether a predicate guards it (`@%p1 bra …`).
    Instr { opcode: &'a str, guarded: bool },
    /// Anything else (fails every check that reads it).
    Other,
}

/// The statements of a body in order; scope braces are transparent.
pub(crate) fn statements<'a>(body: &[Tok<'a>]) -> Vec<Stmt<'a>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < body.len() {
        match (body[k], body.get(k + 1)) {
            (Tok::Punct('{' | '}' | ';'), _) => k += 1,
            (Tok::Word(_), Some(Tok::Punct(':'))) => {
                out.push(Stmt::Label);
                k += 2;
            }
            (first, _) => {
                let end = body[k..].iter().position(|t| *t == Tok::Punct(';')).map_or(body.len(), |p| k + p);
                let s = &body[k..end];
                out.push(match (first, s.get(1), s.get(2), s.get(3)) {
                    (Tok::Word(w), ..) if w.starts_with('.') => Stmt::Directive(w),
                    (Tok::Word(w), ..) => Stmt::Instr { opcode: w, guarded: false },
                    (Tok::Punct('@'), Some(Tok::Word(_)), Some(Tok::Word(op)), _)
                    | (Tok::Punct('@'), Some(Tok::Punct('!')), Some(Tok::Word(_)), Some(Tok::Word(op))) => {
                        Stmt::Instr { opcode: op, guarded: true }
                    }
                    _ => Stmt::Other,
                });
                k = end + 1;
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "ptx_text_tests.rs"]
mod tests;
