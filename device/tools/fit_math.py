"""Minimax-ish polynomial fits for device/src/math (Lawson's iteratively
reweighted least squares on a dense grid, f64; coefficients rounded to f32).

Run: python3 device/tools/fit_math.py  (needs numpy, mpmath). Prints each fit's
coefficients (low to high power) and its max weighted error after rounding
to f32. The error reported is that of the approximated quantity, before the
caller's own combination (see each function's doc comment)."""
import math
import numpy as np
import mpmath as mp

mp.mp.dps = 40
f32 = np.float32


def fit(name, g, a, b, powers, w=None, n=20000, iters=60):
    t = np.cos(np.linspace(0, math.pi, n)) * (b - a) / 2 + (a + b) / 2
    y = np.array([g(v) for v in t])
    ww = np.ones_like(t) if w is None else np.array([w(v) for v in t])
    A = np.stack([t ** p for p in powers], axis=1)
    lw = np.ones_like(t)
    for _ in range(iters):
        s = np.sqrt(lw)
        c, *_ = np.linalg.lstsq(A * (s * ww)[:, None], y * s * ww, rcond=None)
        e = np.abs((A @ c - y) * ww)
        lw = lw * e
        lw /= lw.sum()
    c32 = [float(f32(v)) for v in c]
    err = np.max(np.abs((A @ np.array(c32) - y) * ww))
    print(f"// {name}: [{a}, {b}] powers {list(powers)} max weighted err {err:.3e} (2^{math.log2(err):.1f})")
    print("[" + ", ".join(f"{v!r}" for v in c32) + "]")
    return c32


def safe(f, eps):
    return lambda v: f(v if abs(v) > eps else (eps if v >= 0 else -eps))


ln2 = math.log(2)
# exp: (e^r - 1)/r on |r| <= ln2/2, relative weight on e^r (error of r*P is what counts)
fit("exp P=(e^r-1)/r", safe(lambda r: math.expm1(r) / r, 1e-9), -0.3466, 0.3466, range(6),
    w=lambda r: abs(r) / math.exp(r) if abs(r) > 1e-9 else 1e-9)
# expm1: (e^r - 1 - r)/r^2
fit("expm1 Q=(e^r-1-r)/r^2", safe(lambda r: float((mp.expm1(r) - r) / r ** 2), 1e-9), -0.3466, 0.3466, range(6),
    w=lambda r: r * r / abs(math.expm1(r)) if abs(r) > 1e-9 else 1e-9)
# exp2: (2^r - 1)/r on |r| <= 1/2
fit("exp2 P=(2^r-1)/r", safe(lambda r: math.expm1(r * ln2) / r, 1e-9), -0.5, 0.5, range(6),
    w=lambda r: abs(r) / 2 ** r if abs(r) > 1e-9 else 1e-9)
# log: (log1p(f) - f)/f^2 on [-1/3, 1/3], weighted by f^2/|log1p f|
fit("log Q=(log1p(f)-f)/f^2", safe(lambda f: float((mp.log1p(f) - f) / f ** 2), 1e-9), -1 / 3, 1 / 3, range(9),
    w=lambda f: f * f / abs(math.log1p(f)) if abs(f) > 1e-9 else 1e-9)
c1 = 1 / ln2
c1h = float(f32(c1))
fit("log2 Q=(log2(1+f)-f*c1h)/f^2 (c1h=f32(1/ln2))", safe(lambda f: float((mp.log1p(f) / mp.log(2) - f * c1h) / f ** 2), 1e-9),
    -1 / 3, 1 / 3, range(-1, 9), w=lambda f: f * f / abs(math.log1p(f) / ln2) if abs(f) > 1e-9 else 1e-9)
# tanh: (tanh(x) - x)/x^3 in t=x^2, |x| <= 0.625
fit("tanh T=(tanh x - x)/x^3", lambda t: float((mp.tanh(mp.sqrt(t)) - mp.sqrt(t)) / mp.sqrt(t) ** 3) if t > 1e-12 else -1 / 3,
    0, 0.625 ** 2, range(6), w=lambda t: t / math.tanh(math.sqrt(t)) * math.sqrt(t) if t > 1e-12 else 0)
# erf small: erf(x)/x - 1 in t = x^2, |x| <= 1
fit("erf E=erf(x)/x-1", lambda t: float(mp.erf(mp.sqrt(t)) / mp.sqrt(t) - 1) if t > 1e-12 else 2 / math.sqrt(math.pi) - 1,
    0, 1, range(8))
# erf large: log(erfc(x)) on [1, 3.92]
fit("erf G=log erfc(x)", lambda x: float(mp.log(mp.erfc(x))), 1, 3.92, range(11))
# gelu core: H = erf(x/sqrt2)/(2x) in t = x^2, |x| <= 1.5  (Phi(x) = 0.5 + x*H)
fit("gelu H=erf(x/sqrt2)/(2x)", lambda t: float(mp.erf(mp.sqrt(t / 2)) / (2 * mp.sqrt(t))) if t > 1e-12 else 1 / math.sqrt(2 * math.pi),
    0, 1.5 ** 2, range(9), w=lambda t: 1 / (0.5 + math.sqrt(t) * 0.4))
# gelu tail: M(u) = Phi(-x)/phi(x) * x with u = 1/x^2, x in [1.5, 14]
fit("gelu M=x*Phi(-x)/phi(x), u=1/x^2", lambda u: float((lambda x: x * mp.ncdf(-x) / mp.npdf(x))(1 / mp.sqrt(u))),
    1 / 14 ** 2, 1 / 1.5 ** 2, range(11), w=lambda u: 1.0)
# sin/cos kernels on |r| <= pi/4 (t = r^2)
fit("sin S=(sin r - r)/r^3", lambda t: float((mp.sin(mp.sqrt(t)) - mp.sqrt(t)) / mp.sqrt(t) ** 3) if t > 1e-12 else -1 / 6,
    0, (math.pi / 4) ** 2, range(4), w=lambda t: t if t > 1e-12 else 0)
fit("cos C=(cos r - 1 + r^2/2)/r^4", lambda t: float((mp.cos(mp.sqrt(t)) - 1 + t / 2) / t ** 2) if t > 1e-8 else 1 / 24,
    0, (math.pi / 4) ** 2, range(4), w=lambda t: t * t)
# exp2 with one more term, log/log2 degree 9 in Q
fit("exp2 P=(2^r-1)/r deg6", safe(lambda r: math.expm1(r * ln2) / r, 1e-9), -0.5, 0.5, range(7),
    w=lambda r: abs(r) / 2 ** r if abs(r) > 1e-9 else 1e-9)
fit("log Q deg9", safe(lambda f: float((mp.log1p(f) - f) / f ** 2), 1e-9), -1 / 3, 1 / 3, range(10),
    w=lambda f: f * f / abs(math.log1p(f)) if abs(f) > 1e-9 else 1e-9)
fit("log2 Q deg9", safe(lambda f: float((mp.log1p(f) / mp.log(2) - f * c1h) / f ** 2), 1e-9), -1 / 3, 1 / 3, range(10),
    w=lambda f: f * f / abs(math.log1p(f) / ln2) if abs(f) > 1e-9 else 1e-9)
# Phi(-t) = exp(-t^2/2) K(s), s = 3/(3+t), t in [0, 15] (gelu tail; erfc(z) = 2 Phi(-sqrt2 z))
Kf = lambda t: mp.ncdf(-t) * mp.exp(t * t / 2)
fit("K(s), s=3/(3+t)", lambda s: float(Kf(3 / mp.mpf(s) - 3)), 3 / 18, 1, range(13), w=lambda s: 1 / float(Kf(3 / mp.mpf(s) - 3)))
# K pieces (gelu's tail, see math/README.md): the fit with f64 coefficients
# against the same fit with its coefficients rounded to f32 (the rounding, not
# the degree, is what limits the current single-piece K).
def fit_both(name, g, lo, hi, c, deg, n=2000, iters=40):
    xs = np.cos(np.linspace(0, math.pi, n)) * (hi - lo) / 2 + (hi + lo) / 2
    y = np.array([float(g(v)) for v in xs])
    A = np.stack([(xs - c) ** p for p in range(deg + 1)], axis=1)
    lw = np.ones_like(xs)
    for _ in range(iters):
        s = np.sqrt(lw)
        co, *_ = np.linalg.lstsq(A * (s / y)[:, None], y * s / y, rcond=None)
        e = np.abs((A @ co - y) / y)
        lw = lw * e
        lw /= lw.sum()
    e32 = np.max(np.abs((A @ np.array([float(f32(v)) for v in co]) - y) / y))
    cond = np.max(np.abs(A) @ np.abs(co) / y)
    print(f"// {name}: f64 coeffs 2^{math.log2(np.max(e)):.1f}, f32 coeffs 2^{math.log2(e32):.1f}, cond {cond:.2f}")


mp.mp.dps = 30
fit_both("K(t), t in [0, 1.5], in t - 0.75, deg 12", lambda t: Kf(mp.mpf(t)), 0, 1.5, 0.75, 12)
fit_both("K(s), t in [2, 15], in s - 0.4, deg 12", lambda s: Kf(3 / mp.mpf(s) - 3), 3 / 18, 0.6, 0.4, 12)
fit_both("K(s), t in [0, 15], in s - 0.6, deg 13", lambda s: Kf(3 / mp.mpf(s) - 3), 3 / 18, 1, 0.6, 13)


# Greedy f32 rounding (the fits below): after each coefficient is rounded to
# f32 (lowest power first) the others are refitted, so that the later ones
# absorb the earlier ones' rounding; and a centre `c` for the variable is picked
# where the function is within ~2^-38 of an f32, so that the constant term's
# rounding does not set the floor (`near_f32_centre`).
def fit_greedy(name, g, a, b, powers, w, n=4000, iters=50):
    t = np.cos(np.linspace(0, math.pi, n)) * (b - a) / 2 + (a + b) / 2
    y = np.array([float(g(v)) for v in t])
    ww = np.array([float(w(v)) for v in t])
    fixed = {}
    while len(fixed) < len(powers):
        free = [p for p in powers if p not in fixed]
        yr = y - sum(c * t ** p for p, c in fixed.items()) if fixed else y
        A = np.stack([t ** p for p in free], axis=1)
        lw = np.ones_like(t)
        for _ in range(iters):
            s = np.sqrt(lw)
            c, *_ = np.linalg.lstsq(A * (s * ww)[:, None], yr * s * ww, rcond=None)
            e = np.abs((A @ c - yr) * ww)
            lw = lw * e
            lw /= lw.sum()
        fixed[free[0]] = float(f32(c[0]))
    cs = [fixed[p] for p in powers]
    err = np.max(np.abs((sum(fixed[p] * t ** p for p in powers) - y) * ww))
    print(f"// {name}: [{a:.6g}, {b:.6g}] max weighted err {err:.3e} (2^{math.log2(err):.1f})")
    print("[" + ", ".join(repr(f32(v)).replace("np.float32(", "").rstrip(")") for v in cs) + "]")
    return cs


def near_f32_centre(F, lo, hi):
    best = None
    for i in range(-4000, 4000):
        c = float(f32(0.5 + i * 2**-14))
        if lo + 0.3 * (hi - lo) < c < hi - 0.3 * (hi - lo):
            k = F(c)
            r = abs(float(f32(float(k))) - k) / k
            if best is None or r < best[0]:
                best = (float(r), c)
    print(f"// centre {best[1]!r} (F within 2^{math.log2(best[0] + 1e-300):.1f} of an f32)")
    return best[1]


mp.mp.dps = 40
L2 = mp.log(2)
# log2: (log2(1+f) - f/ln2)/f^2 on [-1/3, 1/3], weight f^2/|log2(1+f)| (LOG2_Q)
fit_greedy("log2 Q=(log2(1+f)-f/ln2)/f^2", lambda f: (mp.log1p(f) - f) / L2 / mp.mpf(f) ** 2 if abs(f) > 1e-9 else -1 / (2 * L2),
           -1 / 3, 1 / 3, range(10), lambda f: f * f * L2 / abs(mp.log1p(f)) if abs(f) > 1e-9 else 0, n=6000)
# pow's log2 pair: (ln(1+f) - f + f^2/2 - f^3/3)/f^4, weight f^4/|ln(1+f)| (POW_R)
fit_greedy("pow R=(ln(1+f)-f+f^2/2-f^3/3)/f^4",
           lambda f: (lambda f: (mp.log1p(f) - f + f ** 2 / 2 - f ** 3 / 3) / f ** 4)(mp.mpf(f) if abs(f) > 1e-6 else mp.mpf(1e-6)),
           -1 / 3, 1 / 3, range(10), lambda f: f ** 4 / abs(float(mp.log1p(f))) if abs(f) > 1e-9 else 0)
# erf below 0.82: erf(x)/x - 1 in t = x^2 (ERF_E)
Ef = lambda t: mp.erf(mp.sqrt(t)) / mp.sqrt(t) - 1 if t > 1e-30 else 2 / mp.sqrt(mp.pi) - 1
fit_greedy("erf E=erf(x)/x-1, t=x^2", Ef, 0, 0.82 ** 2, range(7), lambda t: 1.0)
# erf above: erfcx(x) = e^{x^2} erfc(x) in v = 2/(2+x) - c, x in [0.8, 4] (ERFC_K, ERFC_C)
mp.mp.dps = 30
Kx = lambda s: mp.erfc(2 / mp.mpf(s) - 2) * mp.exp((2 / mp.mpf(s) - 2) ** 2)
lo, hi = 2 / 6, 2 / 2.8
c = near_f32_centre(Kx, lo, hi)
fit_greedy(f"erfcx in 2/(2+x) - {c}", lambda v: Kx(mp.mpf(v) + c), lo - c, hi - c, range(8), lambda v: 1 / float(Kx(mp.mpf(v) + c)))
th = mp.mpf(1) / 3
print("1/3 as a pair:", repr(f32(float(th))), repr(f32(float(th - float(f32(float(th)))))))

# bits of 2/pi after the binary point, 8 zero bits in front, as u32 words
mp.mp.dps = 100
v = int(mp.floor(2 / mp.pi * mp.mpf(2) ** 248))
print("2/pi words:", ", ".join(f"0x{(v >> (224 - 32 * i)) & 0xffffffff:08x}" for i in range(8)))

# gelu (math/gelu.rs): G = (3+t) e^{t^2/2} Phi(-t) in u = 1/(3+t) - GC, t in [0, 14.5]
# (full weight to 13.2, where results turn subnormal), relative; GC a multiple
# of 2^-25 at most 3/16 (so that y1 - GC is exact) where G is nearest an f32;
# then the rest greedily; D0 + D1 u fits dG/dv (weight v/G: it multiplies dv).
mp.mp.dps = 40
Gg = lambda v: (lambda t: mp.exp(t * t / 2) * mp.ncdf(-t) * (3 + t))(1 / mp.mpf(v) - 3)
gc = min((0.1875 - m * 2.0 ** -25 for m in range(3001)),
         key=lambda c: float(abs(Gg(c) - mp.mpf(float(f32(float(Gg(c)))))) / Gg(c)))
vv = 1 / 17.5 + (np.cos(np.linspace(0, math.pi, 4000)) * 0.5 + 0.5) * (1 / 3 - 1 / 17.5)
tt, gy = 1 / vv - 3, np.array([float(Gg(v)) for v in vv])
uu, gw = vv - gc, np.where(1 / vv - 3 > 13.2, 2.0 ** -6, 1.0) / gy
fixed = [float(f32(float(Gg(gc))))]
for i in range(1, 11):
    r = gy - sum(fixed[j] * uu ** j for j in range(i))
    A = np.stack([uu ** p for p in range(i, 11)], axis=1)
    lw = np.ones_like(uu)
    for _ in range(60):
        s = np.sqrt(lw)
        co, *_ = np.linalg.lstsq(A * (s * gw)[:, None], r * s * gw, rcond=None)
        lw = lw * np.abs((A @ co - r) * gw)
        lw /= lw.sum()
    fixed.append(float(f32(co[0])))
err = np.max(np.abs((sum(fixed[j] * uu ** j for j in range(11)) - gy) * gw))
print(f"// gelu G, GC = {gc!r}: max weighted err 2^{math.log2(err):.1f}")
print("[" + ", ".join(repr(v) for v in fixed) + "]")
dG = np.array([float(mp.diff(Gg, v)) for v in vv])
A = np.stack([uu ** 0, uu], axis=1)
co, *_ = np.linalg.lstsq(A * (vv / gy)[:, None], dG * vv / gy, rcond=None)
print("gelu D0, D1:", [float(f32(v)) for v in co])
