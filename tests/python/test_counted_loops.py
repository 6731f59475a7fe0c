"""A while loop that counts by one -- `while j < n: ...; j += 1`, as code ported from C or
Fortran writes a for loop -- is compiled as the counted loop it is (src/compiler/passes/counted.c),
so its index checks leave the loop as a for loop's do: the loop below, one thread, 1000 x 1000 f64,
took 0.55 ms against 0.23 ms for the same loop over range(m), and now takes the for loop's time.

It gives what Python gives, in debug mode too, the counter's value after the loop included
(the bound where the loop ran, the start where it did not); a loop with a break or continue of its
own, one whose body changes its bound and one with a narrow counter stay while loops.
"""

import re

import numpy as np
import pytest

import tack

JIT = pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])


def counting(x, out, lo):
    for r in range(x.shape[0]):
        n = x.shape[1]
        j = lo[r]                                  # below 0, inside, at or past the bound
        s = 0.0
        while j < n:
            s += x[r, j] * (j + 1)
            j += 1
        out[r, 0] = s
        out[r, 1] = j                              # where the loop left j
        k = -2
        while k < 3:                               # constant bounds, `1 + k`
            out[r, 2] += k * 10
            k = 1 + k
        out[r, 3] = k


def not_counting(x, out):
    for r in range(x.shape[0]):
        n = x.shape[1]
        j = 0
        s = 0.0
        while j < n:                               # a break of its own
            if x[r, j] < 0:
                break
            s += x[r, j]
            j += 1
        out[r, 0] = s * 100 + j
        j = 0
        m = n
        while j < m:                               # the body moves the bound: Python reads it again
            if j == 1:
                m = n - 2
            j += 1
        out[r, 1] = j
        j = 0
        t = 0
        while j < n:                               # a continue of its own skips the increment
            t += 1
            if t % 2 == 0:
                continue
            j += 1
        out[r, 2] = t
        b = np.int8(120)
        while b < 125:                             # an int8 counter
            b += 1
        out[r, 3] = b


@JIT
def test_counting_while_loops_give_pythons_values(jit):
    x = np.arange(24.0).reshape(4, 6) - 3.0
    lo = np.array([0, -3, 6, 9])
    out, want = np.zeros((4, 4)), np.zeros((4, 4))
    tack.kernel(counting, jit=jit)(x, out, lo)
    counting(x, want, lo)                          # the function run by Python itself
    assert out.tolist() == want.tolist()
    assert out[:, 1].tolist() == [6, 6, 6, 9] and out[0, 3] == 3
    out, want = np.zeros((4, 4)), np.zeros((4, 4))
    tack.kernel(not_counting, jit=jit)(x, out)
    not_counting(x, want)
    assert out.tolist() == want.tolist()


def test_which_while_loops_become_counted_loops():
    x, out = np.zeros((2, 3)), np.zeros((2, 4))
    loops = lambda ir, kind: len(re.findall(rf"^ *{kind} ", ir, re.M))  # noqa: E731
    ir = tack.kernel(counting).ir(x, out, np.zeros(2, np.int64))
    assert loops(ir, "while") == 0 and loops(ir, "for") >= 2
    ir = tack.kernel(not_counting).ir(x, out)
    assert loops(ir, "while") == 4


def overrun(out, n):
    for t in range(1):
        j = 0
        while j < n:
            out[j] = 1.0
            j += 1


@JIT
def test_a_counted_loops_hoisted_check_names_the_first_bad_index(jit):
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for axis 0 with size 5"):
        tack.kernel(overrun, jit=jit)(np.zeros(5), 7)
