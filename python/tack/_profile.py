"""tack.profile(): where the time of a run goes, compiles and launches.

The clocks are read in libtack, where the work happens (src/runtime/profile.c):
this module starts the recorder, takes its events when the profile ends, and
presents them two ways -- a table of totals sorted by time (``str(p)``,
``p.table()``, printed at the end with ``print=True``) and a Chrome trace
(``p.save("trace.json")``, the Trace Event Format that Perfetto and
chrome://tracing open), with a track per host thread, per CPU pool thread and
per GPU.  docs/performance.md describes what each step measures.
"""

from __future__ import annotations

import builtins
import contextlib
import json
from typing import NamedTuple

from . import _core

__all__ = ["profile", "ProfileEvent"]


class ProfileEvent(NamedTuple):
    """One recorded step.  ``kind``: "compile", "launch" or "worker" (a CPU pool
    thread's part of a launch's parallel loop); ``phase``: what ran ("frontend",
    "lower", "passes", "emit", "cc", "cache hit", "nvrtc", "hiprtc", ...,
    "launch", "parallel loop"); ``name``: the kernel; ``device``: "cpu",
    "cuda:0", "host" (the front end), "python" (debug mode), or the compile
    target ("c", "cuda", ...) for the compiler's own steps; ``thread``: the host
    thread's number in the profile (a worker's: its pool slot, 0 the caller);
    times in nanoseconds on the host's monotonic clock; ``device_ns`` -1 where
    not measured."""

    kind: str
    phase: str
    name: str
    device: str
    thread: int
    start_ns: int
    host_ns: int
    device_ns: int


class profile(contextlib.ContextDecorator):
    """Record every compile and launch while the block runs (or, as a
    decorator, while the function runs; the last call's events are kept).

    ``print=True`` prints the table when the block ends; ``trace="file.json"``
    saves the Chrome trace then.  Afterwards ``events`` holds the steps in the
    order they ended, ``table()`` (also ``str(p)``) the totals per kernel and
    step sorted by total time, ``save(path)`` writes the trace.  One profile
    records at a time in a process; with none recording, launches pay nothing
    measurable.  GPU device times are read when the profile ends (it waits for
    the device); one that cannot be read raises RuntimeError then.

    >>> import numpy as np, tack
    >>> @tack.kernel
    ... def scale(x, a):
    ...     for i in range(x.shape[0]):
    ...         x[i] *= a
    >>> x = np.ones(1000)
    >>> with tack.profile() as p:
    ...     for _ in range(3):
    ...         scale(x, 2.0)
    >>> [e.phase for e in p.events if e.kind == "launch"]
    ['launch', 'launch', 'launch']
    """

    def __init__(self, *, print: bool = False, trace: str | None = None):  # noqa: A002 (the keyword users write)
        self._print = print
        self._trace = trace
        self._cap = None
        self._t0 = 0
        self.events: list[ProfileEvent] = []

    def __enter__(self):
        if self._cap is not None:
            raise RuntimeError("this tack.profile() is already recording (profiles do not nest)")
        self.events = []
        self._cap = _core._profile_start()
        self._t0 = _core._profile_now()
        return self

    def __exit__(self, exc_type, exc, tb):
        cap, self._cap = self._cap, None
        events, error = _core._profile_stop(cap)
        self.events = [ProfileEvent(*e) for e in events]
        if self._print:
            builtins.print(self.table())
        if self._trace:
            self.save(self._trace)
        if error is not None and exc_type is None:
            raise RuntimeError(f"tack.profile: a launch's device time could not be read ({error}); its "
                               f"device_ns is -1, the other events are kept")
        return False

    def _rows(self):
        rows = {}
        for e in self.events:
            if e.kind == "worker":  # a part of a launch already counted: the trace shows them
                continue
            r = rows.setdefault((e.kind, e.phase, e.name, e.device), [0, 0, 0, 0, 0])
            r[0] += 1
            r[1] += e.host_ns
            if e.device_ns >= 0:
                r[2] += e.device_ns
                r[3] += 1
            r[4] += max(e.host_ns, e.device_ns)
        return sorted(rows.items(), key=lambda kv: -kv[1][4])

    def table(self) -> str:
        """The totals per (kind, step, kernel, device), the largest total time
        first (a step's time is the larger of its host and device times)."""
        head = ("kind", "step", "kernel", "device", "calls", "host total", "host mean", "device total",
                "device mean")
        lines = [head]
        for (kind, phase, name, device), (n, host, dev, ndev, _) in self._rows():
            lines.append((kind, phase, name, device, str(n), _ms(host), _ms(host / n),
                          _ms(dev) if ndev else "-", _ms(dev / ndev) if ndev else "-"))
        width = [max(len(row[i]) for row in lines) for i in range(len(head))]
        out = []
        for k, row in enumerate(lines):
            out.append("  ".join(c.ljust(w) if i < 4 else c.rjust(w) for i, (c, w) in enumerate(zip(row, width))))
            if k == 0:
                out.append("  ".join("-" * w for w in width))
        if len(lines) == 1:
            out.append("(nothing was compiled or launched)")
        return "\n".join(out)

    def __str__(self):
        return self.table()

    def trace(self) -> dict:
        """The Chrome trace (Trace Event Format) as a dict: a "host" process
        with a track per host thread (compiles and launches, host time), and
        a process per device: on the CPU a track per pool thread (its part of
        each parallel loop), and a "kernels" track of each launch's device
        time.  A GPU kernel's device span starts at the later of its launch on
        the host and the end of the device's previous kernel (the events
        measure durations, not start times); times in microseconds from the
        profile's start."""
        t0 = self._t0 if self._t0 else min((e.start_ns for e in self.events), default=0)
        out = []
        pids = {"host": 1}
        named = set()

        def pid(device):
            if device not in pids:
                pids[device] = len(pids) + 1
            return pids[device]

        def name_track(p, tid, label):
            if (p, tid) not in named:
                named.add((p, tid))
                out.append({"name": "thread_name", "ph": "M", "pid": p, "tid": tid, "args": {"name": label}})

        busy = {}  # a GPU's end of its last kernel (us)
        for e in sorted(self.events, key=lambda e: e.start_ns):
            ts = (e.start_ns - t0) / 1e3
            args = {"device": e.device, "host_us": e.host_ns / 1e3}
            if e.device_ns >= 0:
                args["device_us"] = e.device_ns / 1e3
            if e.kind == "worker":
                p = pid(e.device)
                name_track(p, e.thread + 1, "caller's part" if e.thread == 0 else f"pool thread {e.thread}")
                out.append({"name": e.name, "cat": e.kind, "ph": "X", "pid": p, "tid": e.thread + 1, "ts": ts,
                            "dur": e.host_ns / 1e3, "args": args})
                continue
            name_track(1, e.thread, f"host thread {e.thread}")
            label = e.name if e.kind == "launch" else f"{e.name}: {e.phase}"
            out.append({"name": label, "cat": e.kind, "ph": "X", "pid": 1, "tid": e.thread, "ts": ts,
                        "dur": e.host_ns / 1e3, "args": args})
            if e.kind == "launch" and e.device_ns >= 0:
                p = pid(e.device)
                name_track(p, 0, "kernels")
                start = max(ts, busy.get(e.device, ts)) if e.device not in ("cpu", "python") else ts
                busy[e.device] = start + e.device_ns / 1e3
                out.append({"name": e.name, "cat": "device", "ph": "X", "pid": p, "tid": 0, "ts": start,
                            "dur": e.device_ns / 1e3, "args": args})
        for device, p in pids.items():
            out.append({"name": "process_name", "ph": "M", "pid": p, "args": {"name": device}})
        return {"traceEvents": out, "displayTimeUnit": "ms"}

    def save(self, path) -> None:
        """Write the Chrome trace (``trace()``) as JSON to path: open it in
        https://ui.perfetto.dev or chrome://tracing."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.trace(), f)


def _ms(ns):
    ms = ns / 1e6
    if ms >= 100:
        return f"{ms:.1f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ns / 1e3:.1f} us"
