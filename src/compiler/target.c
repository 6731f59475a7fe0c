/*
 * target.c -- the one list of compile targets, each with its descriptor
 * (target.h: what the target can do, how its kernels are laid out).
 *
 * The order is the one users read in the "not supported" message and in
 * tack._core._targets(): the CPU's "c" first (the default), then the GPU
 * dialects by name.  Adding a target is a row here and a dialect file
 * (docs/design/architecture.md, "Recipe: add a backend"); no pass changes,
 * since the passes read the row, never the name.
 *
 * The limits on local arrays: 16 KiB per array and 1 MiB per iteration on
 * the CPU (an eighth of the 8 MiB that glibc gives a thread's stack, leaving
 * the rest to the generated code, the C library and Python); 4 KiB and
 * 64 KiB of a GPU thread's private memory, which CUDA, HIP, OpenCL and Metal
 * devices provide and beyond which launches fail or spill on some of them.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/target.h"
#include "runtime/runtime.h"

enum { CPU_ARRAY = 16384, CPU_FRAME = 1 << 20, GPU_ARRAY = 4096, GPU_FRAME = 64 << 10 };

#define CPU_MEMORY .local_array_bytes = CPU_ARRAY, .frame_bytes = CPU_FRAME, \
    .thread_memory = "a CPU thread's stack", .device = "the CPU", .max_block = 1024
#define GPU_MEMORY .local_array_bytes = GPU_ARRAY, .frame_bytes = GPU_FRAME, \
    .thread_memory = "a GPU thread's private memory", .device = "a GPU", .max_block = 1024

static const tk_target targets[] = {
    {.name = "c", .dialect = &tk_dialect_c, .loops = TK_LOOPS_CHUNKED, .polls = 1, .simd_pragma = 1,
     .race_watch = 1, .weak_f32_params = 0, .fp64 = TK_FP64_ALWAYS, .atomics64 = 1, .print = 1, CPU_MEMORY, .shared_bytes = 48 << 10,
     .wide_vectors = rt_cpu_wide_vectors},
    {.name = "cuda", .dialect = &tk_dialect_cuda, .loops = TK_LOOPS_GRID, .weak_f32_params = 1,
     .fp64 = TK_FP64_ALWAYS, .atomics64 = 1, .print = 1, GPU_MEMORY, .shared_bytes = 48 << 10,
     .warp32_shuffles = 1},
    {.name = "hip", .dialect = &tk_dialect_hip, .loops = TK_LOOPS_GRID, .weak_f32_params = 1,
     .fp64 = TK_FP64_ALWAYS, .atomics64 = 1, .print = 1, GPU_MEMORY, .shared_bytes = 64 << 10,
     .warp32_shuffles = 1},
    {.name = "metal", .dialect = &tk_dialect_msl, .loops = TK_LOOPS_GRID, .weak_f32_params = 1,
     .fp64 = TK_FP64_NONE, .atomics64 = 0, .print = 0, GPU_MEMORY, .shared_bytes = 32 << 10},
    {.name = "opencl", .dialect = &tk_dialect_opencl, .loops = TK_LOOPS_GRID, .weak_f32_params = 1,
     .fp64 = TK_FP64_DEVICE, .atomics64 = 1, .print = 1, GPU_MEMORY, .shared_bytes = 32 << 10},
};
#define NTARGETS ((int)(sizeof targets / sizeof targets[0]))

const tk_target *tk_target_at(int i) { return i >= 0 && i < NTARGETS ? &targets[i] : NULL; }

const tk_target *tk_target_find(const char *name) {
    if (!name) return &targets[0];
    for (int i = 0; i < NTARGETS; i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

void tk_target_names(char *buf, size_t n) {
    size_t at = 0;
    if (n) buf[0] = 0;
    for (int i = 0; i < NTARGETS && at < n; i++) {
        const char *sep = i == 0 ? "" : i == NTARGETS - 1 ? " and " : ", ";
        int w = snprintf(buf + at, n - at, "%s\"%s\"", sep, targets[i].name);
        if (w < 0) break;
        at += (size_t)w;
    }
}

TACK_API const char *tack_compile_target(int i) {
    const tk_target *t = tk_target_at(i);
    return t ? t->name : NULL;
}
