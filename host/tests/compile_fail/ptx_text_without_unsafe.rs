// PTX text can declare any manifest about itself: loading it needs `unsafe`,
// and so does making a BuiltPtx outside gpukern-build's generated code.
fn load(gpu: &gpukern::Gpu, text: &'static str) {
    let _ = gpu.load_ptx(text);
    let _ = gpukern::BuiltPtx::from_gpukern_build(text, "sm_70");
}

fn main() {}
