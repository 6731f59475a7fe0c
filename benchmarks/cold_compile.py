"""Cold compile: the first call of a kernel in a new process with an empty cache.

``python -m benchmarks.cold_compile`` runs every kernel of
benchmarks/cold_kernels.py in a process of its own, with TACK_CACHE_DIR set
to a new empty folder, and measures the kernel's first call -- what a user
pays in every new process and after every edit of a kernel.  It prints one
row per kernel (the median over ``--repeat`` processes) and the distribution
(median, max), with the time split by phase as tack.profile() records it:

    frontend   the Python front end (parse, names, Tack's AST)
    compiler   lowering, the passes and writing the C (Tack's own C code)
    cc         the C compiler, from its start to the library's dlopen
    cc cpu     the CPU time the C compiler's processes used (user + system):
               on a loaded machine the wall-clock times wander with the
               load, this one much less

``--split`` divides the C compiler's CPU time further (the least of three
runs each), by running the same compiler on the kept source of the kernel
(the cache keeps ``<key>.c``) with the JIT's flags: ``start`` is an empty
translation unit compiled and linked (the driver, cc1's start, the
assembler, the linker), ``parse`` is ``-fsyntax-only`` on the source less
that on an empty one (the front end, the prelude included), and
``optimize`` the rest of a whole build (the optimizer, code generation and
assembling what it wrote); the JSON rows add GCC's ``-ftime-report``
largest passes.

``--steady`` also times each kernel's calls after the first (the best of a
few), at the sizes of cold_kernels.py: a cheap check that a change to the
compile does not slow the code it produces (benchmarks/run.py is the full
CPU bench).  ``--json FILE`` saves the rows.  ``--only a,b`` picks kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The JIT's flags (cpu_jit.c, build_in) without -O3 and the fast-math choice.
_FLAGS = ["-march=native", "-fPIC", "-shared", "-std=gnu11", "-w", "-fvisibility=hidden", "-fno-math-errno",
          "-fopenmp-simd", "-ffp-contract=off", "-DTK_VMATH=1"]


def _one(name, steady, split):
    """In the child: the first call of kernel `name`, its phases, and optionally
    the C compiler's split and the steady time.  Prints one JSON line."""
    sys.path.insert(0, ROOT)
    t_import = time.perf_counter()
    import tack  # noqa: PLC0415 (the import is part of what the child measures)

    from benchmarks.cold_kernels import KERNELS  # noqa: PLC0415

    import_ms = (time.perf_counter() - t_import) * 1e3
    kernel, args = KERNELS[name]()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with tack.profile() as p:
        kernel(*args)
    first_ms = (time.perf_counter() - t0) * 1e3
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cc_cpu_ms = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3
    phases = {}
    for e in p.events:
        if e.kind == "compile":
            phases[e.phase] = phases.get(e.phase, 0.0) + e.host_ns / 1e6
    row = {"kernel": name, "first_ms": first_ms, "cc_cpu_ms": cc_cpu_ms, "import_ms": import_ms, "phases": phases}
    cache = os.environ["TACK_CACHE_DIR"]
    sources = [f for f in os.listdir(cache) if f.endswith(".c")]
    if sources:
        src = os.path.join(cache, sources[0])
        with open(src) as f:
            text = f.read()
        row["c_lines"] = text.count("\n")
        row["c_bytes"] = len(text)
        if split:
            row["split"] = _split(src)
    if steady:
        best = float("inf")
        for _ in range(20):
            t = time.perf_counter()
            kernel(*args)
            best = min(best, time.perf_counter() - t)
        row["steady_us"] = best * 1e6
    print(json.dumps(row))


def _cc():
    return os.environ.get("TACK_CC", os.environ.get("CC", shutil.which("cc") or "gcc")).split()


def _timed(argv, cwd, runs=3):
    """The least CPU time (user + system, ms) of `runs` runs of argv, and the last run."""
    best = float("inf")
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
    return best, r


def _split(src):
    """The C compiler's CPU time on `src` in parts (see the module's docstring)."""
    cc, d = _cc(), os.path.dirname(src)
    empty = os.path.join(d, "empty_tu.c")
    with open(empty, "w") as f:
        f.write("int tk_empty;\n")
    out = os.path.join(d, "split.so")
    start, _ = _timed(cc + ["-O3", *_FLAGS, "-o", out, empty], d)
    syn0, _ = _timed(cc + ["-O3", *_FLAGS, "-fsyntax-only", empty], d)
    syn, _ = _timed(cc + ["-O3", *_FLAGS, "-fsyntax-only", src], d)
    whole, _ = _timed(cc + ["-O3", *_FLAGS, "-o", out, src, "-lm"], d)
    _, r = _timed(cc + ["-O3", *_FLAGS, "-ftime-report", "-o", out, src, "-lm"], d, runs=1)
    parse = max(syn - syn0, 0.0)
    return {"whole": whole, "start": start, "parse": parse, "optimize": max(whole - start - parse, 0.0),
            "report": _time_report(r.stderr)}


def _time_report(text):
    """GCC's -ftime-report: the largest passes by user time (an empty dict from clang)."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"\s*([^:]+?)\s*:\s*([\d.]+)\s*\(", line)
        if m and m.group(1) not in ("TOTAL",) and not m.group(1).startswith("phase"):
            rows.append((float(m.group(2)), m.group(1)))
    rows.sort(reverse=True)
    return {name: round(t * 1e3, 1) for t, name in rows[:6] if t > 0}


def _run(name, steady, split):
    with tempfile.TemporaryDirectory(prefix="tack-cold-") as cache:
        os.chmod(cache, 0o700)
        env = dict(os.environ, TACK_CACHE_DIR=cache)
        r = subprocess.run([sys.executable, "-m", "benchmarks.cold_compile", "--child", name]
                           + (["--steady"] if steady else []) + (["--split"] if split else []),
                           cwd=ROOT, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            return {"kernel": name, "error": (r.stderr or r.stdout).strip().splitlines()[-1:]}
        return json.loads(r.stdout.strip().splitlines()[-1])


def _median_row(rows):
    """The row whose first call is the median of `rows` (one process's numbers, kept together)."""
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return rows[0]
    ok.sort(key=lambda r: r["first_ms"])
    return ok[len(ok) // 2]


def measure(names, repeat=1, steady=False, split=False):
    from benchmarks.cold_kernels import KERNELS  # noqa: PLC0415

    out = []
    for name in names or KERNELS:
        out.append(_median_row([_run(name, steady, split) for _ in range(repeat)]))
    return out


def report(rows, split=False):
    lines = []
    head = f"{'kernel':16} {'first':>8} {'frontend':>9} {'compiler':>9} {'cc':>8} {'cc cpu':>8} {'C lines':>8}"
    if split:
        head += f" {'start':>7} {'parse':>7} {'optimize':>9}"
    if any("steady_us" in r for r in rows):
        head += f" {'steady':>9}"
    lines += [head, "-" * len(head)]
    firsts, ccs, fronts, cpus = [], [], [], []
    for r in rows:
        if "error" in r:
            lines.append(f"{r['kernel']:16} error: {r['error']}")
            continue
        ph = r["phases"]
        comp = sum(ph.get(k, 0.0) for k in ("lower", "passes", "emit"))
        cc = ph.get("cc", 0.0) + ph.get("cache hit", 0.0)
        firsts.append(r["first_ms"])
        ccs.append(cc)
        fronts.append(ph.get("frontend", 0.0))
        cpus.append(r.get("cc_cpu_ms", 0.0))
        line = (f"{r['kernel']:16} {r['first_ms']:7.0f}ms {ph.get('frontend', 0.0):7.1f}ms {comp:7.1f}ms "
                f"{cc:6.0f}ms {cpus[-1]:6.0f}ms {r.get('c_lines', 0):8d}")
        if split and "split" in r:
            s = r["split"]
            line += f" {s['start']:5.0f}ms {s['parse']:5.0f}ms {s['optimize']:7.0f}ms"
        if "steady_us" in r:
            line += f" {r['steady_us']:7.1f}us"
        lines.append(line)
    if firsts:
        lines.append("-" * len(head))
        lines.append(f"first call: median {statistics.median(firsts):.0f} ms, max {max(firsts):.0f} ms "
                     f"({len(firsts)} kernels); the C compiler: median {statistics.median(ccs):.0f} ms "
                     f"({100 * sum(ccs) / sum(firsts):.0f}% of all first calls), its CPU time: median "
                     f"{statistics.median(cpus):.0f} ms, max {max(cpus):.0f} ms; the front end: median "
                     f"{statistics.median(fronts):.1f} ms")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--only", help="comma-separated kernel names")
    ap.add_argument("--repeat", type=int, default=1, help="processes per kernel (the median is reported)")
    ap.add_argument("--steady", action="store_true", help="also time the calls after the first")
    ap.add_argument("--split", action="store_true", help="split the C compiler's time (start, parse, optimize)")
    ap.add_argument("--json", help="save the rows to this file")
    a = ap.parse_args(argv)
    if a.child:
        _one(a.child, a.steady, a.split)
        return 0
    rows = measure(a.only.split(",") if a.only else None, a.repeat, a.steady, a.split)
    print(report(rows, a.split))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
