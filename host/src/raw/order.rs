//! Ordering across streams: every allocation of this crate remembers the
//! streams that queued work on it, and work queued on another stream first
//! waits for them (an event recorded there, then `cuStreamWaitEvent`), so a
//! kernel never reads memory that work on another stream may still write, or
//! writes memory that it may still read. A buffer used on one stream only
//! costs one atomic load per operand and no event: stream order suffices.
//!
//! Events are recorded lazily: when a second stream appears, an event is
//! recorded on the first one *then*, which covers everything queued there so
//! far, the earlier uses included. So a stream must outlive the record: the
//! allocation's tracker holds an `Arc` of every stream it remembers.
//!
//! A stream is forgotten only by a write that covers the whole allocation
//! (after it waited for all of them): such a write holds the buffer's only
//! borrow (`&mut`), so no other thread can be queueing work on the buffer
//! meanwhile. Writes through disjoint sub-views (`split_at_mut`) may be
//! queued concurrently from several threads; they only ever add streams.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys as cu;

use super::{DevRead, DevWrite, RawStream};
use crate::error::{DriverError, Result};

/// `solo`: no stream has used the allocation yet.
const UNUSED: usize = 0;
/// `solo`: several streams have (the slow path decides).
const SEVERAL: usize = 2;
/// `solo` bit: the one stream's uses include a write.
const WROTE: usize = 1;

/// What one allocation remembers of the streams that used it.
pub(crate) struct Track {
    base: u64,
    bytes: usize,
    /// `UNUSED`, `SEVERAL`, or the address of the one stream (`Arc::as_ptr`,
    /// held in `uses`, so never reused while stored) with `WROTE`.
    solo: AtomicUsize,
    uses: Mutex<Vec<StreamUse>>,
    /// An asynchronous operation of the legacy stream (a fill, an upload's
    /// last DMA) touched it: the free waits for that stream too.
    legacy: AtomicBool,
}

struct StreamUse {
    stream: Arc<RawStream>,
    wrote: bool,
}

impl Track {
    pub(crate) fn new(base: u64, bytes: usize) -> Track {
        Track {
            base,
            bytes,
            solo: AtomicUsize::new(UNUSED),
            uses: Mutex::new(Vec::new()),
            legacy: AtomicBool::new(false),
        }
    }

    /// Makes `s` wait for what it must (fast: one atomic load when `s` is the
    /// only stream that used the allocation), and remembers this use. Called
    /// before the work is queued; the streams remembered stay so, so a later
    /// conflicting use records its event after this work.
    fn order(&self, s: &Arc<RawStream>, write: bool, whole: bool) -> Result<()> {
        let me = Arc::as_ptr(s) as usize;
        let solo = self.solo.load(Ordering::Acquire);
        if solo == me | WROTE || (!write && solo == me) {
            return Ok(());
        }
        let mut uses = self.uses.lock().unwrap_or_else(|p| p.into_inner());
        for u in uses.iter().filter(|u| !Arc::ptr_eq(&u.stream, s) && (write || u.wrote)) {
            s.wait_for(&u.stream)?;
        }
        if write && whole {
            // Everything before is ordered before `s` now (see the module doc).
            uses.retain(|u| Arc::ptr_eq(&u.stream, s));
        }
        match uses.iter_mut().find(|u| Arc::ptr_eq(&u.stream, s)) {
            Some(u) => u.wrote |= write,
            None => uses.push(StreamUse { stream: s.clone(), wrote: write }),
        }
        let solo = match uses.as_slice() {
            [only] => me | only.wrote as usize,
            _ => SEVERAL,
        };
        self.solo.store(solo, Ordering::Release);
        Ok(())
    }

    /// Notes an asynchronous legacy-stream operation on the allocation.
    pub(crate) fn note_legacy(&self) {
        if !self.legacy.load(Ordering::Relaxed) {
            self.legacy.store(true, Ordering::Relaxed);
        }
    }

    /// True once [`Track::note_legacy`] was called.
    pub(crate) fn legacy_used(&self) -> bool {
        self.legacy.load(Ordering::Relaxed)
    }

    /// Waits on the host for the streams that used the allocation (those
    /// that wrote it, with `writers_only`): before the host reads (or, all of
    /// them, writes) pinned host memory that copies may still use.
    pub(crate) fn wait_host(&self, writers_only: bool) -> Result<(), DriverError> {
        let streams: Vec<Arc<RawStream>> = {
            let uses = self.uses.lock().unwrap_or_else(|p| p.into_inner());
            uses.iter().filter(|u| u.wrote || !writers_only).map(|u| u.stream.clone()).collect()
        };
        streams.iter().try_for_each(|s| s.synchronize())
    }

    /// Whether a stream that used the allocation (wrote it, with
    /// `writers_only`) is remembered: work queued there may touch it until
    /// it is waited for and forgotten ([`Track::forget`]).
    pub(crate) fn remembers(&self, writers_only: bool) -> bool {
        let uses = self.uses.lock().unwrap_or_else(|p| p.into_inner());
        uses.iter().any(|u| u.wrote || !writers_only)
    }

    /// Forgets every stream, after [`Track::wait_host`] waited for all of
    /// them (`&mut`: no other use can be queued meanwhile).
    pub(crate) fn forget(&mut self) {
        self.uses.get_mut().unwrap_or_else(|p| p.into_inner()).clear();
        *self.solo.get_mut() = UNUSED;
    }

    /// The stream a free waits for, after it waited for every other
    /// stream that used the allocation; `None` when no stream did.
    pub(crate) fn last_stream(&mut self) -> Result<Option<Arc<RawStream>>> {
        let uses = self.uses.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some(last) = uses.last() else { return Ok(None) };
        for u in &uses[..uses.len() - 1] {
            last.stream.wait_for(&u.stream)?;
        }
        Ok(Some(last.stream.clone()))
    }
}

/// One operand of an operation about to be queued: its allocation's tracker,
/// whether it is written, whether it covers the whole allocation.
#[derive(Clone, Copy)]
pub(crate) struct Use<'a> {
    track: &'a Track,
    write: bool,
    whole: bool,
}

impl<'a> Use<'a> {
    /// `bytes` at `addr` of `track`'s allocation; `None` when empty (an
    /// empty range touches no memory: nothing to order).
    pub(crate) fn of_range(track: &'a Track, addr: u64, bytes: usize, write: bool) -> Option<Use<'a>> {
        if bytes == 0 {
            return None;
        }
        Some(Use { track, write, whole: addr == track.base && bytes == track.bytes })
    }
}

fn use_of<'a, T>(v: &'a (impl DevRead<T> + ?Sized), write: bool) -> Option<Use<'a>> {
    let bytes = v.len().checked_mul(std::mem::size_of::<T>())?;
    Use::of_range(v.track()?, v.addr(), bytes, write)
}

/// A range the operation reads (`None`: foreign memory, or empty).
pub(crate) fn reads<T>(v: &(impl DevRead<T> + ?Sized)) -> Option<Use<'_>> {
    use_of(v, false)
}

/// A range the operation writes (and may read).
pub(crate) fn writes<T>(v: &(impl DevWrite<T> + ?Sized)) -> Option<Use<'_>> {
    use_of(v, true)
}

/// Where work is queued: a stream of this crate, whose operands are ordered
/// against other streams, or a stream whose ordering is someone else's (the
/// private stream of a graph capture, which runs nothing; a cudarc stream
/// with cudarc's own buffers).
#[derive(Clone, Copy)]
pub(crate) struct Queue<'s> {
    handle: cu::CUstream,
    stream: Option<&'s Arc<RawStream>>,
}

impl<'s> Queue<'s> {
    /// A stream of this crate.
    pub(crate) fn on(stream: &'s Arc<RawStream>) -> Queue<'s> {
        Queue { handle: stream.handle(), stream: Some(stream) }
    }

    /// A stream this crate does not order: the capture stream (its work is
    /// ordered when the graph is launched), or a foreign stream with foreign
    /// buffers (ordered by their owner).
    pub(crate) fn untracked(handle: cu::CUstream) -> Queue<'static> {
        Queue { handle, stream: None }
    }

    /// The driver's handle.
    pub(crate) fn handle(self) -> cu::CUstream {
        self.handle
    }

    /// Waits on the host for the work queued here; a fault is reported as
    /// [`crate::error::Error::KernelFault`] (without a kernel: the caller
    /// names it).
    pub(crate) fn synchronize(self) -> Result<()> {
        // SAFETY: a live stream of the current context (the caller holds its
        // liveness guard).
        super::check(unsafe { cu::cuStreamSynchronize(self.handle) })
            .map_err(|source| crate::error::Error::KernelFault { kernel: None, source })
    }

    /// Orders the operation about to be queued after the earlier work of
    /// other streams on the same allocations: the one step every queueing
    /// function of `raw` takes before its driver call.
    pub(crate) fn order(self, uses: &[Option<Use<'_>>]) -> Result<()> {
        let Some(s) = self.stream else { return Ok(()) };
        for u in uses.iter().flatten() {
            u.track.order(s, u.write, u.whole)?;
        }
        Ok(())
    }
}
