/*
 * test_cuda_blocks.c -- blocks loops (tack.blocks) on the CUDA backend,
 * against the fake driver (cuda_fake.h).
 *
 * A blocks loop's barriers and shared arrays count on blocks of exactly B
 * threads, so the launcher runs blocks of B, one a block of the loop (at
 * most what fills the device), and a B the compiled function cannot hold
 * must be an error Tack words, not the driver's launch failure: the
 * function's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK can be below the
 * device's 1024 (its registers), and its static shared memory can exceed
 * the device's CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK.  The fake
 * answers both attributes from globals set here and refuses (and counts)
 * a launch that exceeds them, as a driver would.  The kernel is compiled
 * from an AST through the real NVRTC; like test_cuda_fake.c, the test runs
 * itself again with the fake first on LD_LIBRARY_PATH.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cuda_fake.h"
#include "private/tack_private.h"
#include "runtime/program.h"
#include "tack.h"
#include "tack_kernel.h"
#include "tk_ast.h"

/* out[i] = 0; for b, t in blocks(nb, B): barrier(), out[b] += 1 on thread 0; then out[0] += 1 */
static tack_program *blocks_program(tack_device *g, const char *name, int B, tack_status *st) {
    AT(7, 4);
    tack_node *body = BLOCK(3, RANGE1("i", SHAPE("out", 0), BLOCK(1, ASSIGN(SUB(NAME("out"), 1, NAME("i")), FLT(0.0)))),
        BLOCKS("b", "t", NAME("nb"), B,
               BLOCK(2, EXPR(CALL("barrier", 0)),
                     IF(CMP(NAME("t"), TACK_OP_EQ, INT(0)),
                        BLOCK(1, AUG(TACK_OP_ADD, SUB(NAME("out"), 1, NAME("b")), FLT(1.0))), NULL))),
        AUG(TACK_OP_ADD, SUB(NAME("out"), 1, INT(0)), FLT(1.0)));
    int k = FUNC(TACK_FUNC_KERNEL, name, "out nb", body);
    tack_argtype sig[2] = {ARR(TACK_F32, 1), WEAK(TACK_I64)};
    tack_compile_options o;
    tack_compile_options_init(&o);
    o.target = "cuda";
    tack_program *p = NULL;
    CHECK(tack_compile(tb_m, k, sig, 2, &o, &p) == TACK_OK);
    *st = p ? tack_program_build(p, g) : TACK_ERR_VALUE;
    return p;
}

static void run(void) {
    tack_device *g = NULL;
    CHECK(tack_device_get("cuda:0", &g) == TACK_OK);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    if (!g || !lib) return;
    int *max_threads = dlsym(lib, "func_max_threads"), *shared = dlsym(lib, "func_shared_bytes");
    int *oversized = dlsym(lib, "oversized");
    char *log = dlsym(lib, "launch_log");
    tack_module_new(&tb_m);

    /* blocks of exactly 64 threads, one a block of the loop, at most 4 SMs x 1536 / 64 resident */
    tack_status st;
    tack_program *p = blocks_program(g, "blk", 64, &st);
    CHECK(st == TACK_OK);
    CHECK(p && strstr(p->source, "tack-grid-block: 1:64") && strstr(p->source, "phases=pbs"));
    int64_t n = 100;
    tack_array *out = NULL;
    CHECK(tack_array_zeros(g, TACK_F32, 1, &n, &out) == TACK_OK);
    tack_arg args[2];
    memset(args, 0, sizeof args);
    args[0].array = out;
    int64_t nbs[3] = {3, 100, 0};
    const char *want[3] = {"tk_phase0:1:256 tk_phase1:3:64 tk_phase2:1:1 ",
                           "tk_phase0:1:256 tk_phase1:96:64 tk_phase2:1:1 ",
                           "tk_phase0:1:256 tk_phase1:1:64 tk_phase2:1:1 "}; /* no blocks: still one (checks) */
    for (int r = 0; p && r < 3; r++) {
        log[0] = 0;
        args[1].scalar.i = nbs[r];
        CHECK(tack_launch(p, args, 2) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
        CHECK(strcmp(log, want[r]) == 0);
        if (strcmp(log, want[r]) != 0) printf("  launches: %s\n", log);
    }
    tack_program_free(p);

    /* a function that holds 32 threads a block (its registers): an error at build naming the kernel,
     * the block and the limit, before any launch reaches the driver */
    *max_threads = 32;
    p = blocks_program(g, "blk_regs", 64, &st);
    *max_threads = 1024;
    const char *e = tack_last_error();
    CHECK(st == TACK_ERR_VALUE && strstr(e, "kernel 'blk_regs'") && strstr(e, "blocks of 64 threads") &&
          strstr(e, "at most 32") && strstr(e, "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"));
    if (st != TACK_ERR_VALUE) printf("  build: %d %s\n", (int)st, e);
    tack_program_free(p);

    /* blocks of 1024 where the function allows 1024: built and launched */
    p = blocks_program(g, "blk1024", 1024, &st);
    CHECK(st == TACK_OK);
    log[0] = 0;
    args[1].scalar.i = 2;
    CHECK(p && tack_launch(p, args, 2) == TACK_OK && tack_device_synchronize(g) == TACK_OK);
    CHECK(strstr(log, "tk_phase1:2:1024 ") != NULL);
    tack_program_free(p);

    /* shared memory over the device's 49152 bytes a block */
    *shared = 60000;
    p = blocks_program(g, "blk_shared", 64, &st);
    *shared = 0;
    e = tack_last_error();
    CHECK(st == TACK_ERR_VALUE && strstr(e, "kernel 'blk_shared'") && strstr(e, "60000 bytes") &&
          strstr(e, "at most 49152") && strstr(e, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"));
    tack_program_free(p);

    CHECK(*oversized == 0); /* no launch the driver would refuse */
    tack_array_release(out);
    tack_module_free(tb_m);
    tb_m = NULL;
    CHECK(((int (*)(void))dlsym(lib, "fake_depth"))() == 0);
}

int main(int argc, char **argv) {
    (void)argc;
    if (getenv("TACK_FAKE_CUDA_DIR")) {
        run();
        return CHECK_SUMMARY();
    }
    if (tack_nvrtc_version() == 0) {
        printf("SKIP: test_cuda_blocks (NVRTC not found: no libnvrtc could be loaded)\n");
        return 0;
    }
    char dir[] = "/tmp/tack-fakecudablk-XXXXXX";
    if (!mkdtemp(dir) || !build_lib(dir, FAKE, "fake.c", "libcuda.so.1")) {
        printf("SKIP: test_cuda_blocks (cannot build the fake driver: no C compiler?)\n");
        return 0;
    }
    const char *old = getenv("LD_LIBRARY_PATH");
    char ld[1200], cache[600], version[16];
    snprintf(ld, sizeof ld, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", ld, 1);
    setenv("TACK_FAKE_CUDA_DIR", dir, 1);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir(cache, 0700);
    setenv("TACK_CACHE_DIR", cache, 1);
    /* a driver of NVRTC's own version: it loads what NVRTC writes */
    snprintf(version, sizeof version, "%d", tack_nvrtc_version());
    setenv("FAKE_CUDA_VERSION", version, 1);
    unsetenv("FAKE_CUDA_CC");
    unsetenv("FAKE_CUDA_POOLS");
    fflush(stdout);
    int failed = 0;
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", argv);
        perror("execv");
        _exit(1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove the fake driver's directory\n");
    printf("test_cuda_blocks: %s\n", failed ? "FAILED" : "passed");
    return failed;
}
