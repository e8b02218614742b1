#!/usr/bin/env python3
"""Times torch.add (and with options torch.matmul, torch._foreach_add, the
element-wise operations, torch.sum, the chains, and with --norms the row norms
and softmax of peers_norms.py) the way the report times our kernels, and
prints JSON.

CUDA events around each call of torch.add(a, b, out=c), queued behind a spin
(torch.cuda._sleep) so that they time the kernel, median of many after a warm-up, the same sizes, and disjoint input sets rotated when one set would fit
in 4x the L2 cache. GB/s counts 3 * n * element size per add.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

import peers_norms  # beside this file (the bundle copies both)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-log2", type=int, default=10)
    p.add_argument("--max-log2", type=int, default=28)
    p.add_argument("--dtypes", default="f32,f16,bf16")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--warm-max-log2", type=int, default=0, help="also time torch.add without input rotation (L2 warm) for 2^min-log2 .. 2^this")
    p.add_argument("--burst", type=int, default=0, help="also time bursts of this many torch.add back to back behind one spin (GB/s per launch)")
    p.add_argument("--matmul", default="", help="square sizes for torch.matmul, e.g. 1024,2048")
    p.add_argument("--foreach", action="store_true", help="also time torch._foreach_add on lists of 1..1000 tensors")
    p.add_argument("--ops", default="", help="also time torch's sub/mul/div/minimum/maximum/neg/abs/relu, the activations and an axpby at these log2 sizes, e.g. 20,24,28")
    p.add_argument("--sum", default="", help="also time torch.sum of f32 (integers in -8..=8, one input set) at these log2 sizes, e.g. 24,28")
    p.add_argument("--chains", default="", help="also time chains of 16 dependent ops (add; mul, add, relu, sigmoid) eager and in a CUDAGraph at these log2 sizes, e.g. 12,14,16")
    p.add_argument("--norms", default="", help="also time torch's rms_norm, layer_norm, softmax, log_softmax and rms_norm(x + r), eager, compiled and (small shapes) as 16-call chains and graphs, beside neg, in these dtypes, e.g. f32,f16,bf16 (peers_norms.py)")
    p.add_argument("--norms-no-compile", action="store_true", help="with --norms: time torch eager only (compiling every op x dtype x shape takes minutes)")
    p.add_argument("--norms-shapes", default="", help="the --norms shapes as ROWSxCOLS,..., e.g. 1x4096,4096x4096 (default: the report's ten)")
    p.add_argument("--stream", default="default", choices=["default", "created"], help="time on torch's default (legacy) stream or on a created one")
    args = p.parse_args()
    dev = torch.device("cuda", args.device)
    if args.stream == "created":
        torch.cuda.set_stream(torch.cuda.Stream(dev))
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    types = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    # About 50 us of spinning at the SM clock (cycles per second from the device).
    clock_khz = getattr(torch.cuda.get_device_properties(dev), "clock_rate", 1_980_000)
    spin_cycles = int(50e-6 * clock_khz * 1e3)
    rows = []
    for name in args.dtypes.split(","):
        dt = types[name]
        size = torch.tensor([], dtype=dt).element_size()
        cap = max(1 << args.max_log2, (8 * l2) // (3 * size))
        a = (torch.rand(cap, device=dev, dtype=torch.float32) * 128 - 64).to(dt)
        b = (torch.rand(cap, device=dev, dtype=torch.float32) * 128 - 64).to(dt)
        c = torch.empty(cap, device=dev, dtype=dt)
        cold = [(k, False) for k in range(args.min_log2, args.max_log2 + 1)]
        warm = [(k, True) for k in range(args.min_log2, args.warm_max_log2 + 1)]
        for k, is_warm in cold + warm:
            n = 1 << k
            nbytes = 3 * n * size
            sets = 1 if is_warm else max(1, min(-(-4 * l2 // nbytes), cap // n))
            views = [(a[i * n:(i + 1) * n], b[i * n:(i + 1) * n], c[i * n:(i + 1) * n]) for i in range(sets)]
            ref = views[0][0].float() + views[0][1].float()
            torch.add(views[0][0], views[0][1], out=views[0][2])
            assert torch.equal(views[0][2], ref.to(dt)), "torch.add disagrees with the f32 sum rounded once"
            ms = median_ms(lambda x, y, z: torch.add(x, y, out=z), views, nbytes, spin_cycles)
            row = {"dtype": name, "n": n, "median_us": ms * 1e3, "gbps": nbytes / (ms * 1e-3) / 1e9, "input_sets": sets, "warm": is_warm}
            if args.burst:
                bms = burst_ms(views, args.burst, nbytes, clock_khz)
                row["burst_gbps"] = nbytes / (bms * 1e-3) / 1e9
            rows.append(row)
        del a, b, c
        torch.cuda.empty_cache()
    matmul = []
    torch.backends.cuda.matmul.allow_tf32 = False  # plain f32, like our kernels
    for s_ in [int(x) for x in args.matmul.split(",") if x]:
        a = torch.rand(s_, s_, device=dev) * 2 - 1
        b = torch.rand(s_, s_, device=dev) * 2 - 1
        c = torch.empty(s_, s_, device=dev)
        for _ in range(3):
            torch.matmul(a, b, out=c)
        times = []
        for _ in range(10):
            st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(spin_cycles)
            st.record()
            torch.matmul(a, b, out=c)
            en.record()
            en.synchronize()
            times.append(st.elapsed_time(en))
        ms = statistics.median(times)
        matmul.append({"size": s_, "median_us": ms * 1e3, "gflops": 2 * s_ ** 3 / (ms * 1e-3) / 1e9})
    foreach = foreach_rows(args, dev, l2, types, spin_cycles) if args.foreach else []
    ops = ops_rows(args, dev, l2, types, spin_cycles) if args.ops else []
    sums = sum_rows(args, dev, spin_cycles) if args.sum else []
    chains = chain_rows(args, dev, types) if args.chains else []
    norms = peers_norms.norms_rows(args.norms, peers_norms.parse_shapes(args.norms_shapes), dev, l2, clock_khz, compile=not args.norms_no_compile) if args.norms else []
    print(json.dumps({"chains": chains, "norms": norms, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev), "rows": rows, "matmul": matmul, "foreach": foreach, "ops": ops, "sum": sums}))


def median_ms(f, views, nbytes, spin_cycles):
    """Median GPU time (ms) of one call f(x, y, z), the input sets `views` in
    rotation: 5 warm-up calls, then each call between two events queued behind
    a spin that keeps the GPU busy while they are queued (as the report does
    with its spin kernel), so the events time the kernel. Fewer repetitions as
    the bytes grow, like the report."""
    reps = 200 if nbytes <= 1 << 24 else (60 if nbytes <= 1 << 28 else 25)
    for i in range(5):
        f(*views[i % len(views)])
    times = []
    for i in range(reps):
        x, y, z = views[i % len(views)]
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(spin_cycles)
        s.record()
        f(x, y, z)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def ops_rows(args, dev, l2, types, spin_cycles):
    """The element-wise library's operations in torch, timed as torch.add above:
    events behind a spin, median, input sets rotated below 4x the L2. GB/s counts
    the operands read plus the one written. axpby is what a torch user writes,
    torch.add(torch.mul(a, alpha), b, alpha=beta): two kernels."""
    ops = {
        "sub": (2, lambda x, y, z: torch.sub(x, y, out=z)),
        "mul": (2, lambda x, y, z: torch.mul(x, y, out=z)),
        "div": (2, lambda x, y, z: torch.div(x, y, out=z)),
        "min": (2, lambda x, y, z: torch.minimum(x, y, out=z)),
        "max": (2, lambda x, y, z: torch.maximum(x, y, out=z)),
        "neg": (1, lambda x, y, z: torch.neg(x, out=z)),
        "abs": (1, lambda x, y, z: torch.abs(x, out=z)),
        "relu": (1, lambda x, y, z: torch.relu(x)),
        "axpby": (2, lambda x, y, z: torch.add(torch.mul(x, 0.1), y, alpha=-3.5, out=z)),
        # The activations, on the report's inputs: [-8, 8), or (0, 8] for log,
        # rsqrt and sqrt (INPUTS below). F.silu and F.gelu take no out=, like relu.
        "exp": (1, lambda x, y, z: torch.exp(x, out=z)),
        "log": (1, lambda x, y, z: torch.log(x, out=z)),
        "tanh": (1, lambda x, y, z: torch.tanh(x, out=z)),
        "sigmoid": (1, lambda x, y, z: torch.sigmoid(x, out=z)),
        "silu": (1, lambda x, y, z: F.silu(x)),
        "gelu": (1, lambda x, y, z: F.gelu(x)),
        "gelu_tanh": (1, lambda x, y, z: F.gelu(x, approximate="tanh")),
        "rsqrt": (1, lambda x, y, z: torch.rsqrt(x, out=z)),
        "sqrt": (1, lambda x, y, z: torch.sqrt(x, out=z)),
    }
    positive = {"log", "rsqrt", "sqrt"}
    activation = {"exp", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh"}
    logs = [int(k) for k in args.ops.split(",") if k]
    rows = []
    for name in args.dtypes.split(","):
        dt = types[name]
        size = torch.tensor([], dtype=dt).element_size()
        cap = max(1 << max(logs), (8 * l2) // (2 * size))
        a = (torch.rand(cap, device=dev, dtype=torch.float32) * 128 - 64).to(dt)
        b = (torch.rand(cap, device=dev, dtype=torch.float32) * 128 - 64).to(dt)
        c = torch.empty(cap, device=dev, dtype=dt)
        # The report's input sets: [-8, 8) for the activations, (0, 8] for the
        # positive-only ones (8 - [0, 8) is never 0).
        act = (torch.rand(cap, device=dev, dtype=torch.float32) * 16 - 8).to(dt)
        pos = (8 - torch.rand(cap, device=dev, dtype=torch.float32) * 8).to(dt)
        for op, (inputs, f) in ops.items():
            src = pos if op in positive else (act if op in activation else a)
            for k in logs:
                n = 1 << k
                nbytes = (inputs + 1) * n * size
                sets = max(1, min(-(-4 * l2 // nbytes), cap // n))
                views = [(src[i * n:(i + 1) * n], b[i * n:(i + 1) * n], c[i * n:(i + 1) * n]) for i in range(sets)]
                ms = median_ms(f, views, nbytes, spin_cycles)
                rows.append({"op": op, "dtype": name, "n": n, "median_us": ms * 1e3, "gbps": nbytes / (ms * 1e-3) / 1e9, "input_sets": sets})
        del a, b, c, act, pos
        torch.cuda.empty_cache()
    return rows


def sum_rows(args, dev, spin_cycles):
    """torch.sum of n f32, timed as torch.add above (events behind a spin,
    median) on one input set (the report's custom sum row: nothing rotated).
    The inputs are integers uniform in -8..=8, so the f32 sum is exact in any
    order; "expected" is their exact int64 sum. GB/s counts the 4 * n bytes read."""
    rows = []
    for k in [int(x) for x in args.sum.split(",") if x]:
        n = 1 << k
        xi = torch.randint(-8, 9, (n,), device=dev, dtype=torch.int8)
        expected = int(xi.sum(dtype=torch.int64).item())
        x = xi.float()
        del xi
        got = torch.sum(x).item()
        ms = median_ms(lambda a, b, c: torch.sum(a), [(x, None, None)], 4 * n, spin_cycles)
        rows.append({"n": n, "median_us": ms * 1e3, "gbps": 4 * n / (ms * 1e-3) / 1e9, "sum": got, "expected": expected, "verified": got == expected})
        del x
        torch.cuda.empty_cache()
    return rows


def foreach_rows(args, dev, l2, types, spin_cycles):
    """torch._foreach_add(a_list, b_list) into fresh outputs, timed like the report's
    add_many: a spin three times as long as the host needs to queue one call (at
    least 300 us), events around the call, median; disjoint lists rotated until
    they span 4x the L2."""
    rows = []
    for name in args.dtypes.split(","):
        dt = types[name]
        size = torch.tensor([], dtype=dt).element_size()
        for elements in (1 << 10, 1 << 13, 1 << 16):
            for tensors in (1, 10, 100, 1000):
                nbytes = 3 * tensors * elements * size
                sets = max(1, min(8, -(-4 * l2 // nbytes)))
                lists = []
                for _ in range(sets):
                    a = [(torch.rand(elements, device=dev) * 128 - 64).to(dt) for _ in range(tensors)]
                    b = [(torch.rand(elements, device=dev) * 128 - 64).to(dt) for _ in range(tensors)]
                    lists.append((a, b))
                a, b = lists[0]
                out = torch._foreach_add(a, b)
                assert all(torch.equal(o, (x.float() + y.float()).to(dt)) for o, x, y in zip(out, a, b))
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                torch._foreach_add(a, b)
                host_s = time.perf_counter() - t0
                torch.cuda.synchronize()
                cycles = max(6 * spin_cycles, int(3 * host_s * spin_cycles / 50e-6))
                times = []
                for i in range(33):
                    a, b = lists[i % sets]
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda._sleep(cycles)
                    s.record()
                    torch._foreach_add(a, b)
                    e.record()
                    e.synchronize()
                    if i >= 3:
                        times.append(s.elapsed_time(e))
                ms = statistics.median(times)
                rows.append({"dtype": name, "tensors": tensors, "elements": elements, "us_per_add": ms * 1e3 / tensors, "input_sets": sets})
                del lists
                torch.cuda.empty_cache()
    return rows


def burst_ms(views, length, nbytes, clock_khz):
    """Median GPU time (ms) per call of `length` torch.add calls queued back to
    back behind one spin three times as long as the host takes to queue them,
    input sets rotating call by call: the report's burst columns."""
    reps = max(10, min(50, (200 if nbytes <= 1 << 24 else 60) // 4))
    def queue(r):
        for i in range(length):
            x, y, z = views[(r * length + i) % len(views)]
            torch.add(x, y, out=z)
    queue(0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()  # the second burst: the first may pay one-time costs
    queue(0)
    host_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    spin = int(min(1e-3, max(50e-6, 3 * host_s)) * clock_khz * 1e3)
    times = []
    for r in range(reps + 2):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(spin)
        s.record()
        queue(r)
        e.record()
        e.synchronize()
        if r >= 2:
            times.append(s.elapsed_time(e) / length)
    return statistics.median(times)


def chain_rows(args, dev, types):
    """Chains of 16 dependent ops, each output the next input, timed as the
    report's chains section: the GPU idle, an event, the 16 calls (eager) or
    one replay (a torch.cuda.CUDAGraph captured on a side stream), an event;
    median us per op. "add": torch.add(x, b, out=y) 16 times; "mixed": mul, add,
    relu (clamp_min, which takes out=), sigmoid, four times."""
    rows = []
    length = 16
    for k in [int(x) for x in args.chains.split(",") if x]:
        n = 1 << k
        for name in ("f32", "bf16"):
            dt = types[name]
            for op in ("add", "mixed"):
                xs = [(torch.rand(n, device=dev) * 2 - 1).to(dt)] + [torch.empty(n, device=dev, dtype=dt) for _ in range(length)]
                b = (torch.rand(n, device=dev) * 2 - 1).to(dt)
                cycle = [lambda x, y: torch.mul(x, b, out=y), lambda x, y: torch.add(x, b, out=y),
                         lambda x, y: torch.clamp_min(x, 0, out=y), lambda x, y: torch.sigmoid(x, out=y)]

                def run():
                    for i in range(length):
                        if op == "add":
                            torch.add(xs[i], b, out=xs[i + 1])
                        else:
                            cycle[i % 4](xs[i], xs[i + 1])

                def timed(f):
                    for _ in range(3):
                        f()
                    torch.cuda.synchronize()
                    times = []
                    for _ in range(51 if n <= 1 << 20 else 25):
                        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        s.record()
                        f()
                        e.record()
                        e.synchronize()
                        times.append(s.elapsed_time(e) * 1e3 / length)
                    return statistics.median(times)

                eager = timed(run)
                g = peers_norms.capture_graph(run, dev)
                graph = timed(g.replay)
                rows.append({"op": op, "dtype": name, "n": n, "length": length, "eager_us": eager, "graph_us": graph})
                del g, xs, b
                torch.cuda.empty_cache()
    return rows


if __name__ == "__main__":
    main()
