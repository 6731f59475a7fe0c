"""Check Tack's numbers on one backend against NumPy.

    uv run python docs/examples/validate.py --arch cpu
    uv run python docs/examples/validate.py --arch cuda --vtk
    uv run python docs/examples/validate.py --arch opencl
    uv run python docs/examples/validate.py --arch hip
    uv run python docs/examples/validate.py --arch metal

Each check runs a small kernel (or an exchange with another library) on the
chosen backend and compares the result with NumPy or Python computing the
same thing.  Every check prints one line -- PASS, FAIL with what differed, or
SKIP with why it does not apply -- and the script exits with status 1 if any
check failed (or one hung for --timeout seconds), 2 if the backend is not
available on this machine, 0 otherwise.

--arch metal on a machine without Metal (anything but a Mac) checks the
compile side only: each check runs on the CPU, every kernel it calls is
emitted as Metal Shading Language and, in a source checkout with clang++,
type-checked against tests/msl (tests/python/_msl.py); a kernel Metal refuses
(float64, 64-bit atomics, print) is reported as refused.  It exits 1 if any
emitted source fails the check, else 2: running on Metal needs a Mac.

--vtk adds the VTK exchange checks (it needs `uv sync --extra interop`).  On
CPU they share memory with VTK; on a GPU they exchange copies.
"""

from __future__ import annotations

import argparse
import faulthandler
import math
import sys
import traceback

import numpy as np

import tack

ARCHES = ("cpu", "cuda", "opencl", "hip", "metal", "level_zero")


class Skip(Exception):
    """The check does not apply to this backend or build."""


class Checks:
    def __init__(self):
        self.items = []

    def __call__(self, group, needs_kernels=True):
        def register(fn):
            self.items.append((group, fn.__name__, fn, needs_kernels))
            return fn

        return register


check = Checks()
DEVICE = "cpu"


def on_device(values, dtype=None):
    return tack.array(values, dtype, device=DEVICE)


def close(got, want, rtol=1e-6, atol=0.0, what="values"):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape}, expected {want.shape}")
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
        idx = tuple(int(k) for k in bad[0])
        raise AssertionError(f"{what}: {len(bad)} of {want.size} differ; at {idx}: got {got[idx].item()!r}, "
                             f"expected {want[idx].item()!r}")
    return f"max |error| {float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0)):.3g}"


def equal(got, want, what="values"):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
        diff = "" if got.shape != want.shape else f", {int(np.sum(got != want))} of {want.size} differ"
        raise AssertionError(f"{what}: got {got.dtype}{list(got.shape)}, expected "
                             f"{want.dtype}{list(want.shape)}{diff}")
    return "exact"


# ------------------------------------------------------ kernel language

@check("language")
def saxpy_f32():
    @tack.kernel
    def saxpy(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    rng = np.random.default_rng(1)
    x = rng.standard_normal(10_000).astype(np.float32)
    y = rng.standard_normal(10_000).astype(np.float32)
    ty = on_device(y)
    saxpy(1.5, on_device(x), ty)
    assert ty.dtype == tack.f32, f"y became {ty.dtype}"
    return close(ty.numpy(), np.float32(1.5) * x + y, rtol=1e-6, atol=1e-6)


@check("language")
def integer_floor_division_and_modulo():
    @tack.kernel
    def divmod_k(a, b, q, r):
        for i in range(a.shape[0]):
            q[i] = a[i] // b[i]
            r[i] = a[i] % b[i]

    a = np.array([7, -7, 7, -7, 0, 13, -13, 2**40 + 3, -(2**40) - 3], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 5, -4, 4, 7, 7], dtype=np.int64)
    q, r = on_device(np.zeros_like(a)), on_device(np.zeros_like(a))
    divmod_k(on_device(a), on_device(b), q, r)
    equal(q.numpy(), a // b, "quotients (Python floors)")
    return equal(r.numpy(), a % b, "remainders (sign of the divisor)")


@check("language")
def float_floor_division_and_modulo():
    @tack.kernel
    def fdivmod(a, b, q, r):
        for i in range(a.shape[0]):
            q[i] = a[i] // b[i]
            r[i] = a[i] % b[i]

    a = np.array([7.5, -7.5, 7.5, -7.5, 1e10, -0.25], dtype=np.float64)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 0.5], dtype=np.float64)
    q, r = on_device(np.zeros_like(a)), on_device(np.zeros_like(a))
    fdivmod(on_device(a), on_device(b), q, r)
    close(q.numpy(), np.floor_divide(a, b), rtol=0, what="quotients")
    return close(r.numpy(), np.mod(a, b), rtol=1e-15, what="remainders")


@check("language")
def math_functions_f64():
    @tack.kernel
    def mathk(x, out):
        for i in range(x.shape[0]):
            v = x[i]
            out[i, 0] = math.sqrt(v)
            out[i, 1] = math.exp(-v)
            out[i, 2] = math.log(v)
            out[i, 3] = math.sin(v)
            out[i, 4] = math.cos(v)
            out[i, 5] = math.atan2(v, 2.0)
            out[i, 6] = math.floor(v)
            out[i, 7] = math.ceil(v)
            out[i, 8] = math.pow(v, 1.5)
            out[i, 9] = abs(v - 3.0)

    x = np.linspace(0.1, 7.0, 257)
    out = on_device(np.zeros((x.size, 10)))
    mathk(on_device(x), out)
    want = np.stack([np.sqrt(x), np.exp(-x), np.log(x), np.sin(x), np.cos(x), np.arctan2(x, 2.0),
                     np.floor(x), np.ceil(x), x ** 1.5, np.abs(x - 3.0)], axis=1)
    return close(out.numpy(), want, rtol=1e-13, atol=1e-15)


@check("language")
def default_float_and_weak_scalars():
    @tack.kernel
    def scale(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * 0.1 + float(i)

    x = np.arange(100, dtype=np.float32)
    out = on_device(np.zeros(100, np.float32))
    scale(on_device(x), out)
    # 0.1 is weak: it takes x's type, f32, so the arithmetic is f32.
    return close(out.numpy(), x * np.float32(0.1) + np.arange(100, dtype=np.float32), rtol=1e-7)


@check("language")
def casts_truncate_toward_zero():
    @tack.kernel
    def casts(x, out):
        for i in range(x.shape[0]):
            out[i] = int(x[i])

    x = np.array([-2.7, -0.5, 0.5, 2.7, 1e9 + 0.5], dtype=np.float64)
    out = on_device(np.zeros(x.size, np.int64))
    casts(on_device(x), out)
    return equal(out.numpy(), np.trunc(x).astype(np.int64))


@check("language")
def int32_wraps_on_overflow():
    @tack.kernel
    def wrap(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * b[i] + a[i]

    a = np.array([2**30, -(2**31), 123456789, 7], dtype=np.int32)
    b = np.array([4, 3, 1000, -5], dtype=np.int32)
    out = on_device(np.zeros(4, np.int32))
    wrap(on_device(a), on_device(b), out)
    with np.errstate(over="ignore"):
        want = a * b + a
    return equal(out.numpy(), want)


@check("language")
def loops_branches_and_while():
    @tack.kernel
    def collatz(n, steps):
        for i in range(n.shape[0]):
            v = n[i]
            k = 0
            while v != 1:
                if v % 2 == 0:
                    v = v // 2
                else:
                    v = 3 * v + 1
                k += 1
                if k > 1000:
                    break
            steps[i] = k

    def py(v):
        k = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        return k

    n = np.arange(1, 2001, dtype=np.int64)
    steps = on_device(np.zeros(n.size, np.int64))
    collatz(on_device(n), steps)
    return equal(steps.numpy(), np.array([py(int(v)) for v in n], dtype=np.int64))


@check("language")
def two_dimensional_arrays_and_ndrange():
    @tack.kernel
    def stencil(a, out):
        for i, j in tack.ndrange(a.shape[0] - 2, a.shape[1] - 2):
            out[i + 1, j + 1] = (a[i, j + 1] + a[i + 2, j + 1] + a[i + 1, j] + a[i + 1, j + 2]) * 0.25

    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 48))
    out = on_device(np.zeros_like(a))
    stencil(on_device(a), out)
    want = np.zeros_like(a)
    want[1:-1, 1:-1] = (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]) * 0.25
    return close(out.numpy(), want, rtol=1e-15, atol=1e-15)


@check("language")
def atomic_sum_reduction():
    @tack.kernel
    def total(x, out):
        for i in range(x.shape[0]):
            out[0] += x[i]

    x = np.arange(100_000, dtype=np.int64) - 31_000
    out = on_device(np.zeros(1, np.int64))
    total(on_device(x), out)
    return equal(out.numpy(), np.array([x.sum()], dtype=np.int64))


@check("language")
def atomic_histogram():
    @tack.kernel
    def hist(x, bins):
        for i in range(x.shape[0]):
            bins[x[i] % bins.shape[0]] += 1

    x = np.random.default_rng(3).integers(0, 1000, 50_000).astype(np.int32)
    bins = on_device(np.zeros(16, np.int32))
    hist(on_device(x), bins)
    return equal(bins.numpy(), np.bincount(x % 16, minlength=16).astype(np.int32))


@check("language")
def vec3_dot_cross_length():
    @tack.kernel
    def geometry(a, b, d, c, n):
        for i in range(a.shape[0]):
            d[i] = tack.dot(a[i], b[i])
            c[i] = tack.cross(a[i], b[i])
            n[i] = tack.length(a[i])

    rng = np.random.default_rng(4)
    a = rng.standard_normal((500, 3)).astype(np.float32)
    b = rng.standard_normal((500, 3)).astype(np.float32)
    d = on_device(np.zeros(500, np.float32))
    c = on_device(np.zeros((500, 3), np.float32), tack.vec3)
    n = on_device(np.zeros(500, np.float32))
    geometry(on_device(a, tack.vec3), on_device(b, tack.vec3), d, c, n)
    close(d.numpy(), np.einsum("ij,ij->i", a, b), rtol=1e-5, atol=1e-5, what="dot")
    close(c.numpy(), np.cross(a, b), rtol=1e-5, atol=1e-5, what="cross")
    return close(n.numpy(), np.linalg.norm(a, axis=1), rtol=1e-6, what="length")


@check("language")
def out_of_bounds_raises_index_error():
    @tack.kernel
    def shift(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i + 1]

    out = on_device(np.zeros(8, np.float32))
    try:
        shift(on_device(np.ones(8, np.float32)), out)
        tack.synchronize(DEVICE)  # on a GPU the error comes at the next synchronization
    except IndexError as e:
        return f"IndexError: {str(e).splitlines()[0]}"
    raise AssertionError("reading x[8] of an 8-element array did not raise IndexError")


@check("language")
def integer_division_by_zero_raises():
    @tack.kernel
    def div(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] // b[i]

    out = on_device(np.zeros(3, np.int64))
    try:
        div(on_device(np.array([1, 2, 3])), on_device(np.array([1, 0, 1])), out)
        tack.synchronize(DEVICE)
    except ZeroDivisionError as e:
        return f"ZeroDivisionError: {str(e).splitlines()[0]}"
    raise AssertionError("integer division by zero did not raise ZeroDivisionError")


# ------------------------------------------------------ arrays and interop

@check("interop", needs_kernels=False)
def array_copies_in_and_out():
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = on_device(host)
    host[:] = -1
    equal(data.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4), "after changing the source")
    tack.copyto(data, host)
    out = np.asarray(data)
    out[0, 0] = 99  # a copy: the Tack array keeps its values
    return equal(data.numpy(), host, "after copyto")


@check("interop", needs_kernels=False)
def dtypes_round_trip():
    for np_type in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                    np.uint64, np.float32, np.float64, np.bool_):
        values = (np.arange(-3, 5) % 2 == 0) if np_type is np.bool_ else \
            np.array([0, 1, 2, 100, np.iinfo(np_type).max if np.issubdtype(np_type, np.integer)
                      else 1.5], dtype=np_type)
        equal(on_device(values).numpy(), values, np.dtype(np_type).name)
    return "11 dtypes exact"


@check("interop", needs_kernels=False)
def numpy_from_dlpack_shares_cpu_storage():
    if not hasattr(tack.Array, "__dlpack__"):
        raise AssertionError("tack.Array has no __dlpack__ in this build")
    data = tack.array(np.arange(8, dtype=np.float32))
    if data.__dlpack_device__()[0] != 1:  # kDLCPU: the CPU's, or OpenCL's shared virtual memory
        raise Skip("NumPy reads host memory only; a GPU array is not a NumPy pointer")
    shared = np.from_dlpack(data)
    shared[3] = 42.0
    equal(data.numpy()[3:4], np.array([42.0], np.float32), "a NumPy write seen by Tack")
    assert shared.ctypes.data == data.ptr, "different addresses"
    return "same address"


@check("interop", needs_kernels=False)
def from_dlpack_imports_numpy():
    if DEVICE != "cpu":
        raise Skip("the NumPy producer is on the host")
    if not hasattr(tack, "from_dlpack"):
        raise AssertionError("tack.from_dlpack is missing from this build")
    host = np.arange(6, dtype=np.float64)
    view = tack.from_dlpack(host)
    assert view.ptr == host.ctypes.data, "tack.from_dlpack copied a CPU NumPy array"
    host[0] = 5.0
    return equal(view.numpy(), host, "a NumPy write seen by Tack")


@check("interop")
def kernel_writes_through_array_from_ptr():
    if DEVICE != "cpu":
        raise Skip("wraps a NumPy (host) array")
    if not hasattr(tack, "array_from_ptr"):
        raise AssertionError("tack.array_from_ptr is missing from this build")
    host = np.zeros(8, dtype=np.float32)
    view = tack.array_from_ptr(host, (8,), tack.f32, writable=True)

    @tack.kernel
    def fill_indices(out):
        for i in range(out.shape[0]):
            out[i] = float(i)

    fill_indices(view)
    return equal(host, np.arange(8, dtype=np.float32), "the NumPy array")


@check("interop")
def kernel_takes_numpy_arrays_on_cpu():
    if DEVICE != "cpu":
        raise Skip("NumPy arrays are borrowed on CPU only")

    @tack.kernel
    def double(x):
        for i in range(x.shape[0]):
            x[i] = x[i] * 2

    host = np.arange(5, dtype=np.int32)
    double(host)
    return equal(host, np.arange(5, dtype=np.int32) * 2)


# ------------------------------------------------------ VTK

def _vtk():
    try:
        from tack.interop import vtk as tv
    except ImportError as e:
        raise AssertionError(f"{e} (run `uv sync --extra interop`)") from None
    return tv


@check("vtk", needs_kernels=False)
def vtk_arrays_share_both_ways():
    tv = _vtk()
    from vtkmodules.vtkCommonCore import vtkDoubleArray

    if DEVICE != "cpu":
        raise Skip("VTK arrays are host memory; on a GPU the exchange copies (see vtk_image_kernel)")
    va = vtkDoubleArray(number_of_components=3, number_of_tuples=4)
    va.Fill(1.0)
    t = tv.vtk_to_array(va)
    assert t.shape == (4, 3) and t.dtype == tack.f64, f"got {t.shape} {t.dtype}"
    assert t.ptr == np.asarray(va).ctypes.data, "vtk_to_array copied"
    va.SetValue(5, 7.0)
    equal(t.numpy()[1, 2:3], np.array([7.0]), "a VTK write seen by Tack")
    back = tv.array_to_vtk(t, name="back")
    assert np.asarray(back).ctypes.data == t.ptr, "array_to_vtk copied"
    tack.copyto(t, np.full((4, 3), 3.0))
    return equal(np.asarray(back).reshape(4, 3), np.full((4, 3), 3.0), "a Tack write seen by VTK")


@check("vtk", needs_kernels=False)
def vtk_every_numeric_type():
    tv = _vtk()
    from vtkmodules import vtkCommonCore as cc

    names = ["vtkCharArray", "vtkSignedCharArray", "vtkUnsignedCharArray", "vtkShortArray",
             "vtkUnsignedShortArray", "vtkIntArray", "vtkUnsignedIntArray", "vtkLongArray",
             "vtkUnsignedLongArray", "vtkLongLongArray", "vtkUnsignedLongLongArray",
             "vtkFloatArray", "vtkDoubleArray", "vtkIdTypeArray"]
    for name in names:
        va = getattr(cc, name)(number_of_components=2, number_of_tuples=3)
        for k in range(6):
            va.SetComponent(k // 2, k % 2, float(k + 1))
        t = tv.vtk_to_array(va, copy=DEVICE != "cpu")
        want = np.arange(1, 7).reshape(3, 2)
        equal(t.numpy().astype(np.int64), want, name)
        if t.dtype.itemsize != va.GetDataTypeSize():
            raise AssertionError(f"{name}: {t.dtype} for {va.GetDataTypeSize()}-byte values")
    return f"{len(names)} types"


@check("vtk", needs_kernels=False)
def vtk_dataset_round_trip():
    tv = _vtk()
    from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkImageData

    image = vtkImageData(dimensions=(4, 3, 2), spacing=(0.5, 1.0, 2.0), origin=(1.0, -1.0, 0.0))
    values = numpy_to_vtk(np.arange(24, dtype=np.float32), deep=1)
    values.SetName("v")
    image.point_data.SetScalars(values)
    ds = tv.vtk_to_dataset(image)
    back = tv.dataset_to_vtk(ds)
    assert back.GetDimensions() == (4, 3, 2) and back.GetSpacing() == (0.5, 1.0, 2.0), "structure"
    assert back.GetOrigin() == (1.0, -1.0, 0.0), "origin"
    return equal(vtk_to_numpy(back.GetPointData().GetArray("v")), np.arange(24, dtype=np.float32))


@check("vtk")
def vtk_image_kernel():
    tv = _vtk()
    from vtkmodules.vtkCommonCore import vtkFloatArray
    from vtkmodules.vtkCommonDataModel import vtkImageData

    @tack.kernel
    def radius_squared(values, nx, ny):
        for i in range(values.shape[0]):
            x = float(i % nx) - float(nx - 1) * 0.5
            y = float((i // nx) % ny) - float(ny - 1) * 0.5
            z = float(i // (nx * ny)) - 2.0
            values[i] = x * x + y * y + z * z

    image = vtkImageData(dimensions=(9, 7, 5))
    scalars = vtkFloatArray(number_of_tuples=image.number_of_points)
    scalars.Fill(0.0)
    image.point_data.SetScalars(scalars)
    if DEVICE == "cpu":
        values = tv.vtk_to_array(scalars)  # shared
        radius_squared(values, 9, 7)
        result = tv.array_to_vtk(values, name="radius_squared")
    else:  # a GPU exchange copies both ways with the PyPI wheel
        values = tack.array(tv.vtk_to_array(scalars, copy=True), device=DEVICE)
        radius_squared(values, 9, 7)
        result = tv.array_to_vtk(values, name="radius_squared", copy=True)
    z, y, x = np.mgrid[:5, :7, :9]
    want = ((x - 4) ** 2 + (y - 3) ** 2 + (z - 2) ** 2).ravel().astype(np.float32)
    if DEVICE == "cpu":
        equal(np.asarray(scalars), want, "VTK's original array")
    return equal(np.asarray(result), want, "the exported array")


# ------------------------------------------------------ driver

def kernels_available():
    """None if kernels compile on this device, else the reason they do not."""
    if not hasattr(tack, "kernel"):
        return "this build of Tack has no @tack.kernel"

    @tack.kernel
    def probe(x):
        for i in range(x.shape[0]):
            x[i] = 1

    try:
        probe(on_device(np.zeros(1, np.int32)))
    except (NotImplementedError, RuntimeError) as e:
        return str(e).splitlines()[0]
    return None


def watchdog(seconds):
    try:
        faulthandler.dump_traceback_later(seconds, exit=True, file=sys.__stderr__)
    except (AttributeError, ValueError, OSError):  # no real stderr (embedded, captured)
        pass


def available(arch):
    names = [str(d) for d in tack.devices()]
    return any(n == arch or n.startswith(arch + ":") for n in names), names


def metal_compile_side(args, names):
    """--arch metal without a Metal device: every check on the CPU, each
    kernel it calls emitted as MSL and type-checked where the checker is."""
    import pathlib

    global DEVICE
    root = pathlib.Path(__file__).resolve().parents[2]
    checker = None
    if (root / "tests/msl/metal_stdlib").exists() and (root / "tests/python/_msl.py").exists():
        sys.path.insert(0, str(root / "tests/python"))
        import _msl

        checker = _msl if _msl.clang() else None
    print(f"Tack {tack.__version__}: no Metal device here (tack.devices() lists {', '.join(names) or 'nothing'}); "
          f"checking the compile side: kernels run on the CPU and are emitted as MSL"
          + (", type-checked with clang++ against tests/msl" if checker else
             " (no clang++ or tests/msl here: emitted, not type-checked)"))
    DEVICE = "cpu"
    tack.set_default_device("cpu")
    original = tack.kernel
    seen = {}

    def capturing(fn=None, **options):
        if fn is None:
            return lambda f: capturing(f, **options)
        k = original(fn, **options)

        def call(*a, **kw):
            try:
                return k(*a, **kw)
            finally:
                try:
                    seen[fn.__name__] = ("emitted", k.generated_source(*a, target="metal", **kw))
                except (tack.CompileError, NotImplementedError) as e:
                    if "Metal" not in str(e):
                        raise
                    seen[fn.__name__] = ("refused", str(e).splitlines()[0])

        return call

    emitted = refused = bad = 0
    tack.kernel = capturing
    try:
        for group, name, fn, needs_kernels in check.items:
            if group == "vtk" or (args.k and args.k not in name) or not needs_kernels:
                continue
            seen.clear()
            print(f"{group + '/' + name:<52}", end="", flush=True)
            try:
                fn()
            except Exception:  # noqa: BLE001 -- the CPU result is not what is checked here
                pass
            notes, bad_before = [], bad
            for kname, (how, what) in seen.items():
                if how == "refused":
                    refused += 1
                    notes.append(f"{kname} refused: {what}")
                    continue
                emitted += 1
                problems = checker.check(what) if checker else None
                if problems:
                    bad += 1
                    notes.append(f"{kname}: {problems.splitlines()[0]}")
            status = "FAIL" if bad > bad_before else "MSL " if seen else "SKIP"
            print(f"{status}  {len(seen)} kernel(s)" + (f"; {'; '.join(notes)}"[:300] if notes else ""))
    finally:
        tack.kernel = original
    print(f"MSL: {emitted} kernel(s) emitted{' and type-checked' if checker else ''}, {bad} failed the check, "
          f"{refused} refused by the dialect.  Nothing ran on Metal: that needs a Mac.")
    return 1 if bad else 2


def main(argv=None):
    global DEVICE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=ARCHES, default="cpu", help="backend to check (default cpu)")
    parser.add_argument("--vtk", action="store_true", help="also check the VTK exchange")
    parser.add_argument("-k", metavar="TEXT", help="run only the checks whose name contains TEXT")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="give up (exit 1) when one check runs longer than this (default 120)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failures")
    args = parser.parse_args(argv)

    ok, names = available(args.arch)
    if not ok and args.arch == "metal":
        return metal_compile_side(args, names)
    if not ok:
        print(f"validate: the {args.arch} backend is not available on this machine "
              f"(tack.devices() lists {', '.join(names) or 'nothing'}); nothing was checked.")
        return 2
    DEVICE = args.arch
    tack.set_default_device(DEVICE)
    print(f"Tack {tack.__version__} on {DEVICE}" + (" with VTK checks" if args.vtk else ""))
    no_kernels = kernels_available()

    passed = failed = skipped = 0
    for group, name, fn, needs_kernels in check.items:
        if group == "vtk" and not args.vtk:
            continue
        if args.k and args.k not in name:
            continue
        label = f"{group}/{name}"
        print(f"{label:<52}", end="", flush=True)
        # A kernel that never returns cannot be interrupted from Python; after
        # --timeout seconds faulthandler prints where it hung and exits (1).
        watchdog(args.timeout)
        try:
            if needs_kernels and no_kernels:
                raise AssertionError(f"kernels do not run: {no_kernels}")
            detail = fn() or ""
        except Skip as e:
            skipped += 1
            print(f"SKIP  {e}")
        except Exception as e:  # a wrong value or an error: both are failures
            failed += 1
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"FAIL  {type(e).__name__}: {first}")
            if args.verbose:
                traceback.print_exc()
        else:
            passed += 1
            print("PASS" + (f"  ({detail})" if detail else ""))
        finally:
            faulthandler.cancel_dump_traceback_later()
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
