# torch.add and our PTX kernels in one process, one harness: torch's events, torch's spin,
# torch's stream, interleaved launch by launch, inputs rotated below 4x L2 (cold) or not (warm).
# Usage: python3 inproc.py ptx/kernels_gpu.ptx ptx/kernels_gpu_sm90.ptx > inproc.json
# Caveat (seen in inproc.json): ctypes launches are slow enough that at some sizes the
# host was still queueing when the 50 us spin ended; those rows (ours several us slower
# than a plain launch) measure the host, not the kernel.
import ctypes, json, statistics, sys, torch
dev = torch.device("cuda", 0)
torch.zeros(1, device=dev)
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0: raise RuntimeError(f"{what}: {r}")
def load(path):
    m = ctypes.c_void_p(); ck(cu.cuModuleLoadData(ctypes.byref(m), open(path, "rb").read() + b"\0"), "load"); return m
mods = {"70": load(sys.argv[1]), "90": load(sys.argv[2])}
def fn(mod, name):
    f = ctypes.c_void_p(); ck(cu.cuModuleGetFunction(ctypes.byref(f), mods[mod], name.encode()), name); return f
l2 = torch.cuda.get_device_properties(dev).L2_cache_size
clock_khz = getattr(torch.cuda.get_device_properties(dev), "clock_rate", 1_980_000)
spin = int(50e-6 * clock_khz * 1e3)
types = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ours = {"f32": [("add_f32x4", "70", 4, 0, 128), ("add_f32x4_u2", "70", 4, 2, 128), ("add_f32x4", "70", 4, 0, 1024)],
        "f16": [("add_f16x8_pack", "70", 8, 0, 128), ("add_f16x8_u2", "70", 8, 2, 128), ("add_f16x8_pack", "70", 8, 0, 1024)],
        "bf16": [("add_bf16x8_sm90", "90", 8, 0, 128), ("add_bf16x8_sm90_u2", "90", 8, 2, 128), ("add_bf16x8_sm90", "90", 8, 0, 1024)]}
rows = []
for dname, dt in types.items():
    size = torch.tensor([], dtype=dt).element_size()
    cap = 1 << 26
    a = (torch.rand(cap, device=dev) * 128 - 64).to(dt); b = (torch.rand(cap, device=dev) * 128 - 64).to(dt); c = torch.empty(cap, device=dev, dtype=dt)
    fns = [(name, fn(m, name), lanes, u, blk) for name, m, lanes, u, blk in ours[dname]]
    for warm in (False, True):
        for k in range(16, 25 if not warm else 23):
            n = 1 << k; nbytes = 3 * n * size
            sets = 1 if warm else max(1, min(-(-4 * l2 // nbytes), cap // n))
            def launch_ours(f, lanes, u, blk, i):
                o = (i % sets) * n
                x, y, z = a[o:o + n], b[o:o + n], c[o:o + n]
                vals = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr()), ctypes.c_uint64(z.data_ptr()), ctypes.c_uint64(n)]
                args = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
                grid = -(-n // (lanes * blk)) if u == 0 else -(-n // (u * lanes * blk))
                ck(cu.cuLaunchKernel(f, grid, 1, 1, blk, 1, 1, 0, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), args, None), "launch")
            def launch_torch(i):
                o = (i % sets) * n
                torch.add(a[o:o + n], b[o:o + n], out=c[o:o + n])
            cands = [("torch", launch_torch)] + [(f"{nm}@{blk}", (lambda i, f=f, l=l, u=u, blk=blk: launch_ours(f, l, u, blk, i))) for nm, f, l, u, blk in fns]
            for nm, f in cands[1:]:
                c[:n].fill_(0); f(0); torch.cuda.synchronize()
                assert torch.equal(c[:n], (a[:n].float() + b[:n].float()).to(dt)), nm
            times = {nm: [] for nm, _ in cands}
            reps = 200 if nbytes <= 1 << 24 else 60
            for i in range(reps + 3):
                for j in range(len(cands)):
                    nm, f = cands[(i + j) % len(cands)]
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda._sleep(spin)
                    s.record(); f(i * len(cands) + j); e.record(); e.synchronize()
                    if i >= 3: times[nm].append(s.elapsed_time(e))
            for nm, t in times.items():
                rows.append({"dtype": dname, "n": n, "warm": warm, "k": nm, "us": statistics.median(t) * 1e3})
    del a, b, c; torch.cuda.empty_cache()
print(json.dumps(rows))
