"""Blocks on the CPU (issue 38, item 1): the docs' block reduction (a tree in
shared memory), the same with tack.block_sum, a block_scan per block and the
tiled 16 x 16 matrix product, each compiled with `tack.config.blocks_fast` off
(the general layout) and on, against a plain kernel doing the same work and
NumPy, all timed in alternation in one process.

    python -m benchmarks.blocks_cpu [--threads 2] [--rounds 25] [--n 4194304] [--m 512]

Each row prints the best of the rounds for the general layout, the fast one
(and whether their results are the same bits), the plain kernel and NumPy
(docs/performance.md, "Blocks on the CPU").
"""
import argparse
import os
import sys
import time

from pathlib import Path

import numpy as np

import tack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
# the language chapter's tiled product and its plain form, as the tests check them
from _blocks_examples import matmul_plain as plain_matmul, matmul_tiled as tiled  # noqa: E402

sys.path.pop(0)

BS = 64


def tree(x, out):
    n = x.shape[0]
    for b, t in tack.blocks(out.shape[0], BS):
        s = tack.shared(BS, tack.f32)
        i = b * BS + t
        v = 0.0
        if i < n:
            v = x[i]
        s[t] = v
        tack.barrier()
        stride = BS // 2
        while stride > 0:
            if t < stride:
                s[t] += s[t + stride]
            tack.barrier()
            stride //= 2
        if t == 0:
            out[b] = s[0]


def with_block_sum(x, out):
    n = x.shape[0]
    for b, t in tack.blocks(out.shape[0], BS):
        i = b * BS + t
        v = 0.0
        if i < n:
            v = x[i]
        r = tack.block_sum(v)
        if t == 0:
            out[b] = r


def plain_sum(x, out):
    for b in range(out.shape[0]):
        acc = 0.0
        for k in range(BS):
            acc += x[b * BS + k]
        out[b] = acc


def with_block_scan(x, y):
    for b, t in tack.blocks(x.shape[0] // BS, BS):
        i = b * BS + t
        c = tack.block_scan(x[i])
        y[i] = c


def plain_scan(x, y):
    for b in tack.independent(range(x.shape[0] // BS)):
        acc = 0.0
        for k in range(BS):
            acc += x[b * BS + k]
            y[b * BS + k] = acc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--m", type=int, default=512)
    o = p.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random(o.n, dtype=np.float32)
    a = rng.random((o.m, o.m), dtype=np.float32)
    bm = rng.random((o.m, o.m), dtype=np.float32)
    nb = o.n // BS
    rows = [
        ("sum, a tree in shared memory", tree, plain_sum, lambda: (x, np.zeros(nb, np.float32)),
         lambda: x.reshape(-1, BS).sum(1)),
        ("sum, tack.block_sum", with_block_sum, plain_sum, lambda: (x, np.zeros(nb, np.float32)),
         lambda: x.reshape(-1, BS).sum(1)),
        ("scan, tack.block_scan", with_block_scan, plain_scan, lambda: (x, np.zeros(o.n, np.float32)),
         lambda: np.cumsum(x.reshape(-1, BS), 1)),
        (f"{o.m} x {o.m} product, 16 x 16 tiles", tiled, plain_matmul,
         lambda: (a, bm, np.zeros((o.m, o.m), np.float32)), lambda: a @ bm),
    ]
    print(f"load average {os.getloadavg()[0]:.2f}, {o.threads} threads, best of {o.rounds} (ms)")
    print(f"{'kernel':36s} {'general':>9s} {'fast':>9s} {'same':>5s} {'plain':>9s} {'NumPy':>9s}")
    with tack.config.override(num_threads=o.threads):
        for name, fn, plain, make, numpy_fn in rows:
            ks = {}
            for label, fast in (("general", False), ("fast", True)):
                with tack.config.override(blocks_fast=fast):
                    ks[label] = tack.kernel(fn)
                    ks[label](*make())  # built under the setting
            ks["plain"] = tack.kernel(plain)
            ks["plain"](*make())
            best = dict.fromkeys(list(ks) + ["NumPy"], float("inf"))
            outs = {}
            for _ in range(o.rounds):
                for label, k in ks.items():
                    args = make()
                    t0 = time.perf_counter()
                    k(*args)
                    best[label] = min(best[label], time.perf_counter() - t0)
                    outs[label] = args[-1]
                t0 = time.perf_counter()
                numpy_fn()
                best["NumPy"] = min(best["NumPy"], time.perf_counter() - t0)
            same = np.array_equal(outs["general"].view(np.uint8), outs["fast"].view(np.uint8))
            print(f"{name:36s} {best['general'] * 1e3:9.3f} {best['fast'] * 1e3:9.3f} {str(same):>5s} "
                  f"{best['plain'] * 1e3:9.3f} {best['NumPy'] * 1e3:9.3f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
