"""What the bounds checks cost: each benchmark kernel's time with checks=True
(the default) over its time with checks=False.

    python benchmarks/checks_cost.py [--kernels triangle conv2d ...]
        [--sizes 1 2] [--threads 1 0] [--rounds 7] [--sample 0.02]

For every kernel of ``benchmarks.kernels.SPECS`` at two sizes (indices into the
spec's full size list, by default the second and third), Tack's version from
``benchmarks/peers/tack_peer.py`` is compiled twice, with and without checks,
and both are checked against the NumPy reference.  The two are then timed in
alternation: a round is one sample of the checked kernel followed at once by
one of the unchecked (the order flips each round), a sample being the mean of
enough back-to-back calls to last ``--sample`` seconds.  The ratio printed is
best checked sample / best unchecked sample over the rounds, with the median
of the rounds' own ratios beside it; a kernel is marked over the bar only when
both are.  Pairing and best-of are for a shared machine: a slow spell hits
both versions of a pair, and the best of several rounds is the one least
disturbed.  Both still move with the load, so a ratio a few percent from 1 is
noise; rerun a kernel alone to confirm one.  ``--clock cpu`` times the
process's CPU time (all its threads) instead of the wall clock: on a loaded
machine it does not count the time the process waited for a core, so one
thread's ratios hold steadier (with all threads it also counts the pool's
waiting).

Each thread count (``--threads``: 1, and 0 for Tack's default, all cores) runs
in its own process, since TACK_NUM_THREADS is read once, when the pool starts.
The issue's bar: every ratio within 1.10.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BAR = 1.10


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _sample(fn, number, clock):
    t0 = clock()
    for _ in range(number):
        fn()
    return (clock() - t0) / number


def measure(name, size, rounds, sample, clock=time.perf_counter):
    """(best checked, best unchecked, median paired ratio) in seconds."""
    import tack

    from benchmarks import kernels as K
    from benchmarks.peers import tack_peer

    spec = K.SPECS[name]
    inp = spec.make(size)
    fn, args, result = tack_peer.arguments(name, inp)
    off = tack.kernel(fn.__wrapped__, checks=False)
    runs = {True: lambda: fn(*args), False: lambda: off(*args)}
    for checks, run in runs.items():  # compile, and check the result of each
        K.reset(spec, inp)
        run()
        got = result() if result else {k: inp[k] for k in spec.outputs}
        bad = spec.check(got, spec.reference(inp))
        if bad:
            raise AssertionError(f"{name} at {size}, checks={checks}: {bad}")
    t0 = time.perf_counter()
    runs[True]()
    runs[False]()
    one = max((time.perf_counter() - t0) / 2, 1e-9)
    number = max(1, min(100000, int(sample / one)))
    best = {True: float("inf"), False: float("inf")}
    ratios = []
    for r in range(rounds):
        t = {}
        for checks in ((True, False) if r % 2 == 0 else (False, True)):
            t[checks] = _sample(runs[checks], number, clock)
            best[checks] = min(best[checks], t[checks])
        ratios.append(t[True] / t[False])
    return best[True], best[False], statistics.median(ratios)


def child(a):
    from benchmarks import kernels as K

    for name in a.kernels:
        spec = K.SPECS[name]
        for s in a.sizes:
            size = spec.sizes[min(s, len(spec.sizes) - 1)]
            on, off, med = measure(name, size, a.rounds, a.sample, CLOCKS[a.clock])
            print(json.dumps({"kernel": name, "size": spec.label(size), "on": on, "off": off,
                              "ratio": on / off, "median": med}), flush=True)


def main(argv=None):
    from benchmarks import kernels as K

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=list(K.SPECS), choices=list(K.SPECS))
    ap.add_argument("--sizes", nargs="+", type=int, default=[1, 2],
                    help="indices into each spec's size list (default: 1 2)")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 0],
                    help="TACK_NUM_THREADS values, 0 for the default (all cores)")
    ap.add_argument("--rounds", type=int, default=15, help="paired rounds (default 15)")
    ap.add_argument("--sample", type=float, default=0.01, help="seconds a sample lasts at least")
    ap.add_argument("--clock", choices=list(CLOCKS), default="wall",
                    help="wall time, or the process's CPU time (all its threads; steadier on a loaded machine)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a)
    print(f"checks=True time / checks=False time ({a.clock} clock); best of {a.rounds} paired rounds "
          f"(median of the rounds' ratios in brackets); bar {BAR:.2f}")
    over = []
    for th in a.threads:
        env = dict(os.environ)
        env.pop("TACK_NUM_THREADS", None)
        if th:
            env["TACK_NUM_THREADS"] = str(th)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--kernels", *a.kernels,
               "--sizes", *map(str, a.sizes), "--rounds", str(a.rounds), "--sample", str(a.sample), "--clock", a.clock]
        print(f"\nthreads: {th or 'all (default)'}")
        print(f"  {'kernel':<16}{'size':>12}{'checks on':>12}{'off':>12}{'ratio':>8}{'(median)':>10}")
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for line in p.stdout:
            r = json.loads(line)
            flag = "  over" if min(r["ratio"], r["median"]) > BAR else ""
            if flag:
                over.append((th, r["kernel"], r["size"], r["ratio"]))
            print(f"  {r['kernel']:<16}{r['size']:>12}{r['on'] * 1e3:>10.3f}ms{r['off'] * 1e3:>10.3f}ms"
                  f"{r['ratio']:>8.3f}{'(' + format(r['median'], '.3f') + ')':>10}{flag}", flush=True)
        if p.wait():
            return p.returncode
    print(f"\nover {BAR:.2f}: " + (", ".join(f"{k} {s} ({t or 'all'} threads) {r:.2f}" for t, k, s, r in over)
                                   if over else "none"))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())
