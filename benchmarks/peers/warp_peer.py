"""NVIDIA Warp on the CPU (``device="cpu"``).  Warp runs CPU kernels on one
thread, so its all-cores and one-core numbers are the same.  Arrays wrap the
NumPy inputs without copying (``copy=False``)."""

NAME, LABEL = "warp", "Warp"
_k = None


def available():
    try:
        import warp  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"warp-lang not importable: {e}"
    return None


def setup(threads):
    import warp as wp

    wp.config.quiet = True
    wp.init()


def kernels():
    global _k
    if _k is not None:
        return _k
    import warp as wp

    @wp.kernel
    def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def radius_squared(values: wp.array(dtype=float), nx: int, ny: int):
        i = wp.tid()
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i / nx) % ny) - float(ny - 1) * 0.5
        z = float(i / (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z

    @wp.kernel
    def stencil(a: wp.array3d(dtype=float), out: wp.array3d(dtype=float), c0: float, c1: float):
        i, j, k = wp.tid()
        i += 1
        j += 1
        k += 1
        out[i, j, k] = c0 * a[i, j, k] + c1 * (a[i - 1, j, k] + a[i + 1, j, k] + a[i, j - 1, k]
                                                + a[i, j + 1, k] + a[i, j, k - 1] + a[i, j, k + 1])

    @wp.kernel
    def nbody(px: wp.array(dtype=float), py: wp.array(dtype=float), pz: wp.array(dtype=float),
              m: wp.array(dtype=float), ax: wp.array(dtype=float), ay: wp.array(dtype=float),
              az: wp.array(dtype=float), eps2: float):
        i = wp.tid()
        xi = px[i]
        yi = py[i]
        zi = pz[i]
        fx = float(0.0)
        fy = float(0.0)
        fz = float(0.0)
        for j in range(px.shape[0]):
            dx = px[j] - xi
            dy = py[j] - yi
            dz = pz[j] - zi
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv = 1.0 / wp.sqrt(r2)
            s = m[j] * inv * inv * inv
            fx += dx * s
            fy += dy * s
            fz += dz * s
        ax[i] = fx
        ay[i] = fy
        az[i] = fz

    @wp.kernel
    def mandelbrot(out: wp.array(dtype=wp.int32), w: int, x0: float, y0: float, dx: float,
                   dy: float, max_iter: int):
        i = wp.tid()
        cx = x0 + float(i % w) * dx
        cy = y0 + float(i / w) * dy
        x = float(0.0)
        y = float(0.0)
        it = int(0)
        while it < max_iter and x * x + y * y <= 4.0:
            xt = x * x - y * y + cx
            y = 2.0 * x * y + cy
            x = xt
            it += 1
        out[i] = it

    @wp.kernel
    def sum_(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, 0, x[i])

    @wp.kernel
    def histogram(keys: wp.array(dtype=wp.int32), hist: wp.array(dtype=wp.int32)):
        i = wp.tid()
        wp.atomic_add(hist, keys[i], 1)

    @wp.kernel
    def normalize(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        out[i] = wp.normalize(v[i])

    _k = dict(saxpy=saxpy, radius_squared=radius_squared, stencil=stencil, nbody=nbody,
              mandelbrot=mandelbrot, sum=sum_, histogram=histogram, normalize=normalize)
    return _k


def prepare(kernel, inp):
    import warp as wp

    k = kernels()

    def arr(name, dtype=float):
        return wp.array(inp[name], dtype=dtype, device="cpu", copy=False)

    if kernel == "saxpy":
        dim, args = inp["y"].shape[0], [inp["a"], arr("x"), arr("y")]
    elif kernel == "radius_squared":
        dim, args = inp["values"].shape[0], [arr("values"), inp["nx"], inp["ny"]]
    elif kernel == "stencil":
        n = inp["a"].shape[0]
        dim, args = (n - 2, n - 2, n - 2), [arr("a"), arr("out"), inp["c0"], inp["c1"]]
    elif kernel == "nbody":
        dim = inp["px"].shape[0]
        args = [arr(n) for n in ("px", "py", "pz", "m", "ax", "ay", "az")] + [inp["eps2"]]
    elif kernel == "mandelbrot":
        dim = inp["out"].shape[0]
        args = [arr("out", wp.int32), inp["w"], inp["x0"], inp["y0"], inp["dx"], inp["dy"],
                inp["max_iter"]]
    elif kernel == "sum":
        dim, args = inp["x"].shape[0], [arr("x"), arr("out")]
    elif kernel == "histogram":
        dim, args = inp["keys"].shape[0], [arr("keys", wp.int32), arr("hist", wp.int32)]
    elif kernel == "normalize":
        dim, args = inp["v"].shape[0], [arr("v", wp.vec3), arr("out", wp.vec3)]
    else:
        raise KeyError(kernel)
    fn = k[kernel]

    def run(inp=inp):  # keeps the NumPy arrays behind the Warp arrays alive
        wp.launch(fn, dim=dim, inputs=args, device="cpu")
    return run, None
