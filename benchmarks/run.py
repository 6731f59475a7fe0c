#!/usr/bin/env python3
"""Run the CPU benchmarks: Tack beside Numba, Warp, Taichi, NumPy and C+OpenMP.

    python benchmarks/run.py            # full run (~10 min on 2 cores): docs/benchmarks.md + .png
    python benchmarks/run.py --quick    # tiny sizes, a few seconds per peer: a smoke test

Each peer runs in its own process (``benchmarks/worker.py --serve``), kept
alive for the whole run and driven from here.  For each kernel and size every
peer prepares the case, Tack first: its result is saved and every other
peer's result is checked against it before its time counts.  Then the timing
goes round the peers three times, each keeping its best (interleaving, so a
slow spell of a shared machine does not land on one peer only).  Then the
one-core runs for thread scaling (under ``taskset -c 0`` with
TACK_NUM_THREADS, OMP_NUM_THREADS and NUMBA_NUM_THREADS set to 1), the
bandwidth probe, launch overhead and start-up latencies, the Rodinia kernels
(benchmarks/rodinia.py, a section of their own), and the report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import kernels as K  # noqa: E402
from benchmarks import report  # noqa: E402
from benchmarks.peers import ORDER as PEERS  # noqa: E402

SCALING_PEERS = ["tack", "c", "numba", "taichi"]  # the multi-threaded ones


def _env(threads=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for k in ("TACK_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env.pop(k, None)
    if threads:
        for k in ("TACK_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env[k] = str(threads)
    env.setdefault("TI_LOG_LEVEL", "warn")
    return env


class Worker:
    """A peer's worker process (benchmarks/worker.py --serve), driven by commands."""

    def __init__(self, peer, threads=None):
        import queue
        import threading

        self.peer = peer
        cmd = [sys.executable, "-m", "benchmarks.worker", peer, "--serve"]
        if threads:
            cmd += ["--threads", str(threads)]
            if threads == 1 and shutil.which("taskset"):
                cmd = ["taskset", "-c", str(sorted(os.sched_getaffinity(0))[0]), *cmd]
        self.p = subprocess.Popen(cmd, cwd=ROOT, env=_env(threads), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        self.err = []

        def pump(stream, sink, end):
            for line in stream:
                sink(line)
            if end:
                sink(None)

        threading.Thread(target=pump, args=(self.p.stdout, self.q.put, True), daemon=True).start()
        threading.Thread(target=pump, args=(self.p.stderr, self.err.append, False), daemon=True).start()
        self.hello = self._read(600)
        self.alive = self.hello.get("status") == "ready"

    def _read(self, timeout):
        import queue

        from benchmarks.worker import MARK

        deadline = time.time() + timeout
        while True:
            try:
                line = self.q.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                self.close(kill=True)
                return {"peer": self.peer, "status": "crashed", "reason": f"no answer in {timeout:.0f} s"}
            if line is None:
                self.alive = False
                tail = [x for x in "".join(self.err).strip().splitlines() if x.strip()][-1:] or ["no output"]
                return {"peer": self.peer, "status": "crashed",
                        "reason": f"worker exited ({self.p.poll()}): {tail[0]}"[:300]}
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])

    def ask(self, timeout=900, **cmd):
        if not self.alive:
            return {"peer": self.peer, "status": "crashed", "reason": "worker is gone"}
        try:
            self.p.stdin.write(json.dumps(cmd) + "\n")
            self.p.stdin.flush()
        except OSError:
            self.alive = False
        return self._read(timeout)

    def close(self, kill=False):
        if self.p.poll() is None:
            if not kill:
                try:
                    self.p.stdin.write(json.dumps({"op": "quit"}) + "\n")
                    self.p.stdin.flush()
                    self.p.wait(timeout=30)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
        self.alive = False


def measure(peers, kernels, *, quick, saved, threads=None, largest_only=False, log=print):
    """Every case on every peer, interleaved; the records."""
    rounds, repeat, budget, cap = (1, 3, 0.1, 0.5) if quick else (3, 4, 1.0, 3.0)
    warm = 0.0 if quick else 0.02  # seconds of untimed calls before a peer's samples in a round
    workers, recs = {}, []
    for p in peers:
        w = Worker(p, threads)
        if w.alive:
            workers[p] = w
        else:
            rec = dict(w.hello, peer=p)
            if rec.get("status") == "crashed":
                rec["status"] = "unavailable"
            recs.append(rec)
            log(report.progress(rec))
    try:
        for name in kernels:
            spec = K.SPECS[name]
            sizes = spec.quick if quick else spec.sizes
            if largest_only:
                sizes = sizes[-1:]
            last = {}
            for size in sizes:
                live = {}
                for p, w in workers.items():
                    base = {"peer": p, "kernel": name, "size": size, "label": spec.label(size),
                            "threads": threads or 0}
                    if p in last:
                        projected = last[p][1] * spec.work(size) / spec.work(last[p][0])
                        if projected > cap:
                            rec = dict(base, status="skipped",
                                       reason=f"projected {projected:.1f} s per call (> {cap:g} s)")
                            recs.append(rec)
                            log(report.progress(rec))
                            continue
                    extra = {"save": saved} if p == "tack" and not threads else {"against": saved}
                    rec = dict(base, **w.ask(op="prepare", kernel=name, size=size, **extra))
                    if rec.get("status") == "ok":
                        live[p] = rec
                    else:
                        recs.append(rec)
                        log(report.progress(rec))
                for r in range(rounds):  # round the peers, each keeping its best
                    for p, rec in live.items():
                        ans = workers[p].ask(op="time", repeat=repeat, budget=budget / rounds, warm=warm)
                        if "time_s" in ans:
                            rec["time_s"] = min(rec.get("time_s", float("inf")), ans["time_s"])
                        else:
                            rec.update(status=ans.get("status", "crashed"), reason=ans.get("reason"))
                for p, rec in live.items():
                    recs.append(rec)
                    log(report.progress(rec))
                    if rec.get("status") == "ok":
                        last[p] = (size, rec["time_s"])
    finally:
        for w in workers.values():
            w.close()
    return recs


def bandwidth(quick):
    w = Worker("c")
    if not w.alive:
        return None
    rec = w.ask(op="bandwidth", bytes=64 * K.MiB, repeat=3 if quick else 10, budget=0.1 if quick else 1.0)
    w.close()
    print(report.progress(rec), flush=True)
    return rec if rec.get("status") == "bandwidth" else None


def paired_bandwidth(quick, rounds=5):
    """Tack's radius_squared at its largest size and C's plain stores of the
    same bytes, timed in alternation (each keeping its best), so that both see
    the same state of a shared machine: the target "within 1.5x of the
    write-bandwidth time" compares these two, not times taken minutes apart."""
    spec = K.SPECS["radius_squared"]
    size = (spec.quick if quick else spec.sizes)[-1]
    tk, c = Worker("tack"), Worker("c")
    try:
        if not (tk.alive and c.alive):
            return None
        rec = tk.ask(op="prepare", kernel=spec.name, size=size)
        if rec.get("status") != "ok":
            return None
        best = {"tack": float("inf"), "write": float("inf")}
        for _ in range(1 if quick else rounds):
            t = tk.ask(op="time", repeat=4, budget=0.3)
            b = c.ask(op="bandwidth", bytes=4 * size, repeat=4, budget=0.3)
            if "time_s" not in t or b.get("status") != "bandwidth":
                return None
            best["tack"] = min(best["tack"], t["time_s"])
            best["write"] = min(best["write"], b["times"]["write"])
        out = {"size": size, "bytes": 4 * size, "tack": best["tack"], "write": best["write"]}
        print(f"   paired: radius_squared {report.fmt_t(out['tack'])}, plain stores of the same bytes "
              f"{report.fmt_t(out['write'])}", flush=True)
        return out
    finally:
        tk.close()
        c.close()


def versions():
    import platform

    out = {"python": platform.python_version()}
    code = ("import importlib, json, sys; v = {}\n"
            "for m in sys.argv[1:]:\n"
            "    try: v[m] = getattr(importlib.import_module(m), '__version__', '?')\n"
            "    except Exception as e: v[m] = None\n"
            "print(json.dumps(v))")
    mods = ["tack", "numpy", "numba", "warp", "taichi"]
    r = subprocess.run([sys.executable, "-c", code, *mods], env=_env(), capture_output=True, text=True)
    try:
        out.update(json.loads(r.stdout.strip().splitlines()[-1]))
    except Exception:  # noqa: BLE001
        pass
    if isinstance(out.get("taichi"), (list, tuple)):
        out["taichi"] = ".".join(map(str, out["taichi"]))
    from benchmarks.peers import c_peer

    cc = subprocess.run([c_peer.compiler(), "--version"], capture_output=True, text=True)
    out["cc"] = (cc.stdout.splitlines() or ["?"])[0]
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out["cpu"] = cpu
    out["cores"] = len(os.sched_getaffinity(0))
    return out


def write(data, md, png, js):
    """Print the tables; write the markdown, the plot and the JSON where asked."""
    text = report.markdown(data)
    print()
    print(report.console(data))
    if js:
        with open(js, "w") as f:
            json.dump(data, f, indent=1)
    if md:
        with open(md, "w") as f:
            f.write(text)
        print(f"wrote {md}")
    if png:
        try:
            report.plot(data, png)
            print(f"wrote {png}")
        except ImportError as e:
            print(f"no plot: {e}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (smoke test)")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--kernels", default=",".join(K.ORDER))
    ap.add_argument("--md", default=None, help="markdown report (default docs/benchmarks.md; "
                    "--quick: none)")
    ap.add_argument("--png", default=None, help="plot (default docs/benchmarks.png; --quick: none)")
    ap.add_argument("--json", default=None, help="also write every record here")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--no-rodinia", action="store_true", help="skip the Rodinia kernels "
                    "(benchmarks/rodinia.py; never run with --quick)")
    ap.add_argument("--from-json", help="measure nothing: rewrite the report from a --json file")
    a = ap.parse_args(argv)
    if a.from_json:
        with open(a.from_json) as f:
            data = json.load(f)
        return write(data, a.md or os.path.join(ROOT, "docs", "benchmarks.md"),
                     a.png or os.path.join(ROOT, "docs", "benchmarks.png"), None)
    if not a.quick:
        a.md = a.md or os.path.join(ROOT, "docs", "benchmarks.md")
        a.png = a.png or os.path.join(ROOT, "docs", "benchmarks.png")
    peers = [p for p in PEERS if p in a.peers.split(",")]
    kernels = [k for k in K.ORDER if k in a.kernels.split(",")]
    t_start = time.time()
    data = {"quick": a.quick, "versions": versions(), "records": [], "scaling": [],
            "bandwidth": None, "launch": [], "startup": {}, "load": [os.getloadavg()[0]]}
    print(f"machine: {data['versions']['cpu']}, {data['versions']['cores']} cores", flush=True)
    log = lambda line: print(line, flush=True)  # noqa: E731
    if "c" in peers:
        data["bandwidth"] = bandwidth(a.quick)
    with tempfile.TemporaryDirectory(prefix="tack-bench-") as tmp:
        data["records"] = measure(peers, kernels, quick=a.quick, saved=tmp, log=log)
        if not a.no_scaling:
            data["scaling"] = measure([p for p in SCALING_PEERS if p in peers], kernels, quick=a.quick,
                                      saved=tmp, threads=1, largest_only=True, log=log)
    if "c" in peers:  # again at the end; the best of both
        again = bandwidth(a.quick)
        if again and data["bandwidth"]:
            for k, v in again["times"].items():
                data["bandwidth"]["times"][k] = min(v, data["bandwidth"]["times"][k])
        data["bandwidth"] = data["bandwidth"] or again
    if "c" in peers and "tack" in peers and "radius_squared" in kernels:
        data["paired"] = paired_bandwidth(a.quick)
    if not a.no_latency:
        from benchmarks import latency

        r = subprocess.run([sys.executable, "-m", "benchmarks.latency", "launch"], cwd=ROOT,
                           env=_env(), capture_output=True, text=True, timeout=600)
        data["launch"] = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        if r.returncode:
            data["launch"].append({"peer": "?", "what": "launch probe",
                                   "error": (r.stderr.strip().splitlines() or ["?"])[-1]})
        data["startup"] = latency.startup(repeat=1 if a.quick else 3)
    if not (a.quick or a.no_rodinia):  # the second suite (benchmarks/rodinia.py has its own --quick)
        from benchmarks import rodinia

        print("Rodinia:", flush=True)
        data["rodinia"] = rodinia.collect([p for p in rodinia.PEERS if p in peers], one_thread=True, log=log)
    data["elapsed_s"] = time.time() - t_start
    data["load"].append(os.getloadavg()[0])
    write(data, a.md, a.png, a.json)
    bad = [r for r in data["records"] + data["scaling"] if r.get("status") in ("wrong", "crashed", "error")]
    for r in bad:  # they are in the report too; a peer's failure does not fail the run
        print("warning:", report.progress(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
