//! Many small adds in one launch (`Gpu::add_many`), for a profiler: ten f32
//! triples of 2^10 elements (the list travels in the kernel's parameters) and
//! forty (a table copied first), each list run 20 times and checked against
//! the CPU once. `ncu --kernel-name regex:add_many ... foreach` gives the
//! kernel's duration and instruction counts beside torch's `_foreach_add`
//! (`multi_tensor_apply_kernel`).

use gpukern::reference::ReferenceAdd;
use gpukern::{Gpu, Triple};

fn main() {
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let stream = gpu.stream().expect("a stream");
    for (tensors, n) in [(10usize, 1usize << 10), (40, 1 << 10)] {
        let total = tensors * n;
        let a: Vec<f32> = (0..total).map(|i| (i % 251) as f32 * 0.5 - 60.0).collect();
        let b: Vec<f32> = (0..total).map(|i| (i % 127) as f32 * 0.25 + 1.0).collect();
        let (da, db) = (gpu.upload(&a).expect("upload"), gpu.upload(&b).expect("upload"));
        let mut dc = gpu.alloc::<f32>(total).expect("alloc");
        for _ in 0..20 {
            let mut rest = dc.view_mut();
            let mut list: Vec<Triple<'_, f32>> = Vec::with_capacity(tensors);
            for t in 0..tensors {
                let (mine, tail) = rest.into_split_at(n).expect("split");
                let r = t * n..(t + 1) * n;
                list.push((da.slice(r.clone()).expect("slice"), db.slice(r).expect("slice"), mine));
                rest = tail;
            }
            gpu.add_many(list, &stream).expect("add_many");
        }
        stream.synchronize().expect("sync");
        let got = dc.to_vec().expect("download");
        let want: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| f32::reference_add(x, y)).collect();
        let ok = got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits());
        println!("add_many f32 {tensors} x 2^{} verified={ok}", n.trailing_zeros());
        if !ok {
            std::process::exit(1);
        }
    }
}
