/*
 * test_metal_fake.c -- the Metal backend's host side against a fake
 * Objective-C runtime and Metal framework.
 *
 * No Mac runs here, yet everything but the GPU's own work is host code:
 * loading the runtime, finding devices, shared buffers and host copies,
 * wrapping an MTLBuffer, compiling a library and making pipelines, the
 * argument convention of a launch (buffer indices, the argument words, the
 * grid; a blocks loop's threadgroups of exactly its block size, and the
 * errors when a pipeline or the device cannot hold the block), command buffers committed and waited for, a compile error and a
 * failed command buffer reported with Metal's text, the device-side error
 * record read at a synchronization point, and retains balanced with
 * releases.  tests/c/fake_metal.c is the fake (its comment says how its
 * objc_msgSend stands in for the real one); CMake builds it beside this
 * test, which points TACK_METAL_OBJC_PATH and TACK_METAL_PATH at it before
 * Tack loads either.  The MSL sources are hand-written: the fake checks
 * their layout comment and kernel names, it does not compile them.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_dlpack.h"
#include "tack_kernel.h"

#ifdef TACK_FAKE_METAL
#define FAKE_INT(name) (*(int *)dlsym(lib, #name))
#define FAKE_ARR(type, name) ((type *)dlsym(lib, #name))

static void *lib;

static const char *SRC =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "kernel void tk_phase0(device int *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]], device float *a [[buffer(3)]],\n"
    "                      device float *out [[buffer(4)]], uint t [[thread_position_in_grid]]) {}\n"
    "kernel void tk_phase1(device int *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]]) {}\n"
    "/* tack-metal: phases=ps frame=64 */\n"
    "/* tack-grid-work: 0:s0.0 */\n";

static tk_pinfo param(const char *name, int is_array, tack_dtype dt, int ndim) {
    tk_pinfo p;
    memset(&p, 0, sizeof p);
    p.name = (char *)name;
    p.is_array = is_array;
    p.dtype = dt;
    p.ndim = ndim;
    p.narrow = TACK_DTYPE_COUNT;
    return p;
}

static tack_program *program(const char *name, const char *src, tack_device *g, tack_status want) {
    static const tk_site site = {CK_INDEX, 7, 0, "a", NULL, "k", "k.py"};
    tk_pinfo params[4] = {param("a", 1, TACK_F32, 1), param("out", 1, TACK_F32, 2), param("s", 0, TACK_F64, 0),
                          param("n", 0, TACK_I64, 0)};
    params[1].written = 1;
    tack_program *p = NULL;
    CHECK(tk_program_from_source(name, "metal", src, 4, params, 1, &site, &p) == TACK_OK);
    if (p) CHECK(tack_program_build(p, g) == want);
    return p;
}

static void devices_and_memory(tack_device *g) {
    tack_device *list[32];
    int n = tack_devices(list, 32), seen = 0;
    for (int i = 0; i < n && i < 32; i++) seen += tack_device_kind(list[i]) == TACK_DEVICE_METAL;
    CHECK(seen == 1);
    CHECK(strcmp(tack_device_name(g), "metal:0") == 0);
    CHECK(strcmp(tack_device_dialect(g), "metal") == 0);
    tack_device *g1 = NULL;
    CHECK(tack_device_get("metal:1", &g1) == TACK_ERR_DEVICE);
    DLDevice dl = tack_device_to_dlpack(g);
    CHECK(dl.device_type == kDLCPU && dl.device_id == 0);
    int64_t len = 1000;
    float host[1000], back[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i * 0.5f;
    tack_array *x = NULL, *y = NULL;
    CHECK(tack_array_empty(g, TACK_F32, 1, &len, &x) == TACK_OK);
    if (!x) return;
    CHECK(tack_array_copy_from_host(x, host, sizeof host) == TACK_OK);
    /* shared storage: the array's address is the buffer's host contents */
    CHECK(memcmp(tack_array_data(x), host, sizeof host) == 0);
    CHECK(tack_array_copy_to_host(x, back, sizeof back) == TACK_OK && memcmp(host, back, sizeof host) == 0);
    float v = 2.5f;
    CHECK(tack_array_fill(x, &v) == TACK_OK);
    CHECK(tack_array_copy_to_host(x, back, sizeof back) == TACK_OK && back[0] == 2.5f && back[999] == 2.5f);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &len, &y) == TACK_OK);
    CHECK(y && tack_array_copy(y, x) == TACK_OK);
    CHECK(y && tack_array_copy_to_host(y, back, sizeof back) == TACK_OK && back[500] == 2.5f);
    tack_array_release(x);
    tack_array_release(y);
}

static void wrap_buffer(tack_device *g) {
    void *(*new_buffer)(unsigned long, unsigned long) = (void *(*)(unsigned long, unsigned long))dlsym(lib, "fake_metal_new_buffer");
    void (*rel)(void *) = (void (*)(void *))dlsym(lib, "fake_metal_release");
    long (*refs)(void *) = (long (*)(void *))dlsym(lib, "fake_metal_refs");
    void *(*contents)(void *) = (void *(*)(void *))dlsym(lib, "fake_metal_contents");
    void *(*device)(int) = (void *(*)(int))dlsym(lib, "fake_metal_device");
    void *buf = new_buffer(64, 0);
    float *mem = contents(buf);
    mem[3] = 7.0f;
    int64_t n = 16;
    tack_array *a = NULL, *b = NULL;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, buf, 1, NULL, NULL, &a) == TACK_OK);
    CHECK(a && tack_array_data(a) == mem && refs(buf) == 2);
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, buf, 1, NULL, NULL, &b) == TACK_OK && refs(buf) == 2);
    float back[16];
    CHECK(a && tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && back[3] == 7.0f);
    tack_array_release(a);
    CHECK(refs(buf) == 2);
    tack_array_release(b);
    CHECK(refs(buf) == 1);
    /* emptied (tack_array_recycle) and refilled (tack_array_rewrap): the buffer's reference goes
     * with the emptying and is taken again by the refill, through the same checks as a wrap */
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, buf, 1, NULL, NULL, &a) == TACK_OK && refs(buf) == 2);
    CHECK(tack_array_recycle(a, NULL, NULL) == 1 && refs(buf) == 1);
    CHECK(tack_array_rewrap(a, g, TACK_F32, 1, &n, buf, 1, NULL, NULL) == TACK_OK && refs(buf) == 2);
    CHECK(tack_array_data(a) == mem && tack_array_device(a) == g);
    CHECK(tack_array_recycle(a, NULL, NULL) == 1 && refs(buf) == 1);
    n = 17;
    CHECK(tack_array_rewrap(a, g, TACK_F32, 1, &n, buf, 1, NULL, NULL) == TACK_ERR_VALUE && refs(buf) == 1);
    n = 16;
    /* a refill that runs out of memory (the buffer's release record) leaves the array emptied and
     * the buffer's count as it was */
    int refilled = 0, nomem = 0;
    for (long fail = 1; fail < 10 && !refilled; fail++) {
        failing_allocator_install(fail);
        tack_status st = tack_array_rewrap(a, g, TACK_F32, 1, &n, buf, 1, NULL, NULL);
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || (st == TACK_ERR_NOMEM && refs(buf) == 1 && tack_array_data(a) == NULL));
        refilled = st == TACK_OK;
        nomem += st == TACK_ERR_NOMEM;
    }
    CHECK(refilled && nomem > 0 && refs(buf) == 2 && tack_array_data(a) == mem);
    tack_array_release(a);
    CHECK(refs(buf) == 1);
    /* too short, private storage, not a buffer */
    n = 17;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, buf, 1, NULL, NULL, &a) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "holds 64 bytes") != NULL);
    void *priv = new_buffer(64, 2);
    n = 4;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, priv, 1, NULL, NULL, &a) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "private storage") != NULL);
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, device(0), 1, NULL, NULL, &a) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "is not one") != NULL);
    CHECK(refs(buf) == 1 && refs(priv) == 1);
    rel(buf);
    rel(priv);
}

static void launch(tack_device *g) {
    unsigned long long *words = FAKE_ARR(unsigned long long, fake_metal_words);
    void **bound = FAKE_ARR(void *, fake_metal_bound);
    unsigned long *offs = FAKE_ARR(unsigned long, fake_metal_bound_offset);
    unsigned long *groups = FAKE_ARR(unsigned long, fake_metal_groups), *threads = FAKE_ARR(unsigned long, fake_metal_threads);
    tack_program *p = program("k", SRC, g, TACK_OK);
    if (!p) return;
    CHECK(FAKE_INT(fake_metal_last_fast_math) == 0 && *(unsigned long *)dlsym(lib, "fake_metal_last_lang") == 0x30000);
    int64_t n = 1000, shape2[2] = {3, 5};
    tack_array *a = NULL, *out = NULL, *view = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_zeros(g, TACK_F32, 2, shape2, &out) == TACK_OK);
    if (!a || !out) return;
    tack_arg args[4];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 1.5;
    args[3].scalar.i = -3;
    int commits = FAKE_INT(fake_metal_commits), completed = FAKE_INT(fake_metal_completed);
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    /* queued, not waited for */
    CHECK(FAKE_INT(fake_metal_commits) == commits + 1 && FAKE_INT(fake_metal_completed) == completed);
    CHECK(FAKE_INT(fake_metal_nwords) == 1 + 1 + 2 + 1 + 1 && FAKE_INT(fake_metal_bytes_index) == 2);
    CHECK(words[1] == 1000 && words[2] == 3 && words[3] == 5);
    float f;
    uint32_t lo = (uint32_t)words[4];
    memcpy(&f, &lo, 4);
    CHECK(f == 1.5f && (words[4] >> 32) == 0);
    CHECK((long long)words[5] == -3);
    CHECK(bound[0] && bound[1] && bound[0] != bound[1] && bound[3] && bound[4] && bound[3] != bound[4]);
    CHECK(offs[3] == 0 && offs[4] == 0 && bound[5] == NULL);
    /* phase 0 parallel over 1000 items in groups of 256; phase 1 serial */
    CHECK(FAKE_INT(fake_metal_ndispatch) == 2);
    CHECK(groups[0] == 4 && threads[0] == 256 && groups[1] == 1 && threads[1] == 1);
    CHECK(FAKE_ARR(int, fake_metal_dispatch_phase)[0] == 0 && FAKE_ARR(int, fake_metal_dispatch_phase)[1] == 1);
    CHECK(tack_device_synchronize(g) == TACK_OK && FAKE_INT(fake_metal_completed) == completed + 1);
    /* a wrapped (shared) array: the launch completes before the call returns */
    void *(*new_buffer)(unsigned long, unsigned long) = (void *(*)(unsigned long, unsigned long))dlsym(lib, "fake_metal_new_buffer");
    void (*rel)(void *) = (void (*)(void *))dlsym(lib, "fake_metal_release");
    void *buf = new_buffer(4096, 0);
    CHECK(tack_array_wrap(g, TACK_F32, 1, &n, buf, 1, NULL, NULL, &view) == TACK_OK);
    args[0].array = view;
    completed = FAKE_INT(fake_metal_completed);
    CHECK(tack_launch(p, args, 4) == TACK_OK && FAKE_INT(fake_metal_completed) == completed + 1);
    CHECK(bound[3] == buf);
    /* a failed check: recorded by the "kernel", read at the synchronization */
    args[0].array = a;
    FAKE_INT(fake_metal_fail_site) = 0;
    *(long long *)dlsym(lib, "fake_metal_fail_a") = 1234;
    *(long long *)dlsym(lib, "fake_metal_fail_b") = 1000;
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "1234") != NULL);
    CHECK(tack_device_synchronize(g) == TACK_OK); /* cleared */
    /* a command buffer that fails */
    strcpy(FAKE_ARR(char, fake_metal_cb_error), "Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)");
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), "kIOGPUCommandBufferCallbackErrorTimeout") != NULL);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* a pipeline that takes fewer threads: groups of its limit in whole SIMD groups (200 -> 192) */
    FAKE_INT(fake_metal_max_threads) = 200;
    tack_program *p2 = program("k2", SRC, g, TACK_OK);
    FAKE_INT(fake_metal_max_threads) = 1024;
    CHECK(p2 && tack_launch(p2, args, 4) == TACK_OK);
    CHECK(threads[0] == 192 && groups[0] == 6);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* a command buffer that fails, its program freed before the synchronization: still reported */
    strcpy(FAKE_ARR(char, fake_metal_cb_error), "Internal Error (0000000e:Internal Error)");
    CHECK(tack_launch(p2, args, 4) == TACK_OK);
    tack_program_free(p2);
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE && strstr(tack_last_error(), "0000000e") != NULL);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* launches never waited for: completed command buffers are let go, failed ones kept */
    int live = FAKE_INT(fake_metal_live);
    FAKE_INT(fake_metal_complete_on_commit) = 1;
    for (int i = 0; i < 200; i++) CHECK(tack_launch(p, args, 4) == TACK_OK);
    CHECK(FAKE_INT(fake_metal_live) - live <= 2 * 33); /* at most 32 kept, each with its encoder */
    strcpy(FAKE_ARR(char, fake_metal_cb_error), "Ignored (for causing prior/excessive GPU errors)");
    for (int i = 0; i < 200; i++) CHECK(tack_launch(p, args, 4) == TACK_OK);
    FAKE_INT(fake_metal_complete_on_commit) = 0;
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE && strstr(tack_last_error(), "prior/excessive") != NULL);
    CHECK(FAKE_INT(fake_metal_live) == live);
    /* fast math reaches the compile options */
    tk_pinfo fp = param("n", 0, TACK_I64, 0);
    tack_program *pf = NULL;
    CHECK(tk_program_from_source("fast", "metal", SRC, 1, &fp, 0, NULL, &pf) == TACK_OK);
    if (pf) {
        pf->fast_math = 1;
        CHECK(tack_program_build(pf, g) == TACK_OK && FAKE_INT(fake_metal_last_fast_math) == 1);
        tack_program_free(pf);
    }
    tack_array_release(view);
    rel(buf);
    tack_array_release(a);
    tack_array_release(out);
    tack_program_free(p);
}

/* ----------------------------------------------------------- blocks loops */
/* A parallel phase, a blocks loop of 64-thread blocks over n (argument 3)
 * blocks with a shared array, and a serial phase: the layout the compiler
 * writes for `for b, t in tack.blocks(n, 64)` between two other statements. */
static const char *SRC_BLOCKS =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "kernel void tk_phase0(device int *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]], uint t [[thread_position_in_grid]]) {}\n"
    "kernel void tk_phase1(device int *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]], uint tk_gid [[threadgroup_position_in_grid]],\n"
    "                      uint tk_ngr [[threadgroups_per_grid]], uint tk_lid [[thread_position_in_threadgroup]]) {\n"
    "    threadgroup float s[64];\n"
    "    for (uint b = tk_gid; b < (uint)w[5]; b += tk_ngr) { s[tk_lid] = 0;\n"
    "        threadgroup_barrier(mem_flags::mem_threadgroup); }\n"
    "}\n"
    "kernel void tk_phase2(device int *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]]) {}\n"
    "/* tack-metal: phases=pbs frame=0 */\n"
    "/* tack-grid-work: 0:s0.0 1:i3 */\n"
    "/* tack-grid-block: 1:64 */\n";

static void blocks(tack_device *g) {
    unsigned long *groups = FAKE_ARR(unsigned long, fake_metal_groups), *threads = FAKE_ARR(unsigned long, fake_metal_threads);
    int64_t n = 1000, shape2[2] = {3, 5};
    tack_array *a = NULL, *out = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_zeros(g, TACK_F32, 2, shape2, &out) == TACK_OK);
    tack_program *p = program("blk", SRC_BLOCKS, g, TACK_OK);
    if (!a || !out || !p) {
        if (p) tack_program_free(p);
        tack_array_release(a);
        tack_array_release(out);
        return;
    }
    tack_arg args[4];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    /* threadgroups of the loop's 64 threads, one per block; the parallel phase's groups of 256 beside it */
    long long nblocks[3] = {5, 0, 10000000};
    unsigned long want[3] = {5, 1, 262144 / 64}; /* no block: one group that skips its loop; many: capped, as the others */
    for (int i = 0; i < 3; i++) {
        args[3].scalar.i = nblocks[i];
        CHECK(tack_launch(p, args, 4) == TACK_OK && FAKE_INT(fake_metal_ndispatch) == 3);
        CHECK(groups[0] == 4 && threads[0] == 256);
        CHECK(groups[1] == want[i] && threads[1] == 64);
        CHECK(groups[2] == 1 && threads[2] == 1);
        CHECK(FAKE_ARR(int, fake_metal_dispatch_phase)[1] == 1);
    }
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
    /* pipelines of at most 200 threads: the parallel phase takes 192 (whole SIMD groups), the blocks loop its 64 */
    FAKE_INT(fake_metal_max_threads) = 200;
    p = program("blk200", SRC_BLOCKS, g, TACK_OK);
    FAKE_INT(fake_metal_max_threads) = 1024;
    args[3].scalar.i = 7;
    CHECK(p && tack_launch(p, args, 4) == TACK_OK);
    CHECK(threads[0] == 192 && groups[0] == 6 && threads[1] == 64 && groups[1] == 7);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
    /* a block the pipeline cannot hold: an error naming the kernel, the block and the limit, no smaller group */
    FAKE_INT(fake_metal_max_threads) = 32;
    p = program("blk32", SRC_BLOCKS, g, TACK_ERR_VALUE);
    FAKE_INT(fake_metal_max_threads) = 1024;
    const char *e = tack_last_error();
    CHECK(strstr(e, "kernel 'blk32'") && strstr(e, "blocks of 64 threads") && strstr(e, "at most 32") &&
          strstr(e, "maxTotalThreadsPerThreadgroup"));
    tack_program_free(p);
    /* shared arrays over the device's threadgroup memory */
    FAKE_INT(fake_metal_static_tg_mem) = 40000;
    p = program("blkmem", SRC_BLOCKS, g, TACK_ERR_VALUE);
    FAKE_INT(fake_metal_static_tg_mem) = 0;
    e = tack_last_error();
    CHECK(strstr(e, "kernel 'blkmem'") && strstr(e, "40000 bytes") && strstr(e, "at most 32768") &&
          strstr(e, "maxThreadgroupMemoryLength"));
    tack_program_free(p);
    CHECK(FAKE_INT(fake_metal_oversized) == 0);
    tack_array_release(a);
    tack_array_release(out);
}

/* ------------------------------------------------- streams and events */
/* One parallel phase and no frame: launches on two streams are ordered by
 * nothing but their arrays and events. */
static const char *SRC_NOFRAME =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "kernel void tk_phase0(device int *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]], device float *a [[buffer(3)]],\n"
    "                      device float *out [[buffer(4)]], uint t [[thread_position_in_grid]]) {}\n"
    "/* tack-metal: phases=p frame=0 */\n"
    "/* tack-grid-work: 0:s0.0 */\n";

static const char *ran(void) { return FAKE_ARR(char, fake_metal_ran); }
static void ran_clear(void) { ((void (*)(void))dlsym(lib, "fake_metal_ran_clear"))(); }

/* The commit numbers from base+first on, as fake_metal_ran writes them. */
static int ran_is(int base, const int *nums, int n) {
    char want[256] = "";
    for (int i = 0; i < n; i++) snprintf(want + strlen(want), sizeof want - strlen(want), "%d ", base + nums[i]);
    if (strcmp(ran(), want) == 0) return 1;
    fprintf(stderr, "ran \"%s\", expected \"%s\"\n", ran(), want);
    return 0;
}

static tack_status go(tack_program *p, tack_array *a, tack_array *out, tack_stream *s) {
    tack_arg args[4];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 1.0;
    args[3].scalar.i = 1;
    tack_stream *was = tack_stream_use(s);
    tack_status st = tack_launch(p, args, 4);
    tack_stream_use(was);
    return st;
}

static void streams(tack_device *g) {
    tack_program *p = program("ks", SRC_NOFRAME, g, TACK_OK);
    int64_t n = 1000, shape2[2] = {3, 5};
    tack_array *a1 = NULL, *o1 = NULL, *a2 = NULL, *o2 = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a1) == TACK_OK && tack_array_zeros(g, TACK_F32, 2, shape2, &o1) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a2) == TACK_OK && tack_array_zeros(g, TACK_F32, 2, shape2, &o2) == TACK_OK);
    tack_stream *A = NULL, *B = NULL;
    tack_event *e = NULL, *t0 = NULL, *t1 = NULL;
    CHECK(tack_stream_create(g, &A) == TACK_OK && tack_stream_create(g, &B) == TACK_OK);
    CHECK(tack_event_create(g, 0, &e) == TACK_OK && tack_event_create(g, 1, &t0) == TACK_OK &&
          tack_event_create(g, 1, &t1) == TACK_OK);
    if (!p || !a1 || !o1 || !a2 || !o2 || !A || !B || !e || !t0 || !t1) return;
    /* each stream its own MTLCommandQueue */
    CHECK(tack_stream_handle(A) && tack_stream_handle(A) != tack_stream_handle(B));
    /* a1 and o1 last used on A, a2 and o2 on B: no ordering events in what follows */
    CHECK(go(p, a1, o1, A) == TACK_OK && go(p, a2, o2, B) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_OK);

    /* one stream: its command buffers run in commit order; waiting for the last runs the rest first */
    ran_clear();
    int c = FAKE_INT(fake_metal_commits);
    CHECK(go(p, a1, o1, A) == TACK_OK && go(p, a1, o1, A) == TACK_OK && tack_event_record(e, A) == TACK_OK);
    CHECK(FAKE_INT(fake_metal_commits) == c + 3 && ran()[0] == 0); /* queued, none run */
    CHECK(tack_event_query(e) == 0);
    CHECK(tack_event_synchronize(e) == TACK_OK);
    CHECK(ran_is(c, (const int[]){1, 2, 3}, 3));
    CHECK(tack_event_query(e) == 1);

    /* two streams keep no order between them: B's synchronization runs B's work only */
    ran_clear();
    c = FAKE_INT(fake_metal_commits);
    CHECK(go(p, a1, o1, A) == TACK_OK && go(p, a2, o2, B) == TACK_OK);
    CHECK(tack_stream_synchronize(B) == TACK_OK && ran_is(c, (const int[]){2}, 1));
    CHECK(tack_stream_synchronize(A) == TACK_OK && ran_is(c, (const int[]){2, 1}, 2));

    /* an event recorded on A and waited for on B: B's later work runs after A's up to the record,
     * not after what A queued after it */
    ran_clear();
    c = FAKE_INT(fake_metal_commits);
    CHECK(go(p, a1, o1, A) == TACK_OK && tack_event_record(e, A) == TACK_OK && go(p, a1, o1, A) == TACK_OK);
    CHECK(tack_event_wait(e, B) == TACK_OK && go(p, a2, o2, B) == TACK_OK);
    CHECK(FAKE_INT(fake_metal_commits) == c + 5 && ran()[0] == 0); /* the host did not wait */
    CHECK(tack_stream_synchronize(B) == TACK_OK && ran_is(c, (const int[]){1, 2, 4, 5}, 4));
    CHECK(tack_stream_synchronize(A) == TACK_OK && ran_is(c, (const int[]){1, 2, 4, 5, 3}, 5));

    /* an array written on A and then used on B: the runtime orders B after A with an event */
    ran_clear();
    c = FAKE_INT(fake_metal_commits);
    CHECK(go(p, a1, o1, A) == TACK_OK && go(p, a2, o1, B) == TACK_OK);
    CHECK(FAKE_INT(fake_metal_commits) == c + 4); /* A's launch, its record, B's wait, B's launch */
    CHECK(tack_stream_synchronize(B) == TACK_OK && ran_is(c, (const int[]){1, 2, 3, 4}, 4));

    /* copies: to the host, of an array last written on A, wait for A's work (ordered after A with
     * an event); from the host on a stream, for that stream's */
    float host[15] = {0}, big[1000] = {0};
    CHECK(go(p, a1, o1, A) == TACK_OK && tack_stream_synchronize(A) == TACK_OK);
    ran_clear();
    c = FAKE_INT(fake_metal_commits);
    CHECK(go(p, a1, o1, A) == TACK_OK && tack_array_copy_to_host(o1, host, sizeof host) == TACK_OK);
    CHECK(ran_is(c, (const int[]){1, 2, 3}, 3)); /* A's launch, A's record, the own queue's wait */
    ran_clear();
    c = FAKE_INT(fake_metal_commits);
    CHECK(go(p, a2, o2, B) == TACK_OK);
    tack_stream *was = tack_stream_use(B);
    CHECK(tack_array_copy_from_host(a2, big, sizeof big) == TACK_OK);
    tack_stream_use(was);
    CHECK(ran_is(c, (const int[]){1}, 1));

    /* elapsed time: the records' command buffers' GPUEndTime apart (the fake's take 1 ms each) */
    float ms = -1;
    CHECK(go(p, a1, o1, A) == TACK_OK && tack_stream_synchronize(A) == TACK_OK);
    CHECK(tack_event_record(t0, A) == TACK_OK && go(p, a1, o1, A) == TACK_OK && tack_event_record(t1, A) == TACK_OK);
    CHECK(tack_event_elapsed(t0, t1, &ms) == TACK_OK && ms > 1.999f && ms < 2.001f);
    CHECK(tack_event_elapsed(t1, t0, &ms) == TACK_OK && ms < -1.999f && ms > -2.001f);

    /* errors name the bad value */
    tack_event *fresh = NULL, *on_cpu = NULL;
    tack_device *cpu = NULL;
    CHECK(tack_event_create(g, 1, &fresh) == TACK_OK);
    CHECK(tack_event_elapsed(t0, fresh, &ms) == TACK_ERR_VALUE && strstr(tack_last_error(), "end event has not been recorded"));
    CHECK(tack_event_elapsed(t0, e, &ms) == TACK_ERR_VALUE && strstr(tack_last_error(), "timing=False"));
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK && tack_event_create(cpu, 0, &on_cpu) == TACK_OK);
    CHECK(tack_event_record(on_cpu, A) == TACK_ERR_DEVICE && strstr(tack_last_error(), "cpu") &&
          strstr(tack_last_error(), "metal:0"));
    tack_event_free(on_cpu);
    /* a record whose command buffer fails: its synchronization says so with Metal's text */
    strcpy(FAKE_ARR(char, fake_metal_cb_error), "Discarded (victim of GPU error/recovery)");
    CHECK(tack_event_record(fresh, B) == TACK_OK);
    CHECK(tack_event_synchronize(fresh) == TACK_ERR_DEVICE && strstr(tack_last_error(), "victim of GPU error") &&
          strstr(tack_last_error(), "metal:0"));
    CHECK(tack_event_query(fresh) == -1 && strstr(tack_last_error(), "victim of GPU error")); /* never signalled */
    CHECK(tack_stream_synchronize(B) == TACK_ERR_DEVICE); /* and the stream's, once */
    CHECK(tack_stream_synchronize(B) == TACK_OK);
    tack_event_free(fresh);

    /* another library's MTLCommandQueue, wrapped: Tack commits to it, orders it with events, and
     * neither retains nor releases it */
    void *theirs = ((void *(*)(void))dlsym(lib, "fake_metal_new_queue"))();
    long (*refs)(void *) = (long (*)(void *))dlsym(lib, "fake_metal_refs");
    tack_stream *W = NULL;
    CHECK(tack_stream_wrap(g, (uintptr_t)theirs, &W) == TACK_OK && tack_stream_handle(W) == (uintptr_t)theirs);
    if (W) {
        CHECK(go(p, a2, o2, B) == TACK_OK && tack_stream_synchronize(B) == TACK_OK);
        ran_clear();
        c = FAKE_INT(fake_metal_commits);
        CHECK(go(p, a2, o2, W) == TACK_OK); /* ordered after B, a2's and o2's last stream: an event each */
        CHECK(FAKE_INT(fake_metal_commits) == c + 5 && ran()[0] == 0);
        CHECK(tack_stream_synchronize(W) == TACK_OK && ran_is(c, (const int[]){1, 2, 3, 4, 5}, 5));
        CHECK(refs(theirs) == 1);
        CHECK(go(p, a2, o2, B) == TACK_OK && tack_stream_synchronize(B) == TACK_OK); /* back on B */
        tack_stream_release(W);
        /* the command buffers Tack committed to it (which retain their queue) go at the next synchronization */
        CHECK(tack_device_synchronize(g) == TACK_OK && refs(theirs) == 1);
    }
    ((void (*)(void *))dlsym(lib, "fake_metal_release"))(theirs);

    /* capture: the calls kept, nothing committed; each replay commits them again, in order */
    tack_graph *gr = NULL;
    c = FAKE_INT(fake_metal_commits);
    CHECK(tack_capture_begin(A) == TACK_OK);
    CHECK(go(p, a1, o1, A) == TACK_OK && go(p, a1, o1, A) == TACK_OK);
    CHECK(FAKE_INT(fake_metal_commits) == c);
    CHECK(tack_stream_synchronize(A) == TACK_ERR_VALUE && strstr(tack_last_error(), "captured"));
    CHECK(tack_event_record(e, A) == TACK_ERR_VALUE && strstr(tack_last_error(), "captured"));
    CHECK(tack_capture_end(A, &gr) == TACK_OK && gr && tack_graph_count(gr) == 2);
    if (gr) {
        CHECK(tack_stream_synchronize(A) == TACK_OK && tack_stream_synchronize(B) == TACK_OK);
        for (int round = 0; round < 2; round++) {
            ran_clear();
            c = FAKE_INT(fake_metal_commits);
            CHECK(tack_graph_launch(gr, B) == TACK_OK);
            int made = FAKE_INT(fake_metal_commits) - c;
            CHECK(made >= 2 && ran()[0] == 0);
            CHECK(tack_stream_synchronize(B) == TACK_OK);
            char want[64];
            snprintf(want, sizeof want, "%d ", c + made);
            size_t lr = strlen(ran()), lw = strlen(want);
            CHECK(lr >= lw && strcmp(ran() + lr - lw, want) == 0); /* the replay's last launch ran last */
        }
        tack_graph_release(gr);
    }
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_event_free(e);
    tack_event_free(t0);
    tack_event_free(t1);
    tack_array_release(a1);
    tack_array_release(o1);
    tack_array_release(a2);
    tack_array_release(o2);
    tack_stream_release(A);
    tack_stream_release(B);
    tack_program_free(p);
}

/* tack.profile() on Metal: a launch's device time is its command buffer's
 * GPUEndTime minus its GPUStartTime (the fake's clock: each command buffer
 * takes fake_metal_cb_seconds), read when the profile stops; a command
 * buffer that failed gives none, and the stop says so.  The timers' extra
 * references are released (main counts the live objects). */
static int64_t launch_device_ns(tack_profile *prof, int nth) {
    tack_profile_event ev;
    for (int64_t i = 0, seen = 0; i < tack_profile_count(prof); i++)
        if (tack_profile_get(prof, i, &ev) && !strcmp(ev.kind, "launch") && seen++ == nth)
            return !strcmp(ev.device, "metal:0") && ev.host_ns >= 0 ? ev.device_ns : -2;
    return -3;
}

static void profile(tack_device *g) {
    double *secs = FAKE_ARR(double, fake_metal_cb_seconds);
    tack_program *p = program("kp", SRC, g, TACK_OK);
    int64_t n = 1000, shape2[2] = {3, 5};
    tack_array *a = NULL, *out = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_zeros(g, TACK_F32, 2, shape2, &out) == TACK_OK);
    if (!p || !a || !out) return;
    tack_arg args[4];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_profile *prof = NULL;
    CHECK(tack_profile_start(&prof) == TACK_OK);
    *secs = 0.0025; /* the fake runs a command buffer when it is waited for */
    CHECK(tack_launch(p, args, 4) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    *secs = 0.000125;
    CHECK(tack_launch(p, args, 4) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    *secs = 0.0005;
    CHECK(tack_launch(p, args, 4) == TACK_OK); /* not waited for: the stop waits */
    CHECK(tack_profile_stop(prof) == TACK_OK);
    CHECK(launch_device_ns(prof, 0) == 2500000);
    CHECK(launch_device_ns(prof, 1) == 125000);
    CHECK(launch_device_ns(prof, 2) == 500000);
    tack_profile_free(prof);
    /* a command buffer that fails: no device time, and the stop says why */
    CHECK(tack_profile_start(&prof) == TACK_OK);
    strcpy(FAKE_ARR(char, fake_metal_cb_error), "Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)");
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    CHECK(tack_profile_stop(prof) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), "command buffer failed") != NULL);
    CHECK(launch_device_ns(prof, 0) == -1);
    tack_profile_free(prof);
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE); /* the launch's own failure, at its synchronization */
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* a launch outside a profile keeps no command buffer for one */
    *secs = 0.001;
    CHECK(tack_launch(p, args, 4) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
}

static void big_arguments(tack_device *g) {
    /* 600 words: more than setBytes takes, so a buffer of their own */
    static char src[4096];
    snprintf(src, sizeof src, "kernel void tk_phase0(device int *ctx [[buffer(0)]]) {}\n/* tack-metal: phases=p frame=0 */\n");
    enum { NP = 300 };
    tk_pinfo params[NP];
    tack_arg args[NP];
    memset(args, 0, sizeof args);
    for (int i = 0; i < NP; i++) {
        params[i] = param("z", 0, TACK_C64, 0);
        args[i].scalar.z[0] = i;
        args[i].scalar.z[1] = -i;
    }
    tack_program *p = NULL;
    CHECK(tk_program_from_source("big", "metal", src, NP, params, 0, NULL, &p) == TACK_OK);
    if (!p) return;
    CHECK(tack_program_build(p, g) == TACK_OK);
    CHECK(tack_launch(p, args, NP) == TACK_OK);
    unsigned long long *words = FAKE_ARR(unsigned long long, fake_metal_words);
    CHECK(FAKE_INT(fake_metal_bytes_index) == -1 && FAKE_INT(fake_metal_nwords) == 512); /* the fake keeps 512 */
    float re, im;
    uint32_t r = (uint32_t)words[1 + 2 * 7], i = (uint32_t)words[2 + 2 * 7];
    memcpy(&re, &r, 4);
    memcpy(&im, &i, 4);
    CHECK(re == 7.0f && im == -7.0f);
    /* no work sized on the host: the grid that fills the device */
    CHECK(FAKE_ARR(unsigned long, fake_metal_groups)[0] == 262144 / 256);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
}

static void compile_errors(tack_device *g) {
    strcpy(FAKE_ARR(char, fake_metal_compile_error), "program_source:3:5: error: use of undeclared identifier 'q'");
    tack_program *p = program("bad", SRC, g, TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "undeclared identifier 'q'") != NULL);
    CHECK(strstr(tack_last_error(), "kernel 'bad'") != NULL);
    tack_program_free(p);
    /* a phase the source does not define */
    p = program("missing", "kernel void tk_phase0() {}\n/* tack-metal: phases=pp frame=0 */\n", g, TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "no kernel function tk_phase1") != NULL);
    tack_program_free(p);
    /* another target's source, and a malformed layout comment */
    tk_pinfo prm = param("n", 0, TACK_I64, 0);
    CHECK(tk_program_from_source("cu", "cuda", SRC, 1, &prm, 0, NULL, &p) == TACK_OK);
    CHECK(p && tack_program_build(p, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "target \"metal\"") != NULL);
    tack_program_free(p);
    p = program("mal", "kernel void tk_phase0() {}\n/* tack-metal: phases=p frame=x */\n", g, TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "malformed Metal layout comment") != NULL);
    tack_program_free(p);
}

/* Out of host memory at every allocation of a build, a launch and a wrap:
 * an error, and nothing left behind (the fake's live objects are checked
 * at the end). */
static void out_of_memory(tack_device *g) {
    void *(*new_buffer)(unsigned long, unsigned long) = (void *(*)(unsigned long, unsigned long))dlsym(lib, "fake_metal_new_buffer");
    void (*rel)(void *) = (void (*)(void *))dlsym(lib, "fake_metal_release");
    void *buf = new_buffer(4096, 0);
    for (int fail = 1; fail < 40; fail++) {
        tk_pinfo params[4] = {param("a", 1, TACK_F32, 1), param("out", 1, TACK_F32, 2), param("s", 0, TACK_F64, 0),
                              param("n", 0, TACK_I64, 0)};
        tack_program *p = NULL;
        tack_array *a = NULL, *out = NULL;
        int64_t n = 100, shape2[2] = {2, 2};
        if (tk_program_from_source("oom", "metal", SRC, 4, params, 0, NULL, &p) != TACK_OK) continue;
        failing_allocator_install(fail);
        tack_status st = tack_program_build(p, g);
        if (st == TACK_OK) st = tack_array_wrap(g, TACK_F32, 1, &n, buf, 1, NULL, NULL, &a);
        if (st == TACK_OK) st = tack_array_zeros(g, TACK_F32, 2, shape2, &out);
        if (st == TACK_OK) {
            tack_arg args[4];
            memset(args, 0, sizeof args);
            args[0].array = a;
            args[1].array = out;
            st = tack_launch(p, args, 4);
        }
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM);
        CHECK(tack_device_synchronize(g) == TACK_OK);
        tack_array_release(a);
        tack_array_release(out);
        tack_program_free(p);
    }
    rel(buf);
}

/* DLPack: a Metal array exports its shared storage as kDLCPU; a host
 * tensor comes in only as a copy, and copy=False says why not. */
static void dlpack(tack_device *g) {
    int64_t n = 8;
    tack_array *a = NULL, *b = NULL;
    float v = 3.0f, host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_fill(a, &v) == TACK_OK);
    void *m = NULL;
    CHECK(a && tack_array_to_dlpack(a, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    if (m) {
        DLManagedTensorVersioned *t = m;
        CHECK(t->dl_tensor.device.device_type == kDLCPU && t->dl_tensor.data == tack_array_data(a));
        CHECK(((float *)t->dl_tensor.data)[7] == 3.0f);
        tack_dlpack_delete(m, 1);
    }
    tack_array *h = NULL;
    /* NULL is the CPU, though Metal was probed before it (devices[0] stays the CPU) */
    CHECK(tack_array_wrap(NULL, TACK_F32, 1, &n, host, 1, NULL, NULL, &h) == TACK_OK);
    CHECK(h && tack_device_kind(tack_array_device(h)) == TACK_DEVICE_CPU);
    tack_dlpack_import_options o = {TACK_DLPACK_COPY_NEVER, g, NULL, 0};
    CHECK(h && tack_array_to_dlpack(h, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    CHECK(tack_array_from_dlpack(m, 1, &o, &b) == TACK_ERR_BUFFER);
    CHECK(strstr(tack_last_error(), "Metal has no zero-copy import") != NULL);
    o.copy = TACK_DLPACK_COPY_ALWAYS;
    CHECK(h && tack_array_to_dlpack(h, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    CHECK(tack_array_from_dlpack(m, 1, &o, &b) == TACK_OK);
    CHECK(b && tack_array_device(b) == g && tack_array_data(b) != host && ((float *)tack_array_data(b))[4] == 5.0f);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(h);
}

int main(void) {
    setenv("TACK_METAL_OBJC_PATH", TACK_FAKE_METAL, 1);
    setenv("TACK_METAL_PATH", TACK_FAKE_METAL, 1);
    lib = dlopen(TACK_FAKE_METAL, RTLD_NOW | RTLD_GLOBAL);
    CHECK(lib != NULL);
    if (!lib) return CHECK_SUMMARY();
    tack_device *g = NULL;
    CHECK(tack_device_get("metal", &g) == TACK_OK);
    if (!g) {
        fprintf(stderr, "%s\n", tack_last_error());
        return CHECK_SUMMARY();
    }
    int live = FAKE_INT(fake_metal_live);
    devices_and_memory(g);
    wrap_buffer(g);
    launch(g);
    blocks(g);
    profile(g);
    big_arguments(g);
    compile_errors(g);
    out_of_memory(g);
    dlpack(g);
    streams(g);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* every object Tack made since the device was set up is released */
    CHECK(FAKE_INT(fake_metal_live) == live);
    CHECK(((int (*)(void))dlsym(lib, "fake_metal_pooled"))() == 0);
    return CHECK_SUMMARY();
}
#else
int main(void) {
    printf("the fake Objective-C runtime stands in for the real one on x86-64 Linux only: skipped\n");
    (void)failing_allocator_install;
    return CHECK_SUMMARY();
}
#endif
