// The safe load takes only a BuiltPtx, never text.
fn load(gpu: &gpukern::Gpu, text: &'static str) {
    let _ = gpu.load_module(text);
}

fn main() {}
