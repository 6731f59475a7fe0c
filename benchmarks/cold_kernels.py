"""The kernels whose first call benchmarks/cold_compile.py measures.

Twenty kernels as users write them -- the loop-kernel classics (n-body,
softmax, an FFT stage, stencils, matmul, Cholesky, Floyd-Warshall, a 4-D
convolution, ...), each in the form a user ports it to Tack: a parallel
outer loop, serial inner loops, reductions with `+=`, `tack.random`, vec3
arrays, atomics, a @tack.func.  Each entry of KERNELS is `name -> make`,
where `make()` returns the kernel and its arguments (small: the launch is a
few milliseconds at most, so a first call is its compile).
"""

from __future__ import annotations

import math

import numpy as np

import tack


@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] += a * x[i]


@tack.kernel
def softmax(x, out):
    for i in range(x.shape[0]):
        m = x[i, 0]
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(x.shape[1]):
            e = math.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(x.shape[1]):
            out[i, j] /= s


@tack.kernel
def nbody(pos, vel, mass, dt, eps):
    for i in range(pos.shape[0]):
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(pos.shape[0]):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + eps
            inv = 1.0 / (r2 * math.sqrt(r2))
            ax += mass[j] * dx * inv
            ay += mass[j] * dy * inv
            az += mass[j] * dz * inv
        vel[i, 0] += dt * ax
        vel[i, 1] += dt * ay
        vel[i, 2] += dt * az


@tack.kernel
def stockham(re, im, ore, oim, n, s):
    # one radix-2 stage of a Stockham FFT: n points, stride s
    m = n // 2
    for p in tack.independent(range(m // s)):  # each p writes its own outputs
        for q in range(s):
            ang = -2.0 * math.pi * p / (m // s * 2)
            wr = math.cos(ang)
            wi = math.sin(ang)
            ar = re[q + s * p]
            ai = im[q + s * p]
            br = re[q + s * (p + m // s)]
            bi = im[q + s * (p + m // s)]
            ore[q + s * 2 * p] = ar + br
            oim[q + s * 2 * p] = ai + bi
            dr = ar - br
            di = ai - bi
            ore[q + s * (2 * p + 1)] = dr * wr - di * wi
            oim[q + s * (2 * p + 1)] = dr * wi + di * wr


@tack.kernel
def jacobi2d(a, b):
    for i, j in tack.ndrange((1, a.shape[0] - 1), (1, a.shape[1] - 1)):
        b[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])


@tack.kernel
def heat3d(a, b, c):
    for i, j, k in tack.ndrange((1, a.shape[0] - 1), (1, a.shape[1] - 1), (1, a.shape[2] - 1)):
        b[i, j, k] = a[i, j, k] + c * (a[i - 1, j, k] + a[i + 1, j, k] + a[i, j - 1, k] + a[i, j + 1, k]
                                       + a[i, j, k - 1] + a[i, j, k + 1] - 6.0 * a[i, j, k])


@tack.kernel
def matmul(a, b, c, alpha, beta):
    for i, j in tack.ndrange(c.shape[0], c.shape[1]):
        c[i, j] *= beta
    for i in range(c.shape[0]):
        for k in range(a.shape[1]):
            t = alpha * a[i, k]
            for j in range(c.shape[1]):
                c[i, j] += t * b[k, j]


@tack.kernel
def dot(x, y, out):
    for i in range(x.shape[0]):
        out[0] += x[i] * y[i]


@tack.kernel
def row_norms(a, out):
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
        out[i] = math.sqrt(s)


@tack.kernel
def monte_carlo(seed, n, hits):
    for i in range(n):
        x = tack.random.uniform(seed, 2 * i)
        y = tack.random.uniform(seed, 2 * i + 1)
        if x * x + y * y < 1.0:
            hits[0] += 1


@tack.kernel
def cholesky(a):
    n = a.shape[0]
    for _ in range(1):  # serial: a small factorization in one thread
        for j in range(n):
            s = a[j, j]
            for k in range(j):
                s -= a[j, k] * a[j, k]
            a[j, j] = math.sqrt(s)
            for i in range(j + 1, n):
                t = a[i, j]
                for k in range(j):
                    t -= a[i, k] * a[j, k]
                a[i, j] = t / a[j, j]


@tack.kernel
def floyd_warshall(d, k):
    # one step k (the caller loops over k): row and column k do not change in it
    n = d.shape[0]
    for i, j in tack.independent(tack.ndrange(n, n)):
        via = d[i, k] + d[k, j]
        if via < d[i, j]:
            d[i, j] = via


@tack.kernel
def crc16(data, lengths, offsets, out):
    for m in range(lengths.shape[0]):
        crc = 0xFFFF
        for b in range(lengths[m]):
            crc ^= int(data[offsets[m] + b]) << 8
            for _ in range(8):
                if crc & 0x8000:
                    crc = ((crc << 1) ^ 0x1021) & 0xFFFF
                else:
                    crc = (crc << 1) & 0xFFFF
        out[m] = crc


@tack.kernel
def conv4d(x, w, y):
    # NCHW input, KCRS filters, valid padding, stride 1
    for n, k, p, q in tack.ndrange(y.shape):
        s = 0.0
        for c in range(w.shape[1]):
            for r in range(w.shape[2]):
                for t in range(w.shape[3]):
                    s += x[n, c, p + r, q + t] * w[k, c, r, t]
        y[n, k, p, q] = s


@tack.kernel
def advect_vec3(pos, vel, out, dt):
    for i in range(pos.shape[0]):
        v = vel[i]
        speed = tack.length(v)
        damp = 1.0 / (1.0 + 0.1 * speed)
        out[i] = pos[i] + v * (dt * damp)


@tack.kernel
def histogram(x, bins):
    for i in range(x.shape[0]):
        k = int(x[i] * bins.shape[0])
        if k >= 0 and k < bins.shape[0]:
            bins[k] += 1


@tack.kernel
def mandelbrot(out, x0, y0, dx, dy, max_iter):
    for i, j in tack.ndrange(out.shape):
        cr = x0 + j * dx
        ci = y0 + i * dy
        zr = 0.0
        zi = 0.0
        n = 0
        while n < max_iter and zr * zr + zi * zi < 4.0:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
        out[i, j] = n


@tack.kernel
def black_scholes(s, k, t, r, v, call):
    for i in range(s.shape[0]):
        sq = v * math.sqrt(t[i])
        d1 = (math.log(s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / sq
        d2 = d1 - sq
        n1 = 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))
        n2 = 0.5 * (1.0 + math.erf(d2 / math.sqrt(2.0)))
        call[i] = s[i] * n1 - k[i] * math.exp(-r * t[i]) * n2


@tack.func
def smooth_step(x):
    t = min(max(x, 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@tack.kernel
def blur_func(a, b):
    for i, j in tack.ndrange(a.shape):
        acc = 0.0
        for di in range(-1, 2):
            for dj in range(-1, 2):
                ii = min(max(i + di, 0), a.shape[0] - 1)
                jj = min(max(j + dj, 0), a.shape[1] - 1)
                acc += smooth_step(a[ii, jj])
        b[i, j] = acc / 9.0


@tack.kernel
def lu_row(a, k):
    n = a.shape[0]
    for i in tack.independent(range(k + 1, n)):  # row k is only read
        f = a[i, k] / a[k, k]
        a[i, k] = f
        for j in range(k + 1, n):
            a[i, j] -= f * a[k, j]


@tack.kernel
def gemver(a, u1, v1, u2, v2, x, y, beta):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] += u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(a.shape[1]):
        s = 0.0
        for j in range(a.shape[0]):
            s += beta * a[j, i] * y[j]
        x[i] += s


def _rng():
    return np.random.default_rng(0)


def _spd(n):
    m = _rng().standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _fft_args():
    n = 256
    r = _rng()
    return (r.standard_normal(n), r.standard_normal(n), np.zeros(n), np.zeros(n), n, 4)


def _crc_args():
    r = _rng()
    lengths = r.integers(1, 64, 32)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return (r.integers(0, 256, int(lengths.sum())).astype(np.uint8), lengths, offsets, np.zeros(32, np.int64))


def _vec3_args():
    r = _rng()
    return (tack.array(r.standard_normal((256, 3)).astype(np.float32), tack.vec3),
            tack.array(r.standard_normal((256, 3)).astype(np.float32), tack.vec3),
            tack.zeros(256, tack.vec3), 0.01)


KERNELS = {
    "saxpy": lambda: (saxpy, (2.0, np.ones(1000), np.zeros(1000))),
    "softmax": lambda: (softmax, (_rng().standard_normal((64, 64)), np.zeros((64, 64)))),
    "nbody": lambda: (nbody, (_rng().standard_normal((128, 3)), np.zeros((128, 3)), np.ones(128), 0.01, 1e-3)),
    "stockham": lambda: (stockham, _fft_args()),
    "jacobi2d": lambda: (jacobi2d, (_rng().standard_normal((64, 64)), np.zeros((64, 64)))),
    "heat3d": lambda: (heat3d, (_rng().standard_normal((16, 16, 16)), np.zeros((16, 16, 16)), 0.1)),
    "matmul": lambda: (matmul, (np.ones((32, 32)), np.ones((32, 32)), np.ones((32, 32)), 1.0, 0.5)),
    "dot": lambda: (dot, (np.ones(1000), np.ones(1000), np.zeros(1))),
    "row_norms": lambda: (row_norms, (np.ones((64, 64)), np.zeros(64))),
    "monte_carlo": lambda: (monte_carlo, (7, 10000, np.zeros(1, np.int64))),
    "cholesky": lambda: (cholesky, (_spd(32),)),
    "floyd_warshall": lambda: (floyd_warshall, (_rng().random((32, 32)), 3)),
    "crc16": lambda: (crc16, _crc_args()),
    "conv4d": lambda: (conv4d, (np.ones((2, 3, 10, 10)), np.ones((4, 3, 3, 3)), np.zeros((2, 4, 8, 8)))),
    "advect_vec3": lambda: (advect_vec3, _vec3_args()),
    "histogram": lambda: (histogram, (_rng().random(1000), np.zeros(16, np.int64))),
    "mandelbrot": lambda: (mandelbrot, (np.zeros((32, 32), np.int64), -2.0, -1.5, 3.0 / 32, 3.0 / 32, 50)),
    "black_scholes": lambda: (black_scholes, (np.full(100, 100.0), np.full(100, 95.0), np.full(100, 1.0), 0.01,
                                              0.2, np.zeros(100))),
    "blur_func": lambda: (blur_func, (_rng().random((32, 32)), np.zeros((32, 32)))),
    "lu_row": lambda: (lu_row, (_spd(32), 0)),
    "gemver": lambda: (gemver, (np.ones((32, 32)), *[np.ones(32)] * 4, np.zeros(32), np.ones(32), 0.5)),
}
