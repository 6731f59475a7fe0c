"""fast_math kernels on OpenCL and Level Zero: built with -cl-fast-relaxed-math.

`@tack.kernel(fast_math=True)` allows what the CPU's fast-math flags allow
(contraction into fused multiply-adds, reassociation, finite math) and, as
CUDA's --use_fast_math, the hardware's approximate math functions.  On
OpenCL that is clBuildProgram's -cl-fast-relaxed-math, without the
correctly rounded division and sqrt a plain kernel asks for; on Level Zero
the same option given to libocloc and, as the module's build flag, to the
driver's compiler (src/backends/opencl/opencl_launch.c,
src/backends/level_zero/level_zero_launch.c).

On OpenCL the tests run on the machine's driver (PoCL on the CPU here): the
build options are read from TACK_LOG=info's "compiled kernel ... with options
'...'" line, in a process of its own with a cache of its own, and a
fast_math kernel's results are checked against OpenCL's bounds for
-cl-fast-relaxed-math (docs/backends.md).  On Level Zero they run against
the fake driver (tests/c/fake_level_zero.c, which records the module's build
flags) with the real libocloc; tests/c/test_level_zero_fake.c checks the
same from C.
"""

import math
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack

import _fake_runtime

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
needs_opencl = pytest.mark.skipif(
    not OPENCL, reason="no OpenCL device: install ocl-icd-libopencl1 and pocl-opencl-icd (make test does, as root)")


def funcs(x, y, s, e, r, q):
    for i in range(x.shape[0]):
        s[i] = math.sin(x[i])
        e[i] = math.exp(y[i])
        r[i] = math.sqrt(y[i])
        q[i] = x[i] / y[i]


def muladd(x, y, z, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + z[i]


def test_the_opencl_dialect_forbids_contraction_only_without_fast_math():
    f = np.ones(4, np.float32)
    plain = tack.kernel(muladd).generated_source(f, f, f, f, target="opencl")
    fast = tack.kernel(muladd, fast_math=True).generated_source(f, f, f, f, target="opencl")
    assert "#pragma OPENCL FP_CONTRACT OFF" in plain
    assert "FP_CONTRACT" not in fast


OPENCL_SCRIPT = textwrap.dedent("""
    import math, sys
    import numpy as np
    import tack
    sys.path.insert(0, {here!r})
    from test_cl_fast_math import funcs

    dev = [d for d in tack.devices() if d.startswith("opencl")][0]
    rng = np.random.default_rng(1)
    n = 1 << 14
    x = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
    y = rng.uniform(0.01, 20, n).astype(np.float32)
    out = {{}}
    for fast in (False, True):
        o = [tack.zeros(n, tack.f32, device=dev) for _ in range(4)]
        tack.kernel(funcs, fast_math=fast)(tack.array(x, device=dev), tack.array(y, device=dev), *o)
        tack.synchronize(dev)
        print("built", "fast" if fast else "plain", flush=True)
        for name, a in zip("serq", o):
            out[name + ("_fast" if fast else "_plain")] = a.numpy()
    np.savez(sys.argv[1], x=x, y=y, **out)
""")


def _ulps(got, exact):
    """|got - exact| in units of the float32 spacing at exact."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@needs_opencl
def test_opencl_fast_math_builds_with_fast_relaxed_math_and_stays_in_its_bounds(tmp_path):
    env = dict(os.environ, TACK_LOG="info", TACK_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "opencl_fast.py"
    script.write_text(OPENCL_SCRIPT.format(here=os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "out.npz")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    built = [line for line in r.stderr.splitlines() if "compiled kernel 'funcs'" in line and "opencl" in line]
    assert len(built) == 2, r.stderr[-3000:]
    opts = [re.search(r"with options '([^']*)'", line).group(1).split() for line in built]
    assert "-cl-fast-relaxed-math" not in opts[0]
    assert opts[1] == ["-cl-std=CL1.2", "-cl-fast-relaxed-math"], opts[1]  # no correctly rounded divide/sqrt
    # two cache entries: the options are in the key
    entries = [re.search(r"\(([^()]*)\)$", line).group(1) for line in built]
    assert entries[0] != entries[1] and all(os.path.exists(e) for e in entries), entries
    d = np.load(tmp_path / "out.npz")
    x, y = d["x"].astype(np.float64), d["y"].astype(np.float64)
    # OpenCL's bounds for -cl-fast-relaxed-math (OpenCL C, "Relative Error as ULPs", the
    # fast relaxed math table): sin absolute error at most 2**-11 on [-pi, pi], exp at most
    # 3 + floor(|2x|) ulps, division 2.5 ulps; sqrt keeps OpenCL's 3 ulps
    assert np.max(np.abs(d["s_fast"] - np.sin(x))) <= 2.0**-11
    assert np.all(_ulps(d["e_fast"], np.exp(y)) <= 3 + np.floor(np.abs(2 * y)))
    assert np.max(_ulps(d["r_fast"], np.sqrt(y))) <= 3
    assert np.max(_ulps(d["q_fast"], x / y)) <= 2.5
    # the plain kernel's division and sqrt are correctly rounded where the device offers them
    if "-cl-fp32-correctly-rounded-divide-sqrt" in opts[0]:
        np.testing.assert_array_equal(d["q_plain"], (x / y).astype(np.float32))
        np.testing.assert_array_equal(d["r_plain"], np.sqrt(y).astype(np.float32))


@needs_opencl
def test_opencl_fast_math_may_contract_a_plain_kernel_never_does():
    """x * y + z: a plain kernel rounds the product and the sum, as NumPy;
    a fast_math one may fuse them (PoCL does, in every element here), and
    its result is then the fused value, never a third one."""
    dev = OPENCL[0]
    rng = np.random.default_rng(2)
    x, y, z = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    unfused = x * y + z
    fused = (x.astype(np.float64) * y + z).astype(np.float32)  # the product is exact in f64
    assert np.any(unfused != fused)
    got = {}
    for fast in (False, True):
        o = tack.zeros(4096, tack.f32, device=dev)
        tack.kernel(muladd, fast_math=fast)(*(tack.array(a, device=dev) for a in (x, y, z)), o)
        got[fast] = o.numpy()
    np.testing.assert_array_equal(got[False], unfused)
    assert np.all((got[True] == fused) | (got[True] == unfused))


# ------------------------------------------------------------- Level Zero
@pytest.fixture(scope="module")
def fake_ze(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_level_zero.c", "libze_loader.so.1", "the fake Level Zero loader")


L0_SCRIPT = textwrap.dedent("""
    import ctypes, os, sys
    import numpy as np
    import tack
    sys.path.insert(0, {here!r})
    from test_cl_fast_math import funcs

    FAKE = ctypes.CDLL(os.environ["FAKE_ZE_LIB"])
    FAKE.fake_build_flags.restype = ctypes.c_char_p
    for fast in (False, True, False):
        a = [tack.zeros(64, tack.f32, device="level_zero") for _ in range(6)]
        tack.kernel(funcs, fast_math=fast)(*a)
        tack.synchronize()
        print("module flags:", repr(FAKE.fake_build_flags().decode()), flush=True)
""")


@_fake_runtime.needs_cc("the fake Level Zero loader")
@pytest.mark.parametrize("rounded", [True, False], ids=["fp32-rounded", "no-fp64"])
def test_level_zero_fast_math_gives_ocloc_and_the_module_fast_relaxed_math(tmp_path, fake_ze, rounded):
    """The options table's three rows: plain (a device without correctly
    rounded f32 division, as Intel's GPUs without fp64), correctly rounded
    (the fake's default device), fast_math (either device)."""
    if not _fake_runtime.has_ocloc():
        pytest.skip("libocloc is not installed (Debian: intel-opencl-icd)")
    env = _fake_runtime.environment(tmp_path, ("FAKE_ZE_DEVICES", "FAKE_ZE_NO_IMMEDIATE", "FAKE_ZE_NO_LISTS",
                                               "FAKE_ZE_FP64"),
                                    FAKE_ZE_LIB=fake_ze, LD_LIBRARY_PATH=fake_ze.parent, TACK_LOG="info")
    if not rounded:
        env["FAKE_ZE_FP64"] = "0"
    text = L0_SCRIPT.format(here=os.path.dirname(os.path.abspath(__file__)))
    proc = _fake_runtime.run_script(tmp_path, text, env)
    plain_flags = "-ze-fp32-correctly-rounded-divide-sqrt" if rounded else ""
    plain_opts = ["-cl-std=CL1.2"] + (["-cl-fp32-correctly-rounded-divide-sqrt"] if rounded else [])
    # a plain kernel, a fast_math one, then a plain one again (from the disk cache)
    flags = [line.split(":", 1)[1].strip() for line in proc.stdout.splitlines() if line.startswith("module flags:")]
    assert flags == [repr(plain_flags), repr("-cl-fast-relaxed-math"), repr(plain_flags)], proc.stdout
    built = [line for line in proc.stderr.splitlines() if "compiled kernel 'funcs'" in line]
    assert len(built) == 2, proc.stderr[-3000:]  # the third call loaded the first's SPIR-V
    opts = [re.search(r"with options '([^']*)'", line).group(1).split() for line in built]
    assert opts[0] == plain_opts, opts[0]
    assert opts[1] == ["-cl-std=CL1.2", "-cl-fast-relaxed-math"], opts[1]  # no correctly rounded divide/sqrt
    assert f"module flags '{plain_flags}'" in built[0] and "module flags '-cl-fast-relaxed-math'" in built[1]
    # two SPIR-V entries in the cache: the options and flags are in the key
    spv = [f for f in os.listdir(tmp_path / "cache") if f.endswith(".spv")]
    assert len(spv) == 2, spv
