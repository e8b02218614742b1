//! CUDA graphs: capture on a private stream, instantiate, launch, destroy.

use cudarc::driver::sys as cu;

use super::check;
use crate::error::{Error, Result};

/// An instantiated CUDA graph; destroyed on drop.
pub(crate) struct RawGraph {
    graph: cu::CUgraph,
    exec: cu::CUgraphExec,
}
// SAFETY: graph handles are driver objects usable from any thread with the context
// current; the driver synchronises their use.
unsafe impl Send for RawGraph {}
// SAFETY: as above.
unsafe impl Sync for RawGraph {}

impl Drop for RawGraph {
    fn drop(&mut self) {
        // SAFETY: both handles were created by `capture` and are destroyed once;
        // errors (e.g. a broken context) are ignored so that dropping never panics.
        unsafe {
            let _ = cu::cuGraphExecDestroy(self.exec);
            let _ = cu::cuGraphDestroy(self.graph);
        }
    }
}

/// Records what `work` queues on the stream it is given into a graph instead of
/// running it, then instantiates the graph. Capture is ended even when `work`
/// fails.
///
/// The capture stream is a private non-blocking stream: a blocking stream in
/// capture would make every legacy-stream operation of other threads (the
/// synchronous copies and memsets) fail with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
pub(crate) fn capture(work: impl FnOnce(cu::CUstream) -> Result<()>) -> Result<RawGraph> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let mut stream: cu::CUstream = std::ptr::null_mut();
    // SAFETY: creates a stream owned by this function (1 = CU_STREAM_NON_BLOCKING).
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) }).map_err(driver("cuStreamCreate"))?;
    let result = capture_on(stream, work);
    // SAFETY: the stream was created above and only captured into, never run.
    let _ = unsafe { cu::cuStreamDestroy_v2(stream) };
    result
}

fn capture_on(stream: cu::CUstream, work: impl FnOnce(cu::CUstream) -> Result<()>) -> Result<RawGraph> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    // SAFETY: begins capture on the private stream.
    check(unsafe { cu::cuStreamBeginCapture_v2(stream, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) })
        .map_err(driver("cuStreamBeginCapture"))?;
    let worked = work(stream);
    let mut graph: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: ends the capture begun above and receives the graph handle.
    let ended = check(unsafe { cu::cuStreamEndCapture(stream, &mut graph) }).map_err(driver("cuStreamEndCapture"));
    if let Err(e) = worked.and(ended) {
        if !graph.is_null() {
            // SAFETY: a graph we own and have not instantiated.
            let _ = unsafe { cu::cuGraphDestroy(graph) };
        }
        return Err(e);
    }
    let mut exec: cu::CUgraphExec = std::ptr::null_mut();
    // SAFETY: instantiates the graph captured above.
    if let Err(e) = check(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }) {
        // SAFETY: as above.
        let _ = unsafe { cu::cuGraphDestroy(graph) };
        return Err(Error::Driver { context: "cuGraphInstantiate", source: e });
    }
    Ok(RawGraph { graph, exec })
}

/// Launches an instantiated graph on a stream.
pub(crate) fn graph_launch(g: &RawGraph, stream: cu::CUstream) -> Result<()> {
    // SAFETY: the graph is alive (borrowed); what it touches is kept alive by the
    // borrows its owner (`AddGraph<'a>`) holds.
    check(unsafe { cu::cuGraphLaunch(g.exec, stream) })
        .map_err(|source| Error::Driver { context: "cuGraphLaunch", source })
}
