"""What the adjoint of a loop that carries values costs: a damped oscillator sub-stepped with a
two-element local state array, adjoint time over forward time on the CPU for several sub-step
counts (docs/differentiation.md, "Cost", carrying loops).

    python benchmarks/autodiff_substeps.py [--rounds 9] [--n 200000] [--steps 1 8 32 96] [--dump]

f64, one particle a thread.  The loop over sub-steps carries the state, so the adjoint replays it
with a tape (tack._autodiff_local).  Each time is the best of --rounds means of back-to-back
calls, after a first call that compiles, the rounds interleaved (each round times every case's
forward then its adjoint; autodiff_cost.best), so that a load that comes and goes weighs on both
alike: read the ratios.  --dump prints the adjoint's generated C for the first sub-step count.
"""

from __future__ import annotations

import argparse
import os
import sys

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
    cases = {}
    for st in args.steps:
        cases[st] = (lambda st=st: damped(x0, v0, c, st, 0.05, out),
                     lambda st=st: damped.adjoint(x0, v0, c, st, 0.05, out,
                                                  grads={"x0": gx, "v0": gv, "c": gc, "out": go}))
    t = best(cases, args.rounds)
    print(f"{'sub-steps':>9} {'forward':>10} {'adjoint':>10} {'adj/fwd':>8} {'adj ns/step':>12}")
    for st, (f, r) in t.items():
        print(f"{st:9d} {f * 1e3:8.3f}ms {r * 1e3:8.3f}ms {r / f:8.2f} {r / (n * st) * 1e9:12.2f}")


if __name__ == "__main__":
    main()
