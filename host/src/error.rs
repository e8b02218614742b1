//! The error type. Every message names what went wrong and the values involved.

use std::fmt;

/// A CUDA driver API failure: the numeric code, its name and the driver's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    /// `CUresult` value.
    pub code: u32,
    /// e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
    pub name: String,
    /// The driver's description.
    pub message: String,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code, self.message)
    }
}

impl std::error::Error for DriverError {}

/// Everything the library can report. New variants may come in a minor
/// version (`#[non_exhaustive]`); a field that names the kernel or operation
/// is called `kernel` in every variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// a, b and out do not have the same number of elements.
    #[error("{kernel}: length mismatch: a has {a} elements, b has {b}, out has {out}")]
    LengthMismatch {
        /// The kernel or operation that refused the call.
        kernel: &'static str,
        /// Elements of `a`.
        a: usize,
        /// Elements of `b`.
        b: usize,
        /// Elements of `out`.
        out: usize,
    },

    /// A one-input operation's `a` and `out` differ in length.
    #[error("{kernel}: length mismatch: a has {a} elements, out has {out}")]
    UnaryLengthMismatch {
        /// The kernel or operation that refused the call.
        kernel: &'static str,
        /// Elements of `a`.
        a: usize,
        /// Elements of `out`.
        out: usize,
    },

    /// The operands given do not fit the operation (a `b` for a unary
    /// operation, none for a binary one).
    #[error("{kernel}: wrong operands: {detail}")]
    WrongOperands {
        /// The kernel or operation that refused the call.
        kernel: &'static str,
        /// What was wrong with the operands.
        detail: &'static str,
    },

    /// An operand's device address does not meet the variant's alignment.
    #[error(
        "{kernel}: operand `{operand}` at device address {addr:#x} is {offset} bytes past a \
         {required}-byte boundary; this kernel needs {required}-byte aligned operands"
    )]
    Misaligned {
        /// The kernel that needs the alignment.
        kernel: &'static str,
        /// The misaligned operand's name.
        operand: &'static str,
        /// Its device address.
        addr: u64,
        /// Bytes past the last `required`-byte boundary (`addr % required`).
        offset: u64,
        /// The alignment the kernel needs, in bytes.
        required: usize,
    },

    /// The variant's dtype is not the element type of the buffers.
    #[error("{kernel}: works on {expected} data, but the buffers hold {got}")]
    DtypeMismatch {
        /// The variant's kernel.
        kernel: &'static str,
        /// The dtype the kernel works on (`Dtype::name`, e.g. `"f16"`).
        expected: &'static str,
        /// The buffers' element type.
        got: &'static str,
    },

    /// Operands or stream come from a different [`crate::Gpu`] handle.
    #[error("{kernel}: the {what} {} to another Gpu handle; use buffers and streams of the Gpu that launches", if what.ends_with('s') { "belong" } else { "belongs" })]
    ForeignHandle {
        /// The operation that refused the call.
        kernel: &'static str,
        /// The foreign handle (`"stream"`, `"buffers"`, `"module"`).
        what: &'static str,
    },

    /// A graph operation names a slot another [`crate::GraphBuilder`]
    /// registered (of the same `Gpu` or not).
    #[error("{kernel}: a slot of another graph builder; record with slots this builder's `input`/`output` returned")]
    ForeignSlot {
        /// The graph operation that was being recorded.
        kernel: &'static str,
    },

    /// A foreign stream (cudarc's) lives in another CUDA context or device than
    /// this `Gpu`, whose kernels and addresses belong to the device's primary context.
    #[error(
        "{kernel}: the stream belongs to another CUDA context or device than this Gpu (device {device}'s primary context); use a stream of that context, e.g. cudarc's CudaContext::new({device})"
    )]
    ForeignContext {
        /// The operation that refused the call.
        kernel: &'static str,
        /// This `Gpu`'s device ordinal.
        device: usize,
    },

    /// Threads per block outside 1..=max.
    #[error("{kernel}: block size {block} is out of range (1..={max} threads)")]
    BlockSize {
        /// The kernel to launch.
        kernel: &'static str,
        /// The threads per block asked for.
        block: u32,
        /// The most threads per block this kernel can launch with.
        max: u32,
    },

    /// Grid cap of zero or above the hardware limit.
    #[error("{kernel}: grid limit {max_grid} is out of range (1..={limit} blocks)")]
    GridLimit {
        /// The kernel to launch.
        kernel: &'static str,
        /// The grid cap asked for, in blocks.
        max_grid: u32,
        /// The hardware's limit, in blocks.
        limit: u32,
    },

    /// The kernel needs a newer GPU than this one (e.g. the bulk-copy variants
    /// need compute capability 9.0).
    #[error("{kernel}: needs compute capability {needs}, this device has {has}")]
    Unsupported {
        /// The kernel or plan that needs the newer GPU.
        kernel: &'static str,
        /// The compute capability it needs, e.g. `"9.0"`.
        needs: &'static str,
        /// This device's compute capability, e.g. `"8.0"`.
        has: String,
    },

    /// Operand sizes do not fit the kernel's shape parameters.
    #[error("{kernel}: {detail}")]
    Shape {
        /// The kernel or operation that refused the call.
        kernel: &'static str,
        /// Which sizes do not fit, and why.
        detail: String,
    },

    /// A sub-view's range does not lie inside its buffer.
    #[error("view {start}..{end} is out of bounds for a buffer of {len} elements")]
    OutOfBounds {
        /// The range's first element.
        start: usize,
        /// One past the range's last element.
        end: usize,
        /// Elements in the buffer.
        len: usize,
    },

    /// A fill's bit pattern is wider than the element it fills (`bytes`
    /// each): patterns are of the element's width, never truncated.
    #[error("fill_bits: the pattern {bits:#x} does not fit an element of {bytes} bytes; give the element's bits (for a value of the element type: fill)")]
    FillBits {
        /// The pattern given.
        bits: u64,
        /// Bytes per element.
        bytes: usize,
    },

    /// A copy's source and destination differ in length (`direction`: host
    /// to device, device to host, device to device).
    #[error("{direction} copy: the source has {src} elements, the destination {dst}; they must be equal")]
    CopyLength {
        /// `"host to device"`, `"device to host"` or `"device to device"`.
        direction: &'static str,
        /// Elements in the source.
        src: usize,
        /// Elements in the destination.
        dst: usize,
    },

    /// The host could not allocate (page-locked memory for a `PinnedVec`).
    #[error("out of host memory allocating {bytes} bytes")]
    HostOutOfMemory {
        /// The size asked for, in bytes.
        bytes: usize,
    },

    /// No usable CUDA device or driver.
    #[error("no CUDA device: {0}")]
    NoDevice(String),

    /// The driver refused the PTX module.
    #[error("failed to load the PTX module: {0}")]
    PtxLoad(DriverError),

    /// The PTX module lacks a kernel the library needs.
    #[error("kernel `{kernel}` is missing from the PTX module: {source}")]
    MissingKernel {
        /// The kernel's name.
        kernel: &'static str,
        /// What `cuModuleGetFunction` returned.
        source: DriverError,
    },

    /// The device could not allocate.
    #[error("out of device memory allocating {bytes} bytes: {source}")]
    OutOfMemory {
        /// The size asked for, in bytes.
        bytes: usize,
        /// What the allocation returned.
        source: DriverError,
    },

    /// A kernel faulted; reported by the first synchronisation after it, and
    /// by every later allocation, copy, fill or element-wise launch of this
    /// crate on the context, from any thread (the driver's sticky error
    /// codes), with the last kernel of a user module ([`crate::Module`])
    /// queued on this `Gpu`, when there was one. The context is unusable
    /// afterwards until [`crate::Gpu::reset`].
    #[error("a kernel faulted{}: {source}; the context is unusable now: see Gpu::reset", kernel.as_ref().map(|k| format!(" (last user kernel queued: `{k}`)")).unwrap_or_default())]
    KernelFault {
        /// The last kernel of a user module queued on this `Gpu`, if any.
        kernel: Option<String>,
        /// The fault, as the driver reported it.
        source: DriverError,
    },

    /// A `gpu_assert!` failed in a kernel (`gpukern_device::debug`): its
    /// message, file and line, and the first failing thread, read from the
    /// record the kernel wrote into mapped host memory before it trapped. As
    /// after any fault, the context is unusable afterwards.
    #[error("{0}")]
    KernelAssert(Box<AssertFailure>),

    /// [`crate::Gpu::reset`] could not recover the device: the driver keeps the
    /// fault for the rest of the process (CUDA treats an illegal address or a
    /// failed launch as fatal to the process). Seen on driver 580 (CUDA 13.0):
    /// the reset succeeds and every later context call returns the fault.
    #[error("the device cannot be recovered in this process: {source}; the CUDA driver keeps this fault until the process exits: restart it, or run kernels that may fault in a child process")]
    DeviceLost {
        /// What the driver returns since the reset.
        source: DriverError,
    },

    /// The handle belongs to a context that [`crate::Gpu::reset`] destroyed.
    #[error("{what}: its device was reset (Gpu::reset); use the Gpu that reset returned and new buffers")]
    DeviceReset {
        /// The stale handle, e.g. `"Gpu"`.
        what: &'static str,
    },

    /// A user module's operation is missing or does not match its manifest.
    #[error("custom op `{kernel}`: {detail}")]
    CustomOp {
        /// The operation's name in the module.
        kernel: String,
        /// What is missing or does not match.
        detail: String,
    },

    /// Any other driver call that failed; `context` says which.
    #[error("{context}: {source}")]
    Driver {
        /// The driver call, e.g. `"cuMemcpyHtoDAsync"`.
        context: &'static str,
        /// What it returned.
        source: DriverError,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a failed `gpu_assert!` reported ([`Error::KernelAssert`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "gpu_assert failed{} at {file}:{line} (block {block:?}, thread {thread:?}): {message}; the context is unusable now: see Gpu::reset",
    kernel.as_ref().map(|k| format!(" (last user kernel queued: `{k}`)")).unwrap_or_default()
)]
pub struct AssertFailure {
    /// The last kernel of a user module queued on this `Gpu`, if any.
    pub kernel: Option<String>,
    /// Source file of the assert, as `file!()` gave it when the kernel was built.
    pub file: String,
    /// Source line.
    pub line: u32,
    /// The assert's message (its condition's text when it has none).
    pub message: String,
    /// `blockIdx` of the first failing thread.
    pub block: [u32; 3],
    /// `threadIdx` of the first failing thread.
    pub thread: [u32; 3],
    /// What the synchronisation returned.
    pub source: DriverError,
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn texts_say_what_happened() {
        let e = Error::CopyLength { direction: "device to device", src: 51, dst: 50 };
        assert_eq!(
            e.to_string(),
            "device to device copy: the source has 51 elements, the destination 50; they must be equal"
        );
        let e = Error::ForeignSlot { kernel: "neg" };
        assert!(e.to_string().starts_with("neg: a slot of another graph builder"), "{e}");
        assert!(!e.to_string().contains("Gpu handle"), "{e}");
        let e = Error::ForeignHandle { kernel: "copy", what: "stream" };
        assert_eq!(
            e.to_string(),
            "copy: the stream belongs to another Gpu handle; use buffers and streams of the Gpu that launches"
        );
    }
}
