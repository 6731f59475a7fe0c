"""Tack: the kernels in Tack's kernel language, called with the NumPy inputs
directly (borrowed, no copy).  vec3 arrays are NumPy (n, 3) f32 arrays viewed
as Tack vec3 arrays (``tack.array_from_ptr``, no copy) where that exists, else
copied in with ``tack.array(..., tack.vec3)``.  TACK_NUM_THREADS (set by the
driver) sizes the thread pool."""

import math

import numpy as np

NAME, LABEL = "tack", "Tack"
_k = None


def available():
    try:
        import tack
    except Exception as e:  # noqa: BLE001
        return f"tack not importable: {e}"
    return None


def setup(threads):
    import tack

    tack.set_default_device("cpu")


def kernels():
    global _k
    if _k is not None:
        return _k
    import tack

    @tack.kernel
    def saxpy(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    @tack.kernel
    def radius_squared(values, nx, ny):
        for i in range(values.shape[0]):
            x = float(i % nx) - float(nx - 1) * 0.5
            y = float((i // nx) % ny) - float(ny - 1) * 0.5
            z = float(i // (nx * ny)) - 2.0
            values[i] = x * x + y * y + z * z

    @tack.kernel
    def stencil(a, out, c0, c1):
        n = a.shape[0]
        for i, j, k in tack.ndrange(n - 2, n - 2, n - 2):
            out[i + 1, j + 1, k + 1] = c0 * a[i + 1, j + 1, k + 1] + c1 * (
                a[i, j + 1, k + 1] + a[i + 2, j + 1, k + 1] + a[i + 1, j, k + 1]
                + a[i + 1, j + 2, k + 1] + a[i + 1, j + 1, k] + a[i + 1, j + 1, k + 2])

    @tack.kernel
    def nbody(px, py, pz, m, ax, ay, az, eps2):
        for i in range(px.shape[0]):
            xi = px[i]
            yi = py[i]
            zi = pz[i]
            fx = 0.0
            fy = 0.0
            fz = 0.0
            for j in range(px.shape[0]):
                dx = px[j] - xi
                dy = py[j] - yi
                dz = pz[j] - zi
                r2 = dx * dx + dy * dy + dz * dz + eps2
                inv = 1.0 / math.sqrt(r2)
                s = m[j] * inv * inv * inv
                fx += dx * s
                fy += dy * s
                fz += dz * s
            ax[i] = fx
            ay[i] = fy
            az[i] = fz

    @tack.kernel
    def mandelbrot(out, w, x0, y0, dx, dy, max_iter):
        for i in range(out.shape[0]):
            cx = x0 + float(i % w) * dx
            cy = y0 + float(i // w) * dy
            x = 0.0
            y = 0.0
            it = 0
            while it < max_iter and x * x + y * y <= 4.0:
                xt = x * x - y * y + cx
                y = 2.0 * x * y + cy
                x = xt
                it += 1
            out[i] = it

    @tack.kernel
    def sum_(x, out):
        for i in range(x.shape[0]):
            out[0] += x[i]

    @tack.kernel
    def histogram(keys, hist):
        for i in range(keys.shape[0]):
            hist[keys[i]] += 1

    @tack.kernel
    def normalize(v, out):
        for i in range(v.shape[0]):
            out[i] = tack.normalize(v[i])

    @tack.kernel
    def stencil_local(a, out):
        for i0 in range(a.shape[0] - 2):
            for j0 in range(a.shape[1] - 2):
                for k0 in range(a.shape[2] - 2):
                    i = i0 + 1
                    j = j0 + 1
                    k = k0 + 1
                    out[i, j, k] = (a[i + 1, j, k] + a[i - 1, j, k] + a[i, j + 1, k] + a[i, j - 1, k]
                                    + a[i, j, k + 1] + a[i, j, k - 1] - 6.0 * a[i, j, k])

    @tack.kernel
    def conv2d(img, w, out):
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                acc = 0.0
                for di in range(w.shape[0]):
                    for dj in range(w.shape[1]):
                        acc += img[i + di, j + dj] * w[di, dj]
                out[i, j] = acc

    @tack.kernel
    def matmul_acc(A, B, C):
        for i in range(A.shape[0]):
            for k in range(A.shape[1]):
                a = A[i, k]
                for j in range(B.shape[1]):
                    C[i, j] += a * B[k, j]

    @tack.kernel
    def hist2(keys, w, counts, sums):
        for i in range(keys.shape[0]):
            counts[keys[i]] += 1
            sums[keys[i]] += w[i]

    @tack.kernel
    def transcendental(x, out):
        for i in range(x.shape[0]):
            out[i] = math.tanh(math.log(x[i] + 1.0) * 0.5) + math.sqrt(math.exp(-x[i]))

    @tack.kernel
    def triangle(x, y, out):
        for i in range(out.shape[0]):
            s = 0.0
            for j in range(i + 1):
                s += x[j] * y[i - j]
            out[i] = s

    _k = dict(saxpy=saxpy, radius_squared=radius_squared, stencil=stencil, nbody=nbody,
              mandelbrot=mandelbrot, sum=sum_, histogram=histogram, normalize=normalize,
              stencil_local=stencil_local, conv2d=conv2d, matmul_acc=matmul_acc, hist2=hist2,
              transcendental=transcendental, triangle=triangle)
    return _k


def vec3_view(a, writable):
    """A Tack vec3 array over a NumPy (n, 3) f32 array: shared if possible."""
    import tack

    if hasattr(tack, "array_from_ptr"):
        try:
            return tack.array_from_ptr(a, (a.shape[0],), tack.vec3, writable=writable), True
        except Exception:  # noqa: BLE001
            pass
    return tack.array(a, tack.vec3), False


def arguments(kernel, inp):
    """(kernel object, positional arguments, result function or None)."""
    k = kernels()
    fn = k[kernel]
    result = None
    if kernel == "saxpy":
        args = (inp["a"], inp["x"], inp["y"])
    elif kernel == "radius_squared":
        args = (inp["values"], inp["nx"], inp["ny"])
    elif kernel == "stencil":
        args = (inp["a"], inp["out"], inp["c0"], inp["c1"])
    elif kernel == "nbody":
        args = tuple(inp[n] for n in ("px", "py", "pz", "m", "ax", "ay", "az")) + (inp["eps2"],)
    elif kernel == "mandelbrot":
        args = (inp["out"], inp["w"], inp["x0"], inp["y0"], inp["dx"], inp["dy"], inp["max_iter"])
    elif kernel == "sum":
        args = (inp["x"], inp["out"])
    elif kernel == "histogram":
        args = (inp["keys"], inp["hist"])
    elif kernel == "stencil_local":
        args = (inp["a"], inp["out"])
    elif kernel == "conv2d":
        args = (inp["img"], inp["w"], inp["out"])
    elif kernel == "matmul_acc":
        args = (inp["A"], inp["B"], inp["C"])
    elif kernel == "hist2":
        args = (inp["keys"], inp["w"], inp["counts"], inp["sums"])
    elif kernel == "transcendental":
        args = (inp["x"], inp["out"])
    elif kernel == "triangle":
        args = (inp["x"], inp["y"], inp["out"])
    elif kernel == "normalize":
        v, _ = vec3_view(inp["v"], False)
        out, shared = vec3_view(inp["out"], True)
        args = (v, out)
        if not shared:
            result = lambda: {"out": np.asarray(out.numpy()).reshape(-1, 3)}  # noqa: E731
    else:
        raise KeyError(kernel)
    return fn, args, result


def prepare(kernel, inp):
    fn, args, result = arguments(kernel, inp)
    return (lambda: fn(*args)), result
