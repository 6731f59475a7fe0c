"""The cold compile stays short: what the C compiler reads, the cache with it,
and the benchmark that measures it.

The prelude of the generated C includes no header (dialect_c.c: <stdint.h>
and the glibc headers behind it were about 7 ms of the C compiler's time a
kernel); the fixed-width types come from the compiler's predefined macros,
and <stdint.h> only where those are missing.  These tests fail if a header
comes back into the path a normal build reads, check the fallback compiles,
that the build flag that replaced the header's glibc version (TK_VMATH, now
the glibc minor version) keys the cache as before, and (under make test-all)
run benchmarks/cold_compile.py on one kernel."""

import ctypes
import os
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CC = shutil.which("gcc") or shutil.which("clang") or shutil.which("cc")


@tack.kernel
def _many_helpers(x, h, hist, v, z, out):
    # floor division, modulo, a float-to-int conversion, f16 storage, an
    # atomic, a vec3 and a complex: most of the prelude's optional parts
    for i in range(x.shape[0]):
        k = int(x[i] * 7.0) // 3 % 4
        hist[k] += 1
        h[i] = tack.f16(x[i] * 0.5)
        out[i] = tack.length(v[i]) + abs(z[i]) + x[i] ** 2


def _many_source():
    n = 8
    return _many_helpers.generated_source(np.linspace(0, 1, n), np.zeros(n, np.float16), np.zeros(4, np.int64),
                                          tack.zeros(n, tack.vec3), np.ones(n, np.complex128), np.zeros(n))


def _syntax(source, tmp_path, *flags):
    path = tmp_path / "k.c"
    path.write_text(source)
    return subprocess.run([CC, "-std=gnu11", "-fsyntax-only", "-H", "-DTK_VMATH=35", *flags, str(path)],
                          capture_output=True, text=True, timeout=120)


def test_the_prelude_names_stdint_only_as_the_fallback():
    src = _many_source()
    lines = src.splitlines()
    includes = [i for i, line in enumerate(lines) if line.lstrip().startswith("#include")]
    assert [lines[i] for i in includes] == ["#include <stdint.h>"], [lines[i] for i in includes]
    assert lines[includes[0] - 1] == "#else"  # the branch for a compiler without __INT64_TYPE__ and kin
    assert "defined(__INT64_TYPE__)" in src and "typedef __INT64_TYPE__ int64_t;" in src


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_the_c_compiler_reads_no_header(tmp_path):
    r = _syntax(_many_source(), tmp_path)
    assert r.returncode == 0, r.stderr
    headers = [line for line in r.stderr.splitlines() if line.startswith(".")]  # -H: one line a header read
    assert headers == [], headers


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_without_the_predefined_types_the_prelude_takes_stdint(tmp_path):
    r = _syntax(_many_source(), tmp_path, "-U__INT8_TYPE__")
    assert r.returncode == 0, r.stderr
    assert any("stdint.h" in line for line in r.stderr.splitlines() if line.startswith(".")), r.stderr


SCRIPT = """
import math, numpy as np, tack
@tack.kernel
def soft(x, out):
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i]) + math.erf(x[i])
x = np.linspace(-1, 1, 64)
out = np.zeros(64)
soft(x, out)
want = np.exp(x) + np.array([math.erf(v) for v in x])
assert np.allclose(out, want, rtol=1e-12, atol=0), np.abs(out - want).max()
print("ok")
"""


def _run(tmp_path, **env):
    script = tmp_path / "soft.py"
    script.write_text(SCRIPT)
    e = {k: v for k, v in os.environ.items() if k not in ("TACK_VECTOR_MATH", "TACK_CC", "CC")}
    e.update(TACK_CACHE_DIR=str(tmp_path / "cache"), TACK_LOG="info", **env)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    return r.stderr


def _libmvec():
    if platform.machine() != "x86_64" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        ctypes.CDLL("libmvec.so.1")
    except OSError:
        return False
    return True


def test_vector_math_on_and_off_are_two_entries_each_loaded_again(tmp_path):
    gcc = shutil.which("gcc") if _libmvec() else None
    env = {"TACK_CC": gcc} if gcc else {}
    assert "compiled kernel 'soft'" in _run(tmp_path, **env)
    if gcc:  # TK_VMATH carries glibc's minor version: erf's variant is declared from 2.35 on
        (so,) = (tmp_path / "cache").glob("*.so")
        minor = int(platform.libc_ver()[1].split(".")[1])
        assert (b"v_erf\0" in so.read_bytes()) == (minor >= 35)
    assert "compiled kernel 'soft'" in _run(tmp_path, TACK_VECTOR_MATH="0", **env)  # another flag, another key
    assert len(list((tmp_path / "cache").glob("*.so"))) == 2
    assert "loaded kernel 'soft' from the cache" in _run(tmp_path, **env)


@pytest.mark.skipif(os.environ.get("TACK_TEST_ALL") != "1", reason="a process and a compile: make test-all")
def test_the_cold_compile_benchmark_measures_a_kernel():
    sys.path.insert(0, ROOT)
    from benchmarks import cold_compile

    (row,) = cold_compile.measure(["saxpy"])
    assert "error" not in row, row
    assert row["phases"].get("cc", 0) > 0 and row["first_ms"] >= row["phases"]["cc"]
    assert row["c_lines"] > 0
    assert "first call: median" in cold_compile.report([row])
