"""Numba: ``@njit(parallel=True)`` with ``prange``, f32 throughout (np.float32
constants, so nothing is promoted to f64), no fastmath.  The histogram uses
per-thread private histograms (Numba has no atomics); the sum is a prange
reduction."""

import numpy as np

NAME, LABEL = "numba", "Numba"
_k = None


def available():
    try:
        import numba  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"numba not importable: {e}"
    return None


def setup(threads):
    import numba

    if threads:
        numba.set_num_threads(threads)


def kernels():
    global _k
    if _k is not None:
        return _k
    import math

    import numba
    from numba import njit, prange

    f32 = np.float32
    par = njit(parallel=True, cache=False)

    @par
    def saxpy(a, x, y):
        for i in prange(y.shape[0]):
            y[i] = a * x[i] + y[i]

    @par
    def radius_squared(values, nx, ny):
        hx = f32(nx - 1) * f32(0.5)
        hy = f32(ny - 1) * f32(0.5)
        for i in prange(values.shape[0]):
            x = f32(i % nx) - hx
            y = f32((i // nx) % ny) - hy
            z = f32(i // (nx * ny)) - f32(2.0)
            values[i] = x * x + y * y + z * z

    @par
    def stencil(a, out, c0, c1):
        n = a.shape[0]
        for i in prange(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    out[i, j, k] = c0 * a[i, j, k] + c1 * (
                        a[i - 1, j, k] + a[i + 1, j, k] + a[i, j - 1, k] + a[i, j + 1, k]
                        + a[i, j, k - 1] + a[i, j, k + 1])

    @par
    def nbody(px, py, pz, m, ax, ay, az, eps2):
        n = px.shape[0]
        for i in prange(n):
            xi, yi, zi = px[i], py[i], pz[i]
            fx = f32(0.0)
            fy = f32(0.0)
            fz = f32(0.0)
            for j in range(n):
                dx = px[j] - xi
                dy = py[j] - yi
                dz = pz[j] - zi
                r2 = dx * dx + dy * dy + dz * dz + eps2
                inv = f32(1.0) / math.sqrt(r2)
                s = m[j] * inv * inv * inv
                fx += dx * s
                fy += dy * s
                fz += dz * s
            ax[i] = fx
            ay[i] = fy
            az[i] = fz

    @par
    def mandelbrot(out, w, x0, y0, dx, dy, max_iter):
        for i in prange(out.shape[0]):
            cx = x0 + f32(i % w) * dx
            cy = y0 + f32(i // w) * dy
            x = f32(0.0)
            y = f32(0.0)
            it = 0
            while it < max_iter and x * x + y * y <= f32(4.0):
                xt = x * x - y * y + cx
                y = f32(2.0) * x * y + cy
                x = xt
                it += 1
            out[i] = it

    @par
    def sum_(x):
        s = f32(0.0)
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    @par
    def histogram(keys, hist, nthreads):
        n = keys.shape[0]
        nb = hist.shape[0]
        local = np.zeros((nthreads, nb), np.int32)
        for t in prange(nthreads):
            lo = n * t // nthreads
            hi = n * (t + 1) // nthreads
            for i in range(lo, hi):
                local[t, keys[i]] += 1
        for t in range(nthreads):
            for b in range(nb):
                hist[b] += local[t, b]

    @par
    def normalize(v, out):
        for i in prange(v.shape[0]):
            x, y, z = v[i, 0], v[i, 1], v[i, 2]
            length = math.sqrt(x * x + y * y + z * z)
            out[i, 0] = x / length
            out[i, 1] = y / length
            out[i, 2] = z / length

    @par
    def stencil_local(a, out):
        for i0 in prange(a.shape[0] - 2):
            for j0 in range(a.shape[1] - 2):
                for k0 in range(a.shape[2] - 2):
                    i = i0 + 1
                    j = j0 + 1
                    k = k0 + 1
                    out[i, j, k] = (a[i + 1, j, k] + a[i - 1, j, k] + a[i, j + 1, k] + a[i, j - 1, k]
                                    + a[i, j, k + 1] + a[i, j, k - 1] - 6.0 * a[i, j, k])

    @par
    def conv2d(img, w, out):
        for i in prange(out.shape[0]):
            for j in range(out.shape[1]):
                acc = f32(0.0)
                for di in range(w.shape[0]):
                    for dj in range(w.shape[1]):
                        acc += img[i + di, j + dj] * w[di, dj]
                out[i, j] = acc

    @par
    def matmul_acc(A, B, C):
        for i in prange(A.shape[0]):
            for k in range(A.shape[1]):
                a = A[i, k]
                for j in range(B.shape[1]):
                    C[i, j] += a * B[k, j]

    @par
    def hist2(keys, w, counts, sums, nthreads):
        n = keys.shape[0]
        nb = counts.shape[0]
        lc = np.zeros((nthreads, nb), np.int32)
        ls = np.zeros((nthreads, nb), np.float64)
        for t in prange(nthreads):
            lo = n * t // nthreads
            hi = n * (t + 1) // nthreads
            for i in range(lo, hi):
                lc[t, keys[i]] += 1
                ls[t, keys[i]] += w[i]
        for t in range(nthreads):
            for b in range(nb):
                counts[b] += lc[t, b]
                sums[b] += ls[t, b]

    @par
    def triangle(x, y, out):
        for i in prange(out.shape[0]):
            s = 0.0
            for j in range(i + 1):
                s += x[j] * y[i - j]
            out[i] = s

    @njit(cache=False)
    def saxpy_serial(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    @par
    def transcendental(x, out):
        for i in prange(x.shape[0]):
            out[i] = math.tanh(math.log(x[i] + np.float32(1.0)) * np.float32(0.5)) + math.sqrt(math.exp(-x[i]))

    _k = dict(saxpy=saxpy, radius_squared=radius_squared, stencil=stencil, nbody=nbody,
              mandelbrot=mandelbrot, sum=sum_, histogram=histogram, normalize=normalize,
              stencil_local=stencil_local, conv2d=conv2d, matmul_acc=matmul_acc, hist2=hist2,
              triangle=triangle, saxpy_serial=saxpy_serial, numba=numba, transcendental=transcendental)
    return _k


def prepare(kernel, inp):
    k = kernels()
    f32 = np.float32
    fn = k[kernel]
    if kernel == "saxpy":
        args = (f32(inp["a"]), inp["x"], inp["y"])
    elif kernel == "radius_squared":
        args = (inp["values"], inp["nx"], inp["ny"])
    elif kernel == "stencil":
        args = (inp["a"], inp["out"], f32(inp["c0"]), f32(inp["c1"]))
    elif kernel == "nbody":
        args = tuple(inp[n] for n in ("px", "py", "pz", "m", "ax", "ay", "az")) + (f32(inp["eps2"]),)
    elif kernel == "mandelbrot":
        args = (inp["out"], inp["w"], f32(inp["x0"]), f32(inp["y0"]), f32(inp["dx"]),
                f32(inp["dy"]), inp["max_iter"])
    elif kernel == "sum":
        x, out = inp["x"], inp["out"]

        def run():
            out[0] += fn(x)
        return run, None
    elif kernel == "histogram":
        args = (inp["keys"], inp["hist"], k["numba"].get_num_threads())
    elif kernel == "normalize":
        args = (inp["v"], inp["out"])
    elif kernel == "stencil_local":
        args = (inp["a"], inp["out"])
    elif kernel == "conv2d":
        args = (inp["img"], inp["w"], inp["out"])
    elif kernel == "matmul_acc":
        args = (inp["A"], inp["B"], inp["C"])
    elif kernel == "hist2":
        args = (inp["keys"], inp["w"], inp["counts"], inp["sums"], k["numba"].get_num_threads())
    elif kernel == "transcendental":
        args = (inp["x"], inp["out"])
    elif kernel == "triangle":
        args = (inp["x"], inp["y"], inp["out"])
    else:
        raise KeyError(kernel)
    return (lambda: fn(*args)), None
