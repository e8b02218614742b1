//! The device handle: context, the embedded PTX module, every kernel resolved once.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as DevAttr;

use kernels_gpu::add::ADD_KERNELS;

pub use crate::device::context::DeviceInfo;
pub(crate) use crate::device::context::Shared;
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
pub use crate::raw::KernelResources;
use crate::raw::{self, Kernel, PrimaryContext, RawModule, RawStream};

/// The PTX built by `cargo xtask build-ptx` from `kernels-gpu`, embedded at compile
/// time so the library needs no file at run time: the portable sm_70 module.
pub const PTX: &str = include_str!("../../../ptx/kernels_gpu.ptx");

/// The Hopper module (sm_90, PTX ISA 8.0): the kernels that need the bulk-copy
/// engine. Loaded beside [`PTX`] on devices of compute capability 9.0 and up.
pub const PTX_SM90: &str = include_str!("../../../ptx/kernels_gpu_sm90.ptx");

/// The kernels of the Hopper module, resolved when the device has sm_90.
pub fn sm90_kernel_names() -> Vec<&'static str> {
    let add = ADD_KERNELS.iter().filter(|k| k.needs_sm90()).map(|k| k.name);
    // The element-wise library's sm_90 add is an add kernel too, listed above.
    let ops = kernels_gpu::ops::OP_KERNELS.iter().filter(|k| k.needs_sm90() && !k.name.starts_with("add_"));
    // The PDL twins (`kernels_gpu::ops::PDL_KERNELS`).
    let pdl = kernels_gpu::ops::PDL_KERNELS.iter().map(|k| k.name);
    // The norms' cluster kernels, and the bf16 norm kernels under their
    // portable names (resolved from this module where it is loaded).
    // The norms' PDL twins.
    let norms = kernels_gpu::norms::cluster_kernel_names().chain(kernels_gpu::norms::sm90_kernel_names());
    let norms = norms.chain(kernels_gpu::norms::pdl_kernel_names());
    // The norms' pipelined kernels, and the checks of their building blocks.
    let norms = norms.chain(kernels_gpu::norms::pipe_kernel_names());
    let norms = norms.chain([kernels_gpu::pipeline::RING_COPY, kernels_gpu::pipeline::CLUSTER_FOLD]);
    // The foreach add's twins.
    let many = kernels_gpu::foreach::ADD_MANY_PDL.into_iter().chain(kernels_gpu::foreach::ADD_MANY_INLINE_PDL);
    // The gated activations' bf16 kernels and every one's PDL twin.
    let glu = kernels_gpu::glu::GLU_KERNELS.iter().filter(|k| k.needs_sm90()).chain(kernels_gpu::glu::GLU_PDL_KERNELS);
    let all = add.chain(ops.map(|k| k.name)).chain(pdl).chain(many).chain(norms);
    all.chain(glu.map(|k| k.name)).collect()
}

/// Every kernel of the portable module; all are resolved when a [`Gpu`] is created.
pub fn kernel_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ADD_KERNELS.iter().filter(|k| !k.needs_sm90()).map(|k| k.name).collect();
    names.extend(kernels_gpu::verify::COUNT_MISMATCH);
    names.push(kernels_gpu::verify::EMPTY);
    names.push(kernels_gpu::verify::SPIN);
    names.extend(kernels_gpu::verify::MARK_VISITS.map(|(name, _)| name));
    names.extend(kernels_gpu::matmul::MATMUL);
    names.extend(kernels_gpu::count::COUNT);
    names.push(kernels_gpu::coalesce::STRIDED_COPY);
    names.extend(kernels_gpu::transpose::TRANSPOSE);
    names.extend(kernels_gpu::fusion::FUSION);
    names.extend(kernels_gpu::ceiling::CEILING);
    names.extend(kernels_gpu::foreach::ADD_MANY);
    names.extend(kernels_gpu::foreach::ADD_MANY_INLINE);
    names.extend(kernels_gpu::math::kernel_names());
    names.extend(kernels_gpu::norms::NORM_KERNELS.iter().map(|k| k.name));
    names.extend(kernels_gpu::foreach::MARK_MANY.map(|(name, _)| name));
    names.extend(kernels_gpu::verify::MARK_TILES.map(|(name, _)| name));
    names.extend(kernels_gpu::verify::MARK_UNROLLED.map(|(name, _, _)| name));
    // The element-wise library; its add rows are the add kernels listed above.
    let ops = kernels_gpu::ops::OP_KERNELS.iter().filter(|k| !k.needs_sm90() && !k.name.starts_with("add_"));
    names.extend(ops.map(|k| k.name));
    names.extend(kernels_gpu::glu::GLU_KERNELS.iter().filter(|k| !k.needs_sm90()).map(|k| k.name));
    names
}

/// A handle to one GPU with the kernels loaded. Cheap to clone; `Send + Sync`.
///
/// ```no_run
/// use gpukern::{BinaryOp, Gpu};
/// let gpu = Gpu::new(0)?; // opens the device, resolves every kernel
/// let s = gpu.stream()?;
/// let (a, b) = (gpu.upload(&[1.0f32, 2.0])?, gpu.upload(&[3.0f32, 4.0])?);
/// let mut c = gpu.alloc::<f32>(2)?;
/// gpu.binary(BinaryOp::Add, &a, &b, &mut c, &s)?; // queued on `s`
/// assert_eq!(c.to_vec()?, [4.0, 6.0]); // waits for the work that writes `c`
/// # Ok::<(), gpukern::Error>(())
/// ```
#[derive(Clone)]
pub struct Gpu {
    pub(crate) shared: Arc<Shared>,
    /// The portable module's text, loaded again by [`Gpu::reset`].
    ptx: Arc<str>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.shared.info).finish()
    }
}

/// Number of CUDA devices, or [`Error::NoDevice`] when there is no driver or
/// device.
///
/// ```no_run
/// let n = gpukern::device_count()?;
/// let gpus = (0..n).map(gpukern::Gpu::new).collect::<gpukern::Result<Vec<_>>>()?;
/// # Ok::<(), gpukern::Error>(())
/// ```
pub fn device_count() -> Result<usize> {
    raw::init()?;
    raw::device_count()
}

impl Gpu {
    /// Opens GPU `index` with the embedded PTX and resolves every kernel.
    pub fn new(index: usize) -> Result<Gpu> {
        Self::open(index, Arc::from(PTX))
    }

    /// Opens GPU `index` with the given PTX text in place of the embedded
    /// portable module (a rebuilt `kernels_gpu.ptx`, say). Fails with
    /// [`Error::PtxLoad`] if the driver rejects it and [`Error::MissingKernel`]
    /// naming the first kernel of [`kernel_names`] it lacks.
    ///
    /// # Safety
    /// The library launches the module's kernels by name with the parameter
    /// lists and contracts of the embedded [`PTX`]: every kernel of
    /// [`kernel_names`] in `ptx` must have the same parameters and behave as
    /// the embedded one does (write only inside the ranges it is given). PTX
    /// built by `cargo xtask build-ptx` from this crate's own `kernels-gpu`
    /// does.
    pub unsafe fn with_ptx(index: usize, ptx: &str) -> Result<Gpu> {
        Self::open(index, Arc::from(ptx))
    }

    /// [`Gpu::new`] and [`Gpu::with_ptx`]: `ptx` is trusted to be the library's.
    fn open(index: usize, ptx: Arc<str>) -> Result<Gpu> {
        let count = device_count()?;
        if index >= count {
            return Err(Error::NoDevice(format!("no CUDA device with index {index}; {count} present")));
        }
        let dev = raw::device(index)?;
        let ctx = PrimaryContext::retain(index)?;
        // One guard for the whole load: a reset from another handle waits
        // for it, so no call below reaches a module the reset destroyed.
        let live = ctx.bind()?;
        let module = RawModule::load(&ctx, &ptx)?;
        let mut funcs = HashMap::new();
        for name in kernel_names() {
            let f = module.function(name).map_err(|source| Error::MissingKernel { kernel: name, source })?;
            funcs.insert(name, Kernel::new(f, &ctx));
        }
        let attr = |a: DevAttr| raw::device_attribute(dev, a);
        let shared_optin = raw::shared_per_block_optin(index)?;
        let major = attr(DevAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
        let mut modules = vec![module];
        if major >= 9 {
            let m = RawModule::load(&ctx, PTX_SM90)?;
            for name in sm90_kernel_names() {
                let f = m.function(name).map_err(|source| Error::MissingKernel { kernel: name, source })?;
                let kernel = Kernel::new(f, &ctx);
                // The bulk kernels size their shared memory at launch; let them
                // use all a block may have, not only the default 48 KiB. (Not
                // the norms' cluster, sm_90 bf16 and PDL kernels: their static
                // shared memory plus that much would exceed the block's limit,
                // which the driver refuses; they use no dynamic shared memory.)
                let mut norms = kernels_gpu::norms::cluster_kernel_names()
                    .chain(kernels_gpu::norms::sm90_kernel_names())
                    .chain(kernels_gpu::norms::pdl_kernel_names());
                let checks = [kernels_gpu::pipeline::RING_COPY, kernels_gpu::pipeline::CLUSTER_FOLD];
                if kernels_gpu::norms::pipe_kernel_names().chain(checks).any(|n| n == name) {
                    // The rings (pipelined norms, their checks): all beside their static shared memory.
                    let fixed = kernel.resources()?.shared_bytes;
                    kernel.set_max_dynamic_shared(shared_optin.saturating_sub(fixed))?;
                } else if !norms.any(|n| n == name) {
                    kernel.set_max_dynamic_shared(shared_optin)?;
                }
                funcs.insert(name, kernel);
            }
            modules.push(m);
        }
        // One assert record for every module of this handle.
        let assert_record = raw::MappedHost::new(&ctx, std::mem::size_of::<gpukern_device::debug::AssertRecord>())?;
        for m in &modules {
            crate::device::context::connect_asserts(m, &assert_record)?;
        }
        let (name, total_memory) = raw::device_name_and_memory(dev)?;
        let info = DeviceInfo {
            index,
            name,
            compute_capability: (major, attr(DevAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32),
            sm_count: attr(DevAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(DevAttr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            total_memory,
            memory_clock_khz: attr(DevAttr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as u64,
            bus_width_bits: attr(DevAttr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u64,
            max_threads_per_sm: attr(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
            registers_per_sm: attr(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)? as u32,
            sm_clock_khz: attr(DevAttr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u64,
            driver_version: raw::driver_version()?,
            shared_per_block_optin: shared_optin,
        };
        drop(live);
        let shared =
            Shared { ctx, _modules: modules, funcs, info, last_user_kernel: Default::default(), assert_record };
        Ok(Gpu { shared: Arc::new(shared), ptx })
    }

    /// Recovers the device after a kernel fault ([`Error::KernelFault`] is
    /// sticky: every later call on the context fails): resets the device's
    /// primary context and opens it again with the same PTX.
    ///
    /// Returns the new handle, or [`Error::DeviceLost`] when the driver keeps
    /// the fault for the whole process, which CUDA documents for illegal
    /// addresses and failed launches and which driver 580 does (measured: the
    /// reset succeeds, every later retain of the context returns the fault).
    /// Then only a new process can use the GPU: run kernels that may fault in
    /// a child process (as this crate's tests do) to keep the parent going.
    /// Everything this library made before the reset, on this device, by any
    /// `Gpu` handle of this process (buffers, views, streams, user modules,
    /// graphs, other `Gpu` clones) is dead: its calls return
    /// [`Error::DeviceReset`] and dropping it frees nothing. Load user modules
    /// again on the returned `Gpu`.
    ///
    /// The reset is atomic with this crate's own calls, from any thread:
    /// every call counts itself in on the device (one atomic add) around its
    /// liveness check and driver calls; the reset first marks the device, so
    /// that every later call is refused with [`Error::DeviceReset`], then
    /// waits for the calls in flight to return, and only then resets. No call
    /// of this crate reaches a destroyed stream, module or allocation, and no
    /// drop frees an address the new context may have handed out. Errors with
    /// [`Error::DeviceReset`] when this handle is dead already (another reset
    /// came first).
    ///
    /// # Safety
    /// The primary context is the one the CUDA runtime, cudarc and other
    /// libraries in this process use on this device: the reset destroys their
    /// memory, modules and streams too, and they cannot know. The caller
    /// promises that no other library's resource of this device is used after
    /// the reset (none exists, or it is dropped unused / never touched again),
    /// and that no view made by `View::from_raw_parts`/`ViewMut::from_raw_parts`
    /// over such memory is used after it (it would be refused, but its memory
    /// belongs to that library). Work this crate queued before the reset is
    /// destroyed with the context: results not yet read are lost.
    pub unsafe fn reset(&self) -> Result<Gpu> {
        let index = self.shared.info.index;
        // SAFETY: the caller's promise covers other users of the context;
        // this library's calls are waited for and its handles refused.
        unsafe { self.shared.ctx.reset()? };
        Gpu::open(index, self.ptx.clone()).map_err(|e| match e {
            Error::Driver { context: "cuDevicePrimaryCtxRetain", source } => Error::DeviceLost { source },
            e => e,
        })
    }

    /// The device's facts.
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// A new stream on this GPU. It is a blocking stream: it is ordered with
    /// the legacy default stream, which the synchronous copies and fills of
    /// `DeviceVec` use, so those never race with queued work. Its launches
    /// use programmatic dependent launch as [`Pdl::Auto`] decides (see
    /// [`Gpu::stream_with`]).
    pub fn stream(&self) -> Result<Stream> {
        self.stream_with(Pdl::Auto)
    }

    /// As [`Gpu::stream`], with `pdl` the stream's setting for programmatic
    /// dependent launch, fixed for its life: what the element-wise
    /// operations, user operations, typed `#[kernel(pdl)]` launches and
    /// `add_many` queued on it use, unless a call's [`crate::Opts`] says
    /// otherwise. Results do not depend on it, only launch overlap does.
    pub fn stream_with(&self, pdl: Pdl) -> Result<Stream> {
        let inner = RawStream::create(&self.shared.ctx)?;
        Ok(Stream { inner, gpu: self.shared.clone(), events: Default::default(), pdl })
    }

    /// Waits for all work on this GPU; a kernel fault shows up here.
    pub fn synchronize(&self) -> Result<()> {
        let _live = self.shared.bind()?;
        self.shared.ctx.synchronize().map_err(|e| self.shared.fault(e))
    }

    /// (free, total) device memory in bytes.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        let _live = self.shared.bind()?;
        raw::mem_info()
    }
}

/// A CUDA stream: work on it runs in order, asynchronously to the host.
/// Buffers used on several streams are ordered for you: a call waits for
/// the other streams' earlier writes of what it reads and uses of what it
/// writes.
///
/// ```no_run
/// use gpukern::{Gpu, Pdl, UnaryOp};
/// let gpu = Gpu::new(0)?;
/// let (s1, s2) = (gpu.stream()?, gpu.stream_with(Pdl::Off)?);
/// let a = gpu.upload(&vec![1.0f32; 1 << 20])?;
/// let (mut b, mut c) = (gpu.alloc::<f32>(1 << 20)?, gpu.alloc::<f32>(1 << 20)?);
/// gpu.unary(UnaryOp::Neg, &a, &mut b, &s1)?;
/// gpu.unary(UnaryOp::Abs, &b, &mut c, &s2)?; // waits for s1's write of `b`
/// s2.synchronize()?;
/// # Ok::<(), gpukern::Error>(())
/// ```
pub struct Stream {
    /// Shared with the trackers of the buffers it used (`raw/order.rs`),
    /// which record its event when another stream must wait for it.
    inner: Arc<RawStream>,
    gpu: Arc<Shared>,
    /// The timing events of [`Stream::time`], created at its first call.
    events: std::sync::Mutex<Option<raw::RawEvents>>,
    /// When its launches use programmatic dependent launch (chosen at creation).
    pdl: Pdl,
}

impl Stream {
    /// Where raw queues work: this stream, with its operands ordered
    /// against other streams' work on them.
    pub(crate) fn raw(&self) -> raw::Queue<'_> {
        raw::Queue::on(&self.inner)
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.gpu
    }

    /// Blocks until all work queued on this stream is done. A kernel fault on it is
    /// reported here as [`Error::KernelFault`].
    pub fn synchronize(&self) -> Result<()> {
        let _live = self.gpu.bind()?;
        self.inner.synchronize().map_err(|e| self.gpu.fault(e))
    }

    /// Times the work `work` queues on this stream with CUDA events (device time,
    /// not host time). Returns milliseconds. The stream keeps its two events
    /// for the next call.
    ///
    /// `work` may call `time` on this stream again (the outer time includes
    /// the inner work), and other threads may time it meanwhile: each call
    /// in flight uses its own pair of events, and none waits for another.
    pub fn time(&self, work: impl FnOnce(&Stream) -> Result<()>) -> Result<f32> {
        // Taken out for the call rather than locked across it: a lock held
        // while `work` runs deadlocks a nested call. A call that finds none
        // (the first, or one nested in another) makes its own.
        let kept = self.events.lock().unwrap_or_else(|p| p.into_inner()).take();
        let events = match kept {
            Some(ev) => ev,
            None => raw::RawEvents::create(&self.gpu.ctx)?,
        };
        let timed = events.time(self.inner.handle(), || work(self));
        // Kept for the next call, unless a nested call put its pair back
        // first (this one is then dropped, after the lock).
        let spare = {
            let mut slot = self.events.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(events);
                None
            } else {
                Some(events)
            }
        };
        drop(spare);
        timed.map_err(|e| match e {
            Error::KernelFault { kernel: None, source } => self.gpu.fault(source),
            e => e,
        })
    }

    /// Makes the work queued on this stream from now on wait for the work
    /// queued on `other` so far (an event, no host wait).
    ///
    /// Errors: `other` belongs to another `Gpu` handle.
    pub fn wait_for(&self, other: &Stream) -> Result<()> {
        if !Arc::ptr_eq(other.shared(), &self.gpu) {
            return Err(Error::ForeignHandle { kernel: "wait_for", what: "stream" });
        }
        // `other`'s ordering event, not its timing pair: a join from inside
        // `other.time` must not wait on its lock.
        self.inner.wait_for(&other.inner)
    }
}

impl Stream {
    /// This stream's PDL setting, chosen when it was created
    /// ([`Gpu::stream_with`]).
    pub fn pdl(&self) -> Pdl {
        self.pdl
    }

    /// Changes this stream's PDL setting for the work queued from now on.
    #[doc(hidden)]
    #[deprecated(note = "use gpu.stream_with(pdl) (a stream's setting is chosen at creation)")]
    pub fn set_pdl(&mut self, pdl: Pdl) {
        self.pdl = pdl;
    }
}
