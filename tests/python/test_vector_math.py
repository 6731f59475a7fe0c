"""Math functions in SIMD lanes on the CPU (docs/design/decisions.md, "Vector math").

Where glibc's libmvec is there (x86-64 glibc), a loop of exp, log, tanh, ...
calls its vector variants (_ZGVdN8v_expf and its kin): GCC because the
prelude declares them with simd("notinbranch"), clang and zig cc through
-fveclib=libmvec.  Those are not correctly rounded; docs/language.md states
the bound, 4 ulps, which every function meets here on a sweep with the edge
cases, in the vector body and in the scalar remainder alike.
TACK_VECTOR_MATH=0 turns it off.  benchmarks/ulps.py measures the same on
more points.
"""

import ctypes
import math
import os
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from benchmarks import ulps  # noqa: E402  (the kernels, the sweep and the ulp measure)

BOUND = 4.0  # ulps, docs/language.md ("Math functions")


def _libmvec():
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        ctypes.CDLL("libmvec.so.1")
        return True
    except OSError:
        return False


LIBMVEC = _libmvec()


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ulps.FUNCTIONS)
def test_within_the_documented_ulps(name, dt):
    err, bad_nan = ulps.measure(name, dt, n=1 << 13)
    assert bad_nan == 0, f"{name}: NaN where the reference is not (or not where it is)"
    assert err <= BOUND, f"{name} on {np.dtype(dt)}: {err:.2f} ulps"


@tack.kernel
def transcendental(x, out):
    for i in range(x.shape[0]):
        out[i] = math.tanh(math.log(x[i] + 1.0) * 0.5) + math.sqrt(math.exp(-x[i]))


SPECIALS = [
    # (function, argument, result): IEEE's and NumPy's special values
    ("exp", math.inf, math.inf), ("exp", -math.inf, 0.0), ("exp", 1000.0, math.inf),
    ("exp", -1000.0, 0.0), ("exp", 0.0, 1.0), ("exp", -0.0, 1.0), ("exp", math.nan, math.nan),
    ("log", 0.0, -math.inf), ("log", -0.0, -math.inf), ("log", -1.0, math.nan), ("log", -math.inf, math.nan),
    ("log", math.inf, math.inf), ("log", 1.0, 0.0), ("log", math.nan, math.nan),
    ("tanh", math.inf, 1.0), ("tanh", -math.inf, -1.0), ("tanh", 0.0, 0.0), ("tanh", 30.0, 1.0),
    ("tanh", math.nan, math.nan), ("sqrt", -1.0, math.nan), ("sqrt", math.inf, math.inf), ("sqrt", 0.0, 0.0),
    ("sin", math.inf, math.nan), ("cos", -math.inf, math.nan), ("sin", 0.0, 0.0), ("cos", 0.0, 1.0),
    ("log2", 0.0, -math.inf), ("log10", -2.0, math.nan), ("asin", 2.0, math.nan), ("acos", 1.0, 0.0),
    ("atan", math.inf, math.pi / 2), ("sinh", 1000.0, math.inf), ("cosh", -1000.0, math.inf),
]
SPECIALS_F32 = [("exp", 89.0, math.inf), ("exp", -104.0, 0.0), ("sinh", 90.0, math.inf), ("cosh", 90.0, math.inf)]


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_special_values_in_the_vector_body_and_the_remainder(dt):
    # 64 + 3 copies: the first in lanes, the last three in the scalar remainder
    for name, arg, want in SPECIALS + (SPECIALS_F32 if dt == np.float32 else []):
        k = ulps.UNARY[name][0]
        x = np.full(67, arg, dt)
        out = np.zeros_like(x)
        k(x, out)
        w = dt(want)
        if math.isnan(want):
            assert np.isnan(out).all(), (name, arg, out)
        elif math.isinf(want) or want == 0.0:
            assert (out == w).all(), (name, arg, out)
            if want == 0.0:
                assert (np.signbit(out) == np.signbit(w)).all(), (name, arg, out)
        else:
            assert np.allclose(out, w, rtol=4 * np.finfo(dt).eps, atol=0), (name, arg, out)


def _square_roots_by_pow(x, out):
    for i in range(x.shape[0]):
        out[0, i] = x[i] ** 0.5
        out[1, i] = pow(x[i], 0.5)
        out[2, i] = math.pow(x[i], 0.5)
        out[3, i] = x[i] ** 1.5


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_pow_of_a_half_keeps_pows_special_values(dt, jit):
    # pow(-0.0, 0.5) is +0.0 and pow(-inf, 0.5) is +inf (C99, Python's ** and
    # math.pow), where sqrt gives -0.0 and NaN.  GCC turns pow(x, 0.5) into
    # sqrt(x) under -fno-math-errno, and NumPy's power takes the same shortcut
    # for a scalar exponent of 0.5; neither may show through.  67 copies: the
    # vector body and the scalar remainder.
    specials = [(-0.0, 0.0), (-math.inf, math.inf), (0.0, 0.0), (math.inf, math.inf), (4.0, 2.0), (-4.0, math.nan)]
    assert [math.pow(a, 0.5) for a, _ in specials[:5]] == [w for _, w in specials[:5]]  # Python's own
    k = tack.kernel(_square_roots_by_pow, jit=jit)
    for arg, want in specials:
        x = np.full(67, arg, dt)
        out = np.zeros((4, x.size), dt)
        k(x, out)
        for row in range(3):
            if math.isnan(want):
                assert np.isnan(out[row]).all(), (row, arg, out[row])
            else:
                assert (out[row] == want).all() and not np.signbit(out[row]).any(), (row, arg, out[row])
        w = math.pow(arg, 1.5) if arg >= 0 or math.isinf(arg) else math.nan  # a control: not a half
        assert np.array_equal(out[3], np.full(x.size, w, dt), equal_nan=True), (arg, out[3])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "tan", "pow"])
def test_vector_body_and_scalar_remainder_agree(name, dt):
    # each value once in lanes (a long array) and once alone (a one-element
    # loop, the scalar call): the two differ by at most the bound
    r = np.random.default_rng(5)
    lo, hi = {"exp": (-80, 80), "log": (0, 1e6), "tanh": (-10, 10), "sin": (-100, 100), "tan": (-100, 100),
              "pow": (0, 10)}[name]
    x = r.uniform(lo, hi, 256).astype(dt)
    y = r.uniform(-8, 8, 256).astype(dt)
    binary = name in ulps.BINARY
    k = (ulps.BINARY if binary else ulps.UNARY)[name][0]
    lanes = np.zeros_like(x)
    k(x, y, lanes) if binary else k(x, lanes)
    alone = np.zeros_like(x)
    for i in range(x.size):
        o = np.zeros(1, dt)
        k(x[i:i + 1], y[i:i + 1], o) if binary else k(x[i:i + 1], o)
        alone[i] = o[0]
    spacing = np.spacing(np.abs(alone).astype(dt))
    diff = np.abs(lanes.astype(np.float64) - alone.astype(np.float64)) / spacing.astype(np.float64)
    assert float(diff.max()) <= BOUND, f"{name}: lanes and the scalar call differ by {float(diff.max()):.1f} ulps"


# ---------------------------------------------------------------- which compiler does what
SCRIPT = """
import math, sys
import numpy as np, tack
@tack.kernel
def transcendental(x, out):
    for i in range(x.shape[0]):
        out[i] = math.tanh(math.log(x[i] + 1.0) * 0.5) + math.sqrt(math.exp(-x[i]))
x = np.linspace(0, 4, 1003, dtype=np.float32)
out = np.zeros_like(x)
transcendental(x, out)
want = np.tanh(np.log(x.astype(np.float64) + 1) * 0.5) + np.sqrt(np.exp(-x.astype(np.float64)))
assert np.allclose(out, want, rtol=4e-6, atol=0), np.abs(out - want).max()
print("ok")
"""


def _build(tmp_path, script=SCRIPT, **env):
    """Build and run the kernel in a new process with a new cache; the names
    of the vector variants the built library calls."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    text = script
    script = tmp_path / "transc.py"
    script.write_text(text)
    cache = tmp_path / "cache"
    e = {k: v for k, v in os.environ.items() if k not in ("TACK_CC", "CC", "TACK_VECTOR_MATH")}
    e.update(TACK_CACHE_DIR=str(cache), **env)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    names = set()
    for so in cache.glob("*.so"):
        data = so.read_bytes()
        for fn in (b"expf", b"logf", b"tanhf"):
            for isa in b"bcde":
                for lanes in (b"4", b"8", b"16"):
                    if b"_ZGV" + bytes([isa]) + b"N" + lanes + b"v_" + fn + b"\0" in data:
                        names.add(fn.decode())
    return names


@pytest.mark.skipif(not (LIBMVEC and shutil.which("gcc")), reason="needs gcc and x86-64 glibc's libmvec")
def test_gcc_calls_the_vector_variants(tmp_path):
    assert _build(tmp_path, TACK_CC="gcc") == {"expf", "logf", "tanhf"}


@pytest.mark.skipif(not (LIBMVEC and shutil.which("clang")), reason="needs clang and x86-64 glibc's libmvec")
def test_clang_calls_the_vector_variants_it_knows(tmp_path):
    # clang's table of libmvec names has exp and log; tanh only from a later clang on
    assert {"expf", "logf"} <= _build(tmp_path, TACK_CC="clang")


@pytest.mark.skipif(not (LIBMVEC and shutil.which("gcc")), reason="needs gcc and x86-64 glibc's libmvec")
def test_only_a_kernel_with_vector_calls_links_libmvec(tmp_path):
    # -lmvec is linked as needed: a kernel of plain arithmetic does not load it
    assert _build(tmp_path / "a", TACK_CC="gcc") and _needs_libmvec(tmp_path / "a")
    plain = SCRIPT.replace("math.tanh(math.log(x[i] + 1.0) * 0.5) + math.sqrt(math.exp(-x[i]))", "x[i] * 2.0 + 1.0")
    plain = plain.split("want =")[0] + "print('ok')\n"
    assert _build(tmp_path / "b", script=plain, TACK_CC="gcc") == set()
    assert not _needs_libmvec(tmp_path / "b")


def _needs_libmvec(d):
    return any(b"libmvec.so.1\0" in so.read_bytes() for so in (d / "cache").glob("*.so"))


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_off_means_scalar_calls(tmp_path):
    assert _build(tmp_path, TACK_CC="gcc", TACK_VECTOR_MATH="0") == set()


def _ziglang_zig():
    try:
        import ziglang
    except ImportError:
        return None
    zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
    return zig if os.access(zig, os.X_OK) else None


@pytest.mark.skipif(_ziglang_zig() is None, reason="the ziglang wheel (the `compiler` extra) is not installed")
def test_zig_cc_builds_links_and_runs_it(tmp_path):
    # no compiler on PATH: zig cc (clang with its own glibc stubs) builds it, -fveclib=libmvec and all
    empty = tmp_path / "bin"
    empty.mkdir()
    names = _build(tmp_path, PATH=str(empty), TACK_ZIG=_ziglang_zig())
    if LIBMVEC:
        assert {"expf", "logf"} <= names, names


def test_a_bad_setting_is_named(tmp_path):
    script = tmp_path / "transc.py"
    script.write_text(SCRIPT)
    e = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"), TACK_VECTOR_MATH="fast")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=600)
    assert proc.returncode != 0
    assert "ValueError" in proc.stderr and "TACK_VECTOR_MATH must be 0 or 1, not 'fast'" in proc.stderr, proc.stderr
