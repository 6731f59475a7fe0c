/*
 * cpu_width.c -- whether this CPU runs 512-bit vector operations at full
 * width: a fact of the C target (target.h's wide_vectors) that the passes
 * ask, measured once per process.
 *
 * AVX-512 says which instructions a core decodes, not how fast it runs
 * them.  Some cores execute a 512-bit multiply or add in one pass of a
 * 512-bit unit, on two ports (Intel's Xeons since Skylake-SP's Gold and
 * Platinum parts, Sapphire and Emerald Rapids): twice a 256-bit operation's
 * work in the same issue slot.  Others take it as two 256-bit halves, or
 * fuse two 256-bit ports into one (AMD's Zen 4; Intel's client cores and
 * the Xeons with one FMA unit): the same work per cycle as 256-bit
 * operations, with fewer registers' worth of data in flight.  Code that
 * issues more operations than BLAS for the same product -- the loop's bits
 * need a separate multiply and add where BLAS fuses them (gemm.c) -- gains
 * from 64-byte vectors on the first kind (on the Xeon this was measured on,
 * 2.4-3.3x of BLAS's time on 32-byte vectors, 1.6-2.3x on 64-byte ones)
 * and loses on the second (Zen 4: 1.25-1.32x the time on 64-byte ones).
 *
 * Why measured, not looked up.  cpuid does not say it: the feature bits are
 * the same on a Xeon Silver (one 512-bit FMA unit) and a Xeon Gold (two),
 * on Zen 5's desktop parts (a 512-bit data path) and its mobile ones (split
 * in two); a table of model numbers would be wrong for every part it does
 * not list, and a hypervisor may report a model that is not the host's.
 * What decides is throughput, so that is what is asked: sixteen independent
 * chains of multiplies, once on 256-bit and once on 512-bit vectors (the
 * same number of instructions: at full width the two take the same time,
 * split in halves the 512-bit run takes twice as long), alternated over 15
 * rounds after a warm-up of some 100 microseconds of 512-bit work (an Intel
 * core powers its upper lanes up, and may change its clock, on first use:
 * with 4 warm-up runs instead of 16 the Xeon measured 1.24-1.38 instead of
 * 1.00), the best of each kept, so a round another process interrupts is
 * discarded.  512-bit time / 256-bit time below 1.6 is full width; the
 * Xeon measures 1.00 (at a load average of 11 on its 2 cores); a core that
 * splits them should measure near 2 (Zen 4 was not at hand to run it).
 * On the quiet Xeon 4 of 15 processes read 1.54-1.58 instead of 1.00, a
 * hair under the line (the upper lanes not all the way up, it seems), so a
 * reading of 1.25 or more is taken again, warm-up included, up to three
 * times, and the least kept: a split core cannot read under 1.6 by chance
 * (an interrupted round only makes a run slower, and the best of 15 is
 * kept), and a full-width one no longer risks reading "no" because its
 * first warm-up fell short.  A split core pays three probes, about 1 ms.
 * Multiplies only, because adds are not a clean question: the Xeon has a
 * third port for 256-bit adds, and a mix of multiplies and adds ran 7.6-8.0
 * operations a nanosecond on 256-bit vectors against 5.4 on 512-bit ones
 * (multiplies alone: 5.1-5.4 on both), which would read as 1.5 on a core
 * that is full width.  The probe takes some 300 microseconds, at the first
 * compile that asks (a kernel with a matrix product), once per process.
 * Sixteen chains of latency 3 to 4 keep four multiplies in flight per
 * cycle, more than either kind of core issues, so the runs measure the
 * ports, not the latency.
 *
 * TACK_WIDE_VECTORS (tack.config.wide_vectors) overrides it: "on" or "off"
 * states the fact (for tests, and for a machine where the measurement is
 * not wanted), "auto" (the default) measures.  Where the CPU or the OS
 * lacks AVX-512 (or the compiler cannot build the probe: not GCC or clang
 * on x86-64) the answer is "no" without a measurement.  The answer changes
 * the generated source, which is part of the kernel cache's key, so a
 * kernel built under one answer is never loaded under the other.
 */
#include <stdint.h>
#include <stdio.h>

#include "platform/platform.h"
#include "runtime/config.h"
#include "runtime/runtime.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TK_PROBE 1

typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

/* n rounds of sixteen multiplies on independent chains; *m is 1, so the values stay put and no
 * subnormal appears, but read from volatile storage it is unknown to the C compiler, which can
 * neither fold the operations away nor reuse one call's result for another. */
#define TK_M4(a, b, c, d) a = a * mv, b = b * mv, c = c * mv, d = d * mv
#define CHAINS(V, NAME, ATTR)                                                                        \
    ATTR __attribute__((noinline)) static double NAME(int64_t n, const volatile double *m) {                         \
        V z = {0}, mv = z + *m, a0 = mv, a1 = a0 + mv, a2 = a1 + mv, a3 = a2 + mv, a4 = a3 + mv;     \
        V a5 = a4 + mv, a6 = a5 + mv, a7 = a6 + mv, a8 = a7 + mv, a9 = a8 + mv, a10 = a9 + mv;      \
        V a11 = a10 + mv, a12 = a11 + mv, a13 = a12 + mv, a14 = a13 + mv, a15 = a14 + mv;           \
        for (int64_t i = 0; i < n; i++) {                                                            \
            TK_M4(a0, a1, a2, a3), TK_M4(a4, a5, a6, a7);                                            \
            TK_M4(a8, a9, a10, a11), TK_M4(a12, a13, a14, a15);                                      \
        }                                                                                            \
        V s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15;  \
        return s[0];                                                                                 \
    }
CHAINS(v4d, chains256, __attribute__((target("avx512f,avx512vl"))))
CHAINS(v8d, chains512, __attribute__((target("avx512f,avx512vl"))))

static void cpuid(unsigned leaf, unsigned r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0u));
}

/* Whether the CPU has AVX-512F and VL and the system saves their registers (XCR0's
 * SSE, AVX, opmask and both ZMM bits).  cpuid and xgetbv directly, not
 * __builtin_cpu_supports: that one needs the compiler's runtime library (libgcc's
 * __cpu_model), which a macOS or Windows link of the core need not have. */
static int avx512_usable(void) {
    unsigned r[4], lo, hi;
    cpuid(0, r);
    unsigned top = r[0];
    cpuid(1, r);
    if (top < 7 || !(r[2] & (1u << 27))) return 0; /* OSXSAVE: xgetbv may run */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    (void)hi;
    if ((lo & 0xE6u) != 0xE6u) return 0;
    cpuid(7, r);
    return (r[1] & (1u << 16)) && (r[1] & (1u << 31)); /* AVX512F, AVX512VL */
}
#endif

static tk_once_t probe_once = TK_ONCE_INIT;
static int probe_wide; /* the measured answer */

static void probe(void) {
#ifdef TK_PROBE
    if (!avx512_usable()) return;
    static volatile double one = 1.0;
    const volatile double *m = &one;
    double sink = 0;
    enum { ROUNDS = 15, N = 2000 }; /* 32,000 multiplies a run: some 8 microseconds at 2 a cycle */
    double ratio = 0;
    for (int attempt = 0; attempt < 3 && !(ratio > 0 && ratio < 1.25); attempt++) {
        for (int i = 0; i < 16; i++) sink += chains512(N, m); /* the upper lanes powered up */
        int64_t best[2] = {INT64_MAX, INT64_MAX};
        for (int r = 0; r < ROUNDS; r++)
            for (int w = 0; w < 2; w++) {
                int64_t t0 = tk_monotonic_ns();
                sink += w ? chains512(N, m) : chains256(N, m);
                int64_t t = tk_monotonic_ns() - t0;
                if (t < best[w]) best[w] = t;
            }
        if (sink != sink || best[0] <= 0) return; /* never: the chains hold 1..16 */
        double q = (double)best[1] / (double)best[0];
        if (ratio == 0 || q < ratio) ratio = q;
    }
    probe_wide = ratio < 1.6;
    if (tk_config_int(TK_CFG_LOG)) /* info or debug */
        fprintf(stderr, "tack: 512-bit vector operations at full width: %s (measured: %.2fx the 256-bit time)\n",
                probe_wide ? "yes" : "no", ratio);
#endif
}

int rt_cpu_wide_vectors(void) {
    int c = tk_config_int(TK_CFG_WIDE_VECTORS); /* "auto|off|on" */
    if (c == 1) return 0;
    if (c == 2) return 1;
    tk_once(&probe_once, probe);
    return probe_wide;
}
