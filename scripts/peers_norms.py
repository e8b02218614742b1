"""torch's row norms and softmax for the report's `norms` section
(`peers.py --norms f32,f16,bf16`), all in one run.

For each dtype and shape (rows x cols, reduced along cols) it times:
- torch.neg(x, out=y) over the op's bytes (read x, write y; for add_rms_norm a
  tensor of twice the elements, so that neg moves the same bytes);
- eager: F.rms_norm(x, (k,), w, 1e-6), F.layer_norm(x, (k,), w, b, 1e-5),
  torch.softmax(x, -1, out=y), torch.log_softmax(x, -1, out=y), and
  add_rms_norm as torch.add(x, r, out=h) then F.rms_norm(h, (k,), w, 1e-6)
  (two kernels). F.rms_norm and F.layer_norm take no out=; their outputs come
  from torch's caching allocator;
- torch.compile of each (default mode, dynamic=False, compiled anew per shape,
  three warm-up calls; inductor fuses add_rms_norm into one kernel). A failure
  (no triton, a compile error) gives compiled_us null and its reason;
- for the small shapes, a chain of 16 dependent calls (each output the next
  input, outputs preallocated where torch takes out=), eager and as one
  torch.cuda.CUDAGraph replay: us per call.

bytes counts what the op must move: 2 * rows * cols * element size (read x,
write y; w and b are negligible), 4 * rows * cols * size for add_rms_norm
(read x and r, write h and y).

Timing, like peers.py: CUDA events around one call (or one chain, or one
replay) queued behind a spin (torch.cuda._sleep) three times as long as the
host takes to queue it (50 us to 2 ms), so the events time the GPU; median of
200/60/25 calls as the bytes grow. Fresh random inputs (randn) rotate through
disjoint sets, one rotation shared by all the timings of a shape, that together
span at least 4x the L2, so no timed call finds its input in L2; the chains
reuse one set (L2 warm, as the report's chains do).

Each eager result (on the first set, before timing) is compared with an f64
reference written from the formula on the same inputs: max_rel_err_vs_f64 is
the largest |got - ref| / |ref| over elements with ref != 0 (add_rms_norm: over
h and y), max_abs_err_vs_f64 the largest |got - ref|. Where an op cancels
(layer_norm's w * xhat + b near 0) the relative figure comes from outputs
near zero; the absolute one shows the scale. A non-finite error is
written as a string ("nan", "inf"), since JSON has no such numbers.
"""
import contextlib
import importlib.util
import math
import os
import statistics
import sys
import time
import types

import torch
import torch.nn.functional as F

SHAPES = [(1, 4096), (8, 4096), (64, 8192), (4096, 1024), (4096, 4096), (16384, 4096),
          (1024, 16384), (256, 65536), (64, 262144), (3000, 5120), (32768, 4096), (8192, 8192)]
SMALL = {(1, 4096), (8, 4096)}
CHAIN = 16
RMS_EPS = 1e-6
LN_EPS = 1e-5
TYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _add_rms_eager(x, r, w, b, h, y):
    torch.add(x, r, out=h)
    return h, F.rms_norm(h, (h.shape[-1],), w, RMS_EPS)


def _add_rms_plain(x, r, w, b):
    h = x + r
    return h, F.rms_norm(h, (h.shape[-1],), w, RMS_EPS)


def _add_layer_eager(x, r, w, b, h, y):
    torch.add(x, r, out=h)
    return h, F.layer_norm(h, (h.shape[-1],), w, b, LN_EPS)


def _add_layer_plain(x, r, w, b):
    h = x + r
    return h, F.layer_norm(h, (h.shape[-1],), w, b, LN_EPS)


# Eager calls: f(x, r, w, b, h, y) -> the outputs (add_rms_norm: h, y), written
# into h and y where torch takes out=.
EAGER = {
    "rms_norm": lambda x, r, w, b, h, y: (F.rms_norm(x, (x.shape[-1],), w, RMS_EPS),),
    "layer_norm": lambda x, r, w, b, h, y: (F.layer_norm(x, (x.shape[-1],), w, b, LN_EPS),),
    "softmax": lambda x, r, w, b, h, y: (torch.softmax(x, -1, out=y),),
    "log_softmax": lambda x, r, w, b, h, y: (torch.log_softmax(x, -1, out=y),),
    "add_rms_norm": _add_rms_eager,
    "add_layer_norm": _add_layer_eager,
}
# The same ops as plain functions, what torch.compile is given.
PLAIN = {
    "rms_norm": lambda x, r, w, b: F.rms_norm(x, (x.shape[-1],), w, RMS_EPS),
    "layer_norm": lambda x, r, w, b: F.layer_norm(x, (x.shape[-1],), w, b, LN_EPS),
    "softmax": lambda x, r, w, b: torch.softmax(x, -1),
    "log_softmax": lambda x, r, w, b: torch.log_softmax(x, -1),
    "add_rms_norm": _add_rms_plain,
    "add_layer_norm": _add_layer_plain,
}
# How many rows x cols tensors each op reads (and writes): bytes = 2 * this * rows * cols * size.
STREAMS = {"rms_norm": 1, "layer_norm": 1, "softmax": 1, "log_softmax": 1, "add_rms_norm": 2, "add_layer_norm": 2}


def norms_rows(dtypes, shapes, dev, l2, clock_khz, compile=True):
    """The section's rows (see the module's docstring) for `dtypes` ("f32,bf16")
    and `shapes` ([(rows, cols)]), on device `dev` with `l2` bytes of L2."""
    compile_error = None if importlib.util.find_spec("triton") else "triton is not installed"
    if not compile:
        compile_error = "not run (--norms-no-compile)"
    rows = []
    with _stdout_to_stderr():
        _check_softmax_out(dev)
        for name in [d for d in dtypes.split(",") if d]:
            if name not in TYPES:
                raise SystemExit(f"--norms: unknown dtype {name!r} (f32, f16, bf16)")
            for m, k in shapes:
                rows += _shape_rows(name, TYPES[name], m, k, dev, l2, clock_khz, compile_error)
                torch.cuda.empty_cache()  # the shape's buffers went with _shape_rows
    return rows


def _shape_rows(name, dt, m, k, dev, l2, clock_khz, compile_error):
    size = torch.tensor([], dtype=dt).element_size()
    least = 2 * m * k * size  # the fewest bytes one timed call moves
    # Capped for tiny custom shapes (the section's smallest needs 12,800 sets of 16 KiB on a 50 MiB L2).
    count = max(1, min(1 << 15, -(-4 * l2 // least)))
    # Set i: x = xr[i, 0], r = xr[i, 1], h = hy[i, 0], y = hy[i, 1]; xr[i] and
    # hy[i] are neg's input and output at add_rms_norm's bytes.
    xr = torch.randn(count, 2, m, k, device=dev, dtype=dt)
    hy = torch.empty(count, 2, m, k, device=dev, dtype=dt)
    w = torch.randn(k, device=dev, dtype=dt)
    b = torch.randn(k, device=dev, dtype=dt)
    sets = [types.SimpleNamespace(x=xr[i, 0], r=xr[i, 1], h=hy[i, 0], y=hy[i, 1], xr=xr[i], hy=hy[i], w=w, b=b)
            for i in range(count)]
    rot = _Rotation(sets)
    neg = {1: _median_us(lambda: _neg(rot(), "x", "y"), _reps(least), clock_khz),
           2: _median_us(lambda: _neg(rot(), "xr", "hy"), _reps(2 * least), clock_khz)}
    rows = []
    for op, eager in EAGER.items():
        nbytes = 2 * STREAMS[op] * m * k * size
        reps = _reps(nbytes)
        s0 = sets[0]
        got = eager(s0.x, s0.r, w, b, s0.h, s0.y)
        rel, abs_ = _errors(got, _reference(op, s0.x, s0.r, w, b))
        del got
        row = {"op": op, "dtype": name, "rows": m, "cols": k, "bytes": nbytes,
               "neg_us": neg[STREAMS[op]],
               "eager_us": _median_us(lambda: _eager(eager, rot()), reps, clock_khz),
               "compiled_us": None, "compiled_error": compile_error,
               "max_rel_err_vs_f64": rel, "max_abs_err_vs_f64": abs_,
               "chain16_eager_us": None, "chain16_graph_us": None, "input_sets": count}
        if compile_error is None:
            row["compiled_us"], row["compiled_error"] = _compiled_us(op, rot, reps, clock_khz)
        if (m, k) in SMALL:
            row["chain16_eager_us"], row["chain16_graph_us"] = _chain_us(eager, s0, clock_khz)
        rows.append(row)
    return rows


class _Rotation:
    """Hands out the input sets in turn, across every timing of a shape, so a set
    comes back only after all the others (at least 4x the L2) were touched."""

    def __init__(self, sets):
        self.sets, self.i = sets, 0

    def __call__(self):
        s = self.sets[self.i % len(self.sets)]
        self.i += 1
        return s


def _neg(s, src, dst):
    torch.neg(getattr(s, src), out=getattr(s, dst))


def _eager(f, s):
    f(s.x, s.r, s.w, s.b, s.h, s.y)


def _reps(nbytes):
    return 200 if nbytes <= 1 << 24 else (60 if nbytes <= 1 << 28 else 25)


def _median_us(queue, reps, clock_khz, per=1):
    """Median GPU time (us) of queue(), divided by `per`: each call between two
    events queued behind a spin three times as long as the host takes to queue
    it (measured on the second call; the first may pay one-time costs), after
    three more warm-up calls."""
    queue()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    queue()
    host_s = time.perf_counter() - t0
    for _ in range(3):
        queue()
    torch.cuda.synchronize()
    spin = int(min(2e-3, max(50e-6, 3 * host_s)) * clock_khz * 1e3)
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(spin)
        s.record()
        queue()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / per)
    return statistics.median(times)


def _compiled_us(op, rot, reps, clock_khz):
    """(us, None) for torch.compile of the op, or (None, why) when it fails."""
    torch._dynamo.reset()  # a fresh compile per shape (no recompile limit, no dynamic shapes)
    try:
        f = torch.compile(PLAIN[op], dynamic=False)
        s = rot()
        for _ in range(3):
            f(s.x, s.r, s.w, s.b)
        torch.cuda.synchronize()
    except Exception as ex:  # noqa: BLE001 -- any failure is a result to report
        torch._dynamo.reset()
        return None, " ".join(f"{type(ex).__name__}: {ex}".split())[:300]

    def call():
        s = rot()
        f(s.x, s.r, s.w, s.b)

    return _median_us(call, reps, clock_khz), None


def capture_graph(run, dev):
    """A CUDAGraph of `run`, captured after one warm-up run on a side stream
    (as torch asks: lazy initialisation must not happen during capture)."""
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    return g


def _chain_us(eager, s, clock_khz):
    """us per call of 16 dependent eager calls (each output the next input),
    queued one by one and as one CUDAGraph replay (captured after a warm-up on
    a side stream, as torch's docs ask)."""
    hs = [torch.empty_like(s.x) for _ in range(CHAIN)]
    ys = [torch.empty_like(s.x) for _ in range(CHAIN)]

    def run():
        x = s.x
        for i in range(CHAIN):
            x = eager(x, s.r, s.w, s.b, hs[i], ys[i])[-1]

    eager_us = _median_us(run, 51, clock_khz, per=CHAIN)
    g = capture_graph(run, s.x.device)
    graph_us = _median_us(g.replay, 51, clock_khz, per=CHAIN)
    del g
    return eager_us, graph_us


def _reference(op, x, r, w, b):
    """The op in f64 from its formula (not torch's kernel) on the same inputs:
    one tensor per output."""
    x, r, w, b = (t.double() for t in (x, r, w, b))
    if op in ("rms_norm", "add_rms_norm"):
        h = x + r if op == "add_rms_norm" else x
        y = h * torch.rsqrt((h * h).mean(-1, keepdim=True) + RMS_EPS) * w
        return (h, y) if op == "add_rms_norm" else (y,)
    if op in ("layer_norm", "add_layer_norm"):
        h = x + r if op == "add_layer_norm" else x
        c = h - h.mean(-1, keepdim=True)
        y = c * torch.rsqrt((c * c).mean(-1, keepdim=True) + LN_EPS) * w + b
        return (h, y) if op == "add_layer_norm" else (y,)
    z = x - x.amax(-1, keepdim=True)
    e = torch.exp(z)
    s = e.sum(-1, keepdim=True)
    return (e / s,) if op == "softmax" else (z - torch.log(s),)


def _errors(got, ref):
    """(max relative error over elements with ref != 0, max absolute error),
    over every output; NaN if any output has a NaN (torch's max keeps NaN)."""
    diffs = [(g.double() - e).abs() for g, e in zip(got, ref)]
    abs_ = torch.stack([d.max() for d in diffs]).max().item()
    rels = [torch.where(e != 0, d / e.abs(), torch.zeros_like(d)).max() for d, e in zip(diffs, ref)]
    rel = torch.stack(rels).max().item()
    return _number(rel), _number(abs_)


def _number(v):
    return v if math.isfinite(v) else str(v)


def _check_softmax_out(dev):
    """torch.softmax and torch.log_softmax take out= (softmax.int_out) in recent
    torch; where they do not, time the allocating forms instead."""
    x = torch.ones(2, 4, device=dev)
    try:
        torch.softmax(x, -1, out=torch.empty_like(x))
        torch.log_softmax(x, -1, out=torch.empty_like(x))
    except (TypeError, RuntimeError):
        EAGER["softmax"] = lambda x, r, w, b, h, y: (torch.softmax(x, -1),)
        EAGER["log_softmax"] = lambda x, r, w, b, h, y: (torch.log_softmax(x, -1),)


@contextlib.contextmanager
def _stdout_to_stderr():
    """torch.compile and its worker processes may print; peers.py's stdout must
    hold only the JSON, so file descriptor 1 points at stderr meanwhile."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def parse_shapes(text):
    """"1x4096,8x4096" -> [(1, 4096), (8, 4096)]; empty -> every shape of the section."""
    if not text:
        return list(SHAPES)
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]
