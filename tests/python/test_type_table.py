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

import hashlib
import importlib.util
import math
import os
import re
import tempfile
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


# A row's module is named by its text, in one folder for every test process:
# the kernel's generated C names the file it came from, so the same row written
# to each test's own tmp_path was compiled again by each test that runs it
# (test_row, the row's fallback on OpenCL, test_debug_differential.py); under one
# name the kernel cache (TACK_CACHE_DIR) builds it once.
ROW_DIR = Path(tempfile.gettempdir()) / "tack-test-type-table"


def _module_file(text):
    path = ROW_DIR / f"row_{hashlib.sha256(text.encode()).hexdigest()[:20]}.py"
    if not path.exists():
        ROW_DIR.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=ROW_DIR, prefix=".tmp-", suffix=".py")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


def _kernel(expr, default):
    opts = "" if default == "f32" else "(default_float=tack.f64)"
    loads = "".join(f"        {name} = {src}\n" for name, src in LOADS if re.search(rf"\b{name}\b", expr))
    path = _module_file(TEMPLATE.format(expr=expr, opts=opts, loads=loads))
    spec = importlib.util.spec_from_file_location(f"{path.stem}_{next(_counter)}", path)
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
def test_row(expr, t32, t64, default):
    want = t32 if default == "f32" else t64
    kernel = _kernel(expr, default)
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

# The rows on OpenCL run as one kernel that computes every row (row j's value in
# out[j, i], each in a local of its own, so each row's expression is typed and
# compiled as it is alone): PoCL builds one program instead of one a row (a build
# and a launch's specialization, about 0.2 CPU-s each, 62 of them).  When that
# kernel fails on either device, each row runs alone as its own kernel, so a
# failure names its row with its own message.
BATCH_TEMPLATE = TEMPLATE[:TEMPLATE.index("{loads}")] + "{loads}{rows}"


def _batched_kernel(exprs):
    loads = "".join(f"        {name} = {src}\n" for name, src in LOADS
                    if any(re.search(rf"\b{name}\b", e) for e in exprs))
    rows = "".join(f"        r{j} = {e}\n        out[{j}, i] = r{j}\n" for j, e in enumerate(exprs))
    path = _module_file(BATCH_TEMPLATE.format(opts="", loads=loads, rows=rows))
    spec = importlib.util.spec_from_file_location(f"{path.stem}_{next(_counter)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def _on_both(kernel, shape):
    """The kernel's out on the CPU and on the OpenCL device (default float f32)."""
    arrays, _ = _args()
    out = np.zeros(shape, np.float64)
    kernel(*arrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], out)
    darrays, _ = _args(OPENCL[0])
    dout = tack.zeros(shape, tack.f64, device=OPENCL[0])
    kernel(*darrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], dout)
    return out, dout.numpy()


def opencl_outputs(exprs):
    """{expr: (CPU's out, device's out)} for each row, from one kernel of them all;
    where that kernel fails, each row alone: {expr: the exception} for a row that fails."""
    try:
        cpu, dev = _on_both(_batched_kernel(exprs), (len(exprs), N))
        return {e: (cpu[j], dev[j]) for j, e in enumerate(exprs)}
    except Exception:  # noqa: BLE001 -- each row alone says which failed
        pass
    outputs = {}
    for e in exprs:
        try:
            outputs[e] = _on_both(_kernel(e, "f32"), N)
        except Exception as exc:  # noqa: BLE001 -- raised by that row's test
            outputs[e] = exc
    return outputs


@pytest.fixture(scope="module")
def rows_on_opencl():
    return opencl_outputs([r[0] for r in ROWS])


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (make test installs PoCL as root)")
@pytest.mark.parametrize("expr,t32,t64", ROWS, ids=[r[0] for r in ROWS])
def test_row_on_opencl_gives_the_cpus_bits(rows_on_opencl, expr, t32, t64):
    found = rows_on_opencl[expr]
    if isinstance(found, Exception):
        raise found
    out, got = found
    if "math." in expr or "half" in expr:  # libm and the device's math may differ in the last place
        np.testing.assert_allclose(got, out, rtol=4e-7 if t32 == "f32" else 1e-15)
    else:
        np.testing.assert_array_equal(got, out)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (make test installs PoCL as root)")
def test_a_row_that_fails_among_the_rows_on_opencl_is_named():
    """The one-kernel check still names its row: a row that does not compile
    makes the rows run alone, and only that row's entry is an error."""
    good = ["x * 0.1", "aj + ai"]
    outputs = opencl_outputs(good[:1] + ["x * no_such_name"] + good[1:])
    assert isinstance(outputs["x * no_such_name"], Exception), outputs
    assert "no_such_name" in str(outputs["x * no_such_name"])
    for e in good:
        cpu, dev = outputs[e]
        np.testing.assert_array_equal(dev, cpu)
    batched = opencl_outputs(good)  # and the batch's rows are the rows alone
    for e in good:
        np.testing.assert_array_equal(batched[e][0], outputs[e][0])


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (make test installs PoCL as root)")
def test_f32_rows_need_no_double_on_opencl():
    """Every row whose type is f32 compiles for OpenCL without a double in its arithmetic."""
    for expr, t32, _ in ROWS:
        if t32 != "f32":
            continue
        kernel = _kernel(expr, "f32")
        arrays = [tack.array(a, device=OPENCL[0]) for a in (VALUES["a64"], VALUES["a32"], VALUES["x32"],
                                                             VALUES["x64"], VALUES["flags"])]
        out = tack.zeros(N, tack.f32, device=OPENCL[0])
        src = kernel.generated_source(*arrays, SCALARS["k"], SCALARS["f"], SCALARS["s"], out)
        body = src[src.index("__kernel"):]
        assert not re.search(r"\(double\)|double [a-z_]", body.replace("__global double *", "")), (expr, body)
