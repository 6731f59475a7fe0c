"""The opencl backend, for real, on the OpenCL driver of this machine (PoCL
on the CPU in CI): arrays, kernels, errors, and the differential run -- every
kernel call of the language tests run on the OpenCL device too, compared
with the CPU's results -- and Intel's compiler (libocloc) accepting every
OpenCL source that run emits, as SPIR-V and native code for two GPU
generations.

The tests run in the device's memory mode (fine-grained shared virtual
memory where it has it, as PoCL does), and all but the differential run again
with TACK_OPENCL_SVM=0 on cl_mem buffers; `TACK_OPENCL_SVM=0 pytest` runs the
differential on buffers too.  test_opencl_sharing.py covers what each mode shares.

Without an OpenCL driver these tests skip with a line saying what to install
(`make test` installs PoCL and Intel's compiler when it runs as root)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _ocloc  # noqa: E402
import _suite  # noqa: E402

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
pytestmark = pytest.mark.skipif(
    not OPENCL, reason="no OpenCL device: install ocl-icd-libopencl1 and pocl-opencl-icd (make test does, as root)")
DEV = OPENCL[0] if OPENCL else None

LANGUAGE_FILES = list(_suite.FILES)  # the one registry of the language suite


@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def doubled_scale(a, x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * (a * 2.0)  # a * 2.0: two Python floats meeting f32, computed in f32


@tack.kernel
def shows_scale(a, x):
    print(a)
    for i in range(x.shape[0]):
        x[i] = a * x[i]


@tack.kernel
def shifted(x, k):
    for i in range(x.shape[0]):
        x[i + k] = 1.0


@tack.kernel
def scaled_sum(x, out, s):
    n = x.shape[0]
    t = 0.0
    for i in range(n):
        out[0] += x[i] * s
    t = out[0]
    for i in range(n):
        x[i] = t


def test_device_is_listed_and_named():
    assert DEV in tack.devices()
    a = tack.zeros(3, tack.f32, device=DEV)
    assert a.device == DEV


def test_arrays_round_trip():
    host = np.arange(1000, dtype=np.float64)
    d = tack.array(host, device=DEV)
    np.testing.assert_array_equal(d.numpy(), host)
    f = tack.full(17, 2.5, tack.f32, device=DEV)
    np.testing.assert_array_equal(f.numpy(), np.full(17, 2.5, np.float32))


def test_a_kernel_runs_there():
    x = tack.array(np.arange(100_000, dtype=np.float32), device=DEV)
    y = tack.ones(100_000, tack.f32, device=DEV)
    saxpy(2.0, x, y)
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(100_000, dtype=np.float32) + 1)


def test_a_python_float_that_meets_only_f32_needs_no_fp64():
    """saxpy with a Python float `a` and f32 arrays computes nothing in f64
    (NEP 50: `a` becomes an f32 where it meets x): the OpenCL source needs no
    fp64, so DG2 (which has none) takes it, and the results are the CPU's to
    the bit, also for values an f32 rounds, flushes or overflows."""
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    y0 = np.linspace(1, 2, 1001, dtype=np.float32)
    f32 = np.ones(4, np.float32)
    src = saxpy.generated_source(2.5, f32, f32, target="opencl")
    assert "fp64=0 */" in src and "as_double" not in src
    assert "fp64=0 */" in saxpy.generated_source(np.float32(2.5), f32, f32, target="opencl")
    # arithmetic of Python floats meeting f32 is f32 too (the one type rule); printed, a Python
    # float keeps its double
    assert "fp64=0 */" in doubled_scale.generated_source(2.5, f32, f32, target="opencl")
    assert "fp64=1 */" in shows_scale.generated_source(2.5, f32, target="opencl")
    for a in (0.1, 1e-40, 3.5e38, 1e300, -0.0, float("nan")):
        cpu = y0.copy()
        saxpy(a, x, cpu)
        with np.errstate(all="ignore"):
            want = np.float32(a) * x + y0  # NumPy 2: the Python float becomes an f32 first
        np.testing.assert_array_equal(cpu, want)
        yd = tack.array(y0, device=DEV)
        saxpy(a, tack.array(x, device=DEV), yd)
        np.testing.assert_array_equal(yd.numpy(), cpu)
    out = tack.zeros(1001, tack.f32, device=DEV)
    doubled_scale(0.1, tack.array(x, device=DEV), out)
    cpu = np.zeros(1001, np.float32)
    doubled_scale(0.1, x, cpu)
    np.testing.assert_array_equal(out.numpy(), cpu)
    if _ocloc.library() is not None:
        rc, outputs = _ocloc.compile(src, "dg2")
        assert rc == 0 and any(name.endswith(".bin") for name in outputs), outputs.get("stdout.log", b"")[:2000]


@tack.kernel
def cshift(a, c, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * c + c


def test_a_python_complex_that_meets_only_complex64_needs_no_fp64():
    """A Python complex is weak: with complex64 arrays it travels as a complex64
    (each part as f32 bits), so the source needs no fp64, and the results are
    the CPU's to the bit; a NumPy complex128 keeps its double."""
    z = (np.linspace(-3, 3, 257) + 1j * np.linspace(2, -1, 257)).astype(np.complex64)
    src = cshift.generated_source(z, 0.1 - 2.7j, z, target="opencl")
    assert "fp64=0 */" in src and "as_double" not in src
    assert "fp64=1 */" in cshift.generated_source(z, np.complex128(0.1 - 2.7j), z.astype(np.complex128),
                                                  target="opencl")
    for c in (0.1 - 2.7j, 1e-40 + 3.5e38j):
        cpu = np.zeros_like(z)
        with np.errstate(all="ignore"):
            cshift(z, c, cpu)
        dev = tack.zeros(257, tack.complex64, device=DEV)
        cshift(tack.array(z, device=DEV), c, dev)
        np.testing.assert_array_equal(dev.numpy(), cpu)


@tack.kernel
def prints_two(a):
    print(a[0], a[1])
    print(a[1])


@tack.kernel
def prints_complex(z, w):
    print(z[0], w[0], "and", z[0] * 2)


def test_print_of_several_floats(capfd):
    """Two float items once raised a bogus IndexError on PoCL: a print helper
    that was a called function (not inlined) holding printf calls, called
    from two places, left the kernel reading its array extents wrong.  The
    helpers are always inlined now."""
    for dt in (np.float64, np.float32):
        a = tack.array(np.array([1.5, -2.0], dt), device=DEV)
        prints_two(a)
        tack.synchronize(DEV)
        out, _ = capfd.readouterr()
        assert out == "1.5 -2.0\n-2.0\n", dt


def test_print_of_a_complex_as_python(capfd):
    z = tack.array(np.array([1 + 2j], np.complex128), device=DEV)
    w = tack.array(np.array([complex(-0.0, -1.5)], np.complex64), device=DEV)
    prints_complex(z, w)
    tack.synchronize(DEV)
    out, _ = capfd.readouterr()
    assert out == "(1+2j) (-0-1.5j) and (2+4j)\n"


@tack.kernel
def divide_and_root(x, y, q, r):
    for i in range(x.shape[0]):
        q[i] = x[i] / y[i]
        r[i] = tack.sqrt(x[i])


def test_f32_division_and_sqrt_round_as_numpy():
    """Correctly rounded where the device offers it (the build asks with
    -cl-fp32-correctly-rounded-divide-sqrt; OpenCL's default allows 2.5 and
    3 ulps): tack.random's normal_f32 counts on it."""
    rng = np.random.default_rng(3)
    x = (rng.random(100_000) * 10).astype(np.float32)
    y = (rng.random(100_000) * 3 + 0.01).astype(np.float32)
    q, r = tack.zeros(len(x), tack.f32, device=DEV), tack.zeros(len(x), tack.f32, device=DEV)
    divide_and_root(tack.array(x, device=DEV), tack.array(y, device=DEV), q, r)
    np.testing.assert_array_equal(q.numpy(), x / y)
    np.testing.assert_array_equal(r.numpy(), np.sqrt(x))


def test_phases_share_the_frame():
    x = tack.array(np.ones(1000), device=DEV)
    out = tack.zeros(1, tack.f64, device=DEV)
    scaled_sum(x, out, 0.5)
    np.testing.assert_array_equal(x.numpy(), np.full(1000, 500.0))


def test_a_failed_check_is_an_error_at_the_next_synchronization():
    x = tack.zeros(4, tack.f32, device=DEV)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 0 with size 4 .*kernel shifted"):
        shifted(x, 1)
        tack.synchronize(DEV)
    shifted(x, -1)  # the record was cleared: the next launch runs
    tack.synchronize(DEV)
    np.testing.assert_array_equal(x.numpy(), [1, 1, 1, 1])



QUIET_BUILD = """
import numpy as np
import tack

@tack.kernel
def pick(a, v, out):
    for i in range(a.shape[0]):
        k = a[i]
        if k == 2:                        # an == as an if's whole condition
            out[i] = v[i]
        while k == 7:
            k = 0
        if k != k:                        # an integer's NaN test: a self-comparison
            out[i] = -v[i]

dev = "%s"
a = tack.array(np.array([1, 2, 7], np.int32), device=dev)
out = tack.zeros(3, tack.f32, device=dev)
pick(a, tack.array(np.ones(3, np.float32), device=dev), out)
mesh = tack.Mesh(tack.array(np.eye(3, dtype=np.float32), device=dev),
                 tack.array(np.array([[0, 1, 2]], np.int32), device=dev))   # the Bvh's scans and sorts
assert out.numpy().tolist() == [0.0, 1.0, 0.0]
print("ok")
"""


def test_builds_print_no_compiler_warnings(tmp_path):
    """A kernel build prints nothing on the user's stderr: PoCL's clang wrote "7 warnings
    generated." for a kernel with `if a == b` (Tack wrapped the comparison's parentheses in the
    if's: -Wparentheses-equality) and "2 warnings generated." for every int32 scan a Bvh built
    (its min and max test `a != a` for NaN: -Wtautological-compare).  Run with empty caches, so
    that every kernel is built from source."""
    script = tmp_path / "quiet.py"
    script.write_text(QUIET_BUILD % DEV)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"), POCL_KERNEL_CACHE="0")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr, proc.stderr


def test_arrays_on_two_devices_are_refused():
    # the message names both parameters (it said "an earlier array" for the first)
    with pytest.raises(ValueError, match=rf"on one device, but 'y' is on cpu and 'x' is on {DEV}"):
        saxpy(1.0, tack.zeros(4, tack.f32, device=DEV), np.zeros(4, np.float32))


@pytest.fixture(scope="module")
def differential(tmp_path_factory):
    """The language tests run with every kernel call repeated on the OpenCL
    device (_opencl_diff.py, in the suite's one watched run: _suite.watched):
    its summary and the directory of the distinct OpenCL sources it emitted.  The tests' own outcome does not matter here
    (the wrapper changes what a few of them inspect, such as refcounts)."""
    import pathlib

    return _suite.watched("_opencl_diff"), pathlib.Path(_suite.opencl_sources())


def test_language_suite_gives_the_cpu_results(differential, record_property):
    """Every kernel call of the language tests, run again on the OpenCL device
    with copies of its arguments, leaves the arrays as the CPU did (and fails
    with the same exception where the CPU's failed).  Under make test, the calls
    whose source is in PoCL's quarter (_suite.share; Intel's compiler takes the rest)."""
    s, _ = differential
    print({k: v for k, v in s.items() if k != "mismatches"})
    sources = [p.read_text() for p in differential[1].iterdir()]
    ran = [src for src in sources if _suite.TEST_ALL or _suite.share("opencl", src)]
    record_property("language_suite", f"OpenCL (PoCL): {s['compared']} kernel calls run against the CPU's, "
                    f"{len(ran)} of {len(sources)} distinct sources")
    assert not s["mismatches"], json.dumps(s["mismatches"][:5], indent=1)
    assert s["compared"] > (10_000 if _suite.TEST_ALL else 1_500), s  # make test: a quarter of the sources
    assert s["errors_alike"] > 50, s


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc not installed (Debian: intel-opencl-icd)")
def test_intel_compiler_accepts_every_kernel(differential, record_property):
    """Each distinct OpenCL source of the differential run (under make test,
    the three quarters PoCL did not run: _suite.share) compiles with libocloc to SPIR-V and native code for the strictest generation it fits:
    DG2 (Arc, Xe-HPG, which has no f64) when it needs no f64, else Ponte
    Vecchio (pvc, Xe-HPC).  Under make test-all one source in four, chosen
    by its hash so the same ones every run, also compiles for the other
    generation (pvc, or Arctic Sound xe_hp_sdv, Xe-HP with f64): the dialect
    emits one source for every Intel GPU, so a second generation catches
    only what one chip's compiler refuses.  The compiles run in one worker
    process a core, 24 to a program (_ocloc.check_many: a failed batch is
    compiled again a source at a time), their outcomes kept between runs
    (_tool_cache.py)."""
    import hashlib

    _, sources = differential
    every = sorted(sources.iterdir())
    texts = {path: path.read_text() for path in every}
    # under make test the three quarters of the sources PoCL did not run (_suite.share)
    paths = [p for p in every if _suite.TEST_ALL or _suite.share("ocloc", texts[p])]
    jobs, names = [], []
    for path in paths:
        src = texts[path]
        fp64 = "fp64=1 */" in src
        devices = ["pvc" if fp64 else "dg2"]
        if _suite.TEST_ALL and hashlib.sha256(src.encode()).digest()[0] % 4 == 0:
            devices.append("xe_hp_sdv" if fp64 else "pvc")
        for device in devices:
            jobs.append((src, device))
            names.append((path.name, device))
    failures, compiled, dg2, second = [], 0, 0, len(jobs) - len(paths)
    for (name, device), failure in zip(names, _ocloc.check_many(jobs)):
        if failure is not None:
            failures.append(f"{name} for {device}: rc {failure[0]}\n{failure[1][:2000]}")
        else:
            compiled += 1
            dg2 += device == "dg2"
    print(f"libocloc: {compiled} compiles ({dg2} for dg2, {second} for a second generation) of {len(paths)} sources")
    record_property("language_suite", f"Intel (libocloc): {len(paths)} of {len(every)} sources, {compiled} compiles "
                    f"({dg2} for dg2, {second} for a second generation)")
    assert not failures, "\n\n".join(failures[:3])
    assert len(paths) > 100 and dg2 > 50 and (second > 10 or not _suite.TEST_ALL) and compiled == len(jobs)
    assert len(paths) == len(every) or 0.6 < len(paths) / len(every) < 0.9  # three quarters, not a sliver


SPEC_ON_OPENCL = '''
import os
import numpy as np
import tack

tack.set_default_device("opencl")
host = np.arange(12, dtype=np.float32).reshape(3, 4)
data = tack.array(host)
host[:] = -1                              # does not change the Tack array
np.testing.assert_array_equal(data.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
tack.copyto(data, host)                   # now it does
np.testing.assert_array_equal(np.asarray(data), host)
assert data.device.startswith("opencl")

@tack.kernel
def fill_indices(out):
    for i in range(out.shape[0]):
        out[i] = float(i)

out = tack.zeros(8, tack.f32)             # on the default device: OpenCL
fill_indices(out)
np.testing.assert_array_equal(out.numpy(), np.arange(8, dtype=np.float32))

# which mode: fine-grained shared virtual memory (host memory to DLPack), or cl_mem buffers
svm = data.__dlpack_device__() == (1, 0)
assert svm or data.__dlpack_device__() == (4, 0)
if os.environ.get("TACK_OPENCL_SVM") == "0":
    assert not svm

# a host buffer, or an address Tack did not allocate there, cannot be wrapped
for what in (np.zeros(8, dtype=np.float32), 0x1000):
    try:
        tack.array_from_ptr(what, (8,), tack.f32, writable=True)
    except (ValueError, NotImplementedError) as e:
        assert "opencl" in str(e), e
        if isinstance(what, int):
            assert ("not in shared virtual memory" if svm else "has no shared virtual memory") in str(e), e
    else:
        raise AssertionError("array_from_ptr wrapped something on OpenCL")

# DLPack: a NumPy producer stays on the host (Tack takes the producer's device)
view = tack.from_dlpack(np.arange(3.0))
assert view.device == "cpu"
moved = tack.from_dlpack(np.arange(3.0), device="opencl")   # a copy, asked for
np.testing.assert_array_equal(moved.numpy(), np.arange(3.0))
try:
    tack.from_dlpack(np.arange(3.0), device="opencl", copy=False)
except BufferError as e:
    assert "without a copy" in str(e), e
else:
    raise AssertionError("host memory was shared with an OpenCL device")
# NumPy shares an array in shared virtual memory, and cannot read a cl_mem buffer
out = tack.array(np.arange(8, dtype=np.float32))
if svm:
    alias = np.from_dlpack(out)
    fill_indices(out)                 # shared now: complete before the call returns
    np.testing.assert_array_equal(alias, np.arange(8, dtype=np.float32))
else:
    try:
        np.from_dlpack(out)
    except (RuntimeError, BufferError, TypeError) as e:
        pass
    else:
        raise AssertionError("NumPy read an OpenCL buffer as host memory")
print("ok")
'''


@pytest.mark.parametrize("svm", ["1", "0"])
def test_spec_interop_snippets_on_opencl(tmp_path, svm):
    """The interop chapter's examples with device="opencl", in both memory
    modes: copies in and out work as written; fine-grained SVM is shared with
    NumPy; what OpenCL cannot share is refused, not mis-shared."""
    script = tmp_path / "spec_opencl.py"
    script.write_text(SPEC_ON_OPENCL)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TACK_OPENCL_SVM=svm))
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(os.environ.get("TACK_OPENCL_SVM") == "0", reason="this run is the buffer mode already")
def test_the_quick_tests_pass_on_cl_mem_buffers_too():
    """The tests above (all but the long differential run) again with
    TACK_OPENCL_SVM=0: arrays as cl_mem buffers on a device that may have SVM."""
    env = dict(os.environ, TACK_OPENCL_SVM="0")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "not language_suite and not intel_compiler and not spec_interop"],
                          cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout, proc.stdout[-3000:]
