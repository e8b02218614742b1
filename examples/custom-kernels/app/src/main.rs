//! Runs the example's operations on GPU 0 and checks them against the CPU
//! rules: `cargo run --release -p custom-kernels-app` (or `bundle/run.sh
//! examples`).

use custom_kernels_app::{check, load};
use gpukern::half::bf16;
use gpukern::Gpu;

fn main() {
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("custom-kernels: {e}");
            std::process::exit(1);
        }
    };
    let module = load(&gpu).unwrap_or_else(|e| panic!("loading the module: {e}"));
    let stream = gpu.stream().unwrap();
    let mut cases = 0;
    for n in [0usize, 1, 7, 8, 9, 4095, 4096, 4097, 100_003, 1 << 20] {
        for offset in [0, 1, 3] {
            for r in [check::<f32>(&gpu, &module, &stream, n, offset), check::<bf16>(&gpu, &module, &stream, n, offset)]
            {
                if let Err(msg) = r {
                    eprintln!("MISMATCH {msg}");
                    std::process::exit(1);
                }
                cases += 1;
            }
        }
    }
    println!(
        "custom-kernels on {}: silu and relu_axpy, f32 and bf16, {cases} cases bit-exact against the CPU rules",
        gpu.info().name
    );
}
