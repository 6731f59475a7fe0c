/*
 * tack_private.h -- entry points libtack exports but does not install.
 *
 * The run-time compilers' own calls, NVRTC (backends/cuda/nvrtc.c) and
 * hiprtc (backends/hip/hiprtc.c), are how the CUDA and HIP backends build a
 * kernel; they are exported (the tack_ prefix, TACK_API) so that the C tests
 * and the Python extension's test hooks (src/python/cuda.c, hip.c:
 * _core._nvrtc_compile, _core._hiprtc_compile) can compile GPU source
 * without a GPU.  They are no promise to users: the installed headers
 * (include/) do not declare them, and this folder is on the include path of
 * the core, the C tests and the extension only (CMakeLists.txt).
 * docs/design/decisions.md, "Exported, not installed", has the why.
 */
#ifndef TACK_PRIVATE_H
#define TACK_PRIVATE_H

#include <stddef.h>

#include "tack.h"

/* ------------------------------------------------------------------ CUDA */
/* Compile CUDA C++ source to PTX with NVRTC (loaded at run time; no GPU is
 * needed) for compute capability major.minor.  flags: 0 for IEEE arithmetic
 * (no fused multiply-add, correctly rounded division and sqrt), or
 * TACK_NVRTC_FAST_MATH (--use_fast_math: fused multiply-adds, approximate
 * division, sqrt and transcendentals, denormals flushed); with
 * TACK_NVRTC_FTZ (--ftz=true), f32 subnormals flush to zero (a
 * flush_denormals kernel).  On success *ptx
 * is a string to release with tack_free.  TACK_ERR_COMPILE carries NVRTC's
 * log; TACK_ERR_DEVICE says that NVRTC is missing. */
#define TACK_NVRTC_FAST_MATH 1u
#define TACK_NVRTC_FTZ 2u
TACK_API tack_status tack_nvrtc_compile(const char *source, const char *name, int major, int minor,
                                        unsigned flags, char **ptx);
/* NVRTC's version as major*1000 + minor*10, or 0 when it cannot be loaded. */
TACK_API int tack_nvrtc_version(void);

/* ------------------------------------------------------------------- HIP */
/* Compile HIP C++ source to a code object with hiprtc (loaded at run time;
 * no GPU is needed) for the AMD architecture `arch` as gcnArchName names it
 * ("gfx90a", "gfx1030:xnack-").  flags: 0 for IEEE arithmetic (no fused
 * multiply-add), or TACK_HIPRTC_FAST_MATH; with TACK_HIPRTC_WAVE64 or
 * TACK_HIPRTC_WAVE32 for an architecture that runs either wavefront size
 * (RDNA: gfx10 and later), the size to build for (`warpSize` in the code);
 * with TACK_HIPRTC_FTZ (-fgpu-flush-denormals-to-zero), f32 subnormals
 * flush to zero (a flush_denormals kernel).
 * On success *code (release with tack_free) holds *size bytes.
 * TACK_ERR_COMPILE carries hiprtc's log; TACK_ERR_DEVICE says that hiprtc
 * is missing.  Compiles are serialized in the process (hiprtc.c says why). */
#define TACK_HIPRTC_FAST_MATH 1u
#define TACK_HIPRTC_WAVE64 2u
#define TACK_HIPRTC_WAVE32 4u
#define TACK_HIPRTC_FTZ 8u
TACK_API tack_status tack_hiprtc_compile(const char *source, const char *name, const char *arch, unsigned flags,
                                         void **code, size_t *size);
/* hiprtc's version as major*1000 + minor*10, or 0 when it cannot be loaded. */
TACK_API int tack_hiprtc_version(void);

/* ------------------------------------------------ the process, for the extension */
/* What the Python extension needs of the operating system, through the
 * platform layer (src/platform/platform.h), so that it makes no POSIX call
 * of its own and builds for Windows as for Linux and macOS:
 *   - tack_chain_sigint: Ctrl-C calls tack_interrupt() and then the handler
 *     the process had (tk_interrupt_chain; on POSIX only in front of a
 *     handler, not SIG_IGN or SIG_DFL), and a launch that runs past 10 ms
 *     puts it back in front if that handler was installed again since
 *     (the long-launch hook: tk_interrupt_rechain);
 *   - tack_process_id: this process's number (getpid, GetCurrentProcessId);
 *   - tack_at_fork_child: run fn in the child after fork() (pthread_atfork;
 *     nothing on Windows, which has no fork). */
TACK_API void tack_chain_sigint(void);
TACK_API long tack_process_id(void);
TACK_API void tack_at_fork_child(void (*fn)(void));

#endif /* TACK_PRIVATE_H */
