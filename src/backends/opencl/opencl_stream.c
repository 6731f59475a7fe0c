/*
 * opencl_stream.c -- OpenCL streams and events for runtime/stream.c.
 *
 * An OpenCL command queue is what CUDA calls a stream: commands on one
 * in-order queue run in order, commands on two queues of one context may
 * overlap.  Tack queues a device's work on a queue of its own (opencl.c); a
 * tack.Stream is another in-order queue of the same context, and the
 * thread's current stream decides where copies, fills and launches go
 * (ocl_queue in opencl_backend.h).  runtime/stream.c keeps arrays right
 * across streams with events; these are OpenCL's:
 *
 *   record   a marker (clEnqueueMarkerWithWaitList with no list: on an
 *            in-order queue it completes when everything before it has);
 *            the event keeps the marker's cl_event, a new record replaces it
 *   wait     a barrier on the waiting queue that waits for that marker
 *            (clEnqueueBarrierWithWaitList), so the wait is on the device
 *   sync     clWaitForEvents on the marker; query its execution status
 *   elapsed  the markers' CL_PROFILING_COMMAND_END, in nanoseconds: every
 *            queue Tack makes is profiled for that
 *
 * A wrapped queue (tack_stream_wrap of another library's cl_command_queue)
 * must belong to the device's context; Tack cannot check that without the
 * loader reading the handle, so it is the caller's promise, as a wrapped
 * CUstream is.  An event must be recorded on a profiled queue to time.
 * A stream's synchronization is a synchronization point like the device's:
 * a failed check of a kernel that ran on it is reported there (the device's
 * one error record, opencl_launch.c).  A loader without the OpenCL 1.2
 * entry points refuses streams, naming the one it lacks.  Graphs on OpenCL
 * are the runtime's list of calls, replayed (runtime/graph.c): OpenCL has
 * no capture of its own.  An event is the marker of its last record
 * (gpu_events.c, which Level Zero's events share).
 */
#include "backends/common/gpu_events.h"
#include "backends/opencl/opencl_backend.h"

static cl_event marker_of(void *ev) { return ((gpu_event *)ev)->rec; } /* NULL before the first record */

static void release(tack_device *d, void *marker) {
    (void)d;
    ocl_api_get()->clReleaseEvent(marker);
}

static cl_command_queue queue_of(tack_device *d, const tack_stream *s) {
    return s ? (cl_command_queue)s->handle : ((ocl_dev *)d->state)->queue;
}

static tack_status check_api(tack_device *d) {
    const tack_opencl_api *api = ocl_api_get();
    const gpu_entry need[] = {GPU_ENTRY(api, clEnqueueMarkerWithWaitList), GPU_ENTRY(api, clEnqueueBarrierWithWaitList),
                              GPU_ENTRY(api, clWaitForEvents),             GPU_ENTRY(api, clGetEventInfo),
                              GPU_ENTRY(api, clGetEventProfilingInfo),     GPU_ENTRY(api, clReleaseEvent),
                              GPU_ENTRY(api, clFlush)};
    return GPU_ENTRIES_CHECK(d, "OpenCL loader", need, "streams and events");
}

static tack_status s_create(tack_device *d, void **handle) {
    const tack_opencl_api *api = ocl_api_get();
    ocl_dev *c = d->state;
    tack_status st = check_api(d);
    if (st != TACK_OK) return st;
    cl_int r = TACK_CL_SUCCESS;
    cl_command_queue q = api->clCreateCommandQueue(c->ctx, c->dev, TACK_CL_QUEUE_PROFILING_ENABLE, &r);
    if (!q) return ocl_error(r ? r : TACK_CL_OUT_OF_RESOURCES, "clCreateCommandQueue (a stream)", d);
    *handle = q;
    return TACK_OK;
}

static void s_destroy(tack_device *d, void *handle) {
    (void)d;
    ocl_api_get()->clReleaseCommandQueue((cl_command_queue)handle); /* its queued work still runs */
}

static tack_status s_sync(tack_device *d, const tack_stream *s) {
    cl_int r = ocl_api_get()->clFinish(queue_of(d, s));
    if (r != TACK_CL_SUCCESS) return ocl_error(r, "clFinish (a stream)", d);
    return ocl_check_record(d); /* a synchronization point */
}

static tack_status e_create(tack_device *d, int timing, void **ev) {
    tack_status st = check_api(d);
    return st == TACK_OK ? gpu_event_new(d, timing, ev) : st;
}

static void e_destroy(tack_device *d, void *ev) { gpu_event_free(d, ev, release); }

static tack_status e_record(tack_device *d, void *ev, const tack_stream *s) {
    const tack_opencl_api *api = ocl_api_get();
    cl_event m = NULL;
    cl_command_queue q = queue_of(d, s);
    cl_int r = api->clEnqueueMarkerWithWaitList(q, 0, NULL, &m);
    if (r != TACK_CL_SUCCESS) return ocl_error(r, "clEnqueueMarkerWithWaitList", d);
    gpu_event_replace(d, ev, m, release);
    /* submitted, so that a wait for it on another queue, or on the host, is not a wait for a command
     * the implementation has not started to run */
    r = api->clFlush(q);
    return r == TACK_CL_SUCCESS ? TACK_OK : ocl_error(r, "clFlush", d);
}

static tack_status e_wait(tack_device *d, const tack_stream *s, void *ev) {
    cl_event m = marker_of(ev);
    if (!m) return TACK_OK;
    cl_int r = ocl_api_get()->clEnqueueBarrierWithWaitList(queue_of(d, s), 1, &m, NULL);
    return r == TACK_CL_SUCCESS ? TACK_OK : ocl_error(r, "clEnqueueBarrierWithWaitList", d);
}

static tack_status e_sync(tack_device *d, void *ev) {
    cl_event m = marker_of(ev);
    if (!m) return TACK_OK;
    cl_int r = ocl_api_get()->clWaitForEvents(1, &m);
    return r == TACK_CL_SUCCESS ? TACK_OK : ocl_error(r, "clWaitForEvents", d);
}

static int e_query(tack_device *d, void *ev) {
    cl_event m = marker_of(ev);
    if (!m) return 1;
    cl_int status = 0;
    cl_int r = ocl_api_get()->clGetEventInfo(m, TACK_CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                            &status, NULL);
    if (r != TACK_CL_SUCCESS) return ocl_error(r, "clGetEventInfo", d), -1;
    if (status < 0) return ocl_error(status, "a command before the event", d), -1;
    return status == TACK_CL_COMPLETE;
}

static tack_status end_ns(tack_device *d, void *ev, cl_ulong *ns) {
    cl_int r =
        ocl_api_get()->clGetEventProfilingInfo(marker_of(ev), TACK_CL_PROFILING_COMMAND_END, sizeof *ns, ns, NULL);
    if (r != TACK_CL_SUCCESS)
        return ocl_error(r, "clGetEventProfilingInfo (an event recorded on a queue without profiling cannot time)", d);
    return TACK_OK;
}

static tack_status e_elapsed(tack_device *d, void *a, void *b, float *ms) {
    cl_ulong t0 = 0, t1 = 0;
    tack_status st = end_ns(d, a, &t0);
    if (st == TACK_OK) st = end_ns(d, b, &t1);
    if (st == TACK_OK) *ms = (float)(((double)t1 - (double)t0) / 1e6);
    return st;
}

/* ------------------------------------------------------------ profiling */
/* tack.profile() (runtime/profile.c): a launch's device time, from its first phase's start to its
 * last phase's end, read from the commands' own events when the profile stops (gpu_timer_of). */
static tack_status timer_read(tack_device *d, void *first, void *last, int64_t *ns) {
    const tack_opencl_api *api = ocl_api_get();
    cl_event f = first, l = last;
    cl_ulong a = 0, b = 0;
    cl_int r = api->clWaitForEvents(1, &l);
    if (r == TACK_CL_SUCCESS) r = api->clGetEventProfilingInfo(f, TACK_CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
    if (r == TACK_CL_SUCCESS) r = api->clGetEventProfilingInfo(l, TACK_CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
    if (r != TACK_CL_SUCCESS) return ocl_error(r, "clGetEventProfilingInfo (a launch's device time)", d);
    *ns = b >= a ? (int64_t)(b - a) : 0;
    return TACK_OK;
}

rt_prof_timer ocl_timer_of(tack_device *d, cl_event first, cl_event last) {
    return gpu_timer_of(d, first, last, timer_read, release);
}

const rt_stream_ops ocl_stream_ops = {s_create, s_destroy, s_sync, e_create, e_destroy, e_record, e_wait,
                                      e_sync,   e_query,   e_elapsed, NULL,   NULL,      NULL,     NULL};
