//! Hopper-only PTX (sm_90, PTX ISA 8.0) as small Rust functions: shared-memory
//! barriers with transaction counts, the bulk-copy engine (`cp.async.bulk`) and
//! programmatic dependent launch (`griddepcontrol`).
//!
//! Only the sm_90 build compiles this. Addresses in the shared window are 32-bit
//! (`.shared` state space); global operands are converted from generic pointers
//! with `cvta.to.global` inside each instruction's scope.

use core::arch::asm;

use crate::lanes::{Bf16, Elem};

/// The shared-window address of a generic pointer into this block's shared memory.
#[inline(always)]
pub fn shared_addr<T>(p: *const T) -> u32 {
    let a: u32;
    // SAFETY: address arithmetic only; no memory is touched.
    unsafe {
        asm!(
            "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; cvt.u32.u64 {a}, s; }}",
            p = in(reg64) p, a = out(reg32) a,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    a
}

/// Programmatic dependent launch, the dependent's side: waits until every grid
/// this one was launched to overlap (with the programmatic-serialisation
/// attribute) has completed and its memory writes are visible. Without the
/// attribute the wait returns at once, so a kernel with it stays correct under
/// any launch. It must come before the first access to memory a predecessor
/// may write or read (the host launches with the attribute only kernels that
/// call [`pdl_enter`] first thing).
#[inline(always)]
pub fn grid_dependency_wait() {
    // SAFETY: no operands; not `nomem`, so the compiler moves no memory access
    // above it.
    unsafe { asm!("griddepcontrol.wait;", options(nostack, preserves_flags)) }
}

/// Programmatic dependent launch, the primary's side: lets the next kernel of
/// the stream (when launched with the attribute) be scheduled now. It changes
/// no memory rule: that kernel's [`grid_dependency_wait`] still waits for this
/// whole grid to complete.
#[inline(always)]
pub fn launch_dependents() {
    // SAFETY: no operands; a scheduling hint.
    unsafe { asm!("griddepcontrol.launch_dependents;", options(nostack, preserves_flags)) }
}

/// The prologue of every PDL kernel: wait for the predecessor, then let the
/// successor launch. Triggering right after the wait (not after the last load)
/// lets the next launch's set-up overlap this grid's whole run, which is the
/// point at the sizes the host uses PDL for (grids of one wave); triggering
/// only after the wait keeps at most one grid waiting behind a running one.
#[inline(always)]
pub fn pdl_enter() {
    grid_dependency_wait();
    launch_dependents();
}

/// `mbarrier.init`: a barrier expecting `count` arrivals per phase.
///
/// # Safety
/// `bar` is an 8-byte aligned shared address of this block, not in use as a barrier.
#[inline(always)]
pub unsafe fn mbar_init(bar: u32, count: u32) {
    // SAFETY: per the contract.
    unsafe { asm!("mbarrier.init.shared::cta.b64 [{0}], {1};", in(reg32) bar, in(reg32) count, options(nostack)) }
}

/// Makes barrier initialisation visible to the bulk-copy engine (the async proxy);
/// a block barrier must follow before other threads use the barriers.
#[inline(always)]
pub fn fence_barrier_init() {
    // SAFETY: a fence; no operands.
    unsafe { asm!("fence.mbarrier_init.release.cluster;", "fence.proxy.async.shared::cta;", options(nostack)) }
}

/// `mbarrier.arrive.expect_tx`: arrives once and adds `bytes` to the transaction
/// count of the current phase, which completes when that many bytes have landed.
///
/// # Safety
/// `bar` is an initialised barrier of this block.
#[inline(always)]
pub unsafe fn mbar_arrive_expect_tx(bar: u32, bytes: u32) {
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "{{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [{0}], {1}; }}",
            in(reg32) bar, in(reg32) bytes,
            options(nostack),
        )
    }
}

/// True once the phase with parity `parity` of `bar` has completed. Has acquire
/// semantics: what the bulk copies of that phase wrote is visible after it.
///
/// # Safety
/// `bar` is an initialised barrier of this block.
#[inline(always)]
pub unsafe fn mbar_try_wait(bar: u32, parity: u32) -> bool {
    let done: u32;
    // SAFETY: per the contract. Not `nomem`: the compiler must not move shared
    // loads of the landed data above the wait.
    unsafe {
        asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{1}], {2}; selp.u32 {0}, 1, 0, p; }}",
            out(reg32) done, in(reg32) bar, in(reg32) parity,
            options(nostack),
        )
    }
    done != 0
}

/// Waits until phase `parity` of `bar` has completed.
///
/// # Safety
/// As [`mbar_try_wait`].
#[inline(always)]
pub unsafe fn mbar_wait(bar: u32, parity: u32) {
    // SAFETY: forwarded.
    while !unsafe { mbar_try_wait(bar, parity) } {}
}

/// `mbarrier.inval`: retires a barrier so its memory may be reused.
///
/// # Safety
/// No thread waits on or arrives at `bar` any more.
#[inline(always)]
pub unsafe fn mbar_inval(bar: u32) {
    // SAFETY: per the contract.
    unsafe { asm!("mbarrier.inval.shared::cta.b64 [{0}];", in(reg32) bar, options(nostack)) }
}

/// `cp.async.bulk` global → shared: copies `bytes` from `src` to the shared
/// address `dst` on the bulk-copy engine and signals completion of those bytes
/// on `bar`.
///
/// # Safety
/// `src` is readable global memory of `bytes` bytes, `dst` a shared range of this
/// block of that size that no thread touches until `bar` completes; both 16-byte
/// aligned, `bytes` a multiple of 16; `bar` expects these bytes in its phase.
#[inline(always)]
pub unsafe fn bulk_load(dst: u32, src: *const u8, bytes: u32, bar: u32) {
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {src}; cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [g], {bytes}, [{bar}]; }}",
            dst = in(reg32) dst, src = in(reg64) src, bytes = in(reg32) bytes, bar = in(reg32) bar,
            options(nostack),
        )
    }
}

/// Makes this thread's ordinary shared-memory writes visible to the bulk-copy
/// engine (the async proxy); a block barrier must follow before the copy is issued.
#[inline(always)]
pub fn fence_async_shared() {
    // SAFETY: a fence; no operands.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) }
}

/// `cp.async.bulk` shared → global in a bulk group, then commits the group.
///
/// # Safety
/// `src` is a shared range of this block of `bytes` bytes that stays unchanged
/// until [`bulk_wait_read`] returns; `dst` writable global memory of that size
/// that nothing else touches meanwhile; both 16-byte aligned, `bytes` a multiple of 16.
#[inline(always)]
pub unsafe fn bulk_store(dst: *mut u8, src: u32, bytes: u32) {
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {dst}; cp.async.bulk.global.shared::cta.bulk_group [g], [{src}], {bytes}; }}",
            "cp.async.bulk.commit_group;",
            dst = in(reg64) dst, src = in(reg32) src, bytes = in(reg32) bytes,
            options(nostack),
        )
    }
}

/// Waits until every bulk store this thread committed has finished reading its
/// shared-memory source (`cp.async.bulk.wait_group.read 0`).
#[inline(always)]
pub fn bulk_wait_read() {
    // SAFETY: waits only; no operands.
    unsafe { asm!("cp.async.bulk.wait_group.read 0;", options(nostack)) }
}

/// bfloat16 with the packed bf16 instructions of sm_90 (`add/sub/mul.rn.bf16x2`)
/// and the hardware conversion `cvt.rn.bf16.f32` (sm_80 and up): the same
/// correctly rounded results as [`crate::lanes::Bf16`]'s integer rounding, in a
/// few instructions per lane instead of a dozen, which is what keeps bf16 axpby
/// (three roundings per element) memory-bound.
pub struct Bf16Sm90;

// Everything but the rounding is `Bf16`'s: the same bits in the same lanes.
impl Elem for Bf16Sm90 {
    type T = u16;
    const SIGN: u32 = Bf16::SIGN;
    const INF: u32 = Bf16::INF;
    #[inline(always)]
    fn bits(x: u16) -> u32 {
        Bf16::bits(x)
    }
    #[inline(always)]
    fn from_bits(x: u32) -> u16 {
        Bf16::from_bits(x)
    }
    #[inline(always)]
    fn widen(x: u16) -> f32 {
        Bf16::widen(x)
    }
    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        crate::bits::f32_to_bf16_cvt(x)
    }
    #[inline(always)]
    fn zip_word(x: u32, y: u32, f: impl Fn(u16, u16) -> u16) -> u32 {
        Bf16::zip_word(x, y, f)
    }
    #[inline(always)]
    fn splat(x: u16) -> u32 {
        Bf16::splat(x)
    }
}

/// Declares `Op<Bf16Sm90>` for an arithmetic op: one lane with `$one`
/// (`add.rn.bf16`, …) and a word with `$two` (`add.rn.bf16x2`, …).
macro_rules! bf16_sm90_arithmetic {
    ($($op:ident: $one:literal, $two:literal;)*) => {$(
        impl crate::lanes::Op<Bf16Sm90> for crate::lanes::$op {
            #[inline(always)]
            fn one(self, x: u16, y: u16) -> u16 {
                let r: u16;
                // SAFETY: register arithmetic, IEEE round to nearest even.
                unsafe { asm!(concat!($one, " {0}, {1}, {2};"), out(reg16) r, in(reg16) x, in(reg16) y, options(pure, nomem, nostack)) };
                r
            }
            #[inline(always)]
            fn word(self, x: u32, y: u32) -> u32 {
                let r: u32;
                // SAFETY: as above, on both halves.
                unsafe { asm!(concat!($two, " {0}, {1}, {2};"), out(reg32) r, in(reg32) x, in(reg32) y, options(pure, nomem, nostack)) };
                r
            }
        }
    )*};
}

bf16_sm90_arithmetic! {
    Add: "add.rn.bf16", "add.rn.bf16x2";
    Sub: "sub.rn.bf16", "sub.rn.bf16x2";
    Mul: "mul.rn.bf16", "mul.rn.bf16x2";
}
