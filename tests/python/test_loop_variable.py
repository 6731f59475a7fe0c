"""A parallel loop's variable belongs to the loop; a serial loop's variable
behaves as Python's.

Before: `for i in range(n): i = 3; a[i] = 2.0` wrote every element (the
assignment was moved above the loop), `i = i % 3; a[i] += 1.0` lost updates
with no race reported, and `i = 0; a[i] = a[i] + 1.0` produced C that did not
compile.  Now assigning a parallel loop's variable is a CompileError that
says what to write; in a serial loop an assignment lasts to the end of its
iteration and the next iteration takes the next value, as in Python.
"""

import numpy as np
import pytest

import tack


@tack.kernel
def set_three(a):
    for i in range(a.shape[0]):
        i = 3
        a[i] = 2.0


@tack.kernel
def fold_mod(a):
    for i in range(a.shape[0]):
        i = i % 3
        a[i] += 1.0


@tack.kernel
def zero_then_add(a):
    for i in range(a.shape[0]):
        i = 0
        a[i] = a[i] + 1.0


@tack.kernel
def aug_in_branch(a):
    for i in range(a.shape[0]):
        if a[i] > 0:
            i += 1
        a[i] = 1.0


@tack.kernel
def ndrange_second(m):
    for i, j in tack.ndrange(m.shape):
        j = 0
        m[i, j] = 1.0


@tack.kernel
def inner_loop_reuses_name(a):
    for i in range(a.shape[0]):
        for i in range(2):
            a[i] = 1.0


@tack.kernel
def ranged(a):
    for i in range(1, a.shape[0], 2):
        i = i - 1
        a[i] = 1.0


@pytest.mark.parametrize("k", [set_three, fold_mod, zero_then_add, aug_in_branch, ranged])
def test_assigning_a_parallel_loop_variable_is_refused(k):
    a = np.zeros(8)
    with pytest.raises(tack.CompileError, match=r"variable 'i' of the parallel loop \(line \d+\) is assigned in "
                                                r"its body.*a name of its own") as e:
        k(a)
    assert a.tolist() == [0.0] * 8  # nothing ran
    assert "test_loop_variable.py" in str(e.value)


def test_ndrange_variables_and_inner_loops_too():
    with pytest.raises(tack.CompileError, match=r"variable 'j' of the parallel loop"):
        ndrange_second(np.zeros((3, 3)))
    with pytest.raises(tack.CompileError, match=r"variable 'i' of the parallel loop"):
        inner_loop_reuses_name(np.zeros(4))


def test_the_message_points_at_the_assignment():
    with pytest.raises(tack.CompileError) as e:
        set_three(np.zeros(4))
    assert e.value.lineno == set_three.__wrapped__.__code__.co_firstlineno + 3  # decorator, def, for, i = 3
    assert e.value.text.strip() == "i = 3"


@tack.kernel
def serial_skips(out, n):
    for t in range(1):
        k = 0
        for i in range(n):
            out[k] = i
            k += 1
            i = i + 100          # Python: lasts to the end of this iteration only
            out[k] = i
            k += 1


@tack.kernel
def serial_in_rows(m):
    for r in range(m.shape[0]):
        for j in range(m.shape[1]):
            m[r, j] = j
            j = 2 * j + 1
            m[r, j % m.shape[1]] += 0   # reads the new j


@tack.kernel
def serial_ndrange(out):
    for t in range(1):
        k = 0
        for i, j in tack.ndrange(2, 3):
            i = i * 10
            j = j + i
            out[k] = j
            k += 1


def test_serial_loops_take_the_next_value_as_python_does():
    out = np.zeros(10, np.int64)
    serial_skips(out, 5)
    want = []
    for i in range(5):
        want.append(i)
        i = i + 100
        want.append(i)
    assert out.tolist() == want

    m = np.zeros((2, 4))
    serial_in_rows(m)
    assert m.tolist() == [[0.0, 1.0, 2.0, 3.0]] * 2

    out = np.zeros(6, np.int64)
    serial_ndrange(out)
    want = []
    for i, j in [(i, j) for i in range(2) for j in range(3)]:  # one loop over tuples, as ndrange is
        i = i * 10
        j = j + i
        want.append(j)
    assert out.tolist() == want


def test_debug_mode_gives_the_serial_loops_the_same_values():
    for k, args, fresh in [(serial_skips, (5,), lambda: np.zeros(10, np.int64)),
                           (serial_ndrange, (), lambda: np.zeros(6, np.int64))]:
        a, b = fresh(), fresh()
        k(a, *args)
        tack.kernel(k.__wrapped__, jit=False)(b, *args)
        assert a.tolist() == b.tolist()
