"""The CUDA backend from Python.

Without a GPU (here and in CI): the CUDA source Tack generates for the
language test suite compiles to PTX for sm_80 and sm_90 through libtack's own
NVRTC path; a machine without a GPU lists only the CPU and says clearly that
"cuda" is not available.  With a GPU (``make test-gpu``): the language
constructs give the CPU's results on ``cuda``, copies work both ways, failed
checks are reported at the next synchronization point naming kernel and
line, and PyTorch / CuPy CUDA tensors are exchanged through DLPack without
copies (each when installed).
"""

import math
import pathlib
import re
import sys

import numpy as np
import pytest

import tack
from tack import _core

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _cuda_emulate  # noqa: E402
import _kernel_wrap  # noqa: E402
import _suite  # noqa: E402
import _nvrtc_ctypes  # noqa: E402

CUDA = [d for d in tack.devices() if d.startswith("cuda")]
gpu = pytest.mark.skipif(not CUDA, reason="no CUDA device on this machine")
no_gpu = pytest.mark.skipif(bool(CUDA), reason="this machine has a CUDA device")


def nvrtc_available():
    if hasattr(_core, "_nvrtc_version"):
        return _core._nvrtc_version() > 0
    return _nvrtc_ctypes.available()


needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (libnvrtc) is not installed")
needs_cxx = pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")


def nvrtc(src, arch):
    if hasattr(_core, "_nvrtc_compile"):
        return _core._nvrtc_compile(src, arch)
    return _nvrtc_ctypes.compile_ptx(src, arch)


def layout(src):
    return re.search(r"tack-cuda: phases=([ps]*)", src).group(1)


# ------------------------------------------------------------------ kernels
@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def outer(a, b, m, sums):
    for i, j in tack.ndrange(a.shape[0], b.shape[0]):
        m[i, j] = a[i] * b[j]
    for r in range(m.shape[0]):
        acc = 0
        for c in range(m.shape[1]):
            acc += m[r, c]
        sums[r] = acc


@tack.kernel
def divmod_k(a, b, q, r):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@tack.kernel
def histogram(values, bins, ext):
    for i in range(values.shape[0]):
        bins[values[i] % bins.shape[0]] += 1
        tack.atomic_min(ext, 0, values[i])
        tack.atomic_max(ext, 1, values[i])


@tack.kernel
def total(x, s):
    for i in range(x.shape[0]):
        s[0] += x[i]


@tack.kernel
def two_phases(x, out):
    n = x.shape[0]
    for i in range(n):
        out[i] = x[i] * x[i]
    middle = out[n // 2]
    for i in range(n):
        out[i] = out[i] - middle


@tack.func
def lerp(a, b, t):
    return a + (b - a) * t


@tack.kernel
def apply_lerp(x, out):
    for i in range(x.shape[0]):
        out[i] = lerp(0.0, 10.0, x[i])


@tack.kernel
def normals(a, b, out, lengths):
    for i in range(a.shape[0]):
        n = tack.cross(a[i], b[i])
        lengths[i] = tack.length(n)
        out[i] = tack.normalize(n)


@tack.kernel
def maths(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = tack.sqrt(abs(v)) + tack.exp(-v * v) + tack.sin(v) * tack.cos(v) + tack.atan2(v, 2.0) + tack.floor(v)


@tack.kernel
def shifted(a, k):
    for i in range(a.shape[0]):
        a[i + k] = 1.0


@tack.kernel
def scale(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] * s


@tack.kernel
def checked_div(a, b):
    for i in range(a.shape[0]):
        a[i] = a[i] // b[i]


@tack.kernel
def maybe(x, out):
    # t is unassigned in an iteration that does not assign it, even when the same
    # GPU thread ran an iteration that did (a grid-stride loop): the read raises
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        out[i] = t


@tack.kernel
def early(x, out, flag):
    for i in range(x.shape[0]):
        out[i] = x[i]
    if flag[0] > 0:
        return
    for i in range(x.shape[0]):
        out[i] = -1.0


@tack.func
def divmod_f(a, b):
    return a // b, a % b


@tack.func
def ordered(a, b):
    if a < b:
        return a, b
    return b, a


@tack.kernel
def tuples(a, q, r, lo_hi):
    lo, hi = ordered(a[0], a[1])  # outside the parallel loop too
    lo_hi[0] = lo
    lo_hi[1] = hi
    for i in range(a.shape[0]):
        q[i], r[i] = divmod_f(a[i], 3)


@tack.kernel
def stencil_bounds(a, out):
    n, m = a.shape
    for i, j in tack.ndrange((1, n - 1), range(m - 2, 0, -1)):
        out[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - 4 * a[i, j]


@tack.kernel
def strided_shape(a, lo, step):
    for i in tack.ndrange(range(lo, a.shape[0], step)):
        a[i] = a[i] + 1.0
    for i in tack.ndrange(*a.shape):
        a[i] = a[i] * 2.0


@tack.kernel
def local_taps(x, out, s):
    # a local array made in serial code travels to the loop's phase in the frame;
    # one made in the loop is the iteration's own (lower_local.c)
    w = np.full(3, s)
    w[1] = 2 * s
    for i in range(out.shape[0]):
        t = np.zeros(3)
        for k in range(3):
            t[k] = w[k] * x[i + k]
        out[i] = t[0] + t[1] + t[-1]


def language_cases():
    rng = np.random.default_rng(7)
    f32 = rng.standard_normal(1000).astype(np.float32)
    yield "saxpy", saxpy, lambda: (2.5, f32.copy(), np.ones(1000, np.float32)), (2,)
    yield "outer", outer, lambda: (np.arange(37.0), np.arange(1.0, 54.0), np.zeros((37, 53)), np.zeros(37)), (2, 3)
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64):
        a = rng.integers(-100 if np.issubdtype(dt, np.signedinteger) else 0, 100, 500).astype(dt)
        b = rng.integers(1, 9, 500).astype(dt)
        yield f"divmod_{np.dtype(dt).name}", divmod_k, (lambda a=a, b=b: (a.copy(), b.copy(), np.zeros_like(a), np.zeros_like(a))), (2, 3)
    for dt in (np.int64, np.int32, np.int8, np.uint16):
        v = rng.integers(0, 100, 20000).astype(dt)
        yield f"histogram_{np.dtype(dt).name}", histogram, (
            lambda v=v, dt=dt: (v.copy(), np.zeros(10, dt), np.array([100, 0], dt))), (1, 2)
    yield "total_f64", total, lambda: (np.ones(100000), np.zeros(1)), (1,)
    yield "total_i32", total, lambda: (np.ones(100000, np.int32), np.zeros(1, np.int32)), (1,)
    yield "two_phases", two_phases, lambda: (np.arange(5.0), np.zeros(5)), (1,)
    yield "apply_lerp", apply_lerp, lambda: (np.linspace(0, 1, 100), np.zeros(100)), (1,)
    va = rng.standard_normal((64, 3)).astype(np.float32)
    vb = rng.standard_normal((64, 3)).astype(np.float32)
    yield "normals", normals, lambda: (tack.array(va, tack.vec3), tack.array(vb, tack.vec3),
                                       tack.zeros(64, tack.vec3), np.zeros(64, np.float32)), (2, 3)
    yield "maths", maths, lambda: (f32.copy(), np.zeros(1000, np.float32)), (1,)
    ti = rng.integers(-50, 50, 300)
    yield "tuples", tuples, lambda: (ti.copy(), np.zeros_like(ti), np.zeros_like(ti), np.zeros(2, np.int64)), (1, 2, 3)
    yield "early_return", early, lambda: (np.arange(6.0), np.zeros(6), np.array([1], np.int32)), (1,)
    yield "no_return", early, lambda: (np.arange(6.0), np.zeros(6), np.array([0], np.int32)), (1,)
    grid = rng.standard_normal((19, 23))
    yield "stencil_bounds", stencil_bounds, lambda: (grid.copy(), np.zeros((19, 23))), (1,)
    yield "strided_shape", strided_shape, lambda: (np.arange(40.0), 3, 7), (0,)
    yield "local_arrays", local_taps, lambda: (np.arange(40.0), np.zeros(38), 0.5), (1,)
    yield "locals_private", maybe, lambda: (np.array([1.0, 1.5, 2.0, 3.0, 4.0, 5.0] * 50), np.full(300, 9.0)), (1,)


# ------------------------------------------------------- without a GPU too
@no_gpu
def test_without_a_gpu_only_the_cpu_is_listed():
    # an OpenCL driver for the CPU (PoCL) adds "opencl:0"; it is no GPU
    assert [d for d in tack.devices() if not d.startswith("opencl")] == ["cpu"]


@no_gpu
def test_without_a_gpu_cuda_is_a_clear_error():
    for name in ("cuda", "cuda:0", "cuda:1"):
        with pytest.raises(RuntimeError, match="not available"):
            tack.zeros(4, device=name)
    with pytest.raises(RuntimeError, match="not available"):
        tack.array(np.arange(3.0), device="cuda")


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_generated_cuda_source_compiles(arch):
    x = np.zeros(8, np.float32)
    src = saxpy.generated_source(2.0, x, x, target="cuda")
    assert 'extern "C" __global__' in src and "tk_phase0" in src
    assert layout(src) == "p"  # the hoisted checks run in every thread: one launch
    ptx = nvrtc(src, arch)
    assert f".target {arch}" in ptx and ".entry tk_phase0" in ptx
    for name, k, make, _ in language_cases():
        src = k.generated_source(*make(), target="cuda")
        assert ".entry tk_phase0" in nvrtc(src, arch), name


def test_generated_cuda_layout():
    src = two_phases.generated_source(np.zeros(4), np.zeros(4), target="cuda")
    # out[n // 2] reads an array the kernel writes: that statement runs as one thread
    assert layout(src) == "psp"
    assert "FB->f[" in src


@needs_nvrtc
def test_nvrtc_helper_reports_errors():
    with pytest.raises(RuntimeError, match="undefined"):
        _core._nvrtc_compile("__global__ void k() { undefined_name = 1; }", "sm_80")
    with pytest.raises(ValueError, match="arch"):
        _core._nvrtc_compile("", "gfx90a")
    assert ".target sm_90" in _core._nvrtc_compile('extern "C" __global__ void k() {}', 90)


@needs_nvrtc
def test_fast_math_kernels_compile_with_fast_math():
    """@tack.kernel(fast_math=True) on CUDA: NVRTC's --use_fast_math (approximate sqrt)."""
    if not hasattr(_core, "_nvrtc_compile"):
        pytest.skip("tack._core has no _nvrtc_compile")

    @tack.kernel(fast_math=True)
    def roots(x, out):
        for i in range(x.shape[0]):
            out[i] = math.sqrt(x[i]) / 3.0

    x = np.ones(4, np.float32)
    src = roots.generated_source(x, x, target="cuda")
    assert "sqrt.approx.ftz.f32" in _core._nvrtc_compile(src, "sm_80", fast_math=True)
    assert "sqrt.rn.f32" in _core._nvrtc_compile(src, "sm_80")


@needs_nvrtc
def test_a_bad_kernel_in_a_batch_is_named_with_nvrtc_message(monkeypatch):
    """The language suite's CUDA sources are compiled 24 to a program
    (_gpu_batch.compile_all); a program with one bad source fails whole, its
    members are compiled alone, and the failure names the bad kernel with
    NVRTC's message for its own source."""
    import _gpu_batch
    import _tool_cache

    monkeypatch.setattr(_tool_cache, "_DIR", None)  # nothing kept: the batch is compiled every time
    x = np.ones(8, np.float32)
    good = saxpy.generated_source(2.0, x, x.copy(), target="cuda")
    bad = good.replace("tk_phase0(", "tk_phase0(undeclared_type q, ", 1)
    jobs = [("cuda", name, "sm_90", src) for name, src in (("saxpy", good), ("the_bad_one", bad), ("again", good))]
    results, stats = _gpu_batch.compile_all(jobs, lambda fn, jobs, chunksize: [fn(j) for j in jobs])
    assert stats == {"cuda": {"batches": 1, "batches_failed": 1}}
    assert results[0] is None and results[2] is None
    assert results[1]["kernel"] == "the_bad_one" and "undeclared_type" in results[1]["error"], results[1]
    assert "tkb" not in results[1]["error"]  # the message of its own source, not of the batch


@needs_nvrtc
def test_language_suite_compiles_for_cuda(tmp_path, record_property):
    """Every kernel the language tests call, with the arguments they call it
    with, generates CUDA source that NVRTC compiles for sm_90 (and sm_80 under
    make test-all: _suite.ARCHS).  Under make test, the calls whose CUDA source
    is in NVRTC's quarter (_suite.share; hiprtc compiles another)."""
    summary = _suite.gpu_capture("cuda")
    failures = summary["failures"]
    assert not failures, "\n\n".join(f"{f['kernel']} ({f['arch']}):\n{f['error']}" for f in failures[:3])
    record_property("language_suite", f"CUDA (NVRTC): {len(summary['kernels'])} kernels, {summary['compiled']} "
                    f"compiles ({', '.join(_suite.ARCHS['cuda'])})" +
                    (f"; {summary['other_half']} calls left to hiprtc's share" if summary.get("other_half") else ""))
    assert len(summary["kernels"]) >= 50
    assert summary["compiled"] == len(_suite.ARCHS["cuda"]) * len(summary["kernels"])


def _compare(name, got, want, outputs):
    for i in outputs:
        if name in ("maths", "total_f64", "normals"):
            np.testing.assert_allclose(got[i], want[i], rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(got[i], want[i], err_msg=name)


@needs_cxx
@pytest.mark.parametrize("case", list(language_cases()), ids=[c[0] for c in language_cases()])
def test_cuda_source_emulated_on_the_cpu_matches(case):
    """The generated CUDA source, run thread after thread on the CPU, gives the
    CPU backend's results, for several grid shapes (grid-stride loops).  Under
    make test the cases whose CUDA source is in one half of the sources, chosen
    by its digest (_suite.HALVES["cuda_emulated"]: the same ones every run; each
    emulation is a C++ build); make test-all emulates every case."""
    name, k, make, outputs = case
    if not _suite.TEST_ALL and not _suite.in_half(k.generated_source(*make(), target="cuda"),
                                                  _suite.HALVES["cuda_emulated"]):
        pytest.skip("the other half of the CUDA sources by digest: make test-all emulates it")
    want = _run(k, make, "cpu")
    for grid, block in ((3, 32), (1, 1), (5, 7)):
        args = make()
        src = k.generated_source(*args, target="cuda")
        em = [(a.numpy().copy(), a.shape) if isinstance(a, _core.Array) else a for a in args]
        assert _cuda_emulate.run(src, em, grid, block)[0] == 0, name
        got = [a[0] if isinstance(a, tuple) else a for a in em]
        _compare(name, got, want, outputs)


def test_make_test_emulates_a_half_of_the_cases():
    """The half make test emulates (above) is a half, not a sliver, and holds a case of each family."""
    taken = [name for name, k, make, _ in language_cases()
             if _suite.in_half(k.generated_source(*make(), target="cuda"), _suite.HALVES["cuda_emulated"])]
    assert 0.3 < len(taken) / len(list(language_cases())) < 0.7, taken
    assert any(n.startswith("divmod_") for n in taken) and any(n.startswith("histogram_") for n in taken), taken


@needs_cxx
def test_cuda_source_emulated_records_the_first_failure():
    a = np.zeros(4, np.float32)
    src = shifted.generated_source(a, 1, target="cuda")
    failed, site, prog, index, extent = _cuda_emulate.run(src, [a, 1])
    assert (failed, prog, index, extent) == (1, 7, 4, 4)
    b, z = np.array([4, 5], np.int64), np.array([2, 0], np.int64)
    src = checked_div.generated_source(b, z, target="cuda")
    assert _cuda_emulate.run(src, [b, z])[0] == 1
    assert _cuda_emulate.run(shifted.generated_source(a, -4, target="cuda"), [a, -4])[0] == 0
    # one thread runs every iteration (a grid-stride loop): the second does not assign t, which the
    # first did; the read fails there (src/compiler/lower/unbound.c), not reading the first's value
    x, out = np.array([1.0, -1.0, 2.0]), np.zeros(3)
    assert _cuda_emulate.run(maybe.generated_source(x, out, target="cuda"), [x, out], 1, 1)[0] == 1
    assert out[0] == 1.0 and out[1] == 0.0


# ------------------------------------------------------------- with a GPU
def _run(k, make, device):
    args = make()
    moved = [tack.array(a, a.dtype if isinstance(a, _core.Array) else None, device=device)
             if isinstance(a, (np.ndarray, _core.Array)) else a for a in args]
    k(*moved)
    tack.synchronize(device)
    return [m.numpy() if isinstance(m, _core.Array) else m for m in moved]


@gpu
@pytest.mark.parametrize("case", list(language_cases()), ids=[c[0] for c in language_cases()])
def test_language_on_cuda_matches_the_cpu(case):
    name, k, make, outputs = case
    want = _run(k, make, "cpu")
    got = _run(k, make, CUDA[0])
    _compare(name, got, want, outputs)


@gpu
def test_copies_between_host_and_device():
    for dt in (np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_):
        host = (np.arange(1000) % 7).astype(dt)
        d = tack.array(host, device=CUDA[0])
        assert d.device == CUDA[0]
        np.testing.assert_array_equal(d.numpy(), host)
        np.testing.assert_array_equal(np.asarray(d), host)
        back = tack.array(d, device="cpu")
        np.testing.assert_array_equal(back.numpy(), host)
        d2 = tack.zeros(1000, d.dtype, device=CUDA[0])
        tack.copyto(d2, d)  # device to device
        np.testing.assert_array_equal(d2.numpy(), host)
        tack.copyto(d2, np.zeros(1000, dt))
        assert not d2.numpy().any()
    f = tack.full(100, 3.5, tack.f64, device=CUDA[0])
    np.testing.assert_array_equal(f.numpy(), np.full(100, 3.5))


@gpu
def test_a_failed_check_is_reported_at_the_next_synchronization():
    a = tack.zeros(4, tack.f32, device=CUDA[0])
    shifted(a, 1)  # queued: returns before the check fails on the GPU
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 0 with size 4.*kernel shifted"):
        tack.synchronize(CUDA[0])
    tack.synchronize(CUDA[0])  # reported once
    shifted(a, -4)
    tack.synchronize(CUDA[0])
    b = tack.array(np.array([4, 5], np.int64), device=CUDA[0])
    z = tack.array(np.array([2, 0], np.int64), device=CUDA[0])
    checked_div(b, z)
    with pytest.raises(ZeroDivisionError, match="checked_div"):
        b.numpy()  # a copy to the host is a synchronization point
    np.testing.assert_array_equal(tack.array(np.array([7], np.int64), device=CUDA[0]).numpy(), [7])


@gpu
def test_launches_are_queued_and_ordered():
    x = tack.array(np.ones(1 << 20, np.float32), device=CUDA[0])
    for _ in range(10):
        scale(x, 2.0)
    np.testing.assert_array_equal(x.numpy(), np.full(1 << 20, 1024.0, np.float32))


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA")
    return torch


@gpu
def test_torch_cuda_tensors_both_ways_without_copies():
    torch = _torch_cuda()
    t = torch.arange(1024, dtype=torch.float32, device="cuda")
    a = tack.from_dlpack(t)
    assert a.device.startswith("cuda") and a.ptr == t.data_ptr() and a.shared
    scale(a, 2.0)  # shared: complete when the call returns
    assert torch.equal(t, torch.arange(1024, dtype=torch.float32, device="cuda") * 2)
    b = tack.zeros(256, tack.f32, device=CUDA[0])
    scale(b, 1.0)
    tb = torch.from_dlpack(b)
    assert tb.data_ptr() == b.ptr and tb.device.type == "cuda"
    tb += 5
    torch.cuda.synchronize()
    np.testing.assert_array_equal(b.numpy(), np.full(256, 5.0, np.float32))
    scale(b, 2.0)  # b is shared now: the launch completes before the call returns
    assert torch.equal(tb, torch.full((256,), 10.0, device="cuda"))


@gpu
def test_cupy_arrays_both_ways_without_copies():
    cp = pytest.importorskip("cupy")
    x = cp.arange(512, dtype=cp.float64)
    a = tack.from_dlpack(x)
    assert a.ptr == x.data.ptr
    scale(a, 3.0)
    assert bool((x == cp.arange(512, dtype=cp.float64) * 3).all())
    b = tack.full(64, 2.0, tack.f64, device=CUDA[0])
    y = cp.from_dlpack(b)
    assert y.data.ptr == b.ptr
    assert float(y.sum()) == 128.0


@gpu
def test_to_moves_between_host_and_device():
    host = tack.array(np.arange(10, dtype=np.float32))
    d = host.to(CUDA[0])
    assert d.device == CUDA[0] and d.to(CUDA[0]) is d
    np.testing.assert_array_equal(d.to("cpu").numpy(), host.numpy())


@gpu
def test_array_from_ptr_checks_the_address_belongs_to_the_device():
    torch = _torch_cuda()
    t = torch.zeros(16, dtype=torch.float32, device="cuda")
    view = tack.array_from_ptr(t.data_ptr(), (16,), tack.f32, writable=True, device=CUDA[0])
    view.fill(2.0)
    torch.cuda.synchronize()
    assert float(t.sum()) == 32.0
    host = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="not memory the CUDA driver knows|host memory"):
        tack.array_from_ptr(host.ctypes.data, (16,), tack.f32, device=CUDA[0])
