/*
 * cpu.c -- the CPU backend's vtable.
 *
 * The CPU is one backend among several: the runtime reaches it only through
 * this table.  Memory is host memory, aligned to 64 bytes (a cache line, and
 * enough for any vector instruction) and allocated through libtack's
 * allocator hook so that tests can fail it.  Copies are memcpy; the device
 * is synchronous, so synchronize has nothing to wait for.  Building and
 * launching kernels (the C toolchain, the disk cache and the thread pool)
 * live in cpu_jit.c.  A block of 4 MiB or more is advised to the kernel as
 * wanting transparent huge pages (madvise MADV_HUGEPAGE, as NumPy does for
 * its large arrays): where the system's THP setting is "madvise", a fresh
 * block's first touch then faults in 2 MiB pages instead of 4 KiB ones,
 * which on this 2-core machine made writing a fresh 64 MB array 4-9x
 * faster (a radix sort writes two); elsewhere the advice changes nothing.  The device's description (for `python -m tack`) is
 * the processor's model name.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "platform/platform.h"

#include "backends/cpu/cpu_jit.h"
#include "runtime/runtime.h"

#define CPU_ALIGN 64
#define CPU_HUGE_MIN ((size_t)4 << 20)

/* Advise the whole pages inside [raw, raw + total) as wanting huge pages; a
 * refusal (no THP, memory the allocator hook got elsewhere) changes nothing. */
static void cpu_advise_huge(unsigned char *raw, size_t total) {
    if (total >= CPU_HUGE_MIN) tk_advise_huge_pages(raw, total); /* platform/posix.c; nothing on Windows */
}

/* The aligned block stores the offset back to the raw block just before it. */
static tack_status cpu_alloc(tack_device *dev, size_t nbytes, void **out) {
    size_t total;
    if (__builtin_add_overflow(nbytes, (size_t)CPU_ALIGN + sizeof(void *), &total))
        return tack_set_error(TACK_ERR_NOMEM, "cannot allocate %zu bytes on the CPU: size overflows",
                              nbytes);
    unsigned char *raw = tack_malloc(total);
    if (!raw)
        return tack_set_error(TACK_ERR_NOMEM, "out of memory allocating %zu bytes on the CPU", nbytes);
    cpu_advise_huge(raw, total);
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + CPU_ALIGN - 1) & ~(uintptr_t)(CPU_ALIGN - 1);
    ((void **)p)[-1] = raw;
    *out = (void *)p;
    return TACK_OK;
}

static void cpu_free(tack_device *dev, void *ptr) {
    if (ptr)
        tack_free(((void **)ptr)[-1]);
}

static tack_status cpu_copy(tack_device *dev, void *dst, const void *src, size_t nbytes, rt_copy_kind kind) {
    if (nbytes)
        memmove(dst, src, nbytes);
    return TACK_OK;
}

static tack_status cpu_fill(tack_device *dev, void *dst, const void *value, size_t itemsize, size_t count) {
    unsigned char *d = dst;
    if (count == 0)
        return TACK_OK;
    memcpy(d, value, itemsize);
    /* Doubling copies: log2(count) memcpy calls. */
    size_t done = 1;
    while (done < count) {
        size_t n = done <= count - done ? done : count - done;
        memcpy(d + done * itemsize, d, n * itemsize);
        done += n;
    }
    return TACK_OK;
}

static tack_status cpu_synchronize(tack_device *dev) { return TACK_OK; }

static int usable_cores(void) {
    return tk_cpu_count();
}

static int cpu_device_count(char *why, size_t why_len) { return 1; }

/* The processor's model, for reports: /proc/cpuinfo's "model name" (x86) or
 * "Model" (some ARM boards), else the machine's architecture. */
static void cpu_describe(tack_device *dev) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Model", 5) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v += 1 + strspn(v + 1, " \t");
        v[strcspn(v, "\n")] = 0;
        snprintf(dev->description, sizeof dev->description, "%s", v);
        break;
    }
    if (f) fclose(f);
    if (!dev->description[0]) tk_cpu_brand(dev->description, sizeof dev->description);
    if (!dev->description[0]) tk_machine(dev->description, sizeof dev->description);
}

static tack_status cpu_init_device(tack_device *dev) {
    dev->threads = usable_cores();
    cpu_describe(dev);
    uint64_t memory = tk_physical_memory();
    if (memory) dev->memory = memory;
    return TACK_OK;
}

static const rt_backend cpu_backend = {
    .name = "cpu",
    .type = TACK_DEVICE_CPU,
    .dialect = "c",
    .device_count = cpu_device_count,
    .init_device = cpu_init_device,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .synchronize = cpu_synchronize,
    .build = cpu_build,
    .launch = cpu_launch,
    .unload = cpu_unload,
};

const rt_backend *rt_backend_cpu(void) { return &cpu_backend; }
