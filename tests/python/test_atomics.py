"""Every atomic of the kernel language: tack.atomic_add, _sub, _min, _max,
_exch, _and, _or, _xor and _cas, each giving the element's old value.

  - on the CPU, many iterations hammer one cell of each dtype and the result
    is exact: the xor, or and and of 1..n, exchanges whose old values and
    the last value are 0..n once each, compare-and-swap loops counting to n;
  - each operation returns the old value and stores what it should, for
    integers and floats, with one- and two-dimensional indices;
  - exchange and compare-and-swap of a float go by its bits: -0.0 is not
    0.0, a NaN matches a NaN of the same bits and no other;
  - the same kernels in debug mode (jit=False), on the OpenCL device (PoCL
    here) and on a CUDA device where there is one give the same results;
  - what is refused says what and why: and/or/xor of floats, a float value
    for a bitwise update, exchange of a complex, 64-bit atomics on Metal;
  - none of them is a possible race (RaceWarning is an error here);
  - each dialect's source of a kernel using every operation on every dtype
    the dialect has compiles: NVRTC (sm_90; sm_80 too under make test-all),
    hiprtc (gfx90a; gfx1030 too), Intel's ocloc (pvc; dg2 for a kernel
    without 64-bit atomics, whose OpenCL source names no cl_khr_int64
    extension; unoptimized, optimized under make test-all) and clang++
    against our Metal header.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _msl  # noqa: E402
import _ocloc  # noqa: E402
import _suite  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error::tack.RaceWarning")

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]
OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
CUDA = [d for d in tack.devices() if d.startswith("cuda")]


# ------------------------------------------------------------------ kernels
def hammer(vals, bits, cell, olds, count):
    for i in range(vals.shape[0]):
        v = vals[i]
        tack.atomic_xor(bits, 0, v)
        tack.atomic_or(bits, 1, v)
        tack.atomic_and(bits, 2, v)
        olds[i] = tack.atomic_exch(cell, (0, 1), v)
        old = v * 0  # a guess, of the element's type: a failed swap gives the real value
        while True:
            got = tack.atomic_cas(count, (1, 0), old, old + 1)
            if got == old:
                break
            old = got


def hammer_float(vals, cell, olds, count):
    for i in range(vals.shape[0]):
        olds[i] = tack.atomic_exch(cell, 0, vals[i])
        old = vals[i] * 0
        while True:
            got = tack.atomic_cas(count, 0, old, old + 1)
            if got == old:
                break
            old = got


def each_int(a, v, olds):
    for i in range(1):
        olds[0] = tack.atomic_add(a, 0, v)
        olds[1] = tack.atomic_sub(a, 1, v)
        olds[2] = tack.atomic_min(a, 2, v)
        olds[3] = tack.atomic_max(a, 3, v)
        olds[4] = tack.atomic_exch(a, 4, v)
        olds[5] = tack.atomic_and(a, 5, v)
        olds[6] = tack.atomic_or(a, 6, v)
        olds[7] = tack.atomic_xor(a, 7, v)
        olds[8] = tack.atomic_cas(a, 8, 10, v)  # matches: stores v
        olds[9] = tack.atomic_cas(a, 9, 11, v)  # does not: leaves 10


def each_float(a, v, olds):
    for i in range(1):
        olds[0] = tack.atomic_add(a, 0, v)
        olds[1] = tack.atomic_sub(a, 1, v)
        olds[2] = tack.atomic_min(a, 2, v)
        olds[3] = tack.atomic_max(a, 3, v)
        olds[4] = tack.atomic_exch(a, 4, v)
        olds[5] = tack.atomic_cas(a, 5, 10.0, v)
        olds[6] = tack.atomic_cas(a, 6, 11.0, v)


def cas_each(a, expected, values, olds):
    for i in range(a.shape[0]):
        olds[i] = tack.atomic_cas(a, i, expected[i], values[i])


def xor_float(a, v):
    for i in range(a.shape[0]):
        tack.atomic_xor(a, 0, v)


def and_float_value(a, v):
    for i in range(a.shape[0]):
        tack.atomic_and(a, 0, v)


def exch_complex(a, v):
    for i in range(a.shape[0]):
        tack.atomic_exch(a, 0, v)


KERNELS = {f.__name__: f for f in (hammer, hammer_float, each_int, each_float, cas_each, xor_float,
                                       and_float_value, exch_complex)}
JIT = {name: tack.kernel(f) for name, f in KERNELS.items()}
DEBUG = {name: tack.kernel(f, jit=False) for name, f in KERNELS.items()}


def run(mode, name, *args):
    """Run kernel `name` on args (NumPy arrays, updated in place, and scalars) in `mode`:
    "cpu" (compiled), "debug" (jit=False), "opencl" or "cuda" (the first such device)."""
    if mode == "cpu":
        return JIT[name](*args)
    if mode == "debug":
        return DEBUG[name](*args)
    device = (OPENCL if mode == "opencl" else CUDA)[0]
    dev = [tack.array(a, device=device) if isinstance(a, np.ndarray) else a for a in args]
    JIT[name](*dev)
    for a, d in zip(args, dev):
        if isinstance(a, np.ndarray):
            a[...] = d.numpy()


MODES = ["cpu", "debug",
         pytest.param("opencl", marks=pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")),
         pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="no CUDA device on this machine"))]


def sampled_on_opencl(mode, dt):
    """Under make test the OpenCL runs of the per-dtype tests take one type of each width, signed
    and unsigned in turn (int8, uint16, int32, uint64: each a PoCL build of 1-5 s); make test-all
    every type."""
    if mode == "opencl" and not _suite.TEST_ALL and np.dtype(dt).name not in ("int8", "uint16", "int32", "uint64"):
        pytest.skip("this width's other signedness on OpenCL: make test-all")


def size(mode, dt):
    if mode == "debug":
        return 100
    return 100 if np.dtype(dt).itemsize == 1 else 20_000


# ------------------------------------------------------------ under contention
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INTS, ids=lambda d: np.dtype(d).name)
def test_many_iterations_on_one_cell_give_exact_results(mode, dt):
    sampled_on_opencl(mode, dt)
    n = size(mode, dt)
    vals = np.arange(1, n + 1).astype(dt)
    bits = np.array([0, 0, -1]).astype(dt)
    cell = np.zeros((1, 2), dt)
    olds = np.zeros(n, dt)
    count = np.zeros((2, 1), dt)
    run(mode, "hammer", vals, bits, cell, olds, count)
    assert bits.tolist() == [np.bitwise_xor.reduce(vals), np.bitwise_or.reduce(vals), np.bitwise_and.reduce(vals)]
    # every exchange handed back what one other left: the olds and the last value are 0..n once each
    assert sorted(olds.tolist() + [cell[0, 1]]) == list(range(n + 1))
    assert count[1, 0] == n and count[0, 0] == 0  # n compare-and-swap increments, none lost


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_float_exchange_and_compare_and_swap_under_contention(mode, dt):
    n = 100 if mode == "debug" else 20_000
    vals = np.arange(1, n + 1).astype(dt)
    cell = np.zeros(1, dt)
    olds = np.zeros(n, dt)
    count = np.zeros(1, dt)
    run(mode, "hammer_float", vals, cell, olds, count)
    assert sorted(olds.tolist() + [cell[0]]) == list(range(n + 1))
    assert count[0] == n


# ------------------------------------------------------------ old values
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INTS, ids=lambda d: np.dtype(d).name)
def test_each_integer_operation_returns_the_old_value(mode, dt):
    sampled_on_opencl(mode, dt)
    a = np.full(10, 10, dt)
    olds = np.zeros(10, dt)
    run(mode, "each_int", a, 3, olds)
    assert olds.tolist() == [10] * 10
    assert a.tolist() == [13, 7, 3, 10, 3, 10 & 3, 10 | 3, 10 ^ 3, 3, 10]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_each_float_operation_returns_the_old_value(mode, dt):
    a = np.full(7, 10, dt)
    olds = np.zeros(7, dt)
    run(mode, "each_float", a, 2.5, olds)
    assert olds.tolist() == [10.0] * 7
    assert a.tolist() == [12.5, 7.5, 2.5, 10.0, 2.5, 2.5, 10.0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt, bits", [(np.float32, np.uint32), (np.float64, np.uint64)], ids=["float32", "float64"])
def test_float_compare_and_swap_compares_bits(mode, dt, bits):
    quiet = np.array(np.nan, dt)
    other = np.array(quiet.view(bits) | 1, bits).view(dt)  # another NaN: different bits
    a = np.array([0.0, -0.0, -0.0, quiet, other, 1.5], dt)
    expected = np.array([-0.0, 0.0, -0.0, quiet, quiet, 1.5], dt)
    before = a.copy()
    olds = np.zeros_like(a)
    run(mode, "cas_each", a, expected, np.full(6, 9.0, dt), olds)
    assert (olds.view(bits) == before.view(bits)).all()  # the old values, bit for bit
    stored = a.view(bits) == np.full(6, 9.0, dt).view(bits)
    # -0.0 is not 0.0 (nor 0.0 -0.0); -0.0 is -0.0; a NaN matches its own bits only
    assert stored.tolist() == [False, False, True, True, False, True]
    assert (a.view(bits)[~stored] == before.view(bits)[~stored]).all()


def test_the_python_functions_outside_a_kernel():
    a = np.array([12, 5, 0.0, 1.0])
    i = np.array([12, 5, 7], np.int32)
    assert tack.atomic_xor(i, 0, 10) == 12 and tack.atomic_and(i, 1, 4) == 5 and tack.atomic_or(i, 2, 8) == 7
    assert i.tolist() == [6, 4, 15]
    assert tack.atomic_exch(a, 0, 3.0) == 12 and a[0] == 3.0
    assert tack.atomic_cas(a, 2, -0.0, 9.0) == 0.0 and a[2] == 0.0  # by the bits
    assert tack.atomic_cas(a, 3, 1.0, 9.0) == 1.0 and a[3] == 9.0
    for name in ("atomic_exch", "atomic_and", "atomic_or", "atomic_xor", "atomic_cas"):
        assert getattr(tack, name).__doc__.startswith(name + "(array, index, ")


# ------------------------------------------------------------ refusals
@pytest.mark.parametrize("k", [JIT, DEBUG], ids=["jit", "debug"])
def test_what_is_refused_says_why(k):
    with pytest.raises(tack.CompileError, match=r"tack\.atomic_xor\(\) on f32 array 'a': and, or and xor are "
                                                r"bitwise operations, for integer arrays only"):
        k["xor_float"](np.zeros(4, np.float32), 1)
    with pytest.raises(tack.CompileError, match=r"tack\.atomic_and\(\) of .*float.*: and, or and xor are bitwise "
                                                r"operations on integers"):
        k["and_float_value"](np.zeros(4, np.int32), 1.5)
    with pytest.raises(tack.CompileError, match=r"tack\.atomic_exch\(\) of complex64 elements: .*only an add or a "
                                                r"subtract"):
        k["exch_complex"](np.zeros(4, np.complex64), 1.0)


def test_metal_refuses_64_bit_ones_by_name():
    args = (np.zeros(10, np.int64), 3, np.zeros(10, np.int64))
    with pytest.raises(tack.CompileError, match=r"Metal has no 64-bit atomics: tack\.atomic_add on int64 array|"
                                                r"Metal has no 64-bit atomics: the update of int64 array 'a'"):
        JIT["each_int"].generated_source(*args, target="metal")
    with pytest.raises(tack.CompileError, match=r"Metal has no 64-bit atomics: tack\.atomic_xor on uint64 array "
                                                r"'bits' needs one; use an int32 or uint32 array"):
        JIT["hammer"].generated_source(np.ones(4, np.uint64), np.zeros(3, np.uint64), np.zeros((1, 2), np.int32),
                                       np.zeros(4, np.int32), np.zeros((2, 1), np.int32), target="metal")


# ------------------------------------------------------------ every dialect
@tack.func
def int_ops(a, v):
    tack.atomic_exch(a, 0, v)
    tack.atomic_and(a, 1, v)
    tack.atomic_or(a, 2, v)
    tack.atomic_xor(a, 3, v)
    tack.atomic_add(a, 4, v)
    tack.atomic_sub(a, 5, v)
    tack.atomic_min(a, 6, v)
    tack.atomic_max(a, 7, v)
    return tack.atomic_cas(a, 8, v, v + 1)


@tack.func
def float_ops(a, v):
    tack.atomic_exch(a, 0, v)
    tack.atomic_add(a, 1, v)
    tack.atomic_min(a, 2, v)
    return tack.atomic_cas(a, 3, v, v + 1)


@tack.kernel
def every64(vals, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, out):
    for i in range(vals.shape[0]):
        v = vals[i]
        out[i] = (int_ops(i8, v) + int_ops(i16, v) + int_ops(i32, v) + int_ops(i64, v) +
                  int_ops(u8, v) + int_ops(u16, v) + int_ops(u32, v) + int_ops(u64, v) +
                  float_ops(f32, v) + float_ops(f64, v))


@tack.kernel
def every32(vals, i8, i16, i32, u8, u16, u32, f32, iout, fout):
    for i in range(vals.shape[0]):
        v = vals[i]
        iout[i] = (int_ops(i8, v) + int_ops(i16, v) + int_ops(i32, v) + int_ops(u8, v) + int_ops(u16, v) +
                   int_ops(u32, v))
        fout[i] = float_ops(f32, v)


def every64_source(target):
    arrays = [np.zeros(9, dt) for dt in INTS] + [np.zeros(4, dt) for dt in FLOATS]
    return every64.generated_source(np.ones(4, np.int32), *arrays, np.zeros(4, np.float64), target=target)


def every32_source(target):
    arrays = [np.zeros(9, dt) for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)]
    return every32.generated_source(np.ones(4, np.int32), *arrays, np.zeros(4, np.float32), np.zeros(4, np.int32),
                                    np.zeros(4, np.float32), target=target)


def test_every_operation_runs_on_every_dtype_in_one_kernel():
    arrays = [np.zeros(9, dt) for dt in INTS] + [np.zeros(4, dt) for dt in FLOATS]
    every64(np.ones(1, np.int32), *arrays, np.zeros(1, np.float64))
    for a in arrays[:8]:
        assert a.tolist() == [1, 0, 1, 1, 1, int(np.array(-1).astype(a.dtype)), 0, 1, 0]
    for a in arrays[8:]:
        assert a.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_opencl_writes_64_bit_atomics_only_for_a_kernel_that_has_them():
    src32, src64 = every32_source("opencl"), every64_source("opencl")
    assert "tk_atomic_cas_uint32_t" in src32 and "tk_atomic_xor_int8_t" in src32
    assert "cl_khr_int64" not in src32 and "atom_" not in src32 and "tk_atomic_add_int64_t" not in src32
    assert "cl_khr_int64_base_atomics" in src64 and "cl_khr_int64_extended_atomics" in src64
    assert "TK_ATOMIC_NATIVE(int64_t, atom)" in src64
    # a kernel without atomics has neither
    assert "cl_khr_int64" not in JIT["xor_float"].generated_source(np.zeros(4, np.int32), 1, target="opencl")


NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
@pytest.mark.parametrize("arch", _suite.ARCHS["cuda"])  # sm_80 too under make test-all
def test_cuda_source_compiles_with_nvrtc(arch):
    assert _core._nvrtc_compile(every64_source("cuda"), arch)


_HIPRTC = ("import json, sys\n"
           "from tack import _core\n"
           "job = json.load(sys.stdin)\n"
           "for arch in job['archs']:\n"
           "    _core._hiprtc_compile(job['source'], arch)\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    job = json.dumps({"source": every64_source("hip"), "archs": list(_suite.ARCHS["hip"])})  # gfx1030: test-all
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=job, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


# ocloc's optimizer spends 11 s on every32's compare-and-swap loops and 20 s on every64's (45 s
# on a loaded machine); without it (-cl-opt-disable) each compiles to native code in under a
# second, which is what "ocloc accepts the source" needs.  The optimized builds: make test-all
# (_ocloc.OPTIONS, which every ocloc check uses).
_OCLOC_OPTIONS = _ocloc.OPTIONS


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
@pytest.mark.parametrize("device, source", [("pvc", every64_source), ("dg2", every32_source)])
def test_opencl_source_compiles_with_ocloc(device, source):
    rc, out = _ocloc.compile(source("opencl"), device, _OCLOC_OPTIONS)
    assert {n.rsplit(".", 1)[-1] for n in out} >= {"spv", "bin"}, sorted(out)  # native code made
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    src = every32_source("metal")
    assert "tk_atomic_cas_float" in src and "atomic_fetch_xor_explicit" in src
    problems = _msl.check(src)
    assert problems is None, problems


@pytest.mark.skipif(_msl.clang() is None or not _msl.has_float16(),
                    reason="the Metal emulation needs clang++ 15 or later (_msl_emulate.py)")
def test_metal_source_runs_emulated_as_the_cpu_runs():
    """The Metal helpers' arithmetic, run thread after thread on the CPU stand-in
    for Metal's library (_msl_emulate.py): every operation on every 32-bit and
    smaller dtype ends where the CPU's does (all values equal, so the order of
    the iterations cannot show; cell 8 holds the expected value once)."""
    import _msl_emulate

    def make():
        arrays = [np.zeros(9, dt) for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)]
        for a in arrays:
            a[8] = 1
        f32 = np.array([0, 0, 0, 1], np.float32)
        return (np.ones(12, np.int32), *arrays, f32, np.zeros(12, np.int32), np.zeros(12, np.float32))

    got, (failed, site) = _msl_emulate.run(every32, *make())
    assert failed == 0, site
    cpu = make()
    every32(*cpu)
    for g, w in zip(got[1:8], cpu[1:8]):
        assert g.tolist() == w.tolist()
    assert cpu[1].tolist() == [1, 0, 1, 0, 12, -12, 0, 1, 2]  # int8: xor of twelve 1s is 0


def test_cuda_source_runs_emulated_as_the_cpu_runs():
    """The CUDA helpers' arithmetic (every dtype: 8/16-bit ones on their word,
    floats by their bits), run thread after thread on the CPU (_cuda_emulate.py)."""
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")

    def make():
        arrays = [np.zeros(9, dt) for dt in INTS] + [np.array([0, 0, 0, 1], dt) for dt in FLOATS]
        for a in arrays[:8]:
            a[8] = 1
        return [np.ones(12, np.int32), *arrays, np.zeros(12, np.float64)]

    em = make()
    assert _cuda_emulate.run(every64.generated_source(*em, target="cuda"), em)[0] == 0
    cpu = make()
    every64(*cpu)
    for g, w in zip(em[1:11], cpu[1:11]):
        assert g.tolist() == w.tolist()
    assert cpu[1].tolist() == [1, 0, 1, 0, 12, -12, 0, 1, 2] and cpu[9].tolist() == [1.0, 12.0, 0.0, 2.0]


# -------------------------------------------------- sub-group pre-reduction
@tack.kernel
def sum_into(x, total):
    for i in range(x.shape[0]):
        total[0] += x[i]


@tack.kernel
def sum_gathered(x, idx, total):
    for i in range(idx.shape[0]):
        total[0] += x[idx[i]]  # idx's values are checked per iteration: a lane may leave early


_SUMS = [np.float32, np.float64, np.int32, np.int64]


def test_opencl_sums_into_one_cell_per_sub_group_where_every_lane_flushes():
    """A privatized sum (`total[0] += x[i]`) is summed across the sub-group and added by
    its first lane, one compare-and-swap loop a sub-group, when no lane can leave the
    loop early; with a check in the body each work-item adds its own, as before."""
    for dt in _SUMS:
        src = sum_into.generated_source(np.zeros(8, dt), np.zeros(1, dt), target="opencl")
        assert "sub_group_reduce_add(" in src and "get_sub_group_local_id() == 0" in src, dt
        assert "#else" in src  # the per-work-item flush for devices without sub-groups
    src = sum_gathered.generated_source(np.zeros(8, np.float32), np.zeros(8, np.int64), np.zeros(1, np.float32),
                                        target="opencl")
    assert "sub_group_reduce_add" not in src
    small = sum_into.generated_source(np.zeros(8, np.int16), np.zeros(1, np.int16), target="opencl")
    assert "sub_group_reduce_add" not in small  # no sub-group reduction of 16-bit integers in OpenCL C


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
@pytest.mark.parametrize("dt", _SUMS, ids=lambda d: np.dtype(d).name)
def test_opencl_sum_into_one_cell_is_exact(dt):
    x = np.arange(1, 100_001).astype(dt) % 7  # exact in every dtype, float32 included
    total = tack.array(np.zeros(1, dt), device=OPENCL[0])
    sum_into(tack.array(x, device=OPENCL[0]), total)
    assert total.numpy()[0] == x.sum(dtype=np.float64)


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_intel_compiles_the_sub_group_flush():
    """Intel's compiler has sub-groups, so it compiles the pre-reduction, not the fallback
    (the appended #error fires where the macros are missing)."""
    src = "\n".join(sum_into.generated_source(np.zeros(8, dt), np.zeros(1, dt), target="opencl") for dt in _SUMS[:1])
    src += "\n#if !defined(cl_khr_subgroups) && !defined(__opencl_c_subgroups)\n#error no sub-groups\n#endif\n"
    rc, out = _ocloc.compile(src, "pvc", _OCLOC_OPTIONS)
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}
