/*
 * hip_stream.c -- HIP streams, events and graphs for runtime/stream.c and graph.c.
 *
 * The HIP twin of cuda_stream.c: Tack queues a device's work on one stream
 * of its own (hip.c); a program that names another (tack.Stream, a wrapped
 * PyTorch or CuPy stream on ROCm) has its copies and launches go there
 * (hip_queue), and orders them with events.  These are the runtime calls
 * behind that: a stream (blocking, as Tack's own: ordered with the null
 * stream), events with or without timing, record, a wait on the device
 * (hipStreamWaitEvent), a wait on the host, a query and the elapsed time,
 * each with the device made current.
 *
 * A stream's synchronization is a synchronization point: a failed check in
 * a kernel that ran on it is reported there (the device's one error
 * record, hip_launch.c).  A NULL tack_stream is Tack's own stream; a
 * wrapped handle 0 is HIP's null stream.  A runtime without
 * hipStreamDestroy, hipEventQuery, hipEventSynchronize or
 * hipEventElapsedTime has streams refused with the missing name.
 *
 * Graphs (runtime/graph.c) are HIP's stream capture, as CUDA's: begin and
 * end a capture, instantiate its graph, launch that on any stream of the
 * device, destroy it; a runtime without those names refuses a capture
 * (the check and its wording are gpu_events.c's, as CUDA's).
 */
#include <string.h>

#include "backends/common/gpu_events.h"
#include "backends/hip/hip_backend.h"

static hipStream_t queue_of(tack_device *d, const tack_stream *s) {
    return s ? (hipStream_t)s->handle : ((hip_dev *)d->state)->stream;
}

static tack_status check_api(tack_device *d) {
    const tack_hip_api *api = hip_api_get();
    const gpu_entry need[] = {GPU_ENTRY(api, hipStreamDestroy), GPU_ENTRY(api, hipEventQuery),
                              GPU_ENTRY(api, hipEventSynchronize), GPU_ENTRY(api, hipEventElapsedTime)};
    return GPU_ENTRIES_CHECK(d, "HIP runtime", need, "streams and events");
}

/* A driver call under d's context: its failure worded by hip_fail. */
#define CALL(call, what)                                                                        \
    do {                                                                                        \
        tack_status st_ = hip_push(d);                                                         \
        if (st_ != TACK_OK) return st_;                                                         \
        hipError_t r_ = (call);                                                                   \
        hip_pop();                                                                             \
        return r_ == TACK_HIP_SUCCESS ? TACK_OK : hip_fail(d, r_, what);                      \
    } while (0)

static tack_status s_create(tack_device *d, void **handle) {
    tack_status st = check_api(d);
    if (st != TACK_OK) return st;
    CALL(hip_api_get()->hipStreamCreate((hipStream_t *)handle), "hipStreamCreate");
}

static void s_destroy(tack_device *d, void *handle) {
    if (hip_is_lost(d) || hip_push(d) != TACK_OK) return;
    hip_note(d, hip_api_get()->hipStreamDestroy((hipStream_t)handle)); /* its queued work still runs */
    hip_pop();
}

static tack_status s_sync(tack_device *d, const tack_stream *s) {
    tack_status st = hip_push(d);
    if (st != TACK_OK) return st;
    hipError_t r = hip_api_get()->hipStreamSynchronize(queue_of(d, s));
    hip_pop();
    if (r != TACK_HIP_SUCCESS) return hip_fail(d, r, "hipStreamSynchronize");
    return hip_check_record(d); /* a synchronization point */
}

static tack_status e_create(tack_device *d, int timing, void **ev) {
    tack_status st = check_api(d);
    if (st != TACK_OK) return st;
    CALL(hip_api_get()->hipEventCreateWithFlags((hipEvent_t *)ev, timing ? 0 : TACK_HIP_EVENT_DISABLE_TIMING),
         "hipEventCreateWithFlags");
}

static void e_destroy(tack_device *d, void *ev) {
    if (hip_is_lost(d) || hip_push(d) != TACK_OK) return;
    hip_note(d, hip_api_get()->hipEventDestroy((hipEvent_t)ev));
    hip_pop();
}

static tack_status e_record(tack_device *d, void *ev, const tack_stream *s) {
    CALL(hip_api_get()->hipEventRecord((hipEvent_t)ev, queue_of(d, s)), "hipEventRecord");
}

static tack_status e_wait(tack_device *d, const tack_stream *s, void *ev) {
    CALL(hip_api_get()->hipStreamWaitEvent(queue_of(d, s), (hipEvent_t)ev, 0), "hipStreamWaitEvent");
}

static tack_status e_sync(tack_device *d, void *ev) {
    CALL(hip_api_get()->hipEventSynchronize((hipEvent_t)ev), "hipEventSynchronize");
}

static int e_query(tack_device *d, void *ev) {
    if (hip_push(d) != TACK_OK) return -1;
    hipError_t r = hip_api_get()->hipEventQuery((hipEvent_t)ev);
    hip_pop();
    if (r == TACK_HIP_SUCCESS) return 1;
    if (r == TACK_HIP_ERROR_NOT_READY) return 0;
    hip_fail(d, r, "hipEventQuery");
    return -1;
}

static tack_status e_elapsed(tack_device *d, void *a, void *b, float *ms) {
    CALL(hip_api_get()->hipEventElapsedTime(ms, (hipEvent_t)a, (hipEvent_t)b), "hipEventElapsedTime");
}

/* ------------------------------------------------------------- graphs */
/* runtime/graph.c: CUDA's twins (cuda_stream.c): a relaxed capture, its
 * graph instantiated at once and freed, the executable one replayed. */
static tack_status lacks_graphs(tack_device *d) {
    const tack_hip_api *api = hip_api_get();
    const gpu_entry need[] = {GPU_ENTRY(api, hipStreamBeginCapture), GPU_ENTRY(api, hipStreamEndCapture),
                              GPU_ENTRY(api, hipGraphInstantiate),   GPU_ENTRY(api, hipGraphLaunch),
                              GPU_ENTRY(api, hipGraphExecDestroy),   GPU_ENTRY(api, hipGraphDestroy)};
    return GPU_ENTRIES_CHECK(d, "HIP runtime", need, "graphs");
}

static tack_status g_begin(tack_device *d, const tack_stream *s) {
    tack_status st = lacks_graphs(d);
    if (st != TACK_OK) return st;
    CALL(hip_api_get()->hipStreamBeginCapture(queue_of(d, s), TACK_HIP_STREAM_CAPTURE_MODE_RELAXED),
         "hipStreamBeginCapture");
}

static tack_status g_end(tack_device *d, const tack_stream *s, void **exec) {
    const tack_hip_api *api = hip_api_get();
    hipGraph_t graph = NULL;
    *exec = NULL;
    tack_status st = hip_push(d);
    if (st != TACK_OK) return st;
    hipError_t r = api->hipStreamEndCapture(queue_of(d, s), &graph);
    if (r != TACK_HIP_SUCCESS) st = hip_fail(d, r, "hipStreamEndCapture");
    if (st == TACK_OK &&
        (r = api->hipGraphInstantiate((hipGraphExec_t *)exec, graph, NULL, NULL, 0)) != TACK_HIP_SUCCESS) {
        *exec = NULL;
        st = hip_fail(d, r, "hipGraphInstantiate");
    }
    if (graph) hip_note(d, api->hipGraphDestroy(graph));
    hip_pop();
    return st;
}

static tack_status g_go(tack_device *d, void *exec, const tack_stream *s) {
    hipError_t r = hip_api_get()->hipGraphLaunch((hipGraphExec_t)exec, queue_of(d, s));
    return r == TACK_HIP_SUCCESS ? TACK_OK : hip_fail(d, r, "hipGraphLaunch");
}

static tack_status g_launch(tack_device *d, void *exec, const tack_stream *s, tack_program *const *progs, int n) {
    tack_status st = hip_push(d);
    if (st != TACK_OK) return st;
    st = gpu_replay(d, progs, n, s, g_go, exec);
    hip_pop();
    return st;
}

static void g_destroy(tack_device *d, void *exec) {
    if (hip_is_lost(d) || hip_push(d) != TACK_OK) return;
    hip_note(d, hip_api_get()->hipGraphExecDestroy((hipGraphExec_t)exec));
    hip_pop();
}

const rt_stream_ops hip_stream_ops = {s_create, s_destroy, s_sync,  e_create, e_destroy, e_record, e_wait,
                                      e_sync,   e_query,   e_elapsed, g_begin, g_end,     g_launch, g_destroy};
