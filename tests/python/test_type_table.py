"""The type table of docs/language.md ("The type of every operation"), row by row.

Each row's expression is compiled in one kernel, with the default float f32
and f64: the type the compiler gives it (the local's type in the kernel's IR)
must be the row's, its value NumPy's computed in that type, and the OpenCL
device (PoCL) must give the same bits as the CPU.  The table was written from
the reports of the same idiom getting two types: `i * 0.1` computed in f64
and `a[i] * 0.1` in f32, `(x - lo) / (hi - lo)` making an f32 kernel need
double.  Debug mode (jit=False) follows the table too: test_debug_differential.py
runs every row both ways.
"""

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

import tack

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"


def _rows():
    text = DOC.read_text()
    start = text.index("<!-- type-table:")
    rows = []
    for line in text[start:].splitlines()[3:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((cells[0].strip("`"), cells[2], cells[3]))
    return rows


ROWS = _rows()

TEMPLATE = """\
import math
import tack


@tack.func
def half(v):
    return v * 0.5


@tack.func
def sign(v):
    return 1.0 if v > 0 else -1.0


@tack.kernel{opts}
def k(a64, a32, x32, x64, flags, k, f, s, out):
    n = a64.shape[0]
    for i in range(n):
{loads}        r = {expr}
        out[i] = r
"""

LOADS = [("ai", "a64[i]"), ("aj", "a32[i]"), ("x", "x32[i]"), ("d", "x64[i]"), ("b", "flags[i]")]
N = 5
VALUES = {
    "a64": np.array([10**8 + 1, -7, 3, 2**40 + 3, 0], np.int64),
    "a32": np.array([3, -2, 7, 1, 5], np.int32),
    "x32": np.array([0.1, -2.5, 3.25, 1e-3, 7.0], np.float32),
    "x64": np.array([0.1, -2.5, 3.25, 1e-3, 7.0], np.float64),
    "flags": np.array([True, False, True, True, False]),
}
SCALARS = {"k": 3, "f": 0.3, "s": np.float32(0.7)}
_counter = iter(range(10**6))


def _kernel(tmp_path, expr, default):
    opts = "" if default == "f32" else "(default_float=tack.f64)"
    path = tmp_path / f"row_{next(_counter)}.py"
    loads = "".join(f"        {name} = {src}\n" for name, src in LOADS if re.search(rf"\b{name}\b", expr))
    path.write_text(TEMPLATE.format(expr=expr, opts=opts, loads=loads))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def _args(device=None):
    arrays = [VALUES[n] for n in ("a64", "a32", "x32", "x64", "flags")]
    if device:
        arrays = [tack.array(a, device=device) for a in arrays]
    out = np.zeros(N, np.float64)
    return arrays, out


def _ir_type(kernel, arrays, out):
    ir = kernel.ir(*arrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], out)
    locals_line = next(line for line in ir.splitlines() if line.strip().startswith("locals:"))
    m = re.search(r"(?:^|\s)r(?:'\d+)?:(int \(Python\)|float \(Python\)|[a-z0-9]+)", locals_line)
    assert m, ir
    return m.group(1)


_NP = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32}


def _oracle(expr, typ, i):
    """The row's value at element i, computed by NumPy in the row's type: every
    name converted to that type first (a float row), or the elements as NumPy
    scalars of their dtypes (an integer row), or Python's own arithmetic (a
    weak row)."""
    env = {"ai": VALUES["a64"][i], "aj": VALUES["a32"][i], "x": VALUES["x32"][i], "d": VALUES["x64"][i],
           "b": bool(VALUES["flags"][i]), "i": i, "n": N, **SCALARS}
    if typ in ("f32", "f64"):
        t = _NP[typ]
        src = (expr.replace("math.", "np.").replace("float(", "T(").replace("tack.f64(", "np.float64(")
               .replace("half(", "H(").replace("sign(", "S("))
        env = {name: (v if name == "b" else t(v)) for name, v in env.items()}
        env.update(T=t, H=lambda v: t(v) * t(0.5), S=lambda v: t(1.0) if v > 0 else t(-1.0), np=np)
        with np.errstate(all="ignore"):
            return float(t(eval(src, env)))
    if typ == "float (Python)":
        env.update(f=SCALARS["f"], sign=lambda v: 1.0 if v > 0 else -1.0)
        return float(eval(expr, {"math": math, **env}))
    with np.errstate(all="ignore"):
        return float(eval(expr, {"math": math, "tack": tack, "np": np, **env}))


@pytest.mark.parametrize("default", ["f32", "f64"])
@pytest.mark.parametrize("expr,t32,t64", ROWS, ids=[r[0] for r in ROWS])
def test_row(tmp_path, expr, t32, t64, default):
    want = t32 if default == "f32" else t64
    kernel = _kernel(tmp_path, expr, default)
    arrays, out = _args()
    assert _ir_type(kernel, arrays, out) == want, (expr, default)
    kernel(*arrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], out)
    for i in range(N):
        expect = _oracle(expr, want, i)
        if math.isnan(expect):
            assert math.isnan(out[i]), (expr, i)
        else:
            assert out[i] == expect, (expr, default, i, out[i], expect)


def test_the_table_covers_the_reported_idioms():
    exprs = {r[0] for r in ROWS}
    for idiom in ("i * 0.1", "ai * 0.1", "i / 3", "ai / 3", "(x - f) / (f - 0.5)", "half(i)", "b + b"):
        assert idiom in exprs
    assert len(ROWS) >= 30


OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (make test installs PoCL as root)")
@pytest.mark.parametrize("expr,t32,t64", ROWS, ids=[r[0] for r in ROWS])
def test_row_on_opencl_gives_the_cpus_bits(tmp_path, expr, t32, t64):
    kernel = _kernel(tmp_path, expr, "f32")
    arrays, out = _args()
    kernel(*arrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], out)
    darrays, _ = _args(OPENCL[0])
    dout = tack.zeros(N, tack.f64, device=OPENCL[0])
    kernel(*darrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], dout)
    got = dout.numpy()
    if "math." in expr or "half" in expr:  # libm and the device's math may differ in the last place
        np.testing.assert_allclose(got, out, rtol=4e-7 if t32 == "f32" else 1e-15)
    else:
        np.testing.assert_array_equal(got, out)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (make test installs PoCL as root)")
def test_f32_rows_need_no_double_on_opencl(tmp_path):
    """Every row whose type is f32 compiles for OpenCL without a double in its arithmetic."""
    for expr, t32, _ in ROWS:
        if t32 != "f32":
            continue
        kernel = _kernel(tmp_path, expr, "f32")
        arrays = [tack.array(a, device=OPENCL[0]) for a in (VALUES["a64"], VALUES["a32"], VALUES["x32"],
                                                             VALUES["x64"], VALUES["flags"])]
        out = tack.zeros(N, tack.f32, device=OPENCL[0])
        src = kernel.generated_source(*arrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], out)
        body = src[src.index("__kernel"):]
        assert not re.search(r"\(double\)|double [a-z_]", body.replace("__global double *", "")), (expr, body)
