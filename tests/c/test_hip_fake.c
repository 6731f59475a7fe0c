/*
 * test_hip_fake.c -- the HIP backend's host side against a fake runtime.
 *
 * Without an AMD GPU the HIP launch path cannot run, yet most of it is host
 * code: devices and their architecture, memory and copies, building through
 * hiprtc for the device's gcnArchName and the code-object cache, argument
 * packing and grid sizing, when a call returns, the device-side error
 * record read at synchronization points, wrapped addresses checked with
 * hipPointerGetAttributes, DLPack's stream hand-off, and a lost device.
 * tests/c/fake_hip.c is a fake libamdhip64 (with a fake hiprtc) that does
 * the host-side work for real -- memory is host memory, copies happen when
 * their stream is drained, events order streams -- and records what
 * kernels were launched with; CMake builds it next to this test, which
 * points TACK_HIP_PATH and TACK_HIPRTC_PATH at it before Tack loads either.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* mkdtemp, on macOS */

#include "check.h"
#include "private/tack_private.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_dlpack.h"
#include "tack_kernel.h"
#include "tk_ast.h"

#define FAKE_INT(name) (*(int *)dlsym(lib, #name))
#define FAKE_STR(name) ((char *)dlsym(lib, #name))

static void *lib;
static int phased_k = -1;

/* out[i] = a[i] + s over out, then t = out[0] on one thread, then out[i] = t for i < 3 */
static tack_program *phased(tack_device *g, int fast) {
    AT(3, 4);
    tack_node *body = BLOCK(3,
        RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")), NAME("s"))))),
        ASSIGN(NAME("t"), SUB(NAME("out"), 1, INT(0))),
        RANGE1("i", INT(3), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("t")))));
    int k = phased_k >= 0 ? phased_k : (phased_k = FUNC(TACK_FUNC_KERNEL, "phased", "a out s", body));
    tack_argtype sig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "hip";
    o.fast_math = fast;
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 3, &o, &p) == TACK_OK);
    if (p) CHECK(tack_program_build(p, g) == TACK_OK);
    return p;
}

static void devices_and_memory(tack_device *g) {
    tack_device *list[16];
    int n = tack_devices(list, 16), found = 0;
    for (int i = 0; i < n; i++) found |= strcmp(tack_device_name(list[i]), "hip:0") == 0;
    CHECK(found);
    CHECK(strcmp(tack_device_dialect(g), "hip") == 0);
    CHECK(tack_device_threads(g) == 4); /* the fake's compute units */
    tack_device *g1 = NULL;
    CHECK(tack_device_get("hip:1", &g1) == TACK_ERR_DEVICE);
    /* copies: queued, and the host copies wait for them */
    int64_t len = 1000;
    float host[1000], back[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i * 0.5f;
    tack_array *x = NULL;
    CHECK(tack_array_empty(g, TACK_F32, 1, &len, &x) == TACK_OK);
    if (!x) return;
    CHECK(tack_array_copy_from_host(x, host, sizeof host) == TACK_OK);
    CHECK(tack_array_copy_to_host(x, back, sizeof back) == TACK_OK);
    CHECK(memcmp(host, back, sizeof host) == 0);
    /* fills: 4-byte with hipMemsetD32Async, 8-byte through a staging copy */
    float v = 2.5f;
    CHECK(tack_array_fill(x, &v) == TACK_OK);
    CHECK(tack_array_copy_to_host(x, back, sizeof back) == TACK_OK);
    CHECK(back[0] == 2.5f && back[999] == 2.5f);
    tack_array *y = NULL;
    double dv = -1.25, dback[1000];
    CHECK(tack_array_empty(g, TACK_F64, 1, &len, &y) == TACK_OK && tack_array_fill(y, &dv) == TACK_OK);
    CHECK(tack_array_copy_to_host(y, dback, sizeof dback) == TACK_OK && dback[0] == -1.25 && dback[999] == -1.25);
    /* a device-to-device clone */
    tack_array *z = NULL;
    CHECK(tack_array_clone(x, NULL, &z) == TACK_OK);
    memset(back, 0, sizeof back);
    CHECK(z && tack_array_copy_to_host(z, back, sizeof back) == TACK_OK && back[500] == 2.5f);
    /* wrapped addresses: device memory of this GPU, checked with hipPointerGetAttributes */
    tack_array *w = NULL;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &len, tack_array_data(x), 1, NULL, NULL, &w) == TACK_OK);
    tack_array_release(w);
    w = NULL;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &len, host, 1, NULL, NULL, &w) == TACK_ERR_VALUE && w == NULL);
    CHECK(strstr(tack_last_error(), "is not memory the HIP runtime knows") != NULL);
    CHECK(strstr(tack_last_error(), "array_from_ptr on hip:0") != NULL);
    int live = FAKE_INT(live_allocs);
    tack_array_release(x);
    tack_array_release(y);
    tack_array_release(z);
    CHECK(FAKE_INT(live_allocs) == live - 3);
}

static void graphs(tack_device *g);

/* out[i] = 0; for b, t in blocks(nb, B): barrier(), out[b] += 1 on thread 0; then out[0] += 1 */
static tack_program *blocks_program(tack_device *g, const char *name, int B, tack_status *st) {
    AT(7, 4);
    tack_node *body = BLOCK(3, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), FLT(0.0)))),
        BLOCKS("b", "t", NAME("nb"), B,
               BLOCK(2, EXPR(CALL("barrier", 0)),
                     IF(CMP(NAME("t"), TACK_OP_EQ, INT(0)),
                        BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("b")), FLT(1.0))), NULL))),
        AUG(TACK_OP_ADD, SUB(NAME("out"), 1, INT(0)), FLT(1.0)));
    int k = FUNC(TACK_FUNC_KERNEL, name, "out nb", body);
    tack_argtype sig[2] = {ARR(TACK_F32, 1), WEAK(TACK_I64)};
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "hip";
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 2, &o, &p) == TACK_OK);
    *st = p ? tack_program_build(p, g) : TACK_ERR_VALUE;
    return p;
}

/* A blocks loop runs blocks of exactly its B threads, one a block of the
 * loop (at most what fills the device); a B over what the compiled
 * function allows (HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the largest
 * work-group its code object was built for), or static LDS over the
 * device's, is a ValueError at build
 * naming the kernel, B and the limit -- not the runtime's launch error. */
static void blocks(tack_device *g) {
    int *max_threads = dlsym(lib, "func_max_threads"), *shared = dlsym(lib, "func_shared_bytes");
    char *log = FAKE_STR(launch_log);
    tack_status st;
    tack_program *p = blocks_program(g, "blk", 64, &st);
    CHECK(st == TACK_OK);
    CHECK(p && strstr(p->source, "tack-grid-block: 1:64") != NULL);
    int64_t n = 100;
    tack_array *out = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    tack_arg args[2];
    memset(args, 0, sizeof args);
    args[0].array = out;
    int64_t nbs[3] = {3, 100, 0};
    const char *want[3] = {"tk_phase0:1:256 tk_phase1:3:64 tk_phase2:1:1 ",
                           "tk_phase0:1:256 tk_phase1:96:64 tk_phase2:1:1 ", /* 4 CUs x 1536 / 64 resident */
                           "tk_phase0:1:256 tk_phase1:1:64 tk_phase2:1:1 "};
    for (int r = 0; p && r < 3; r++) {
        log[0] = 0;
        args[1].scalar.i = nbs[r];
        CHECK(tack_launch(p, args, 2) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
        CHECK(strcmp(log, want[r]) == 0);
        if (strcmp(log, want[r]) != 0) printf("  launches: %s\n", log);
    }
    tack_program_free(p);
    /* a function whose code object holds 32 threads a block */
    *max_threads = 32;
    p = blocks_program(g, "blk_regs", 64, &st);
    *max_threads = 1024;
    const char *e = tack_last_error();
    CHECK(st == TACK_ERR_VALUE && strstr(e, "kernel 'blk_regs'") && strstr(e, "blocks of 64 threads") &&
          strstr(e, "at most 32") && strstr(e, "HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"));
    tack_program_free(p);
    /* 70000 bytes of LDS on a device of 65536 a block */
    *shared = 70000;
    p = blocks_program(g, "blk_lds", 64, &st);
    *shared = 0;
    e = tack_last_error();
    CHECK(st == TACK_ERR_VALUE && strstr(e, "kernel 'blk_lds'") && strstr(e, "70000 bytes") &&
          strstr(e, "at most 65536") && strstr(e, "hipDeviceAttributeMaxSharedMemoryPerBlock"));
    tack_program_free(p);
    CHECK(FAKE_INT(oversized) == 0); /* no launch reached the runtime */
    tack_array_release(out);
}

static void launches(tack_device *g) {
    tack_program *p = phased(g, 0);
    if (!p) return;
    /* built for the device's own gcnArchName; gfx90a has one wavefront size (no flag) */
    CHECK(strstr(FAKE_STR(last_options), "--offload-arch=gfx90a:sramecc+:xnack- ") != NULL);
    CHECK(strstr(FAKE_STR(last_options), "-ffp-contract=off") != NULL);
    CHECK(strstr(FAKE_STR(last_options), "wavefrontsize") == NULL);
    CHECK(system("ls \"$TACK_CACHE_DIR\"/*.gfx90a_sramecc+_xnack-.hsaco > /dev/null") == 0);
    int64_t n = 100;
    tack_array *a = NULL, *out = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    if (!a || !out) return;
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 2.0;
    /* a call returns once its phases are queued: nothing has run yet */
    /* (the zeros' fills were queued, and complete here) */
    CHECK(tack_device_synchronize(g) == TACK_OK && strstr(FAKE_STR(completed), "fill(400) fill(400)") != NULL);
    int before = FAKE_INT(launches);
    FAKE_STR(completed)[0] = 0;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(FAKE_INT(launches) == before);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK(FAKE_INT(launches) == before + 3); /* loop, one thread, loop */
    CHECK(strcmp(FAKE_STR(completed), "launch(tk_phase0) launch(tk_phase1) launch(tk_phase2) d2h(32) ") == 0);
    /* the last phase: 3 iterations, one block of 256; its arguments, as the kernel's one struct */
    uint64_t *slots = dlsym(lib, "last_args");
    CHECK(*(unsigned *)dlsym(lib, "last_grid") == 1 && *(unsigned *)dlsym(lib, "last_block") == 256);
    CHECK(*(unsigned *)dlsym(lib, "phase0_grid") == 1); /* 100 elements: one block */
    CHECK(*(size_t *)dlsym(lib, "last_args_bytes") == 8 * 8); /* err, frame, prog, a+shape, out+shape, s */
    CHECK(slots[0] != 0 && slots[1] != 0);
    CHECK(slots[3] == (uint64_t)(uintptr_t)tack_array_data(a) && slots[4] == 100);
    CHECK(slots[5] == (uint64_t)(uintptr_t)tack_array_data(out) && slots[6] == 100);
    float s; /* an f64 scalar beside f32 arrays is carried as an f32, in the slot's low half */
    memcpy(&s, &slots[7], 4);
    CHECK(s == 2.0f);
    /* grids from the work: 100000 elements is 391 blocks, capped at 4 CUs x 6 blocks */
    int64_t big = 100000;
    tack_array *ba = NULL, *bo = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &big, &ba) == TACK_OK && tack_array_zeros(g, TACK_F32, 1, &big, &bo) == TACK_OK);
    args[0].array = ba;
    args[1].array = bo;
    FAKE_STR(completed)[0] = 0;
    CHECK(tack_launch(p, args, 3) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    CHECK(strstr(FAKE_STR(completed), "launch(tk_phase0)") != NULL && *(unsigned *)dlsym(lib, "last_grid") == 1);
    CHECK(*(unsigned *)dlsym(lib, "phase0_grid") == 24);
    args[0].array = a;
    args[1].array = out;
    tack_array_release(ba);
    tack_array_release(bo);
    /* a failed check: the call returns, the synchronization reports it once */
    FAKE_INT(fail_next) = 1;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 10 (array ") != NULL);
    CHECK(strstr(tack_last_error(), "kernel phased, test.py:") != NULL);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* a copy to the host is a synchronization point */
    float host[100];
    FAKE_INT(fail_next) = 1;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_ERR_INDEX);
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_OK);
    /* a shared argument: the call has finished, and reports, when it returns */
    tack_array_set_flags(out, TACK_ARRAY_SHARED);
    before = FAKE_INT(launches);
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(FAKE_INT(launches) == before + 3);
    FAKE_INT(fail_next) = 1;
    CHECK(tack_launch(p, args, 3) == TACK_ERR_INDEX);
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    tack_array_set_flags(out, 0);
    /* the same source again: from the disk cache, no compile */
    FAKE_STR(last_options)[0] = 0;
    tack_program *p2 = phased(g, 0);
    CHECK(FAKE_STR(last_options)[0] == 0);
    /* freed with a failure unread: the next synchronization still reports it */
    FAKE_INT(fail_next) = 1;
    CHECK(p2 && tack_launch(p2, args, 3) == TACK_OK);
    tack_program_free(p2);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX && strstr(tack_last_error(), "kernel phased"));
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* a truncated cache entry is rebuilt */
    CHECK(system("for f in \"$TACK_CACHE_DIR\"/*.hsaco; do head -c 40 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done") == 0);
    tack_program *p3 = phased(g, 0);
    CHECK(strstr(FAKE_STR(last_options), "--offload-arch=gfx90a") != NULL);
    tack_program_free(p3);
    /* fast math reaches hiprtc, and the cache key */
    FAKE_STR(last_options)[0] = 0;
    p3 = phased(g, 1);
    CHECK(strstr(FAKE_STR(last_options), "-ffast-math") != NULL);
    tack_program_free(p3);
    /* out of memory while building is clean */
    for (int fail = 1; fail < 40; fail++) {
        tack_program *q = NULL;
        tack_argtype qsig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
        tack_compile_options o;
        tack_compile_options_init(&o);
        o.target = "hip";
        if (tack_compile(tb_m, phased_k, qsig, 3, &o, &q) != TACK_OK) continue;
        failing_allocator_install(fail);
        tack_status st = tack_program_build(q, g);
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM);
        tack_program_free(q);
    }
    /* a CPU program is refused, saying which target to compile for */
    tack_program *pc = NULL;
    tack_argtype sig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    CHECK(tack_compile(tb_m, phased_k, sig, 3, NULL, &pc) == TACK_OK);
    CHECK(pc && tack_program_build(pc, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "target \"hip\""));
    tack_program_free(pc);

    /* DLPack export to a consumer's stream: an event recorded on Tack's stream
     * and waited for on theirs, with no wait on the host; DLPack's ROCm
     * default stream is HIP's null stream (the fake's stream 0) */
    char *order = FAKE_STR(order);
    void *m = NULL;
    order[0] = 0;
    CHECK(tack_array_to_dlpack_stream(out, 1, TACK_DLPACK_COPY_IF_NEEDED, TACK_DLPACK_STREAM_DEFAULT, &m) == TACK_OK);
    CHECK(strcmp(order, "create(2) record(1000,1) wait(0,1000) destroy(1000) ") == 0);
    tack_dlpack_delete(m, 1);
    /* the export's DLPack device is kDLROCM */
    CHECK(tack_array_to_dlpack_stream(out, 1, TACK_DLPACK_COPY_IF_NEEDED, TACK_DLPACK_STREAM_NO_SYNC, &m) == TACK_OK);
    if (m) {
        DLManagedTensorVersioned *t = m;
        CHECK(t->dl_tensor.device.device_type == kDLROCM && t->dl_tensor.device.device_id == 0);
        CHECK(t->dl_tensor.data == tack_array_data(out));
        /* and imported back: the same storage on hip:0 */
        tack_array *back = NULL;
        CHECK(tack_array_from_dlpack(m, 1, NULL, &back) == TACK_OK);
        CHECK(back && tack_array_device(back) == g && tack_array_data(back) == tack_array_data(out));
        tack_array_release(back);
    }
    /* the plain export waits on the host */
    order[0] = 0;
    CHECK(tack_array_to_dlpack(out, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    CHECK(strncmp(order, "sync(1)", 7) == 0 && !strstr(order, "record"));
    tack_dlpack_delete(m, 1);

    graphs(g);
    /* last: a sticky error loses the device, said once naming the kernel
     * launched last; then every operation fails at once without calling HIP */
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    FAKE_INT(sticky_next_sync) = 1;
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), "hip:0: the GPU is in an unrecoverable state (hipErrorIllegalAddress, an illegal "
                                    "memory access) after kernel 'phased' was launched") != NULL);
    int calls0 = FAKE_INT(calls_after);
    const char *unusable = "hip:0 is unusable since an earlier error (hipErrorIllegalAddress after kernel 'phased')";
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_launch(p, args, 3) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
    CHECK(FAKE_INT(calls_after) == calls0);
}

/* Graphs (runtime/graph.c, hip_stream.c): a capture keeps the launches and
 * fills queued on its stream out of the stream's queue; a replay queues
 * them again, in order, on the stream it is launched on; what would wait for
 * the capture is refused before HIP sees it; the graph keeps its kernel and
 * arrays until it is released. */
static void graphs(tack_device *g) {
    tack_program *p = phased(g, 0);
    if (!p) return;
    int64_t n = 100;
    tack_array *a = NULL, *out = NULL;
    tack_stream *s = NULL;
    tack_graph *gr = NULL;
    float host[100], seven = 7.0f;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    CHECK(tack_stream_create(g, &s) == TACK_OK);
    if (!a || !out || !s) return;
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 2.0;
    CHECK(tack_launch(p, args, 3) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    int before = FAKE_INT(launches), frees0 = FAKE_INT(frees), unloads0 = FAKE_INT(module_unloads);
    CHECK(tack_capture_begin(s) == TACK_OK);
    CHECK(tack_launch(p, args, 3) == TACK_OK && tack_array_fill(a, &seven) == TACK_OK);
    CHECK(tack_stream_synchronize(s) == TACK_ERR_VALUE && tack_device_synchronize(g) == TACK_ERR_VALUE);
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "reading an array on the host during a capture on hip:0"));
    CHECK(tack_capture_end(s, &gr) == TACK_OK && gr && tack_graph_count(gr) == 2);
    CHECK(FAKE_INT(capture_misuse) == 0 && FAKE_INT(capture_mode) == 2 && FAKE_INT(execs_live) == 1);
    CHECK(tack_stream_synchronize(s) == TACK_OK && FAKE_INT(launches) == before); /* nothing ran */
    /* the graph alone holds a and the kernel now */
    tack_array_release(a);
    tack_program_free(p);
    CHECK(FAKE_INT(frees) == frees0 && FAKE_INT(module_unloads) == unloads0);
    FAKE_STR(completed)[0] = 0;
    CHECK(tack_graph_launch(gr, NULL) == TACK_OK && tack_graph_launch(gr, s) == TACK_OK);
    CHECK(tack_stream_synchronize(s) == TACK_OK && FAKE_INT(launches) == before + 6);
    const char *one = "launch(tk_phase0) launch(tk_phase1) launch(tk_phase2) fill(400) ";
    char want[300];
    snprintf(want, sizeof want, "%s%s", one, one);
    CHECK(strstr(FAKE_STR(completed), want) != NULL);
    tack_graph_release(gr);
    CHECK(FAKE_INT(execs_live) == 0 && FAKE_INT(graphs_live) == 0);
    CHECK(FAKE_INT(frees) == frees0 + 2 && FAKE_INT(module_unloads) == unloads0 + 1); /* a and the frame */
    tack_array_release(out);
    tack_stream_release(s);
    CHECK(tack_device_synchronize(g) == TACK_OK);
}

int main(void) {
    /* before Tack loads either library */
    setenv("TACK_HIP_PATH", TACK_FAKE_HIP, 1);
    setenv("TACK_HIPRTC_PATH", TACK_FAKE_HIP, 1);
    unsetenv("FAKE_HIP_COUNT");
    unsetenv("FAKE_HIP_ARCH");
    unsetenv("FAKE_HIP_WARP");
    /* a cache of its own: the first build compiles */
    char cache[] = "/tmp/tack-hipfake-XXXXXX";
    if (!mkdtemp(cache)) return 1;
    setenv("TACK_CACHE_DIR", cache, 1);
    tack_device *g = NULL;
    CHECK(tack_device_get("hip", &g) == TACK_OK);
    lib = dlopen(TACK_FAKE_HIP, RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    if (!g || !lib) return CHECK_SUMMARY();
    tack_module_new(&tb_m);
    devices_and_memory(g);
    blocks(g); /* before launches(g), which ends with the device lost */
    launches(g);
    tack_module_free(tb_m);
    char cmd[100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache);
    return CHECK_SUMMARY();
}
