//! Other crates' buffers (feature `cudarc`): gpukern's element-wise operations
//! on cudarc's `CudaSlice<T>`, `CudaView<T>` and `CudaViewMut<T>`, queued on a
//! cudarc stream.
//!
//! Both libraries use the device's primary context, so a cudarc buffer's
//! address is valid in gpukern's kernels. The operands are cudarc's own
//! concrete types, through the sealed [`CudarcInput`] / [`CudarcOutput`]:
//! cudarc's traits (`DeviceSlice`, `DevicePtr`) are safe to implement, so a
//! type of anyone's could claim any address and length through them; cudarc's
//! own types hold what cudarc allocated. Each call checks that the stream's
//! context *and every operand's* is this `Gpu`'s (an address of another
//! context means nothing here), takes the addresses through cudarc (so the
//! stream first waits for earlier writes, and cudarc records the reads and
//! the write when the call returns), and launches on the stream with the
//! automatic choice.
//!
//! A type of one's own does not compile as an operand, even with cudarc's
//! traits implemented (`host/tests/compile_fail/forged_device_ptr.rs`).
//!
//! Ordering across streams ([`Fences`]): cudarc 0.19 keeps *one* read event
//! per buffer and records it again on each reader's stream, so after reads
//! on streams r1 then r2, a write on r3 waits for r2's read only. Two things
//! close that gap for gpukern's own calls: a read first waits for the
//! buffer's read event (so the event, recorded again after it, still covers
//! the earlier readers), and every gpukern read of a cudarc buffer records an
//! event of its stream in a table that every gpukern write of a cudarc buffer
//! waits for. The table's lock is held from the first address taken to the
//! last event recorded, so a concurrent call cannot slip between them.

pub(crate) mod ext;
pub(crate) mod glu;
pub(crate) mod norms;

pub use ext::CudarcExt;
pub use norms::CudarcNorm;

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr};
use cudarc::driver::{DevicePtrMut, DeviceSlice, SyncOnDrop};
use kernels_gpu::ops::OpKind;

use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::launch::operands::Operands;
use crate::memory::buffer::{Element, View, ViewMut};

mod sealed {
    /// Only cudarc's concrete buffer types: their addresses are cudarc's allocations.
    pub trait Sealed {}
}

/// A cudarc buffer gpukern may read (sealed: `CudaSlice<T>`, `CudaView<T>`,
/// `CudaViewMut<T>`).
pub trait CudarcInput<T>: sealed::Sealed {
    /// Its context (that of the stream it was allocated on).
    #[doc(hidden)]
    fn cudarc_context(&self) -> &Arc<CudaContext>;
    /// Its address for a read on `stream`, and the guard that records the read.
    #[doc(hidden)]
    fn read_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>);
    /// Elements.
    #[doc(hidden)]
    fn elements(&self) -> usize;
}

/// A cudarc buffer gpukern may write (sealed: `CudaSlice<T>`, `CudaViewMut<T>`).
pub trait CudarcOutput<T>: sealed::Sealed {
    /// Its context.
    #[doc(hidden)]
    fn cudarc_context(&self) -> &Arc<CudaContext>;
    /// Its address for a write on `stream`, and the guard that records the write.
    #[doc(hidden)]
    fn write_ptr<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>);
    /// Elements.
    #[doc(hidden)]
    fn elements(&self) -> usize;
}

macro_rules! cudarc_input {
    ($($ty:ty),*) => {$(
        impl<T> sealed::Sealed for $ty {}
        impl<T> CudarcInput<T> for $ty {
            fn cudarc_context(&self) -> &Arc<CudaContext> {
                DeviceSlice::stream(self).context()
            }
            fn read_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                DevicePtr::device_ptr(self, stream)
            }
            fn elements(&self) -> usize {
                DeviceSlice::len(self)
            }
        }
    )*};
}
cudarc_input!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

macro_rules! cudarc_output {
    ($($ty:ty),*) => {$(
        impl<T> CudarcOutput<T> for $ty {
            fn cudarc_context(&self) -> &Arc<CudaContext> {
                DeviceSlice::stream(self).context()
            }
            fn write_ptr<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                DevicePtrMut::device_ptr_mut(self, stream)
            }
            fn elements(&self) -> usize {
                DeviceSlice::len(self)
            }
        }
    )*};
}
cudarc_output!(CudaSlice<T>, CudaViewMut<'_, T>);

impl Gpu {
    /// Errors unless `ctx` is this `Gpu`'s context on its device.
    pub(crate) fn check_cudarc_context(&self, op: &'static str, ctx: &CudaContext) -> Result<()> {
        let same = std::ptr::addr_eq(ctx.cu_ctx(), self.shared.ctx.as_raw()) && ctx.ordinal() == self.info().index;
        if !same {
            return Err(Error::ForeignContext { kernel: op, device: self.info().index });
        }
        Ok(())
    }

    /// Runs `kind` on cudarc operands ([`crate::CudarcExt`]'s element-wise
    /// calls): `b` for two-input kinds, `scales` for axpby.
    pub(crate) fn cudarc_map<T: Element, A: CudarcInput<T>, B: CudarcInput<T>>(
        &self,
        kind: OpKind,
        a: &A,
        b: Option<&B>,
        out: &mut impl CudarcOutput<T>,
        scales: Option<(f32, f32)>,
        stream: &CudaStream,
    ) -> Result<()> {
        let op = kind.name();
        // The stream and every operand in this Gpu's context, before any address is taken.
        self.check_cudarc_context(op, stream.context())?;
        self.check_cudarc_context(op, a.cudarc_context())?;
        if let Some(b) = b {
            self.check_cudarc_context(op, b.cudarc_context())?;
        }
        self.check_cudarc_context(op, out.cudarc_context())?;
        // The fences make `stream` wait for earlier uses now and record this
        // call's reads and write when they drop, after the launch is queued.
        let mut guards = Fences::new(stream);
        let a = input(self, a, stream, &mut guards)?;
        let b = b.map(|b| input(self, b, stream, &mut guards)).transpose()?;
        let out = output(self, out, stream, &mut guards)?;
        let ops = Operands::<T> { a, b, out, scales };
        self.map_auto(kind, ops, crate::raw::Queue::untracked(stream.cu_stream()), crate::Pdl::Auto)
    }
}

/// gpukern's reads of cudarc buffers: one event per stream that read, the
/// last read recorded in it (see the module docs).
/// (The stream's handle is kept as an address: it is only compared.)
static READS: Mutex<Vec<(usize, CudaEvent)>> = Mutex::new(Vec::new());

/// The ordering of one call on cudarc buffers: cudarc's guards, and the
/// read table's lock from the first address taken until, after the launch
/// is queued, the guards and this call's read event have been recorded.
pub(crate) struct Fences<'g> {
    guards: Vec<SyncOnDrop<'g>>,
    stream: &'g CudaStream,
    read: bool,
    reads: MutexGuard<'static, Vec<(usize, CudaEvent)>>,
}

impl<'g> Fences<'g> {
    /// Fences for one call on `stream` (locks the read table).
    pub(crate) fn new(stream: &'g CudaStream) -> Fences<'g> {
        let reads = READS.lock().unwrap_or_else(|p| p.into_inner());
        Fences { guards: Vec::new(), stream, read: false, reads }
    }

    /// `stream` waits for every earlier gpukern read of a cudarc buffer
    /// (before a write); finished ones leave the table.
    fn after_reads(&mut self) -> Result<()> {
        self.reads.retain(|(_, e)| !e.is_complete());
        let ctx = self.stream.context();
        for (_, e) in self.reads.iter().filter(|(_, e)| Arc::ptr_eq(e.context(), ctx)) {
            self.stream.wait(e).map_err(cudarc_error)?;
        }
        Ok(())
    }
}

impl Drop for Fences<'_> {
    fn drop(&mut self) {
        // cudarc's events first, then this stream's read event, still locked.
        self.guards.clear();
        if !self.read {
            return;
        }
        let cu = self.stream.cu_stream() as usize;
        let ctx = self.stream.context();
        let slot = self.reads.iter().position(|(s, e)| *s == cu && Arc::ptr_eq(e.context(), ctx));
        match slot {
            // The stream waited for the old record at the first input (so a
            // stream handle reused since is covered too): record it again.
            Some(i) => ctx.record_err(self.reads[i].1.record(self.stream)),
            None => match ctx.new_event(None) {
                Ok(e) => {
                    ctx.record_err(e.record(self.stream));
                    self.reads.push((cu, e));
                }
                // No event: wait for the read here rather than leave it
                // unordered against a later write.
                Err(e) => ctx.record_err(Err::<(), _>(e).or_else(|_| self.stream.synchronize())),
            },
        }
    }
}

/// A cudarc driver error as this crate's.
fn cudarc_error(e: cudarc::driver::DriverError) -> Error {
    use cudarc::driver::sys::CUresult;
    let code = if e.0 == CUresult::CUDA_SUCCESS { CUresult::CUDA_ERROR_UNKNOWN } else { e.0 };
    match crate::raw::check(code) {
        Err(source) => Error::Driver { context: "cudarc stream wait", source },
        Ok(()) => Error::DeviceReset { what: "cudarc stream" },
    }
}

/// A view of a cudarc input (its context checked by the caller), its guard
/// kept in `guards` until the caller has queued its work.
pub(crate) fn input<'g, T: Element>(
    gpu: &'g Gpu,
    v: &'g (impl CudarcInput<T> + ?Sized),
    stream: &'g CudaStream,
    guards: &mut Fences<'g>,
) -> Result<View<'g, T>> {
    let (n, (addr, guard)) = (v.elements(), v.read_ptr(stream));
    // The buffer's last reader (cudarc re-records one event per buffer) and
    // this stream's last gpukern read of a cudarc buffer come first, so the
    // events recorded after this call still cover them.
    if let SyncOnDrop::Record(Some((read, _))) = &guard {
        stream.wait(read).map_err(cudarc_error)?;
    }
    if !guards.read {
        let cu = stream.cu_stream() as usize;
        if let Some((_, e)) = guards.reads.iter().find(|(s, e)| *s == cu && Arc::ptr_eq(e.context(), stream.context()))
        {
            stream.wait(e).map_err(cudarc_error)?;
        }
        guards.read = true;
    }
    guards.guards.push(guard);
    // SAFETY (the view's contract): `v` is one of cudarc's own buffer types
    // (sealed trait), so `addr .. + n` is a range cudarc allocated, in this
    // Gpu's context (the caller checked it); the borrow keeps it allocated for
    // the call. The stream waits for the buffer's earlier writes (cudarc's
    // guard); a later write through cudarc waits for this read (its read
    // event, recorded after the launch, covers earlier readers too, above),
    // and a later write through gpukern waits for every gpukern read (the
    // table, `Fences`).
    unsafe { View::from_raw_parts(gpu, addr, n) }
}

/// A writable view of a cudarc output (its context checked by the caller),
/// its guard kept in `guards`.
pub(crate) fn output<'g, T: Element>(
    gpu: &'g Gpu,
    v: &'g mut (impl CudarcOutput<T> + ?Sized),
    stream: &'g CudaStream,
    guards: &mut Fences<'g>,
) -> Result<ViewMut<'g, T>> {
    let n = v.elements();
    let (addr, guard) = v.write_ptr(stream);
    guards.guards.push(guard);
    guards.after_reads()?;
    // SAFETY: as in `input`; `v` is borrowed exclusively, so no input of the
    // call is the same buffer, and nothing else writes it meanwhile; the
    // stream waits for the buffer's last write and read (cudarc's guard) and
    // for every gpukern read of a cudarc buffer on any stream (the table).
    unsafe { ViewMut::from_raw_parts(gpu, addr, n) }
}
