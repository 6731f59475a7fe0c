"""Write the Math table of docs/language.md from the compiler's table of intrinsics.

Every math function a kernel may call is one TK_MATH row of
src/compiler/intrinsics.def: its name, arity, result kind, C library names and
the largest error Tack's tests allow it in f32 and in f64.  This tool reads
those rows and, from the ``tack`` package as it imports, the Python spellings
that reach each row (``math.<name>``, ``np.<name>`` and its aliases,
``tack.<name>``, a builtin), and writes them as one Markdown table between the
``<!-- generated: math ... -->`` markers of docs/language.md.

``python tools/gen_math.py`` rewrites the table; ``--check`` writes nothing
and exits 1 when it is stale.  tools/gen_api.py (``make docs-gen``) writes it
too, and tests/python/test_api_docs.py and tests/python/test_math_library.py
fail when it is stale.
"""

from __future__ import annotations

import builtins
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEF = ROOT / "src" / "compiler" / "intrinsics.def"
PAGE = ROOT / "docs" / "language.md"
BEGIN = "<!-- generated: math (tools/gen_math.py; make docs-gen) -->"
END = "<!-- end generated: math -->"
_ROW = re.compile(r'^TK_MATH\((M_\w+), "(\w+)", (\d+), (TK_MR_\w+), "(\w*)", "(\w*)", ([-\d.]+), ([-\d.]+)\)', re.M)


def rows() -> list[dict]:
    """The TK_MATH rows of intrinsics.def, in its order."""
    out = []
    for m in _ROW.finditer(DEF.read_text()):
        out.append({"id": m.group(1), "name": m.group(2), "nargs": int(m.group(3)),
                    "bool": m.group(4) == "TK_MR_BOOL", "libm_f64": m.group(5), "libm_f32": m.group(6),
                    "ulps_f32": float(m.group(7)), "ulps_f64": float(m.group(8))})
    return out


def _bound(u: float) -> str:
    if u < 0:
        return "its formula"
    if u == 0:
        return "exact"
    if u == 0.5:
        return "0.5 (correctly rounded)"
    return f"{u:g}"


def spellings(name: str) -> list[str]:
    """The Python names a kernel may call row `name` by."""
    import numpy as np

    import tack
    from tack import _intrinsics

    _intrinsics._register_numpy()
    reg = _intrinsics._INTRINSICS
    out = []
    if hasattr(builtins, name) and reg.get(getattr(builtins, name)) == name:
        out.append(f"`{name}`")
    if hasattr(math, name) and reg.get(getattr(math, name)) == name:
        out.append(f"`math.{name}`" + (" (Python 3.13+)" if name == "fma" else ""))
    elif name == "fma":
        out.append("`math.fma` (Python 3.13+)")
    nps = []
    for n in dir(np):
        obj = getattr(np, n, None)
        if not n.startswith("_") and callable(obj) and getattr(obj, "__hash__", None) and reg.get(obj) == "numpy." + name:
            nps.append(n)
    nps.sort()
    out += [f"`np.{n}`" for n in nps]
    if name in _intrinsics._OWN and getattr(tack, name, None) is not None:
        out.append(f"`tack.{name}`")
    return out


def table() -> str:
    lines = [BEGIN, "", "| function | spellings | arguments | f32 ulps | f64 ulps |", "| --- | --- | --- | --- | --- |"]
    for r in rows():
        args = {1: "x", 2: "x, y", 3: "x, y, z"}[r["nargs"]]
        if r["name"] in ("clamp", "lerp", "smoothstep", "step"):
            args = {"clamp": "x, lo, hi", "lerp": "a, b, t", "smoothstep": "e0, e1, x", "step": "edge, x"}[r["name"]]
        result = " -> bool" if r["bool"] else ""
        lines.append(f"| {r['name']} | {', '.join(spellings(r['name']))} | ({args}){result} | "
                     f"{_bound(r['ulps_f32'])} | {_bound(r['ulps_f64'])} |")
    lines += ["", END]
    return "\n".join(lines)


def page_text() -> str:
    """docs/language.md with its Math table regenerated."""
    text = PAGE.read_text()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        raise SystemExit(f"{PAGE.relative_to(ROOT)}: no {BEGIN} ... {END} markers")
    return text[:a] + table() + text[b + len(END):]


def main(argv: list[str]) -> int:
    text = page_text()
    stale = PAGE.read_text() != text
    if "--check" in argv:
        if stale:
            print(f"{PAGE.relative_to(ROOT)}'s Math table is stale: run make docs-gen", file=sys.stderr)
        return 1 if stale else 0
    if stale:
        PAGE.write_text(text)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
