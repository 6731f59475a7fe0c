"""One peer in one process.  For a kernel at a size: make the inputs, prepare
the peer (its first call compiles), reset the outputs, run once, check the
result; then time it.

The driver (run.py) keeps one worker process per peer alive (``--serve``) and
sends it commands, so that it can interleave the peers: every peer prepares
the same case, then the timing goes round the peers several times and each
keeps its best.  On a machine shared with other work, a slow spell then hits
every peer alike instead of whichever happened to be running.

Tack prepares first and saves its outputs (``save``); the others load them
(``against``) and are checked against Tack's result.  Where Tack has no valid
result they are checked against the NumPy/float64 reference instead, and Tack
itself is always checked against that reference.

Run alone (``python -m benchmarks.worker PEER [--quick]``) it measures one
peer over every kernel and prints JSON lines: handy when working on a peer.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback

import numpy as np

from benchmarks import kernels as K
from benchmarks import timing
from benchmarks.peers import load


def _emit(rec):
    print(json.dumps(rec), flush=True)


def _path(base, kernel, size):
    return os.path.join(base, f"{kernel}-{size}.npz")


def expected_for(spec, inp, against, size):
    """(expected outputs, what they are) for checking a peer's result."""
    if against:
        p = _path(against, spec.name, size)
        if os.path.exists(p):
            with np.load(p) as z:
                return {k: z[k] for k in z.files}, "tack"
    return spec.reference(inp), "reference"


def prepare_case(peer, spec, size, *, against=None, save=None):
    """Make the inputs, prepare the peer, run it once and check its result.

    Returns (record, run): ``run`` is None unless the record's status is "ok"
    (checked, not yet timed)."""
    rec = {"peer": peer.NAME, "kernel": spec.name, "size": size, "label": spec.label(size)}
    if spec.peers and peer.NAME not in spec.peers:
        rec.update(status="skipped", reason=f"not written for {peer.NAME}")
        return rec, None
    inp = spec.make(size)
    t0 = time.perf_counter()
    try:
        run, result = peer.prepare(spec.name, inp)
        run()  # compiles on the first call
        rec["first_call_s"] = time.perf_counter() - t0
        K.reset(spec, inp)
        run()
        got = result() if result else {k: inp[k] for k in spec.outputs}
        got = {k: np.array(v, copy=True) for k, v in got.items()}
    except Exception as e:  # noqa: BLE001
        rec.update(status="error", reason=f"{type(e).__name__}: {e}".splitlines()[0][:300])
        rec["trace"] = traceback.format_exc()[-2000:]
        return rec, None
    exp, what = expected_for(spec, inp, against, size)
    msg = spec.check(got, exp)
    if msg and what == "tack":  # Tack may be the wrong one: say which
        if spec.check(got, spec.reference(inp)) is None:
            rec["tack_wrong"] = True
        msg = f"differs from Tack's result: {msg}"
    rec["checked_against"] = what
    if msg:
        rec.update(status="wrong", reason=msg[:300])
        return rec, None
    if save:
        np.savez(_path(save, spec.name, size), **got)
    rec["status"] = "ok"
    return rec, run


def run_case(peer, spec, size, *, against=None, save=None, repeat=10, budget=1.0):
    """Measure one peer on one kernel at one size; returns a result record."""
    rec, run = prepare_case(peer, spec, size, against=against, save=save)
    if run is not None:
        rec["time_s"] = timing.best_of(run, repeat=repeat, budget=budget)
    return rec


def serve(peer):
    """Answer the driver's commands, one JSON object a line on stdin; each
    answer is one line on stdout starting with MARK (libraries print too)."""
    run = None
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "prepare":
            run = None
            gc.collect()
            rec, run = prepare_case(peer, K.SPECS[cmd["kernel"]], cmd["size"],
                                    against=cmd.get("against"), save=cmd.get("save"))
            rec.pop("trace", None)
            _reply(rec)
        elif op == "time":
            warm = cmd.get("warm", 0.0)  # untimed calls first: this peer's threads awake again
            t_end = time.perf_counter() + warm
            while time.perf_counter() < t_end:
                run()
            t = timing.best_of(run, repeat=cmd.get("repeat", 3), min_repeat=1,
                               budget=cmd.get("budget", 0.3))
            _reply({"time_s": t})
        elif op == "bandwidth":
            t = peer.bandwidth(cmd["bytes"], lambda f: timing.best_of(f, repeat=cmd.get("repeat", 10),
                                                                      budget=cmd.get("budget", 1.0)))
            _reply({"peer": peer.NAME, "status": "bandwidth", "bytes": cmd["bytes"], "times": t,
                    "threads": peer.threads()})
        elif op == "quit":
            break


MARK = "@@bench "


def _reply(obj):
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("peer")
    ap.add_argument("--kernels", default=",".join(K.ORDER))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--largest-only", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--save")
    ap.add_argument("--against")
    ap.add_argument("--cap", type=float, default=3.0, help="skip sizes projected to take longer per call")
    ap.add_argument("--bandwidth", action="store_true")
    ap.add_argument("--serve", action="store_true", help="take commands on stdin (the driver)")
    a = ap.parse_args(argv)
    peer = load(a.peer)
    why = peer.available()
    if why:
        (_reply if a.serve else _emit)({"peer": a.peer, "status": "unavailable", "reason": why})
        return 0
    peer.setup(a.threads or None)
    if a.serve:
        _reply({"peer": a.peer, "status": "ready"})
        serve(peer)
        return 0
    repeat, budget = (3, 0.1) if a.quick else (10, 1.0)
    if a.bandwidth:
        for nbytes in (64 * K.MiB,):
            t = peer.bandwidth(nbytes, lambda f: timing.best_of(f, repeat=repeat, budget=budget))
            _emit({"peer": a.peer, "status": "bandwidth", "bytes": nbytes, "times": t,
                   "threads": peer.threads()})
        return 0
    for name in a.kernels.split(","):
        spec = K.SPECS[name]
        sizes = spec.quick if a.quick else spec.sizes
        if a.largest_only:
            sizes = sizes[-1:]
        last = None
        for size in sizes:
            if last is not None:
                projected = last[1] * spec.work(size) / spec.work(last[0])
                if projected > a.cap:
                    _emit({"peer": a.peer, "kernel": name, "size": size, "label": spec.label(size),
                           "status": "skipped",
                           "reason": f"projected {projected:.1f} s per call (> {a.cap:g} s)"})
                    continue
            rec = run_case(peer, spec, size, against=a.against, save=a.save, repeat=repeat,
                           budget=budget)
            rec["threads"] = a.threads or 0
            _emit(rec)
            if rec["status"] == "ok":
                last = (size, rec["time_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
