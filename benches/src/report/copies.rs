//! The report's `copies` section: GB/s of this crate's copies on a stream
//! (`copy_from` on the destination), from and into
//! pageable and pinned (`PinnedVec`) host memory and device to device,
//! beside the plain driver copies (`cuMemcpyHtoD`/`DtoH`/`DtoD` on the
//! legacy stream, `Studies::cu_memcpy*`) of the same bytes. Host wall time
//! of the copy and its wait, median of a few repetitions; every copy's
//! result is checked bit for bit.

use std::fmt::Write as _;
use std::time::Instant;

use gpukern::{Gpu, HostCopyFrom, Stream};
use serde::{Deserialize, Serialize};

/// One direction and host memory kind at one size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyRow {
    /// `host to device`, `device to host`, `device to device`.
    pub direction: String,
    /// `pageable`, `pinned` or `device`.
    pub memory: String,
    pub bytes: usize,
    /// Bytes copied per second, 10^9.
    pub ours_gbps: f64,
    pub cu_memcpy_gbps: f64,
    pub verified: bool,
}

const REPS: usize = 7;

/// Median host time in seconds of `f` (which waits for its copy), after one warm-up.
fn time(mut f: impl FnMut() -> gpukern::Result<()>) -> gpukern::Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let t0 = Instant::now();
        f()?;
        t.push(t0.elapsed().as_secs_f64());
    }
    Ok(crate::median(&mut t))
}

fn row(direction: &str, memory: &str, bytes: usize, ours: f64, plain: f64, verified: bool) -> CopyRow {
    let gbps = |s: f64| bytes as f64 / s / 1e9;
    CopyRow {
        direction: direction.into(),
        memory: memory.into(),
        bytes,
        ours_gbps: gbps(ours),
        cu_memcpy_gbps: gbps(plain),
        verified,
    }
}

/// Every direction at `n` f32 elements.
fn at(gpu: &Gpu, s: &Stream, n: usize) -> gpukern::Result<Vec<CopyRow>> {
    let bytes = n * 4;
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let bits = |v: &[f32]| v.iter().zip(&data).all(|(a, b)| a.to_bits() == b.to_bits());
    let st = gpu.studies();
    let mut d = gpu.alloc::<f32>(n)?;
    let mut e = gpu.alloc::<f32>(n)?;
    let mut host = vec![0.0f32; n];
    let mut pinned = gpukern::PinnedVec::<f32>::new(gpu, n)?;
    pinned.as_mut_slice()?.copy_from_slice(&data);
    let mut rows = Vec::new();

    let ours = time(|| d.copy_from(&data, s))?;
    let plain = time(|| st.cu_memcpy_to_device(&data, &mut d))?;
    rows.push(row("host to device", "pageable", bytes, ours, plain, bits(&d.to_vec()?)));
    let ours = time(|| d.copy_from(&pinned, s).and_then(|_| s.synchronize()))?;
    let plain = time(|| st.cu_memcpy_to_device(&pinned, &mut d))?;
    rows.push(row("host to device", "pinned", bytes, ours, plain, bits(&d.to_vec()?)));

    let ours = time(|| host.copy_from(&d, s))?;
    let ok = bits(&host);
    let plain = time(|| st.cu_memcpy_to_host(&d, &mut host))?;
    rows.push(row("device to host", "pageable", bytes, ours, plain, ok && bits(&host)));
    pinned.as_mut_slice()?.fill(0.0);
    let ours = time(|| pinned.copy_from(&d, s).and_then(|_| pinned.as_slice().map(|_| ())))?;
    let ok = bits(pinned.as_slice()?);
    let plain = time(|| st.cu_memcpy_to_host(&d, &mut pinned))?;
    rows.push(row("device to host", "pinned", bytes, ours, plain, ok && bits(pinned.as_slice()?)));

    let ours = time(|| e.copy_from(&d, s).and_then(|_| s.synchronize()))?;
    let ok = bits(&e.to_vec()?);
    let plain = time(|| st.cu_memcpy(&d, &mut e).and_then(|_| gpu.synchronize()))?;
    rows.push(row("device to device", "device", bytes, ours, plain, ok && bits(&e.to_vec()?)));
    Ok(rows)
}

/// The section: 4 MiB and 256 MiB (the latter when the run goes that far);
/// a copy whose result differs from its source is a failure.
pub fn section(gpu: &Gpu, max_log2: u32, failures: &mut Vec<String>) -> Result<Vec<CopyRow>, String> {
    eprintln!("copies: host to device, device to host, device to device ...");
    let e = |e: gpukern::Error| format!("copies: {e}");
    let s = gpu.stream().map_err(e)?;
    let mut rows = Vec::new();
    for log2 in [20u32, 26].into_iter().filter(|&k| k <= max_log2.max(20)) {
        rows.extend(at(gpu, &s, 1 << log2).map_err(e)?);
    }
    for r in rows.iter().filter(|r| !r.verified) {
        failures.push(format!("copy {} ({}) of {} bytes: differs from its source", r.direction, r.memory, r.bytes));
    }
    Ok(rows)
}

pub fn render(s: &mut String, rows: &[CopyRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Copies\n\nGB/s (10^9 bytes copied per second, host wall time of the copy and its wait, median of {REPS}) of `dst.copy_from(&src, &stream)` (host to device, device to host, device to device) beside the plain driver copies `cuMemcpyHtoD`/`DtoH`/`DtoD` (legacy stream) of the same bytes; pinned = `PinnedVec` (page-locked).\n\n| direction | host memory | bytes | ours GB/s | cuMemcpy GB/s | ours/cuMemcpy | verified |\n|---|---|---:|---:|---:|---:|---|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | 2^{} | {:.1} | {:.1} | {:.2} | {} |",
            r.direction,
            r.memory,
            r.bytes.trailing_zeros(),
            r.ours_gbps,
            r.cu_memcpy_gbps,
            r.ours_gbps / r.cu_memcpy_gbps,
            if r.verified { "yes" } else { "NO" }
        );
    }
}
