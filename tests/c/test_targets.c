/*
 * test_targets.c -- the compiler's table of targets (src/compiler/target.c):
 * each target's descriptor says what the passes do for it, so its values are
 * the behaviour: the CPU's parallel loops run in chunks of a function (private
 * histograms, fast division, loop nests), poll, take `#pragma omp simd` and the
 * race detector; the GPUs' run on a grid, carry a Python float as f32 bits,
 * and bound local arrays by a thread's private memory; Metal has no float64,
 * no 64-bit atomics and no print.  Also: the table is the one list -- lookups,
 * the public tack_compile_target, the names the "not supported" message lists
 * and every backend's dialect agree with it (tests/python/test_targets.py
 * checks the message itself and that no source tests a target's name).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "compiler/target.h"
#include "runtime/runtime.h"
#include "tack.h"
#include "tack_kernel.h"

static void cpu_and_gpus(void) {
    const tk_target *c = tk_target_find("c");
    CHECK(c && c == tk_target_find(NULL) && c == tk_target_at(0)); /* the default, first */
    CHECK(c && c->dialect == &tk_dialect_c && c->loops == TK_LOOPS_CHUNKED);
    CHECK(c && c->polls && c->simd_pragma && c->race_watch && !c->weak_f32_params);
    CHECK(c && c->fp64 == TK_FP64_ALWAYS && c->atomics64 && c->print);
    CHECK(c && c->local_array_bytes == 16384 && c->frame_bytes == 1 << 20);
    CHECK(c && !strcmp(c->thread_memory, "a CPU thread's stack") && !strcmp(c->device, "the CPU"));

    static const struct {
        const char *name;
        const tk_dialect *dialect;
        tk_fp64 fp64;
        int atomics64, print;
    } gpus[] = {
        {"cuda", &tk_dialect_cuda, TK_FP64_ALWAYS, 1, 1},
        {"hip", &tk_dialect_hip, TK_FP64_ALWAYS, 1, 1},
        {"metal", &tk_dialect_msl, TK_FP64_NONE, 0, 0},
        {"opencl", &tk_dialect_opencl, TK_FP64_DEVICE, 1, 1},
    };
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        const tk_target *t = tk_target_find(gpus[i].name);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK(!strcmp(t->name, gpus[i].name) && t->dialect == gpus[i].dialect);
        CHECK(t->loops == TK_LOOPS_GRID && !t->polls && !t->simd_pragma && !t->race_watch && t->weak_f32_params);
        CHECK(t->fp64 == gpus[i].fp64 && t->atomics64 == gpus[i].atomics64 && t->print == gpus[i].print);
        CHECK(t->local_array_bytes == 4096 && t->frame_bytes == 64 << 10);
        CHECK(!strcmp(t->thread_memory, "a GPU thread's private memory") && !strcmp(t->device, "a GPU"));
    }
    CHECK(tk_target_find("rocm") == NULL && tk_target_find("cpu") == NULL && tk_target_find("") == NULL);
}

static void one_list(void) {
    int n = 0;
    while (tk_target_at(n)) {
        const tk_target *t = tk_target_at(n);
        CHECK(tk_target_find(t->name) == t);                  /* names are distinct */
        CHECK(tack_compile_target(n) && !strcmp(tack_compile_target(n), t->name));
        CHECK(t->dialect && t->dialect->kernel && t->dialect->prelude && t->dialect->ctype);
        n++;
    }
    CHECK(n == 5 && tack_compile_target(n) == NULL && tk_target_at(-1) == NULL);

    char names[256];
    tk_target_names(names, sizeof names);
    CHECK(!strcmp(names, "\"c\", \"cuda\", \"hip\", \"metal\" and \"opencl\""));
    tk_target_names(names, 8); /* cut, still a string */
    CHECK(strlen(names) < 8);

    /* every backend builds a target of the table */
    const rt_backend *(*backends[])(void) = {rt_backend_cpu,   rt_backend_cuda,   rt_backend_hip,
                                             rt_backend_metal, rt_backend_opencl, rt_backend_level_zero};
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        const rt_backend *be = backends[i]();
        CHECK(be && be->dialect && tk_target_find(be->dialect) != NULL);
    }
}

int main(void) {
    (void)failing_allocator_install; /* check.h's: these lookups allocate nothing */
    cpu_and_gpus();
    one_list();
    return CHECK_SUMMARY();
}
