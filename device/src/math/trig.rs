//! `sin` and `cos`: reduction by pi/2 (three-part Cody–Waite on FMAs for |x| <
//! 2^17, Payne–Hanek with 64-bit integer products and the bits of 2/pi above),
//! the remainder kept as a pair `(r, rl)`, and degree-9/8 kernels on |r| <= pi/4.

use super::exp::horner;
use super::prim::fma;

/// `(sin r - r)/r^3` in `r^2`, |r| <= pi/4.
const SIN_S: [f32; 4] = [-0.166_666_67, 0.008_333_329, -0.000_198_393_35, 2.718_311_6e-6];
/// `(cos r - 1 + r^2/2)/r^4` in `r^2`, |r| <= pi/4.
const COS_C: [f32; 4] = [0.041_666_668, -0.001_388_888_3, 2.479_952e-5, -2.721_023_7e-7];
/// pi/2 in three parts: `q P1` leaves an exact remainder (one FMA, |q| < 2^17),
/// `q P2` is subtracted as a TwoProd/TwoSum pair, `q P3` goes to the low part.
const PIO2_1: f32 = 1.570_796_4;
const PIO2_2: f32 = -4.371_139e-8;
const PIO2_3: f32 = -1.715_124_5e-15;
/// 2/pi after the binary point, 8 zero bits in front, as big-endian u32 words.
/// A `static`, not a `const`: indexed at run time, a `const` array is copied to
/// the stack (`.local` memory in PTX); a `static` is read from global memory.
static TWO_OVER_PI: [u32; 8] =
    [0x00a2_f983, 0x6e4e_4415, 0x29fc_2757, 0xd1f5_34dd, 0xc0db_6295, 0x993c_4390, 0x41fe_5163, 0xabde_bbc5];

/// `x = q pi/2 + r + rl`, |r| <= pi/4 (a hair more), `q` mod 4 in the low bits.
#[inline(always)]
fn reduce(x: f32) -> (f32, f32, u32) {
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    if ax < 131_072.0 {
        let t = fma(x, core::f32::consts::FRAC_2_PI, 12_582_912.0);
        let q = t.to_bits().wrapping_sub(0x4b40_0000);
        let qf = t - 12_582_912.0;
        // Exact: a multiple of 2^-23 (or of ulp(x)) below 1.
        let r1 = fma(qf, -PIO2_1, x);
        // r1 - q P2 by TwoProd and TwoSum: when it cancels, `r1 - r` is not exact,
        // so the low part is not the FMA residual (5.8 ulp at x = 7571.2).
        let p = qf * PIO2_2;
        let pl = fma(qf, PIO2_2, -p);
        let r = r1 - p;
        let bb = r - r1;
        let rl = (r1 - (r - bb)) - (p + bb);
        let rl = fma(qf, -PIO2_3, rl - pl);
        (r, rl, q)
    } else {
        payne_hanek(x)
    }
}

/// Payne–Hanek for |x| >= 2^17 (finite): `m 2^E (2/pi)` from a 128-bit window
/// of the 2/pi bits; the integer part mod 4 and 64 fraction bits. Inlined: an
/// out-of-line call returns the 12-byte tuple through `.local` memory in PTX.
#[inline(always)]
fn payne_hanek(x: f32) -> (f32, f32, u32) {
    let b = x.to_bits();
    let m = ((b & 0x007f_ffff) | 0x0080_0000) as u64;
    let e = ((b >> 23) & 0xff) as i32 - 150; // x = m 2^e, e >= -6
    let i0 = (e + 6) as u32; // first table bit used (bits of weight >= 4 dropped)
    let w = (i0 >> 5) as usize;
    let sh = i0 & 31;
    let word = |j: usize| TWO_OVER_PI[w + j] as u64;
    let x0 = (word(0) << 32) | word(1);
    let x1 = (word(2) << 32) | word(3);
    let x2 = word(4) << 32;
    let wh = (x0 << sh) | ((x1 >> 1) >> (63 - sh));
    let wl = (x1 << sh) | ((x2 >> 1) >> (63 - sh));
    // x (2/pi) = m (wh 2^64 + wl) 2^-126; keep bits 62.. of the product.
    let ph = (m as u128) * (wh as u128);
    let pl = (m as u128) * (wl as u128);
    let z = (ph << 2) + (pl >> 62);
    let frac = z as u64;
    let q = ((z >> 64) as u32).wrapping_add((frac >> 63) as u32);
    let f = frac as i64; // the remainder in [-1/2, 1/2) units of 2^-64 turns
    let hi = f as f32;
    let lo = (f.wrapping_sub(hi as i64)) as f32;
    const C: f32 = 8.515_304e-20; // pi/2 2^-64
    const CL: f32 = -2.369_599_1e-27; // pi/2 2^-64 - C
    let r = hi * C;
    let rl = fma(hi, C, -r) + fma(hi, CL, lo * C);
    let s = r + rl;
    let sl = rl - (s - r);
    if b & 0x8000_0000 != 0 {
        (-s, -sl, q.wrapping_neg())
    } else {
        (s, sl, q)
    }
}

#[inline(always)]
fn sin_k(r: f32, rl: f32) -> f32 {
    let r2 = r * r;
    r + fma(r * r2, horner(&SIN_S, r2), rl)
}

#[inline(always)]
fn cos_k(r: f32, rl: f32) -> f32 {
    let r2 = r * r;
    let h = fma(r2, -0.5, 1.0);
    let hl = fma(r2, -0.5, 1.0 - h); // exact residual of h
    h + (fma(r2 * r2, horner(&COS_C, r2), hl) - r * rl)
}

/// `sin` or `cos` of quadrant `q` from the reduced pair.
#[inline(always)]
fn quadrant(r: f32, rl: f32, q: u32) -> f32 {
    let v = if q & 1 == 0 { sin_k(r, rl) } else { cos_k(r, rl) };
    if q & 2 == 0 {
        v
    } else {
        -v
    }
}

/// The sine, correct over the whole f32 range. Shape: |x| < 2^17: three-part
/// Cody–Waite (4 FMAs); larger: Payne–Hanek (integer 24x128-bit product);
/// degree-9 odd or degree-8 even kernel by quadrant. Special values: NaN -> NaN,
/// `±inf -> NaN`, `±0 -> ±0`, subnormal inputs return themselves.
#[inline]
pub fn sin(x: f32) -> f32 {
    if x - x != 0.0 {
        return x - x;
    }
    if f32::from_bits(x.to_bits() & 0x7fff_ffff) < 1e-30 {
        return x;
    }
    let (r, rl, q) = reduce(x);
    quadrant(r, rl, q)
}

/// The cosine, correct over the whole f32 range (shape as [`sin`], quadrant +
/// 1). Special values: NaN -> NaN, `±inf -> NaN`, `cos(±0) = 1`.
#[inline]
pub fn cos(x: f32) -> f32 {
    if x - x != 0.0 {
        return x - x;
    }
    let (r, rl, q) = reduce(x);
    quadrant(r, rl, q.wrapping_add(1))
}
