"""Tack in a few lines: arrays, dtypes, devices and, when the compiler is
present, a kernel running on every core."""

import time

import numpy as np

import tack


def main():
    tack.set_default_device("cpu")
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

        n = 1 << 22
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
    print("quickstart: all checks passed")


if __name__ == "__main__":
    main()
