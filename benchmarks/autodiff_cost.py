"""What an adjoint costs: each kernel's adjoint time over its forward time on the CPU, and the
same workloads through Warp's CPU tape when Warp is importable (docs/differentiation.md, "Cost").

    python benchmarks/autodiff_cost.py [--rounds 7] [--no-warp] [--cpu-time] [--before OLD_AUTODIFF_GATHER.py]

Three kernels, f32: an elementwise expression of 4M elements (sin, exp, sqrt), springs over 1M
random pairs (a scatter: force[i] += f, force[j] -= f) and one step of a 2-D heat stencil on
2048 x 2048.  Tack's forward is the kernel's call and its adjoint ``kernel.adjoint``; Warp's
forward is ``wp.launch`` and its adjoint ``wp.launch(..., adjoint=True)``, the launch its tape
makes in ``backward``.  Each time is the best of --rounds means of back-to-back calls, after a
first call that compiles, the rounds interleaved (each round times every case's forward and
adjoint), so that a load on the machine that comes and goes weighs on both alike.  With
--cpu-time the times are the process's CPU time instead of the wall clock's: on a loaded machine,
with TACK_NUM_THREADS=1, the measure the load disturbs least (with more threads it sums theirs).
Warp is not one of the project's dependencies: install warp-lang beside it to get its column.
--before takes another version of tack/_autodiff_gather.py (``git show
REV:python/tack/_autodiff_gather.py > old.py``) and times the stencil's adjoint that it generates
beside this one's, the rounds interleaved in the same process, after checking that both give the
same gradients bit for bit (f32 and f64, odd shapes too).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tack

N_WAVE = 1 << 22
N_SPRING = 1 << 20
N_HEAT = 2048


@tack.kernel
def wave(x, y):
    for i in range(x.shape[0]):
        y[i] = tack.sin(x[i]) * tack.exp(-x[i] * x[i]) + tack.sqrt(1.0 + x[i] * x[i])


@tack.kernel
def springs(pos, a, b, rest, force):
    for s in range(a.shape[0]):
        i = a[s]
        j = b[s]
        d = pos[j] - pos[i]
        f = 10.0 * (abs(d) - rest[s]) * tack.sign(d)
        force[i] += f
        force[j] -= f


@tack.kernel
def heat(u, k, unew):
    n, m = u.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
        unew[i, j] = u[i, j] + k[i, j] * lap


def _batch(fn, sync, timer=time.perf_counter):
    """The mean time (by `timer`) of back-to-back calls of fn, for about 0.2 s (at most 50 calls)."""
    reps, t0, w0 = 0, timer(), time.perf_counter()
    while True:
        fn()
        reps += 1
        sync()
        if time.perf_counter() - w0 > 0.2 or reps >= 50:
            return (timer() - t0) / reps


def best(cases, rounds, sync=lambda: None, timer=time.perf_counter):
    """{name: (forward, adjoint)}: each the best of `rounds` batch means, the batches interleaved
    (every round times each case's forward then its adjoint), so that a load that comes and goes
    on the machine weighs on both alike."""
    for f, r in cases.values():
        f()
        r()
        sync()
    out = {name: [float("inf"), float("inf")] for name in cases}
    for _ in range(rounds):
        for name, fns in cases.items():
            for k, fn in enumerate(fns):
                out[name][k] = min(out[name][k], _batch(fn, sync, timer))
    return {name: tuple(t) for name, t in out.items()}


def data():
    rng = np.random.default_rng(0)
    return {
        "wave": (rng.random(N_WAVE, np.float32),),
        "springs": (rng.random(N_SPRING, np.float32), rng.integers(0, N_SPRING, N_SPRING).astype(np.int32),
                    rng.integers(0, N_SPRING, N_SPRING).astype(np.int32), np.full(N_SPRING, 0.1, np.float32)),
        "heat": (rng.random((N_HEAT, N_HEAT), np.float32), np.full((N_HEAT, N_HEAT), 0.1, np.float32)),
    }


def tack_times(d, rounds, timer=time.perf_counter):
    x, = d["wave"]
    y, gx, gy = np.zeros_like(x), np.zeros_like(x), np.ones_like(x)
    pos, a, b, rest = d["springs"]
    force, gp, gr, gf = np.zeros_like(pos), np.zeros_like(pos), np.zeros_like(rest), np.ones_like(pos)
    u, k = d["heat"]
    un, gu, gk, gun = np.zeros_like(u), np.zeros_like(u), np.zeros_like(k), np.ones_like(u)
    cases = {
        "wave": (lambda: wave(x, y), lambda: wave.adjoint(x, y, grads={"x": gx, "y": gy})),
        "springs": (lambda: springs(pos, a, b, rest, force),
                    lambda: springs.adjoint(pos, a, b, rest, force, grads={"pos": gp, "rest": gr, "force": gf})),
        "heat": (lambda: heat(u, k, un), lambda: heat.adjoint(u, k, un, grads={"u": gu, "k": gk, "unew": gun})),
    }
    return best(cases, rounds, timer=timer)


def gather_versions(path):
    """{"before": heat whose adjoint the _autodiff_gather at `path` generates, "after": this one's}:
    the generator module swapped while each adjoint is built (tack._autodiff imports it at each
    loop's adjoint).  Raises SystemExit where the two give different gradients, to the bit."""
    import importlib.util
    import sys

    from tack import _autodiff_gather

    spec = importlib.util.spec_from_file_location("tack._autodiff_gather_before", path)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    out = {}
    for tag, mod in (("before", old), ("after", _autodiff_gather)):
        sys.modules["tack._autodiff_gather"] = tack._autodiff_gather = mod
        try:
            k = out[tag] = tack.kernel(heat.__wrapped__)
            rng = np.random.default_rng(1)
            for shape, dt in (((3, 3), np.float64), ((7, 5), np.float32)):  # built now, with this generator
                u, kk, s = (rng.random(shape).astype(dt) for _ in range(3))
                k.adjoint(u, kk, np.zeros_like(u), grads={"u": np.zeros_like(u), "k": np.zeros_like(u), "unew": s})
        finally:
            sys.modules["tack._autodiff_gather"] = tack._autodiff_gather = _autodiff_gather
    rng = np.random.default_rng(2)
    for shape, dt in (((3, 3), np.float64), ((4, 3), np.float32), ((7, 5), np.float32), ((9, 37), np.float64),
                      ((131, 261), np.float32), ((67, 130), np.float64)):
        u, kk, s = (rng.random(shape).astype(dt) - 0.3 for _ in range(3))
        res = []
        for k in out.values():
            g = {"u": rng.random(shape).astype(dt), "k": rng.random(shape).astype(dt), "unew": s.copy()}
            g["u"][:], g["k"][:] = u * 0.5, kk * 0.25  # the same start for both: adds onto what is there
            k.adjoint(u, kk, np.zeros_like(u), grads=g)
            res.append(g)
        for p in ("u", "k", "unew"):
            if res[0][p].tobytes() != res[1][p].tobytes():
                raise SystemExit(f"heat {shape} {np.dtype(dt).name}: the versions' gradients of {p} differ")
    return out


def before_times(d, path, rounds, timer=time.perf_counter):
    """{"before": (forward, adjoint), "after": (forward, adjoint)} of the heat stencil, the two
    generators' adjoints timed in the same rounds, on the arrays tack_times uses (allocated before
    the check's: where an array lies decides much of a stencil's time -- freed arrays of
    megabytes move NumPy's next ones from their own mappings into the heap, at other offsets in
    a page, and the forward took twice as long there)."""
    u, k = d["heat"]
    un, gu, gk, gun = np.zeros_like(u), np.zeros_like(u), np.zeros_like(k), np.ones_like(u)
    ks = gather_versions(path)
    cases = {tag: (lambda h=h: h(u, k, un), lambda h=h: h.adjoint(u, k, un, grads={"u": gu, "k": gk, "unew": gun}))
             for tag, h in ks.items()}
    return best(cases, rounds, timer=timer)


def warp_times(d, rounds, timer=time.perf_counter):
    import warp as wp

    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def w_wave(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(x[i]) * wp.exp(-x[i] * x[i]) + wp.sqrt(1.0 + x[i] * x[i])

    @wp.kernel
    def w_springs(pos: wp.array(dtype=float), a: wp.array(dtype=int), b: wp.array(dtype=int),
                  rest: wp.array(dtype=float), force: wp.array(dtype=float)):
        s = wp.tid()
        i = a[s]
        j = b[s]
        dd = pos[j] - pos[i]
        f = 10.0 * (wp.abs(dd) - rest[s]) * wp.sign(dd)
        wp.atomic_add(force, i, f)
        wp.atomic_sub(force, j, f)

    @wp.kernel
    def w_heat(u: wp.array2d(dtype=float), k: wp.array2d(dtype=float), unew: wp.array2d(dtype=float)):
        i, j = wp.tid()
        n = u.shape[0]
        m = u.shape[1]
        if i < 1 or j < 1 or i >= n - 1 or j >= m - 1:
            return
        lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
        unew[i, j] = u[i, j] + k[i, j] * lap

    dev = "cpu"

    def arr(v, grad=True):
        return wp.array(v, device=dev, requires_grad=grad)

    x, = d["wave"]
    wx, wy = arr(x), arr(np.zeros_like(x))
    pos, a, b, rest = d["springs"]
    wpos, wa, wb, wr, wf = arr(pos), arr(a, False), arr(b, False), arr(rest), arr(np.zeros_like(pos))
    u, k = d["heat"]
    wu, wk, wun = arr(u), arr(k), arr(np.zeros_like(u))

    def launches(kernel, dim, inputs, outputs):
        def fwd():
            wp.launch(kernel, dim=dim, inputs=inputs + outputs, device=dev)

        def adj():
            wp.launch(kernel, dim=dim, inputs=inputs + outputs, device=dev, adjoint=True,
                      adj_inputs=[getattr(v, "grad", None) if isinstance(v, wp.array) else None for v in inputs + outputs],
                      adj_outputs=[])
        return fwd, adj

    cases = {"wave": launches(w_wave, N_WAVE, [wx], [wy]),
             "springs": launches(w_springs, N_SPRING, [wpos, wa, wb, wr], [wf]),
             "heat": launches(w_heat, (N_HEAT, N_HEAT), [wu, wk], [wun])}
    return best(cases, rounds, wp.synchronize, timer)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-warp", action="store_true")
    parser.add_argument("--cpu-time", action="store_true", help="time by the process's CPU time (one thread: "
                        "TACK_NUM_THREADS=1), which a loaded machine disturbs least")
    parser.add_argument("--before", metavar="FILE", help="another version of tack/_autodiff_gather.py: the heat "
                        "stencil's adjoint it generates, timed beside this one's after a check of the bits")
    args = parser.parse_args()
    timer = time.process_time if args.cpu_time else time.perf_counter
    d = data()
    if args.before:
        t = before_times(d, args.before, args.rounds, timer)
        print(f"{'heat':10} {'forward':>10} {'adjoint':>10} {'adj/fwd':>8}")
        for tag, (f, r) in t.items():
            print(f"{tag:10} {f * 1e3:8.2f}ms {r * 1e3:8.2f}ms {r / f:8.2f}")
        print(f"adjoint after / before: {t['after'][1] / t['before'][1]:.3f}")
        return
    t = tack_times(d, args.rounds, timer)
    w = None
    if not args.no_warp:
        try:
            w = warp_times(d, args.rounds, timer)
        except ImportError:
            print("(Warp is not installed: pip install warp-lang for its column)")
    print(f"{'kernel':10} {'tack fwd':>10} {'tack adj':>10} {'adj/fwd':>8}" +
          (f" {'warp fwd':>10} {'warp adj':>10} {'adj/fwd':>8}" if w else ""))
    for name, (f, r) in t.items():
        line = f"{name:10} {f * 1e3:8.2f}ms {r * 1e3:8.2f}ms {r / f:8.2f}"
        if w:
            wf, wr = w[name]
            line += f" {wf * 1e3:8.2f}ms {wr * 1e3:8.2f}ms {wr / wf:8.2f}"
        print(line)


if __name__ == "__main__":
    main()
