"""Pieces claimed as threads go (src/runtime/pool.c): each index runs exactly once.

The CPU pool splits a parallel loop into pieces that threads take from their
own share and then from each other's, so a chunk function runs many times per
thread, on ranges that start and end anywhere.  Private sums and histograms
flush per chunk, so they must still add up to NumPy's answer; every index
must be visited exactly once at every size and thread count (the pool reads
TACK_NUM_THREADS once, so each count runs in a fresh process).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack

SCRIPT = textwrap.dedent("""
    import numpy as np, tack

    @tack.kernel
    def visit_heavy(visits, reps):
        # a body with a loop whose trip count the launch cannot count (it is read from
        # memory): worth spreading over two iterations (min_parallel 2, launch_work.c)
        for i in range(visits.shape[0]):
            for r in range(reps[0]):
                tack.atomic_add(visits, i, 1)

    @tack.kernel
    def visit_plain(visits):
        for i in range(visits.shape[0]):
            tack.atomic_add(visits, i, 1)

    @tack.kernel
    def visit_2d(visits):
        for i, j in tack.ndrange(visits.shape[0], visits.shape[1]):
            tack.atomic_add(visits, (i, j), 1)

    @tack.kernel
    def sums(x, k, total, itotal, counts, weights):
        for i in range(x.shape[0]):
            total[0] += x[i]
            itotal[0] += k[i]
            counts[k[i]] += 1
            weights[k[i]] += x[i]

    @tack.kernel
    def triangle(x, out):
        for i in range(x.shape[0]):
            s = 0
            for j in range(i):
                s += x[j]
            out[i] = s

    rng = np.random.default_rng(5)
    for n in list(range(0, 300)) + list(range(300, 5000, 173)):
        v = np.zeros(n, np.int32)
        visit_heavy(v, np.ones(1, np.int64))
        assert (v == 1).all(), ("heavy", n, np.flatnonzero(v != 1)[:5])
    for n in [8191, 8192, 40_000, 65_536 + 7, 300_001]:
        v = np.zeros(n, np.int32)
        visit_plain(v)
        assert (v == 1).all(), ("plain", n, np.flatnonzero(v != 1)[:5])
    for shape in [(1, 1), (3, 5000), (257, 255), (1000, 70)]:
        v = np.zeros(shape, np.int32)
        visit_2d(v)
        assert (v == 1).all(), ("2d", shape)
    for n, bins in [(100_000, 7), (1_000_000, 256), (1_000_000, 4096), (500_003, 16384)]:
        x = rng.random(n)
        k = rng.integers(0, bins, n).astype(np.int64)
        total, itotal = np.zeros(1), np.zeros(1, np.int64)
        counts, weights = np.zeros(bins, np.int64), np.zeros(bins)
        sums(x, k, total, itotal, counts, weights)
        assert itotal[0] == k.sum(), (n, bins)
        assert np.isclose(total[0], x.sum(), rtol=1e-12), (n, bins)
        assert (counts == np.bincount(k, minlength=bins)).all(), (n, bins)
        assert np.allclose(weights, np.bincount(k, weights=x, minlength=bins), rtol=1e-12), (n, bins)
    x = rng.integers(0, 100, 3000).astype(np.int64)
    out = np.zeros_like(x)
    triangle(x, out)
    assert (out == np.concatenate([[0], np.cumsum(x)[:-1]])).all()
    print("ok")
""")


@pytest.mark.parametrize("threads", ["1", "2", "3", "5"])
def test_every_index_once_and_sums_exact(tmp_path, threads):
    script = tmp_path / "balance.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TACK_NUM_THREADS=threads)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


@tack.kernel
def count_weigh(keys, w, counts, sums):
    for i in range(keys.shape[0]):
        counts[keys[i]] += 1
        sums[keys[i]] += w[i]


def test_histogram_loop_asks_for_pieces_that_repay_its_copy():
    """A loop with private histograms keeps one copy per thread when they fit
    (the pool's usual pieces then); else each chunk keeps its own, and the
    loop passes 4x the cells of the largest copy as the grain."""
    keys = np.zeros(8, np.int32)
    src = count_weigh.generated_source(keys, np.zeros(8), np.zeros(4, np.int32), np.zeros(4))
    assert src.count("if (!ht_ && hn") == 2
    assert "grain_ = 4 * hn2_;" in src and "grain_ = 4 * hn3_;" in src
    assert "abi->slots()" in src


@tack.kernel
def plain(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0


def test_plain_loop_leaves_the_grain_to_the_pool():
    src = plain.generated_source(np.zeros(8))
    assert "total_, " in src and "grain_ = 0" in src and "hn_" not in src
