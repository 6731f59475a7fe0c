/*
 * test_cuda_fake.c -- the CUDA backend's host side against a fake driver.
 *
 * Machines without a GPU (CI, this one) cannot run the CUDA launch path,
 * yet most of it -- building through NVRTC, the PTX disk cache and its
 * corruption handling, argument checks and packing, grid sizing, the
 * device-side error record read at synchronization points, errors kept
 * from freed programs, balanced context pushes -- is host code.  This test
 * writes a small fake libcuda (cuda_fake.h: device memory is host memory,
 * launches only record what they were given and can write a failure into
 * the error record), builds it with the C compiler, and runs itself again
 * with it first on LD_LIBRARY_PATH.  Kernels do not execute; their PTX is
 * real.  Blocks loops are test_cuda_blocks.c's.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cuda/cuda_backend.h"
#include "check.h"
#include "cuda_fake.h"
#include "private/tack_private.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_dlpack.h"
#include "tack_kernel.h"
#include "tk_ast.h"


/* NVRTC as it is, but two minor versions newer: the real library's calls
 * forwarded, its version raised (an NVRTC newer than the driver within one
 * major version, for the cubin path, wherever only one NVRTC is installed).
 * FAKE_NVRTC_REAL names the real library. */
static const char NEWER_NVRTC[] =
    "#include <dlfcn.h>\n"
    "#include <stdlib.h>\n"
    "static void *sym(const char *n) { static void *real; if (!real) real = dlopen(getenv(\"FAKE_NVRTC_REAL\"), RTLD_NOW | RTLD_LOCAL); return real ? dlsym(real, n) : NULL; }\n"
    "typedef void *P;\n"
    "#define FWD(name, params, args) int name params { int (*fn_) params = (int (*) params)sym(#name); return fn_ ? fn_ args : 7; }\n"
    "FWD(nvrtcCreateProgram, (P a, P b, P c, int d, P e, P f), (a, b, c, d, e, f))\n"
    "FWD(nvrtcCompileProgram, (P a, int b, P c), (a, b, c))\n"
    "FWD(nvrtcGetPTXSize, (P a, P b), (a, b))\n"
    "FWD(nvrtcGetPTX, (P a, P b), (a, b))\n"
    "FWD(nvrtcGetCUBINSize, (P a, P b), (a, b))\n"
    "FWD(nvrtcGetCUBIN, (P a, P b), (a, b))\n"
    "FWD(nvrtcGetProgramLogSize, (P a, P b), (a, b))\n"
    "FWD(nvrtcGetProgramLog, (P a, P b), (a, b))\n"
    "FWD(nvrtcDestroyProgram, (P a), (a))\n"
    "FWD(nvrtcGetNumSupportedArchs, (P a), (a))\n"
    "FWD(nvrtcGetSupportedArchs, (P a), (a))\n"
    "int nvrtcVersion(int *a, int *b) { int (*f)(int *, int *) = (int (*)(int *, int *))sym(\"nvrtcVersion\"); int r = f ? f(a, b) : 7; *b += 2; return r; }\n"
    "const char *nvrtcGetErrorString(int r) { const char *(*f)(int) = (const char *(*)(int))sym(\"nvrtcGetErrorString\"); return f ? f(r) : \"?\"; }\n";

static int make_fake(const char *dir) {
    return build_lib(dir, FAKE, "fake.c", "libcuda.so.1") && build_lib(dir, NEWER_NVRTC, "nvrtc.c", "libnvrtc-newer.so");
}

#define FAKE_INT(name) (*(int *)dlsym(lib, #name))

/* Device memory: with pools (FAKE_CUDA_POOLS=1, as on an H200) through
 * cuMemAllocAsync, falling back to cuMemAlloc for good after a failure that
 * is not out-of-memory; each address freed by its own allocator's free.
 * A fallback turns the device's pools off for good. */
static void memory(tack_device *g, void *lib) {
    int pools = getenv("FAKE_CUDA_POOLS") && *getenv("FAKE_CUDA_POOLS") == '1';
    int64_t n = 1000;
    tack_array *a = NULL, *b = NULL, *c = NULL, *e = NULL;
    int async0 = FAKE_INT(async_calls), plain0 = FAKE_INT(plain_allocs);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK);
    if (pools) CHECK(FAKE_INT(pool_allocs) > 0 && FAKE_INT(async_calls) == async0 + 1 && FAKE_INT(plain_allocs) == plain0);
    else CHECK(FAKE_INT(async_calls) == 0 && FAKE_INT(plain_allocs) == plain0 + 1);
    /* out of memory: a MemoryError naming the size, not retried with cuMemAlloc */
    FAKE_INT(async_fail) = 2;
    async0 = FAKE_INT(async_calls), plain0 = FAKE_INT(plain_allocs);
    if (pools) {
        CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &e) == TACK_ERR_NOMEM && e == NULL);
        CHECK(strstr(tack_last_error(), "4000 bytes") != NULL);
        CHECK(FAKE_INT(async_calls) == async0 + 1 && FAKE_INT(plain_allocs) == plain0);
        /* and the pools stay in use */
        CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &b) == TACK_OK);
        CHECK(FAKE_INT(async_calls) == async0 + 2 && FAKE_INT(plain_allocs) == plain0);
        /* many live at once, freed out of order: every one through cuMemFreeAsync */
        tack_array *many[300] = {0};
        int frees0 = FAKE_INT(pool_frees), made = 0;
        for (int i = 0; i < 200; i++) made += tack_array_zeros(g, TACK_F32, 1, &n, &many[i]) == TACK_OK;
        for (int i = 0; i < 200; i += 2) tack_array_release(many[i]), many[i] = NULL;
        for (int i = 200; i < 300; i++) made += tack_array_zeros(g, TACK_F32, 1, &n, &many[i]) == TACK_OK;
        for (int i = 299; i >= 0; i--) tack_array_release(many[i]);
        CHECK(made == 300 && FAKE_INT(pool_frees) == frees0 + 300 && FAKE_INT(mismatched_frees) == 0);
        async0 = FAKE_INT(async_calls), plain0 = FAKE_INT(plain_allocs);
        /* any other failure: this allocation and every later one from cuMemAlloc */
        FAKE_INT(async_fail) = 801; /* CUDA_ERROR_NOT_SUPPORTED */
        CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &c) == TACK_OK && c != NULL);
        CHECK(FAKE_INT(async_calls) == async0 + 1 && FAKE_INT(plain_allocs) == plain0 + 1);
        CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &e) == TACK_OK);
        CHECK(FAKE_INT(async_calls) == async0 + 1 && FAKE_INT(plain_allocs) == plain0 + 2);
    }
    FAKE_INT(async_fail) = 0;
    int pool_frees0 = FAKE_INT(pool_frees), plain_frees0 = FAKE_INT(plain_frees);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(c);
    tack_array_release(e);
    /* a and b from the pool, c and e from cuMemAlloc: each freed by its own */
    if (pools) CHECK(FAKE_INT(pool_frees) == pool_frees0 + 2 && FAKE_INT(plain_frees) == plain_frees0 + 2);
    else CHECK(FAKE_INT(pool_frees) == 0 && FAKE_INT(plain_frees) == plain_frees0 + 1);
    CHECK(FAKE_INT(mismatched_frees) == 0);
}

/* DLPack export to a consumer's stream: an event recorded on Tack's stream
 * and waited for on the consumer's, in that order, with no wait on the host
 * (no cuStreamSynchronize, no cuCtxSynchronize); -1 makes no call at all;
 * the plain export (no stream) waits on the host. */
static void export_streams(tack_device *g, void *lib) {
    char *order = dlsym(lib, "order");
    int64_t n = 16;
    tack_array *x = NULL;
    void *m = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &x) == TACK_OK);
    if (!x) return;
    order[0] = 0;
    CHECK(tack_array_to_dlpack_stream(x, 1, TACK_DLPACK_COPY_IF_NEEDED, (intptr_t)0x5000, &m) == TACK_OK);
    /* CU_EVENT_DISABLE_TIMING; Tack's stream is the fake's stream 1 */
    CHECK(strcmp(order, "create(2) record(1001,1) wait(5000,1001) destroy(1001) ") == 0);
    tack_dlpack_delete(m, 1);
    order[0] = 0;
    CHECK(tack_array_to_dlpack_stream(x, 0, TACK_DLPACK_COPY_IF_NEEDED, (intptr_t)2, &m) == TACK_OK);
    CHECK(strstr(order, "wait(2,") != NULL && !strstr(order, "sync"));
    tack_dlpack_delete(m, 0);
    order[0] = 0;
    CHECK(tack_array_to_dlpack_stream(x, 1, TACK_DLPACK_COPY_IF_NEEDED, TACK_DLPACK_STREAM_NO_SYNC, &m) == TACK_OK);
    CHECK(order[0] == 0);
    tack_dlpack_delete(m, 1);
    /* a copy is queued before the event */
    int launches0 = FAKE_INT(launches);
    order[0] = 0;
    CHECK(tack_array_to_dlpack_stream(x, 1, TACK_DLPACK_COPY_ALWAYS, (intptr_t)0x5000, &m) == TACK_OK);
    CHECK(strncmp(order, "create(2) record(", 17) == 0 && !strstr(order, "sync") && FAKE_INT(launches) == launches0);
    tack_dlpack_delete(m, 1);
    order[0] = 0;
    CHECK(tack_array_to_dlpack(x, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    CHECK(strncmp(order, "sync", 4) == 0 && !strstr(order, "record"));
    tack_dlpack_delete(m, 1);
    tack_array_release(x);
}

/* Streams and events (runtime/stream.c, cuda_stream.c): a launch goes to the
 * current stream; arrays last used on another stream are ordered after it
 * with an event (Tack's stream is 1, the new one 2); the stream lives while
 * an array still names it; a profile's device time comes from the events. */
static void streams(tack_device *g, void *lib, tack_program *p, tack_arg *args) {
    char *order = dlsym(lib, "order");
    void **last_stream = dlsym(lib, "last_stream");
    tack_stream *s = NULL;
    tack_event *e0 = NULL, *e1 = NULL;
    float ms = 0, host[100];
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK(tack_stream_create(g, &s) == TACK_OK && tack_stream_handle(s) == 2 && tack_stream_device(s) == g);
    if (!s) return;
    order[0] = 0;
    CHECK(tack_stream_use(s) == NULL && tack_stream_current() == s);
    CHECK(tack_launch(p, args, 3) == TACK_OK && *last_stream == (void *)2);
    CHECK(strstr(order, ",1) wait(2,") != NULL); /* stream 2 waits for Tack's: the arrays were last there */
    order[0] = 0;
    CHECK(tack_launch(p, args, 3) == TACK_OK && order[0] == 0); /* all on stream 2 now: nothing to order */
    CHECK(tack_event_create(g, 1, &e0) == TACK_OK && tack_event_create(g, 1, &e1) == TACK_OK);
    CHECK(tack_event_record(e0, NULL) == TACK_OK && tack_event_record(e1, s) == TACK_OK);
    CHECK(tack_event_query(e1) == 1 && tack_event_elapsed(e0, e1, &ms) == TACK_OK && ms == 2.5f);
    CHECK(tack_stream_use(NULL) == s);
    order[0] = 0;
    CHECK(tack_array_copy_to_host(args[1].array, host, sizeof host) == TACK_OK);
    CHECK(strstr(order, ",2) wait(1,") != NULL); /* the copy on Tack's stream waits for stream 2 */
    CHECK(tack_event_wait(e1, NULL) == TACK_OK && tack_stream_synchronize(s) == TACK_OK);
    tack_event_free(e0);
    tack_event_free(e1);
    /* the profile's launch on stream 2, timed with its events */
    tack_profile *prof = NULL;
    CHECK(tack_profile_start(&prof) == TACK_OK);
    tack_stream_use(s);
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    tack_stream_use(NULL);
    CHECK(tack_profile_stop(prof) == TACK_OK);
    tack_profile_event ev;
    int found = 0;
    for (int64_t i = 0; i < tack_profile_count(prof); i++)
        if (tack_profile_get(prof, i, &ev) && !strcmp(ev.kind, "launch"))
            found = !strcmp(ev.device, "cuda:0") && ev.device_ns == 2500000 && ev.host_ns >= 0;
    CHECK(found);
    tack_profile_free(prof);
    /* dropped, but the arrays and the kernel (its frame) name it: destroyed
     * once they are ordered after it */
    order[0] = 0;
    tack_stream_release(s);
    CHECK(!strstr(order, "sdestroy"));
    CHECK(tack_launch(p, args, 3) == TACK_OK); /* on Tack's stream: arrays and frame ordered after 2 */
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK(strstr(order, "sdestroy(2)") != NULL);
}

/* The primary context already current (as PyTorch leaves it): no push, no pop. */
static void current_context(tack_device *g, void *lib, tack_program *p, tack_arg *args) {
    CUresult (*retain)(void **, int) = (CUresult (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    CUresult (*pushc)(void *) = (CUresult (*)(void *))dlsym(lib, "cuCtxPushCurrent_v2");
    CUresult (*popc)(void **) = (CUresult (*)(void **))dlsym(lib, "cuCtxPopCurrent_v2");
    int (*depth)(void) = (int (*)(void))dlsym(lib, "fake_depth");
    void *ctx = NULL, *other = &ctx;
    float host[100];
    retain(&ctx, 0);
    /* none current: each call pushes and pops */
    int pushes0 = FAKE_INT(pushes);
    CHECK(tack_launch(p, args, 3) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    CHECK(FAKE_INT(pushes) == pushes0 + 2 && depth() == 0);
    /* current: none */
    pushc(ctx);
    pushes0 = FAKE_INT(pushes);
    CHECK(tack_launch(p, args, 3) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    CHECK(tack_array_copy_to_host(args[1].array, host, sizeof host) == TACK_OK);
    CHECK(FAKE_INT(pushes) == pushes0 && depth() == 1);
    /* another context current: pushed, and that one is current again after */
    pushc(other);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK(FAKE_INT(pushes) == pushes0 + 2 && depth() == 2);
    void *was = NULL;
    popc(&was);
    popc(&was);
    CHECK(depth() == 0);
}

/* A complex scalar argument takes two slots, (re, im): doubles for a
 * complex128 (a weak Python complex too), f32 bits in the low half for a
 * complex64; the kernel declares the second slot s<p>i. */
static void complex_slots(tack_device *g, void *lib) {
    uint64_t *slots = dlsym(lib, "last_slots");
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    AT(50, 4);
    int k = FUNC(TACK_FUNC_KERNEL, "put_z", "out z", BLOCK(1, ASSIGN(SUB(NAME("out"), 1, INT(0)), NAME("z"))));
    tack_argtype sw[2] = {ARR(TACK_C128, 1), WEAK(TACK_C128)}, sc[2] = {ARR(TACK_C64, 1), SCALAR(TACK_C64)};
    tack_program *pw = NULL, *pc = NULL;
    CHECK(tack_compile(tb_m, k, sw, 2, &o, &pw) == TACK_OK && tack_program_build(pw, g) == TACK_OK);
    CHECK(tack_compile(tb_m, k, sc, 2, &o, &pc) == TACK_OK && tack_program_build(pc, g) == TACK_OK);
    if (!pw || !pc) return;
    CHECK(strstr(pw->source, "tk_scalar s1;\n    tk_scalar s1i;") != NULL);
    int64_t one = 1;
    tack_array *o128 = NULL, *o64 = NULL;
    CHECK(tack_array_zeros(g, TACK_C128, 1, &one, &o128) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_C64, 1, &one, &o64) == TACK_OK);
    tack_arg a[2];
    memset(a, 0, sizeof a);
    a[0].array = o128;
    a[1].scalar.z[0] = 0.1;
    a[1].scalar.z[1] = -2.5;
    CHECK(tack_launch(pw, a, 2) == TACK_OK);
    double re, im;
    memcpy(&re, &slots[5], 8); /* ctx, frame, prog, out, out's extent, then (re, im) */
    memcpy(&im, &slots[6], 8);
    CHECK(re == 0.1 && im == -2.5);
    a[0].array = o64;
    CHECK(tack_launch(pc, a, 2) == TACK_OK);
    float re32, im32;
    uint32_t lo = (uint32_t)slots[5], hi = (uint32_t)slots[6];
    memcpy(&re32, &lo, 4);
    memcpy(&im32, &hi, 4);
    CHECK(re32 == 0.1f && im32 == -2.5f && slots[5] >> 32 == 0);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_array_release(o128);
    tack_array_release(o64);
    tack_program_free(pw);
    tack_program_free(pc);
}

/* Grids sized from the work: ceil(n / 256) blocks, capped at what fills
 * the fake (4 SMs x 6 resident blocks); the whole device when the extent
 * is not known on the host (it is read from an array on the device). */
static void grids(tack_device *g, void *lib) {
    unsigned *grid = dlsym(lib, "last_grid");
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    /* out[i] = s for i in range(out.shape[0]); out[0] = s for i in range(n); ... range(m[0]) */
    AT(20, 4);
    int k1 = FUNC(TACK_FUNC_KERNEL, "over_out", "out s",
                  BLOCK(1, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("s"))))));
    AT(30, 4);
    int k2 = FUNC(TACK_FUNC_KERNEL, "over_n", "out n",
                  BLOCK(2, ASSIGN(NAME("h"), BIN(TACK_OP_FLOORDIV, NAME("n"), INT(2))),
                        RANGE1("i", BIN(TACK_OP_ADD, NAME("h"), NAME("h")), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, INT(0)), FLT(1.0))))));
    AT(40, 4);
    int k3 = FUNC(TACK_FUNC_KERNEL, "over_m", "m out",
                  BLOCK(1, RANGE1("i", SUB(NAME("m"), 1, INT(0)), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, INT(0)), FLT(1.0))))));
    AT(50, 4); /* a product: the extent's postfix holds a '*' (out.shape[0] * n) */
    int k4 = FUNC(TACK_FUNC_KERNEL, "over_out_n", "out n",
                  BLOCK(1, RANGE1("i", BIN(TACK_OP_MUL, SHAPE("out", 0), NAME("n")),
                                  BLOCK(1, ASSIGN(SUB(NAME("out"), 1, INT(0)), FLT(1.0))))));
    tack_argtype sig1[2] = {ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_argtype sig2[2] = {ARR(TACK_F32, 1), WEAK(TACK_I64)};
    tack_argtype sig3[2] = {ARR(TACK_I64, 1), ARR(TACK_F32, 1)};
    tack_program *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
    CHECK(tack_compile(tb_m, k1, sig1, 2, &o, &p1) == TACK_OK && tack_program_build(p1, g) == TACK_OK);
    CHECK(tack_compile(tb_m, k2, sig2, 2, &o, &p2) == TACK_OK && tack_program_build(p2, g) == TACK_OK);
    CHECK(tack_compile(tb_m, k3, sig3, 2, &o, &p3) == TACK_OK && tack_program_build(p3, g) == TACK_OK);
    CHECK(tack_compile(tb_m, k4, sig2, 2, &o, &p4) == TACK_OK && tack_program_build(p4, g) == TACK_OK);
    if (!p1 || !p2 || !p3 || !p4) return;
    int64_t n = 1000, big = 100000, one = 1;
    tack_array *out = NULL, *large = NULL, *m = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &big, &large) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_I64, 1, &one, &m) == TACK_OK);
    tack_arg a[2];
    memset(a, 0, sizeof a);
    a[0].array = out;
    a[1].scalar.f = 1.0;
    CHECK(tack_launch(p1, a, 2) == TACK_OK && *grid == 4); /* ceil(1000 / 256) */
    a[0].array = large;
    CHECK(tack_launch(p1, a, 2) == TACK_OK && *grid == 24); /* 391 blocks of work, capped at 4 x 6 */
    a[0].array = out;
    a[1].scalar.i = 1001; /* (1001 // 2) * 2 = 1000 iterations */
    CHECK(tack_launch(p2, a, 2) == TACK_OK && *grid == 4);
    a[1].scalar.i = 0;
    CHECK(tack_launch(p2, a, 2) == TACK_OK && *grid == 1); /* nothing to do: still one block (checks, the frame) */
    a[1].scalar.i = (int64_t)1 << 40;
    CHECK(tack_launch(p2, a, 2) == TACK_OK && *grid == 24);
    a[1].scalar.i = 3;
    CHECK(tack_launch(p4, a, 2) == TACK_OK && *grid == 12); /* ceil(1000 * 3 / 256) */
    CHECK(strstr(p4->source, "/* tack-grid-work: 0:s0.0,i1,*, */") != NULL);
    a[0].array = m;
    a[1].array = out;
    CHECK(tack_launch(p3, a, 2) == TACK_OK && *grid == 24); /* m[0] is on the device: the full grid */
    CHECK(strstr(p1->source, "/* tack-grid-work: 0:s0.0, */") != NULL);
    CHECK(strstr(p3->source, "tack-grid-work") == NULL);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p1);
    tack_program_free(p2);
    tack_program_free(p3);
    tack_program_free(p4);
    tack_array_release(out);
    tack_array_release(large);
    tack_array_release(m);
}

static void graphs(tack_device *g, void *lib, tack_program *p, tack_program *f, tack_arg *args);

static void run(void) {
    tack_device *g = NULL, *cpu = NULL;
    CHECK(tack_device_get("cuda:0", &g) == TACK_OK);
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK);
    CHECK(tack_device_get("cuda:1", &g) == TACK_ERR_DEVICE);
    CHECK(tack_device_get("cuda", &g) == TACK_OK);
    CHECK(strcmp(tack_device_dialect(g), "cuda") == 0);
    if (!g) return;
    CHECK(tack_device_threads(g) == 4); /* the fake's SM count */
    CHECK(tack_device_on_host_cores(g) == 0); /* a GPU */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    if (!lib) return;
    int *fail_next = dlsym(lib, "fail_next"), *launches = dlsym(lib, "launches");
    unsigned *grid = dlsym(lib, "last_grid"), *block = dlsym(lib, "last_block");
    uint64_t *frame = dlsym(lib, "last_frame");
    int (*depth)(void) = (int (*)(void))dlsym(lib, "fake_depth");

    tack_module_new(&tb_m);
    AT(3, 4);
    tack_node *body = BLOCK(3,
        RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")), NAME("s"))))),
        ASSIGN(NAME("t"), SUB(NAME("out"), 1, INT(0))),
        RANGE1("i", INT(3), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("t")))));
    int k = FUNC(TACK_FUNC_KERNEL, "phased", "a out s", body);
    tack_argtype sig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    tack_program *p = NULL, *pc = NULL;
    CHECK(tack_compile(tb_m, k, sig, 3, &o, &p) == TACK_OK);
    /* a program for the CPU is refused by the CUDA backend, saying why */
    CHECK(tack_compile(tb_m, k, sig, 3, NULL, &pc) == TACK_OK);
    CHECK(tack_program_build(pc, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "target \"cuda\""));
    tack_program_free(pc);
    CHECK(tack_program_build(p, g) == TACK_OK);

    int64_t n = 100;
    tack_array *a = NULL, *out = NULL, *ca = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    CHECK(tack_array_zeros(cpu, TACK_F32, 1, &n, &ca) == TACK_OK);
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 2.0;
    int before = *launches;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(*launches - before == 3);                /* loop, one thread, loop */
    CHECK(*grid == 1 && *block == 256 && *frame != 0); /* the last loop's 3 iterations: one block */
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* arguments are checked before anything is queued */
    before = *launches;
    args[0].array = ca;
    CHECK(tack_launch(p, args, 3) == TACK_ERR_DEVICE && strstr(tack_last_error(), "is on cpu"));
    args[0].array = out;
    args[1].array = NULL;
    CHECK(tack_launch(p, args, 3) == TACK_ERR_TYPE);
    tack_array *ro = NULL;
    CHECK(tack_array_view(out, 0, &ro) == TACK_OK);
    args[0].array = a;
    args[1].array = ro;
    CHECK(tack_launch(p, args, 3) == TACK_ERR_READONLY);
    tack_array_release(ro);
    CHECK(*launches == before);
    args[1].array = out;
    /* a failed check: the call returns, the synchronization reports it once */
    *fail_next = 1;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 10 (array ") != NULL);
    CHECK(strstr(tack_last_error(), "kernel phased, test.py:") != NULL);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK(tack_synchronize_all() == TACK_OK);
    /* a copy to the host is a synchronization point */
    float host[100];
    *fail_next = 1;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_ERR_INDEX);
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_OK);
    /* a shared argument: the call completes and reports at once */
    tack_array_set_flags(out, TACK_ARRAY_SHARED);
    *fail_next = 1;
    CHECK(tack_launch(p, args, 3) == TACK_ERR_INDEX);
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    tack_array_set_flags(out, 0);
    /* a second build of the same source comes from the disk cache */
    tack_program *p2 = NULL;
    CHECK(tack_compile(tb_m, k, sig, 3, &o, &p2) == TACK_OK);
    CHECK(tack_program_build(p2, g) == TACK_OK);
    /* freed with a failure unread: the next synchronization still reports it */
    *fail_next = 1;
    CHECK(tack_launch(p2, args, 3) == TACK_OK);
    tack_program_free(p2);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX && strstr(tack_last_error(), "kernel phased"));
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* truncated cache entries are rebuilt */
    CHECK(system("for f in \"$TACK_CACHE_DIR\"/*.ptx; do head -c 100 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done") == 0);
    tack_program *p3 = NULL;
    CHECK(tack_compile(tb_m, k, sig, 3, &o, &p3) == TACK_OK);
    CHECK(tack_program_build(p3, g) == TACK_OK);
    CHECK(tack_launch(p3, args, 3) == TACK_OK);
    tack_program_free(p3);
    /* a one-loop kernel is one launch without a frame */
    tack_node *b2 = BLOCK(1, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("s")))));
    int k2 = FUNC(TACK_FUNC_KERNEL, "fill", "a out s", b2);
    CHECK(tack_compile(tb_m, k2, sig, 3, &o, &p3) == TACK_OK);
    CHECK(tack_program_build(p3, g) == TACK_OK);
    before = *launches;
    CHECK(tack_launch(p3, args, 3) == TACK_OK);
    CHECK(*launches - before == 1 && *frame == 0);
    tack_program_free(p3);
    /* out of memory while building is clean */
    for (int fail = 1; fail < 40; fail++) {
        tack_program *q = NULL;
        if (tack_compile(tb_m, k2, sig, 3, &o, &q) != TACK_OK) continue;
        failing_allocator_install(fail);
        tack_status st = tack_program_build(q, g);
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM || st == TACK_ERR_COMPILE);
        tack_program_free(q);
    }
    /* fast_math reaches NVRTC (and the cache key): approximate sqrt in one PTX, IEEE in the other */
    tack_node *b3 = BLOCK(1, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")),
        BIN(TACK_OP_DIV, CALL("sqrt", 1, SUB(NAME("a"), 1, NAME("i"))), NAME("s"))))));
    int k3 = FUNC(TACK_FUNC_KERNEL, "root", "a out s", b3);
    for (int fast = 0; fast < 2; fast++) {
        o.fast_math = fast;
        CHECK(tack_compile(tb_m, k3, sig, 3, &o, &p3) == TACK_OK);
        CHECK(tack_program_build(p3, g) == TACK_OK);
        tack_program_free(p3);
    }
    o.fast_math = 0;
    CHECK(system("grep -l 'sqrt.approx.ftz.f32' \"$TACK_CACHE_DIR\"/*.ptx | wc -l | grep -qx 1") == 0);
    CHECK(system("grep -l 'sqrt.rn.f32' \"$TACK_CACHE_DIR\"/*.ptx | wc -l | grep -qx 1") == 0);
    /* a module the driver's JIT refuses: its log is in the error */
    FAKE_INT(refuse_module) = 1;
    CHECK(tack_compile(tb_m, k2, sig, 3, &o, &p3) == TACK_OK);
    CHECK(tack_program_build(p3, g) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), "cuModuleLoadDataEx failed") != NULL);
    CHECK(strstr(tack_last_error(), "ptxas fatal   : fake refusal of this module") != NULL);
    CHECK(strstr(tack_last_error(), "kernel 'fill'") != NULL);
    tack_program_free(p3);
    FAKE_INT(refuse_module) = 0;
    memory(g, lib);
    CHECK(FAKE_INT(mismatched_frees) == 0);
    export_streams(g, lib);
    grids(g, lib);
    complex_slots(g, lib);
    current_context(g, lib, p, args);
    streams(g, lib, p, args);
    tack_program *pf = NULL;
    CHECK(tack_compile(tb_m, k2, sig, 3, &o, &pf) == TACK_OK && tack_program_build(pf, g) == TACK_OK);
    graphs(g, lib, p, pf, args);
    /* last: a sticky error (an illegal address) loses the device, which is said
     * once, naming the kernel launched last; then every operation fails at once
     * without calling the driver, and frees do nothing */
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    FAKE_INT(sticky_next_sync) = 1;
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), "cuda:0: the GPU context is lost (CUDA_ERROR_ILLEGAL_ADDRESS, an illegal memory access) "
                                    "after kernel 'phased' was launched; every later CUDA call") != NULL);
    CHECK(strstr(tack_last_error(), "(PyTorch, CuPy); restart the process") != NULL);
    int calls0 = FAKE_INT(calls_after), frees0 = FAKE_INT(frees_after);
    const char *unusable = "cuda:0 is unusable since an earlier error (CUDA_ERROR_ILLEGAL_ADDRESS after kernel 'phased'); restart the process";
    tack_array *dead = NULL;
    CHECK(tack_array_copy_to_host(out, host, sizeof host) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_array_copy_from_host(out, host, sizeof host) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &dead) == TACK_ERR_DEVICE && dead == NULL && strstr(tack_last_error(), unusable));
    CHECK(tack_launch(p, args, 3) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_device_synchronize(g) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_synchronize_all() == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    CHECK(tack_compile(tb_m, k2, sig, 3, &o, &p3) == TACK_OK);
    CHECK(tack_program_build(p3, g) == TACK_ERR_DEVICE && strstr(tack_last_error(), unusable));
    tack_program_free(p3);
    CHECK(FAKE_INT(calls_after) == calls0);
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
    tack_array_release(ca);
    tack_module_free(tb_m);
    CHECK(FAKE_INT(calls_after) == calls0 && FAKE_INT(frees_after) == frees0);
    CHECK(depth() == 0); /* every push popped */
}

/* ------------------------------------------------------------ versions */
/* A one-loop kernel for the scenarios: out[i] = s. */
static tack_program *fill_program(tack_device *g, tack_status *st) {
    tack_module_new(&tb_m);
    AT(3, 4);
    tack_node *b = BLOCK(1, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("s")))));
    int k = FUNC(TACK_FUNC_KERNEL, "fill", "a out s", b);
    tack_argtype sig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 3, &o, &p) == TACK_OK);
    *st = p ? tack_program_build(p, g) : TACK_ERR_VALUE;
    return p;
}

/* Graphs (runtime/graph.c, cuda_stream.c): a capture on a stream records
 * the launches, device copies and fills queued on it without running them,
 * in relaxed mode; what would wait for the captured work or read it on the
 * host is refused by Tack before the driver sees it; each replay runs the
 * nodes in order, on the captured stream or another, ordered after the
 * streams that last used its arrays; the graph keeps its kernels and arrays
 * until it is released.  f is a second program (one phase), freed here. */
static void graphs(tack_device *g, void *lib, tack_program *p, tack_program *f, tack_arg *args) {
    char *order = dlsym(lib, "order"), *log = dlsym(lib, "replay_log");
    int *launches = dlsym(lib, "launches");
    uint64_t *slots = dlsym(lib, "last_slots");
    tack_stream *s = NULL, *s2 = NULL;
    tack_graph *gr = NULL;
    tack_event *ev = NULL;
    float host[100], one = 1.0f;
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK(tack_stream_create(g, &s) == TACK_OK && tack_stream_create(g, &s2) == TACK_OK);
    CHECK(tack_event_create(g, 0, &ev) == TACK_OK);
    /* the programs' ids, from eager launches */
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    unsigned long long pid = (unsigned long long)slots[2];
    CHECK(tack_launch(f, args, 3) == TACK_OK);
    unsigned long long fid = (unsigned long long)slots[2];
    CHECK(pid != fid);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* an array made for the capture alone, dropped by the test after it */
    int64_t n = 100;
    tack_array *x = NULL, *wide = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &x) == TACK_OK);
    /* z's last work is on s, before the capture; dropped during it, its free
     * waits for Tack's stream, which the capture's start made wait for s */
    tack_array *z = NULL;
    tack_arg za[3];
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &z) == TACK_OK);
    memcpy(za, args, sizeof za);
    za[1].array = z;
    tack_stream_use(s);
    CHECK(tack_launch(f, za, 3) == TACK_OK);
    tack_stream_use(NULL);
    int frees0 = FAKE_INT(plain_frees) + FAKE_INT(pool_frees);
    int before = *launches;
    order[0] = 0;
    log[0] = 0;
    CHECK(tack_capture_begin(s) == TACK_OK);
    char joined[64];
    snprintf(joined, sizeof joined, ",%lx) wait(1,", (unsigned long)tack_stream_handle(s));
    CHECK(strstr(order, joined) && strstr(order, "begin") > strstr(order, joined));
    tack_array_release(z);
    CHECK(FAKE_INT(plain_frees) + FAKE_INT(pool_frees) == frees0 + 1);
    frees0++;
    CHECK(tack_capture_stream() == s && tack_stream_current() == s);
    CHECK(FAKE_INT(capture_mode) == 2); /* relaxed */
    CHECK(tack_launch(p, args, 3) == TACK_OK); /* three phases */
    tack_arg xa[3];
    memcpy(xa, args, sizeof xa);
    xa[1].array = x;
    CHECK(tack_launch(f, xa, 3) == TACK_OK);
    CHECK(tack_array_copy(args[0].array, args[1].array) == TACK_OK); /* a device copy */
    CHECK(tack_array_fill(x, &one) == TACK_OK);                      /* a 4-byte fill */
    CHECK(*launches == before); /* nothing ran */
    /* refused during the capture, each with its reason */
    CHECK(tack_stream_synchronize(s) == TACK_ERR_VALUE && strstr(tack_last_error(), "while it is being captured"));
    CHECK(tack_device_synchronize(g) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "synchronizing the device during a capture on cuda:0"));
    CHECK(tack_array_copy_to_host(x, host, sizeof host) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "reading an array on the host during a capture on cuda:0"));
    CHECK(tack_array_copy_from_host(x, host, sizeof host) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "copying host data into an array during a capture"));
    CHECK(tack_event_record(ev, NULL) == TACK_ERR_VALUE && strstr(tack_last_error(), "Event.record on a stream"));
    CHECK(tack_event_wait(ev, s) == TACK_ERR_VALUE && strstr(tack_last_error(), "events are not captured"));
    CHECK(tack_capture_begin(s2) == TACK_ERR_VALUE && strstr(tack_last_error(), "captures do not nest"));
    CHECK(tack_capture_end(s2, &gr) == TACK_ERR_VALUE && gr == NULL);
    /* an array made now is made (and zeroed) now, outside the graph; a wide fill would need the host */
    CHECK(tack_array_zeros(g, TACK_F64, 1, &n, &wide) == TACK_OK);
    double two = 2.0;
    CHECK(tack_array_fill(wide, &two) == TACK_ERR_VALUE && strstr(tack_last_error(), "wider than 4 bytes"));
    CHECK(FAKE_INT(capture_misuse) == 0);
    CHECK(tack_capture_end(s, &gr) == TACK_OK && gr != NULL);
    CHECK(tack_capture_stream() == NULL && tack_stream_current() == NULL);
    CHECK(tack_graph_count(gr) == 4 && tack_graph_device(gr) == g);
    CHECK(FAKE_INT(graphs_live) == 0 && FAKE_INT(execs_live) == 1); /* the template freed once instantiated */
    CHECK(*launches == before && log[0] == 0);
    /* the graph keeps x: dropping the test's reference frees nothing */
    tack_array_release(x);
    CHECK(FAKE_INT(plain_frees) + FAKE_INT(pool_frees) == frees0);
    /* replays: the same launches, in order, each time */
    CHECK(tack_graph_launch(gr, NULL) == TACK_OK);
    CHECK(tack_graph_launch(gr, s2) == TACK_OK);
    CHECK(*launches - before == 8 && FAKE_INT(graph_launches) == 2);
    char want[200];
    snprintf(want, sizeof want, "%llu:tk_phase0 %llu:tk_phase1 %llu:tk_phase2 %llu:tk_phase0 ", pid, pid, pid, fid);
    CHECK(!strncmp(log, want, strlen(want)) && !strcmp(log + strlen(want), want));
    /* the replay on s2 waits for s, where the arrays and the frame were last */
    char waits[64];
    snprintf(waits, sizeof waits, ",%lx) wait(%lx,", (unsigned long)tack_stream_handle(s),
             (unsigned long)tack_stream_handle(s2));
    CHECK(strstr(order, waits) != NULL);
    /* the kernel freed by its owner: the graph still replays it */
    tack_program_free(f);
    CHECK(tack_graph_launch(gr, s2) == TACK_OK && *launches - before == 12);
    /* a graph launched during a capture, or on another device's stream, is refused */
    tack_graph *g2 = NULL;
    CHECK(tack_capture_begin(s2) == TACK_OK);
    CHECK(tack_graph_launch(gr, NULL) == TACK_ERR_VALUE && strstr(tack_last_error(), "graphs are not captured"));
    CHECK(tack_capture_end(s2, &g2) == TACK_OK && tack_graph_count(g2) == 0); /* an empty graph */
    CHECK(tack_graph_launch(g2, NULL) == TACK_OK);
    tack_graph_release(g2);
    tack_stream *cs = NULL;
    tack_device *cpu = NULL;
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK && tack_stream_create(cpu, &cs) == TACK_OK);
    CHECK(tack_graph_launch(gr, cs) == TACK_ERR_DEVICE && strstr(tack_last_error(), "captured on cuda:0"));
    tack_stream_release(cs);
    /* released: the driver's graph, x and the kernel go */
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_graph_release(gr);
    CHECK(FAKE_INT(execs_live) == 0);
    CHECK(FAKE_INT(plain_frees) + FAKE_INT(pool_frees) == frees0 + 1);
    tack_array_release(wide);
    tack_event_free(ev);
    tack_stream_release(s);
    tack_stream_release(s2);
    CHECK(tack_device_synchronize(g) == TACK_OK);
}

/* What the driver is given follows from its version and NVRTC's (cuda_image.c). */
static void version_rules(void) {
    CHECK(cuda_image_kind(13000, 13000) == CUDA_IMAGE_PTX);
    CHECK(cuda_image_kind(12080, 12040) == CUDA_IMAGE_PTX);   /* an older NVRTC: its PTX loads */
    CHECK(cuda_image_kind(12040, 12080) == CUDA_IMAGE_CUBIN); /* newer, same major: a cubin */
    CHECK(cuda_image_kind(12090, 13000) == CUDA_IMAGE_NONE);  /* newer major: nothing fits */
    CHECK(cuda_ptx_isa(11080) == 78 && cuda_ptx_isa(12040) == 84 && cuda_ptx_isa(12080) == 87 &&
          cuda_ptx_isa(13000) == 90 && cuda_ptx_isa(10020) == 0);
    CHECK(cuda_ptx_version("//\n// Generated\n//\n\n.version 8.7\n.target sm_90\n") == 87);
    CHECK(cuda_ptx_version(".version 9.0\n") == 90 && cuda_ptx_version(".target sm_90\n") == 0);
}

/* TACK_FAKE_SCENARIO=old-driver: the driver is of the major version before
 * NVRTC's.  Its PTX is never handed over (the fake would refuse it with 222),
 * and the error says which versions meet. */
static void old_driver(tack_device *g, void *lib) {
    int nv = tack_nvrtc_version(), drv = atoi(getenv("FAKE_CUDA_VERSION"));
    tack_status st;
    tack_program *p = fill_program(g, &st);
    char want_drv[80], want_nv[80];
    snprintf(want_drv, sizeof want_drv, "the NVIDIA driver supports CUDA %d.%d", drv / 1000, drv % 1000 / 10);
    snprintf(want_nv, sizeof want_nv, "NVRTC is CUDA %d.%d", nv / 1000, nv % 1000 / 10);
    CHECK(st == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), "kernel 'fill' cannot be built for cuda:0") != NULL);
    CHECK(strstr(tack_last_error(), want_drv) != NULL && strstr(tack_last_error(), want_nv) != NULL);
    CHECK(strstr(tack_last_error(), "(loads PTX ISA up to ") != NULL && strstr(tack_last_error(), "(writes PTX ISA ") != NULL);
    CHECK(strstr(tack_last_error(), "nvidia-cuda-nvrtc-cu") != NULL);
    CHECK(FAKE_INT(ptx_loads) == 0 && FAKE_INT(ptx_refused) == 0 && FAKE_INT(cubin_loads) == 0);
    tack_program_free(p);
}

/* FAKE_CUDA_CC=150: a GPU newer than NVRTC knows gets PTX for the newest
 * architecture NVRTC has, which the driver compiles for it; FAKE_CUDA_CC=30:
 * older than NVRTC can build for, an error naming it. */
static void gpu_arch(tack_device *g, void *lib) {
    int cc = atoi(getenv("FAKE_CUDA_CC"));
    tack_status st;
    tack_program *p = fill_program(g, &st);
    int arch = nvrtc_arch_for(cc);
    if (arch) {
        char target[32];
        snprintf(target, sizeof target, "sm_%d", arch);
        CHECK(st == TACK_OK && arch < cc);
        CHECK(FAKE_INT(ptx_loads) == 1 && strcmp((char *)dlsym(lib, "loaded_target"), target) == 0);
    } else {
        char want[80];
        snprintf(want, sizeof want, "cannot compile for cuda:0 (sm_%d) or any older architecture", cc);
        CHECK(st == TACK_ERR_DEVICE && strstr(tack_last_error(), want) != NULL);
        CHECK(FAKE_INT(ptx_loads) == 0);
    }
    tack_program_free(p);
}

/* The driver of NVRTC's major version, older than NVRTC (the real NVRTC,
 * reporting two minor versions more): a cubin for the GPU's own
 * architecture, cached and loaded again from the cache. */
static void older_minor(tack_device *g, void *lib) {
    for (int i = 0; i < 2; i++) {
        tack_status st;
        tack_program *p = fill_program(g, &st);
        CHECK(st == TACK_OK);
        CHECK(FAKE_INT(cubin_loads) == i + 1 && FAKE_INT(ptx_loads) == 0 && FAKE_INT(ptx_refused) == 0);
        tack_program_free(p);
        tack_module_free(tb_m);
        tb_m = NULL;
    }
    CHECK(system("ls \"$TACK_CACHE_DIR\"/*.sm_90.cubin > /dev/null") == 0);
}

static void scenario(const char *name) {
    tack_device *g = NULL;
    CHECK(tack_device_get("cuda:0", &g) == TACK_OK);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    if (!g || !lib) return;
    if (!strcmp(name, "old-driver")) old_driver(g, lib);
    else if (!strcmp(name, "gpu-arch")) gpu_arch(g, lib);
    else if (!strcmp(name, "older-minor")) older_minor(g, lib);
    if (tb_m) tack_module_free(tb_m);
    CHECK(((int (*)(void))dlsym(lib, "fake_depth"))() == 0);
}

int main(int argc, char **argv) {
    if (!getenv("TACK_FAKE_CUDA_DIR")) {
        if (tack_nvrtc_version() == 0) {
            printf("SKIP: test_cuda_fake, the whole fake-driver test (NVRTC not found: no libnvrtc could be loaded)\n");
            return 0;
        }
        char dir[] = "/tmp/tack-fakecuda-XXXXXX";
        if (!mkdtemp(dir) || !make_fake(dir)) {
            printf("SKIP: test_cuda_fake, the whole fake-driver test (cannot build the fake driver: no C compiler?)\n");
            return 0;
        }
        const char *old = getenv("LD_LIBRARY_PATH");
        char ld[1200];
        snprintf(ld, sizeof ld, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
        setenv("LD_LIBRARY_PATH", ld, 1);
        setenv("TACK_FAKE_CUDA_DIR", dir, 1);
        /* a driver without memory pools, one with them (an H200); then the
         * versions: an older driver, GPUs newer and older than NVRTC knows,
         * and a driver of NVRTC's major version but older */
        int nv = tack_nvrtc_version();
        char same[16], olddrv[16], minor0[16];
        snprintf(same, sizeof same, "%d", nv);
        snprintf(olddrv, sizeof olddrv, "%d", (nv / 1000 - 1) * 1000 + 40);
        snprintf(minor0, sizeof minor0, "%d", nv);
        /* the real NVRTC's file, for the newer one to forward to */
        char real_nvrtc[1024] = "";
        void *nvh = dlopen(nvrtc_loaded_from(), RTLD_NOW | RTLD_NOLOAD);
        Dl_info info;
        if (nvh && dladdr(dlsym(nvh, "nvrtcVersion"), &info) && info.dli_fname)
            snprintf(real_nvrtc, sizeof real_nvrtc, "%s", info.dli_fname);
        struct { const char *name, *pools, *version, *cc; } runs[] = {
            {"", "0", same, NULL},           {"", "1", same, NULL},
            {"old-driver", "0", olddrv, NULL},  {"gpu-arch", "0", same, "150"},
            {"gpu-arch", "0", same, "30"},   {"older-minor", "0", minor0, NULL},
        };
        int failed = 0;
        version_rules();
        failed |= CHECK_SUMMARY() != 0;
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            if (!strcmp(runs[r].name, "older-minor")) {
                /* NVRTC two minor versions newer than the driver (the same as the real one) */
                char shim[700];
                snprintf(shim, sizeof shim, "%s/libnvrtc-newer.so", dir);
                setenv("TACK_NVRTC_PATH", shim, 1);
                CHECK(tack_config_set("nvrtc_path", shim) == TACK_OK); /* in case a setting was read already */
                setenv("FAKE_NVRTC_REAL", real_nvrtc, 1);
            }
            char cache[600];
            snprintf(cache, sizeof cache, "%s/cache%zu", dir, r);
            mkdir(cache, 0700);
            setenv("TACK_CACHE_DIR", cache, 1);
            CHECK(tack_config_set("cache_dir", cache) == TACK_OK);
            setenv("FAKE_CUDA_POOLS", runs[r].pools, 1);
            setenv("TACK_FAKE_SCENARIO", runs[r].name, 1);
            setenv("FAKE_CUDA_VERSION", runs[r].version, 1);
            if (runs[r].cc) setenv("FAKE_CUDA_CC", runs[r].cc, 1);
            else unsetenv("FAKE_CUDA_CC");
            printf("fake driver: %s%s memory pools, CUDA %s, compute capability %s:\n", runs[r].name,
                   runs[r].pools[0] == '1' ? " with" : " without", runs[r].version,
                   runs[r].cc ? runs[r].cc : "90");
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                execv("/proc/self/exe", argv);
                perror("execv");
                _exit(1);
            }
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                failed = 1;
        }
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (getenv("TACK_FAKE_KEEP")) printf("kept %s\n", dir);
        else if (system(cmd) != 0) fprintf(stderr, "could not remove the fake driver's directory\n");
        return failed;
    }
    const char *sc = getenv("TACK_FAKE_SCENARIO");
    if (sc && *sc) scenario(sc);
    else run();
    return CHECK_SUMMARY();
}
