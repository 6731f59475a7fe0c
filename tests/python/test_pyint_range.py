"""An integer known only at run time meeting a narrower integer in arithmetic.

The loop variable, a shape, len() and arithmetic on them (and on Python int
arguments) are Python ints of the language: meeting an int8 value in `+`
they take int8, as a Python int does in NumPy 2, and NumPy 2 raises
OverflowError ("Python integer 300 out of bounds for int8") where the value
does not fit.  The kernel did the arithmetic in int8 anyway and wrapped
(`i + a8[0]` with i = 300 gave 45); now it checks the value and fails the
launch with NumPy's words, the kernel and the line (src/compiler/lower/
lower_pyint.c, lw_pyint_narrow), compiled and in debug mode alike, while
`checks=True`.  A comparison stays exact, a store and an explicit cast
convert as before.
"""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _msl  # noqa: E402
import _ocloc  # noqa: E402

MODES = pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
NARROW = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


def numpy_error(dt, v):
    """NumPy 2's own message for a Python int v meeting a dt value in +."""
    with pytest.raises(OverflowError) as e:
        np.add(np.zeros(1, dt), v)
    return str(e.value)


def add_args(a, m, k, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + (m + k)  # m + k: a Python int known at run time


def boundaries(dt):
    info = np.iinfo(dt)
    return [int(info.min), int(info.max)], [int(info.min) - 1, int(info.max) + 1]


@MODES
@pytest.mark.parametrize("dt", NARROW + [np.uint64], ids=lambda d: np.dtype(d).name)
def test_each_narrow_type_at_its_boundaries(dt, jit):
    k = tack.kernel(add_args, jit=jit)
    a = np.array([1, 0], dt)
    fits, out_of = boundaries(dt)
    if dt == np.uint64:
        fits, out_of = [0, 5], [-1]  # a run-time int is carried in int64: only its sign can fail
    for v in fits:
        out = np.zeros(2, dt)
        k(a, v, 0, out)
        with np.errstate(over="ignore"):
            assert out.tolist() == (a + np.array(v).astype(dt)).tolist(), (v, out)
    for v in out_of:
        want = numpy_error(dt, v)  # "Python integer 128 out of bounds for int8"
        with pytest.raises(OverflowError, match=re.escape(want)) as e:
            k(a, v, 0, np.zeros(2, dt))
        assert "kernel add_args" in str(e.value)  # and the line, in debug mode as compiled
        assert f"{Path(__file__).name}:{add_args.__code__.co_firstlineno + 2}" in str(e.value)


@MODES
def test_minus_one_meeting_uint8_and_int64_never_fails(jit):
    def shape_minus_one(a, x, out):
        for i in range(out.shape[0]):
            out[i] = a[i] + (x.shape[0] - 1)

    k = tack.kernel(shape_minus_one, jit=jit)
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.uint8, -1))):
        k(np.ones(2, np.uint8), np.zeros(0), np.zeros(2, np.uint8))
    out = np.zeros(2, np.uint8)
    k(np.ones(2, np.uint8), np.zeros(1), out)
    assert out.tolist() == [1, 1]
    out = np.zeros(2, np.int64)  # int64 holds every value of a run-time int: no check
    k(np.ones(2, np.int64), np.zeros(0), out)
    assert out.tolist() == [0, 0]


def loop_plus(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + i


@MODES
@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16], ids=lambda d: np.dtype(d).name)
def test_the_loop_variable(dt, jit):
    k = tack.kernel(loop_plus, jit=jit)
    hi = int(np.iinfo(dt).max)
    n = hi + 1  # i runs to hi: fits
    out = np.zeros(n, dt)
    k(np.zeros(n, dt), out)
    assert out[-1] == hi
    with pytest.raises(OverflowError, match=re.escape(numpy_error(dt, hi + 1))):
        k(np.zeros(n + 5, dt), np.zeros(n + 5, dt))  # the first value past hi is named


@MODES
def test_the_loop_variable_of_a_serial_loop_from_below(jit):
    def from_lo(a, lo, out):
        for t in range(1):
            for j in range(lo, 1):
                out[j - lo] = a[0] + j

    k = tack.kernel(from_lo, jit=jit)
    out = np.zeros(129, np.int8)
    k(np.zeros(1, np.int8), -128, out)
    assert out[0] == -128 and out[-1] == 0
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, -129))):
        k(np.zeros(1, np.int8), -129, np.zeros(130, np.int8))


@MODES
def test_the_loop_variable_plus_a_constant_and_times_two(jit):
    def shifted(a, out):
        for i in range(out.shape[0]):
            out[i] = a[i] + (i + 100) - (i * 2)

    k = tack.kernel(shifted, jit=jit)
    k(np.zeros(28, np.int8), np.zeros(28, np.int8))  # i + 100 reaches 127
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        k(np.zeros(29, np.int8), np.zeros(29, np.int8))
    k2 = tack.kernel(lambda_free_times_two, jit=jit)
    k2(np.zeros(64, np.int8), np.zeros(64, np.int8))  # 2 * 63 = 126
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        k2(np.zeros(65, np.int8), np.zeros(65, np.int8))


def lambda_free_times_two(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + i * 2


@MODES
@pytest.mark.parametrize("dt", [np.int8, np.uint8], ids=lambda d: np.dtype(d).name)
def test_a_shape_and_len(dt, jit):
    def shape_and_len(a, x, out):
        for i in range(out.shape[0]):
            out[i] = a[i] * x.shape[0] + (len(x) ^ a[i])

    k = tack.kernel(shape_and_len, jit=jit)
    hi = int(np.iinfo(dt).max)
    out, a = np.zeros(2, dt), np.array([1, 0], dt)
    k(a, np.zeros(hi), out)
    with np.errstate(over="ignore"):
        assert out.tolist() == (a * dt(hi) + (dt(hi) ^ a)).tolist()
    with pytest.raises(OverflowError, match=re.escape(numpy_error(dt, hi + 1))):
        k(np.array([1, 0], dt), np.zeros(hi + 1), np.zeros(2, dt))


@MODES
def test_a_conditional_of_two_literals_is_known_at_run_time(jit):
    """`(100000 if a[i] > 0 else 1) + a16[i]`: the condition is known at run time, so the
    compiler cannot fold the value to a literal (checked when compiled); it is checked
    where it meets int16 (debug mode took it for a literal and wrapped it)."""
    def pick(a, a16, out):
        for i in range(out.shape[0]):
            out[i] = (100000 if a[i] > 0 else 1) + a16[i]

    k = tack.kernel(pick, jit=jit)
    out = np.zeros(2, np.int16)
    k(np.zeros(2), np.ones(2, np.int16), out)
    assert out.tolist() == [2, 2]
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int16, 100000))):
        k(np.ones(2), np.ones(2, np.int16), np.zeros(2, np.int16))


@tack.func
def plus(v, k):
    return v + k  # k is a Python int known at run time


@MODES
def test_in_a_func(jit):
    def calls(a, out):
        for i in range(out.shape[0]):
            out[i] = plus(a[i], i)

    k = tack.kernel(calls, jit=jit)
    out = np.zeros(128, np.int8)
    k(np.ones(128, np.int8), out)
    assert out[-1] == -128  # 1 + 127 wraps, in int8, as NumPy's int8 + int8 does
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        k(np.ones(129, np.int8), np.zeros(129, np.int8))


def in_blocks(a, out):
    for b, t in tack.blocks(out.shape[0] // 32, 32):
        s = tack.shared(32, tack.i8)
        s[t] = a[b * 32 + t] + (b * 32 + t)
        tack.barrier()
        out[b * 32 + t] = s[31 - t]


def thread_times_four(a, out):
    for b, t in tack.blocks(out.shape[0] // 32, 32):
        out[b * 32 + t] = a[b * 32 + t] + t * 4  # t * 4 <= 124: fits int8, not checked


@MODES
def test_in_a_blocks_kernel(jit):
    k = tack.kernel(in_blocks, jit=jit)
    out = np.zeros(128, np.int8)
    k(np.zeros(128, np.int8), out)
    assert out[:32].tolist() == list(range(31, -1, -1))
    out = np.zeros(128, np.int8)
    tack.kernel(thread_times_four, jit=jit)(np.ones(128, np.int8), out)
    assert out.tolist() == [1 + 4 * (k % 32) for k in range(128)]
    with pytest.raises(OverflowError, match=r"Python integer 1\d\d out of bounds for int8"):
        k(np.zeros(160, np.int8), np.zeros(160, np.int8))


@MODES
def test_an_atomic_add_and_a_vector(jit):
    def atomic(acc, out):
        for i in range(out.shape[0]):
            acc[0] += i

    k = tack.kernel(atomic, jit=jit)
    acc = np.zeros(1, np.int16)
    k(acc, np.zeros(200))
    assert acc[0] == sum(range(200))
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        k(np.zeros(1, np.int8), np.zeros(129))

    def vec(out, m, k):
        for i in range(out.shape[0]):
            out[i] = tack.vec3i(1, 2, 3) * (m + k)

    kv = tack.kernel(vec, jit=jit)
    out = tack.zeros(1, tack.vec3i)
    kv(out, 2**31 - 1, 0)
    with np.errstate(over="ignore"):
        assert out.numpy().ravel().tolist() == (np.array([1, 2, 3], np.int32) * np.int32(2**31 - 1)).tolist()
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int32, 2**31))):
        kv(tack.zeros(1, tack.vec3i), 2**31, 0)


@MODES
def test_np_minimum_and_np_maximum_check_it_as_numpy_does(jit):
    """np.maximum(a8[i], n) compared the shape wrapped to int8 (300 as 44, so 100 won) compiled and
    exactly in debug mode (300 won, stored as 44); NumPy 2 raises, and so do both now.  max() keeps
    its documented exact comparison."""
    def np_pick(a, out):
        for i in range(out.shape[0]):
            out[i] = np.maximum(a[i], out.shape[0]) + np.minimum(i - 5, a[i]) * 0

    def py_pick(a, out):
        for i in range(out.shape[0]):
            out[i] = max(a[i], out.shape[0])

    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 300))) as e:
        tack.kernel(np_pick, jit=jit)(np.full(300, 100, np.int8), np.zeros(300, np.int8))
    assert f"{Path(__file__).name}:{np_pick.__code__.co_firstlineno + 2}" in str(e.value)
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.uint8, -5))):  # i - 5 at i = 0
        tack.kernel(np_pick, jit=jit)(np.full(100, 7, np.uint8), np.zeros(100, np.uint8))
    out = np.zeros(100, np.int8)
    tack.kernel(np_pick, jit=jit)(np.full(100, 7, np.int8), out)  # fits: NumPy's values
    assert out.tolist() == [100] * 100
    out = np.zeros(300, np.int8)
    tack.kernel(py_pick, jit=jit)(np.full(300, 100, np.int8), out)
    assert out.tolist() == [44] * 300  # max(100, 300) is 300, stored into int8


@MODES
def test_checks_false_wraps_as_before(jit):
    k = tack.kernel(loop_plus, jit=jit, checks=False)
    out = np.zeros(300, np.int8)
    k(np.ones(300, np.int8), out)
    assert out[299] == np.int8(1 + 299 - 256)  # 1 + 299 wrapped into int8: 44


@MODES
def test_stores_casts_and_comparisons_are_unchanged(jit):
    # a store and an explicit cast convert as C does (NumPy 2 raises for `a8[0] = 300` and
    # np.int8(300), and wraps `np.array(300).astype(np.int8)`: language.md, "Differences from
    # NumPy"); a comparison is exact
    def others(a, out, small, cast, below):
        for i in range(out.shape[0]):
            small[i] = i
            cast[i] = tack.i8(i) + a[i]
            below[i] = a[i] < i

    k = tack.kernel(others, jit=jit)
    n = 300
    small, cast, below = np.zeros(n, np.int8), np.zeros(n, np.int8), np.zeros(n, bool)
    k(np.zeros(n, np.int8), np.zeros(n), small, cast, below)
    assert small.tolist() == cast.tolist() == np.arange(n).astype(np.int8).tolist()
    assert below.tolist() == [0 < i for i in range(n)]


def mod_128(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + i % 128 + (i & 127) - (i % -128)


def mod_200(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + i % 200


@MODES
def test_a_remainder_that_fits_is_not_checked_and_one_that_may_not_is(jit):
    n = 1000
    out = np.zeros(n, np.int8)
    tack.kernel(mod_128, jit=jit)(np.zeros(n, np.int8), out)
    i = np.arange(n)
    assert out.tolist() == (i % 128 + (i & 127) - (i % -128)).astype(np.int8).tolist()
    k = tack.kernel(mod_200, jit=jit)
    k(np.zeros(128, np.int8), np.zeros(128, np.int8))
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        k(np.zeros(n, np.int8), np.zeros(n, np.int8))


def test_the_loop_variables_check_runs_once_per_loop():
    a, out = np.zeros(1000, np.int8), np.zeros(1000, np.int8)
    ir = tack.kernel(loop_plus).ir(a, out)
    assert "check.intfit.range" in ir, ir
    assert "check.intfit #" not in ir, ir  # nothing left in the loop's body
    ir = tack.kernel(lambda_free_times_two).ir(a, out)
    assert "check.intfit #" in ir, ir  # i * 2: checked per element
    assert "intfit" not in tack.kernel(mod_128).ir(a, out)  # every value fits: no check at all
    assert "check.intfit #" in tack.kernel(mod_200).ir(a, out)
    assert "intfit" not in tack.kernel(thread_times_four).ir(a, out)  # a blocks loop's thread: 0 .. 31
    assert "check.intfit #" in tack.kernel(in_blocks).ir(a, out)  # b * 32 + t: b is unbounded
    ir = tack.kernel(loop_plus, checks=False).ir(a, out)
    assert "intfit" not in ir, ir


OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_on_opencl():
    dev = OPENCL[0]
    k = tack.kernel(loop_plus)
    out = tack.zeros(128, tack.i8, device=dev)
    k(tack.array(np.ones(128, np.int8), device=dev), out)
    tack.synchronize()
    assert out.numpy()[-1] == -128
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        out = tack.zeros(300, tack.i8, device=dev)
        k(tack.array(np.ones(300, np.int8), device=dev), out)
        tack.synchronize()


def sources(target):
    a, out = np.zeros(64, np.int8), np.zeros(64, np.int8)
    return [tack.kernel(loop_plus).generated_source(a, out, target=target),
            tack.kernel(lambda_free_times_two).generated_source(a, out, target=target),
            tack.kernel(in_blocks).generated_source(a, out, target=target),
            tack.kernel(add_args).generated_source(np.zeros(2, np.uint32), 1, 2, np.zeros(2, np.uint32),
                                                    target=target)]


@pytest.mark.skipif(not (hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0),
                    reason="NVRTC (libnvrtc) is not installed")
def test_cuda_sources_compile_with_nvrtc():
    import _gpu_batch

    ptx, entries = _gpu_batch.nvrtc_checked(sources("cuda"), "sm_90")
    assert all(n in ptx for names in entries for n in names)


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    import _gpu_batch

    assert _gpu_batch.hiprtc_checked(sources("hip"), "gfx90a") == b"\x7fELF"


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_sources_compile_with_ocloc():
    failed = [r for r in _ocloc.check_many([(src, "pvc") for src in sources("opencl")]) if r is not None]
    assert not failed, failed[0][1][-3000:]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_sources_pass_the_msl_check():
    verdicts = _msl.verdicts(sources("metal"))
    assert verdicts == ["ok"] * len(verdicts), [v for v in verdicts if v != "ok"][0]


def overflow_message(kernel, *args):
    with pytest.raises(OverflowError) as e:
        kernel(*args)
    return str(e.value)


def test_debug_mode_words_the_overflow_as_the_compiled_kernel():
    """Debug mode said "(kernel add_args, run as Python)" where the compiled kernel names the file and line
    (and, inside a @tack.func, the function and its kernel): the same message now, word for word, for the
    kernel's own arithmetic, a func's, an atomic add's operand and a vector's."""
    cases = [
        (add_args, lambda: (np.array([1, 0], np.int8), 128, 0, np.zeros(2, np.int8))),
        (loop_plus, lambda: (np.zeros(300, np.int8), np.zeros(300, np.int8))),
    ]

    def calls(a, out):
        for i in range(out.shape[0]):
            out[i] = plus(a[i], i)

    def atomic(acc, out):
        for i in range(out.shape[0]):
            acc[0] += i

    def vec(out, m, k):
        for i in range(out.shape[0]):
            out[i] = tack.vec3i(1, 2, 3) * (m + k)

    cases += [
        (calls, lambda: (np.ones(129, np.int8), np.zeros(129, np.int8))),
        (atomic, lambda: (np.zeros(1, np.int8), np.zeros(129))),
        (vec, lambda: (tack.zeros(1, tack.vec3i), 2**31, 0)),
    ]
    for f, args in cases:
        compiled = overflow_message(tack.kernel(f), *args())
        debug = overflow_message(tack.kernel(f, jit=False), *args())
        assert debug == compiled, f.__name__
        assert "run as Python" not in debug
        assert f"{Path(__file__).name}:" in debug
    assert "function plus called from kernel calls" in overflow_message(tack.kernel(calls, jit=False), *cases[2][1]())


def stepped_plus(a, out):
    for t in range(1):
        for i in range(0, 128, 8):  # the last i is 120: i + 7 fits int8
            out[i // 8] = a[0] + (i + 7)


def stepped_from_one(a, out):
    for t in range(1):
        for i in range(1, 128, 8):  # the last i is 121: i + 7 is 128 there
            out[i // 8] = a[0] + (i + 7)


@MODES
def test_a_stepped_loop_is_bounded_by_its_last_value(jit):
    """range(0, 128, 8) ends at 120, not 127: i + 7 fits int8 and is not checked;
    from 1 it ends at 121, and the check that i + 7 = 128 fails stays."""
    a, out = np.zeros(1, np.int8), np.zeros(17, np.int8)
    tack.kernel(stepped_plus, jit=jit)(a, out)
    assert out.tolist() == list(range(7, 128, 8)) + [0]
    with pytest.raises(OverflowError, match=re.escape(numpy_error(np.int8, 128))):
        tack.kernel(stepped_from_one, jit=jit)(a, np.zeros(17, np.int8))
    if jit:
        assert "intfit" not in tack.kernel(stepped_plus).ir(a, out)
        assert "check.intfit #" in tack.kernel(stepped_from_one).ir(a, out)
