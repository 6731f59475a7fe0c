/* The C+OpenMP peer of benchmarks/rodinia.py: the CPU kernels of the Rodinia
 * suite (hotspot, hotspot3D, srad, pathfinder, nw, lud, kmeans, backprop, nn,
 * lavaMD), written here from the suite's description of each algorithm, the
 * way a C programmer would write them with OpenMP: one `parallel for` over the
 * outer index of each phase, the inner loop over the contiguous dimension so
 * that the compiler vectorizes it.  Each function is one timed call of the
 * benchmark and computes exactly what the Tack, Numba and NumPy versions in
 * rodinia.py compute (same phases, same order of the floating-point operations
 * within an element), so that results can be compared to a tight tolerance.
 *
 * Built by rodinia.py with the flags of benchmarks/peers/c_peer.py
 * (-O3 -march=native -fno-math-errno -ffp-contract=off -fopenmp) and called
 * through ctypes; OMP_NUM_THREADS sets the thread count.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

static inline i64 imin(i64 a, i64 b) { return a < b ? a : b; }
static inline i64 imax(i64 a, i64 b) { return a > b ? a : b; }

/* hotspot: `iters` explicit steps of the chip's heat equation on a rows x cols
 * grid, edges mirrored (an edge cell's missing neighbour is the cell itself).
 * t and tmp swap roles each step; the result ends in t (iters is even). */
void rd_hotspot(i64 rows, i64 cols, i64 iters, float *t, float *tmp, const float *power,
                float cap_inv, float rx_inv, float ry_inv, float rz_inv, float amb) {
    float *src = t, *dst = tmp;
    for (i64 it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
        for (i64 r = 0; r < rows; r++) {
            i64 rn = imax(r - 1, 0), rs = imin(r + 1, rows - 1);
            for (i64 c = 0; c < cols; c++) {
                i64 cw = imax(c - 1, 0), ce = imin(c + 1, cols - 1);
                float v = src[r * cols + c];
                float d = cap_inv * (power[r * cols + c]
                                     + (src[rs * cols + c] + src[rn * cols + c] - 2.0f * v) * ry_inv
                                     + (src[r * cols + ce] + src[r * cols + cw] - 2.0f * v) * rx_inv
                                     + (amb - v) * rz_inv);
                dst[r * cols + c] = v + d;
            }
        }
        float *s = src;
        src = dst;
        dst = s;
    }
}

/* hotspot3D: `iters` steps of the 7-point update on an nz x ny x nx grid,
 * edges mirrored; t and tmp swap (iters even: the result ends in t). */
void rd_hotspot3d(i64 nz, i64 ny, i64 nx, i64 iters, float *t, float *tmp, const float *power,
                  float cc, float cn, float cs, float ce, float cw, float ct, float cb,
                  float sdc, float amb) {
    float *src = t, *dst = tmp;
    for (i64 it = 0; it < iters; it++) {
#pragma omp parallel for collapse(2) schedule(static)
        for (i64 z = 0; z < nz; z++) {
            for (i64 y = 0; y < ny; y++) {
                i64 zb = imax(z - 1, 0), zt = imin(z + 1, nz - 1);
                i64 yn = imax(y - 1, 0), ys = imin(y + 1, ny - 1);
                const float *row = src + (z * ny + y) * nx;
                for (i64 x = 0; x < nx; x++) {
                    i64 xw = imax(x - 1, 0), xe = imin(x + 1, nx - 1);
                    float v = row[x];
                    dst[(z * ny + y) * nx + x] =
                        cc * v + cn * src[(z * ny + yn) * nx + x] + cs * src[(z * ny + ys) * nx + x]
                        + ce * row[xe] + cw * row[xw] + ct * src[(zt * ny + y) * nx + x]
                        + cb * src[(zb * ny + y) * nx + x] + sdc * power[(z * ny + y) * nx + x]
                        + ct * amb;
                }
            }
        }
        float *s = src;
        src = dst;
        dst = s;
    }
}

/* srad: `iters` steps of speckle-reducing anisotropic diffusion on a rows x
 * cols image J.  Each step: the image's mean and variance (a reduction, in
 * double), then the diffusion coefficient c and the four differences of every
 * pixel, then J's update from them.  Edges mirrored. */
void rd_srad(i64 rows, i64 cols, i64 iters, float lam, float *J, float *c, float *dn, float *ds,
             float *dw, float *de) {
    i64 n = rows * cols;
    for (i64 it = 0; it < iters; it++) {
        double sum = 0.0, sum2 = 0.0;
#pragma omp parallel for reduction(+ : sum, sum2) schedule(static)
        for (i64 r = 0; r < rows; r++) {
            double s = 0.0, s2 = 0.0;
            for (i64 k = 0; k < cols; k++) {
                double v = J[r * cols + k];
                s += v;
                s2 += v * v;
            }
            sum += s;
            sum2 += s2;
        }
        double mean = sum / (double)n;
        double var = sum2 / (double)n - mean * mean;
        float q0 = (float)(var / (mean * mean));
#pragma omp parallel for schedule(static)
        for (i64 r = 0; r < rows; r++) {
            i64 rn = imax(r - 1, 0), rs = imin(r + 1, rows - 1);
            for (i64 k = 0; k < cols; k++) {
                i64 kw = imax(k - 1, 0), ke = imin(k + 1, cols - 1);
                i64 i = r * cols + k;
                float jc = J[i];
                float a = J[rn * cols + k] - jc, b = J[rs * cols + k] - jc;
                float w = J[r * cols + kw] - jc, e = J[r * cols + ke] - jc;
                float g2 = (a * a + b * b + w * w + e * e) / (jc * jc);
                float l = (a + b + w + e) / jc;
                float num = 0.5f * g2 - 0.0625f * (l * l);
                float den = 1.0f + 0.25f * l;
                float qs = num / (den * den);
                float dd = (qs - q0) / (q0 * (1.0f + q0));
                float cv = 1.0f / (1.0f + dd);
                cv = cv < 0.0f ? 0.0f : (cv > 1.0f ? 1.0f : cv);
                c[i] = cv;
                dn[i] = a;
                ds[i] = b;
                dw[i] = w;
                de[i] = e;
            }
        }
#pragma omp parallel for schedule(static)
        for (i64 r = 0; r < rows; r++) {
            i64 rs = imin(r + 1, rows - 1);
            for (i64 k = 0; k < cols; k++) {
                i64 ke = imin(k + 1, cols - 1);
                i64 i = r * cols + k;
                float cc = c[i];
                float d = cc * dn[i] + c[rs * cols + k] * ds[i] + cc * dw[i] + c[r * cols + ke] * de[i];
                J[i] = J[i] + 0.25f * lam * d;
            }
        }
    }
}

/* pathfinder: the cheapest path down a rows x cols grid of weights, a step
 * moving to one of the three cells below; one row of the dynamic programme
 * at a time (src -> dst, swapped).  The costs end in `out`. */
void rd_pathfinder(i64 rows, i64 cols, const int32_t *wall, int32_t *out, int32_t *tmp) {
    memcpy(out, wall, (size_t)cols * sizeof(int32_t));
    int32_t *src = out, *dst = tmp;
    for (i64 t = 1; t < rows; t++) {
#pragma omp parallel for schedule(static)
        for (i64 k = 0; k < cols; k++) {
            int32_t m = src[k];
            int32_t l = src[imax(k - 1, 0)], r = src[imin(k + 1, cols - 1)];
            m = l < m ? l : m;
            m = r < m ? r : m;
            dst[k] = wall[t * cols + k] + m;
        }
        int32_t *s = src;
        src = dst;
        dst = s;
    }
    if (src != out)
        memcpy(out, src, (size_t)cols * sizeof(int32_t));
}

/* nw: Needleman-Wunsch scores on an (n+1) x (n+1) matrix whose first row and
 * column are set; blocks of b x b cells are filled one anti-diagonal of
 * blocks at a time, the blocks of a diagonal in parallel, each block's cells
 * row by row. */
void rd_nw(i64 n, i64 b, int32_t *score, const int32_t *ref, int32_t penalty) {
    i64 w = n + 1, nb = n / b;
    for (i64 d = 0; d < 2 * nb - 1; d++) {
        i64 lo = imax(0, d - nb + 1), hi = imin(d, nb - 1);
#pragma omp parallel for schedule(static)
        for (i64 bi = lo; bi <= hi; bi++) {
            i64 bj = d - bi;
            for (i64 i = bi * b + 1; i <= bi * b + b; i++) {
                for (i64 j = bj * b + 1; j <= bj * b + b; j++) {
                    int32_t m = score[(i - 1) * w + j - 1] + ref[i * w + j];
                    int32_t up = score[(i - 1) * w + j] - penalty, left = score[i * w + j - 1] - penalty;
                    m = up > m ? up : m;
                    m = left > m ? left : m;
                    score[i * w + j] = m;
                }
            }
        }
    }
}

/* lud: LU decomposition in place, no pivoting (the matrix is diagonally
 * dominant), right-looking: for each k, the column below the pivot is scaled
 * and the trailing rows updated, the rows in parallel. */
void rd_lud(i64 n, float *a) {
    for (i64 k = 0; k < n - 1; k++) {
        float piv = a[k * n + k];
#pragma omp parallel for schedule(static)
        for (i64 i = k + 1; i < n; i++) {
            float l = a[i * n + k] / piv;
            a[i * n + k] = l;
            for (i64 j = k + 1; j < n; j++)
                a[i * n + j] = a[i * n + j] - l * a[k * n + j];
        }
    }
}

/* kmeans: one iteration: each point's nearest centre (squared distance, the
 * first on ties), then the sums of the points of each cluster and their
 * counts (partial sums per thread, added at the end). */
void rd_kmeans(i64 n, i64 nf, i64 k, const float *feat, const float *cent, int32_t *member,
               float *sums, int32_t *counts) {
    memset(sums, 0, (size_t)(k * nf) * sizeof(float));
    memset(counts, 0, (size_t)k * sizeof(int32_t));
#pragma omp parallel
    {
        float *ps = calloc((size_t)(k * nf), sizeof(float));
        int32_t *pc = calloc((size_t)k, sizeof(int32_t));
#pragma omp for schedule(static)
        for (i64 i = 0; i < n; i++) {
            const float *p = feat + i * nf;
            float best = INFINITY;
            int32_t bi = 0;
            for (i64 c = 0; c < k; c++) {
                float d = 0.0f;
                for (i64 f = 0; f < nf; f++) {
                    float t = p[f] - cent[c * nf + f];
                    d += t * t;
                }
                if (d < best) {
                    best = d;
                    bi = (int32_t)c;
                }
            }
            member[i] = bi;
            pc[bi] += 1;
            for (i64 f = 0; f < nf; f++)
                ps[bi * nf + f] += p[f];
        }
#pragma omp critical
        {
            for (i64 q = 0; q < k * nf; q++)
                sums[q] += ps[q];
            for (i64 c = 0; c < k; c++)
                counts[c] += pc[c];
        }
        free(ps);
        free(pc);
    }
}

/* backprop: the two O(n) phases of one training step of an n -> h network:
 * the hidden layer's values (h sums over the n+1 inputs, the first a bias of
 * 1, then the logistic function), and the adjustment of the input-to-hidden
 * weights from the hidden deltas with momentum.  w and oldw are (n+1) x (h+1),
 * column 0 unused, as in the suite. */
void rd_backprop(i64 n, i64 h, const float *x, float *w, float *oldw, const float *delta,
                 float *hidden, float eta, float momentum) {
    i64 hw = h + 1;
#pragma omp parallel for schedule(static)
    for (i64 j = 1; j <= h; j++) {
        float s = 0.0f;
        for (i64 k = 0; k <= n; k++)
            s += w[k * hw + j] * x[k];
        hidden[j] = 1.0f / (1.0f + expf(-s));
    }
#pragma omp parallel for schedule(static)
    for (i64 k = 0; k <= n; k++) {
        for (i64 j = 1; j <= h; j++) {
            float nd = eta * delta[j] * x[k] + momentum * oldw[k * hw + j];
            w[k * hw + j] += nd;
            oldw[k * hw + j] = nd;
        }
    }
}

/* nn: the distance of every record (lat, lng) to the target point. */
void rd_nn(i64 n, const float *loc, float lat, float lng, float *dist) {
#pragma omp parallel for schedule(static)
    for (i64 i = 0; i < n; i++) {
        float a = loc[2 * i] - lat, b = loc[2 * i + 1] - lng;
        dist[i] = sqrtf(a * a + b * b);
    }
}

/* lavaMD: particles in a cube of nb^3 boxes, np per box; each particle's
 * potential and force from every particle of its own and its neighbouring
 * boxes (up to 27), through exp(-a2 * r2).  pos is (boxes*np) x 4 (v, x, y, z),
 * q the charges, fv the result, same layout as pos. */
void rd_lavamd(i64 nb, i64 np, float a2, const float *pos, const float *q, float *fv) {
    i64 nboxes = nb * nb * nb;
#pragma omp parallel for schedule(static)
    for (i64 bx = 0; bx < nboxes; bx++) {
        i64 z = bx / (nb * nb), y = (bx / nb) % nb, x = bx % nb;
        for (i64 i = bx * np; i < bx * np + np; i++) {
            float pv = pos[4 * i], px = pos[4 * i + 1], py = pos[4 * i + 2], pz = pos[4 * i + 3];
            float av = 0.0f, ax = 0.0f, ay = 0.0f, az = 0.0f;
            for (i64 dz = -1; dz <= 1; dz++)
                for (i64 dy = -1; dy <= 1; dy++)
                    for (i64 dx = -1; dx <= 1; dx++) {
                        i64 zz = z + dz, yy = y + dy, xx = x + dx;
                        if (zz < 0 || zz >= nb || yy < 0 || yy >= nb || xx < 0 || xx >= nb)
                            continue;
                        i64 nbx = (zz * nb + yy) * nb + xx;
                        for (i64 j = nbx * np; j < nbx * np + np; j++) {
                            float r2 = pv + pos[4 * j] - (px * pos[4 * j + 1] + py * pos[4 * j + 2]
                                                         + pz * pos[4 * j + 3]);
                            float u2 = a2 * r2;
                            float vij = expf(-u2);
                            float fs = 2.0f * vij;
                            float qj = q[j];
                            av += qj * vij;
                            ax += qj * (fs * (px - pos[4 * j + 1]));
                            ay += qj * (fs * (py - pos[4 * j + 2]));
                            az += qj * (fs * (pz - pos[4 * j + 3]));
                        }
                    }
            fv[4 * i] = av;
            fv[4 * i + 1] = ax;
            fv[4 * i + 2] = ay;
            fv[4 * i + 3] = az;
        }
    }
}
