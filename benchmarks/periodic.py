"""A periodic reaction-diffusion step (Gray-Scott, 2-D, `%` neighbours) and
a Monte Carlo pricer against Numba, per core (issue 41, items 3 and 4).

    TACK_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/periodic.py [gray_scott] [monte_carlo]

Each figure is the best of several rounds, Tack and Numba timed in
alternation in one process (this host's speed drifts by tens of percent
within minutes, so separate processes mislead).
"""
import os
import sys
import time

import numpy as np

import tack

GS = (0.16, 0.08, 0.035, 0.065, 1.0)


def tack_step(checks):
    @tack.kernel(checks=checks)
    def gray_scott(u, v, u2, v2, du, dv, f, k, dt):
        n = u.shape[0]
        m = u.shape[1]
        for i, j in tack.ndrange(n, m):
            uc = u[i, j]
            vc = v[i, j]
            lu = u[(i + 1) % n, j] + u[(i - 1 + n) % n, j] + u[i, (j + 1) % m] + u[i, (j - 1 + m) % m] - 4.0 * uc
            lv = v[(i + 1) % n, j] + v[(i - 1 + n) % n, j] + v[i, (j + 1) % m] + v[i, (j - 1 + m) % m] - 4.0 * vc
            uvv = uc * vc * vc
            u2[i, j] = uc + dt * (du * lu - uvv + f * (1.0 - uc))
            v2[i, j] = vc + dt * (dv * lv + uvv - (f + k) * vc)

    return gray_scott


def numba_step():
    import numba

    @numba.njit(parallel=True, fastmath=False)
    def gray_scott(u, v, u2, v2, du, dv, f, k, dt):
        n = u.shape[0]
        m = u.shape[1]
        for i in numba.prange(n):
            for j in range(m):
                uc = u[i, j]
                vc = v[i, j]
                lu = u[(i + 1) % n, j] + u[(i - 1 + n) % n, j] + u[i, (j + 1) % m] + u[i, (j - 1 + m) % m] - 4.0 * uc
                lv = v[(i + 1) % n, j] + v[(i - 1 + n) % n, j] + v[i, (j + 1) % m] + v[i, (j - 1 + m) % m] - 4.0 * vc
                uvv = uc * vc * vc
                u2[i, j] = uc + dt * (du * lu - uvv + f * (1.0 - uc))
                v2[i, j] = vc + dt * (dv * lv + uvv - (f + k) * vc)

    return gray_scott


def tack_pricer():
    import tack.random

    @tack.kernel
    def pricer(seed, s0, strike, r, sigma, t, out):
        drift = (r - 0.5 * sigma * sigma) * t
        vol = sigma * np.sqrt(t)
        for i in range(out.shape[0]):
            z = tack.random.normal(seed, i)
            out[i] = max(s0 * np.exp(drift + vol * z) - strike, 0.0)

    return lambda out: pricer(42, 100.0, 105.0, 0.05, 0.2, 1.0, out)


def numba_pricer():
    import numba

    @numba.njit(parallel=True)
    def pricer(s0, strike, r, sigma, t, out):
        drift = (r - 0.5 * sigma * sigma) * t
        vol = sigma * np.sqrt(t)
        for i in numba.prange(out.shape[0]):
            z = np.random.normal()
            out[i] = max(s0 * np.exp(drift + vol * z) - strike, 0.0)

    return lambda out: pricer(100.0, 105.0, 0.05, 0.2, 1.0, out)


def monte_carlo(n=1 << 22, rounds=5):
    """A European call's payoffs, one normal a path (the mean is the price
    before discounting): Tack's counter-based normals against Numba's
    np.random.normal in a prange loop."""
    peers = {"tack": tack_pricer()}
    try:
        peers["numba"] = numba_pricer()
    except ImportError:
        pass
    out = np.empty(n)
    for fn in peers.values():
        fn(out)
        assert abs(out.mean() - 8.433) < 0.05, out.mean()  # Black-Scholes: 8.021 discounted, 8.433 not
    times = {name: float("inf") for name in peers}
    for _ in range(rounds):
        for name, fn in peers.items():
            times[name] = min(times[name], best(fn, (out,), 3))
    print(f"monte carlo, {n} normals: " + ", ".join(f"{k} {1e3 * t:.1f} ms ({1e9 * t / n:.1f} ns a path)"
                                                     for k, t in times.items()), flush=True)


def best(fn, args, reps):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        t.append(time.perf_counter() - t0)
    return min(t)


def gray_scott(sizes=(512, 2048), rounds=5):
    peers = {"tack checks": tack_step(True), "tack checks=False": tack_step(False)}
    try:
        peers["numba"] = numba_step()
    except ImportError:
        pass
    for n in sizes:
        rng = np.random.default_rng(0)
        u = rng.random((n, n))
        v = rng.random((n, n))
        outs = {}
        for name, fn in peers.items():
            u2, v2 = np.empty_like(u), np.empty_like(v)
            fn(u, v, u2, v2, *GS)
            outs[name] = (u2, v2)
        ref = outs["tack checks"]
        for name, (u2, v2) in outs.items():
            assert np.array_equal(u2, ref[0]) and np.array_equal(v2, ref[1]), name
        reps = max(3, int(2e7 // (n * n)))
        times = {name: float("inf") for name in peers}
        for _ in range(rounds):
            for name, fn in peers.items():
                u2, v2 = outs[name]
                times[name] = min(times[name], best(fn, (u, v, u2, v2, *GS), reps))
        print(f"gray_scott {n}^2: " + ", ".join(f"{k} {1e6 * t:.0f} us" for k, t in times.items()), flush=True)


if __name__ == "__main__":
    tack.set_default_device("cpu")
    what = sys.argv[1:] or ["gray_scott", "monte_carlo"]
    print(f"threads: TACK {os.environ.get('TACK_NUM_THREADS', 'all')}, NUMBA {os.environ.get('NUMBA_NUM_THREADS', 'all')}")
    if "gray_scott" in what:
        gray_scott()
    if "monte_carlo" in what:
        monte_carlo()
