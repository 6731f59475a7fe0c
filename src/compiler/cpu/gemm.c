/*
 * gemm.c -- a matrix product found in a parallel loop's rows, run as a
 * register-blocked micro-kernel over packed panels.
 *
 * tile.c blocks a row loop whose body is one product nest and nothing else;
 * the product as users write it often is not that.  PolyBench's gemm scales
 * the row first, a dot-product form keeps the sum in a local, a transposed
 * operand swaps an index pair:
 *
 *     for i in range(n):                          # parallel
 *         for j in range(a, b): C[i, j] = beta * C[i, j]      (or `= v`; optional)
 *         for k in range(c, d):
 *             t = alpha * A[i, k]                             (or A[k, i]; alpha optional)
 *             for j in range(a, b): C[i, j] = C[i, j] + t * B[k, j]   (or - ; or B[j, k])
 *
 *     for i in range(n):
 *         for j in range(a, b):
 *             s = v
 *             for k in range(c, d): s += A[i, k] * B[k, j]
 *             C[i, j] = s          (or alpha * s + beta * C[i, j]: an epilogue)
 *
 * and the ijk nest (`for j: for k: C[i, j] += ...`).  This pass reads the
 * row body (after nests.c's check-free copy), inlines the locals it assigns
 * once, and matches what is left against one description: each cell
 * C[i, j] starts from C[i, j], beta * C[i, j] or a value v, then takes
 * c = c + a(i, k) * b(k, j) (or c - ...) for k in ascending order, where
 * a(i, k) is A's element, times alpha when the source scales it, and
 * b(k, j) is B's.  A, B and C may have any number of axes; the axes other
 * than the ones i, k and j name (each at most once, as `v` or `v + c`) must
 * be the same in every row, so an operand is a base offset and two element
 * strides (0 where an index is absent), transposes included.  A sum kept in
 * a local may end in an epilogue: the store is s, alpha * s, or one of those
 * plus C[i, j] or beta * C[i, j] (either side of the +, either factor
 * first); the cell's start value is then s's and C[i, j] is read only by
 * the epilogue.  The row body is read with tile.c's helpers (tk_rows_*),
 * and the panel loop is built by the same code as tile.c's.
 *
 * A match turns the parallel loop into one over panels of P_ROWS rows whose
 * body calls tk_gemm_f32 / tk_gemm_f64 (the prelude below, written only
 * into kernels that use it).  The helper is BLIS's loop nest: columns in
 * blocks of NC, k in blocks of KC, B's block packed into NR-wide slivers
 * (zero-padded; a contiguous row-major copy, so a leading dimension that
 * maps every k to the same cache sets -- 1024 or 2048 doubles -- no longer
 * conflicts: the packed stride is NR elements), the panel's rows packed into
 * MR-tall slivers (alpha applied here, once per element, as the loop's
 * `t = alpha * A[i, k]` does), then an MR x NR block of accumulators held
 * in vector registers over the block's k's.  Edges go through a small
 * buffer, so any size is handled, and a size smaller than one block is one
 * edge.  With an epilogue the block's sums go to that buffer (or, when k
 * takes more than one block, to a buffer of the panel's partial sums, as C
 * must keep its value for the epilogue) and the epilogue writes C after
 * the last k block.
 *
 * The block is 8 rows by 3 vectors with AVX-512VL's 32 vector registers:
 * 24 accumulators, 3 vectors of B, a broadcast of A and a product (the
 * loop's bits need a separate multiply and add, so each step's product
 * takes a register before it is added; the C compiler keeps the loop free
 * of spills).  How wide the vectors are is the core's question, which the
 * target answers (target.h's wide_vectors: whether 512-bit operations run
 * at full width, measured once per process, runtime/cpu_width.c).  Where
 * they do (the Xeon: 512-bit multiplies and adds on two ports, 0 fused
 * with 1, and 5), 64 bytes, 8 x 24 doubles or 8 x 48 floats: 0.72-0.79x the
 * time of the 32-byte block (the helper alone, CPU time, 512-2048, f32 and
 * f64), which is what two 512-bit ports against three 256-bit ones give
 * (16 lanes a cycle against 12: 0.75).  Where they do not (Zen 4 runs a
 * 64-byte operation as two 32-byte halves), 32 bytes: there the pair on
 * 64-byte vectors took 1.25-1.32x the fused kernel's time, on 32-byte ones
 * 0.99-1.07x.  The fused (fast_math) kernel is as fast on either width on
 * Zen 4 and twice as fast on 64 bytes on the Xeon, so it takes 64 bytes
 * wherever AVX-512VL is.  The k block is 512: at 512 a cell's whole sum
 * stays in registers, and 512 took 4-10% less time than 256 on Zen 4.  On
 * the Xeon, with 64-byte vectors, 6 x 4, 12 x 2 and k blocks of 256 took
 * the same time as 8 x 3 and 512 within 4% (0.72-0.81 of the 32-byte
 * block each, at a load average of 10): the block runs near its ports'
 * bound, and the shape and the cache blocking (a B sliver of 512 x 24
 * doubles is 96 KiB, twice the L1 cache, read at 192 bytes per 24 cycles
 * of arithmetic) decide little:
 * on a quiet machine the micro-kernel alone on packed data in L1 took
 * 0.034-0.039 ns a multiply-add in f64, the helper over whole products
 * 0.036-0.039 at 1000 and 0.041-0.043 at 2048, and k blocks of 128-384,
 * 12 x 2 and panels of 64 or 256 rows did not recover that gap beyond the
 * noise (decisions.md, 2026-12-06).
 *
 * The bound.  On Intel's cores the multiply and the add each take an issue
 * slot on the same two 512-bit FMA ports, so a k step of the block is 48
 * operations, 24 cycles, where BLAS's fused kernel issues 24 in 12: with
 * the loop's bits the product takes at least twice the time of a BLAS that
 * runs at its ports' peak, whatever the blocking.  Only fast_math (which
 * lets the C compiler fuse) removes that factor.
 *
 * The bits are the loop's.  Every cell's value is the loop's chain of
 * operations in the loop's order: the start value (the same product
 * beta * C[i, j]), then one `c = c + a * b` per k, ascending, each a
 * rounded multiply then a rounded add (the C compiler runs with
 * -ffp-contract=off), k blocks in ascending order, with the partial value
 * stored in C (or the buffer of partial sums) between blocks and reloaded
 * (an exact round trip in the element's type), then the epilogue's
 * operations as the loop writes them (alpha * s, beta * C[i, j], their
 * sum: addition and multiplication commute exactly).  Packing copies values; alpha * A[i, k] is the product
 * the loop computes.  A subtraction packs -a and adds: c - a * b and
 * c + (-a) * b are the same bits (negation is exact and rounding to nearest
 * is symmetric), so one kernel serves both signs, and the C compiler
 * optimizes it once (it is not inlined into its two callers either).  The
 * helper costs the C compiler some 0.13 s of CPU per kernel that uses it
 * (gcc 12, -O3); compiling the loops around the kernel (packing, edges) at
 * -O2 saved 0.04 s of that and cost up to 1.6x at 512, so they stay at
 * -O3.  Only the order in which cells are visited changes, and no cell
 * reads another.  With `fast_math=True` the C compiler fuses
 * each multiply-add (-ffp-contract=fast): the bits then differ from the
 * loop's by the rounding of the fused products, which is what fast_math
 * permits and why it is the fast path's only difference from the default.
 *
 * Where the loop is a statement of a block (nests.c hands in its slot), B
 * is packed once for all the panels (every sliver over all of k) when the
 * panels' test below holds for all the rows at once, so that every panel
 * takes the copy; the panels then share the packed B instead of each packing
 * its own (16 times at 2048 rows), and the block frees it after the loop.
 * No panel can fail in between (each takes the copy, and the copy has no
 * checks), so the free is reached unless the launch is interrupted.  The
 * block only allocates it before the loop (tk_gemm_T_packb) and zeroes a
 * state per (sliver, k block); the panels pack it, in parallel: a panel
 * about to use a sliver's k block packs it if no panel has (0 -> 1 by a
 * compare-and-swap, the copy, then 2, released), uses it where it is packed
 * (2, acquired), and leaves it for a second pass over its slivers where
 * another panel is packing it (1), so no thread waits while there is work;
 * each call starts at another sliver (a ticket per call, spread by the
 * golden ratio), so two threads pack different slivers.  Packed by the
 * caller before the loop, B's copy was one thread's work while the others
 * waited: at f64 2048 on two threads the shared packing took 0.91-0.95x
 * the time, at 1000-2048 otherwise 0.96-0.99x (interleaved, this machine's
 * two cores).  The order in which a panel visits its slivers changes, no
 * cell's chain of operations.
 *
 * How the product is split: the parallel loop runs over panels of P_ROWS
 * rows (4 at 512 rows, 8 at 1000 and 1024, 16 at 2048), which the pool
 * hands out (and lets idle threads steal), so two threads each take about
 * half: two threads took 0.49-0.52x one thread's time at 512-2048, f32 and
 * f64, with the other core free (docs/performance.md).  Where another process holds a
 * core (or OpenBLAS's threads spin on it after a NumPy product, for 2^28
 * cycles unless OPENBLAS_THREAD_TIMEOUT is lower), the second thread gets
 * little of it and two threads take about one's time: that, not the split,
 * is what two-thread figures taken on a loaded machine show.
 *
 * The conditions the copy tests at run time, as tile.c's: nests.c's index
 * checks hold for the panel's rows, both loops run, C shares no byte with
 * A nor B (M_DISJOINT); otherwise the panel runs as written (with its
 * checks, so an error is the same error after the same writes).  Strided
 * views never reach here (nests.c leaves such kernels alone).  The helper
 * allocates its packing buffers per call; if that fails it runs the same
 * chain of operations unpacked.  It does not poll for interruption: a panel
 * is at most P_ROWS * n * K multiply-adds.
 *
 * TACK_GEMM=0 turns this pass off (then tile.c may take the loop), as do TACK_NESTS=0
 * and TACK_OPT=0; the tests compare with it.  C dialect only.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/target.h"
#include "runtime/config.h"

#define P_ROWS 128 /* rows in a panel, an iteration of the parallel loop (a multiple of MR) */
#define MAXS 16

/* The helper, in the prelude.  TK_GEMM_DEF(name, T, lanes, MR, vectors per row, KC, MC, NC). */
static const char PRELUDE_GEMM[] =
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#if defined(__x86_64__) || defined(__i386__)\n#define TK_GEMM_PAUSE() __builtin_ia32_pause()\n#else\n#define TK_GEMM_PAUSE() ((void)0)\n#endif\n"
    "#define TK_GEMM_DEF(NAME, T, VL, MR, NV, KC, MC, NC) \\\n"
    "typedef T NAME##_v __attribute__((vector_size(VL * sizeof(T)))); \\\n"
    "typedef T NAME##_vu __attribute__((vector_size(VL * sizeof(T)), aligned(sizeof(T)))); \\\n"
    "__attribute__((noinline)) static void NAME##_micro(int64_t kc, const T *restrict ap, const T *restrict bp, T *restrict c, int64_t rsc, int start, T beta) { \\\n"
    "    NAME##_v acc[MR][NV]; \\\n"
    "    if (start == 2) { \\\n"
    "        for (int r = 0; r < MR; r++) for (int v = 0; v < NV; v++) acc[r][v] = (NAME##_v){0} + beta; \\\n"
    "    } else { \\\n"
    "        for (int r = 0; r < MR; r++) for (int v = 0; v < NV; v++) { \\\n"
    "            acc[r][v] = *(const NAME##_vu *)(c + r * rsc + v * VL); \\\n"
    "            if (start == 1) acc[r][v] = beta * acc[r][v]; \\\n"
    "        } \\\n"
    "    } \\\n"
    "    for (int64_t k = 0; k < kc; k++) { \\\n"
    "        NAME##_v b[NV]; \\\n"
    "        for (int v = 0; v < NV; v++) b[v] = *(const NAME##_v *)(bp + k * (VL * NV) + v * VL); \\\n"
    "        for (int r = 0; r < MR; r++) { T a = ap[k * MR + r]; for (int v = 0; v < NV; v++) acc[r][v] = acc[r][v] + a * b[v]; } \\\n"
    "    } \\\n"
    "    for (int r = 0; r < MR; r++) for (int v = 0; v < NV; v++) *(NAME##_vu *)(c + r * rsc + v * VL) = acc[r][v]; \\\n"
    "} \\\n"
    "/* kc rows of one NR-wide sliver of B (nr columns, the rest zeros) */ \\\n"
    "static void NAME##_packsl(T *restrict dst, const T *restrict src, int64_t kc, int64_t nr, int64_t rsb, int64_t csb) { \\\n"
    "    enum { NR = VL * NV }; \\\n"
    "    if (csb == 1 && nr == NR) { \\\n"
    "        for (int64_t k = 0; k < kc; k++) memcpy(dst + k * NR, src + k * rsb, NR * sizeof(T)); \\\n"
    "    } else { \\\n"
    "        for (int64_t k = 0; k < kc; k++) { \\\n"
    "            for (int64_t j = 0; j < nr; j++) dst[k * NR + j] = src[k * rsb + j * csb]; \\\n"
    "            for (int64_t j = nr; j < NR; j++) dst[k * NR + j] = 0; \\\n"
    "        } \\\n"
    "    } \\\n"
    "} \\\n"
    "/* the loop's epilogue: s or ea * s, then + C or + eb * C */ \\\n"
    "static T NAME##_epi(T s, const T *c, int epi, T ea, T eb) { \\\n"
    "    T v = epi & 1 ? ea * s : s; \\\n"
    "    return epi >> 1 == 1 ? v + *c : epi >> 1 == 2 ? v + eb * *c : v; \\\n"
    "} \\\n"
    "static int NAME(int64_t m, int64_t n, int64_t K, const T *A, int64_t rsa, int64_t csa, int scale, T alpha, \\\n"
    "                const T *B, int64_t rsb, int64_t csb, T *C, int64_t rsc, int64_t csc, int init, T beta, int neg, int64_t pk, \\\n"
    "                int epi, T ea, T eb) { \\\n"
    "    enum { NR = VL * NV }; \\\n"
    "    int64_t ncb = n < NC ? n : NC, kcb = K < KC ? K : KC, mcb = m < MC ? m : MC, mw = m + MR; \\\n"
    "    ncb = (ncb + NR - 1) / NR * NR; mcb = (mcb + MR - 1) / MR * MR; \\\n"
    "    const T *bpk = (const T *)(uintptr_t)pk; /* B packed once for every panel (NAME##_packb), or 0 */ \\\n"
    "    T *bp = bpk ? NULL : (T *)aligned_alloc(64, (size_t)(kcb * ncb * (int64_t)sizeof(T) + 64) / 64 * 64); \\\n"
    "    T *ap = (T *)aligned_alloc(64, (size_t)(kcb * mcb * (int64_t)sizeof(T) + 64) / 64 * 64); \\\n"
    "    /* with an epilogue and more than one k block: the partial sums between blocks \\\n"
    "     * (C holds what the epilogue reads) */ \\\n"
    "    T *w = epi && K > KC ? (T *)aligned_alloc(64, (size_t)(mw * ncb * (int64_t)sizeof(T) + 64) / 64 * 64) : NULL; \\\n"
    "    if (!ap || (!bp && !bpk) || (epi && K > KC && !w)) { /* the same chain of operations, unpacked */ \\\n"
    "        free(ap); free(bp); free(w); \\\n"
    "        for (int64_t i = 0; i < m; i++) for (int64_t j = 0; j < n; j++) { \\\n"
    "            T c = init == 2 ? beta : init == 1 ? beta * C[i * rsc + j * csc] : C[i * rsc + j * csc]; \\\n"
    "            for (int64_t k = 0; k < K; k++) { \\\n"
    "                T a = scale ? alpha * A[i * rsa + k * csa] : A[i * rsa + k * csa]; \\\n"
    "                c = neg ? c - a * B[k * rsb + j * csb] : c + a * B[k * rsb + j * csb]; \\\n"
    "            } \\\n"
    "            C[i * rsc + j * csc] = epi ? NAME##_epi(c, C + i * rsc + j * csc, epi, ea, eb) : c; \\\n"
    "        } \\\n"
    "        return 0; \\\n"
    "    } \\\n"
    "    T tmp[MR * NR] __attribute__((aligned(64))); \\\n"
    "    /* with B shared: its states after the packed data (NAME##_packb), this call's ticket */ \\\n"
    "    int64_t nkb = (K + KC - 1) / KC, nsb = (n + NR - 1) / NR; \\\n"
    "    int *flags = bpk ? (int *)(uintptr_t)(pk + ((nsb * K * NR * (int64_t)sizeof(T) + 63) / 64 * 64 + 64)) : NULL; \\\n"
    "    int64_t tick = bpk ? __atomic_fetch_add((int *)(uintptr_t)(pk + (nsb * K * NR * (int64_t)sizeof(T) + 63) / 64 * 64), 1, __ATOMIC_RELAXED) : 0; \\\n"
    "    unsigned char skip[NC / NR + 1]; \\\n"
    "    for (int64_t jc = 0; jc < n; jc += NC) { \\\n"
    "        int64_t nc = n - jc < NC ? n - jc : NC; \\\n"
    "        for (int64_t pc = 0; pc < K; pc += KC) { \\\n"
    "            int64_t kc = K - pc < KC ? K - pc : KC; \\\n"
    "            int start = pc ? 0 : init; \\\n"
    "            for (int64_t jr = 0; jr < nc && !bpk; jr += NR) \\\n"
    "                NAME##_packsl(bp + jr * kc, B + pc * rsb + (jc + jr) * csb, kc, nc - jr < NR ? nc - jr : NR, rsb, csb); \\\n"
    "            for (int64_t ic = 0; ic < m; ic += MC) { \\\n"
    "                int64_t mc = m - ic < MC ? m - ic : MC; \\\n"
    "                for (int64_t ir = 0; ir < mc; ir += MR) { \\\n"
    "                    int64_t mr = mc - ir < MR ? mc - ir : MR; \\\n"
    "                    T *dst = ap + ir * kc; \\\n"
    "                    const T *src = A + (ic + ir) * rsa + pc * csa; \\\n"
    "                    for (int64_t k = 0; k < kc; k++) { \\\n"
    "                        for (int64_t r = 0; r < mr; r++) { T a = scale ? alpha * src[r * rsa + k * csa] : src[r * rsa + k * csa]; dst[k * MR + r] = neg ? -a : a; } \\\n"
    "                        for (int64_t r = mr; r < MR; r++) dst[k * MR + r] = 0; \\\n"
    "                    } \\\n"
    "                } \\\n"
    "                /* B shared by the panels: each (sliver, k block) packed by the first panel to \\\n"
    "                 * want it; one that another panel is packing is left for a second pass */ \\\n"
    "                int64_t nsl = (nc + NR - 1) / NR, rot = bpk ? (int64_t)(tick % 64 * 40503 % 65536) * nsl / 65536 : 0; \\\n"
    "                for (int64_t q = 0; q < 2 * nsl; q++) { \\\n"
    "                    int64_t jr = (q % nsl + rot) % nsl * NR; \\\n"
    "                    int64_t nr = nc - jr < NR ? nc - jr : NR; \\\n"
    "                    if (q >= nsl && (!bpk || !skip[q - nsl])) continue; \\\n"
    "                    if (bpk) { \\\n"
    "                        int *fl = flags + ((jc + jr) / NR * nkb + pc / KC); \\\n"
    "                        T *dst = (T *)bpk + (jc + jr) / NR * K * NR + pc * NR; \\\n"
    "                        if (q >= nsl) { \\\n"
    "                            while (__atomic_load_n(fl, __ATOMIC_ACQUIRE) != 2) TK_GEMM_PAUSE(); \\\n"
    "                        } else { \\\n"
    "                            int st = __atomic_load_n(fl, __ATOMIC_ACQUIRE); \\\n"
    "                            if (st == 0 && __atomic_compare_exchange_n(fl, &st, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) { \\\n"
    "                                NAME##_packsl(dst, B + pc * rsb + (jc + jr) * csb, kc, nr, rsb, csb); \\\n"
    "                                __atomic_store_n(fl, 2, __ATOMIC_RELEASE); \\\n"
    "                            } else if (st != 2) { \\\n"
    "                                skip[q] = 1; \\\n"
    "                                continue; \\\n"
    "                            } \\\n"
    "                            skip[q] = 0; \\\n"
    "                        } \\\n"
    "                    } \\\n"
    "                    const T *bs = bpk ? bpk + (jc + jr) / NR * K * NR + pc * NR : bp + jr * kc; \\\n"
    "                    for (int64_t ir = 0; ir < mc; ir += MR) { \\\n"
    "                        int64_t mr = mc - ir < MR ? mc - ir : MR; \\\n"
    "                        T *c = C + (ic + ir) * rsc + (jc + jr) * csc; \\\n"
    "                        if (epi) { /* the sums in w (or tmp), the epilogue into C after the last block */ \\\n"
    "                            T *s = w ? w + (ic + ir) * ncb + jr : tmp; \\\n"
    "                            int64_t rs = w ? ncb : NR; \\\n"
    "                            NAME##_micro(kc, ap + ir * kc, bs, s, rs, start, beta); \\\n"
    "                            if (pc + kc == K) \\\n"
    "                                for (int64_t r = 0; r < mr; r++) for (int64_t j = 0; j < nr; j++) \\\n"
    "                                    c[r * rsc + j * csc] = NAME##_epi(s[r * rs + j], c + r * rsc + j * csc, epi, ea, eb); \\\n"
    "                        } else if (mr == MR && nr == NR && csc == 1) { \\\n"
    "                            NAME##_micro(kc, ap + ir * kc, bs, c, rsc, start, beta); \\\n"
    "                        } else { \\\n"
    "                            for (int64_t r = 0; r < mr; r++) for (int64_t j = 0; j < nr; j++) tmp[r * NR + j] = c[r * rsc + j * csc]; \\\n"
    "                            NAME##_micro(kc, ap + ir * kc, bs, tmp, NR, start, beta); \\\n"
    "                            for (int64_t r = 0; r < mr; r++) for (int64_t j = 0; j < nr; j++) c[r * rsc + j * csc] = tmp[r * NR + j]; \\\n"
    "                        } \\\n"
    "                    } \\\n"
    "                } \\\n"
    "            } \\\n"
    "        } \\\n"
    "    } \\\n"
    "    free(ap); free(bp); free(w); \\\n"
    "    return 0; \\\n"
    "} \\\n"
    "static int64_t NAME##_packb(int64_t n, int64_t K, const T *B, int64_t rsb, int64_t csb) { \\\n"
    "    enum { NR = VL * NV }; \\\n"
    "    int64_t ns = (n + NR - 1) / NR, nkb = (K + KC - 1) / KC, d = (ns * K * NR * (int64_t)sizeof(T) + 63) / 64 * 64; \\\n"
    "    char *bp = (char *)aligned_alloc(64, (size_t)(d + 64 + (ns * nkb * (int64_t)sizeof(int) + 63) / 64 * 64)); \\\n"
    "    if (!bp) return 0; \\\n"
    "    (void)B, (void)rsb, (void)csb; \\\n"
    "    memset(bp + d, 0, (size_t)(64 + ns * nkb * (int64_t)sizeof(int))); \\\n"
    "    return (int64_t)(uintptr_t)bp; \\\n"
    "}\n"
    "static int tk_gemm_free(int64_t p) { free((void *)(uintptr_t)p); return 0; }\n";

void tk_gemm_prelude(const tk_cc *C, tk_buf *b) {
    if (!C->uses_gemm) return;
    tk_puts(b, PRELUDE_GEMM);
    /* the block of accumulators fits the vector registers the C compiler may use: with
     * AVX-512VL's 32 registers 8 rows by 3 vectors, 24 accumulators, 3 slivers of B, a
     * broadcast and a product; with AVX (16 of 32 bytes) 6 rows by 2; with AArch64's 32 of 16
     * bytes 8 by 3; elsewhere 4 by 2 vectors of 16 bytes.  Then k's in a block: 512 with
     * AVX-512VL (at 512 the whole sum stays in registers; 4-10% faster than 256 to 2048 on
     * Zen 4, as fast or up to 4% faster on the Xeon), 256 elsewhere (not timed).  With
     * AVX-512VL the vectors are 64 bytes wide where the CPU runs 512-bit operations at full width (the
     * target's wide_vectors: the loop's bits 0.72-0.79x the time of 32-byte ones on the Xeon)
     * or the products are fused (fast_math: as fast as 32-byte ones on Zen 4), else 32 (a
     * separate multiply and add on 64-byte vectors took 1.25-1.32x the time on Zen 4, which
     * splits 64-byte operations in two).  The width is written into the source, so the
     * kernel cache's key, which hashes the source, holds the answer. */
    int wide = C->target->wide_vectors && C->target->wide_vectors();
    tk_printf(b, "#if defined(__AVX512VL__)\n#define TK_GEMM_SHAPE(W) (%d / W), 8, 3, 512\n",
              C->opts.fast_math || wide ? 64 : 32);
    tk_puts(b, "#elif defined(__AVX__)\n#define TK_GEMM_SHAPE(W) (32 / W), 6, 2, 256\n"
               "#elif defined(__aarch64__)\n#define TK_GEMM_SHAPE(W) (16 / W), 8, 3, 256\n"
               "#else\n#define TK_GEMM_SHAPE(W) (16 / W), 4, 2, 256\n#endif\n"
               "#define TK_GEMM_DEF_(...) TK_GEMM_DEF(__VA_ARGS__)\n");
    if (C->uses_gemm & 1) tk_puts(b, "TK_GEMM_DEF_(tk_gemm_f32, float, TK_GEMM_SHAPE(4), 128, 4080)\n");
    if (C->uses_gemm & 2) tk_puts(b, "TK_GEMM_DEF_(tk_gemm_f64, double, TK_GEMM_SHAPE(8), 128, 4080)\n");
}

/* ------------------------------------------------------------- the match */
typedef struct gm {
    tk_cc *C;
    tk_spec *S;
    tk_ir *rows;
    int iv, kv, jv, scope;
    tack_dtype dt;
    tk_ir *klo, *khi, *jlo, *jhi;
    const tk_ir *store;          /* C[...] = ... (its indices) */
    const tk_ir *a, *b;          /* the loads of A and B */
    const tk_ir *alpha, *beta;   /* scalars (NULL: none) */
    int init, neg;               /* 0: C, 1: beta * C, 2: beta */
    int epi;                     /* the local sum's store: bit 0 ealpha * s; bits 1-2: + C (1), + ebeta * C (2) */
    const tk_ir *ealpha, *ebeta;
    /* the locals inlined */
    const tk_ir *wr[16];         /* indices under a negative index's wrap: tested >= 0 at the origin */
    int nwr;
    int dl[2 * MAXS + 4];
    const tk_ir *dv[2 * MAXS + 4];
    int nd;
} gm;

/* tile.c's readers of a row body (compiler.h): the statements of block b, checks and empty tests
 * left out (at most max; max + 1: more) */
static int stmts(const tk_ir *b, tk_ir **out, int n, int max) { return tk_rows_stmts(b, out, n, max, 1); }

/* What index e is: 1 + which of (i, k, j) it is (`v` or `v + c`, c in *c), 0 an expression
 * of none of them that is the same in every row, -1 anything else. */
static int form(gm *g, const tk_ir *e, int64_t *c) {
    int vs[3] = {g->iv, g->kv, g->jv};
    const tk_ir *x = ir_strip(e);
    *c = 0;
    if (x->op == IR_WRAP) { /* the variables ascend from the origin: x >= 0 there is x >= 0 throughout */
        int f = form(g, x->k[0], c);
        if (f <= 0 || g->nwr >= 16) return -1;
        g->wr[g->nwr++] = x->k[0];
        return f;
    }
    for (int v = 0; v < 3; v++) {
        if (x->op == IR_LOCAL && x->local == vs[v]) return 1 + v;
        if (x->op == IR_BIN && (x->sub == B_ADD || x->sub == B_SUB) && x->k[1]->op == IR_CONST && ir_strip(x->k[0])->op == IR_LOCAL &&
            ir_strip(x->k[0])->local == vs[v]) {
            *c = x->sub == B_ADD ? x->k[1]->c.i : -x->k[1]->c.i;
            return 1 + v;
        }
    }
    for (int v = 0; v < 3; v++)
        if (ir_mentions(e, vs[v])) return -1;
    return tk_rows_pure(e) && ir_invariant(e, g->rows) ? 0 : -1;
}

/* An array access whose indices name each of the variables in `allow` (bits 1 << v) at most
 * once; bit v of *names: v is named. */
static int access_ok(gm *g, const tk_ir *ld, int first, int allow, int *names) {
    int seen = 0;
    for (int a = first; a < ld->n; a++) {
        int64_t c;
        int f = form(g, ld->k[a], &c);
        if (f < 0) return 0;
        if (f > 0) {
            int bit = 1 << (f - 1);
            if (!(allow & bit) || (seen & bit)) return 0;
            seen |= bit;
        }
    }
    *names = seen;
    return 1;
}

static int loads(const tk_ir *e) {
    if (e->op == IR_LOAD || e->op == IR_WRAP) return 1;
    for (int i = 0; i < e->n; i++)
        if (loads(e->k[i])) return 1;
    return 0;
}

/* A scalar, the same in every row, that reads no array element. */
static int scalar(const gm *g, const tk_ir *e) {
    if (e->ty.kind != TY_VALUE || !tk_rows_pure(e) || loads(e) || !ir_invariant(e, g->rows)) return 0;
    return !ir_mentions(e, g->iv) && !ir_mentions(e, g->kv) && !ir_mentions(e, g->jv);
}
static int scalar_t(const gm *g, const tk_ir *e) { return e->ty.kind == TY_VALUE && e->ty.dt == g->dt && scalar(g, e); }

static const tk_ir *def(const gm *g, int l) {
    for (int i = g->nd - 1; i >= 0; i--)
        if (g->dl[i] == l) return g->dv[i];
    return NULL;
}
/* x with the inlined locals' values in place of the locals (one level deep is enough: a local's
 * value was resolved when it was recorded) */
static const tk_ir *res(const gm *g, const tk_ir *x) {
    const tk_ir *s = ir_strip(x);
    if (s->op == IR_LOCAL) {
        const tk_ir *d = def(g, s->local);
        if (d) return ir_strip(d);
    }
    return x;
}

/* Record the assignments in ss[0..n): own locals of the row, assigned once, of a plain value type.
 * Their values are resolved as they are recorded, so later ones can name earlier ones. */
static tk_ir *resolve(gm *g, const tk_ir *e);
static int record(gm *g, tk_ir *const *ss, int n) {
    for (int i = 0; i < n; i++) {
        const tk_ir *a = ss[i];
        if (a->op != IR_ASSIGN || g->nd >= 2 * MAXS + 4) return 0;
        int l = a->local;
        if (l == g->iv || l == g->kv || l == g->jv || ir_assignments(g->rows, l) != 1 || g->S->locals[l].scope != g->scope ||
            g->S->locals[l].ty.kind != TY_VALUE || !ty_eq(a->k[0]->ty, g->S->locals[l].ty) || !tk_rows_pure(a->k[0]))
            return 0;
        g->dv[g->nd] = resolve(g, a->k[0]);
        g->dl[g->nd++] = l;
    }
    return 1;
}
static tk_ir *resolve(gm *g, const tk_ir *e) {
    if (e->op == IR_LOCAL) {
        const tk_ir *d = def(g, e->local);
        if (d) return ir_clone(g->C, d);
    }
    tk_ir *r = ir_new(g->C, e->op, e->ty, e->line);
    *r = *e;
    r->k = tk_alloc(&g->C->arena, sizeof(tk_ir *) * (size_t)(e->n ? e->n : 1));
    r->cap = e->n;
    for (int j = 0; j < e->n; j++) r->k[j] = resolve(g, e->k[j]);
    return r;
}

/* The same element of C as the store (indices of the same forms). */
static int same_cell(const gm *g, const tk_ir *ld, const tk_ir *st) {
    if (ld->op != IR_LOAD || ld->param != st->param || ld->n != st->n - 1) return 0;
    for (int a = 0; a < ld->n; a++)
        if (!ir_same(ld->k[a], st->k[a + 1])) return 0;
    (void)g;
    return 1;
}

/* a(i, k): A's element or alpha times it (either side) */
static int a_term(gm *g, const tk_ir *x) {
    x = res(g, x);
    int names = 0;
    if (x->op == IR_BIN && x->sub == B_MUL && x->ty.kind == TY_VALUE && x->ty.dt == g->dt) {
        for (int s = 0; s < 2; s++) {
            const tk_ir *l = res(g, x->k[s]), *o = x->k[1 - s];
            if (l->op == IR_LOAD && scalar_t(g, o) && access_ok(g, l, 0, 3, &names) && l->ty.dt == g->dt) {
                g->a = l, g->alpha = o;
                return 1;
            }
        }
        return 0;
    }
    if (x->op == IR_LOAD && x->ty.kind == TY_VALUE && x->ty.dt == g->dt && access_ok(g, x, 0, 3, &names)) {
        g->a = x, g->alpha = NULL;
        return 1;
    }
    return 0;
}

/* b(k, j): B's element, naming j */
static int b_term(gm *g, const tk_ir *x) {
    x = res(g, x);
    int names = 0;
    if (x->op != IR_LOAD || x->ty.kind != TY_VALUE || x->ty.dt != g->dt || !access_ok(g, x, 0, 6, &names) || !(names & 4)) return 0;
    g->b = x;
    return 1;
}

/* `acc + a * b`, `a * b + acc` or `acc - a * b`, acc the C cell (acc_local < 0) or the local */
static int update(gm *g, const tk_ir *v, const tk_ir *st, int acc_local) {
    v = res(g, v);
    if (v->op != IR_BIN || (v->sub != B_ADD && v->sub != B_SUB) || v->ty.kind != TY_VALUE || v->ty.dt != g->dt) return 0;
    for (int s = 0; s < (v->sub == B_ADD ? 2 : 1); s++) {
        const tk_ir *acc = ir_strip(v->k[s]), *p = res(g, v->k[1 - s]);
        int is_acc = acc_local >= 0 ? acc->op == IR_LOCAL && acc->local == acc_local : same_cell(g, acc, st);
        if (!is_acc || p->op != IR_BIN || p->sub != B_MUL || p->ty.kind != TY_VALUE || p->ty.dt != g->dt) continue;
        for (int q = 0; q < 2; q++) {
            const tk_ir *x = res(g, p->k[q]), *y = res(g, p->k[1 - q]);
            if (ir_mentions(x, g->jv) || !ir_mentions(y, g->jv)) continue;
            if (a_term(g, x) && b_term(g, y)) {
                g->neg = v->sub == B_SUB;
                return 1;
            }
        }
    }
    return 0;
}

/* The store of C at (i, j): its indices name i and j once each, nothing else varies. */
static int c_store(gm *g, const tk_ir *st) {
    int names = 0;
    tk_type at = g->S->ptypes[st->param];
    if (st->param < 0 || at.kind != TY_ARRAY || (at.dt != TACK_F32 && at.dt != TACK_F64)) return 0;
    if (st->k[0]->ty.kind != TY_VALUE || st->k[0]->ty.dt != at.dt) return 0;
    g->dt = (tack_dtype)at.dt;
    return access_ok(g, st, 1, 5, &names) && names == 5;
}

/* A negative index's wrap taken off: the prologue's stores keep theirs where checks.c hoisted
 * their checks out of the parallel loop, but they store the cells the product's stores do,
 * whose indices the copy's test shows in bounds (so not negative, and the wrap is x). */
static const tk_ir *unwrap(const tk_ir *x) {
    const tk_ir *s = ir_strip(x);
    return s->op == IR_WRAP ? s->k[0] : x;
}

/* `for j: C[i, j] = beta * C[i, j]` (or `= v`), the j loop's bounds the product's */
static int prologue(gm *g, const tk_ir *f) {
    tk_ir *ss[MAXS + 2];
    if (!tk_rows_unit_for(f) || f->local != g->jv || !ir_same(f->k[0], g->jlo) || !ir_same(f->k[1], g->jhi)) return 0;
    int n = stmts(f->k[3], ss, 0, MAXS + 1);
    if (n < 1 || n > MAXS || !record(g, ss, n - 1)) return 0;
    const tk_ir *st = tk_rows_as_store(g->C, ss[n - 1]);
    if (!st || st->op != IR_STORE || st->param != g->store->param || st->n != g->store->n) return 0;
    for (int a = 1; a < st->n; a++)
        if (!ir_same(unwrap(st->k[a]), unwrap(g->store->k[a]))) return 0;
    const tk_ir *v = res(g, st->k[0]);
    if (scalar_t(g, v)) {
        g->init = 2, g->beta = v;
        return 1;
    }
    if (v->op == IR_BIN && v->sub == B_MUL && v->ty.kind == TY_VALUE && v->ty.dt == g->dt)
        for (int s = 0; s < 2; s++)
            if (same_cell(g, res(g, v->k[s]), st) && scalar_t(g, v->k[1 - s])) {
                g->init = 1, g->beta = v->k[1 - s];
                return 1;
            }
    return 0;
}

static int bounds(gm *g, const tk_ir *kf, const tk_ir *jf) {
    for (int i = 0; i < 2; i++)
        if (!ir_invariant(kf->k[i], g->rows) || !tk_rows_pure(kf->k[i]) || !ir_invariant(jf->k[i], g->rows) ||
            !tk_rows_pure(jf->k[i]))
            return 0;
    g->kv = kf->local, g->jv = jf->local;
    g->klo = kf->k[0], g->khi = kf->k[1], g->jlo = jf->k[0], g->jhi = jf->k[1];
    return ir_assignments(g->rows, g->kv) == 1;
}

/* The sum s scaled or not: `s`, `ealpha * s` or `s * ealpha` (bit 0 of the epilogue). */
static int sum_term(gm *g, const tk_ir *x, int s) {
    x = res(g, x);
    if (x->op == IR_LOCAL && x->local == s) return 1;
    if (x->op != IR_BIN || x->sub != B_MUL || x->ty.kind != TY_VALUE || x->ty.dt != g->dt) return -1;
    for (int q = 0; q < 2; q++) {
        const tk_ir *l = res(g, x->k[q]);
        if (l->op == IR_LOCAL && l->local == s && scalar_t(g, x->k[1 - q])) {
            g->ealpha = x->k[1 - q];
            return 3;
        }
    }
    return -1;
}

/* C's cell, `C[i, j]`, `ebeta * C[i, j]` or `C[i, j] * ebeta` (bits 1-2 of the epilogue). */
static int c_term(gm *g, const tk_ir *x, const tk_ir *st) {
    x = res(g, x);
    if (same_cell(g, x, st)) return 1;
    if (x->op != IR_BIN || x->sub != B_MUL || x->ty.kind != TY_VALUE || x->ty.dt != g->dt) return -1;
    for (int q = 0; q < 2; q++)
        if (same_cell(g, res(g, x->k[q]), st) && scalar_t(g, x->k[1 - q])) {
            g->ebeta = x->k[1 - q];
            return 2;
        }
    return -1;
}

/* What the local sum's store makes of s: s itself, or a scaled s plus C's cell (or a scaled
 * C's cell), either side of the +, as the loop computes it after the sum (g->epi). */
static int epilogue(gm *g, const tk_ir *v, const tk_ir *st, int s) {
    int t = sum_term(g, v, s);
    if (t > 0) {
        g->epi = t >> 1;
        return 1;
    }
    v = res(g, v);
    if (v->op != IR_BIN || v->sub != B_ADD || v->ty.kind != TY_VALUE || v->ty.dt != g->dt) return 0;
    for (int q = 0; q < 2; q++) {
        int a = sum_term(g, v->k[q], s), c = a > 0 ? c_term(g, v->k[1 - q], st) : -1;
        if (a > 0 && c > 0) {
            g->epi = (a >> 1) | c << 1;
            return 1;
        }
    }
    return 0;
}

/* The row body: [prologue] then the product (ikj, ijk or with a local sum). */
static int match(gm *g) {
    tk_ir *top[3], *l1[MAXS + 2], *l2[MAXS + 2];
    int nt = stmts(g->rows->k[3], top, 0, 2);
    if (nt < 1 || nt > 2) return 0;
    const tk_ir *pro = nt == 2 ? top[0] : NULL, *f1 = top[nt - 1];
    if (!tk_rows_unit_for(f1)) return 0;
    int n1 = stmts(f1->k[3], l1, 0, MAXS + 1);
    if (n1 < 1 || n1 > MAXS) return 0;
    const tk_ir *st = NULL;
    if (tk_rows_unit_for(l1[n1 - 1])) { /* f1 over k (ikj) or over j (ijk, with nothing before the k loop) */
        const tk_ir *f2 = l1[n1 - 1];
        int n2 = stmts(f2->k[3], l2, 0, MAXS + 1);
        if (n2 < 1 || n2 > MAXS) return 0;
        st = tk_rows_as_store(g->C, l2[n2 - 1]);
        if (!st || st->op != IR_STORE || st->n < 3) return 0;
        /* which loop is j: the one the store names */
        int j_inner = 0, j_outer = 0;
        for (int a = 1; a < st->n; a++) j_inner |= ir_mentions(st->k[a], f2->local), j_outer |= ir_mentions(st->k[a], f1->local);
        if (j_inner == j_outer) return 0;
        if (!bounds(g, j_inner ? f1 : f2, j_inner ? f2 : f1)) return 0;
        if (j_outer && n1 != 1) return 0;
        if (ir_assignments(g->rows, g->jv) != (pro ? 2 : 1)) return 0;
        if (!c_store(g, st)) return 0;
        g->store = st;
        if (!record(g, l1, n1 - 1) || !record(g, l2, n2 - 1)) return 0;
        if (!update(g, st->k[0], st, -1)) return 0;
        g->init = 0;
        if (pro && !prologue(g, pro)) return 0;
        return 1;
    }
    /* for j: s = v; for k: s = s + a * b; C[i, j] = s */
    if (pro || n1 < 3 || n1 > 4) return 0;
    const tk_ir *init = l1[0], *f2 = l1[1];
    if (init->op != IR_ASSIGN || !tk_rows_unit_for(f2)) return 0;
    int s = init->local;
    if (ir_assignments(g->rows, s) != 2 || g->S->locals[s].scope != g->scope || g->S->locals[s].ty.kind != TY_VALUE) return 0;
    st = tk_rows_as_store(g->C, l1[n1 - 1]);
    if (!st || st->op != IR_STORE || st->n < 3 || !bounds(g, f2, f1) || ir_assignments(g->rows, g->jv) != 1) return 0;
    if (!c_store(g, st) || !ty_eq(g->S->locals[s].ty, st->k[0]->ty)) return 0;
    g->store = st;
    if (!scalar_t(g, init->k[0])) return 0;
    if (n1 == 4 && !record(g, &l1[2], 1)) return 0;
    if (!epilogue(g, st->k[0], st, s)) return 0;
    int n2 = stmts(f2->k[3], l2, 0, MAXS + 1);
    if (n2 < 1 || n2 > MAXS || l2[n2 - 1]->op != IR_ASSIGN || l2[n2 - 1]->local != s) return 0;
    if (!record(g, l2, n2 - 1)) return 0;
    if (!update(g, l2[n2 - 1]->k[0], st, s)) return 0;
    g->init = 2, g->beta = init->k[0];
    return 1;
}

/* ----------------------------------------------------------- the call */
static tk_ir *loc(tk_cc *C, tk_spec *S, int l, int line) {
    tk_ir *r = ir_new(C, IR_LOCAL, S->locals[l].ty, line);
    r->local = l;
    return r;
}

/* x with i, k and j replaced by the panel's first row and the loops' lower bounds */
static tk_ir *at_origin(gm *g, const tk_ir *x, int i0) {
    if (x->op == IR_LOCAL && (x->local == g->iv || x->local == g->kv || x->local == g->jv)) {
        tk_ir *v = x->local == g->iv ? loc(g->C, g->S, i0, x->line) : ir_as_i64(g->C, ir_clone(g->C, x->local == g->kv ? g->klo : g->jlo));
        if (ty_eq(v->ty, x->ty)) return v;
        tk_ir *cv = ir_new(g->C, IR_CAST, x->ty, x->line);
        ir_push(g->C, cv, v);
        return cv;
    }
    tk_ir *r = ir_new(g->C, x->op, x->ty, x->line);
    *r = *x;
    r->k = tk_alloc(&g->C->arena, sizeof(tk_ir *) * (size_t)(x->n ? x->n : 1));
    r->cap = x->n;
    for (int j = 0; j < x->n; j++) r->k[j] = at_origin(g, x->k[j], i0);
    return r;
}

/* array p's axis d: its element stride (C order: the product of the later extents) */
static tk_ir *stride(gm *g, int p, int d, int line) {
    tk_ir *s = ir_i64(g->C, 1, line);
    for (int e = g->S->ptypes[p].ndim - 1; e > d; e--) {
        tk_ir *sh = ir_new(g->C, IR_SHAPE, ty_value(TACK_I64), line);
        sh->param = p, sh->aux = e;
        s = ir_i64_bin(g->C, B_MUL, s, sh);
    }
    return s;
}

/* Push an operand's base offset (at the origin) and the strides of its axes naming va and vb. */
static void operand(gm *g, tk_ir *call, const tk_ir *ld, int first, int va, int vb, int i0, int line) {
    tk_ir *off = ir_i64(g->C, 0, line), *sa = ir_i64(g->C, 0, line), *sb = ir_i64(g->C, 0, line);
    for (int a = first; a < ld->n; a++) {
        int d = a - first;
        off = ir_i64_bin(g->C, B_ADD, off, ir_i64_bin(g->C, B_MUL, ir_as_i64(g->C, at_origin(g, ld->k[a], i0)), stride(g, ld->param, d, line)));
        if (ir_mentions(ld->k[a], va)) sa = stride(g, ld->param, d, line);
        if (ir_mentions(ld->k[a], vb)) sb = stride(g, ld->param, d, line);
    }
    ir_push(g->C, call, off);
    ir_push(g->C, call, sa);
    ir_push(g->C, call, sb);
}

/* x with locals la and lb replaced by ea and eb */
static tk_ir *replace2(tk_cc *C, const tk_ir *x, int la, const tk_ir *ea, int lb, const tk_ir *eb) {
    if (x->op == IR_LOCAL && (x->local == la || x->local == lb)) return ir_clone(C, x->local == la ? ea : eb);
    tk_ir *r = ir_new(C, x->op, x->ty, x->line);
    *r = *x;
    r->k = tk_alloc(&C->arena, sizeof(tk_ir *) * (size_t)(x->n ? x->n : 1));
    r->cap = x->n;
    for (int j = 0; j < x->n; j++) r->k[j] = replace2(C, x->k[j], la, ea, lb, eb);
    return r;
}

static tk_ir *elem(gm *g, const tk_ir *x, int line) {
    if (x) return ir_clone(g->C, x);
    return ir_const_f(g->C, ty_value(g->dt), 1.0, line);
}

int tk_gemm(tk_cc *C, tk_spec *S, tk_ir *pf, tk_ir **wrap) {
    if (!tk_config_int(TK_CFG_GEMM)) return 0; /* the switch, for comparing (config.def) */
    if (pf->aux != 1 || pf->red || pf->hist || pf->vars[0] < 0) return 0;
    tk_ir *body = pf->k[1];
    int iv = pf->vars[0], scope = S->locals[iv].scope, line = pf->line;
    /* a quick look before anything is made: one or two loops */
    tk_ir *top[3];
    int nt = stmts(body, top, 0, 2);
    if (nt < 1 || nt > 2 || !tk_rows_unit_for(top[nt - 1]) || (nt == 2 && !tk_rows_unit_for(top[0]))) return 0;

    tk_type i64 = ty_value(TACK_I64);
    int ib = tk_new_local(C, S, "tk_panel", i64, scope);
    int i0 = tk_new_local(C, S, "tk_i0", i64, scope), i1 = tk_new_local(C, S, "tk_i1", i64, scope);
    gm g;
    memset(&g, 0, sizeof g);
    g.C = C, g.S = S, g.iv = iv, g.scope = scope, g.kv = g.jv = -1;
    tk_ir *cond;
    g.rows = tk_rows_copy(C, S, pf, i0, i1, &cond);
    if (!match(&g)) return 0;
    if (g.a->param == g.store->param || g.b->param == g.store->param) return 0;

    /* tk_gemm_T(m, n, K, A + off, rsa, csa, scale, alpha, B + off, rsb, csb, C + off, rsc, csc, init, beta, neg,
     * B packed before the loop or 0, epilogue, its alpha, its beta) */
    int bpack = wrap ? tk_new_local(C, S, "tk_bpack", i64, -1) : -1;
    tk_ir *call = ir_new(C, IR_MATH, ty_value(TACK_I32), line);
    call->sub = M_GEMM;
    call->aux_ty = ty_value(g.dt);
    call->param = g.store->param;
    call->aux = g.a->param;
    call->c.i = g.b->param | (int64_t)(g.alpha ? 1 : 0) << 32 | (int64_t)g.init << 33 | (int64_t)g.neg << 35 |
                (int64_t)g.epi << 36;
    ir_push(C, call, ir_i64_bin(C, B_SUB, loc(C, S, i1, line), loc(C, S, i0, line)));
    ir_push(C, call, ir_i64_bin(C, B_SUB, ir_as_i64(C, ir_clone(C, g.jhi)), ir_as_i64(C, ir_clone(C, g.jlo))));
    ir_push(C, call, ir_i64_bin(C, B_SUB, ir_as_i64(C, ir_clone(C, g.khi)), ir_as_i64(C, ir_clone(C, g.klo))));
    operand(&g, call, g.a, 0, g.iv, g.kv, i0, line);
    ir_push(C, call, elem(&g, g.alpha, line));
    operand(&g, call, g.b, 0, g.kv, g.jv, i0, line);
    operand(&g, call, g.store, 1, g.iv, g.jv, i0, line);
    ir_push(C, call, elem(&g, g.beta, line));
    ir_push(C, call, bpack >= 0 ? loc(C, S, bpack, line) : ir_i64(C, 0, line));
    ir_push(C, call, elem(&g, g.ealpha, line));
    ir_push(C, call, elem(&g, g.ebeta, line));
    tk_ir *ev = ir_new(C, IR_EVAL, ty_void(), line);
    ir_push(C, ev, call);
    tk_ir *then = ir_new(C, IR_BLOCK, ty_void(), line);
    then->str = "tack: matrix product (gemm.c): packed panels and a register-blocked kernel, each cell's updates in the same order";
    ir_push(C, then, ev);
    C->uses_gemm |= g.dt == TACK_F32 ? 1 : 2;

    /* the test: nests.c's (the checks), the loops run, C disjoint from A and B */
    cond = tk_rows_run(C, cond, g.klo, g.khi, g.jlo, g.jhi);
    for (int w = 0; w < g.nwr; w++)
        cond = ir_and(C, cond, ir_i64_bin(C, B_GE, ir_as_i64(C, at_origin(&g, g.wr[w], i0)), ir_i64(C, 0, line)));
    int reads[2] = {g.a->param, g.b->param};
    cond = tk_rows_disjoint(C, cond, g.store->param, reads, 2, line);
    if (bpack >= 0) {
        /* B packed once, before the loop, when every panel takes the copy: the panels' test
         * over all the rows at once (its range tests hold for every part of the range) */
        tk_ir *n = ir_as_i64(C, pf->k[0]);
        tk_ir *off = pf->off ? ir_as_i64(C, pf->off) : ir_i64(C, 0, line);
        tk_ir *all = ir_and(C, ir_i64_bin(C, B_GT, ir_clone(C, n), ir_i64(C, 0, line)),
                            replace2(C, cond, i0, off, i1, ir_i64_bin(C, B_ADD, ir_clone(C, off), ir_clone(C, n))));
        tk_ir *pk = ir_new(C, IR_MATH, i64, line);
        pk->sub = M_GEMM_PACK;
        pk->aux_ty = ty_value(g.dt);
        pk->param = g.b->param;
        ir_push(C, pk, ir_clone(C, call->k[1])); /* n */
        ir_push(C, pk, ir_clone(C, call->k[2])); /* K */
        for (int a = 7; a < 10; a++) ir_push(C, pk, replace2(C, call->k[a], i0, off, -1, NULL));
        tk_ir *set = ir_new(C, IR_BLOCK, ty_void(), line);
        ir_push(C, set, ir_assign(C, bpack, pk));
        tk_ir *iff2 = ir_new(C, IR_IF, ty_void(), line);
        ir_push(C, iff2, all);
        ir_push(C, iff2, set);
        ir_push(C, iff2, ir_new(C, IR_BLOCK, ty_void(), line));
        tk_ir *fr = ir_new(C, IR_MATH, ty_value(TACK_I32), line);
        fr->sub = M_GEMM_FREE;
        ir_push(C, fr, loc(C, S, bpack, line));
        tk_ir *ev2 = ir_new(C, IR_EVAL, ty_void(), line);
        ir_push(C, ev2, fr);
        tk_ir *w = ir_new(C, IR_BLOCK, ty_void(), line);
        ir_push(C, w, ir_assign(C, bpack, ir_i64(C, 0, line)));
        ir_push(C, w, iff2);
        ir_push(C, w, pf);
        ir_push(C, w, ev2);
        *wrap = w;
    }
    /* the parallel loop over panels, each a call or its rows as written */
    tk_rows_panels(C, S, pf, ib, i0, i1, P_ROWS, NULL, cond, then);
    return 1;
}
