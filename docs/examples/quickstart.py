"""Tack in a few lines: arrays, dtypes, devices and, when the compiler is
present, a kernel running on every core.

    python docs/examples/quickstart.py [--n 4194304] [--device cpu] [--output-dir .]

With matplotlib installed, --output-dir draws saxpy's two calls, the first
(which compiles) and the second, as quickstart.png."""

import argparse
import os
import time

import numpy as np

import tack


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22, help="saxpy's elements")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", help="draw the two calls' times as quickstart.png here (needs matplotlib)")
    args = ap.parse_args(argv)
    tack.set_default_device(args.device)
    print(f"tack {tack.__version__}; devices: {tack.devices()}")

    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = tack.array(host)  # a copy owned by Tack
    print("a Tack array:", data)

    points = tack.array(np.random.default_rng(0).random((5, 3)), dtype=tack.vec3)
    print(f"{points.size} points of {points.dtype.name} ({points.dtype.itemsize} bytes each)")

    tack.copyto(data, host * 2)  # replace the values, converting to f32
    np.testing.assert_array_equal(np.asarray(data), host * 2)

    if hasattr(tack, "kernel"):

        @tack.kernel
        def saxpy(a, x, y):
            for i in range(y.shape[0]):
                y[i] = a * x[i] + y[i]

        n = args.n
        x = tack.array(np.arange(n, dtype=np.float32))
        y = tack.ones(n)
        t0 = time.perf_counter()
        saxpy(2.0, x, y)  # the first call compiles
        t1 = time.perf_counter()
        saxpy(2.0, x, y)
        t2 = time.perf_counter()
        expected = 1 + 4 * np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
        print(f"saxpy on {n} elements: first call {1e3 * (t1 - t0):.1f} ms (compile), "
              f"then {1e3 * (t2 - t1):.2f} ms")
        if args.output_dir:
            draw(os.path.join(args.output_dir, "quickstart.png"), n, t1 - t0, t2 - t1)
    print("quickstart: all checks passed")


def draw(path, n, first, second):
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no picture")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.2), constrained_layout=True)
    bars = ax.barh(["second call", "first call\n(compiles)"], [second * 1e3, first * 1e3], color=["#1f9e89", "#482878"])
    ax.bar_label(bars, fmt="%.2f ms", padding=4)
    ax.set_xscale("log")
    ax.set_xlim(min(second, first) * 1e3 / 3, max(second, first) * 1e3 * 8)
    ax.set_xlabel("milliseconds (log scale)")
    ax.set_title(f"saxpy on {n:,} elements: compiled once, then fast")
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
