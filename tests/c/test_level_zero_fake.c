/*
 * test_level_zero_fake.c -- the Level Zero backend's host side against a
 * fake driver.
 *
 * No machine this runs on has an Intel GPU, yet nearly all of the backend
 * is host code: finding drivers and devices, the structures handed to the
 * driver (each checked for its stype), memory and copies, compiling through
 * the real libocloc to SPIR-V, the SPIR-V disk cache and its damage
 * handling, argument packing, group sizes and counts (a blocks loop's groups
 * of exactly its block size, and the errors when the device or the kernel's
 * properties cannot hold the block), the device-side error
 * record read at synchronization points, check_ptr and DLPack, the options
 * given to libocloc and the module's build flags (correctly rounded f32
 * division and sqrt asked for where the device's fp32flags offers them,
 * -cl-fast-relaxed-math instead for a fast_math kernel: the fake records
 * pBuildFlags, TACK_LOG=info logs libocloc's options, libocloc prints the
 * command of a failed compile), and a kernel from the compiler's opencl dialect built to
 * SPIR-V.  Streams, events and graphs (level_zero_stream.c) are
 * test_level_zero_streams.c's, against the same fake.  This test builds the
 * fake libze_loader.so.1 (tests/c/fake_level_zero.c: one driver, one device
 * "Fake Level Zero GPU", or two; device memory is host memory; queued work
 * runs only when the host waits for it or another list waits for its
 * events; kernels only record their arguments and group counts and can
 * write a failure into the error record; every call is logged by name,
 * what ran in order, and what the specification forbids as misuse) with
 * the C compiler and runs itself again with it first on LD_LIBRARY_PATH
 * (level_zero_fake.h, which the two tests share).
 * The log lets the test check the order of calls: zeInit
 * before anything else, the context before memory, the module before its
 * kernels, every argument set before the launch is appended, the list
 * synchronized before the error record is read, nothing after
 * zeContextDestroy.  Variants run as children: a device without fp64 (nor
 * correctly rounded f32 division, as Intel's driver reports such a GPU), a
 * driver without immediate command lists (the queue path), a driver whose
 * command lists cannot be made (the context is destroyed, the device
 * dropped), Tack without Level Zero at all, and a context adopted from
 * another library (tack_level_zero_adopt) before and after the device is
 * initialized.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "level_zero_fake.h"
#include "tack_dlpack.h"

static const char PHASES[] =
    CTX "#define ARGS __global tk_ctx *ctx, __global uchar *frame, ulong prog, __global long *out, long n, "
        "__global const long *x, long xn\n"
        "__kernel void tk_phase0(ARGS) { for (long i = get_global_id(0); i < n; i += get_global_size(0)) out[i] = 2 * x[i]; }\n"
        "__kernel void tk_phase1(ARGS) { long s = 0; for (long i = 0; i < n; i++) s += out[i]; *(__global long *)frame = s; }\n"
        "__kernel void tk_phase2(ARGS) {\n"
        "    long s = *(__global const long *)frame;\n"
        "    for (long i = get_global_id(0); i < n; i += get_global_size(0)) out[i] += s;\n"
        "}\n"
        "/* tack-grid-work: 0:s0.0, */\n" /* the first loop's extent said, the last's not */
        "/* tack-opencl: phases=psp frame=8 fp64=0 */\n";

/* ---------------------------------------------------------------- devices */
static void test_devices(tack_device *g) {
    tack_device *list[32], *again = NULL;
    int n = tack_devices(list, 32), seen = 0;
    for (int i = 0; i < n && i < 32; i++)
        if (tack_device_kind(list[i]) == TACK_DEVICE_ONEAPI) seen++;
    CHECK(seen == 1);
    CHECK(strcmp(tack_device_name(g), "level_zero:0") == 0);
    CHECK(tack_device_get("level_zero:0", &again) == TACK_OK && again == g);
    CHECK(tack_device_get("level_zero:1", &again) == TACK_ERR_DEVICE);
    CHECK(strcmp(tack_device_dialect(g), "opencl") == 0);
    CHECK(tack_device_kind(g) == TACK_DEVICE_ONEAPI && (int)TACK_DEVICE_ONEAPI == 14);
    CHECK(tack_device_threads(g) == 4); /* 1 slice x 2 subslices x 2 EUs */
    void *hdrv = NULL, *hctx = NULL, *hdev = NULL;
    CHECK(tack_level_zero_handles(g, &hdrv, &hctx, &hdev) == TACK_OK && hdrv && hctx && hdev);
    CHECK(hdev != hdrv && hctx != hdev);
    tack_device *cpu = NULL;
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK && tack_level_zero_handles(cpu, &hdrv, &hctx, &hdev) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "'cpu' is not a Level Zero device") != NULL);
    /* zeInit first, then the drivers, their devices, the context, the command list */
    long init = at("zeInit", 0), drv = at("zeDriverGet", 0), devget = at("zeDeviceGet", 0),
         ctx = at("zeContextCreate", 0), imm = at("zeCommandListCreateImmediate", 0);
    CHECK(init == 0 && drv > init && devget > drv && ctx > devget && imm > ctx);
    CHECK(at("zeMemAllocDevice", 0) == -1 || at("zeMemAllocDevice", 0) > ctx);
}

/* ----------------------------------------------------------------- memory */
static void test_memory(tack_device *g, tack_device *cpu) {
    int64_t n = 1000;
    float host[1000], back[1000];
    tack_array *a = NULL, *b = NULL, *c = NULL, *e = NULL;
    for (int i = 0; i < 1000; i++) host[i] = (float)i * 0.5f;
    CHECK(tack_array_empty(g, TACK_F32, 1, &n, &a) == TACK_OK);
    CHECK(tack_array_copy_from_host(a, host, sizeof host) == TACK_OK);
    memset(back, 0, sizeof back);
    CHECK(tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && memcmp(host, back, sizeof back) == 0);
    CHECK(tack_array_clone(a, NULL, &b) == TACK_OK && tack_array_copy_to_host(b, back, sizeof back) == TACK_OK &&
          memcmp(host, back, sizeof back) == 0);
    CHECK(tack_array_clone(a, cpu, &c) == TACK_OK && memcmp(tack_array_data(c), host, sizeof host) == 0);
    float v = 2.5f;
    CHECK(tack_array_fill(b, &v) == TACK_OK && tack_array_copy_to_host(b, back, sizeof back) == TACK_OK &&
          back[0] == v && back[999] == v);
    int64_t three = 3;
    tack_array *v3 = NULL;
    float tri[9] = {1, 2, 3, 1, 2, 3, 1, 2, 3}, got[9];
    CHECK(tack_array_empty(g, TACK_VEC3, 1, &three, &v3) == TACK_OK && tack_array_fill(v3, tri) == TACK_OK &&
          tack_array_copy_to_host(v3, got, sizeof got) == TACK_OK && memcmp(tri, got, sizeof got) == 0);
    int64_t zero = 0;
    CHECK(tack_array_zeros(g, TACK_F64, 1, &zero, &e) == TACK_OK);
    /* every fill and copy is followed by a barrier */
    fake_calls_clear();
    CHECK(tack_array_fill(b, &v) == TACK_OK);
    long fill = at("zeCommandListAppendMemoryFill", 0);
    CHECK(fill >= 0 && at("zeCommandListAppendBarrier", fill) > fill &&
          at("zeCommandListHostSynchronize", fill) > at("zeCommandListAppendBarrier", fill));
    /* check_ptr: our allocations (also inside them) are accepted, others refused with the address */
    tack_array *w = NULL;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &three, (char *)tack_array_data(a) + 16, 1, NULL, NULL, &w) == TACK_OK);
    tack_array_release(w);
    w = NULL;
    /* ... but not past their end: 1000 floats hold 4000 bytes */
    int64_t big = 1000;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &big, (char *)tack_array_data(a) + 16, 1, NULL, NULL, &w) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "run past the end of its allocation") && strstr(tack_last_error(), "4000 bytes"));
    CHECK(tack_array_wrap(g, TACK_F32, 1, &big, tack_array_data(a), 1, NULL, NULL, &w) == TACK_OK);
    tack_array_release(w);
    w = NULL;
    CHECK(tack_array_wrap(g, TACK_F32, 1, &three, host, 1, NULL, NULL, &w) == TACK_ERR_VALUE);
    char addr[40];
    snprintf(addr, sizeof addr, "%p", (void *)host);
    CHECK(strstr(tack_last_error(), addr) && strstr(tack_last_error(), "level_zero:0"));
    CHECK(at("zeMemGetAllocProperties", 0) >= 0);
    /* DLPack: out as kDLOneAPI on device 0, back onto level_zero:0 without a copy */
    void *m = NULL;
    CHECK(tack_array_to_dlpack(a, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    if (m) {
        DLManagedTensorVersioned *t = m;
        CHECK(t->dl_tensor.device.device_type == kDLOneAPI && t->dl_tensor.device.device_id == 0);
        CHECK(t->dl_tensor.data == tack_array_data(a));
        tack_array *in = NULL;
        CHECK(tack_array_from_dlpack(m, 1, NULL, &in) == TACK_OK);
        CHECK(in && tack_array_device(in) == g && tack_array_data(in) == tack_array_data(a));
        CHECK(in && tack_array_copy_to_host(in, back, sizeof back) == TACK_OK && memcmp(host, back, sizeof back) == 0);
        tack_array_release(in);
    }
    /* a kDLOneAPI tensor whose address is not the device's is refused (and its deleter still runs) */
    CHECK(tack_array_to_dlpack(c, 1, TACK_DLPACK_COPY_IF_NEEDED, &m) == TACK_OK);
    if (m) {
        DLManagedTensorVersioned *t = m;
        t->dl_tensor.device.device_type = kDLOneAPI;
        tack_array *in = NULL;
        CHECK(tack_array_from_dlpack(m, 1, NULL, &in) == TACK_ERR_VALUE && strstr(tack_last_error(), "level_zero:0"));
    }
    tack_array_release(a);
    tack_array_release(b);
    tack_array_release(c);
    tack_array_release(e);
    tack_array_release(v3);
}

/* tack_program_build, with what it prints on stdout (libocloc's chatter) in said. */
static tack_status build_saying(tack_program *p, tack_device *g, char *said, size_t size) {
    char path[600];
    snprintf(path, sizeof path, "%s/../stdout.log", getenv("TACK_CACHE_DIR"));
    fflush(stdout);
    int saved = dup(1), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) dup2(fd, 1);
    tack_status st = tack_program_build(p, g);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    if (fd >= 0) close(fd);
    said[0] = 0;
    FILE *r = fopen(path, "r");
    if (r) {
        size_t got = fread(said, 1, size - 1, r);
        said[got] = 0;
        fclose(r);
    }
    return st;
}

/* ----------------------------------------------------------------- launch */
static void test_launch(tack_device *g) {
    tk_pinfo saxpy_params[3] = {arr("y", TACK_F32, 1), arr("x", TACK_F32, 0), scalar("a", TACK_F32)};
    tk_pinfo phase_params[2] = {arr("out", TACK_I64, 1), arr("x", TACK_I64, 0)};
    int64_t n = 100;
    tack_array *y = NULL, *x = NULL, *o = NULL, *xi = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &y) == TACK_OK && tack_array_zeros(g, TACK_F32, 1, &n, &x) == TACK_OK);
    CHECK(tack_array_zeros(g, TACK_I64, 1, &n, &o) == TACK_OK && tack_array_zeros(g, TACK_I64, 1, &n, &xi) == TACK_OK);
    fake_calls_clear();
    tack_program *p = program("saxpy", SAXPY, 3, saxpy_params);
    CHECK(tack_program_build(p, g) == TACK_OK);
    long mod = at("zeModuleCreate", 0), kern = at("zeKernelCreate", 0);
    CHECK(mod >= 0 && kern > mod && at("zeKernelSetGroupSize", kern) > kern);
    /* the device offers correctly rounded f32 division and sqrt: the module is built asking for them */
    CHECK(strcmp(fake_build_flags(), "-ze-fp32-correctly-rounded-divide-sqrt") == 0);
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = y;
    args[1].array = x;
    args[2].scalar.f = 2.5;
    int before = fake_launches();
    fake_calls_clear();
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(fake_launches() == before + 1);
    /* every argument set (8 of them) before the append, a barrier after it, nothing waited for */
    long app = at("zeCommandListAppendLaunchKernel", 0);
    int sets = 0;
    for (long s = at("zeKernelSetArgumentValue", 0); s >= 0 && s < app; s = at("zeKernelSetArgumentValue", s + 1)) sets++;
    CHECK(app > 0 && sets == 8 && at("zeKernelSetArgumentValue", app) == -1);
    CHECK(at("zeCommandListAppendBarrier", app) > app && at("zeCommandListHostSynchronize", 0) == -1);
    int L = before;
    CHECK(strcmp(fake_launch_kernel(L), "tk_phase0") == 0 && fake_launch_nargs(L) == 8);
    CHECK(fake_launch_groups(L) == 4 * 8 && fake_launch_group_size(L) == 128); /* no extent said: units x 8 */
    for (int i = 0; i < 8; i++) CHECK(fake_launch_arg_size(L, i) == 8);
    CHECK(fake_launch_arg(L, 0) != 0 && fake_launch_arg(L, 1) == 0 && fake_launch_arg(L, 2) != 0);
    CHECK(fake_launch_arg(L, 3) == (uint64_t)(uintptr_t)tack_array_data(y) && fake_launch_arg(L, 4) == 100);
    CHECK(fake_launch_arg(L, 5) == (uint64_t)(uintptr_t)tack_array_data(x) && fake_launch_arg(L, 6) == 100);
    float twohalf = 2.5f; /* an f32 scalar travels as its own bits in the slot's low half */
    uint32_t half_bits;
    memcpy(&half_bits, &twohalf, 4);
    CHECK(fake_launch_arg(L, 7) == half_bits);
    uint64_t err_record = fake_launch_arg(L, 0), saxpy_id = fake_launch_arg(L, 2);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* integer and bool scalars travel as 64-bit integers */
    tk_pinfo int_params[3] = {arr("y", TACK_F32, 1), arr("x", TACK_F32, 0), scalar("a", TACK_I64)};
    tack_program *pi = program("saxpy", SAXPY, 3, int_params);
    CHECK(tack_program_build(pi, g) == TACK_OK);
    args[2].scalar.i = -7;
    CHECK(tack_launch(pi, args, 3) == TACK_OK && fake_launch_arg(fake_launches() - 1, 7) == (uint64_t)-7);
    CHECK(fake_launch_arg(fake_launches() - 1, 2) != saxpy_id && fake_launch_arg(fake_launches() - 1, 0) == err_record);
    tack_program_free(pi);
    /* a complex scalar takes two slots, (re, im): doubles for complex128, f32 bits for complex64 */
    for (int c = 0; c < 2; c++) {
        tk_pinfo cplx_params[3] = {arr("y", TACK_F32, 1), arr("x", TACK_F32, 0), scalar("a", c ? TACK_C64 : TACK_C128)};
        tack_program *pc = program("saxpy", SAXPY, 3, cplx_params);
        CHECK(tack_program_build(pc, g) == TACK_OK);
        args[2].scalar.z[0] = 0.1;
        args[2].scalar.z[1] = -2.5;
        CHECK(tack_launch(pc, args, 3) == TACK_OK);
        int Lc = fake_launches() - 1;
        uint64_t re = fake_launch_arg(Lc, 7), im = fake_launch_arg(Lc, 8);
        CHECK(fake_launch_nargs(Lc) == 9);
        if (c) {
            float r32, i32;
            uint32_t lo = (uint32_t)re, hi = (uint32_t)im;
            memcpy(&r32, &lo, 4);
            memcpy(&i32, &hi, 4);
            CHECK(r32 == 0.1f && i32 == -2.5f && re >> 32 == 0 && im >> 32 == 0);
        } else {
            double r64, i64;
            memcpy(&r64, &re, 8);
            memcpy(&i64, &im, 8);
            CHECK(r64 == 0.1 && i64 == -2.5);
        }
        CHECK(tack_device_synchronize(g) == TACK_OK);
        tack_program_free(pc);
    }
    /* three phases: parallel, serial (one group of one), parallel, sharing one frame; the first
     * loop's 100 iterations in one group of 128, the second's extent unsaid: units x 8 */
    tack_program *ph = program("phases", PHASES, 2, phase_params);
    CHECK(tack_program_build(ph, g) == TACK_OK);
    tack_arg pargs[2];
    memset(pargs, 0, sizeof pargs);
    pargs[0].array = o;
    pargs[1].array = xi;
    before = fake_launches();
    CHECK(tack_launch(ph, pargs, 2) == TACK_OK && fake_launches() == before + 3);
    const char *want[3] = {"tk_phase0", "tk_phase1", "tk_phase2"};
    unsigned groups[3] = {1, 1, 32}, sizes[3] = {128, 1, 128};
    for (int k = 0; k < 3; k++) {
        CHECK(strcmp(fake_launch_kernel(before + k), want[k]) == 0);
        CHECK(fake_launch_groups(before + k) == groups[k] && fake_launch_group_size(before + k) == sizes[k]);
        CHECK(fake_launch_nargs(before + k) == 7 && fake_launch_arg(before + k, 1) != 0);
        CHECK(fake_launch_arg(before + k, 1) == fake_launch_arg(before, 1));
    }
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* wrong programs are refused saying why */
    tack_program *bad = NULL;
    CHECK(tk_program_from_source("k", "cuda", SAXPY, 3, saxpy_params, 0, NULL, &bad) == TACK_OK);
    CHECK(tack_program_build(bad, g) == TACK_ERR_VALUE && strstr(tack_last_error(), "target \"opencl\""));
    tack_program_free(bad);
    bad = program("broken", BROKEN, 0, NULL);
    char said[4096];
    CHECK(build_saying(bad, g, said, sizeof said) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "kernel 'broken'") && strstr(tack_last_error(), "libocloc") &&
          strstr(tack_last_error(), "error"));
    /* libocloc prints the command of a failed compile: it was given the option */
    const char *cmd = strstr(said, "Command was: ocloc compile");
    if (cmd) CHECK(strstr(cmd, "-options \"-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt\""));
    else printf("this libocloc does not print the command of a failed compile\n");
    tack_program_free(bad);
    /* the driver refusing the SPIR-V: its build log in the error */
    *refuse_modules = 2; /* the cache entry, then the fresh compile */
    bad = program("saxpy", SAXPY, 3, saxpy_params);
    CHECK(tack_program_build(bad, g) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(), "zeModuleCreate") && strstr(tack_last_error(), "the fake driver refuses"));
    tack_program_free(bad);
    *refuse_modules = 0;
    /* failed host allocations while building leave nothing behind */
    for (int fail = 1; fail < 40; fail++) {
        tack_program *q = program("saxpy", SAXPY, 3, saxpy_params);
        failing_allocator_install(fail);
        tack_status st = tack_program_build(q, g);
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM);
        tack_program_free(q);
    }
    tack_program_free(p);
    tack_program_free(ph);
    tack_array_release(y);
    tack_array_release(x);
    tack_array_release(o);
    tack_array_release(xi);
}

/* ----------------------------------------------------------- blocks loops */
/* A parallel phase, a blocks loop over nb blocks of B work-items with a
 * shared array, and a serial phase: the layout the compiler writes for
 * `for b, t in tack.blocks(nb, B)` between two other statements.  The
 * parallel loop's extent is said as x.shape[0] * nb (a product: the
 * operator '*' inside the comment). */
#define BLOCKS_SRC(B)                                                                                                   \
    CTX "#define ARGS __global tk_ctx *ctx, __global uchar *frame, ulong prog, __global long *out, long n, "           \
        "__global const long *x, long xn, long nb\n"                                                                   \
        "__kernel void tk_phase0(ARGS) { for (long i = get_global_id(0); i < n; i += get_global_size(0)) out[i] = x[i]; }\n" \
        "__kernel void tk_phase1(ARGS) {\n"                                                                            \
        "    __local long s[" #B "];\n"                                                                               \
        "    for (ulong b = get_group_id(0); b < (ulong)nb; b += get_num_groups(0)) {\n"                               \
        "        s[get_local_id(0)] = (long)b;\n"                                                                      \
        "        barrier(CLK_LOCAL_MEM_FENCE);\n"                                                                      \
        "        if (get_local_id(0) == 0 && (long)b < n) out[b] += s[" #B " - 1];\n"                                  \
        "        barrier(CLK_LOCAL_MEM_FENCE);\n"                                                                      \
        "    }\n"                                                                                                      \
        "}\n"                                                                                                          \
        "__kernel void tk_phase2(ARGS) { if (get_global_id(0) == 0) out[0] += 1; }\n"                                  \
        "/* tack-grid-work: 0:s1.0,i2,*, 1:i2, */\n"                                                                   \
        "/* tack-opencl: phases=pbs frame=0 fp64=0 */\n"                                                              \
        "/* tack-grid-block: 1:" #B " */\n"

static void test_blocks(tack_device *g) {
    tk_pinfo params[3] = {arr("out", TACK_I64, 1), arr("x", TACK_I64, 0), scalar("nb", TACK_I64)};
    int64_t n = 100;
    tack_array *o = NULL, *x = NULL;
    CHECK(tack_array_zeros(g, TACK_I64, 1, &n, &o) == TACK_OK && tack_array_zeros(g, TACK_I64, 1, &n, &x) == TACK_OK);
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = o;
    args[1].array = x;
    args[2].scalar.i = 3;
    /* work-groups of exactly the loop's 64 work-items, one a block (nb, from the source's
     * tack-grid-work), at most units x 8 = 32; the parallel loop's 100 x nb iterations in
     * groups of 128, as many as they need, at most 32 */
    tack_program *p = program("blk", BLOCKS_SRC(64), 3, params);
    fake_calls_clear();
    CHECK(tack_program_build(p, g) == TACK_OK);
    CHECK(at("zeKernelGetProperties", 0) > 0);
    int64_t nbs[3] = {3, 100, 0};
    unsigned bgroups[3] = {3, 32, 1}; /* no blocks: still one group (the checks, the frame) */
    unsigned pgroups[3] = {3, 32, 1}; /* 300, 10000 and no iterations */
    for (int r = 0; r < 3; r++) {
        args[2].scalar.i = nbs[r];
        int before = fake_launches();
        CHECK(tack_launch(p, args, 3) == TACK_OK && fake_launches() == before + 3);
        unsigned groups[3] = {pgroups[r], bgroups[r], 1}, sizes[3] = {128, 64, 1};
        for (int k = 0; k < 3; k++) {
            char name[16];
            snprintf(name, sizeof name, "tk_phase%d", k);
            CHECK(strcmp(fake_launch_kernel(before + k), name) == 0);
            CHECK(fake_launch_groups(before + k) == groups[k] && fake_launch_group_size(before + k) == sizes[k]);
            CHECK(fake_launch_nargs(before + k) == 8 && fake_launch_arg(before + k, 7) == (uint64_t)nbs[r]);
        }
    }
    args[2].scalar.i = 3;
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
    /* blocks of 1024 on a device of groups of 512: an error naming the kernel, the block and the limit */
    p = program("blk1024", BLOCKS_SRC(1024), 3, params);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE);
    const char *e = tack_last_error();
    CHECK(strstr(e, "kernel 'blk1024'") && strstr(e, "blocks of 1024 threads") && strstr(e, "at most 512") &&
          strstr(e, "maxTotalGroupSize"));
    tack_program_free(p);
    /* a kernel whose properties allow fewer (its registers): that limit, named */
    *fake_kernel_max_group = 32;
    p = program("blk", BLOCKS_SRC(64), 3, params);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE);
    *fake_kernel_max_group = 512;
    e = tack_last_error();
    CHECK(strstr(e, "kernel 'blk'") && strstr(e, "blocks of 64 threads") && strstr(e, "at most 32") &&
          strstr(e, "maxNumSubgroups"));
    tack_program_free(p);
    /* shared arrays over the device's shared local memory */
    *fake_kernel_slm = 70000;
    p = program("blk", BLOCKS_SRC(64), 3, params);
    CHECK(tack_program_build(p, g) == TACK_ERR_VALUE);
    *fake_kernel_slm = 0;
    e = tack_last_error();
    CHECK(strstr(e, "kernel 'blk'") && strstr(e, "70000 bytes") && strstr(e, "at most 65536") &&
          strstr(e, "maxSharedLocalMemory"));
    tack_program_free(p);
    tack_array_release(o);
    tack_array_release(x);
}

/* A kernel from the compiler's opencl dialect, built through libocloc: three
 * phases (a loop, serial code, a loop) sharing a frame. */
static void test_compiled(tack_device *g) {
    tack_module_new(&tb_m);
    AT(3, 4);
    tack_node *body = BLOCK(3,
        RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), BIN(TACK_OP_ADD, SUB(NAME("a"), 1, NAME("i")), NAME("s"))))),
        ASSIGN(NAME("t"), SUB(NAME("out"), 1, INT(0))),
        RANGE1("i", INT(3), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), NAME("t")))));
    int k = FUNC(TACK_FUNC_KERNEL, "phased", "a out s", body);
    tack_argtype sig[3] = {ARR(TACK_F32, 1), ARR(TACK_F32, 1), WEAK(TACK_F64)};
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "opencl";
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 3, &o, &p) == TACK_OK);
    CHECK(p && tack_program_build(p, g) == TACK_OK);
    if (!p || !p->handle) {
        if (p) fprintf(stderr, "the build: %s\n", tack_last_error());
        tack_program_free(p);
        tack_module_free(tb_m);
        return;
    }
    int64_t n = 100;
    tack_array *a = NULL, *out = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &a) == TACK_OK && tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    tack_arg args[3];
    memset(args, 0, sizeof args);
    args[0].array = a;
    args[1].array = out;
    args[2].scalar.f = 2.0;
    int before = fake_launches();
    CHECK(tack_launch(p, args, 3) == TACK_OK && fake_launches() == before + 3);
    /* `s` is a Python float that only meets f32 values: it travels as an f32's
     * bits (weak_float.c), so the kernel needs no fp64 (DG2 has none) */
    float two = 2.0f;
    uint32_t two_bits;
    memcpy(&two_bits, &two, 4);
    uint64_t bits = two_bits;
    CHECK(strstr(p->source, "fp64=0 */") != NULL && strstr(p->source, "as_double") == NULL);
    /* the compiler wrote the loops' extents (out.shape[0], 3), and each loop runs in the groups of 128
     * it needs: one */
    CHECK(strstr(p->source, "/* tack-grid-work: 0:s1.0, 2:#3, */") != NULL);
    unsigned groups[3] = {1, 1, 1};
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "tk_phase%d", i);
        CHECK(strcmp(fake_launch_kernel(before + i), name) == 0 && fake_launch_groups(before + i) == groups[i]);
        CHECK(fake_launch_nargs(before + i) == 8 && fake_launch_arg(before + i, 7) == bits);
        CHECK(fake_launch_arg(before + i, 1) != 0 && fake_launch_arg(before + i, 3) == (uint64_t)(uintptr_t)tack_array_data(a));
    }
    *fail_next = 1;
    CHECK(tack_launch(p, args, 3) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 10 (array ") &&
          strstr(tack_last_error(), "kernel phased"));
    tack_program_free(p);
    tack_array_release(a);
    tack_array_release(out);
    tack_module_free(tb_m);
}

/* ----------------------------------------------------------------- errors */
static void test_errors(tack_device *g) {
    tk_pinfo params[2] = {arr("x", TACK_I32, 0), scalar("idx", TACK_I64)};
    tack_program *p = program("check", CHECKED, 2, params);
    CHECK(tack_program_build(p, g) == TACK_OK);
    int64_t n = 10;
    tack_array *x = NULL;
    CHECK(tack_array_zeros(g, TACK_I32, 1, &n, &x) == TACK_OK);
    tack_arg args[2];
    memset(args, 0, sizeof args);
    args[0].array = x;
    args[1].scalar.i = 3;
    /* at synchronize, once; the list is synchronized before the record is read */
    *fail_next = 1;
    fake_calls_clear();
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX);
    CHECK(strstr(tack_last_error(), "index 10 is out of bounds for axis 0 with size 10") != NULL);
    long app = at("zeCommandListAppendLaunchKernel", 0), sync = at("zeCommandListHostSynchronize", app),
         read = at("zeCommandListAppendMemoryCopy", app);
    CHECK(app >= 0 && sync > app && read > sync);
    CHECK(tack_device_synchronize(g) == TACK_OK);
    /* at a copy to the host */
    int32_t host[10];
    *fail_next = 1;
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    CHECK(tack_array_copy_to_host(x, host, sizeof host) == TACK_ERR_INDEX);
    CHECK(tack_array_copy_to_host(x, host, sizeof host) == TACK_OK);
    /* at once for an array shared with another library */
    tack_array_set_flags(x, TACK_ARRAY_SHARED);
    *fail_next = 1;
    CHECK(tack_launch(p, args, 2) == TACK_ERR_INDEX);
    CHECK(tack_launch(p, args, 2) == TACK_OK);
    tack_array_set_flags(x, 0);
    /* freed with a failure unread: the next synchronization still reports it */
    tack_program *p2 = program("check", CHECKED, 2, params);
    CHECK(tack_program_build(p2, g) == TACK_OK);
    *fail_next = 1;
    CHECK(tack_launch(p2, args, 2) == TACK_OK);
    tack_program_free(p2);
    CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX && strstr(tack_last_error(), "kernel check"));
    CHECK(tack_device_synchronize(g) == TACK_OK);
    tack_program_free(p);
    tack_array_release(x);
}

/* ------------------------------------------------------------------ cache */
static int count_entries(void) {
    char cmd[900];
    snprintf(cmd, sizeof cmd, "exit $(ls \"$TACK_CACHE_DIR\"/*.spv 2>/dev/null | wc -l)");
    int r = system(cmd);
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static void test_cache(tack_device *g) {
    tk_pinfo params[2] = {arr("x", TACK_I32, 0), scalar("idx", TACK_I64)};
    static const char SRC[] = CTX "__kernel void tk_phase0(__global tk_ctx *ctx, __global uchar *frame, ulong prog,\n"
                                  "    __global const int *x, long n, ulong i) { }\n"
                                  "/* tack-opencl: phases=p frame=0 fp64=0 */\n";
    int before = count_entries();
    tack_program *p = program("cached", SRC, 2, params);
    CHECK(tack_program_build(p, g) == TACK_OK);
    tack_program_free(p);
    CHECK(count_entries() == before + 1);
    /* a second build loads the entry (TACK_LOG=info says so) */
    char log[600];
    snprintf(log, sizeof log, "%s/../build.log", getenv("TACK_CACHE_DIR"));
    int saved = dup(2);
    for (int round = 0; round < 3; round++) {
        FILE *f = freopen(log, "w", stderr);
        (void)f;
        CHECK(tack_config_set("log", "info") == TACK_OK);
        if (round == 1)
            CHECK(system("for f in \"$TACK_CACHE_DIR\"/*.spv; do head -c 100 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done") == 0);
        p = program("cached", SRC, 2, params);
        CHECK(tack_program_build(p, g) == TACK_OK);
        tack_program_free(p);
        CHECK(tack_config_set("log", NULL) == TACK_OK);
        fflush(stderr);
        dup2(saved, 2);
        char text[4096] = "";
        FILE *r = fopen(log, "r");
        if (r) {
            size_t got = fread(text, 1, sizeof text - 1, r);
            text[got] = 0;
            fclose(r);
        }
        if (round == 1) CHECK(strstr(text, "damaged") && strstr(text, "rebuilding it") && strstr(text, "compiled kernel 'cached'"));
        else CHECK(strstr(text, "loaded kernel 'cached'") != NULL);
    }
    close(saved);
    CHECK(count_entries() == before + 1);
}

/* ---------------------------------------------------------------- fast_math */
/* tack_program_build of p with TACK_LOG=info; what it logged in text. */
static tack_status build_logged(tack_program *p, tack_device *g, char *text, size_t size) {
    char log[600];
    snprintf(log, sizeof log, "%s/../build.log", getenv("TACK_CACHE_DIR"));
    fflush(stderr);
    int saved = dup(2);
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    CHECK(tack_config_set("log", "info") == TACK_OK);
    tack_status st = tack_program_build(p, g);
    CHECK(tack_config_set("log", NULL) == TACK_OK);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    text[0] = 0;
    FILE *r = fopen(log, "r");
    if (r) {
        size_t got = fread(text, 1, size - 1, r);
        text[got] = 0;
        fclose(r);
    }
    return st;
}

/* A fast_math kernel: libocloc given -cl-fast-relaxed-math and not the
 * correctly rounded division and sqrt, the module built with the same
 * flag, its SPIR-V a cache entry of its own; a plain kernel of the same
 * source as before (`rounded`: the device offers correctly rounded f32
 * division and sqrt). */
static void test_fast_math(tack_device *g, int rounded) {
    static const char SRC[] = CTX "__kernel void tk_phase0(__global tk_ctx *ctx, __global uchar *frame, ulong prog,\n"
                                  "    __global float *y, long yn, __global const float *x, long xn) {\n"
                                  "    for (long i = get_global_id(0); i < yn; i += get_global_size(0))\n"
                                  "        y[i] = sin(x[i]) + exp(x[i]) + sqrt(x[i]) + x[i] / y[i];\n"
                                  "}\n"
                                  "/* tack-opencl: phases=p frame=0 fp64=0 */\n";
    tk_pinfo params[2] = {arr("y", TACK_F32, 1), arr("x", TACK_F32, 0)};
    char src[sizeof SRC + 40]; /* the variant's own source: the parent's entries are not this child's */
    snprintf(src, sizeof src, "/* rounded %d */\n%s", rounded, SRC);
    const char *plain_flags = rounded ? "-ze-fp32-correctly-rounded-divide-sqrt" : "";
    const char *plain_opts = rounded ? "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt" : "-cl-std=CL1.2";
    char text[4096], want[300];
    int before = count_entries();
    for (int k = 0; k < 4; k++) { /* plain, fast, fast with flush_denormals, plain again (the cache) */
        int fast = k == 1 || k == 2, flush = k == 2;
        tack_program *p = program("fm", src, 2, params);
        p->fast_math = fast;
        p->flush_denormals = flush;
        CHECK(build_logged(p, g, text, sizeof text) == TACK_OK);
        CHECK(strcmp(fake_build_flags(), fast ? "-cl-fast-relaxed-math" : plain_flags) == 0);
        if (k < 3) {
            snprintf(want, sizeof want,
                     "compiled kernel 'fm' for level_zero:0 (Fake Level Zero GPU) with options '%s%s' "
                     "and module flags '%s'",
                     fast ? "-cl-std=CL1.2 -cl-fast-relaxed-math" : plain_opts, flush ? " -cl-denorms-are-zero" : "",
                     fast ? "-cl-fast-relaxed-math" : plain_flags);
            CHECK(strstr(text, want) != NULL);
            if (!strstr(text, want)) fprintf(stderr, "wanted: %s\nlogged: %s\n", want, text);
            CHECK(count_entries() == before + k + 1); /* each a cache entry of its own */
        } else {
            CHECK(strstr(text, "loaded kernel 'fm'") != NULL && count_entries() == before + 3);
        }
        tack_program_free(p);
    }
    /* libocloc prints the command of a failed compile: the fast options */
    tack_program *bad = program("broken", BROKEN, 0, NULL);
    bad->fast_math = 1;
    char said[4096];
    CHECK(build_saying(bad, g, said, sizeof said) == TACK_ERR_COMPILE);
    const char *cmd = strstr(said, "Command was: ocloc compile");
    if (cmd) CHECK(strstr(cmd, "-options \"-cl-std=CL1.2 -cl-fast-relaxed-math\"\n"));
    tack_program_free(bad);
}

/* ----------------------------------------------------- adopting a context */
/* A context of the fake driver made as another library would, with its
 * driver and device; NULL on failure. */
static void *new_context(void **drv, void **dev) {
    uint32_t (*zinit)(uint32_t), (*zdrv)(uint32_t *, void **), (*zdev)(void *, uint32_t *, void **),
        (*zctx)(void *, const uint32_t *, void **);
    *(void **)&zinit = dlsym(fake, "zeInit");
    *(void **)&zdrv = dlsym(fake, "zeDriverGet");
    *(void **)&zdev = dlsym(fake, "zeDeviceGet");
    *(void **)&zctx = dlsym(fake, "zeContextCreate");
    uint32_t desc[8] = {0xd}, n = 1, m = 1; /* ze_context_desc_t */
    void *ctx = NULL;
    if (!zinit || !zdrv || !zdev || !zctx || zinit(0) || zdrv(&n, drv) || zdev(*drv, &m, dev) || zctx(*drv, desc, &ctx))
        return NULL;
    return ctx;
}

static const char TOO_LATE[] = "tack_level_zero_adopt: Tack has already allocated on level_zero:0 in its own context; "
                               "call tack.interop.vtk.init_level_zero() before creating any Level Zero array";

/* An allocation and (with ocloc) a module build on g land in ctx. */
static void uses_context(tack_device *g, void *ctx, int ocloc) {
    void *hdrv = NULL, *hctx = NULL, *hdev = NULL;
    CHECK(tack_level_zero_handles(g, &hdrv, &hctx, &hdev) == TACK_OK && hctx == ctx);
    CHECK(*fake_ctx_list == ctx);
    int64_t n = 16;
    int32_t host[16], back[16];
    for (int i = 0; i < 16; i++) host[i] = 7 * i;
    tack_array *a = NULL;
    CHECK(tack_array_empty(g, TACK_I32, 1, &n, &a) == TACK_OK && *fake_ctx_alloc == ctx);
    CHECK(tack_array_copy_from_host(a, host, sizeof host) == TACK_OK &&
          tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && memcmp(host, back, sizeof back) == 0);
    if (ocloc) {
        tk_pinfo params[2] = {arr("x", TACK_I32, 0), scalar("idx", TACK_I64)};
        tack_program *p = program("check", CHECKED, 2, params);
        CHECK(tack_program_build(p, g) == TACK_OK && *fake_ctx_module == ctx);
        tack_program_free(p);
    }
    tack_array_release(a);
}

/* After Tack allocated: too late; and the handles checked. */
static void test_adopt_errors(tack_device *g) {
    void *drv = NULL, *dev = NULL, *ctx = new_context(&drv, &dev), *own = NULL;
    CHECK(ctx != NULL);
    if (!ctx) return;
    CHECK(tack_level_zero_handles(g, NULL, &own, NULL) == TACK_OK && own != ctx);
    CHECK(tack_level_zero_adopt(drv, ctx, dev) == TACK_ERR_VALUE && strstr(tack_last_error(), TOO_LATE));
    void *now = NULL;
    CHECK(tack_level_zero_handles(g, NULL, &now, NULL) == TACK_OK && now == own); /* unchanged */
    CHECK(tack_level_zero_adopt(drv, NULL, dev) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "tack_level_zero_adopt: the context handle is NULL"));
    CHECK(tack_level_zero_adopt(drv, ctx, ctx) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "is not a device of driver") && strstr(tack_last_error(), "zeDeviceGet"));
    CHECK(tack_level_zero_adopt(ctx, ctx, dev) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "is not one of the Level Zero drivers"));
    uint32_t (*zdestroy)(void *);
    *(void **)&zdestroy = dlsym(fake, "zeContextDestroy");
    CHECK(zdestroy && zdestroy(ctx) == 0);
    CHECK(tack_level_zero_adopt(drv, ctx, dev) == TACK_ERR_VALUE &&
          strstr(tack_last_error(), "is not usable: zeContextGetStatus returned"));
}

/* --------------------------------------------------------------- children */
/* Adopting another library's context before Tack has looked at Level Zero:
 * Tack makes no context of its own, uses the adopted one, never destroys it. */
static int child_adopt_before(int ocloc) {
    fake = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(fake != NULL && bind_fake());
    if (!fake || !fake_ctx_list) return CHECK_SUMMARY();
    void *drv = NULL, *dev = NULL, *ctx = new_context(&drv, &dev);
    CHECK(ctx != NULL);
    fake_calls_clear();
    CHECK(tack_level_zero_adopt(drv, ctx, dev) == TACK_OK);
    CHECK(tack_level_zero_adopt(drv, ctx, dev) == TACK_OK); /* again: nothing to do */
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK);
    if (!g) return CHECK_SUMMARY();
    uses_context(g, ctx, ocloc);
    CHECK(at("zeContextCreate", 0) == -1 && at("zeContextDestroy", 0) == -1);
    /* now another context is too late */
    void *ctx2 = new_context(&drv, &dev);
    CHECK(ctx2 && tack_level_zero_adopt(drv, ctx2, dev) == TACK_ERR_VALUE && strstr(tack_last_error(), TOO_LATE));
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}

/* Adopting after the device was initialized but before anything was made on
 * it: new command lists in the adopted context, Tack's own destroyed. */
static int child_adopt_after(int ocloc) {
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK && bind_fake());
    if (!g || !fake_ctx_list) return CHECK_SUMMARY();
    void *own = NULL, *drv = NULL, *dev = NULL, *ctx = NULL;
    CHECK(tack_level_zero_handles(g, NULL, &own, NULL) == TACK_OK && own && *fake_ctx_list == own);
    CHECK((ctx = new_context(&drv, &dev)) != NULL && ctx != own);
    fake_calls_clear();
    CHECK(tack_level_zero_adopt(drv, ctx, dev) == TACK_OK);
    long made = at("zeCommandListCreateImmediate", 0), gone = at("zeContextDestroy", 0);
    CHECK(made >= 0 && gone > made && at("zeContextDestroy", gone + 1) == -1);
    uses_context(g, ctx, ocloc);
    CHECK(at("zeContextDestroy", gone + 1) == -1); /* the adopted one stays */
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}


/* Level Zero unusable: Tack runs, lists no Level Zero device and says why. */
static int child_absent(const char *why) {
    tack_device *list[32], *d = NULL;
    int n = tack_devices(list, 32);
    for (int i = 0; i < n && i < 32; i++) CHECK(tack_device_kind(list[i]) != TACK_DEVICE_ONEAPI);
    CHECK(tack_device_get("level_zero", &d) == TACK_ERR_DEVICE);
    CHECK(strstr(tack_last_error(), why) != NULL);
    if (!strstr(tack_last_error(), why)) fprintf(stderr, "the message: %s\n", tack_last_error());
    CHECK(tack_device_get("level_zero:0", &d) == TACK_ERR_DEVICE);
    return CHECK_SUMMARY();
}

/* A device without fp64: a float64 kernel is refused naming the device.
 * Such a device (as Intel's driver reports it) lacks correctly rounded f32
 * division and sqrt too: a float32 kernel is built without asking for them,
 * under its own cache key. */
static int child_nofp64(int ocloc) {
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK && bind_fake());
    if (!g) return CHECK_SUMMARY();
    tk_pinfo params[3] = {arr("y", TACK_F64, 1), arr("x", TACK_F64, 0), scalar("a", TACK_F64)};
    tack_program *p = program("saxpy", DAXPY, 3, params);
    fake_calls_clear();
    CHECK(tack_program_build(p, g) == TACK_ERR_COMPILE);
    CHECK(strstr(tack_last_error(),
                 "kernel 'saxpy' uses float64, which device 'level_zero:0' (Fake Level Zero GPU) does not support"));
    CHECK(at("zeModuleCreate", 0) == -1); /* refused before anything is compiled */
    tack_program_free(p);
    if (ocloc) {
        tk_pinfo fparams[3] = {arr("y", TACK_F32, 1), arr("x", TACK_F32, 0), scalar("a", TACK_F32)};
        int before = count_entries(); /* the parent built and stored this kernel, asking for them */
        p = program("saxpy", SAXPY, 3, fparams);
        CHECK(tack_program_build(p, g) == TACK_OK && strcmp(fake_build_flags(), "") == 0);
        CHECK(count_entries() == before + 1);
        tack_program_free(p);
        p = program("broken", BROKEN, 0, NULL);
        char said[4096];
        CHECK(build_saying(p, g, said, sizeof said) == TACK_ERR_COMPILE);
        const char *cmd = strstr(said, "Command was: ocloc compile");
        if (cmd) CHECK(strstr(cmd, "-options \"-cl-std=CL1.2\"\n"));
        tack_program_free(p);
        test_fast_math(g, 0);
    }
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}

/* No immediate lists: a queue and a regular list, executed at each wait. */
static int child_queue(int ocloc) {
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK && bind_fake());
    if (!g) return CHECK_SUMMARY();
    CHECK(at("zeCommandQueueCreate", 0) > 0 && at("zeCommandListCreate", 0) > at("zeCommandQueueCreate", 0));
    int64_t n = 64;
    int32_t host[64], back[64];
    for (int i = 0; i < 64; i++) host[i] = i * 3;
    tack_array *a = NULL, *b = NULL;
    CHECK(tack_array_empty(g, TACK_I32, 1, &n, &a) == TACK_OK && tack_array_copy_from_host(a, host, sizeof host) == TACK_OK);
    CHECK(tack_array_clone(a, NULL, &b) == TACK_OK && tack_array_copy_to_host(b, back, sizeof back) == TACK_OK &&
          memcmp(host, back, sizeof back) == 0);
    long close = at("zeCommandListClose", 0);
    CHECK(close > 0 && at("zeCommandQueueExecuteCommandLists", close) > close &&
          at("zeCommandQueueSynchronize", close) > close && at("zeCommandListReset", close) > close);
    if (ocloc) {
        tk_pinfo params[2] = {arr("x", TACK_I32, 0), scalar("idx", TACK_I64)};
        tack_program *p = program("check", CHECKED, 2, params);
        CHECK(tack_program_build(p, g) == TACK_OK);
        tack_arg args[2];
        memset(args, 0, sizeof args);
        args[0].array = a;
        *fail_next = 1;
        CHECK(tack_launch(p, args, 2) == TACK_OK);
        CHECK(tack_device_synchronize(g) == TACK_ERR_INDEX && tack_device_synchronize(g) == TACK_OK);
        tack_program_free(p);
    }
    /* streams are queues with a list each, executed and waited for at each submission: events and
     * graphs work the same (a replay's start and done events included), with no overlap */
    tack_stream *s = NULL;
    tack_event *ev = NULL;
    tack_graph *gr = NULL;
    CHECK(tack_stream_create(g, &s) == TACK_OK && tack_event_create(g, 1, &ev) == TACK_OK);
    tack_stream *was = tack_stream_use(s);
    memset(back, 0, sizeof back);
    CHECK(tack_array_copy(b, a) == TACK_OK && tack_event_record(ev, NULL) == TACK_OK);
    tack_stream_use(was);
    CHECK(tack_event_wait(ev, NULL) == TACK_OK && tack_array_copy_to_host(b, back, sizeof back) == TACK_OK &&
          memcmp(host, back, sizeof back) == 0);
    int32_t nine = 9;
    CHECK(tack_capture_begin(s) == TACK_OK && tack_array_fill(b, &nine) == TACK_OK &&
          tack_capture_end(s, &gr) == TACK_OK);
    CHECK(tack_graph_launch(gr, s) == TACK_OK && tack_graph_launch(gr, NULL) == TACK_OK);
    CHECK(tack_array_copy_to_host(b, back, sizeof back) == TACK_OK && back[0] == 9 && back[63] == 9);
    tack_graph_release(gr);
    tack_event_free(ev);
    tack_stream_release(s);
    tack_array_release(a);
    tack_array_release(b);
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}

/* No command lists at all: the device is dropped and its context destroyed last. */
static int child_nolists(void) {
    tack_device *g = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_ERR_DEVICE && bind_fake());
    CHECK(tack_device_get("cpu", &g) == TACK_OK);
    const char *log = fake_calls();
    long destroy = at("zeContextDestroy", 0);
    CHECK(at("zeContextCreate", 0) >= 0 && destroy > at("zeContextCreate", 0));
    CHECK(destroy >= 0 && log[destroy + strlen("zeContextDestroy\n")] == 0); /* nothing after it */
    CHECK_NO_MISUSE();
    return CHECK_SUMMARY();
}

int main(int argc, char **argv) {
    if (!lzf_init_exe()) return 1;
    if (argc == 3 && strcmp(argv[1], "--absent") == 0) return child_absent(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--nofp64") == 0) return child_nofp64(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "--queue") == 0) return child_queue(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "--nolists") == 0) return child_nolists();
    if (argc == 3 && strcmp(argv[1], "--adopt-before") == 0) return child_adopt_before(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "--adopt-after") == 0) return child_adopt_after(atoi(argv[2]));
    if (!getenv("TACK_FAKE_ZE_DIR")) {
        /* this machine as it is: no usable Level Zero is a clean message */
        tack_device *d = NULL;
        if (tack_device_get("level_zero", &d) != TACK_OK) {
            const char *e = tack_last_error();
            CHECK((strstr(e, "libze_loader.so.1") || strstr(e, "no Level Zero driver")) && strstr(e, "install libze1"));
        }
        char dir[] = "/tmp/tack-fakeze-XXXXXX";
        if (!lzf_build(dir)) {
            printf("cannot build the fake driver (no C compiler?): skipping\n");
            return CHECK_SUMMARY();
        }
        /* a loader that cannot load (an empty file) */
        char nolib[700], env[900];
        snprintf(nolib, sizeof nolib, "%s/nolib", dir);
        mkdir(nolib, 0700);
        snprintf(env, sizeof env, "%s/libze_loader.so.1", nolib);
        FILE *f = fopen(env, "w");
        if (f) fclose(f);
        snprintf(env, sizeof env, "LD_LIBRARY_PATH='%s'", nolib);
        CHECK(child_run(env, "--absent", "libze_loader.so.1 could not be loaded"));
        return lzf_rerun(dir, argv);
    }
    tack_device *g = NULL, *cpu = NULL;
    CHECK(tack_device_get("level_zero", &g) == TACK_OK);
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK);
    CHECK(bind_fake());
    if (g && fake) {
        int ocloc = have_ocloc();
        test_devices(g);
        test_memory(g, cpu);
        test_adopt_errors(g);
        if (ocloc) {
            test_launch(g);
            test_blocks(g);
            test_compiled(g);
            test_errors(g);
            test_cache(g);
            test_fast_math(g, 1);
        } else {
            printf("libocloc.so not usable: skipping the build, launch, error-record and cache checks\n");
        }
        CHECK_NO_MISUSE();
        CHECK(child_run("FAKE_ZE_FP64=0", "--nofp64", ocloc ? "1" : "0"));
        CHECK(child_run("FAKE_ZE_NO_IMMEDIATE=1", "--queue", ocloc ? "1" : "0"));
        CHECK(child_run("FAKE_ZE_NO_LISTS=1", "--nolists", "-"));
        CHECK(child_run("", "--adopt-before", ocloc ? "1" : "0"));
        CHECK(child_run("", "--adopt-after", ocloc ? "1" : "0"));
    }
    lzf_remove();
    return CHECK_SUMMARY();
}
