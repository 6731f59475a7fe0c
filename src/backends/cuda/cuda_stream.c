/*
 * cuda_stream.c -- CUDA streams, events and graphs for runtime/stream.c and graph.c.
 *
 * Tack queues a device's work on one stream of its own (cuda.c); a program
 * that names another (tack.Stream, a wrapped PyTorch or CuPy stream) has
 * its copies and launches go there instead (cuda_queue), and orders them
 * with events.  These are the driver calls behind that: a stream made in
 * the device's primary context as Tack's own is (blocking: it also orders
 * with the legacy default stream, as PyTorch's and CuPy's default streams
 * expect), events with or without timing, record, a wait on the device
 * (cuStreamWaitEvent), a wait on the host, a query and the elapsed time.
 * Each call pushes the primary context, so they work from any thread.
 *
 * A stream's synchronization is a synchronization point like Tack's own
 * stream's: a failed check in a kernel that ran on it is reported there
 * (the device's one error record, cuda_launch.c).  A NULL tack_stream is
 * Tack's own stream.  The entry points the driver lacks (cuStreamDestroy,
 * cuEventQuery, cuEventSynchronize, cuEventElapsedTime before CUDA's
 * oldest supported versions) make a stream refused with their names.
 *
 * Graphs (runtime/graph.c) are the driver's stream capture: begin and end
 * a capture on the stream, instantiate the graph it made, launch that on
 * any stream of the device, destroy it.  A driver without those entry
 * points has streams but refuses a capture, naming the one it lacks (the
 * check and its wording are gpu_events.c's, shared with the other GPU
 * backends).
 */
#include <string.h>

#include "backends/common/gpu_events.h"
#include "backends/cuda/cuda_backend.h"

static CUstream queue_of(tack_device *d, const tack_stream *s) {
    return s ? (CUstream)s->handle : ((cuda_dev *)d->state)->stream;
}

static tack_status check_api(tack_device *d) {
    const tack_cuda_api *api = cuda_api_get();
    const gpu_entry need[] = {GPU_ENTRY_AS(api, cuStreamDestroy, "cuStreamDestroy_v2"), GPU_ENTRY(api, cuEventQuery),
                              GPU_ENTRY(api, cuEventSynchronize), GPU_ENTRY(api, cuEventElapsedTime)};
    return GPU_ENTRIES_CHECK(d, "NVIDIA driver", need, "streams and events");
}

/* A driver call under d's context: its failure worded by cuda_fail. */
#define CALL(call, what)                                                                        \
    do {                                                                                        \
        tack_status st_ = cuda_push(d);                                                         \
        if (st_ != TACK_OK) return st_;                                                         \
        CUresult r_ = (call);                                                                   \
        cuda_pop();                                                                             \
        return r_ == TACK_CUDA_SUCCESS ? TACK_OK : cuda_fail(d, r_, what);                      \
    } while (0)

static tack_status s_create(tack_device *d, void **handle) {
    tack_status st = check_api(d);
    if (st != TACK_OK) return st;
    CALL(cuda_api_get()->cuStreamCreate((CUstream *)handle, 0), "cuStreamCreate");
}

static void s_destroy(tack_device *d, void *handle) {
    if (cuda_is_lost(d) || cuda_push(d) != TACK_OK) return;
    cuda_note(d, cuda_api_get()->cuStreamDestroy((CUstream)handle)); /* its queued work still runs */
    cuda_pop();
}

static tack_status s_sync(tack_device *d, const tack_stream *s) {
    tack_status st = cuda_push(d);
    if (st != TACK_OK) return st;
    CUresult r = cuda_api_get()->cuStreamSynchronize(queue_of(d, s));
    cuda_pop();
    if (r != TACK_CUDA_SUCCESS) return cuda_fail(d, r, "cuStreamSynchronize");
    return cuda_check_record(d); /* a synchronization point */
}

static tack_status e_create(tack_device *d, int timing, void **ev) {
    tack_status st = check_api(d);
    if (st != TACK_OK) return st;
    CALL(cuda_api_get()->cuEventCreate((CUevent *)ev, timing ? 0 : TACK_CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

static void e_destroy(tack_device *d, void *ev) {
    if (cuda_is_lost(d) || cuda_push(d) != TACK_OK) return;
    cuda_note(d, cuda_api_get()->cuEventDestroy((CUevent)ev));
    cuda_pop();
}

static tack_status e_record(tack_device *d, void *ev, const tack_stream *s) {
    CALL(cuda_api_get()->cuEventRecord((CUevent)ev, queue_of(d, s)), "cuEventRecord");
}

static tack_status e_wait(tack_device *d, const tack_stream *s, void *ev) {
    CALL(cuda_api_get()->cuStreamWaitEvent(queue_of(d, s), (CUevent)ev, 0), "cuStreamWaitEvent");
}

static tack_status e_sync(tack_device *d, void *ev) {
    CALL(cuda_api_get()->cuEventSynchronize((CUevent)ev), "cuEventSynchronize");
}

static int e_query(tack_device *d, void *ev) {
    if (cuda_push(d) != TACK_OK) return -1;
    CUresult r = cuda_api_get()->cuEventQuery((CUevent)ev);
    cuda_pop();
    if (r == TACK_CUDA_SUCCESS) return 1;
    if (r == TACK_CUDA_ERROR_NOT_READY) return 0;
    cuda_fail(d, r, "cuEventQuery");
    return -1;
}

static tack_status e_elapsed(tack_device *d, void *a, void *b, float *ms) {
    CALL(cuda_api_get()->cuEventElapsedTime(ms, (CUevent)a, (CUevent)b), "cuEventElapsedTime");
}

/* ------------------------------------------------------------- graphs */
/* runtime/graph.c: a capture in relaxed mode (Tack refuses itself what would
 * wait for the captured work; its own stream's allocations and builds stay
 * allowed), ended into a graph that is instantiated at once and then freed:
 * the executable graph is all a replay needs. */
static tack_status lacks_graphs(tack_device *d) {
    const tack_cuda_api *api = cuda_api_get();
    const gpu_entry need[] = {GPU_ENTRY_AS(api, cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
                              GPU_ENTRY(api, cuStreamEndCapture),
                              GPU_ENTRY_AS(api, cuGraphInstantiate, "cuGraphInstantiateWithFlags"),
                              GPU_ENTRY(api, cuGraphLaunch),
                              GPU_ENTRY(api, cuGraphExecDestroy),
                              GPU_ENTRY(api, cuGraphDestroy)};
    return GPU_ENTRIES_CHECK(d, "NVIDIA driver", need, "graphs");
}

static tack_status g_begin(tack_device *d, const tack_stream *s) {
    tack_status st = lacks_graphs(d);
    if (st != TACK_OK) return st;
    CALL(cuda_api_get()->cuStreamBeginCapture(queue_of(d, s), TACK_CU_STREAM_CAPTURE_MODE_RELAXED),
         "cuStreamBeginCapture");
}

static tack_status g_end(tack_device *d, const tack_stream *s, void **exec) {
    const tack_cuda_api *api = cuda_api_get();
    CUgraph graph = NULL;
    *exec = NULL;
    tack_status st = cuda_push(d);
    if (st != TACK_OK) return st;
    CUresult r = api->cuStreamEndCapture(queue_of(d, s), &graph);
    if (r != TACK_CUDA_SUCCESS) st = cuda_fail(d, r, "cuStreamEndCapture");
    if (st == TACK_OK && (r = api->cuGraphInstantiate((CUgraphExec *)exec, graph, 0)) != TACK_CUDA_SUCCESS) {
        *exec = NULL;
        st = cuda_fail(d, r, "cuGraphInstantiate");
    }
    if (graph) cuda_note(d, api->cuGraphDestroy(graph));
    cuda_pop();
    return st;
}

static tack_status g_go(tack_device *d, void *exec, const tack_stream *s) {
    CUresult r = cuda_api_get()->cuGraphLaunch((CUgraphExec)exec, queue_of(d, s));
    return r == TACK_CUDA_SUCCESS ? TACK_OK : cuda_fail(d, r, "cuGraphLaunch");
}

static tack_status g_launch(tack_device *d, void *exec, const tack_stream *s, tack_program *const *progs, int n) {
    tack_status st = cuda_push(d);
    if (st != TACK_OK) return st;
    st = gpu_replay(d, progs, n, s, g_go, exec);
    cuda_pop();
    return st;
}

static void g_destroy(tack_device *d, void *exec) {
    if (cuda_is_lost(d) || cuda_push(d) != TACK_OK) return;
    cuda_note(d, cuda_api_get()->cuGraphExecDestroy((CUgraphExec)exec)); /* one in flight is freed when done */
    cuda_pop();
}

const rt_stream_ops cuda_stream_ops = {s_create, s_destroy, s_sync,  e_create, e_destroy, e_record, e_wait,
                                       e_sync,   e_query,   e_elapsed, g_begin, g_end,     g_launch, g_destroy};
