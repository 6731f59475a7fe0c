"""Private sums in streams (issue 41, item 5): a sum and a dot product with
`tack.config.sum_streams` at 1 (one vector accumulator, the code before
the streams) and at its other settings, and Numba's prange sum with and
without fastmath, all timed in alternation in one process.

    python -m benchmarks.sums [--streams 1,2,4] [--sizes 65536,1048576,16777216] [--threads 1,2] [--rounds 7]

Each row prints each variant's speed relative to one stream (higher is
faster), the best of the rounds; the host's speed drifts within minutes, so
separate processes mislead (docs/performance.md, "Sums in two streams").
"""
import argparse
import time

import numpy as np

import tack


def tack_kernels(streams):
    """A sum and a dot product compiled under `sum_streams=streams` (kernels of
    their own: a built kernel keeps its build whatever the setting)."""

    @tack.kernel
    def total(x, out):
        for i in range(x.shape[0]):
            out[0] += x[i]

    @tack.kernel
    def dot(x, y, out):
        for i in range(x.shape[0]):
            out[0] += x[i] * y[i]

    return total, dot


def numba_kernels(fastmath):
    try:
        import numba  # noqa: PLC0415 (optional: the bench group)
    except ImportError:
        return None

    def total(x):
        s = x.dtype.type(0)
        for i in numba.prange(x.shape[0]):
            s += x[i]
        return s

    def dot(x, y):
        s = x.dtype.type(0)
        for i in numba.prange(x.shape[0]):
            s += x[i] * y[i]
        return s

    jit = numba.njit(parallel=True, fastmath=fastmath)
    return jit(total), jit(dot), numba


def best(f, reps):
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", default="1,2,4")
    ap.add_argument("--sizes", default="65536,1048576,16777216")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    modes = a.streams.split(",")
    if modes[0] != "1":
        modes.insert(0, "1")
    kernels = {m: tack_kernels(m) for m in modes}
    peers = {name: numba_kernels(fm) for name, fm in (("numba", False), ("numba-fastmath", True))}
    rng = np.random.default_rng(0)
    print(f"speed relative to one stream, best of {a.rounds} rounds in alternation")
    for dt in (np.float32, np.float64):
        for n in (int(s) for s in a.sizes.split(",")):
            x, y = rng.random(n).astype(dt), rng.random(n).astype(dt)
            out = np.zeros(1, dt)
            reps = max(3, 20_000_000 // n)
            for th in (int(t) for t in a.threads.split(",")):
                for what in (0, 1):  # the sum, the dot product
                    args = (x, out) if what == 0 else (x, y, out)
                    fs = {}
                    for m in modes:
                        k = kernels[m][what]
                        with tack.config.override(sum_streams=m):
                            k(*args)  # built under its setting
                        fs[m + " streams"] = lambda k=k: k(*args)
                    for name, p in peers.items():
                        if p:
                            p[2].set_num_threads(th)
                            f = (lambda p=p: p[0](x)) if what == 0 else (lambda p=p: p[1](x, y))
                            f()
                            fs[name] = f
                    t = dict.fromkeys(fs, float("inf"))
                    with tack.config.override(num_threads=th):
                        for _ in range(a.rounds):
                            for key, f in fs.items():
                                t[key] = min(t[key], best(f, reps))
                    one = t["1 streams"]
                    row = "  ".join(f"{key}: {one / t[key]:.2f}x" for key in fs if key != "1 streams")
                    label = "sum" if what == 0 else "dot"
                    print(f"{label} {np.dtype(dt).name:7s} n={n:>9} threads={th}: {row}   (one stream {one * 1e6:.0f} us)",
                          flush=True)


if __name__ == "__main__":
    main()
