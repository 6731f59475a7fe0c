/* test_nvrtc.c -- the CUDA backend without a GPU: NVRTC compiles to PTX,
 * and a machine without a driver reports no CUDA device, clearly. */
#include <string.h>

#include "backends/cuda_api.h"
#include "check.h"
#include "tack.h"

static const char *saxpy =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, long long n) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

int main(void)
{
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
