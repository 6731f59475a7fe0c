/*
 * fpmode.c -- flush-to-zero for the threads that run a flush_denormals
 * kernel.
 *
 * A subnormal float (below 2^-126 in f32, 2^-1022 in f64) costs the x86 FPU
 * a microcode assist on every operation that reads or makes one: 50 to 150
 * cycles instead of 4.  A simulation whose values decay towards zero (a
 * reaction-diffusion front, a damped wave, an IIR filter) fills its arrays
 * with them and runs several times slower, for digits below 1e-38 that
 * nobody reads.  The hardware answer is a mode bit per thread: on x86, the
 * MXCSR's FTZ (bit 15: subnormal results become 0) and DAZ (bit 6:
 * subnormal operands read as 0); on aarch64, FPCR.FZ (bit 24: both).
 *
 * The mode belongs to a thread, and the process's other code expects the
 * default (NumPy's results, Python's floats).  So a kernel compiled with
 * flush_denormals sets it only while it runs: cpu_jit.c around the entry
 * function on the calling thread, pool.c around each piece a worker runs
 * for it, each putting back the bits it found.  The kernel's code returns
 * on every path -- a failed check and an interrupt set a flag and return --
 * so the bits are always put back.
 *
 * A new thread inherits the mode of the thread that creates it, and the
 * pool starts on the first launch big enough to need it -- perhaps a
 * flush_denormals one.  So a worker clears the bits when it starts, and
 * a launch asks the pool to flush when the calling thread flushes, by the
 * kernel's option or by the program's own choice (PyTorch's
 * set_flush_denormal, a library linked with -ffast-math): a kernel's
 * pieces then run in one mode on every thread, the caller's.  -ffast-math's way (crtfastmath.o setting
 * the bits when the kernel's library loads) would change the whole process
 * for good; decisions.md says why Tack never links it.
 *
 * Elsewhere there is no portable switch: rt_flush_supported() says so and
 * the CPU backend refuses to build such a kernel rather than run it slower
 * or differently than asked.
 */
#include "runtime/runtime.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <xmmintrin.h>
#define FLUSH_BITS ((1u << 15) | (1u << 6)) /* FTZ | DAZ */

int rt_flush_supported(void) { return 1; }

rt_fpmode rt_flush_enter(void) {
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | FLUSH_BITS);
    return csr;
}

/* Only the two bits go back: the exception flags the kernel raised stay
 * raised, as they would have without the mode. */
void rt_flush_leave(rt_fpmode saved) { _mm_setcsr((_mm_getcsr() & ~FLUSH_BITS) | ((unsigned)saved & FLUSH_BITS)); }

int rt_flush_active(void) { return (_mm_getcsr() & FLUSH_BITS) == FLUSH_BITS; }

void rt_flush_off(void) { _mm_setcsr(_mm_getcsr() & ~FLUSH_BITS); }

#elif defined(__aarch64__)
#define FLUSH_BITS (1ull << 24) /* FPCR.FZ */

static rt_fpmode get_fpcr(void) {
    rt_fpmode v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    return v;
}

static void set_fpcr(rt_fpmode v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v)); }

int rt_flush_supported(void) { return 1; }

rt_fpmode rt_flush_enter(void) {
    rt_fpmode v = get_fpcr();
    set_fpcr(v | FLUSH_BITS);
    return v;
}

void rt_flush_leave(rt_fpmode saved) { set_fpcr((get_fpcr() & ~FLUSH_BITS) | (saved & FLUSH_BITS)); }

int rt_flush_active(void) { return (get_fpcr() & FLUSH_BITS) != 0; }

void rt_flush_off(void) { set_fpcr(get_fpcr() & ~FLUSH_BITS); }

#else
int rt_flush_supported(void) { return 0; }
rt_fpmode rt_flush_enter(void) { return 0; }
void rt_flush_leave(rt_fpmode saved) { (void)saved; }
int rt_flush_active(void) { return 0; }
void rt_flush_off(void) {}
#endif

/* The public switch (include/tack.h), for a kernel run as Python: the same
 * bits, on the calling thread only (debug mode runs no pool). */
TACK_API tack_status tack_flush_denormals_enter(unsigned long long *saved) {
    if (!saved) return tack_set_error(TACK_ERR_VALUE, "tack_flush_denormals_enter: saved is NULL");
    if (!rt_flush_supported())
        return tack_set_error(TACK_ERR_VALUE, "flush_denormals=True: Tack cannot set flush-to-zero on this CPU "
                                              "(only x86-64 and aarch64)");
    *saved = rt_flush_enter();
    return TACK_OK;
}

TACK_API void tack_flush_denormals_leave(unsigned long long saved) { rt_flush_leave(saved); }
