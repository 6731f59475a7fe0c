"""Generated C and C-compiler time against the nesting depth of serial loops.

``python -m benchmarks.nest_depth`` writes, for depths 1 to ``--depth``, a kernel
whose parallel loop holds that many serial loops, each inside the last, and
prints the size of its C, of its CUDA source (the same IR without the CPU's
copies: strips, plain copies of innermost loops, nests.c's versions), the
serial-loop headers in the C, and the C compiler's CPU time on the C (the least
of ``--repeat`` runs, with the JIT's flags).  Two kinds of nest:

    plain    s = s * 0.5 + x[i, 0] * e at the bottom, n trips a level
    adjoint  the adjoint of s = s * 0.5 + tack.sin(s) * x[i, e] at the bottom:
             every level carries s, so every level is taped or replayed

A nest whose C doubled at each level would show it here; performance.md
("Compile time") has the figures.  Nothing is run but the compiler.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_FLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11", "-w", "-fvisibility=hidden",
          "-fno-math-errno", "-fopenmp-simd", "-ffp-contract=off", "-DTK_VMATH=1"]
_VARS = "abcdefgh"


def _text(kind, depth):
    lines = ["import tack", "", "", "@tack.kernel", "def nest(x, n, y):", "    for i in range(y.shape[0]):",
             "        s = 0.0"]
    ind = "        "
    for d in range(depth):
        lines.append(f"{ind}for {_VARS[d]} in range(n):")
        ind += "    "
    last = _VARS[depth - 1]
    if kind == "adjoint":
        lines.append(f"{ind}s = s * 0.5 + tack.sin(s) * x[i, {last}]")
    else:
        lines.append(f"{ind}s = s * 0.5 + x[i, 0] * {last}")
    lines.append("        y[i] = s")
    return "\n".join(lines) + "\n"


def _kernel(kind, depth, folder):
    path = os.path.join(folder, f"nest_{kind}_{depth}.py")
    with open(path, "w") as f:
        f.write(_text(kind, depth))
    spec = importlib.util.spec_from_file_location(f"nest_{kind}_{depth}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.nest


def sources(kind, depth, folder):
    """The C and the CUDA source of the nest (of its adjoint for kind 'adjoint')."""
    import numpy as np  # noqa: PLC0415

    k = _kernel(kind, depth, folder)
    x, y = np.ones((4, 4)), np.zeros(4)
    if kind == "plain":
        return k.generated_source(x, 3, y, target="c"), k.generated_source(x, 3, y, target="cuda")
    from tack import _autodiff_run  # noqa: PLC0415

    adj, bound, names, _kinds = _autodiff_run.build(k, (x, 3, y), {})
    grads = [np.zeros_like(bound.arguments[p]) for p in names]
    return (adj.generated_source(x, 3, y, *grads, target="c"),
            adj.generated_source(x, 3, y, *grads, target="cuda"))


def cc_ms(src, folder, repeat):
    """The least CPU time (user + system, ms) of the C compiler on src over `repeat` runs."""
    cc = os.environ.get("TACK_CC", os.environ.get("CC", shutil.which("cc") or "gcc")).split()
    c = os.path.join(folder, "nest.c")
    with open(c, "w") as f:
        f.write(src)
    best = float("inf")
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cc + _FLAGS + ["-o", os.path.join(folder, "nest.so"), c, "-lm"], check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="plain,adjoint", help="comma-separated: plain, adjoint")
    ap.add_argument("--depth", type=int, default=5, help="the deepest nest (at most 8)")
    ap.add_argument("--repeat", type=int, default=1, help="C-compiler runs a source (0: sizes only)")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    with tempfile.TemporaryDirectory(prefix="tack-nest-") as folder:
        print(f"{'kind':8} {'depth':>5} {'C bytes':>10} {'CUDA bytes':>11} {'loops':>6} {'cc cpu':>9}")
        for kind in args.kinds.split(","):
            for depth in range(1, min(args.depth, len(_VARS)) + 1):
                c, cuda = sources(kind, depth, folder)
                ms = f"{cc_ms(c, folder, args.repeat):7.0f}ms" if args.repeat else "-"
                print(f"{kind:8} {depth:5d} {len(c):10d} {len(cuda):11d} {c.count('for (int64_t k'):6d} {ms:>9}",
                      flush=True)


if __name__ == "__main__":
    main()
