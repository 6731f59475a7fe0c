/*
 * cpu_jit.h -- the CPU toolchain (platform C compiler + disk cache) and the
 * ABI between libtack and the code it generates for the CPU.
 *
 * cpu.c (the CPU backend's vtable) points its build/launch/unload entries at
 * the three functions below.  The ABI's structs (tk_argv, tk_ctx, tk_pv,
 * tk_abi) are defined once, in runtime/cpu_abi.h, which the build also copies
 * into the prelude that dialect_c.c writes into every generated file
 * (TK_CPU_ABI_VERSION is part of the cache key).  cpu_jit.c ends every
 * generated file with _Static_asserts of these structs' sizes and field
 * offsets as libtack was built, so a C compiler that lays them out otherwise
 * fails to compile the kernel instead of misreading.
 */
#ifndef TACK_CPU_JIT_H
#define TACK_CPU_JIT_H

#include <stdint.h>

#include "runtime/cpu_abi.h"
#include "runtime/runtime.h"

tack_status cpu_build(tack_device *dev, tack_program *p);
tack_status cpu_launch(tack_device *dev, tack_program *p, const tack_arg *args, int nargs);
void cpu_unload(tack_device *dev, tack_program *p);

#endif /* TACK_CPU_JIT_H */
