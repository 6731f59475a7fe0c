/* test_nvrtc.c -- the CUDA backend without a GPU: NVRTC compiles to PTX,
 * and a machine without a driver reports no CUDA device, clearly. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cuda/cuda_api.h"
#include "check.h"
#include "private/tack_private.h"
#include "tack.h"

static const char *saxpy =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, long long n) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

/* Where libnvrtc is looked for (nvrtc.c), in a temporary layout: a toolkit
 * under CUDA_HOME, the pip wheel beside Tack in site-packages, an explicit
 * TACK_NVRTC_PATH; and, when none has it, an error listing every place.
 * Runs before Tack loads NVRTC itself, so that a child can load it through
 * the environment.  The handles are kept: they are all one library, and
 * unloading NVRTC would lose what it allocated for good (LeakSanitizer). */
static void search(void) {
    char tmp[] = "/tmp/tack-nvrtc-XXXXXX", homedir[1200], p[1200], q[1200], found[1200], why[2048];
    if (!mkdtemp(tmp)) return;
    /* nothing anywhere: every place is named */
    snprintf(homedir, sizeof homedir, "%s/home", tmp);
    snprintf(q, sizeof q, "%s/site/tack", tmp);
    nvrtc_where none = {NULL, homedir, "/nonexistent-cuda-path", q, 0};
    CHECK(nvrtc_open(&none, found, sizeof found, why, sizeof why) == NULL);
    char want[1300];
    snprintf(want, sizeof want, "looked in: %s/home/lib64; %s/home/lib; /nonexistent-cuda-path/lib64; "
             "/nonexistent-cuda-path/lib; %s/site/nvidia/cuda_nvrtc/lib; %s/site/nvidia/cu13/lib.", tmp, tmp, tmp, tmp);
    CHECK(strstr(why, want) != NULL);
    CHECK(strstr(why, "pip install nvidia-cuda-nvrtc-cu12") && strstr(why, "TACK_NVRTC_PATH"));
    /* an explicit path that does not load is an error, not a search elsewhere */
    nvrtc_where bad = {"/nonexistent/libnvrtc.so", NULL, NULL, NULL, 1};
    CHECK(nvrtc_open(&bad, found, sizeof found, why, sizeof why) == NULL);
    CHECK(strstr(why, "TACK_NVRTC_PATH=/nonexistent/libnvrtc.so") != NULL);
    /* the real library, found as the loader finds it */
    nvrtc_where sys = {NULL, NULL, NULL, NULL, 1};
    void *h = nvrtc_open(&sys, found, sizeof found, why, sizeof why);
    Dl_info info;
    if (!h || !dladdr(dlsym(h, "nvrtcVersion"), &info) || !info.dli_fname) {
        printf("SKIP: the NVRTC search layouts (no libnvrtc here)\n");
        snprintf(p, sizeof p, "rm -rf '%s'", tmp);
        CHECK(system(p) == 0);
        return;
    }
    char real[PATH_MAX]; /* realpath's contract: a fortified build aborts on less (seen on the H200's Ubuntu) */
    CHECK(realpath(info.dli_fname, real) != NULL);
    /* the pip wheel's layout beside Tack: site-packages/nvidia/cuda_nvrtc/lib */
    char cmd[2 * PATH_MAX + 4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/site/tack' '%s/site/nvidia/cuda_nvrtc/lib' '%s/home/lib64' && "
             "ln -s '%s' '%s/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12' && ln -s '%s' '%s/home/lib64/libnvrtc.so'",
             tmp, tmp, tmp, real, tmp, real, tmp);
    CHECK(system(cmd) == 0);
    nvrtc_where wheel = {NULL, NULL, NULL, q, 0};
    CHECK((h = nvrtc_open(&wheel, found, sizeof found, why, sizeof why)) != NULL);
    snprintf(want, sizeof want, "%s/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", tmp);
    CHECK(strcmp(found, want) == 0);
    /* CUDA_HOME comes first */
    nvrtc_where home = {NULL, none.cuda_home, NULL, q, 0};
    CHECK((h = nvrtc_open(&home, found, sizeof found, why, sizeof why)) != NULL);
    snprintf(want, sizeof want, "%s/home/lib64/libnvrtc.so", tmp);
    CHECK(strcmp(found, want) == 0);
    /* TACK_NVRTC_PATH may name a directory */
    snprintf(p, sizeof p, "%s/site/nvidia/cuda_nvrtc/lib", tmp);
    nvrtc_where dir = {p, none.cuda_home, NULL, NULL, 1};
    CHECK((h = nvrtc_open(&dir, found, sizeof found, why, sizeof why)) != NULL);
    CHECK(strncmp(found, p, strlen(p)) == 0);
    /* and through the environment: CUDA_HOME is where Tack loads it from */
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("TACK_NVRTC_PATH");
        tack_config_set("nvrtc_path", ""); /* the setting, whatever the environment gave it */
        setenv("CUDA_HOME", none.cuda_home, 1);
        const char *from = tack_nvrtc_version() ? nvrtc_loaded_from() : NULL;
        snprintf(want, sizeof want, "%s/home/lib64/", tmp);
        _exit(from && strncmp(from, want, strlen(want)) == 0 ? 0 : 1);
    }
    int status = 1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    snprintf(p, sizeof p, "rm -rf '%s'", tmp);
    CHECK(system(p) == 0);
}

int main(void)
{
    search();
    if (tack_nvrtc_version() == 0) {
        printf("SKIP: test_nvrtc, the PTX checks (NVRTC not found: no libnvrtc could be loaded)\n");
    } else {
        int archs[][2] = {{8, 0}, {9, 0}};
        for (int i = 0; i < 2; i++) {
            char *ptx = NULL;
            char target[32];
            CHECK(tack_nvrtc_compile(saxpy, "saxpy.cu", archs[i][0], archs[i][1], 0, &ptx) == TACK_OK);
            snprintf(target, sizeof target, ".target sm_%d%d", archs[i][0], archs[i][1]);
            CHECK(ptx && strstr(ptx, target) != NULL);
            CHECK(ptx && strstr(ptx, ".entry saxpy") != NULL);
            tack_free(ptx);
        }
        /* IEEE by default; TACK_NVRTC_FAST_MATH: approximate sqrt and division, denormals flushed */
        const char *root = "extern \"C\" __global__ void root(float *x, float s) { x[threadIdx.x] = sqrtf(x[threadIdx.x]) / s; }";
        char *ieee = NULL, *fast = NULL;
        CHECK(tack_nvrtc_compile(root, "root.cu", 8, 0, 0, &ieee) == TACK_OK);
        CHECK(tack_nvrtc_compile(root, "root.cu", 8, 0, TACK_NVRTC_FAST_MATH, &fast) == TACK_OK);
        CHECK(ieee && strstr(ieee, "sqrt.rn.f32") && !strstr(ieee, "sqrt.approx"));
        CHECK(fast && strstr(fast, "sqrt.approx.ftz.f32") && !strstr(fast, "sqrt.rn"));
        tack_free(ieee);
        tack_free(fast);
        char *ptx = NULL;
        CHECK(tack_nvrtc_compile("__global__ void k() { undeclared = 1; }", "bad.cu", 8, 0, 0, &ptx) ==
              TACK_ERR_COMPILE);
        CHECK(strstr(tack_last_error(), "undeclared") != NULL);
        CHECK(ptx == NULL);
        /* out of memory while reading the PTX is clean */
        failing_allocator_install(1);
        tack_status st = tack_nvrtc_compile(saxpy, "saxpy.cu", 8, 0, 0, &ptx);
        tack_set_allocator(NULL);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM);
        if (st == TACK_OK)
            tack_free(ptx);
    }
    /* Without a GPU, "cuda" is a known device that is not available. */
    tack_device *devs[8], *d = NULL;
    int n = tack_devices(devs, 8);
    int cuda_here = 0;
    for (int i = 0; i < n; i++)
        cuda_here |= tack_device_kind(devs[i]) == TACK_DEVICE_CUDA;
    if (!cuda_here) {
        CHECK(tack_device_get("cuda", &d) == TACK_ERR_DEVICE);
        CHECK(strstr(tack_last_error(), "not available") != NULL);
        CHECK(tack_device_get("cuda:3", &d) == TACK_ERR_DEVICE);
    }
    return CHECK_SUMMARY();
}
