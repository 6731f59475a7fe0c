"""A periodic reaction-diffusion step (Gray-Scott, 2-D, `%` neighbours) and
a Monte Carlo pricer against Numba, per core (issue 41, items 3 and 4), and
small stencils on a 2-D grid (Conway's Life on uint8, a 5-point heat step on
float32; periodic with `%`, and over the interior only) against Numba and
NumPy.

    TACK_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/periodic.py [gray_scott] [monte_carlo] [stencils]

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


# ---------------------------------------------------------------- stencils
@tack.kernel
def life(a, b):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        c = (a[(i - 1) % n, (j - 1) % m] + a[(i - 1) % n, j] + a[(i - 1) % n, (j + 1) % m]
             + a[i, (j - 1) % m] + a[i, (j + 1) % m]
             + a[(i + 1) % n, (j - 1) % m] + a[(i + 1) % n, j] + a[(i + 1) % n, (j + 1) % m])
        b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0


@tack.kernel
def life_loops(a, b):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        c = 0
        for di in range(-1, 2):
            for dj in range(-1, 2):
                if di != 0 or dj != 0:
                    c += a[(i + di) % n, (j + dj) % m]
        b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0


@tack.kernel
def life_inner(a, b):
    n, m = a.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        c = (a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1] + a[i, j - 1] + a[i, j + 1]
             + a[i + 1, j - 1] + a[i + 1, j] + a[i + 1, j + 1])
        b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0


@tack.kernel
def heat(u, out, k):
    n, m = u.shape
    for i, j in tack.ndrange(n, m):
        out[i, j] = u[i, j] + k * (u[(i - 1) % n, j] + u[(i + 1) % n, j] + u[i, (j - 1) % m] + u[i, (j + 1) % m]
                                   - 4.0 * u[i, j])


@tack.kernel
def heat_inner(u, out, k):
    n, m = u.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        out[i, j] = u[i, j] + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])


def np_life(a, b):
    c = np.zeros_like(a)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                c += np.roll(a, (-di, -dj), (0, 1))
    b[...] = (c == 3) | ((a == 1) & (c == 2))


def np_life_inner(a, b):
    c = (a[:-2, :-2] + a[:-2, 1:-1] + a[:-2, 2:] + a[1:-1, :-2] + a[1:-1, 2:]
         + a[2:, :-2] + a[2:, 1:-1] + a[2:, 2:])
    b[1:-1, 1:-1] = (c == 3) | ((a[1:-1, 1:-1] == 1) & (c == 2))


def np_heat(u, out, k):
    lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4.0 * u
    out[...] = u + k * lap


def np_heat_inner(u, out, k):
    c = u[1:-1, 1:-1]
    out[1:-1, 1:-1] = c + k * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * c)


def numba_stencils():
    """The Tack kernels' loops under Numba's njit: serial where
    NUMBA_NUM_THREADS is 1, else `parallel=True` with the rows in a prange."""
    import numba

    par = os.environ.get("NUMBA_NUM_THREADS") != "1"
    @numba.njit(parallel=par)
    def life(a, b):
        n, m = a.shape
        for i in numba.prange(n):
            for j in range(m):
                c = 0
                for di in range(-1, 2):
                    for dj in range(-1, 2):
                        if di != 0 or dj != 0:
                            c += a[(i + di) % n, (j + dj) % m]
                b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0

    @numba.njit(parallel=par)
    def life_inner(a, b):
        n, m = a.shape
        for i in numba.prange(1, n - 1):
            for j in range(1, m - 1):
                c = (a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1] + a[i, j - 1] + a[i, j + 1]
                     + a[i + 1, j - 1] + a[i + 1, j] + a[i + 1, j + 1])
                b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0

    @numba.njit(parallel=par)
    def heat(u, out, k):
        n, m = u.shape
        for i in numba.prange(n):
            for j in range(m):
                out[i, j] = u[i, j] + k * (u[(i - 1) % n, j] + u[(i + 1) % n, j] + u[i, (j - 1) % m]
                                           + u[i, (j + 1) % m] - np.float32(4.0) * u[i, j])

    @numba.njit(parallel=par)
    def heat_inner(u, out, k):
        n, m = u.shape
        for i in numba.prange(1, n - 1):
            for j in range(1, m - 1):
                out[i, j] = u[i, j] + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                           - np.float32(4.0) * u[i, j])

    return {"life": life, "life_inner": life_inner, "heat": heat, "heat_inner": heat_inner}


def stencils(n=512, rounds=21):
    """One step of each stencil on an n x n grid, best of `rounds` rounds,
    every peer timed in each round in turn (the same process); each peer's
    output is checked against NumPy's, bit for bit, first."""
    rng = np.random.default_rng(0)
    a = (rng.random((n, n)) < 0.3).astype(np.uint8)
    u = rng.random((n, n), dtype=np.float32)
    k = np.float32(0.2)
    cases = {  # name: (args, {peer: fn}), NumPy first
        "life": ((a,), {"numpy rolls": np_life, "tack": life, "tack loops": life_loops}),
        "life interior": ((a,), {"numpy slices": np_life_inner, "tack": life_inner}),
        "heat f32": ((u, k), {"numpy rolls": np_heat, "tack": heat}),
        "heat f32 interior": ((u, k), {"numpy slices": np_heat_inner, "tack": heat_inner}),
    }
    try:
        nb = numba_stencils()
        for case, key in (("life", "life"), ("life interior", "life_inner"), ("heat f32", "heat"),
                          ("heat f32 interior", "heat_inner")):
            cases[case][1]["numba"] = nb[key]
    except ImportError:
        pass
    calls = []  # (case, peer, a call of no arguments)
    for case, (args, peers) in cases.items():
        ref = None
        for peer, fn in peers.items():
            out = np.zeros_like(args[0])
            call = (lambda fn, out, args: lambda: fn(args[0], out, *args[1:]))(fn, out, args)
            call()
            if ref is None:
                ref = out
            else:
                assert np.array_equal(out, ref), (case, peer)
            calls.append((case, peer, call))
    times = {(c, p): float("inf") for c, p, _ in calls}
    for _ in range(rounds):
        for c, p, call in calls:
            times[c, p] = min(times[c, p], best(call, (), 5))
    for case in cases:
        print(f"{case} {n}^2: " + ", ".join(f"{p} {1e3 * t:.3f} ms" for (c, p), t in times.items() if c == case),
              flush=True)


if __name__ == "__main__":
    tack.set_default_device("cpu")
    what = sys.argv[1:] or ["gray_scott", "monte_carlo"]
    print(f"threads: TACK {os.environ.get('TACK_NUM_THREADS', 'all')}, NUMBA {os.environ.get('NUMBA_NUM_THREADS', 'all')}")
    if "gray_scott" in what:
        gray_scott()
    if "monte_carlo" in what:
        monte_carlo()
    if "stencils" in what:
        print(f"load average {os.getloadavg()[0]:.1f}")
        stencils()
        print(f"load average {os.getloadavg()[0]:.1f}")
