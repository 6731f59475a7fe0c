"""Write python/tack/_derivs.py, the derivative table of reverse-mode differentiation, from
src/compiler/intrinsics.def.

Each differentiable intrinsic declares its derivatives in one TK_DERIV row of intrinsics.def,
beside the intrinsics' own rows: one kernel-language expression per argument, of the arguments
x0, x1, x2 and the result r.  The C compiler ignores those rows; the adjoint generator
(python/tack/_autodiff.py) reads this module, which this tool writes from them, so the table
has one source.

``python tools/gen_autodiff.py`` rewrites the module; ``--check`` writes nothing and exits 1
when it is stale.  tests/python/test_autodiff.py fails when it is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEF = ROOT / "src" / "compiler" / "intrinsics.def"
OUT = ROOT / "python" / "tack" / "_derivs.py"
_ROW = re.compile(r'^TK_DERIV\("(\w+)", "([^"]*)", "([^"]*)", "([^"]*)"\)', re.M)


def rows() -> dict[str, tuple[str, ...]]:
    """{intrinsic name: its derivative expressions, one per argument}, in intrinsics.def's order."""
    out = {}
    for m in _ROW.finditer(DEF.read_text()):
        out[m.group(1)] = tuple(d for d in m.groups()[1:] if d)
    return out


def render() -> str:
    lines = ['"""The derivatives of the differentiable intrinsics (generated: tools/gen_autodiff.py).',
             "",
             "Written from the TK_DERIV rows of src/compiler/intrinsics.def; edit those, not this file.",
             "Each value holds one kernel-language expression per argument: its partial derivative in",
             "terms of the arguments x0, x1, x2 and the result r (python/tack/_autodiff.py).",
             '"""',
             "",
             "DERIVS = {"]
    for name, ds in rows().items():
        lines.append(f"    {name!r}: {ds!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python tools/gen_autodiff.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
