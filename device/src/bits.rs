//! Bit-level arithmetic shared by device and host: bfloat16 rounding, binary16
//! conversions (the host's f16 lanes, where Rust's `f16` is not stable) and NaN
//! classes.
//!
//! Kept integer-only so it compiles to the same meaning on both sides and can be
//! checked on the CPU.

/// Widens a bfloat16 (given as its bits) to f32. Exact: bf16 is the top half of f32.
#[inline(always)]
pub fn bf16_to_f32(x: u16) -> f32 {
    f32::from_bits((x as u32) << 16)
}

/// Rounds an f32 to the nearest bfloat16, ties to even; NaN stays NaN (quieted).
///
/// Overflow rounds to infinity through the carry into the exponent field, and
/// subnormals round like any other value, since no flush-to-zero happens here.
#[inline(always)]
pub fn f32_to_bf16_rne(x: f32) -> u16 {
    let bits = x.to_bits();
    // An early return, not a select: the NaN test is uniform in practice, and on
    // an H200 the branch version of the portable bf16 axpby (three roundings per
    // element, compute-bound) measured 3167 GB/s at 2^28 against 2972 for a
    // select version that computes both results.
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        // Keep sign and the top payload bits; force the quiet bit so a payload that
        // lived only in the low half cannot turn the NaN into an infinity.
        return ((bits >> 16) as u16) | 0x0040;
    }
    let round_bit_and_sticky = 0x7fff + ((bits >> 16) & 1);
    ((bits + round_bit_and_sticky) >> 16) as u16
}

/// sm_90's hardware rounding `cvt.rn.bf16.f32`: for every non-NaN input the
/// same bits as [`f32_to_bf16_rne`], in one instruction (NaN stays NaN). It
/// lives here, below `lanes` and `hopper`, because both round with it: the
/// portable `lanes::Bf16` in sm_90 builds and `hopper::Bf16Sm90`.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
#[inline(always)]
pub fn f32_to_bf16_cvt(x: f32) -> u16 {
    let r: u16;
    // SAFETY: a register conversion (round to nearest even; NaN stays NaN).
    unsafe { core::arch::asm!("cvt.rn.bf16.f32 {0}, {1};", out(reg16) r, in(reg32) x, options(pure, nomem, nostack)) };
    r
}

/// Two [`f32_to_bf16_cvt`] in one `cvt.rn.bf16x2.f32`, packed in a word:
/// `lo` in the low half, `hi` in the high half.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
#[inline(always)]
pub fn f32x2_to_bf16x2_cvt(lo: f32, hi: f32) -> u32 {
    let r: u32;
    // SAFETY: a register conversion (round to nearest even; NaN stays NaN);
    // the first source goes to the high half.
    unsafe {
        core::arch::asm!("cvt.rn.bf16x2.f32 {0}, {1}, {2};", out(reg32) r, in(reg32) hi, in(reg32) lo,
            options(pure, nomem, nostack))
    };
    r
}

/// The correctly rounded bfloat16 sum of two bfloat16 values.
///
/// The f32 sum is rounded once to 24 bits, then once more to 8 bits. Because
/// 24 >= 2 * 8 + 2, that double rounding of an addition equals a single correct
/// rounding (Figueroa's bound), so this is the IEEE round-to-nearest-even bf16 sum
/// on any target with IEEE f32 addition, sm_70 included.
#[inline(always)]
pub fn bf16_add(a: u16, b: u16) -> u16 {
    f32_to_bf16_rne(bf16_to_f32(a) + bf16_to_f32(b))
}

/// Widens a binary16 (given as its bits) to f32. Exact; a NaN keeps its sign
/// and payload (shifted into the top of f32's), as a hardware conversion does.
#[inline(always)]
pub fn f16_to_f32(x: u16) -> f32 {
    let sign = ((x & 0x8000) as u32) << 16;
    let a = (x & 0x7fff) as u32;
    let abs = if a >= 0x7c00 {
        // Infinity or NaN.
        0x7f80_0000 | ((a & 0x3ff) << 13)
    } else if a >= 0x0400 {
        // Normal: rebias the exponent (127 - 15 = 112).
        (a << 13) + (112 << 23)
    } else {
        // Zero or subnormal: a · 2^-24, exact in f32 (a < 2^10).
        (a as f32 * f32::from_bits(0x3380_0000)).to_bits()
    };
    f32::from_bits(sign | abs)
}

/// Rounds an f32 to the nearest binary16 (as its bits), ties to even.
///
/// Magnitudes from 65520 (65504 plus half its ulp) up round to infinity;
/// below 2^-14 the result is subnormal, rounded at 2^-24 (nothing is flushed);
/// up to 2^-25 (a tie with zero) it is a signed zero. A NaN stays NaN: its
/// sign and top 9 payload bits kept and the quiet bit set, which is what
/// compiler-rt's `__truncsfhf2` (Rust's `f32 as f16` on x86-64) gives.
#[inline(always)]
pub fn f32_to_f16_rne(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        return sign | 0x7e00 | ((a >> 13) & 0x1ff) as u16;
    }
    if a >= 0x477f_f000 {
        return sign | 0x7c00; // 65520 and up (infinity included)
    }
    if a >= 0x3880_0000 {
        // Normal (2^-14 and up): rebias, then round the 13 dropped bits to
        // nearest even; a carry runs into the exponent, which is right.
        let m = a - (112 << 23);
        let round = 0x0fff + ((m >> 13) & 1);
        return sign | ((m + round) >> 13) as u16;
    }
    if a <= 0x3300_0000 {
        return sign; // up to 2^-25: zero (2^-25 itself is a tie, to the even zero)
    }
    // Subnormal: the significand with its implicit bit, in units of 2^-24.
    let e = a >> 23; // 102..=112
    let mant = (a & 0x7f_ffff) | 0x80_0000;
    let shift = 126 - e; // 14..=24
    let k = mant >> shift;
    let rem = mant & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let k = if rem > half || (rem == half && k & 1 == 1) { k + 1 } else { k };
    sign | k as u16
}

/// True when the binary32 bits encode a NaN.
#[inline(always)]
pub const fn f32_is_nan(x: u32) -> bool {
    x & 0x7fff_ffff > 0x7f80_0000
}

/// True when the binary16 bits encode a NaN.
#[inline(always)]
pub const fn f16_is_nan(x: u16) -> bool {
    x & 0x7fff > 0x7c00
}

/// True when the bfloat16 bits encode a NaN.
#[inline(always)]
pub const fn bf16_is_nan(x: u16) -> bool {
    x & 0x7fff > 0x7f80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounding_ties_to_even_and_overflows_to_inf() {
        // 1.0 + half an ulp of bf16 (2^-8): tie, 1.0's mantissa is even, stays 1.0.
        assert_eq!(f32_to_bf16_rne(1.0 + f32::powi(2.0, -8)), 0x3f80);
        // 1.0078125 (odd last bit) + half ulp rounds up to even.
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0x3f81_8000)), 0x3f82);
        // Just above the tie rounds up.
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0x3f80_8001)), 0x3f81);
        // Largest finite bf16 plus a half ulp goes to +inf.
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0x7f7f_8000)), 0x7f80);
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0xff7f_8000)), 0xff80);
        assert_eq!(f32_to_bf16_rne(f32::INFINITY), 0x7f80);
        assert_eq!(f32_to_bf16_rne(-0.0), 0x8000);
    }

    #[test]
    fn bf16_nan_stays_nan_even_with_payload_only_in_low_bits() {
        let nan_low_payload = f32::from_bits(0x7f80_0001);
        assert!(nan_low_payload.is_nan());
        assert!(bf16_is_nan(f32_to_bf16_rne(nan_low_payload)));
        assert!(bf16_is_nan(f32_to_bf16_rne(f32::NAN)));
    }

    #[test]
    fn bf16_subnormals_are_not_flushed() {
        // Smallest positive bf16 subnormal, doubled, is exact.
        assert_eq!(bf16_add(0x0001, 0x0001), 0x0002);
        assert_eq!(bf16_add(0x8001, 0x0001), 0x0000);
    }

    /// The value of f16 bits, from the format's definition (not from the code
    /// above): (-1)^s · 2^(e-15) · 1.m, or 2^-14 · 0.m.
    fn f16_value(h: u16) -> f64 {
        let (s, e, m) = ((h >> 15) as i32, ((h >> 10) & 0x1f) as i32, (h & 0x3ff) as f64);
        let mag = match e {
            0 => m * 2f64.powi(-24),
            31 if m == 0.0 => f64::INFINITY,
            31 => f64::NAN,
            _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
        };
        if s == 1 {
            -mag
        } else {
            mag
        }
    }

    /// Round to nearest even f16 by value: the quotient by the ulp of the
    /// binade (exact in f64), rounded ties-to-even, then the bits found among
    /// all positive f16 (monotone in their bits).
    fn f16_reference(table: &[f64], x: f32) -> u16 {
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let v = (x as f64).abs();
        if x.is_nan() {
            return sign | 0x7e00 | ((x.to_bits() >> 13) & 0x1ff) as u16;
        }
        if v >= 65520.0 {
            return sign | 0x7c00;
        }
        let e = if v == 0.0 { -14 } else { v.log2().floor().max(-14.0) as i32 };
        // log2 of an exact power of two is exact; near a binade edge, fix e.
        let e = if v < 2f64.powi(e) && e > -14 { e - 1 } else { e };
        let e = if v >= 2f64.powi(e + 1) { e + 1 } else { e };
        let ulp = 2f64.powi(e - 10);
        let r = (v / ulp).round_ties_even() * ulp;
        let i = table.partition_point(|&v| v < r);
        assert_eq!(table[i], r, "{x:e}: {r:e} is not an f16");
        sign | i as u16
    }

    /// The values of the positive f16 bits 0..=0x7c00, increasing.
    fn f16_table() -> std::vec::Vec<f64> {
        (0u16..=0x7c00).map(f16_value).collect()
    }

    extern crate std;

    #[test]
    fn f16_widening_is_exact_for_every_f16() {
        for h in 0..=u16::MAX {
            let (w, v) = (f16_to_f32(h), f16_value(h));
            if v.is_nan() {
                assert!(w.is_nan() && (w.to_bits() >> 13) & 0x3ff == (h & 0x3ff) as u32, "{h:#06x}");
                assert_eq!(w.is_sign_negative(), h & 0x8000 != 0);
            } else {
                assert_eq!(w as f64, v, "{h:#06x}");
                assert_eq!(w.is_sign_negative(), h & 0x8000 != 0, "{h:#06x}");
            }
        }
    }

    /// Every rounding boundary: for each f16 value, itself, the f32 midpoints
    /// to its neighbours (the ties) and the f32 next to them on both sides, and
    /// a few more values in between; above 65504 and below 2^-24 the same;
    /// then every NaN payload class and a sweep of 2^20 f32 spread over all
    /// exponents. Checked against `f16_reference`.
    #[test]
    fn f16_rounding_matches_the_reference_at_every_boundary() {
        let mut cases = std::vec::Vec::new();
        for h in 0u16..0x7c00 {
            let lo = f16_value(h);
            let hi = if h == 0x7bff { 65536.0 } else { f16_value(h + 1) };
            for v in [lo, (lo + hi) / 2.0, lo + (hi - lo) / 4.0, lo + 3.0 * (hi - lo) / 4.0] {
                let f = v as f32; // every one is an f32 exactly
                assert_eq!(f as f64, v);
                let b = f.to_bits();
                cases.extend([b, b.wrapping_sub(1), b + 1, b + 2]);
            }
        }
        // Around and below the smallest subnormal, and above the largest finite.
        for b in 0x3200_0000u32..0x3300_0000 + 0x1000 {
            if b % 97 == 0 || b >= 0x32ff_f000 {
                cases.push(b);
            }
        }
        cases.extend([0, 1, 0x477f_efff, 0x477f_f000, 0x477f_f001, 0x4780_0000, 0x7f7f_ffff, 0x7f80_0000]);
        cases.extend((0..1u32 << 20).map(|i| i.wrapping_mul(0x9e37_79b9) >> 1)); // spread over all exponents
        let table = f16_table();
        let mut n = 0u64;
        for b in cases {
            for x in [f32::from_bits(b & 0x7fff_ffff), f32::from_bits(b | 0x8000_0000)] {
                assert_eq!(f32_to_f16_rne(x), f16_reference(&table, x), "{:#010x} ({x:e})", x.to_bits());
                n += 1;
            }
        }
        assert!(n > 1_000_000, "{n}");
        // NaNs: quiet, sign and top payload bits kept, never infinity.
        for b in [0x7f80_0001u32, 0x7f80_1fff, 0x7fc0_0000, 0x7fbf_ffff, 0x7fff_ffff, 0x7fa0_2000] {
            for x in [b, b | 0x8000_0000] {
                let h = f32_to_f16_rne(f32::from_bits(x));
                assert!(f16_is_nan(h) && h & 0x0200 != 0, "{x:#010x} -> {h:#06x}");
                assert_eq!(h, f16_reference(&table, f32::from_bits(x)));
            }
        }
        // Widening then narrowing gives every f16 back.
        for h in 0..=u16::MAX {
            let back = f32_to_f16_rne(f16_to_f32(h));
            assert!(back == h || (f16_is_nan(h) && back == h | 0x0200), "{h:#06x} -> {back:#06x}");
        }
    }

    /// Every one of the 2^32 f32 against the reference (a minute or two on a
    /// few cores in release: `cargo test --release -p gpukern-device --lib --
    /// --ignored`).
    #[test]
    #[ignore = "2^32 cases: run in release"]
    fn f16_rounding_matches_the_reference_for_every_f32() {
        let table = f16_table();
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get()) as u64;
        let chunk = (1u64 << 32).div_ceil(threads);
        std::thread::scope(|s| {
            for t in 0..threads {
                let table = &table;
                s.spawn(move || {
                    for b in (t * chunk)..((t + 1) * chunk).min(1 << 32) {
                        let x = f32::from_bits(b as u32);
                        let (got, want) = (f32_to_f16_rne(x), f16_reference(table, x));
                        assert_eq!(got, want, "{b:#010x} ({x:e})");
                    }
                });
            }
        });
    }

    #[test]
    fn nan_classes_match_the_formats() {
        assert!(f32_is_nan(f32::NAN.to_bits()));
        assert!(!f32_is_nan(f32::INFINITY.to_bits()));
        assert!(f16_is_nan(0x7e00) && f16_is_nan(0xfc01) && !f16_is_nan(0x7c00));
        assert!(bf16_is_nan(0x7fc0) && bf16_is_nan(0xff81) && !bf16_is_nan(0xff80));
    }
}
