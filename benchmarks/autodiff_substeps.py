"""What the adjoint of a loop that carries values costs: a damped oscillator sub-stepped with a
two-element local state array, adjoint time over forward time on the CPU for several sub-step
counts (docs/differentiation.md, "Cost", carrying loops).

    python benchmarks/autodiff_substeps.py [--rounds 9] [--n 200000] [--steps 1 8 32 96] [--dump]
        [--before OLD_AUTODIFF_LOCAL.py] [--cpu]

f64, one particle a thread.  The loop over sub-steps carries the state, so the adjoint replays it
with a tape (tack._autodiff_local).  Each time is the best of --rounds means of back-to-back
calls, after a first call that compiles, the rounds interleaved (each round times every case's
forward then its adjoint; autodiff_cost.best), so that a load that comes and goes weighs on both
alike: read the ratios.  --dump prints the adjoint's generated C for the first sub-step count.
--before takes another version of tack/_autodiff_local.py (``git show REV:python/tack/_autodiff_local.py
> old.py``) and times the adjoint it generates beside this one's, in the same process, after
checking that both give the same gradients bit for bit.  --cpu runs on one thread and times
process CPU time, which a loaded machine disturbs least.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tack  # noqa: E402
from autodiff_cost import best  # noqa: E402


@tack.kernel
def damped(x0, v0, c, steps, dt, out):
    for i in range(out.shape[0]):
        s = np.zeros(2)                  # the particle's state: position, velocity
        s[0] = x0[i]
        s[1] = v0[i]
        for k in range(steps):
            s[1] = s[1] - dt * (s[0] + c[i] * s[1])
            s[0] += dt * s[1]
        out[i] = s[0] * s[0] + s[1] * s[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--steps", type=int, nargs="+", default=[1, 8, 32, 96])
    parser.add_argument("--dump", action="store_true")
    parser.add_argument("--before", metavar="FILE")
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.n
    x0, v0, c = rng.random(n) - 0.5, rng.random(n) - 0.5, rng.random(n) * 0.1
    out = np.zeros(n)
    gx, gv, gc, go = np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n)
    if args.dump:
        from tack import _autodiff_run

        a = (x0, v0, c, args.steps[0], 0.05, out)
        adj, bound, names, kinds = _autodiff_run.build(damped, a, {})
        grads = [np.zeros(1) if kinds[p][0] == "fscalar" else np.zeros_like(bound.arguments[p]) for p in names]
        print(adj.generated_source(*a, *grads, target="c"))
        return
    kernels = {"": damped}
    if args.before:
        kernels = _versions(args.before)
    cases = {}
    for st in args.steps:
        res = []
        for tag, k in kernels.items():
            g = {"x0": np.zeros(n), "v0": np.zeros(n), "c": np.zeros(n), "out": np.ones(n)}
            k.adjoint(x0, v0, c, st, 0.05, out, grads=g)
            res.append(g)
            cases[(st, tag)] = (lambda k=k, st=st: k(x0, v0, c, st, 0.05, out),
                                lambda k=k, g=g, st=st: k.adjoint(x0, v0, c, st, 0.05, out, grads=g))
        for p in ("x0", "v0", "c"):
            if not all(np.array_equal(r[p], res[0][p]) for r in res):
                raise SystemExit(f"{st} sub-steps: the versions' gradients of {p} differ")
    if args.cpu:
        tack.config.num_threads = 1
    t = best(cases, args.rounds, timer=time.process_time if args.cpu else time.perf_counter)
    print(f"{'sub-steps':>9} {'version':>7} {'forward':>10} {'adjoint':>10} {'adj/fwd':>8} {'adj ns/step':>12}")
    for (st, tag), (f, r) in t.items():
        print(f"{st:9d} {tag:>7} {f * 1e3:8.3f}ms {r * 1e3:8.3f}ms {r / f:8.2f} {r / (n * st) * 1e9:12.2f}")
        if tag == "after":
            f0, r0 = t[(st, "before")]
            print(f"{'':9} adjoint after / before: {r / r0:.2f}")


def _versions(path):
    """{"before": the kernel whose adjoint the _autodiff_local at `path` generates, "after": this
    one's}: the generator modules' references swapped while each adjoint is built."""
    import importlib.util

    from tack import _autodiff, _autodiff_local, _autodiff_run

    spec = importlib.util.spec_from_file_location("tack._autodiff_local_before", path)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    out = {}
    a = (np.ones(2), np.ones(2), np.ones(2), 1, 0.05, np.zeros(2))
    g = {"x0": np.zeros(2), "v0": np.zeros(2), "c": np.zeros(2), "out": np.ones(2)}
    for tag, mod in (("before", old), ("after", _autodiff_local)):
        _autodiff._local = _autodiff_run._autodiff_local = mod
        try:
            out[tag] = tack.kernel(damped.__wrapped__)
            out[tag].adjoint(*a, grads=g)  # built now, with this generator
        finally:
            _autodiff._local = _autodiff_run._autodiff_local = _autodiff_local
    return out


if __name__ == "__main__":
    main()
