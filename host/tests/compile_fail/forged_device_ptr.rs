// A type of one's own with cudarc's (safe) traits, claiming 64 MiB at an
// address nobody allocated: it must not be accepted as an interop operand.
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use gpukern::CudarcExt;
use std::sync::Arc;

struct Forged(Arc<CudaStream>);

impl DeviceSlice<f32> for Forged {
    fn len(&self) -> usize {
        16 << 20
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.0
    }
}

impl DevicePtr<f32> for Forged {
    fn device_ptr<'a>(&'a self, _: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (0xdead_0000_0000, SyncOnDrop::Sync(None))
    }
}

impl DevicePtrMut<f32> for Forged {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (0xdead_0000_0000, SyncOnDrop::Sync(None))
    }
}

fn evil(gpu: &gpukern::Gpu, stream: Arc<CudaStream>, a: &cudarc::driver::CudaSlice<f32>) {
    let mut out = Forged(stream.clone());
    let _ = gpu.unary_cudarc(gpukern::UnaryOp::Neg, a, &mut out, &stream);
    let _ = gpu.unary_cudarc(gpukern::UnaryOp::Neg, &Forged(stream.clone()), &mut out, &stream);
}

fn main() {}
