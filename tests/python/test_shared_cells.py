"""Compound assignments to array elements inside a parallel loop.

+= and -= on numeric elements are atomic, so a reduction into one cell is
right.  Every other compound assignment is a read and a write: on the
iteration's own element (each loop variable, unassigned in the body, is one
of its indices) that is fine; on an element other iterations may update at
the same time it would lose updates without a word (s[0] *= x[i] over 200,000
factors of 1.00005 gave 452.7 instead of 22,021), so it is a CompileError that
says what to write instead -- on every backend, the CPU included.

The rule holds inside a @tack.func called from a parallel loop too: the
function is specialized for that call, += and -= there are atomic, and its
own elements are those indexed by the parameter that received the loop
variable.  The compiler's IR verifier checks the rule again after every pass
(a read-modify-write store in parallel code must be on the iteration's own
element); TACK_DEBUG_RACY_RMW=1 breaks the lowering on purpose to show that
it fires."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tack


@tack.kernel
def product_into_one_cell(x, s):
    for i in range(x.shape[0]):
        s[0] *= x[i]


@tack.kernel
def product_in_a_serial_loop(x, s):
    for t in range(1):
        p = 1.0
        for i in range(x.shape[0]):
            p *= x[i]
        s[0] = p


@tack.kernel
def scale_own(a, f):
    for i in range(a.shape[0]):
        a[i] *= f
        a[i] //= 2.0


@tack.kernel
def scale_rows(m):
    for i in range(m.shape[0]):
        m[i, 0] *= 2.0
        for j in range(1, m.shape[1]):
            m[i, j] **= 2


@tack.kernel
def scale_grid(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[j, i] *= 3.0


@tack.kernel
def half_grid_shared(m, out):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        out[i] *= m[i, j]


@tack.kernel
def reassigned_index(a):
    for i in range(a.shape[0]):
        i = i // 2
        a[i] *= 2.0


@tack.kernel
def or_into_flags(x, flags):
    for i in range(x.shape[0]):
        flags[0] |= x[i] > 0


@tack.kernel
def add_into_f16(x, h):
    for i in range(x.shape[0]):
        h[0] += x[i]


@tack.kernel
def add_into_shared_sum(x, s):
    for i in range(x.shape[0]):
        s[0] += x[i]


def test_product_into_one_cell_is_refused_with_advice():
    with pytest.raises(tack.CompileError, match=r"'s\[\.\.\.\] \*= \.\.\.' in a parallel loop: iterations may update "
                                                r"the same element at once.*only \+= and -= are atomic"):
        product_into_one_cell(np.full(200_000, 1.00005), np.ones(1))


def test_the_advice_works():
    x = np.full(200_000, 1.00005)
    s = np.zeros(1)
    product_in_a_serial_loop(x, s)
    assert s[0] == pytest.approx(np.prod(x), rel=1e-9)


def test_own_elements_may_be_updated_in_place():
    a = np.arange(10.0)
    scale_own(a, 3.0)
    np.testing.assert_array_equal(a, np.arange(10.0) * 3.0 // 2.0)
    m = np.arange(12.0).reshape(3, 4)
    scale_rows(m)
    ref = np.arange(12.0).reshape(3, 4)
    ref[:, 0] *= 2.0
    ref[:, 1:] **= 2
    np.testing.assert_array_equal(m, ref)
    g = np.ones((4, 4))
    scale_grid(g)
    np.testing.assert_array_equal(g, np.full((4, 4), 3.0))


def test_an_element_shared_by_an_ndrange_row_is_refused():
    with pytest.raises(tack.CompileError, match=r"'out\[\.\.\.\] \*= \.\.\.' in a parallel loop"):
        half_grid_shared(np.ones((3, 4)), np.ones(3))


def test_an_index_the_body_reassigns_is_refused():
    # Reassigning the loop's variable is itself refused (test_loop_variable.py), before
    # the cell it names could be taken for the iteration's own.
    with pytest.raises(tack.CompileError, match=r"variable 'i' of the parallel loop .* is assigned in its body"):
        reassigned_index(np.ones(8))


def test_bool_and_float16_cells_are_refused():
    with pytest.raises(tack.CompileError, match=r"'flags\[\.\.\.\] \|= \.\.\.'.*only \+= and -= are atomic"):
        or_into_flags(np.ones(4), np.zeros(1, np.bool_))
    with pytest.raises(tack.CompileError, match=r"'h\[\.\.\.\] \+= \.\.\.'.*not atomic on float16"):
        add_into_f16(np.ones(4, np.float16), np.zeros(1, np.float16))


@tack.kernel
def lu_in_one_iteration(A):
    n = A.shape[0]
    for t in range(1):          # the docs' place for serial work: nothing runs at once
        for k in range(n):
            for i in range(k + 1, n):
                A[i, k] /= A[k, k]
                for j in range(k + 1, n):
                    A[i, j] -= A[i, k] * A[k, j]


@tack.kernel
def scale_first_in_two_iterations(A):
    for t in range(2):
        A[0] *= 2.0


def test_compound_assignments_in_a_loop_of_one_iteration_are_serial():
    # A Numba port of an in-place LU factorization, its sequential loops in the
    # `for t in range(1):` the docs recommend: the /= was refused as a race
    # ("iterations may update the same element at once"), in both modes, though a
    # loop of one iteration has nothing to race with (the race check says so).
    rng = np.random.default_rng(0)
    n = 12
    A0 = rng.standard_normal((n, n)) + n * np.eye(n)
    for k in (lu_in_one_iteration, tack.kernel(jit=False)(lu_in_one_iteration.__wrapped__)):
        A = A0.copy()
        k(A)
        L, U = np.tril(A, -1) + np.eye(n), np.triu(A)
        np.testing.assert_allclose(L @ U, A0, rtol=0, atol=1e-12)
    ir = lu_in_one_iteration.ir(A0.copy())
    assert "store.rmw A[" in ir and "atomic" not in ir   # one iteration: plain updates, no atomics
    for target in ("cuda", "opencl"):
        assert "tk_atomic" not in lu_in_one_iteration.generated_source(A0.copy(), target=target)
    with pytest.raises(tack.CompileError, match=r"'A\[\.\.\.\] \*= \.\.\.' in a parallel loop"):
        scale_first_in_two_iterations(np.ones(3))


def test_sums_into_one_cell_stay_atomic_and_right():
    x = np.ones(1_000_000)
    s = np.zeros(1)
    add_into_shared_sum(x, s)
    assert s[0] == 1_000_000.0


# ------------------------------------------------- inside a @tack.func
@tack.func
def add_to(s, v):
    s[0] += v


@tack.func
def take_from(s, k, v):
    s[k] -= v


@tack.func
def mul_at(a, k, f):
    a[k] *= f


@tack.func
def mul_next(a, k, f):
    mul_at(a, k + 1, f)


@tack.func
def mul_own_through(a, k, f):
    mul_at(a, k, f)


@tack.func
def mul_moved(a, k, f):
    k = k // 2
    a[k] *= f


@tack.kernel
def sum_through_a_function(x, s):
    for i in range(x.shape[0]):
        add_to(s, x[i])


@tack.kernel
def count_down_through_a_function(x, s):
    for i in range(x.shape[0]):
        take_from(s, 0, x[i])


@tack.kernel
def product_through_a_function(x, s):
    for i in range(x.shape[0]):
        mul_at(s, 0, x[i])


@tack.kernel
def scale_own_through_functions(a, f):
    for i in range(a.shape[0]):
        mul_own_through(a, i, f)


@tack.kernel
def scale_neighbour_through_functions(a, f):
    for i in range(a.shape[0] - 1):
        mul_next(a, i, f)


@tack.kernel
def scale_moved_index(a, f):
    for i in range(a.shape[0]):
        mul_moved(a, i, f)


@tack.kernel
def add_into_f16_through_a_function(x, h):
    for i in range(x.shape[0]):
        add_to(h, x[i])


@tack.kernel
def product_at_the_top_level(x, s):
    mul_at(s, 0, 2.0)
    for i in range(x.shape[0]):
        x[i] += 1.0


@tack.kernel
def grid_own_through_a_function(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        mul_rc(m, i, j, 3.0)


@tack.kernel
def grid_row_through_a_function(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        mul_rc(m, i, 0, 3.0)


@tack.kernel
def scale_strided(a):
    for i in range(1, a.shape[0], 2):
        a[i] *= 2.0
    for i in range(2, a.shape[0]):
        a[i] -= 1.0
        a[i] /= 2.0


@tack.func
def mul_rc(m, r, c, f):
    m[r, c] *= f


def test_add_in_a_function_called_from_a_parallel_loop_is_atomic():
    # before the function knew it ran in a parallel loop this lost updates (578,377 of 1,000,000)
    x = np.ones(1_000_000)
    s = np.zeros(1)
    sum_through_a_function(x, s)
    assert s[0] == 1_000_000.0
    s = np.full(1, 1_000_000, np.int64)
    count_down_through_a_function(np.ones(1_000_000, np.int64), s)
    assert s[0] == 0
    ir = sum_through_a_function.ir(x, s.astype(np.float64))
    assert "parallel" in ir and "atomic_add:f64 s" in ir


@pytest.mark.parametrize("target", ["c", "cuda", "opencl"])
def test_the_function_s_add_is_atomic_in_every_dialect(target):
    src = sum_through_a_function.generated_source(np.ones(4), np.zeros(1), target=target)
    body = src[src.index("/* add_to, line"):]
    body = body[:body.index("\n}\n")]
    assert "tk_atomic_add_double(&a0[" in body
    if target == "cuda" and getattr(tack._core, "_nvrtc_version", lambda: 0)() > 0:
        assert ".entry tk_phase0" in tack._core._nvrtc_compile(src, "sm_80")


_ON_OPENCL = """
import numpy as np, tack, test_shared_cells as t
dev = next((d for d in tack.devices() if d.startswith("opencl")), None)
if dev is None:
    print("no OpenCL device")
else:
    x = tack.array(np.ones(200_000), device=dev)
    s = tack.zeros(1, tack.f64, device=dev)
    t.sum_through_a_function(x, s)
    print("total", s.numpy()[0])
"""


def test_the_function_s_add_is_right_on_an_opencl_device():
    # in a process of its own: PoCL's LLVM and hiprtc's do not share one (test_hip.py)
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here)] + sys.path))
    out = subprocess.run([sys.executable, "-c", _ON_OPENCL], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    if "no OpenCL device" in out.stdout:
        pytest.skip("no OpenCL device")
    assert "total 200000.0" in out.stdout, out.stdout


def test_other_updates_in_a_function_called_from_a_parallel_loop_are_refused():
    with pytest.raises(tack.CompileError, match=r"'a\[\.\.\.\] \*= \.\.\.' in a parallel loop \(in 'mul_at', "
                                                r"called from one\).*only \+= and -= are atomic"):
        product_through_a_function(np.full(1000, 1.00005), np.ones(1))
    with pytest.raises(tack.CompileError, match=r"in 'mul_at', called from one"):
        scale_neighbour_through_functions(np.ones(8), 2.0)
    with pytest.raises(tack.CompileError, match=r"in 'mul_moved', called from one"):
        scale_moved_index(np.ones(8), 2.0)
    with pytest.raises(tack.CompileError, match=r"in 'mul_rc', called from one"):
        grid_row_through_a_function(np.ones((3, 4)))
    with pytest.raises(tack.CompileError, match=r"'s\[\.\.\.\] \+= \.\.\.'.*not atomic on float16"):
        add_into_f16_through_a_function(np.ones(4, np.float16), np.zeros(1, np.float16))


def test_own_elements_through_functions_and_serial_calls_are_plain_updates():
    a = np.arange(10.0)
    scale_own_through_functions(a, 3.0)
    np.testing.assert_array_equal(a, np.arange(10.0) * 3.0)
    m = np.ones((3, 4))
    grid_own_through_a_function(m)
    np.testing.assert_array_equal(m, np.full((3, 4), 3.0))
    a = np.ones(8)
    scale_strided(a)
    ref = np.ones(8)
    ref[1::2] *= 2.0
    ref[2:] -= 1.0
    ref[2:] /= 2.0
    np.testing.assert_array_equal(a, ref)
    x, s = np.zeros(5), np.full(1, 5.0)
    product_at_the_top_level(x, s)  # outside the parallel loop: one thread, no race
    assert s[0] == 10.0 and (x == 1.0).all()
    ir = product_at_the_top_level.ir(x, s)
    assert "store.rmw a[" in ir and "parallel" not in ir


# ------------------------------------------- the verifier sees the race
_BROKEN = """
import numpy as np, tack, test_shared_cells as t
cases = [(t.product_into_one_cell, (np.ones(8), np.ones(1))),
         (t.half_grid_shared, (np.ones((3, 4)), np.ones(3))),
         (t.sum_through_a_function, (np.ones(8), np.zeros(1))),
         (t.product_through_a_function, (np.ones(8), np.ones(1))),
         (t.scale_own, (np.ones(8), 2.0)),
         (t.scale_grid, (np.ones((4, 4)),)),
         (t.scale_own_through_functions, (np.ones(8), 2.0)),
         (t.scale_strided, (np.ones(8),)),
         (t.lu_in_one_iteration, (np.eye(4),))]
for k, args in cases:
    for target in ("c", "cuda", "opencl"):
        try:
            k.generated_source(*args, target=target)
            print(k.__name__, target, "ok")
        except tack.CompileError as e:
            print(k.__name__, target, "refused:", str(e).splitlines()[0])
"""


def test_the_ir_verifier_catches_a_lowering_that_forgets_the_atomics():
    """TACK_DEBUG_RACY_RMW=1 lowers every a[i] op= v in parallel code as a plain
    read and write; the verifier must refuse each one that is not the
    iteration's own element, for every dialect, and accept the own ones."""
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, TACK_DEBUG_RACY_RMW="1", PYTHONPATH=os.pathsep.join([str(here)] + sys.path))
    out = subprocess.run([sys.executable, "-c", _BROKEN], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    racy = ("product_into_one_cell", "half_grid_shared", "sum_through_a_function", "product_through_a_function")
    for name in racy:
        for target in ("c", "cuda", "opencl"):
            assert any(ln.startswith(f"{name} {target} refused: ") and "internal compiler error after lowering" in ln
                       and "non-atomic read-modify-write" in ln for ln in lines), (name, target, lines)
    for name in ("scale_own", "scale_grid", "scale_own_through_functions", "scale_strided", "lu_in_one_iteration"):
        for target in ("c", "cuda", "opencl"):
            assert f"{name} {target} ok" in lines, (name, target, lines)
