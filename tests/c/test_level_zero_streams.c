/*
 * test_level_zero_streams.c -- the Level Zero backend's streams, events
 * and graphs (level_zero_stream.c) against the fake driver.
 *
 * The fake (tests/c/fake_level_zero.c) is built and loaded as
 * level_zero_fake.h says, and test_level_zero_fake.c tests the rest of the
 * backend against it the same way.  Queued work runs only when the host
 * waits for it or another list waits for its events, so what ran, and in
 * which order, shows what Tack ordered: work on one stream in order, on two
 * only as events order it; elapsed times across the timestamps' wrap;
 * graphs recorded without running and replayed after what their stream
 * queued; kernels on a stream and in a graph, and the profiler's kernel
 * timestamps (where libocloc builds them); a stream destroyed with work
 * queued; another library's list wrapped; event slots reused once waited
 * for; and, in children, one device's events and graphs refused on
 * another device, naming both, and graphs refused by a loader that lacks
 * an entry point they need (the fake built without it), naming it.
 */
#include "level_zero_fake.h"

/* ---------------------------------------------------------------- streams */
/* Where `what` first appears in the fake's log of what ran, from `from` (-1: never). */
static long ran_at(const char *what, long from) {
    const char *log = fake_ran(), *s = strstr(log + (from < 0 ? 0 : from), what);
    return s ? (long)(s - log) : -1;
}

static tack_array *f32s(tack_device *g, int64_t n, float v) {
    tack_array *a = NULL;
    float *host = malloc((size_t)n * sizeof *host);
    for (int64_t i = 0; i < n; i++) host[i] = v;
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &a) == TACK_OK &&
          tack_array_copy_from_host(a, host, (size_t)n * 4) == TACK_OK);
    free(host);
    return a;
}

static float first_of(tack_array *a) {
    float v = -1;
    float *host = malloc(tack_array_nbytes(a));
    CHECK(tack_array_copy_to_host(a, host, tack_array_nbytes(a)) == TACK_OK);
    v = host[0];
    free(host);
    return v;
}

/* Streams are immediate lists; work on one runs in order, work on two only
 * as events order it (the runtime's events for arrays used on both, and the
 * program's own); elapsed times from global timestamps across the 32-bit
 * wrap; graphs recorded into a regular list, nothing run until replayed. */
static void test_streams(tack_device *g, int ocloc) {
    tack_stream *s1 = NULL, *s2 = NULL;
    fake_calls_clear();
    CHECK(tack_stream_create(g, &s1) == TACK_OK && tack_stream_create(g, &s2) == TACK_OK);
    if (!s1 || !s2) return;
    CHECK(tack_stream_handle(s1) && tack_stream_handle(s2) && tack_stream_handle(s1) != tack_stream_handle(s2));
    CHECK(at("zeCommandListCreateImmediate", 0) >= 0);
    tack_array *a = f32s(g, 1000, 1), *b = f32s(g, 1000, 0), *c = f32s(g, 100, 2), *e = f32s(g, 100, 0),
               *f = f32s(g, 50, 3), *h = f32s(g, 50, 0);
    /* one stream: a copy is queued, not run, until the stream is waited for; then in order */
    fake_ran_clear();
    tack_stream *was = tack_stream_use(s1);
    CHECK(tack_array_copy(b, a) == TACK_OK && tack_array_copy(e, c) == TACK_OK);
    tack_stream_use(was);
    CHECK(ran_at("copy(4000)", 0) == -1);
    CHECK(tack_stream_synchronize(s1) == TACK_OK);
    CHECK(ran_at("copy(4000)", 0) >= 0 && ran_at("copy(400)", ran_at("copy(4000)", 0)) > 0);
    /* two streams through an array: b written on s1, read on s2; only s2 is waited for */
    float two = 2;
    CHECK(tack_array_fill(a, &two) == TACK_OK);
    fake_ran_clear();
    was = tack_stream_use(s1);
    CHECK(tack_array_copy(b, a) == TACK_OK);
    tack_stream_use(s2);
    CHECK(tack_array_copy(e, c) == TACK_OK && tack_array_copy(b, b) == TACK_OK);
    tack_array *b2 = NULL;
    int64_t n = 1000;
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &b2) == TACK_OK && tack_array_copy(b2, b) == TACK_OK);
    tack_stream_use(was);
    CHECK(tack_stream_synchronize(s2) == TACK_OK);
    long first = ran_at("copy(4000)", 0);
    CHECK(first >= 0 && ran_at("copy(4000)", first + 1) > first); /* s1's copy ran first, for s2's */
    tack_stream_use(s2);
    CHECK(first_of(b2) == 2);
    tack_stream_use(was);
    /* an event: s2 waits on the device for s1's point, not for what s1 queues after it */
    tack_event *ev = NULL, *start = NULL, *end = NULL;
    CHECK(tack_event_create(g, 1, &ev) == TACK_OK && tack_event_create(g, 1, &start) == TACK_OK &&
          tack_event_create(g, 1, &end) == TACK_OK);
    CHECK(tack_stream_synchronize(s1) == TACK_OK);
    fake_ran_clear();
    was = tack_stream_use(s1);
    CHECK(tack_array_copy(e, c) == TACK_OK);
    CHECK(tack_event_record(ev, s1) == TACK_OK);
    CHECK(tack_array_copy(h, f) == TACK_OK);
    tack_stream_use(s2);
    CHECK(tack_event_query(ev) == 0); /* queued, not reached */
    CHECK(tack_event_wait(ev, s2) == TACK_OK);
    CHECK(tack_array_copy(b2, b) == TACK_OK); /* both last used on s2: only the event orders it */
    tack_stream_use(was);
    CHECK(tack_stream_synchronize(s2) == TACK_OK);
    long c400 = ran_at("copy(400)", 0), c4000 = ran_at("copy(4000)", 0);
    CHECK(c400 >= 0 && c4000 > c400 && ran_at("copy(200)", 0) == -1); /* s1 ran up to the event only */
    CHECK(tack_event_query(ev) == 1);
    CHECK(tack_stream_synchronize(s1) == TACK_OK && ran_at("copy(200)", 0) > c400);
    /* elapsed: two copies of 10 ticks each and a global timestamp on both sides, across the wrap */
    *fake_clock = (1ull << 32) - 15;
    was = tack_stream_use(s1);
    CHECK(tack_event_record(start, NULL) == TACK_OK);
    CHECK(tack_array_copy(e, c) == TACK_OK && tack_array_copy(h, f) == TACK_OK);
    CHECK(tack_event_record(end, NULL) == TACK_OK);
    tack_stream_use(was);
    float ms = -1;
    CHECK(tack_event_elapsed(start, end, &ms) == TACK_OK && ms > 0.0000399f && ms < 0.0000401f); /* 20 ticks of 2 ns */
    CHECK(tack_event_elapsed(end, start, &ms) == TACK_OK && ms < -0.0000399f && ms > -0.0000401f);
    tack_event *untimed = NULL;
    CHECK(tack_event_create(g, 0, &untimed) == TACK_OK && tack_event_record(untimed, s1) == TACK_OK);
    CHECK(tack_event_elapsed(start, untimed, &ms) == TACK_ERR_VALUE && strstr(tack_last_error(), "timing"));
    CHECK(tack_event_synchronize(untimed) == TACK_OK && tack_event_query(untimed) == 1);
    tack_event_free(untimed);
    /* graphs: a copy and a fill recorded, nothing run; each replay runs them after what its stream queued */
    fake_ran_clear();
    float seven = 7;
    tack_graph *gr = NULL;
    CHECK(tack_capture_begin(s1) == TACK_OK);
    CHECK(tack_array_copy(b, a) == TACK_OK && tack_array_fill(e, &seven) == TACK_OK);
    CHECK(tack_event_record(ev, s1) == TACK_ERR_VALUE && strstr(tack_last_error(), "captured"));
    CHECK(tack_capture_end(s1, &gr) == TACK_OK && gr && tack_graph_count(gr) == 2);
    seven = 99; /* the graph keeps its pattern */
    CHECK(strstr(fake_ran(), "copy") == NULL && strstr(fake_ran(), "fill") == NULL);
    was = tack_stream_use(s1);
    CHECK(tack_array_copy(h, f) == TACK_OK); /* queued before the replays */
    tack_stream_use(was);
    for (int i = 0; i < 3; i++) CHECK(tack_graph_launch(gr, i == 2 ? s2 : s1) == TACK_OK);
    CHECK(tack_stream_synchronize(s2) == TACK_OK);
    long q = ran_at("copy(200)", 0), r1 = ran_at("copy(4000)", 0), r2 = ran_at("copy(4000)", r1 + 1),
         r3 = ran_at("copy(4000)", r2 + 1);
    CHECK(q >= 0 && r1 > q && r2 > r1 && r3 > r2 && ran_at("fill(400)", r3) > r3);
    CHECK(first_of(e) == 7);
    if (ocloc) {
        /* kernels on a stream, recorded into a graph, and timed by the profile */
        tk_pinfo params[3] = {arr("y", TACK_F32, 1), arr("x", TACK_F32, 0), scalar("a", TACK_F32)};
        tack_program *p = program("saxpy", SAXPY, 3, params);
        CHECK(tack_program_build(p, g) == TACK_OK);
        tack_arg args[3];
        memset(args, 0, sizeof args);
        args[0].array = b;
        args[1].array = a;
        args[2].scalar.f = 1.0;
        fake_ran_clear();
        was = tack_stream_use(s1);
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        tack_stream_use(was);
        CHECK(ran_at("launch(tk_phase0)", 0) == -1); /* returned once queued */
        CHECK(tack_stream_synchronize(s1) == TACK_OK && ran_at("launch(tk_phase0)", 0) >= 0);
        tack_graph *kg = NULL;
        CHECK(tack_capture_begin(s1) == TACK_OK && tack_launch(p, args, 3) == TACK_OK &&
              tack_array_copy(h, f) == TACK_OK && tack_capture_end(s1, &kg) == TACK_OK);
        fake_ran_clear();
        CHECK(tack_graph_launch(kg, s1) == TACK_OK && tack_graph_launch(kg, NULL) == TACK_OK &&
              tack_stream_synchronize(s1) == TACK_OK);
        long k1 = ran_at("launch(tk_phase0)", 0);
        CHECK(k1 >= 0 && ran_at("copy(200)", k1) > k1 && ran_at("launch(tk_phase0)", k1 + 1) > k1);
        tack_graph_release(kg);
        setenv("FAKE_ZE_KERNEL_TICKS", "250000", 1);
        *fake_clock = (1ull << 32) - 1000;
        tack_profile *prof = NULL;
        CHECK(tack_profile_start(&prof) == TACK_OK);
        was = tack_stream_use(s1);
        CHECK(tack_launch(p, args, 3) == TACK_OK);
        tack_stream_use(was);
        CHECK(tack_profile_stop(prof) == TACK_OK);
        int timed = 0;
        tack_profile_event pe;
        for (int64_t i = 0; i < tack_profile_count(prof); i++)
            if (tack_profile_get(prof, i, &pe) && strcmp(pe.kind, "launch") == 0)
                timed += pe.device_ns == 500000 && strcmp(pe.device, "level_zero:0") == 0; /* 250000 ticks of 2 ns */
        CHECK(timed == 1);
        tack_profile_free(prof);
        unsetenv("FAKE_ZE_KERNEL_TICKS");
        /* a stream dropped with work queued: it runs before the list goes, and its failed check is
         * reported at the next synchronization point */
        tk_pinfo cparams[2] = {arr("x", TACK_I32, 0), scalar("idx", TACK_I64)};
        tack_program *pc = program("check", CHECKED, 2, cparams);
        CHECK(tack_program_build(pc, g) == TACK_OK);
        tack_array *xi = NULL;
        int64_t ten = 10;
        CHECK(tack_array_zeros(g, TACK_I32, 1, &ten, &xi) == TACK_OK);
        tack_arg cargs[2];
        memset(cargs, 0, sizeof cargs);
        cargs[0].array = xi;
        tack_stream *s3 = NULL;
        CHECK(tack_stream_create(g, &s3) == TACK_OK);
        fake_ran_clear();
        *fail_next = 1;
        was = tack_stream_use(s3);
        CHECK(tack_launch(pc, cargs, 2) == TACK_OK);
        tack_stream_use(was);
        tack_array_release(xi); /* its storage was last used on s3 */
        tack_stream_release(s3);
        CHECK(ran_at("launch(tk_phase0)", 0) >= 0);
        CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX &&
              strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 10") &&
              strstr(tack_last_error(), "kernel check"));
        CHECK(tack_device_synchronize(g) == TACK_OK);
        tack_program_free(pc);
        tack_program_free(p);
    }
    /* a stream destroyed with work queued (an event's record: no array keeps the stream alive):
     * the work finishes before the list goes, as the device may not reference a destroyed list */
    tack_stream *s4 = NULL;
    tack_event *e4 = NULL;
    CHECK(tack_stream_create(g, &s4) == TACK_OK && tack_event_create(g, 1, &e4) == TACK_OK);
    CHECK(tack_event_record(e4, s4) == TACK_OK && tack_event_query(e4) == 0);
    tack_stream_release(s4);
    CHECK(tack_event_query(e4) == 1 && strstr(fake_misuse(), "zeCommandListDestroy") == NULL);
    tack_event_free(e4);
    /* another library's immediate list, wrapped: Tack's work goes there and waits for it */
    void *hctx = NULL, *hdev = NULL, *theirs = NULL;
    unsigned (*mk)(void *, void *, const uint32_t *, void **) = NULL;
    unsigned (*rm)(void *) = NULL;
    *(void **)&mk = dlsym(fake, "zeCommandListCreateImmediate");
    *(void **)&rm = dlsym(fake, "zeCommandListDestroy");
    uint32_t qdesc[10] = {0xeu};
    CHECK(tack_level_zero_handles(g, NULL, &hctx, &hdev) == TACK_OK && mk && rm && mk(hctx, hdev, qdesc, &theirs) == 0);
    tack_stream *ws = NULL;
    CHECK(tack_stream_wrap(g, (uintptr_t)theirs, &ws) == TACK_OK && tack_stream_handle(ws) == (uintptr_t)theirs);
    fake_ran_clear();
    was = tack_stream_use(ws);
    CHECK(tack_array_copy(h, f) == TACK_OK);
    tack_stream_use(was);
    CHECK(ran_at("copy(200)", 0) == -1 && tack_stream_synchronize(ws) == TACK_OK && ran_at("copy(200)", 0) >= 0);
    tack_stream_release(ws);
    /* many orderings with no wait on the host in between reuse the pools' events once waited for */
    for (int i = 0; i < 300; i++) {
        was = tack_stream_use(i % 2 ? s1 : s2);
        CHECK(tack_array_copy(b, a) == TACK_OK);
        tack_stream_use(was);
        if (i % 50 == 49) CHECK(tack_device_synchronize(g) == TACK_OK);
    }
    CHECK(tack_device_synchronize(g) == TACK_OK);
    long pools = 0;
    for (long at_ = at("zeEventPoolCreate", 0); at_ >= 0; at_ = at("zeEventPoolCreate", at_ + 1)) pools++;
    CHECK(pools <= 3);
    tack_graph_release(gr);
    tack_event_free(ev);
    tack_event_free(start);
    tack_event_free(end);
    tack_stream_release(s1);
    tack_stream_release(s2);
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(b2);
    tack_array_release(c);
    tack_array_release(e);
    tack_array_release(f);
    tack_array_release(h); /* the last to hold the wrapped stream (their storage was last used there) */
    /* theirs to wait for and destroy, after Tack's last use */
    unsigned (*hs)(void *, uint64_t) = NULL;
    *(void **)&hs = dlsym(fake, "zeCommandListHostSynchronize");
    CHECK(hs && hs(theirs, UINT64_MAX) == 0 && rm && rm(theirs) == 0);
}

/* Two devices: events, streams and graphs of one are refused on the other, naming both. */
static int child_two(void) {
    tack_device *g0 = NULL, *g1 = NULL;
    CHECK(tack_device_get("level_zero:0", &g0) == TACK_OK && tack_device_get("level_zero:1", &g1) == TACK_OK &&
          bind_fake());
    if (!g0 || !g1) return CHECK_SUMMARY();
    tack_stream *s0 = NULL, *s1 = NULL;
    tack_event *e0 = NULL, *e1 = NULL;
    CHECK(tack_stream_create(g0, &s0) == TACK_OK && tack_stream_create(g1, &s1) == TACK_OK);
    CHECK(tack_event_create(g0, 1, &e0) == TACK_OK && tack_event_create(g1, 1, &e1) == TACK_OK);
    CHECK(tack_event_record(e0, s1) == TACK_ERR_DEVICE &&
          strstr(tack_last_error(), "the event is on level_zero:0 and the stream on level_zero:1"));
    CHECK(tack_event_record(e0, s0) == TACK_OK && tack_event_record(e1, s1) == TACK_OK);
    CHECK(tack_event_wait(e1, s0) == TACK_ERR_DEVICE &&
          strstr(tack_last_error(), "the event is on level_zero:1 and the stream on level_zero:0"));
    float ms = 0;
    CHECK(tack_event_elapsed(e0, e1, &ms) == TACK_ERR_DEVICE &&
          strstr(tack_last_error(), "the events are on level_zero:0 and level_zero:1"));
    tack_array *a = f32s(g0, 16, 1), *b = f32s(g0, 16, 0);
    tack_graph *gr = NULL;
    CHECK(tack_capture_begin(s0) == TACK_OK && tack_array_copy(b, a) == TACK_OK &&
          tack_capture_end(s0, &gr) == TACK_OK);
    CHECK(tack_graph_launch(gr, s1) == TACK_ERR_DEVICE &&
          strstr(tack_last_error(), "a graph captured on level_zero:0 launched on a stream of level_zero:1"));
    CHECK(tack_graph_launch(gr, s0) == TACK_OK && first_of(b) == 1);
    tack_graph_release(gr);
    tack_array_release(a);
    tack_array_release(b);
    tack_event_free(e0);
    tack_event_free(e1);
    tack_stream_release(s0);
    tack_stream_release(s1);
    CHECK(tack_device_synchronize(g0) == TACK_OK && tack_device_synchronize(g1) == TACK_OK);
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}

/* A loader without zeCommandListAppendEventReset: streams and events work, graphs are refused
 * naming the entry point they need. */
static int child_noreset(void) {
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK && bind_fake());
    if (!g) return CHECK_SUMMARY();
    tack_stream *s = NULL;
    tack_event *e = NULL;
    CHECK(tack_stream_create(g, &s) == TACK_OK && tack_event_create(g, 1, &e) == TACK_OK);
    CHECK(tack_event_record(e, s) == TACK_OK && tack_event_synchronize(e) == TACK_OK);
    CHECK(tack_capture_begin(s) == TACK_ERR_UNSUPPORTED &&
          strstr(tack_last_error(),
                 "level_zero:0: the Level Zero loader lacks zeCommandListAppendEventReset, which graphs need"));
    tack_event_free(e);
    tack_stream_release(s);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}

int main(int argc, char **argv) {
    if (!lzf_init_exe()) return 1;
    if (argc == 3 && strcmp(argv[1], "--two") == 0) return child_two();
    if (argc == 3 && strcmp(argv[1], "--noreset") == 0) return child_noreset();
    if (!getenv("TACK_FAKE_ZE_DIR")) {
        char dir[] = "/tmp/tack-fakeze-XXXXXX";
        if (!lzf_build(dir)) {
            printf("cannot build the fake driver (no C compiler?): skipping\n");
            return CHECK_SUMMARY();
        }
        return lzf_rerun(dir, argv);
    }
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK);
    CHECK(bind_fake());
    if (g && fake) {
        int ocloc = have_ocloc();
        if (!ocloc) printf("libocloc.so not usable: skipping the kernels on streams and in graphs\n");
        test_streams(g, ocloc);
        CHECK_NO_MISUSE();
        CHECK(child_run("FAKE_ZE_DEVICES=2", "--two", "-"));
        char noreset[700], env[900];
        snprintf(noreset, sizeof noreset, "%s/noreset", getenv("TACK_FAKE_ZE_DIR"));
        mkdir(noreset, 0700);
        snprintf(env, sizeof env, "LD_LIBRARY_PATH='%s'", noreset);
        CHECK(make_fake(noreset, "-DFAKE_ZE_NO_EVENT_RESET") && child_run(env, "--noreset", "-"));
    }
    lzf_remove();
    return CHECK_SUMMARY();
}
