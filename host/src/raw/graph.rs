//! CUDA graphs: capture on a private stream, instantiate, launch, destroy.

use std::sync::Arc;

use cudarc::driver::sys as cu;

use super::{check, PrimaryContext, Queue, Use};
use crate::error::{Error, Result};

/// An instantiated CUDA graph; destroyed on drop while its context is live.
///
/// `Send` but not `Sync`: CUDA documents graph objects as not thread-safe, so
/// one graph is used by one thread at a time (its owner wraps it in a mutex to
/// share it).
pub(crate) struct RawGraph {
    graph: cu::CUgraph,
    exec: cu::CUgraphExec,
    ctx: Arc<PrimaryContext>,
}
// SAFETY: graph handles may move between threads; `&mut`/mutex access keeps
// their use to one thread at a time.
unsafe impl Send for RawGraph {}

impl Drop for RawGraph {
    fn drop(&mut self) {
        let Ok(_live) = self.ctx.bind() else {
            return; // reset: the driver destroyed them with the context
        };
        // SAFETY: both handles were created by `capture` in this live context
        // and are destroyed once; errors are ignored so dropping never panics.
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
/// The work is queued untracked ([`Queue::untracked`]): nothing runs at
/// capture, and [`graph_launch`] orders the graph's buffers when it runs.
/// `work` runs with a call counted in (`Live`): it queues library launches
/// only, never a reset.
pub(crate) fn capture(ctx: &Arc<PrimaryContext>, work: impl FnOnce(Queue<'static>) -> Result<()>) -> Result<RawGraph> {
    let _live = ctx.bind()?;
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    let mut stream: cu::CUstream = std::ptr::null_mut();
    // SAFETY: creates a stream owned by this function (1 = CU_STREAM_NON_BLOCKING).
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) }).map_err(driver("cuStreamCreate"))?;
    let result = capture_on(stream, work).map(|(graph, exec)| RawGraph { graph, exec, ctx: ctx.clone() });
    // SAFETY: the stream was created above and only captured into, never run.
    let _ = unsafe { cu::cuStreamDestroy_v2(stream) };
    result
}

fn capture_on(
    stream: cu::CUstream,
    work: impl FnOnce(Queue<'static>) -> Result<()>,
) -> Result<(cu::CUgraph, cu::CUgraphExec)> {
    let driver = |context: &'static str| move |source| Error::Driver { context, source };
    // SAFETY: begins capture on the private stream.
    check(unsafe { cu::cuStreamBeginCapture_v2(stream, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) })
        .map_err(driver("cuStreamBeginCapture"))?;
    let worked = work(Queue::untracked(stream));
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
    Ok((graph, exec))
}

/// Launches an instantiated graph on a stream of its context, after other
/// streams' work on the buffers it touches (`uses`, from its owner).
pub(crate) fn graph_launch(g: &mut RawGraph, stream: Queue<'_>, uses: &[Option<Use<'_>>]) -> Result<()> {
    let _live = g.ctx.bind()?;
    stream.order(uses)?;
    // SAFETY: the graph is alive and exclusively borrowed (one thread); what it
    // touches is kept alive by the borrows its owner (`AddGraph<'a>`,
    // `Graph<'a>`) holds, and ordered after other streams' work (above).
    check(unsafe { cu::cuGraphLaunch(g.exec, stream.handle()) })
        .map_err(|source| Error::Driver { context: "cuGraphLaunch", source })
}
