// The interop traits are sealed: implementing them outside gpukern is refused.
struct Forged;

impl gpukern::CudarcInput<f32> for Forged {
    fn cudarc_context(&self) -> &std::sync::Arc<cudarc::driver::CudaContext> {
        unimplemented!()
    }
    fn read_ptr<'a>(&'a self, _: &'a cudarc::driver::CudaStream) -> (u64, cudarc::driver::SyncOnDrop<'a>) {
        (0xdead_0000_0000, cudarc::driver::SyncOnDrop::Sync(None))
    }
    fn elements(&self) -> usize {
        16 << 20
    }
}

fn main() {}
