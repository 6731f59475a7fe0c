"""The parallel primitives (tack.scan, sort, argsort, ...) beside NumPy,
and beside CuPy on an NVIDIA GPU when CuPy and a "cuda" device are here.

    python benchmarks/algorithms.py [--n 16000000] [--rounds 3] [--device cpu]

Each primitive runs on float32 data (int32 for compact, histogram and
segmented_reduce's values), already on the device; the best of --rounds
calls is printed in milliseconds with the ratio NumPy / Tack (> 1: Tack is
faster).  The sort is measured against both of NumPy's: the default
(introsort, or x86-simd-sort where NumPy has it) and kind="stable" (a
radix sort for 16-bit and smaller types, timsort for float32), the one whose
results tack.sort gives.  On a GPU the time includes the wait for the
device (tack.synchronize).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tack


def best_ms(fn, rounds, sync=None):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def cases(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    ints = rng.integers(0, 1000, n).astype(np.int32)
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
        ("argsort vs stable", (x,), lambda t, a: t.argsort(a), lambda a: np.argsort(a, kind="stable")),
        ("sort int32 vs stable", (ints,), lambda t, a: t.sort(a), lambda a: np.sort(a, kind="stable")),
        ("compact", (x, mask), lambda t, a, m: t.compact(a, m), lambda a, m: a[m]),
        ("unique (int32)", (ints,), lambda t, a: t.unique(a), lambda a: np.unique(a)),
        ("searchsorted (n/16)", (sx, q), lambda t, a, v: t.searchsorted(a, v), lambda a, v: np.searchsorted(a, v)),
        ("histogram (100 bins)", (x,), lambda t, a: t.histogram(a, 100, (-4, 4)),
         lambda a: np.histogram(a, 100, (-4, 4))),
        ("segmented_reduce", (ints, off), lambda t, a, o: t.segmented_reduce(a, o),
         lambda a, o: np.add.reduceat(a, o[:-1])),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
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
          f"NumPy {np.__version__}; best of {args.rounds}")
    print(f"| primitive | Tack ms | NumPy ms | NumPy / Tack |{' CuPy ms | CuPy / Tack |' if cupy else ''}")
    print(f"| --- | ---: | ---: | ---: |{' ---: | ---: |' if cupy else ''}")
    for name, host, tk, ref in cases(args.n, rng):
        on_dev = [tack.array(h, device=dev) for h in host]
        tk(tack, *on_dev)  # compile
        t = best_ms(lambda: tk(tack, *on_dev), args.rounds, sync)
        r = best_ms(lambda: ref(*host), args.rounds)
        line = f"| {name} | {t:.1f} | {r:.1f} | {r / t:.2f} |"
        if cupy:
            cu = [cupy.asarray(h) for h in host]
            ref_cu = {"sort vs stable": None}.get(name, ref)
            c = best_ms(lambda: ref_cu(*cu), args.rounds, cupy.cuda.Device().synchronize) if ref_cu else float("nan")
            line += f" {c:.1f} | {c / t:.2f} |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
