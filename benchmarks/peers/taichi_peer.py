"""Taichi on the CPU (``ti.init(arch=ti.cpu)``), kernels taking the NumPy
inputs as ``ti.types.ndarray()`` (passed without copying on the CPU).  The
outermost loop of a Taichi kernel is parallel; ``+=`` on an ndarray element is
atomic.  The thread count is ``cpu_max_num_threads``.  Taichi turns fast-math
on by default; it is off here, as everywhere in these benchmarks."""

import os

NAME, LABEL = "taichi", "Taichi"
_k = None
_ti = None


def available():
    try:
        import taichi  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"taichi not importable: {e}"
    return None


def setup(threads):
    global _ti
    import taichi as ti

    # fast_math is on by default in Taichi; off here, as for every peer.
    kw = {"arch": ti.cpu, "log_level": ti.WARN, "default_fp": ti.f32, "default_ip": ti.i32,
          "fast_math": False}
    if threads:
        kw["cpu_max_num_threads"] = threads
    ti.init(**kw)
    _ti = ti


def kernels():
    global _k
    if _k is not None:
        return _k
    import taichi as ti

    nd = ti.types.ndarray()

    @ti.kernel
    def saxpy(a: ti.f32, x: nd, y: nd):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    @ti.kernel
    def radius_squared(values: nd, nx: ti.i32, ny: ti.i32):
        for i in range(values.shape[0]):
            x = ti.f32(i % nx) - ti.f32(nx - 1) * 0.5
            y = ti.f32((i // nx) % ny) - ti.f32(ny - 1) * 0.5
            z = ti.f32(i // (nx * ny)) - 2.0
            values[i] = x * x + y * y + z * z

    @ti.kernel
    def stencil(a: nd, out: nd, c0: ti.f32, c1: ti.f32):
        n = a.shape[0]
        for i, j, k in ti.ndrange((1, n - 1), (1, n - 1), (1, n - 1)):
            out[i, j, k] = c0 * a[i, j, k] + c1 * (a[i - 1, j, k] + a[i + 1, j, k] + a[i, j - 1, k]
                                                    + a[i, j + 1, k] + a[i, j, k - 1] + a[i, j, k + 1])

    @ti.kernel
    def nbody(px: nd, py: nd, pz: nd, m: nd, ax: nd, ay: nd, az: nd, eps2: ti.f32):
        for i in range(px.shape[0]):
            xi, yi, zi = px[i], py[i], pz[i]
            fx = 0.0
            fy = 0.0
            fz = 0.0
            for j in range(px.shape[0]):
                dx = px[j] - xi
                dy = py[j] - yi
                dz = pz[j] - zi
                r2 = dx * dx + dy * dy + dz * dz + eps2
                inv = 1.0 / ti.sqrt(r2)
                s = m[j] * inv * inv * inv
                fx += dx * s
                fy += dy * s
                fz += dz * s
            ax[i] = fx
            ay[i] = fy
            az[i] = fz

    @ti.kernel
    def mandelbrot(out: nd, w: ti.i32, x0: ti.f32, y0: ti.f32, dx: ti.f32, dy: ti.f32,
                   max_iter: ti.i32):
        for i in range(out.shape[0]):
            cx = x0 + ti.f32(i % w) * dx
            cy = y0 + ti.f32(i // w) * dy
            x = 0.0
            y = 0.0
            it = 0
            while it < max_iter and x * x + y * y <= 4.0:
                xt = x * x - y * y + cx
                y = 2.0 * x * y + cy
                x = xt
                it += 1
            out[i] = it

    @ti.kernel
    def sum_(x: nd, out: nd):
        for i in range(x.shape[0]):
            out[0] += x[i]

    @ti.kernel
    def histogram(keys: nd, hist: nd):
        for i in range(keys.shape[0]):
            hist[keys[i]] += 1

    @ti.kernel
    def normalize(v: ti.types.ndarray(dtype=ti.math.vec3, ndim=1),
                  out: ti.types.ndarray(dtype=ti.math.vec3, ndim=1)):
        for i in range(v.shape[0]):
            out[i] = v[i].normalized()

    @ti.kernel
    def saxpy_nd(a: ti.f32, x: nd, y: nd):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    _k = dict(saxpy=saxpy, radius_squared=radius_squared, stencil=stencil, nbody=nbody,
              mandelbrot=mandelbrot, sum=sum_, histogram=histogram, normalize=normalize,
              saxpy_nd=saxpy_nd)
    return _k


def prepare(kernel, inp):
    k = kernels()
    fn = k[kernel]
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
    elif kernel == "normalize":
        args = (inp["v"], inp["out"])
    else:
        raise KeyError(kernel)
    return (lambda: fn(*args)), None


os.environ.setdefault("TI_ENABLE_TORCH", "0")
os.environ.setdefault("TI_ENABLE_PADDLE", "0")
