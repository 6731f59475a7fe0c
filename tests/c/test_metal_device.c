/*
 * test_metal_device.c -- the Metal backend on a real Apple GPU.
 *
 * Built everywhere (so its C compiles in CI); where there is no Metal it
 * says why and passes, having checked only that asking for the device is a
 * clear error.  On a Mac (tests/metal/run_on_mac.sh runs it) it checks what
 * the fake runtime cannot: that Metal compiles a hand-written kernel that
 * follows the argument convention the backend and the msl dialect agree on
 * (buffer(0) the error record, buffer(1) the frame, buffer(2) the argument
 * words, buffer(3 + i) the arrays), that the kernel computes with what it
 * was given, that a failed check written by the GPU is reported at the next
 * synchronization, that a source Metal rejects is a compile error carrying
 * Metal's message, that a command buffer's completion is what
 * synchronize waits for, and that two streams (command queues) ordered by
 * an MTLSharedEvent give the right values.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_kernel.h"

/* out[i] = a[i] + s for i < n (a's extent), a failed index check at i >= limit */
static const char *ADD =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "struct tk_err { atomic_int failed; int site; ulong prog; long a; long b; };\n"
    "kernel void tk_phase0(device tk_err *ctx [[buffer(0)]], device char *frame [[buffer(1)]],\n"
    "                      constant ulong *w [[buffer(2)]], device const float *a [[buffer(3)]],\n"
    "                      device float *out [[buffer(4)]], uint tid [[thread_position_in_grid]],\n"
    "                      uint nthreads [[threads_per_grid]]) {\n"
    "    long n = (long)w[1];\n"
    "    float s = as_type<float>((uint)(w[3] & 0xffffffffUL));\n"
    "    long limit = (long)w[4];\n"
    "    for (long i = tid; i < n; i += nthreads) {\n"
    "        if (i >= limit) {\n"
    "            if (atomic_exchange_explicit(&ctx->failed, 1, memory_order_relaxed) == 0) {\n"
    "                ctx->site = 0; ctx->prog = w[0]; ctx->a = i; ctx->b = limit;\n"
    "            }\n"
    "            return;\n"
    "        }\n"
    "        out[i] = a[i] + s;\n"
    "    }\n"
    "}\n"
    "/* tack-metal: phases=p frame=0 */\n"
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

int main(void) {
    tack_device *g = NULL;
    (void)failing_allocator_install; /* out of memory: test_metal_fake's */
    if (tack_device_get("metal", &g) != TACK_OK) {
        CHECK(strstr(tack_last_error(), "device 'metal' is not available") != NULL);
        printf("no Metal here (%s): only the error is checked\n", tack_last_error());
        return CHECK_SUMMARY();
    }
    static const tk_site site = {CK_INDEX, 3, 0, "a", NULL, "add", "add.py"};
    tk_pinfo params[4] = {param("a", 1, TACK_F32, 1), param("out", 1, TACK_F32, 1), param("s", 0, TACK_F32, 0),
                          param("limit", 0, TACK_I64, 0)};
    tack_program *p = NULL;
    CHECK(tk_program_from_source("add", "metal", ADD, 4, params, 1, &site, &p) == TACK_OK);
    tack_status st = p ? tack_program_build(p, g) : TACK_ERR_VALUE;
    CHECK(st == TACK_OK);
    if (st != TACK_OK) {
        fprintf(stderr, "%s\n", tack_last_error());
        return CHECK_SUMMARY();
    }
    enum { N = 100000 };
    static float host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    int64_t n = N;
    tack_array *a = NULL, *out = NULL;
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    CHECK(tack_array_copy_from_host(a, host, sizeof host) == TACK_OK);
    tack_arg args[4];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 0.5;
    args[3].scalar.i = N;
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    CHECK(tack_array_copy_to_host(out, back, sizeof back) == TACK_OK);
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += back[i] != (float)i + 0.5f;
    CHECK(wrong == 0);
    /* streams (metal_stream.c): out2 = out + 0.5 on stream B after out = a + 0.5 on stream A, ordered
     * by an event Tack records on A (a command buffer holding only encodeSignalEvent) and B waits
     * for; what this checks that the fake cannot is that the GPU signals after A's kernel, not
     * beside it (docs/design/decisions.md, "Metal streams and events") */
    tack_stream *sa = NULL, *sb = NULL;
    tack_event *t0 = NULL, *t1 = NULL;
    tack_array *out2 = NULL;
    CHECK(tack_stream_create(g, &sa) == TACK_OK && tack_stream_create(g, &sb) == TACK_OK);
    CHECK(tack_event_create(g, 1, &t0) == TACK_OK && tack_event_create(g, 1, &t1) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &out2) == TACK_OK);
    if (sa && sb && t0 && t1 && out2) {
        int bad_rounds = 0;
        float ms = -1;
        for (int round = 0; round < 20; round++) {
            CHECK(tack_array_copy_from_host(out, host, sizeof host) == TACK_OK); /* stale values to overwrite */
            tack_stream *was = tack_stream_use(sa);
            CHECK(tack_event_record(t0, sa) == TACK_OK);
            args[0].array = a;
            args[1].array = out;
            CHECK(tack_launch(p, args, 4) == TACK_OK);
            CHECK(tack_event_record(t1, sa) == TACK_OK);
            tack_stream_use(sb);
            args[0].array = out;
            args[1].array = out2;
            CHECK(tack_launch(p, args, 4) == TACK_OK);
            CHECK(tack_stream_synchronize(sb) == TACK_OK);
            tack_stream_use(was);
            CHECK(tack_array_copy_to_host(out2, back, sizeof back) == TACK_OK);
            wrong = 0;
            for (int i = 0; i < N; i++) wrong += back[i] != (float)i + 1.0f;
            bad_rounds += wrong != 0;
        }
        CHECK(bad_rounds == 0);
        CHECK(tack_event_elapsed(t0, t1, &ms) == TACK_OK && ms >= 0);
        printf("streams: 20 rounds across two queues, %d wrong; the last kernel took %.3f ms by GPUEndTime\n",
               bad_rounds, (double)ms);
        args[0].array = a;
        args[1].array = out;
    }
    tack_event_free(t0);
    tack_event_free(t1);
    tack_array_release(out2);
    tack_stream_release(sa);
    tack_stream_release(sb);
    /* the GPU fails the check at i >= 10: reported at the synchronization, then cleared */
    args[3].scalar.i = 10;
    CHECK(tack_launch(p, args, 4) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    printf("failed check: %s\n", tack_last_error());
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
    /* Metal's own compile error */
    CHECK(tk_program_from_source("bad", "metal", "kernel void tk_phase0() { undeclared_q = 1; }\n"
                                 "/* tack-metal: phases=p frame=0 */\n", 4, params, 0, NULL, &p) == TACK_OK);
    CHECK(p && tack_program_build(p, g) == TACK_ERR_COMPILE && strstr(tack_last_error(), "undeclared_q") != NULL);
    printf("compile error: %s\n", tack_last_error());
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
    return CHECK_SUMMARY();
}
