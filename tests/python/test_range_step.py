"""range() with a step of zero raises ValueError, as Python does, instead of
running nothing (or forever): a literal zero at compile time, a zero that
turns up at run time when the loop is reached -- parallel or serial, and
with checks=False too, since a zero step is never a loop."""

import numpy as np
import pytest

import tack


@tack.kernel
def stepped(out, s):
    for i in range(0, out.shape[0], s):
        out[i] = 1.0


@tack.kernel
def inner_stepped(out, s):
    for j in range(1):
        for i in range(out.shape[0] - 1, -1, s):
            out[i] += 1.0


@tack.kernel(checks=False)
def unchecked(out, s):
    for i in range(0, out.shape[0], s):
        out[i] = 1.0


@tack.kernel
def literal_zero(out):
    for i in range(0, out.shape[0], 0):
        out[i] = 1.0


@pytest.mark.parametrize("k", [stepped, unchecked])
def test_zero_step_at_run_time(k):
    out = np.zeros(6)
    with pytest.raises(ValueError, match=r"range\(\) arg 3 must not be zero \(kernel "):
        k(out, 0)
    k(out, 2)
    assert out.tolist() == [1, 0, 1, 0, 1, 0]


def test_zero_step_in_a_serial_loop():
    out = np.zeros(4)
    with pytest.raises(ValueError, match="must not be zero"):
        inner_stepped(out, 0)
    inner_stepped(out, -1)
    assert out.tolist() == [1, 1, 1, 1]


def test_literal_zero_step_is_a_compile_error():
    with pytest.raises(tack.CompileError, match="must not be zero"):
        literal_zero(np.zeros(3))
