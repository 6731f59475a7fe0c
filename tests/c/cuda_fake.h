/*
 * cuda_fake.h -- the fake libcuda the CUDA tests build and load
 * (test_cuda_fake.c, test_cuda_blocks.c).
 *
 * FAKE is the source of a small fake driver: device memory is host memory,
 * launches only record what they were given and can write a failure into
 * the error record, and a test reads and sets its globals through dlsym.
 * A test writes it out, builds it with the C compiler (build_lib) into a
 * directory as libcuda.so.1, and runs itself again with that directory
 * first on LD_LIBRARY_PATH.  Kernels do not execute; their PTX is real.
 *
 * Blocks (tack.blocks): cuDeviceGetAttribute says 1024 threads and 49152
 * bytes of shared memory a block; cuFuncGetAttribute answers
 * CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK from func_max_threads (1024 unless
 * a test lowers it, as registers would) and CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
 * from func_shared_bytes; a launch of a larger block, or of a function whose
 * shared memory exceeds the device's, fails with CUDA_ERROR_INVALID_VALUE
 * and is counted in oversized.  launch_log lists launches as
 * "FUNCTION:GRID:BLOCK ".
 */
#ifndef TACK_TEST_CUDA_FAKE_H
#define TACK_TEST_CUDA_FAKE_H

#include <stdio.h>
#include <stdlib.h>

static const char FAKE[] =
    "#define _GNU_SOURCE\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <stdint.h>\n"
    "typedef int CUresult; typedef int CUdevice; typedef void *CUcontext, *CUstream, *CUmodule, *CUfunction, *CUevent; typedef uint64_t CUdeviceptr;\n"
    "int launches, fail_next; unsigned last_grid, last_block; uint64_t last_frame, last_slots[8];\n"
    /* blocks: what a function allows, launches refused for exceeding it, and every launch (the header says) */
    "int func_max_threads = 1024, func_shared_bytes, oversized; char launch_log[8192];\n"
    /* sticky errors: sticky_next_sync makes the next cuStreamSynchronize and
     * every later call return 700 (CUDA_ERROR_ILLEGAL_ADDRESS), as a real
     * lost context does; calls made after that are counted, frees apart */
    "int sticky_next_sync, sticky, calls_after, frees_after;\n"
    "#define ST if (sticky) { calls_after++; return 700; }\n"
    "#define STF if (sticky) { frees_after++; return 700; }\n"
    /* what is still allocated: a lost context keeps it (Tack makes no driver
     * call after the loss), and the driver frees it with the process, as the
     * destructor does here once the context is lost (LeakSanitizer) */
    "static void *live[8192]; static int nlive;\n"
    "static void *live_add(void *p) { if (p && nlive < 8192) live[nlive++] = p; return p; }\n"
    "static void live_del(void *p) { for (int i = 0; i < nlive; i++) if (live[i] == p) { live[i] = live[--nlive]; return; } }\n"
    "__attribute__((destructor)) static void fake_teardown(void) { if (sticky) while (nlive) free(live[--nlive]); }\n"
    /* memory pools: on when FAKE_CUDA_POOLS=1 (read at device init); every
     * allocation and free is counted by allocator, a free through the wrong
     * one is counted as mismatched, and async_fail makes the next
     * cuMemAllocAsync return that CUresult instead */
    "int async_calls, pool_allocs, pool_frees, plain_allocs, plain_frees, mismatched_frees, async_fail;\n"
    "static int pools_on(void) { const char *e = getenv(\"FAKE_CUDA_POOLS\"); return e && *e == '1'; }\n"
    "static uint64_t pooled[4096]; static int npooled;\n"
    "static int take_pooled(uint64_t p) { for (int i = 0; i < npooled; i++) if (pooled[i] == p) { pooled[i] = pooled[--npooled]; return 1; } return 0; }\n"
    "CUresult cuInit(unsigned f) { ST return 0; }\n"
    /* versions: FAKE_CUDA_VERSION is the driver's CUDA version (13000 unless
     * set), FAKE_CUDA_CC the GPU's compute capability as major*10 + minor (90) */
    "static int env_int(const char *n, int dflt) { const char *e = getenv(n); return e && *e ? atoi(e) : dflt; }\n"
    "CUresult cuDriverGetVersion(int *v) { ST *v = env_int(\"FAKE_CUDA_VERSION\", 13000); return 0; }\n"
    "CUresult cuDeviceGetCount(int *n) { ST *n = 1; return 0; }\n"
    "CUresult cuDeviceGet(CUdevice *d, int o) { ST *d = o; return 0; }\n"
    "CUresult cuDeviceGetName(char *n, int l, CUdevice d) { ST snprintf(n, l, \"Fake GPU\"); return 0; }\n"
    "CUresult cuDeviceGetAttribute(int *v, int a, CUdevice d) { ST int cc = env_int(\"FAKE_CUDA_CC\", 90);\n"
    "  *v = a == 75 ? cc / 10 : a == 76 ? cc % 10 : a == 16 ? 4 : a == 39 ? 2048 : a == 115 ? pools_on() : a == 1 ? 1024 : a == 8 ? 49152 : 0; return 0; }\n"
    "static int ctxobj;\n"
    "CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { ST *c = &ctxobj; return 0; }\n"
    "CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { ST return 0; }\n"
    /* contexts: a stack per process (the tests are single-threaded); pushes
     * counts cuCtxPushCurrent calls */
    "int pushes; static int depth; static CUcontext stack[64];\n"
    "CUresult cuCtxPushCurrent_v2(CUcontext c) { depth++; pushes++; ST stack[depth & 63] = c; return 0; }\n"
    "CUresult cuCtxPopCurrent_v2(CUcontext *c) { depth--; if (c) *c = &ctxobj; ST return 0; }\n"
    "CUresult cuCtxGetCurrent(CUcontext *c) { ST *c = depth > 0 ? stack[depth & 63] : NULL; return 0; }\n"
    "int fake_depth(void) { return depth; }\n"
    /* the order of synchronizing calls, as text: \"sync ctxsync record(S) wait(S,E)...\" */
    "char order[8192]; static int nev;\n"
    "static void note(const char *w) { size_t n = strlen(order); if (n + strlen(w) + 2 < sizeof order) snprintf(order + n, sizeof order - n, \"%s \", w); }\n"
    "CUresult cuCtxSynchronize(void) { ST note(\"ctxsync\"); return 0; }\n"
    /* graphs: while a stream is captured (one at a time), launches, device
     * copies and memsets queued on it become nodes instead of running, and
     * what would wait for it or read it on the host is refused and counted
     * in capture_misuse (Tack must never do it); cuGraphLaunch runs the
     * nodes in order: a launch counts in launches, and each replayed launch
     * appends \"ID:FUNCTION\" (its program id, slot 2) to replay_log.
     * graphs_live and execs_live count what is not destroyed yet. */
    "CUstream capturing, last_stream; int capture_mode = -1, capture_misuse, graphs_live, execs_live, graph_launches;\n"
    "char replay_log[8192];\n"
    "typedef struct { int kind; const char *fn; uint64_t slots[8]; unsigned grid; CUdeviceptr d, s; size_t n; unsigned v; } gnode;\n"
    "typedef struct { gnode *nodes; int n; } fgraph;\n"
    "static fgraph *capture_graph;\n"
    "static CUresult add_node(int kind, const char *fn, const uint64_t *slots, unsigned grid, CUdeviceptr d, CUdeviceptr s, size_t n, unsigned v) {\n"
    "  fgraph *g = capture_graph; gnode *m = realloc(g->nodes, (size_t)(g->n + 1) * sizeof *m); if (!m) return 2;\n"
    "  g->nodes = m; gnode *x = &m[g->n++]; memset(x, 0, sizeof *x); x->kind = kind; x->fn = fn; x->grid = grid; x->d = d; x->s = s; x->n = n; x->v = v;\n"
    "  if (slots) memcpy(x->slots, slots, sizeof x->slots); return 0; }\n"
    "CUresult cuStreamBeginCapture_v2(CUstream s, int mode) { ST if (capturing) return 900; capturing = s; capture_mode = mode; capture_graph = calloc(1, sizeof *capture_graph); note(\"begin\"); return 0; }\n"
    "CUresult cuStreamEndCapture(CUstream s, void **g) { ST if (!capturing || s != capturing) return 901; *g = capture_graph; capture_graph = NULL; capturing = NULL; graphs_live++; note(\"end\"); return 0; }\n"
    "static fgraph *dup_graph(const fgraph *x) { fgraph *y = calloc(1, sizeof *y); y->n = x->n; y->nodes = malloc((size_t)x->n * sizeof *y->nodes + 1); if (x->n) memcpy(y->nodes, x->nodes, (size_t)x->n * sizeof *y->nodes); return y; }\n"
    "CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { ST *e = dup_graph(g); execs_live++; return 0; }\n"
    "CUresult cuGraphDestroy(void *g) { fgraph *x = g; free(x->nodes); free(x); graphs_live--; return 0; }\n"
    "CUresult cuGraphExecDestroy(void *e) { fgraph *x = e; free(x->nodes); free(x); execs_live--; return 0; }\n"
    "CUresult cuGraphLaunch(void *e, CUstream s) { ST fgraph *x = e; graph_launches++;\n"
    "  char w[40]; snprintf(w, sizeof w, \"glaunch(%lx)\", (unsigned long)(uintptr_t)s); note(w);\n"
    "  for (int i = 0; i < x->n; i++) { gnode *m = &x->nodes[i];\n"
    "    if (m->kind == 1) { launches++; last_stream = s; size_t k = strlen(replay_log);\n"
    "      if (k + 48 < sizeof replay_log) snprintf(replay_log + k, sizeof replay_log - k, \"%llu:%s \", (unsigned long long)m->slots[2], m->fn); }\n"
    "    else if (m->kind == 2) memmove((void *)(uintptr_t)m->d, (void *)(uintptr_t)m->s, m->n);\n"
    "    else for (size_t j = 0; j < m->n; j++) memcpy((char *)(uintptr_t)m->d + j * m->s, &m->v, m->s); }\n"
    "  return 0; }\n"
    "CUresult cuEventCreate(CUevent *e, unsigned f) { ST *e = (CUevent)(uintptr_t)(0x1000 + ++nev); char w[40]; snprintf(w, sizeof w, \"create(%u)\", f); note(w); return 0; }\n"
    "CUresult cuEventRecord(CUevent e, CUstream s) { ST if (s && s == capturing) { capture_misuse++; return 904; } char w[64]; snprintf(w, sizeof w, \"record(%lx,%lx)\", (unsigned long)(uintptr_t)e, (unsigned long)(uintptr_t)s); note(w); return 0; }\n"
    "CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { ST if (s && s == capturing) { capture_misuse++; return 904; } char w[64]; snprintf(w, sizeof w, \"wait(%lx,%lx)\", (unsigned long)(uintptr_t)s, (unsigned long)(uintptr_t)e); note(w); return 0; }\n"
    "CUresult cuEventDestroy_v2(CUevent e) { ST char w[40]; snprintf(w, sizeof w, \"destroy(%lx)\", (unsigned long)(uintptr_t)e); note(w); return 0; }\n"
    /* streams 1 (Tack's own), 2, ...; the launch's stream kept; events 2.5 ms apart */
    "static int nstream;\n"
    "CUresult cuStreamCreate(CUstream *s, unsigned f) { ST *s = (void *)(uintptr_t)++nstream; return 0; }\n"
    "CUresult cuStreamDestroy_v2(CUstream s) { ST char w[40]; snprintf(w, sizeof w, \"sdestroy(%lx)\", (unsigned long)(uintptr_t)s); note(w); return 0; }\n"
    "CUresult cuEventQuery(CUevent e) { ST return 0; }\n"
    "CUresult cuEventSynchronize(CUevent e) { ST note(\"esync\"); return 0; }\n"
    "CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { ST *ms = 2.5f; return 0; }\n"
    "CUresult cuStreamSynchronize(CUstream s) { ST if (s && s == capturing) { capture_misuse++; return 900; } note(\"sync\"); if (sticky_next_sync) { sticky_next_sync = 0; sticky = 1; return 700; } return 0; }\n"
    "CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { ST plain_allocs++; *p = (CUdeviceptr)(uintptr_t)live_add(calloc(1, n)); return 0; }\n"
    "CUresult cuMemFree_v2(CUdeviceptr p) { STF if (take_pooled(p)) mismatched_frees++; else plain_frees++; live_del((void *)(uintptr_t)p); free((void *)(uintptr_t)p); return 0; }\n"
    "CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) { ST if (st && st == capturing) { capture_misuse++; return 900; } memcpy((void *)(uintptr_t)d, s, n); return 0; }\n"
    "CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) { ST if (st && st == capturing) { capture_misuse++; return 900; } memcpy(d, (void *)(uintptr_t)s, n); return 0; }\n"
    "CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { ST if (st && st == capturing) return add_node(2, NULL, NULL, 0, d, s, n, 0); memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }\n"
    "CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { ST if (s && s == capturing) return add_node(3, NULL, NULL, 0, d, 1, n, v); memset((void *)(uintptr_t)d, v, n); return 0; }\n"
    "CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) { ST if (s && s == capturing) return add_node(3, NULL, NULL, 0, d, 2, n, v); for (size_t i = 0; i < n; i++) ((unsigned short *)(uintptr_t)d)[i] = v; return 0; }\n"
    "CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) { ST if (s && s == capturing) return add_node(3, NULL, NULL, 0, d, 4, n, v); for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v; return 0; }\n"
    /* modules: PTX whose .version is newer than the driver's CUDA version
     * loads is refused with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222), as a
     * real driver does (CUDA 11.x: ISA 7.x; 12.0-12.5: 8.0-8.5, 12.6+: one
     * less; 13.x: 9.x); a cubin (ELF) is taken whole.  Counted per kind. */
    "int ptx_loads, ptx_refused, cubin_loads; char loaded_target[32];\n"
    "static int max_isa(void) { int v = env_int(\"FAKE_CUDA_VERSION\", 13000), M = v / 1000, m = v % 1000 / 10;\n"
    "  return M == 11 ? 70 + m : M == 12 ? (m <= 5 ? 80 + m : 79 + m) : M == 13 ? 90 + m : 0; }\n"
    "typedef struct { char *ptx; size_t len; int cubin; } mod;\n"
    "CUresult cuModuleLoadData(CUmodule *m, const void *image) {\n"
    "  const unsigned char *b = image; mod *x;\n"
    "  if (!memcmp(b, \"\\177ELF\", 4)) {\n"
    "    uint64_t shoff; uint16_t shentsize, shnum; memcpy(&shoff, b + 0x28, 8); memcpy(&shentsize, b + 0x3A, 2); memcpy(&shnum, b + 0x3C, 2);\n"
    "    x = live_add(malloc(sizeof *x)); x->len = shoff + (size_t)shentsize * shnum; x->ptx = live_add(malloc(x->len)); memcpy(x->ptx, b, x->len); x->cubin = 1;\n"
    "    cubin_loads++; *m = x; return 0; }\n"
    "  const char *ver = strstr(image, \".version \"); int M = 0, mi = 0;\n"
    "  if (!ver || sscanf(ver + 9, \"%d.%d\", &M, &mi) != 2) return 218;\n"
    "  if (M * 10 + mi > max_isa()) { ptx_refused++; return 222; }\n"
    "  const char *t = strstr(image, \".target \"); if (t) sscanf(t + 8, \"%31s\", loaded_target);\n"
    "  x = live_add(malloc(sizeof *x)); x->ptx = live_add(strdup(image)); x->len = strlen(x->ptx); x->cubin = 0; ptx_loads++; *m = x; return 0; }\n"
    /* refuse_module: refuse every module, writing a line into the JIT's error log */
    "int refuse_module;\n"
    "CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *o, void **v) { ST\n"
    "  char *log = NULL; size_t cap = 0;\n"
    "  for (unsigned i = 0; i < n; i++) { if (o[i] == 5) log = v[i]; if (o[i] == 6) cap = (size_t)(uintptr_t)v[i]; }\n"
    "  if (!refuse_module) return cuModuleLoadData(m, image);\n"
    "  if (log && cap) { int w = snprintf(log, cap, \"ptxas fatal   : fake refusal of this module\\n\"); for (unsigned i = 0; i < n; i++) if (o[i] == 6) v[i] = (void *)(uintptr_t)w; }\n"
    "  return 218; }\n"
    "CUresult cuModuleUnload(CUmodule m) { STF live_del(((mod *)m)->ptx); live_del(m); free(((mod *)m)->ptx); free(m); return 0; }\n"
    "CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { ST\n"
    "  static char names[256][32]; static int next;\n"
    "  char e[64]; snprintf(e, sizeof e, ((mod *)m)->cubin ? \"%s\" : \".entry %s(\", name);\n"
    "  if (!memmem(((mod *)m)->ptx, ((mod *)m)->len, e, strlen(e))) return 500;\n"
    "  char *slot = names[next++ % 256]; snprintf(slot, 32, \"%s\", name); *f = slot; return 0; }\n"
    "CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream s, void **params, void **extra) { ST\n"
    "  if (bx > (unsigned)func_max_threads || func_shared_bytes > 49152) { oversized++; return 1; }\n"
    "  uint64_t *slots = params[0];\n"
    "  if (s && s == capturing) return add_node(1, f, slots, gx, 0, 0, 0, 0);\n"
    "  launches++; last_stream = s;\n"
    "  { size_t k = strlen(launch_log); if (k + 64 < sizeof launch_log) snprintf(launch_log + k, sizeof launch_log - k, \"%s:%u:%u \", (const char *)f, gx, bx); }\n"
    "  last_grid = gx; last_block = bx; last_frame = slots[1]; memcpy(last_slots, slots, sizeof last_slots);\n"
    "  if (fail_next) { int32_t *r = (int32_t *)(uintptr_t)slots[0]; r[0] = 1; r[1] = 0; ((uint64_t *)r)[1] = slots[2]; ((int64_t *)r)[2] = 10; ((int64_t *)r)[3] = 10; fail_next = 0; }\n"
    "  return 0; }\n"
    /* six resident 256-thread blocks per SM (less than 2048 / 256: registers, say) */
    "CUresult cuFuncGetAttribute(int *v, int a, CUfunction f) { ST if (a == 0) *v = func_max_threads; else if (a == 1) *v = func_shared_bytes; else return 1; return 0; }\n"
    "CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t sh) { ST *n = 1536 / block; return 0; }\n"
    "CUresult cuPointerGetAttribute(void *d, int a, CUdeviceptr p) { ST return 1; }\n"
    "CUresult cuGetErrorString(CUresult r, const char **s) { *s = \"fake error\"; return 0; }\n"
    "CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { ST\n"
    "  async_calls++; if (async_fail) { int r = async_fail; async_fail = 0; return r; }\n"
    "  if (!pools_on() || npooled == 4096) return 2; /* CUDA_ERROR_NOT_SUPPORTED */\n"
    "  *p = (CUdeviceptr)(uintptr_t)live_add(calloc(1, n)); pooled[npooled++] = *p; pool_allocs++; return 0; }\n"
    "CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { STF if (take_pooled(p)) pool_frees++; else mismatched_frees++; live_del((void *)(uintptr_t)p); free((void *)(uintptr_t)p); return 0; }\n"
    "CUresult cuGetExportTable(const void **t, const void *id) { *t = NULL; return 500; }\n"
    "\n";

static int build_lib(const char *dir, const char *src, const char *cname, const char *lib) {
    char path[600], cmd[1400];
    snprintf(path, sizeof path, "%s/%s", dir, cname);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(src, f);
    fclose(f);
    const char *cc = getenv("TACK_CC");
    snprintf(cmd, sizeof cmd, "%s -shared -fPIC -o %s/%s %s -ldl", cc && *cc ? cc : "cc", dir, lib, path);
    return system(cmd) == 0;
}

#endif
