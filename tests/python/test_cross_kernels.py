"""The C that Tack generates for the CPU, and its prelude, compile and link for
macOS and Windows as they do on Linux (docs/platforms.md).

Kernels of every kind the C dialect emits (maths, integer division, atomics,
print and assert, complex numbers, fast math, nested loops) are built here on
Linux; the source each leaves in the kernel cache (KEY.c: the prelude, the
kernel and the launch ABI's layout checks) is then compiled and linked as a
shared library with the ziglang wheel's `zig cc` for x86_64-windows-gnu,
aarch64-macos and x86_64-macos, warnings shown as errors where the dialect's
own -w does not silence them, and the flags the CPU backend uses there
(platform.h: TK_CC_SHARED; no -march=native, which names this machine).  The
layout checks are _Static_asserts of libtack's struct sizes and offsets: on a
target where the generated code would lay the launch ABI out differently,
the compile fails and names the struct.

About a minute on a 2-core machine (21 compiles), so under make test-all only.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import tack
from _suite import TEST_ALL

pytestmark = pytest.mark.skipif(not TEST_ALL, reason="make test-all (TACK_TEST_ALL=1): 21 cross compiles")

TARGETS = {
    "x86_64-windows-gnu": ("-shared", ".dll", b"MZ"),
    "aarch64-macos": ("-fPIC -shared", ".dylib", bytes.fromhex("cffaedfe0c000001")),
    "x86_64-macos": ("-fPIC -shared", ".dylib", bytes.fromhex("cffaedfe07000001")),
}


def _zig():
    try:
        import ziglang
    except ImportError:
        pytest.skip("needs the ziglang wheel (the `compiler` extra)")
    exe = os.path.join(os.path.dirname(ziglang.__file__), "zig.exe" if sys.platform == "win32" else "zig")
    return exe


@tack.kernel
def maths(x, y):
    for i in range(x.shape[0]):
        y[i] = tack.exp(x[i]) * tack.sin(x[i]) + tack.sqrt(abs(x[i])) + x[i] ** 2.5


@tack.kernel
def integers(a, b):
    for i in range(a.shape[0]):
        b[i] = a[i] // 7 % 5 + (a[i] >> 3)


@tack.kernel
def histogram(a, h):
    for i in range(a.shape[0]):
        tack.atomic_add(h, a[i] % 4, 1)


@tack.kernel
def talking(a):
    for i in range(a.shape[0]):
        assert a[i] >= 0, "negative"
        if i == 0:
            print("first:", a[i])


@tack.kernel
def complexes(z, w):
    for i in range(z.shape[0]):
        w[i] = z[i] * z[i] + z[i]


@tack.kernel(fast_math=True)
def fast(x, y):
    for i in range(x.shape[0]):
        y[i] = tack.tanh(x[i]) / (1.0 + x[i] * x[i])


@tack.kernel
def nested(a, b):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            b[i, j] = a[i, j] + a[(i + 1) % a.shape[0], j]


def _run_all():
    n = 64
    x = np.linspace(0.1, 2.0, n)
    maths(tack.array(x), tack.zeros(n, tack.f64))
    integers(tack.array(np.arange(n, dtype=np.int64)), tack.zeros(n, tack.i32))
    histogram(tack.array(np.arange(n, dtype=np.int32)), tack.zeros(4, tack.i32))
    talking(tack.array(np.ones(n, np.float32)))
    complexes(tack.array(np.ones(n, np.complex128)), tack.zeros(n, tack.complex128))
    fast(tack.array(np.ones(n, np.float32)), tack.zeros(n, tack.f32))
    nested(tack.array(np.ones((8, 8), np.float32)), tack.zeros((8, 8), tack.f32))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """The kept sources of the kernels above, built in a cache of their own."""
    cache = tmp_path_factory.mktemp("cross-cache")
    code = (
        "import sys; sys.path.insert(0, %r); import test_cross_kernels as t; t._run_all()"
        % os.path.dirname(os.path.abspath(__file__))
    )
    env = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_TEST_ALL="1")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=600)
    found = sorted(p for p in cache.glob("*.c") if len(p.stem) == 32)
    assert len(found) >= 7, "expected a kept source per kernel, found %s" % [p.name for p in found]
    return found


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_generated_c_compiles_and_links_for(target, sources, tmp_path):
    zig = _zig()
    shared, suffix, magic = TARGETS[target]
    for src in sources:
        out = tmp_path / (src.stem + suffix)
        cmd = [zig, "cc", "-target", target, "-O2", *shared.split(), "-std=gnu11", "-w", "-fvisibility=hidden",
               "-fno-math-errno", "-fopenmp-simd", "-DTK_VMATH=0", "-o", str(out), str(src)]
        if "macos" in target:
            cmd.append("-lm")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, "%s for %s:\n%s" % (src.name, target, r.stderr[-3000:])
        assert out.read_bytes()[: len(magic)] == magic, "%s is not a %s library" % (out.name, target)
