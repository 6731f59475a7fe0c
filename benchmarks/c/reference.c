/*
 * reference.c -- the benchmark kernels written by hand in C with OpenMP, and
 * the machine's memory bandwidth.
 *
 * This is the stand-in for what the machine can do: what a careful C
 * programmer writes and compiles with `cc -O3 -march=native -fno-math-errno
 * -ffp-contract=off -fopenmp` (no fast-math; -fno-math-errno as Tack's JIT
 * has it).  The arithmetic is the kernels': the same operations in the same
 * order, each rounded as IEEE says, as NumPy and Numba round them.  So
 * -ffp-contract=off (GCC's default in ISO C mode; in GNU mode it fuses a * b
 * + c into one FMA, which rounds once instead of twice and gives other
 * numbers) and no reassociation where the kernel does not allow it: the
 * results are then bit-equal to Tack's.  "Careful" means: restrict pointers, static scheduling, index
 * arithmetic without division where the loop structure gives it for free
 * (radius_squared and mandelbrot walk rows instead of dividing the flat index),
 * `omp simd reduction` where a reduction may be reassociated (sum, n-body's
 * inner loop), and per-thread histograms merged by an OpenMP array reduction.
 * No intrinsics, no non-temporal stores.
 *
 * The bandwidth probe times plain stores (bw_write), a copy (bw_copy) and
 * memset per thread (which uses non-temporal stores on large blocks); the loops
 * are kept as loops (GCC would turn them into memset/memcpy calls).
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#define KEEP_LOOP __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define KEEP_LOOP
#endif

int ref_threads(void) { return omp_get_max_threads(); }

void ref_saxpy(int64_t n, float a, const float *restrict x, float *restrict y) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}

/* The same values as the flat-index kernel, computed row by row. */
void ref_radius_squared(int64_t n, int64_t nx, int64_t ny, float *restrict v) {
    int64_t rows = (n + nx - 1) / nx;
    const float hx = (float)(nx - 1) * 0.5f, hy = (float)(ny - 1) * 0.5f;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float y = (float)(r % ny) - hy, z = (float)(r / ny) - 2.0f;
        float yy = y * y, zz = z * z; /* x*x + y*y + z*z adds left to right */
        int64_t lo = r * nx, hi = lo + nx < n ? lo + nx : n;
        float *restrict row = v + lo;
        for (int64_t i = 0; i < hi - lo; i++) {
            float x = (float)i - hx;
            row[i] = x * x + yy + zz;
        }
    }
}

void ref_stencil(int64_t n, float c0, float c1, const float *restrict a, float *restrict out) {
    const int64_t s1 = n * n, s2 = n;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t i = 1; i < n - 1; i++)
        for (int64_t j = 1; j < n - 1; j++) {
            const float *restrict c = a + i * s1 + j * s2;
            float *restrict o = out + i * s1 + j * s2;
            for (int64_t k = 1; k < n - 1; k++)
                o[k] = c0 * c[k] + c1 * (c[k - s1] + c[k + s1] + c[k - s2] + c[k + s2] +
                                         c[k - 1] + c[k + 1]);
        }
}

void ref_nbody(int64_t n, float eps2, const float *restrict px, const float *restrict py,
               const float *restrict pz, const float *restrict m, float *restrict ax,
               float *restrict ay, float *restrict az) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float xi = px[i], yi = py[i], zi = pz[i];
        float fx = 0.0f, fy = 0.0f, fz = 0.0f;
#pragma omp simd reduction(+ : fx, fy, fz)
        for (int64_t j = 0; j < n; j++) {
            float dx = px[j] - xi, dy = py[j] - yi, dz = pz[j] - zi;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = 1.0f / sqrtf(r2);
            float s = m[j] * inv * inv * inv;
            fx += dx * s;
            fy += dy * s;
            fz += dz * s;
        }
        ax[i] = fx;
        ay[i] = fy;
        az[i] = fz;
    }
}

void ref_mandelbrot(int64_t n, int64_t w, float x0, float y0, float dx, float dy,
                    int32_t max_iter, int32_t *restrict out) {
    int64_t h = n / w;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < h; r++) {
        const float cy = y0 + (float)r * dy;
        for (int64_t c = 0; c < w; c++) {
            const float cx = x0 + (float)c * dx;
            float x = 0.0f, y = 0.0f;
            int32_t it = 0;
            while (it < max_iter && x * x + y * y <= 4.0f) {
                float xt = x * x - y * y + cx;
                y = 2.0f * x * y + cy;
                x = xt;
                it++;
            }
            out[r * w + c] = it;
        }
    }
}

void ref_sum(int64_t n, const float *restrict x, float *restrict out) {
    float s = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++) s += x[i];
    out[0] += s;
}

void ref_histogram(int64_t n, const int32_t *restrict keys, int32_t nbins, int32_t *restrict hist) {
#pragma omp parallel for schedule(static) reduction(+ : hist[:nbins])
    for (int64_t i = 0; i < n; i++) hist[keys[i]]++;
}

void ref_normalize(int64_t n, const float *restrict v, float *restrict out) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float x = v[3 * i], y = v[3 * i + 1], z = v[3 * i + 2];
        float l = sqrtf(x * x + y * y + z * z);
        out[3 * i] = x / l;
        out[3 * i + 1] = y / l;
        out[3 * i + 2] = z / l;
    }
}

/* ------------------------------------------------ round two (issue 21) */
/* The stencil as Tack's and Numba's kernels write it: indices through locals. */
void ref_stencil_local(int64_t n0, int64_t n1, int64_t n2, const double *restrict a, double *restrict out) {
    const int64_t s0 = n1 * n2, s1 = n2;
#pragma omp parallel for schedule(static)
    for (int64_t i = 1; i < n0 - 1; i++)
        for (int64_t j = 1; j < n1 - 1; j++) {
            const double *c = a + i * s0 + j * s1;
            double *o = out + i * s0 + j * s1;
            for (int64_t k = 1; k < n2 - 1; k++)
                o[k] = c[k + s0] + c[k - s0] + c[k + s1] + c[k - s1] + c[k + 1] + c[k - 1] - 6.0 * c[k];
        }
}

/* out[i, j] = sum over the taps of img[i + di, j + dj] * w[di, dj], in that order. */
void ref_conv2d(int64_t n, int64_t t, int64_t m, const float *restrict img, const float *restrict w,
                float *restrict out) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++) {
            float acc = 0.0f;
            for (int64_t di = 0; di < t; di++)
                for (int64_t dj = 0; dj < t; dj++) acc += img[(i + di) * n + j + dj] * w[di * t + dj];
            out[i * m + j] = acc;
        }
}

/* C += A B, a row of C per iteration (i, k, j order: the j loop vectorizes). */
void ref_matmul_acc(int64_t n, int64_t kk, int64_t m, const double *restrict A, const double *restrict B,
                    double *restrict C) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < kk; k++) {
            const double a = A[i * kk + k];
            for (int64_t j = 0; j < m; j++) C[i * m + j] += a * B[k * m + j];
        }
}

void ref_hist2(int64_t n, const int32_t *restrict keys, const double *restrict w, int32_t nbins,
               int32_t *restrict counts, double *restrict sums) {
#pragma omp parallel for schedule(static) reduction(+ : counts[:nbins], sums[:nbins])
    for (int64_t i = 0; i < n; i++) {
        counts[keys[i]]++;
        sums[keys[i]] += w[i];
    }
}

/* Without -ffast-math <math.h> announces no vector variants of the C
 * library's functions, so GCC keeps one call per element here: the plain C a
 * careful programmer writes (no SVML, no hand-written vector math). */
void ref_transcendental(int64_t n, const float *restrict x, float *restrict out) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = tanhf(logf(x[i] + 1.0f) * 0.5f) + sqrtf(expf(-x[i]));
}

/* out[i] = sum of x[j] y[i - j], j <= i: iteration i costs i, so the loop
 * is split as an OpenMP programmer would split it, guided. */
void ref_triangle(int64_t n, const double *restrict x, const double *restrict y, double *restrict out) {
#pragma omp parallel for schedule(guided)
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int64_t j = 0; j <= i; j++) s += x[j] * y[i - j];
        out[i] = s;
    }
}

/* ---------------------------------------------------------------- bandwidth */
KEEP_LOOP void bw_write(int64_t n, float *restrict dst, float value) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dst[i] = value;
}

KEEP_LOOP void bw_copy(int64_t n, const float *restrict src, float *restrict dst) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

void bw_memset(int64_t n, float *restrict dst) {
#pragma omp parallel
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int64_t lo = n * t / k, hi = n * (t + 1) / k;
        memset(dst + lo, 0, (size_t)(hi - lo) * sizeof(float));
    }
}

/* The launch-overhead reference: the 1-element saxpy, serial. */
void ref_saxpy_serial(int64_t n, float a, const float *restrict x, float *restrict y) {
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
