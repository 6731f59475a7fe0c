"""How fast the GPU dialects' code is: what the generated source does per element.

The failure test after a @tack.func call, only where the callee can fail.
A failed check inside a function returns from it, and its caller must leave
too: the emitter tests a failure flag after the call.  That test is written
only after calls to functions that can fail (a check in them, or a call to
one that can; on the CPU, a loop that polls): may_fail.c's bit over the
call graph.  On a GPU the test reads the thread's own flag, which a failing
check sets, instead of re-reading the error record from global memory
(a volatile load per call, per element).  Here: which calls are tested, in
every dialect, from the generated source; and, through the CUDA emulation
and the CPU, that a failure two calls deep still stops its thread and is
reported.

An ndrange's coordinates are split from the flat index once per thread and
stepped along the grid-stride loop (layout_grid.c): no division in the
loop, and the emulated GPU visits every point once for grids smaller and
larger than the space, strides that are not multiples of an extent, and
empty spaces.
"""

import pathlib
import re
import sys

import numpy as np
import pytest

import tack

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _cuda_emulate  # noqa: E402


@tack.func
def clamp01(v):
    return min(max(v, 0.0), 1.0)


@tack.func
def pick(a, k):
    return a[k]


@tack.func
def via(a, k):
    return pick(a, k) + 1.0


@tack.func
def twice(v):
    return clamp01(v) * 2.0


def _calls(x, idx, y):
    for i in range(x.shape[0]):
        y[i] = twice(x[i]) + via(x, idx[i])


calls = tack.kernel(_calls)


def _args():
    x = np.array([0.5, 2.0, -1.0, 0.25], np.float32)
    return x, np.array([3, 2, 1, 0], np.int64), np.full(4, -7.0, np.float32)


def _tested_calls(src):
    """The functions whose calls are followed by the failure test, by name (each once)."""
    names = {}
    for m in re.finditer(r"/\* (\w+), line \d+ \*/\n[^\n]*? tk_f(\d+)\(", src):
        names[m.group(2)] = m.group(1)
    out = []
    lines = src.splitlines()
    for i, line in enumerate(lines[:-1]):
        c = re.search(r"tk_f(\d+)\(ctx, abi", line)
        if c and "TK_CALL_FAILED(ctx, abi)" in lines[i + 1]:
            out.append(names[c.group(1)])
    return sorted(set(out))


@pytest.mark.parametrize("target", ["c", "cuda", "hip", "opencl", "metal"])
def test_only_calls_that_can_fail_are_followed_by_the_test(target):
    src = calls.generated_source(*_args(), target=target)
    # pick checks its index; via calls pick; clamp01 and twice cannot fail
    assert _tested_calls(src) == ["pick", "via"], src
    assert "TK_FAILED(ctx)) return tk_zero" not in src


@pytest.mark.parametrize("target", ["cuda", "hip", "opencl", "metal"])
def test_a_gpu_tests_the_threads_own_flag(target):
    src = calls.generated_source(*_args(), target=target)
    assert "int fl_ = 0;" in src and "&fl_}" in src
    define = re.search(r"#define TK_CALL_FAILED\(c, a\) (.*)", src).group(1)
    assert define == "(*(a)->fl)"  # no load of the error record


def test_checks_off_leave_no_test():
    off = tack.kernel(checks=False)(_calls)
    assert "TK_CALL_FAILED(ctx, abi)" not in off.generated_source(*_args(), target="cuda")


@pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")
def test_a_failure_two_calls_deep_stops_its_thread_on_the_emulated_gpu():
    # 7 elements on 4 threads: thread 0 does 0..3 in one trip of adjacent
    # iterations (the arrays are aligned), then 4; threads 1 and 2 do 5 and 6
    x = np.array([0.5, 2.0, -1.0, 0.25, 0.75, 1.5, -0.5], np.float32)
    idx = np.array([3, 2, 1, 0, 6, 4, 9], np.int64)  # 9: the last thread's pick reads out of bounds
    y = np.full(7, -7.0, np.float32)
    src = calls.generated_source(x, idx, y, target="cuda")
    failed, site, prog, index, extent = _cuda_emulate.run(src, [x, idx, y], 1, 4)  # threads run in turn
    assert (failed, prog, index, extent) == (1, 7, 9, 7)
    # the failing thread left before its store, on its own flag; the others finished theirs
    assert y[6] == -7.0
    want = 2 * np.clip(x[:6], 0, 1) + x[idx[:6]] + 1
    np.testing.assert_array_equal(y[:6], want)


def test_a_failure_two_calls_deep_raises_on_the_cpu():
    x, idx, y = _args()
    idx[1] = -9
    with pytest.raises(IndexError, match=r"index -9 is out of bounds"):
        calls(x, idx, y)
    x, idx, y = _args()
    calls(x, idx, y)
    np.testing.assert_array_equal(y, [1.0 + 1.25, 2.0 + 0.0, 0.0 + 3.0, 0.5 + 1.5])


# ------------------------------------------------------ ndrange coordinates
@tack.kernel
def visits(a, n0, n1, n2):
    for i, j, k in tack.ndrange(n0, n1, n2):
        a[i, j, k] += 1 + i * 10000 + j * 100 + k


def _loop_body(src):
    return src[src.index("for (uint64_t i_"):src.index("tack-grid-work") if "tack-grid-work" in src else None]


@pytest.mark.parametrize("target", ["cuda", "hip", "opencl", "metal"])
def test_an_ndrange_loop_divides_nothing(target):
    src = visits.generated_source(np.zeros((3, 4, 5), np.int64), 3, 4, 5, target=target)
    body = _loop_body(src)
    assert " / " not in body and " % " not in body and "/=" not in body and "%=" not in body, body


@pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")
def test_stepped_ndrange_coordinates_visit_every_point_once():
    shape = (3, 4, 5)
    want = np.fromfunction(lambda i, j, k: 1 + i * 10000 + j * 100 + k, shape, dtype=np.int64)
    src = visits.generated_source(np.zeros(shape, np.int64), *shape, target="cuda")
    for grid, block in ((1, 1), (1, 7), (3, 5), (2, 32), (5, 64)):  # 1 to 320 threads for 60 points
        a = np.zeros(shape, np.int64)
        assert _cuda_emulate.run(src, [a, *shape], grid, block)[0] == 0
        np.testing.assert_array_equal(a, want, err_msg=f"grid {grid} x {block}")
    for empty in ((0, 4, 5), (3, -1, 5), (3, 4, 0)):
        a = np.zeros(shape, np.int64)
        assert _cuda_emulate.run(src, [a, *empty], 2, 7)[0] == 0
        assert not a.any()


# ------------------------------------------ the 32-bit, unrolled elementwise loop
@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def mixed(x, idx, y, total):
    for i in range(2, x.shape[0]):  # an offset loop
        t = clamp01(x[i]) + via(x, idx[i])  # a call that cannot fail, one that can
        if t > 1.0:
            y[i] = t * 2.0
        else:
            y[i] = -t
        total[0] += t  # a privatized sum, flushed after the loop


def _unrolled(src):
    m = re.search(r"four (adjacent )?iterations", src)
    return src[m.start():src.index("for (; i_ < t32_", m.start())]


@pytest.mark.parametrize("target", ["cuda", "hip", "opencl", "metal"])
def test_an_elementwise_loop_issues_four_iterations_loads_before_their_stores(target):
    x = np.ones(8, np.float32)
    src = saxpy.generated_source(np.float32(2), x, x.copy(), target=target)
    assert "if (total_ <= 0x7fffffffu && stride_ <= 0x1fffffffu)" in src  # versioned at run time
    assert "uint32_t i_ = (uint32_t)(" in src
    loop = _unrolled(src)
    loads = [m.start() for m in re.finditer(r"a[12]\[\(v\d+_i_u[0-3]\)\]\)", loop)]
    stores = [m.start() for m in re.finditer(r"a2\[\(v\d+_i_u[0-3]\)\] =", loop)]
    assert len(loads) == 8 and len(stores) == 4, loop
    assert max(loads) < min(stores), loop


@pytest.mark.skipif(not _cuda_emulate.available(), reason="no C++ compiler to emulate CUDA with")
def test_the_unrolled_loop_gives_the_cpus_results_on_the_emulated_gpu():
    n = 45
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 2, n).astype(np.float32)
    idx = rng.integers(0, n, n).astype(np.int64)
    want_y, want_t = np.zeros(n, np.float32), np.zeros(1, np.float32)
    mixed(x, idx, want_y, want_t)
    src = mixed.generated_source(x, idx, want_y, want_t, target="cuda")
    assert "four adjacent iterations" in src
    # 1 thread: all unrolled then a tail; 7 and 11: partial trips; 64: the tail loop only
    for grid, block in ((1, 1), (1, 7), (1, 11), (2, 32)):
        y, t = np.zeros(n, np.float32), np.zeros(1, np.float32)
        assert _cuda_emulate.run(src, [x, idx, y, t], grid, block)[0] == 0
        np.testing.assert_array_equal(y, want_y, err_msg=f"grid {grid} x {block}")
        np.testing.assert_allclose(t, want_t, rtol=1e-5, err_msg=f"grid {grid} x {block}")
        # a view starting one element into its buffer: not 16-byte aligned, the plain loop
        yb = np.zeros(n + 1, np.float32)
        t = np.zeros(1, np.float32)
        assert _cuda_emulate.run(src, [x, idx, yb[1:], t], grid, block)[0] == 0
        np.testing.assert_array_equal(yb[1:], want_y, err_msg=f"misaligned, grid {grid} x {block}")
    idx[40] = n + 3  # a failing check in one of the four iterations of a trip
    y, t = np.zeros(n, np.float32), np.zeros(1, np.float32)
    assert _cuda_emulate.run(src, [x, idx, y, t], 1, 2)[:4:3] == (1, n + 3)


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_adjacent_iterations_promise_aligned_pointers_after_testing_them(target):
    x = np.ones(8, np.float32)
    src = saxpy.generated_source(np.float32(2), x, x.copy(), target=target)
    test = src.index("if ((((unsigned long long)a1 | (unsigned long long)a2) & 15u) == 0)")
    assert src.index("a1 = (decltype(a1))__builtin_assume_aligned(a1, 16);") > test
    assert src.index("for (i_ *= 4u; i_ + 3u < t32_; i_ += 4u * s32_)") > test
    assert "(int64_t)(i_ + 1u)" in _unrolled(src)
    assert "i_ = (t32_ & ~3u) + (uint32_t)(" in src  # the last few by the plain loop


@pytest.mark.parametrize("target", ["opencl", "metal"])
def test_other_dialects_keep_strided_iterations(target):
    x = np.ones(8, np.float32)
    src = saxpy.generated_source(np.float32(2), x, x.copy(), target=target)
    assert "__builtin_assume_aligned" not in src and "four iterations, their loads first" in src


@tack.kernel
def with_loop(x, y):
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(3):
            s += x[i] * j
        y[i] = s


def test_a_body_with_a_loop_keeps_the_plain_loop():
    x = np.ones(8, np.float32)
    assert "four iterations" not in with_loop.generated_source(x, x.copy(), target="cuda")
