"""What a strided kernel argument costs: a column update in place,
``out[i] = 2 * x[i] + 1`` with ``out = m[:, 0]`` and ``x = m[:, 1]`` of an
``--n`` x ``--n`` float64 matrix, beside NumPy's own strided assignment
``m[:, 0] = 2 * m[:, 1] + 1``.

    python benchmarks/strided.py [--n 4096] [--reps 200] [--rounds 7]

Each round times ``--reps`` calls of each, alternating, and the best
round's microseconds per call are printed with their ratio.  The columns
are a row (32 KiB at n = 4096) apart, so each element is a cache line of
its own: both sides are bound by memory, and the kernel's column is the
one NumPy writes.  The two views share no element, so the kernel gets its
restrict build (docs/language.md, "Arrays").
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tack


@tack.kernel
def column_update(out, x):
    for i in range(out.shape[0]):
        out[i] = 2 * x[i] + 1


def best_us(fn, reps: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    m = np.random.default_rng(1).random((a.n, a.n))
    want = m.copy()
    want[:, 0] = 2 * want[:, 1] + 1
    column_update(m[:, 0], m[:, 1])  # compile, and check
    np.testing.assert_array_equal(m, want)

    def kernel():
        column_update(m[:, 0], m[:, 1])

    def numpy():
        m[:, 0] = 2 * m[:, 1] + 1

    tk = best_us(kernel, a.reps, a.rounds)
    npy = best_us(numpy, a.reps, a.rounds)
    print(f"n={a.n} float64 column update: tack {tk:.1f} us, numpy {npy:.1f} us, ratio {tk / npy:.2f}")


if __name__ == "__main__":
    main()
