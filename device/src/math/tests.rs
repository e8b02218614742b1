//! CPU tests: special values of every function, a sampled sweep against f64
//! (every 4099th bit pattern in release, every 65537th in debug) asserting the
//! bounds, and the `#[ignore]`d exhaustive measurement (`exhaustive_ulp`).

extern crate std;
use super::check::{
    correctly_rounded, correctly_rounded_share_bf16, correctly_rounded_share_f16, ulp_error, FUNCTIONS,
};
use super::*;
use std::{println, vec::Vec};

const INF: f32 = f32::INFINITY;

fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[track_caller]
fn sv(name: &str, f: fn(f32) -> f32, cases: &[(f32, f32)]) {
    for &(x, want) in cases {
        let got = f(x);
        assert!(same(got, want), "{name}({x:e} [{:#010x}]) = {got:e}, want {want:e}", x.to_bits());
    }
    // NaN in, NaN out, for every function.
    assert!(f(f32::NAN).is_nan() && f(-f32::NAN).is_nan(), "{name}(NaN)");
}

#[test]
fn special_values() {
    let nan = f32::NAN;
    let tiny = f32::from_bits(1);
    sv("exp", exp, &[(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (89.0, INF), (-104.0, 0.0)]);
    sv(
        "exp2",
        exp2,
        &[
            (0.0, 1.0),
            (INF, INF),
            (-INF, 0.0),
            (128.0, INF),
            (-149.0, tiny),
            (-150.0, 0.0),
            (10.0, 1024.0),
            (-126.0, f32::MIN_POSITIVE),
        ],
    );
    sv(
        "expm1",
        expm1,
        &[(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -1.0), (tiny, tiny), (-tiny, -tiny), (89.0, INF), (-30.0, -1.0)],
    );
    sv("log", log, &[(1.0, 0.0), (0.0, -INF), (-0.0, -INF), (-1.0, nan), (INF, INF), (-INF, nan), (tiny, -103.27893)]);
    sv("log2", log2, &[(1.0, 0.0), (0.0, -INF), (-1.0, nan), (INF, INF), (tiny, -149.0), (1024.0, 10.0), (0.5, -1.0)]);
    sv(
        "log1p",
        log1p,
        &[(0.0, 0.0), (-0.0, -0.0), (-1.0, -INF), (-2.0, nan), (INF, INF), (tiny, tiny), (-tiny, -tiny)],
    );
    sv("tanh", tanh, &[(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (tiny, tiny), (-tiny, -tiny), (20.0, 1.0)]);
    sv("sigmoid", sigmoid, &[(0.0, 0.5), (-0.0, 0.5), (INF, 1.0), (-INF, 0.0), (200.0, 1.0), (-200.0, 0.0)]);
    sv(
        "silu",
        silu,
        &[(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -0.0), (-1e30, -0.0), (1e30, 1e30), (f32::MAX, f32::MAX)],
    );
    sv("erf", erf, &[(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (5.0, 1.0), (-5.0, -1.0)]);
    sv("gelu", gelu, &[(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -0.0), (-20.0, -0.0), (1e30, 1e30)]);
    sv("gelu_tanh", gelu_tanh, &[(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -0.0), (-1e30, -0.0), (1e30, 1e30)]);
    sv("sin", sin, &[(0.0, 0.0), (-0.0, -0.0), (INF, nan), (-INF, nan), (tiny, tiny), (-tiny, -tiny)]);
    sv("cos", cos, &[(0.0, 1.0), (-0.0, 1.0), (INF, nan), (-INF, nan)]);
    sv(
        "rsqrt",
        rsqrt,
        &[(0.0, INF), (-0.0, -INF), (INF, 0.0), (-1.0, nan), (4.0, 0.5), (tiny, 2f32.powi(74) * 2f32.sqrt())],
    );
    sv(
        "rcp",
        rcp,
        &[(0.0, INF), (-0.0, -INF), (INF, 0.0), (-INF, -0.0), (2.0, 0.5), (f32::MAX, 2.938736e-39), (tiny, INF)],
    );
    sv("sqrt", sqrt, &[(-0.0, -0.0), (4.0, 2.0), (-1.0, nan)]);
    assert!(same(fma(2.0, 3.0, 1.0), 7.0));
}

#[test]
fn pow_special_values() {
    let nan = f32::NAN;
    let cases: &[(f32, f32, f32)] = &[
        (nan, 0.0, 1.0),
        (1.0, nan, 1.0),
        (nan, 1.0, nan),
        (2.0, nan, nan),
        (0.0, -3.0, INF),
        (-0.0, -3.0, -INF),
        (-0.0, -2.0, INF),
        (-0.0, -0.5, INF),
        (0.0, 3.0, 0.0),
        (-0.0, 3.0, -0.0),
        (-0.0, 2.0, 0.0),
        (-0.0, 0.5, 0.0),
        (-1.0, INF, 1.0),
        (-1.0, -INF, 1.0),
        (0.5, -INF, INF),
        (2.0, -INF, 0.0),
        (0.5, INF, 0.0),
        (2.0, INF, INF),
        (-INF, -3.0, -0.0),
        (-INF, -2.0, 0.0),
        (-INF, 3.0, -INF),
        (-INF, 2.0, INF),
        (INF, -1.0, 0.0),
        (INF, 0.5, INF),
        (-2.0, 0.5, nan),
        (-2.0, 3.0, -8.0),
        (-2.0, 2.0, 4.0),
        (2.0, 10.0, 1024.0),
        (2.0, 128.0, INF),
        (2.0, -149.0, f32::from_bits(1)),
        (2.0, -151.0, 0.0),
        (-8.0, 1.0 / 3.0, nan),
        (4.0, 0.5, 2.0),
    ];
    for &(x, y, want) in cases {
        let got = pow(x, y);
        assert!(same(got, want), "pow({x:e}, {y:e}) = {got:e}, want {want:e}");
    }
}

/// The asserted ceiling: the 1-ulp target, every function.
fn bound(_name: &str) -> f64 {
    1.0
}

#[test]
fn sampled_sweep() {
    let step: u64 = if cfg!(debug_assertions) { 65_537 } else { 4_099 };
    let mut bad = Vec::new();
    for &(name, f, r) in FUNCTIONS {
        let mut worst = (0.0f64, 0u32);
        let mut b = 0u64;
        while b < 1 << 32 {
            let x = f32::from_bits(b as u32);
            let e = ulp_error(f(x), r(x as f64));
            if e > worst.0 {
                worst = (e, b as u32);
            }
            b += step;
        }
        println!("{name}: max {:.3} ulp at {:e}", worst.0, f32::from_bits(worst.1));
        if worst.0 > bound(name) {
            bad.push((name, worst.0, worst.1));
        }
    }
    assert!(bad.is_empty(), "over the bound: {bad:x?}");
}

#[test]
fn pow_and_div_sampled() {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let n = if cfg!(debug_assertions) { 20_000 } else { 2_000_000 };
    let (mut wp, mut wd) = (0.0f64, 0.0f64);
    for _ in 0..n {
        let v = next();
        let x = f32::from_bits(v as u32 & 0x7fff_ffff);
        // y spread so that |y log2 x| covers the whole exponent range.
        let y = f32::from_bits((v >> 32) as u32) % 300.0;
        let e = ulp_error(pow(x, y), (x as f64).powf(y as f64));
        if e > wp {
            wp = e;
        }
        let (a, b) = (f32::from_bits((v >> 32) as u32), f32::from_bits(v as u32));
        if b.abs() >= 2f32.powi(-125) && b.abs() <= 2f32.powi(125) && (a / b).abs() >= 2f32.powi(-124) {
            let q = (a as f64) / (b as f64);
            if q.abs() < 1e38 && a.is_finite() {
                wd = wd.max(ulp_error(div_fast(a, b), q));
            }
        }
    }
    println!("pow: max {wp:.3} ulp; div_fast: max {wd:.3} ulp ({n} samples)");
    assert!(wd <= 1.0, "div_fast {wd}");
    assert!(wp <= 2.0, "pow {wp}");
}

/// `pow` at fixed exponents over every 251st bit pattern of `x` (both signs; the
/// results that overflow, underflow to zero or are NaN included), and the
/// inputs near 1 with large exponents, where `y log2 x` needs the pair's accuracy.
#[test]
fn pow_fixed_exponents() {
    let step = if cfg!(debug_assertions) { 40_961 } else { 251 };
    let ys = [0.5f32, -0.5, 1.0 / 3.0, 2.0, 3.0, -2.0, 10.5, 100.0, -100.0, 127.9, 1e-3, -149.5, 1e4, -1e4, 1e6, 3.7e7];
    let mut worst = (0.0f64, 0.0f32, 0.0f32);
    for &y in &ys {
        let mut b = 0u64;
        while b < 1 << 32 {
            let x = f32::from_bits(b as u32);
            let e = ulp_error(pow(x, y), (x as f64).powf(y as f64));
            if e > worst.0 {
                worst = (e, x, y);
            }
            b += step;
        }
    }
    println!("pow fixed exponents: max {:.3} ulp at pow({:e}, {:e})", worst.0, worst.1, worst.2);
    assert!(worst.0 <= 2.0, "pow {worst:?}");
}

#[test]
fn f64_erf_reference_agrees_with_libm() {
    let mut x = -6.0f64;
    while x < 6.0 {
        let (a, b) = (super::check::erf_f64(x), libm::erf(x));
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1e-300), "erf({x}) {a} vs {b}");
        let (a, b) = (super::check::erfc_f64(x), libm::erfc(x));
        // 1 - erf below 2.5 loses digits there; 1e-10 is still 2^-33, far below an f32 ulp.
        assert!((a - b).abs() <= 1e-10 * b.abs(), "erfc({x}) {a} vs {b}");
        x += 0.001953125 * 3.0;
    }
}

/// All 2^32 inputs of every function, split over the cores: max ulp, where, the
/// correctly rounded share and the count over 1 ulp; then the bf16/f16 shares.
/// Run with `cargo test -p gpukern-device --release -- --ignored exhaustive_ulp
/// --nocapture`. `MATH_FN=exp,log` (or `GPUKERN_MATH_ONLY`, as the GPU test)
/// picks functions; `MATH_BITS=3f800000..40000000` (hex, end excluded) sweeps
/// only that range of bit patterns (the dense sweep around a worst case).
#[test]
#[ignore]
fn exhaustive_ulp() {
    let pick = std::env::var("MATH_FN").or_else(|_| std::env::var("GPUKERN_MATH_ONLY")).ok();
    let (lo, hi) = match std::env::var("MATH_BITS") {
        Ok(r) => {
            let (a, b) = r.split_once("..").expect("MATH_BITS=lo..hi");
            let h = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
            (h(a), h(b))
        }
        Err(_) => (0, 1 << 32),
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    for &(name, f, r) in FUNCTIONS {
        if pick.as_ref().is_some_and(|p| !p.split(',').any(|q| q == name)) {
            continue;
        }
        let chunk = (hi - lo).div_ceil(threads);
        let parts: Vec<(f64, u32, u64, u64)> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    sc.spawn(move || {
                        let (mut w, mut at, mut ok, mut over) = (0.0f64, 0u32, 0u64, 0u64);
                        for b in lo + t * chunk..(lo + (t + 1) * chunk).min(hi) {
                            let x = f32::from_bits(b as u32);
                            let (got, want) = (f(x), r(x as f64));
                            let e = ulp_error(got, want);
                            if e > w {
                                (w, at) = (e, b as u32);
                            }
                            ok += correctly_rounded(got, want) as u64;
                            over += (e > 1.0) as u64;
                        }
                        (w, at, ok, over)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let (mut w, mut at, mut ok, mut over) = (0.0, 0, 0, 0);
        for (pw, pa, po, pv) in parts {
            (ok, over) = (ok + po, over + pv);
            if pw > w {
                (w, at) = (pw, pa);
            }
        }
        let (b_ok, _, b_ex) = correctly_rounded_share_bf16(f, r);
        let (h_ok, _, h_ex) = correctly_rounded_share_f16(f, r);
        println!(
            "| {name} | {w:.3} at {:e} ({at:#010x}) | {:.4}% | {over} over 1 ulp | bf16 {b_ok}/65536 {:x?} | f16 {h_ok}/65536 {:x?} |",
            f32::from_bits(at),
            ok as f64 * 100.0 / (hi - lo) as f64,
            &b_ex[..b_ex.len().min(8)],
            &h_ex[..h_ex.len().min(8)]
        );
    }
}

/// `exp_nonpos` on the non-positive floats (sign bit set: `-0` up to `-inf`
/// and the negative NaNs, plus `+0` and the positive NaNs) every `step`-th
/// pattern: the bits of `exp`.
fn exp_nonpos_is_exp(step: usize) {
    let pats = (0x8000_0000u32..=0xffff_ffff).step_by(step).chain([0, 0x7fc0_0000, 0x7f80_0001, 0xff80_0000]);
    for b in pats {
        let x = f32::from_bits(b);
        assert!(same(exp_nonpos(x), exp(x)), "exp_nonpos({x:e} [{b:#010x}])");
    }
}

#[test]
fn exp_nonpos_has_the_bits_of_exp() {
    exp_nonpos_is_exp(if cfg!(debug_assertions) { 65537 } else { 4099 });
}

/// Every non-positive input (`cargo test -p gpukern-device --release --lib
/// exp_nonpos_exhaustive -- --ignored`).
#[test]
#[ignore]
fn exp_nonpos_exhaustive() {
    exp_nonpos_is_exp(1);
}

/// `exp_nonpos16`'s relative error against f64 over every `step`-th f32 in
/// [-87.3, 0] (results normal), and its special values.
fn exp_nonpos16_error(step: usize) -> f64 {
    let lo = (-87.3f32).to_bits();
    let mut worst = 0.0f64;
    for b in (0x8000_0000u32..=lo).step_by(step) {
        let x = f32::from_bits(b);
        let want = (x as f64).exp();
        worst = worst.max(((exp_nonpos16(x) as f64) - want).abs() / want);
    }
    for (x, want) in [(0.0f32, 1.0f32), (-0.0, 1.0), (f32::NEG_INFINITY, 0.0), (-104.0, 0.0)] {
        assert!(same(exp_nonpos16(x), want), "exp_nonpos16({x})");
    }
    assert!(exp_nonpos16(f32::NAN).is_nan());
    worst
}

#[test]
fn exp_nonpos16_is_within_2_to_the_minus_18() {
    let e = exp_nonpos16_error(if cfg!(debug_assertions) { 65537 } else { 4099 });
    assert!(e < 2f64.powi(-18), "{e:e}");
}

/// Every input (`cargo test -p gpukern-device --release --lib
/// exp_nonpos16_exhaustive -- --ignored --nocapture`).
#[test]
#[ignore]
fn exp_nonpos16_exhaustive() {
    let e = exp_nonpos16_error(1);
    println!("exp_nonpos16: max relative error {e:e} (2^{:.2})", e.log2());
    assert!(e < 2f64.powi(-18), "{e:e}");
}
