"""NumPy: whole-array expressions, one thread, written the way a NumPy user
would (preallocated outputs and temporaries, ``out=`` where it helps)."""

import numpy as np

NAME, LABEL = "numpy", "NumPy"
f32 = np.float32


def available():
    return None


def setup(threads):
    pass


def prepare(kernel, inp):
    if kernel == "saxpy":
        a, x, y = f32(inp["a"]), inp["x"], inp["y"]
        tmp = np.empty_like(y)

        def run():
            np.multiply(x, a, out=tmp)
            np.add(tmp, y, out=y)
    elif kernel == "radius_squared":
        v, nx, ny = inp["values"], inp["nx"], inp["ny"]
        i = np.arange(v.shape[0], dtype=np.int64)

        def run():
            x = (i % nx).astype(f32) - f32((nx - 1) * 0.5)
            y = ((i // nx) % ny).astype(f32) - f32((ny - 1) * 0.5)
            z = (i // (nx * ny)).astype(f32) - f32(2.0)
            np.multiply(x, x, out=v)
            np.add(v, y * y, out=v)
            np.add(v, z * z, out=v)
    elif kernel == "stencil":
        a, out, c0, c1 = inp["a"], inp["out"], f32(inp["c0"]), f32(inp["c1"])
        o = out[1:-1, 1:-1, 1:-1]

        def run():
            nb = a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1]
            nb += a[1:-1, :-2, 1:-1]
            nb += a[1:-1, 2:, 1:-1]
            nb += a[1:-1, 1:-1, :-2]
            nb += a[1:-1, 1:-1, 2:]
            nb *= c1
            np.multiply(a[1:-1, 1:-1, 1:-1], c0, out=o)
            np.add(o, nb, out=o)
    elif kernel == "nbody":
        px, py, pz, m = inp["px"], inp["py"], inp["pz"], inp["m"]
        ax, ay, az, eps2 = inp["ax"], inp["ay"], inp["az"], f32(inp["eps2"])
        n = px.shape[0]
        step = max(1, (1 << 20) // max(n, 1))

        def run():
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                dx = px[None, :] - px[lo:hi, None]
                dy = py[None, :] - py[lo:hi, None]
                dz = pz[None, :] - pz[lo:hi, None]
                r2 = dx * dx + dy * dy + dz * dz + eps2
                s = m[None, :] / (r2 * np.sqrt(r2))
                ax[lo:hi] = (dx * s).sum(1)
                ay[lo:hi] = (dy * s).sum(1)
                az[lo:hi] = (dz * s).sum(1)
    elif kernel == "mandelbrot":
        out, w = inp["out"], inp["w"]
        n = out.shape[0]
        i = np.arange(n)
        cx0 = f32(inp["x0"]) + (i % w).astype(f32) * f32(inp["dx"])
        cy0 = f32(inp["y0"]) + (i // w).astype(f32) * f32(inp["dy"])

        def run():
            idx = np.arange(n)
            cx, cy = cx0, cy0
            x = np.zeros(n, f32)
            y = np.zeros(n, f32)
            out[:] = 0
            for _ in range(inp["max_iter"]):
                live = x * x + y * y <= f32(4.0)
                if not live.all():
                    idx, x, y, cx, cy = idx[live], x[live], y[live], cx[live], cy[live]
                    if idx.size == 0:
                        break
                out[idx] += 1
                x, y = x * x - y * y + cx, f32(2.0) * x * y + cy
    elif kernel == "sum":
        x, out = inp["x"], inp["out"]

        def run():
            out[0] += x.sum()
    elif kernel == "histogram":
        keys, hist = inp["keys"], inp["hist"]
        nb = hist.shape[0]

        def run():
            np.add(hist, np.bincount(keys, minlength=nb).astype(np.int32), out=hist)
    elif kernel == "normalize":
        v, out = inp["v"], inp["out"]

        def run():
            length = np.sqrt(np.einsum("ij,ij->i", v, v))
            np.divide(v, length[:, None], out=out)
    elif kernel == "stencil_local":
        a, out = inp["a"], inp["out"]
        o = out[1:-1, 1:-1, 1:-1]

        def run():
            np.add(a[2:, 1:-1, 1:-1], a[:-2, 1:-1, 1:-1], out=o)
            for nb in (a[1:-1, 2:, 1:-1], a[1:-1, :-2, 1:-1], a[1:-1, 1:-1, 2:], a[1:-1, 1:-1, :-2]):
                np.add(o, nb, out=o)
            np.subtract(o, 6.0 * a[1:-1, 1:-1, 1:-1], out=o)
    elif kernel == "conv2d":
        img, w, out = inp["img"], inp["w"], inp["out"]
        m = out.shape[0]

        def run():
            out[...] = 0
            for di in range(w.shape[0]):
                for dj in range(w.shape[1]):
                    np.add(out, img[di:di + m, dj:dj + m] * w[di, dj], out=out)
    elif kernel == "matmul_acc":
        A, B, C = inp["A"], inp["B"], inp["C"]

        def run():
            np.add(C, A @ B, out=C)
    elif kernel == "hist2":
        keys, w, counts, sums = inp["keys"], inp["w"], inp["counts"], inp["sums"]
        nb = counts.shape[0]

        def run():
            np.add(counts, np.bincount(keys, minlength=nb).astype(np.int32), out=counts)
            np.add(sums, np.bincount(keys, weights=w, minlength=nb), out=sums)
    elif kernel == "transcendental":
        x, out = inp["x"], inp["out"]
        t = np.empty_like(out)

        def run():  # f32 throughout, whole-array steps (NumPy's own SIMD exp, log, tanh)
            np.add(x, np.float32(1.0), out=t)
            np.log(t, out=t)
            np.multiply(t, np.float32(0.5), out=t)
            np.tanh(t, out=t)
            np.negative(x, out=out)
            np.exp(out, out=out)
            np.sqrt(out, out=out)
            np.add(t, out, out=out)
    elif kernel == "triangle":
        x, y, out = inp["x"], inp["y"], inp["out"]
        n = out.shape[0]

        def run():
            out[...] = np.convolve(x, y)[:n]
    else:
        raise KeyError(kernel)
    return run, None
