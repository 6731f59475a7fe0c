"""The parallel primitives (tack.scan, sort, argsort, ...) beside NumPy,
and beside CuPy on an NVIDIA GPU when CuPy and a "cuda" device are here.

    python benchmarks/algorithms.py [--n 16000000] [--rounds 3] [--device cpu] [--only sort]

Each primitive runs on float32 data (int32 for compact, histogram and
segmented_reduce's values), already on the device; the best of --rounds
calls is printed in milliseconds with the ratio NumPy / Tack (> 1: Tack is
faster).  Tack's and NumPy's calls alternate, round by round, so a machine
shared with other work slows both alike.  The sort is measured against
both of NumPy's: the default (introsort, or x86-simd-sort where NumPy has
it for the CPU: the header line says which SIMD level NumPy dispatches to)
and kind="stable" (a radix sort for 16-bit and smaller types, timsort for
float32), the one whose results tack.sort gives.  On a GPU the time
includes the wait for the device (tack.synchronize).

With --sizes (e.g. --sizes 1e3,1e4,1e5,1e6,1e7) it prints instead the table of the
primitives NumPy has one call for -- reduce (sum, min, max), scan (cumsum), sort, argsort
and compaction by a bool mask -- at each size, in microseconds beside NumPy's, each the best
of as many interleaved rounds as fit in --budget seconds a cell (at least --rounds): the
sizes where a call's fixed cost (argument handling, allocation, the launch) decides the
ratio, as well as those where the algorithm does.  The header gives the machine's load
(/proc/loadavg) before and after.

NumPy picks its sort kernel by the CPU's features at import; to time
NumPy's AVX2 sort on an AVX-512 machine, run with
NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL" (NumPy 2.4's names).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tack


def once(fn, sync=None):
    t0 = time.perf_counter()
    got = fn()
    if sync:
        sync()
    t = time.perf_counter() - t0
    del got  # freed outside the timing
    return t


def best_ms(fn, rounds, sync=None):
    return min(once(fn, sync) for _ in range(rounds)) * 1e3


def best_pair_ms(a, b, rounds, sync_a=None, sync_b=None):
    """The best of `rounds` calls of a and of b, the calls alternating."""
    ta, tb = float("inf"), float("inf")
    for _ in range(rounds):
        ta = min(ta, once(a, sync_a))
        tb = min(tb, once(b, sync_b))
    return ta * 1e3, tb * 1e3


def cases(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    ints = rng.integers(0, 1000, n).astype(np.int32)
    wide = rng.integers(-2**31, 2**31, n).astype(np.int32)
    x64 = rng.standard_normal(n)
    vals = np.arange(n, dtype=np.int32)
    mask = x > 0
    sx = np.sort(x)
    q = rng.standard_normal(n // 16).astype(np.float32)
    off = np.sort(rng.integers(0, n, 1 + n // 1000))
    off[0], off[-1] = 0, n
    return [
        ("scan (cumsum)", (x,), lambda t, a: t.scan(a), lambda a: np.cumsum(a)),
        ("reduce (sum)", (x,), lambda t, a: t.reduce(a), lambda a: np.sum(a)),
        ("sort", (x,), lambda t, a: t.sort(a), lambda a: np.sort(a)),
        ("sort vs stable", (x,), lambda t, a: t.sort(a), lambda a: np.sort(a, kind="stable")),
        ("argsort", (x,), lambda t, a: t.argsort(a), lambda a: np.argsort(a)),
        ("argsort vs stable", (x,), lambda t, a: t.argsort(a), lambda a: np.argsort(a, kind="stable")),
        ("sort by key (int32 values) vs stable", (x, vals), lambda t, k, v: t.sort(k, v),
         lambda k, v: (lambda o: (k[o], v[o]))(np.argsort(k, kind="stable"))),
        ("sort int32", (wide,), lambda t, a: t.sort(a), lambda a: np.sort(a)),
        ("sort int32 vs stable", (ints,), lambda t, a: t.sort(a), lambda a: np.sort(a, kind="stable")),
        ("sort float64", (x64,), lambda t, a: t.sort(a), lambda a: np.sort(a)),
        ("compact", (x, mask), lambda t, a, m: t.compact(a, m), lambda a, m: a[m]),
        ("unique (int32)", (ints,), lambda t, a: t.unique(a), lambda a: np.unique(a)),
        ("searchsorted (n/16)", (sx, q), lambda t, a, v: t.searchsorted(a, v), lambda a, v: np.searchsorted(a, v)),
        ("histogram (100 bins)", (x,), lambda t, a: t.histogram(a, 100, (-4, 4)),
         lambda a: np.histogram(a, 100, (-4, 4))),
        ("segmented_reduce", (ints, off), lambda t, a, o: t.segmented_reduce(a, o),
         lambda a, o: np.add.reduceat(a, o[:-1])),
    ]


def sweep_cases(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    mask = x > 0
    return [
        ("reduce sum f32", (x,), lambda t, a: t.reduce(a), lambda a: np.sum(a)),
        ("reduce min f32", (x,), lambda t, a: t.reduce(a, "min"), lambda a: np.min(a)),
        ("reduce max f32", (x,), lambda t, a: t.reduce(a, "max"), lambda a: np.max(a)),
        ("scan sum f32 (cumsum)", (x,), lambda t, a: t.scan(a), lambda a: np.cumsum(a)),
        ("sort f32 vs stable", (x,), lambda t, a: t.sort(a), lambda a: np.sort(a, kind="stable")),
        ("sort f32 vs default", (x,), lambda t, a: t.sort(a), lambda a: np.sort(a)),
        ("argsort f32 vs stable", (x,), lambda t, a: t.argsort(a), lambda a: np.argsort(a, kind="stable")),
        ("compact f32 (a[mask])", (x, mask), lambda t, a, m: t.compact(a, m), lambda a, m: a[m]),
    ]


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def best_pair_budget(a, b, rounds, budget, sync=None):
    """As best_pair_ms, in microseconds, the rounds as many as fit in `budget` seconds (at least
    `rounds`, at most 2,000)."""
    ta, tb = float("inf"), float("inf")
    t_end = time.perf_counter() + budget
    k = 0
    while k < rounds or (time.perf_counter() < t_end and k < 2000):
        ta = min(ta, once(a, sync))
        tb = min(tb, once(b))
        k += 1
    return ta * 1e6, tb * 1e6, k


def sweep(sizes, rounds, budget, dev, only):
    sync = None if dev == "cpu" else (lambda: tack.synchronize(dev))
    print(f"{dev} ({tack._core.device_threads(dev)} threads); NumPy {np.__version__} (SIMD: {numpy_simd()}); "
          f"load {loadavg()}; best of at least {rounds} interleaved rounds, up to {budget} s a cell")
    print("| primitive | n | Tack us | NumPy us | NumPy / Tack | rounds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for n in sizes:
        for name, host, tk, ref in sweep_cases(n, rng):
            if only not in name:
                continue
            on_dev = [tack.array(h, device=dev) for h in host]
            tk(tack, *on_dev)  # compile
            t, r, k = best_pair_budget(lambda: tk(tack, *on_dev), lambda: ref(*host), rounds, budget, sync)
            print(f"| {name} | {n:,} | {t:.1f} | {r:.1f} | {r / t:.2f} | {k} |", flush=True)
    print(f"load after: {loadavg()}")


def numpy_simd():
    """The SIMD levels NumPy found and uses here (its sort dispatches to the
    highest), e.g. "X86_V3 X86_V4 AVX512_ICL"."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        return "unknown"
    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f)) or "baseline only"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default="", help="only the rows whose name holds this text (e.g. sort)")
    ap.add_argument("--sizes", default="", help="sizes to sweep, e.g. 1e3,1e4,1e5,1e6,1e7 (the table in microseconds)")
    ap.add_argument("--budget", type=float, default=0.5, help="with --sizes: seconds of rounds a cell, at most")
    args = ap.parse_args()
    if args.sizes:
        sweep([int(float(v)) for v in args.sizes.split(",")], args.rounds, args.budget, args.device, args.only)
        return
    rng = np.random.default_rng(0)
    dev = args.device
    sync = None if dev == "cpu" else (lambda: tack.synchronize(dev))
    cupy = None
    if dev.startswith("cuda"):
        try:
            import cupy
        except ImportError:
            pass
    print(f"n = {args.n:,} on {dev} ({tack._core.device_threads(dev)} threads); "
          f"NumPy {np.__version__} (SIMD: {numpy_simd()}); best of {args.rounds}, interleaved")
    print(f"| primitive | Tack ms | NumPy ms | NumPy / Tack |{' CuPy ms | CuPy / Tack |' if cupy else ''}")
    print(f"| --- | ---: | ---: | ---: |{' ---: | ---: |' if cupy else ''}")
    for name, host, tk, ref in cases(args.n, rng):
        if args.only not in name:
            continue
        on_dev = [tack.array(h, device=dev) for h in host]
        tk(tack, *on_dev)  # compile
        t, r = best_pair_ms(lambda: tk(tack, *on_dev), lambda: ref(*host), args.rounds, sync)
        line = f"| {name} | {t:.1f} | {r:.1f} | {r / t:.2f} |"
        if cupy:
            cu = [cupy.asarray(h) for h in host]
            ref_cu = {"sort vs stable": None}.get(name, ref)
            c = best_ms(lambda: ref_cu(*cu), args.rounds, cupy.cuda.Device().synchronize) if ref_cu else float("nan")
            line += f" {c:.1f} | {c / t:.2f} |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
