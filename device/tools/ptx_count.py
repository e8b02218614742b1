"""Instruction counts of the math sweep kernels: python3 ptx_count.py FILE.ptx [NAME...]
(default: every `math_*` entry). Counts the instruction lines of the first
(32-bit index) loop of each entry, all its blocks (both sides of a branch, a
cold call's block), less the `mov` of immediates that ptxas folds into the
FMAs; then subtracts the loop's own overhead, measured on `math_sqrt` (whose
function is the one `sqrt.rn.f32`), so the figure is the function's own."""
import re
import sys


def entry(ptx, name):
    m = re.search(r"^\.visible \.entry " + re.escape(name) + r"\(", ptx, re.M)
    if not m:
        return None
    i = ptx.index("{", m.end())
    depth, j = 0, i
    while True:
        depth += ptx[j] == "{"
        depth -= ptx[j] == "}"
        j += 1
        if depth == 0:
            return ptx[i:j]


def blocks(body):
    """(label, header comment, instruction lines) per basic block."""
    out, cur = [], None
    lines = body.splitlines()
    for k, l in enumerate(lines):
        s = l.strip()
        m = re.match(r"(\$L__BB\d+_\d+):|// (%bb\.\d+):", s)
        if m:
            note = s + (" " + lines[k + 1].strip() if k + 1 < len(lines) else "")
            cur = [m.group(1) or m.group(2), note, []]
            out.append(cur)
        elif cur and s.endswith(";") and not s.startswith((".", "//")):
            cur[2].append(s)
    return out


MOVI = re.compile(r"mov\.[bfus]32\s+%\w+,\s*(0[fF][0-9a-fA-F]{8}|-?\d+);")


def loop_count(body):
    bs = blocks(body)
    hdr = next(b for b in bs if "Inner Loop Header" in b[1])
    name = hdr[0].lstrip("$L__")
    inl = [b for b in bs if b is hdr or f"Header={name}" in b[1]]
    ins = [l for b in inl for l in b[2] if not MOVI.match(l) and not l.startswith(("st.param", "ld.param"))]
    bra = sum(1 for l in ins if re.match(r"(@!?%p\d+ )?bra", l))
    return len(ins), bra, len(inl)


ptx = open(sys.argv[1]).read()
names = sys.argv[2:] or re.findall(r"^\.visible \.entry (math_\w+)\(", ptx, re.M)
base = loop_count(entry(ptx, "math_sqrt"))[0] - 1
for n in names:
    b = entry(ptx, n)
    if b is None:
        print(f"{n}: not found")
        continue
    t, bra, nb = loop_count(b)
    print(f"{n}: {t - base} instructions ({nb} blocks, {bra} branches incl. the loop's)")
