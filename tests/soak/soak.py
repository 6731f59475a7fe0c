"""The soak test: many threads in several processes calling the kernels of
tests/soak/kernels.py with random arguments for N minutes, while the parent
sends SIGINT to the workers and every call's result is compared with NumPy.

    python tests/soak/soak.py --minutes 5            (make soak MINUTES=5)

Each worker process runs --threads threads (the main thread one of them);
each thread loops: pick a kernel, a dtype it allows and a length (0, 1, 2,
odd and large ones), run it, compare every output with NumPy's (bit equality
unless the kernel states a tolerance), and now and then pass a bad input
that must raise the documented exception: an array of a dtype Tack has no
type for (TypeError), an array of the wrong rank (tack.CompileError), a
read-only output (ValueError), the same array as input and output of a
stencil or two overlapping views (ValueError), an input shorter than the
loop (IndexError).  The parent sends SIGINT to a random worker every 0.2-1
s: the default handler raises KeyboardInterrupt in the worker's main thread
(a running kernel stops, docs/design/runtime-contract.md), which the worker
counts and goes on.

Checked at the end: no worker crashed (exit status 0), none hung (a
watchdog kills the run when a worker reports no progress for --hang
seconds), no wrong result, every bad input raised its exception, and no
leak: RSS and open file descriptors measured after the warm-up (every
kernel and dtype compiled and run once, plus --warmup seconds) and at the
end may grow by at most RSS_TOLERANCE_MB + RSS_TOLERANCE_FRAC of the
warm-up RSS, and FD_TOLERANCE descriptors.  The figures are printed as one
block: calls, per-kernel counts, errors by kind, interrupts, RSS and fds.
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

RSS_TOLERANCE_MB = 24.0
RSS_TOLERANCE_FRAC = 0.05
FD_TOLERANCE = 2
LENGTHS = (0, 0, 1, 2, 3, 7, 31, 64, 257, 1000, 4099)


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def open_fds():
    return len(os.listdir("/proc/self/fd"))


# ------------------------------------------------------------------- worker
class Worker:
    def __init__(self, args):
        import numpy as np

        import tack

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import kernels

        self.np, self.tack, self.args = np, tack, args
        self.kernels = kernels.KERNELS
        if args.quick:  # one dtype per kernel: a quarter of the compiles, for the smoke run
            self.kernels = [k[:2] + (k[2][-1:],) + k[3:] for k in self.kernels]
        self.lock = threading.Lock()
        self.calls = collections.Counter()
        self.errors = collections.Counter()  # bad inputs: the exception each raised
        self.failures = []
        self.interrupts = 0
        self.interrupted_calls = 0
        self.stop = threading.Event()
        self.in_kernel = threading.local()  # the KeyboardInterrupts that stopped a running kernel
        self.progress = 0

    def fail(self, what):
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(what)

    def check(self, name, args, ref, tol, dtype, n):
        np = self.np
        if ref is None:  # random numbers: in range, and the same for the same seed
            out, seed = args
            again = np.zeros_like(out)
            self.kernel_by_name[name](again, seed)
            if not np.array_equal(out, again):
                self.fail(f"{name}: not repeatable for seed {seed}")
            if name == "rand_uniform" and out.size and not ((out >= 0) & (out < 1)).all():
                self.fail(f"{name}: outside [0, 1)")
            if name == "rand_int" and out.size and not ((out >= -5) & (out < 17)).all():
                self.fail(f"{name}: outside [-5, 17)")
            return
        for idx, want in ref.items():
            got = args[idx]
            if got.shape != want.shape or got.dtype != want.dtype:
                self.fail(f"{name}[{np.dtype(dtype).name}, n={n}]: shape/dtype {got.shape} {got.dtype} != "
                          f"{want.shape} {want.dtype}")
            elif tol == 0:
                if got.tobytes() != want.tobytes():
                    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))[:3]
                    self.fail(f"{name}[{np.dtype(dtype).name}, n={n}]: differs from NumPy at {bad.tolist()}: "
                              f"{got.reshape(-1)[bad].tolist()} != {want.reshape(-1)[bad].tolist()}")
            elif not np.allclose(got, want, rtol=tol, atol=tol):
                self.fail(f"{name}[{np.dtype(dtype).name}, n={n}]: not within {tol} of NumPy")

    def one_call(self, rng, pyrng, k=None, dtype=None, n=None):
        np = self.np
        name, kern, dtypes, make, ref, tol = k or pyrng.choice(self.kernels)
        dtype = dtype or pyrng.choice(dtypes)
        n = pyrng.choice(LENGTHS) if n is None else n
        args = make(rng, dtype, n)
        with np.errstate(all="ignore"):
            want = ref([a.copy() if isinstance(a, np.ndarray) else a for a in args]) if ref else None
        self.in_kernel.on = True
        kern(*args)
        self.in_kernel.on = False
        self.check(name, args, want, tol, dtype, n)
        with self.lock:
            self.calls[name] += 1
            self.progress += 1

    def bad_input(self, pyrng):
        """One bad input; it must raise the documented exception."""
        np, tack = self.np, self.tack
        by = self.kernel_by_name
        kind = pyrng.choice(("dtype", "ndim", "readonly", "alias", "overlap", "short"))
        expect = {"dtype": TypeError, "ndim": tack.CompileError, "readonly": ValueError, "alias": ValueError,
                  "overlap": ValueError, "short": IndexError}[kind]
        n = pyrng.choice((3, 8, 100))
        if kind == "dtype":
            call = lambda: by["add"](np.array(["x"] * n), np.zeros(n), np.zeros(n))  # noqa: E731
        elif kind == "ndim":
            call = lambda: by["neg"](np.zeros((n, 2), np.float32), np.zeros(n, np.float32))  # noqa: E731
        elif kind == "readonly":
            out = np.zeros(n, np.int32)
            out.flags.writeable = False
            call = lambda: by["square"](np.ones(n, np.int32), out)  # noqa: E731
        elif kind == "alias":
            a = np.ones(n, np.float64)
            call = lambda: by["stencil3"](a, a)  # noqa: E731
        elif kind == "overlap":
            a = np.ones(n + 1, np.int64)
            call = lambda: by["stencil3"](a[1:], a[:-1])  # noqa: E731
        else:
            call = lambda: by["add"](np.ones(n), np.ones(n - 1), np.zeros(n))  # noqa: E731
        try:
            call()
        except expect as e:
            with self.lock:
                self.errors[f"{kind}: {type(e).__name__}"] += 1
                self.progress += 1
            return
        except Exception as e:  # noqa: BLE001
            self.fail(f"bad input '{kind}' raised {type(e).__name__}: {e} (expected {expect.__name__})")
            return
        self.fail(f"bad input '{kind}' raised nothing (expected {expect.__name__})")

    def loop(self, seed, main):
        np = self.np
        rng = np.random.default_rng(seed)
        pyrng = random.Random(seed)
        while not self.stop.is_set():
            try:
                if pyrng.random() < 0.05:
                    self.bad_input(pyrng)
                else:
                    self.one_call(rng, pyrng)
            except KeyboardInterrupt:
                if not main:
                    raise
                with self.lock:
                    self.interrupts += 1
            except Exception:  # noqa: BLE001
                self.fail(traceback.format_exc(limit=4))

    def run(self):
        np, args = self.np, self.args
        self.kernel_by_name = {k[0]: k[1] for k in self.kernels}
        warnings.simplefilter("ignore", self.tack.RaceWarning)
        # warm-up: every kernel and dtype compiled and run once, with SIGINT ignored
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        rng = np.random.default_rng(args.seed)
        pyrng = random.Random(args.seed)
        for k in self.kernels:
            for dt in k[2]:
                self.one_call(rng, pyrng, k, dt, 64)
        for _ in range(20):
            self.bad_input(pyrng)
        threads = [threading.Thread(target=self.loop, args=(args.seed * 100 + t, False), daemon=True)
                   for t in range(1, args.threads)]
        reporter = threading.Thread(target=self.report, daemon=True)
        reporter.start()
        for t in threads:
            t.start()
        # interrupts only once every thread has started (Thread.start waits, and
        # a KeyboardInterrupt there would leave a thread half made)
        print(json.dumps({"event": "compiled"}), flush=True)
        signal.signal(signal.SIGINT, old)
        t_end = time.monotonic() + args.seconds
        self.t_warm = time.monotonic() + min(args.warmup, args.seconds / 3)
        self.base = None
        main_seed = args.seed * 100
        while True:  # the main thread calls kernels too, and takes the KeyboardInterrupts
            try:
                if time.monotonic() >= t_end:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the end: no more interrupts
                    break
                self.loop_once(main_seed)
                main_seed += 1
            except KeyboardInterrupt:
                with self.lock:
                    self.interrupts += 1
                    self.interrupted_calls += getattr(self.in_kernel, "on", False)
                self.in_kernel.on = False
        self.stop.set()
        for t in threads:
            t.join(60)
            if t.is_alive():
                self.fail("a thread did not stop within 60 s")
        import gc

        gc.collect()
        end = {"rss_mb": rss_mb(), "fds": open_fds()}
        base = self.base or end
        print(json.dumps({"event": "done", "calls": dict(self.calls), "errors": dict(self.errors),
                          "interrupts": self.interrupts, "in_kernel": self.interrupted_calls, "failures": self.failures, "rss_start_mb": base["rss_mb"],
                          "rss_end_mb": end["rss_mb"], "fds_start": base["fds"], "fds_end": end["fds"]}),
              flush=True)

    def loop_once(self, seed):
        np = self.np
        rng = np.random.default_rng(seed)
        pyrng = random.Random(seed)
        for _ in range(20):
            if self.base is None and time.monotonic() >= self.t_warm:
                import gc

                gc.collect()
                self.base = {"rss_mb": rss_mb(), "fds": open_fds()}
            try:
                if pyrng.random() < 0.05:
                    self.bad_input(pyrng)
                else:
                    self.one_call(rng, pyrng)
            except KeyboardInterrupt:
                raise
            except Exception:  # noqa: BLE001
                self.fail(traceback.format_exc(limit=4))

    def report(self):
        while not self.stop.wait(1.0):
            with self.lock:
                p = self.progress
            print(json.dumps({"event": "progress", "progress": p}), flush=True)


# ------------------------------------------------------------------- parent
def parent(args):
    seconds = args.minutes * 60.0
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--seconds", str(seconds), "--threads",
           str(args.threads), "--warmup", str(args.warmup)] + (["--quick"] if args.quick else [])
    procs = [subprocess.Popen(cmd + ["--seed", str(args.seed + p)], stdout=subprocess.PIPE, text=True)
             for p in range(args.procs)]
    state = [{"progress": -1, "last": time.monotonic(), "compiled": None, "done": None} for _ in procs]
    problems = []

    def read(i, p):
        for line in p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            st = state[i]
            if ev["event"] == "progress" and ev["progress"] != st["progress"]:
                st["progress"], st["last"] = ev["progress"], time.monotonic()
            elif ev["event"] == "compiled":
                st["compiled"] = st["last"] = time.monotonic()
            elif ev["event"] == "done":
                st["done"], st["last"] = ev, time.monotonic()

    readers = [threading.Thread(target=read, args=(i, p), daemon=True) for i, p in enumerate(procs)]
    for r in readers:
        r.start()
    pyrng = random.Random(args.seed)
    sent = 0
    compile_limit = time.monotonic() + args.compile_limit
    while any(p.poll() is None for p in procs):
        time.sleep(pyrng.uniform(0.2, 1.0))
        now = time.monotonic()
        for i, p in enumerate(procs):
            st = state[i]
            limit = args.hang if st["compiled"] else max(args.hang, compile_limit - now)
            if p.poll() is None and now - st["last"] > limit and st["done"] is None:
                problems.append(f"worker {i} hung: no progress for {now - st['last']:.0f} s (watchdog)")
                p.kill()
        live = [i for i, p in enumerate(procs) if p.poll() is None and state[i]["compiled"]
                and state[i]["done"] is None and now - state[i]["compiled"] < seconds - 2]
        if live:
            i = pyrng.choice(live)
            try:
                procs[i].send_signal(signal.SIGINT)
                sent += 1
            except ProcessLookupError:
                pass
    for r in readers:
        r.join(10)
    calls, errors = collections.Counter(), collections.Counter()
    interrupts = in_kernel = 0
    for i, p in enumerate(procs):
        if p.returncode != 0:
            problems.append(f"worker {i} exited with status {p.returncode}")
        d = state[i]["done"]
        if d is None:
            problems.append(f"worker {i} gave no final report")
            continue
        calls.update(d["calls"])
        errors.update(d["errors"])
        interrupts += d["interrupts"]
        in_kernel += d["in_kernel"]
        problems += [f"worker {i}: {f}" for f in d["failures"]]
        grow = d["rss_end_mb"] - d["rss_start_mb"]
        allowed = RSS_TOLERANCE_MB + RSS_TOLERANCE_FRAC * d["rss_start_mb"]
        if grow > allowed:
            problems.append(f"worker {i}: RSS grew {grow:.1f} MB after warm-up (allowed {allowed:.1f})")
        if d["fds_end"] - d["fds_start"] > FD_TOLERANCE:
            problems.append(f"worker {i}: open fds {d['fds_start']} -> {d['fds_end']}")
    print(f"soak: {args.minutes:g} min, {args.procs} processes x {args.threads} threads, {len(calls)} kernels")
    print(f"  kernel calls checked against NumPy: {sum(calls.values())}")
    print("  per kernel: " + ", ".join(f"{k} {v}" for k, v in sorted(calls.items())))
    print(f"  bad inputs raised: {sum(errors.values())} (" + ", ".join(f"{k} {v}" for k, v in sorted(errors.items()))
          + ")")
    print(f"  SIGINT sent: {sent}; KeyboardInterrupt caught by workers: {interrupts}, {in_kernel} of them "
          f"stopping a running kernel call (signals sent close together arrive as one)")
    for i in range(len(procs)):
        d = state[i]["done"]
        if d:
            print(f"  worker {i}: RSS {d['rss_start_mb']:.1f} -> {d['rss_end_mb']:.1f} MB after warm-up "
                  f"(tolerance {RSS_TOLERANCE_MB:g} MB + {RSS_TOLERANCE_FRAC:.0%}), open fds {d['fds_start']} -> "
                  f"{d['fds_end']} (tolerance {FD_TOLERANCE})")
    if len(calls) < args.min_kernels:
        problems.append(f"only {len(calls)} kernels were called")
    if problems:
        print("soak FAILED:")
        for p in problems:
            print("  " + p.replace("\n", "\n    "))
        return 1
    print("soak passed")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("MINUTES", 5)))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds after compiling before RSS/fds are taken")
    ap.add_argument("--hang", type=float, default=60.0, help="watchdog: seconds without progress")
    ap.add_argument("--compile-limit", type=float, default=600.0, help="seconds allowed for the first compiles")
    ap.add_argument("--min-kernels", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="one dtype per kernel (fewer compiles)")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--seconds", type=float)
    args = ap.parse_args()
    if args.worker:
        Worker(args).run()
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
