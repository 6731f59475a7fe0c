"""The installed wheel works: cibuildwheel's test command (pyproject.toml,
[tool.cibuildwheel]) runs this in a fresh environment holding only the wheel
and what it requires, from outside the source tree, on each platform's runner.

It checks what a repair step or a platform's loader could break and the test
suite (which runs from source) would not see: that `import tack` loads the
extension and the libtack beside it, that get_include() and get_library() name
the wheel's headers and this system's shared library, and that a kernel is
compiled by the system's C compiler (the ziglang wheel's on Windows), loaded
and run, with the answer NumPy gives; then the same kernel in debug mode.
Exits non-zero, naming the failed check, on any difference.
"""
import os
import sys
import tempfile

import numpy as np

import tack


def check(ok, what):
    if not ok:
        sys.exit(f"wheel smoke test FAILED: {what}")
    print(f"ok: {what}")


here = os.path.dirname(os.path.abspath(tack.__file__))
check("site-packages" in here or "dist-packages" in here, f"tack is the installed wheel's ({here})")
include, lib = tack.get_include(), tack.get_library()
check(os.path.isfile(os.path.join(include, "tack_kernel.h")), f"get_include() holds tack_kernel.h ({include})")
names = tack._library_names(sys.platform)
check(any(os.path.isfile(os.path.join(lib, n)) for n in names), f"get_library() holds {' or '.join(names)} ({lib})")

# a kernel cache of its own: a stale one from another build cannot answer for this wheel
os.environ.setdefault("TACK_CACHE_DIR", tempfile.mkdtemp(prefix="tack-smoke-"))


@tack.kernel
def saxpy(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel(jit=False)
def saxpy_debug(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


x = np.linspace(0.0, 1.0, 100_003, dtype=np.float32)
want = 2.5 * x + 1.0
for name, k in (("compiled", saxpy), ("debug mode", saxpy_debug)):
    y = np.ones_like(x)
    k(np.float32(2.5), x, y)
    check(np.array_equal(y, want), f"a {name} kernel gives NumPy's answer")
t = tack.array(x)
y = tack.zeros(x.shape[0], dtype=tack.f32)
saxpy(np.float32(2.0), t, y)
check(np.array_equal(y.numpy(), 2.0 * x), "a kernel on tack arrays")
print(f"tack {tack.__version__} wheel smoke test passed on {sys.platform} ({sys.version.split()[0]})")
