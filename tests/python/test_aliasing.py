"""One array passed for two parameters, or views that share memory.

The race check knows arrays by parameter.  `step(u, v, u, v)` -- a stencil
that reads u's neighbours and writes "the other" array, given the same one
twice -- was off after one step with no word.  The compiler now marks each
pair of array parameters whose sharing memory would make a parallel loop
race, and the call refuses such a pair before anything runs; an update in
place (every access the iteration's own element) stays allowed, and the
arrays are then left as the kernel would leave them.
"""

import numpy as np
import pytest

import tack


@tack.kernel
def step(u, v, u_out, v_out):
    n = u.shape[0]
    for i in range(1, n - 1):
        u_out[i] = u[i] + 0.1 * (u[i - 1] - 2.0 * u[i] + u[i + 1]) - u[i] * v[i]
        v_out[i] = v[i] + 0.05 * u[i]


@tack.kernel
def scale_into(x, out, a):
    for i in range(x.shape[0]):
        out[i] = a * x[i]


@tack.kernel
def shift_into(x, out):
    for i in range(x.shape[0] - 1):
        out[i] = x[i + 1]


@tack.kernel
def add_counts(keys, h1, h2):
    for i in range(keys.shape[0]):
        h1[keys[i]] += 1
        h2[keys[i]] += 2


@tack.kernel
def serial_copy(x, out):
    for t in range(1):
        for i in range(x.shape[0] - 1):
            out[i + 1] = x[i]


def test_the_same_array_for_a_stencil_is_refused_before_it_runs():
    u = np.linspace(0, 1, 64)
    v = np.full(64, 0.5)
    u0, v0 = u.copy(), v.copy()
    with pytest.raises(ValueError, match=r"arguments 'u' and 'u_out' of kernel 'step' are the same array.*"
                                         r"np\.copy"):
        step(u, v, u, v)
    np.testing.assert_array_equal(u, u0)  # nothing ran
    np.testing.assert_array_equal(v, v0)
    # with distinct arrays it runs
    u2, v2 = u.copy(), v.copy()
    step(u, v, u2, v2)
    assert not np.array_equal(u2, u)


def test_an_update_in_place_stays_allowed_and_right():
    x = np.arange(10.0)
    scale_into(x, x, 3.0)
    np.testing.assert_array_equal(x, np.arange(10.0) * 3.0)
    t = tack.array(np.arange(5, dtype=np.float32))
    scale_into(t, t, 2.0)
    np.testing.assert_array_equal(t.numpy(), np.arange(5, dtype=np.float32) * 2)


def test_views_that_share_bytes_are_refused():
    buf = np.arange(11.0)
    with pytest.raises(ValueError, match=r"'x' and 'out' of kernel 'scale_into' share memory"):
        scale_into(buf[1:], buf[:-1], 2.0)   # iteration i would write what iteration i + 1 reads
    np.testing.assert_array_equal(buf, np.arange(11.0))


def test_reading_another_element_of_the_same_array_is_refused():
    a = np.arange(8.0)
    with pytest.raises(ValueError, match=r"'x' and 'out' of kernel 'shift_into' are the same array"):
        shift_into(a, a)
    b = np.zeros(8)
    shift_into(a, b)
    assert b[:7].tolist() == a[1:].tolist()


def test_atomic_updates_into_one_array_commute():
    keys = np.random.default_rng(0).integers(0, 4, 10_000)
    h = np.zeros(4, np.int64)
    add_counts(keys, h, h)
    np.testing.assert_array_equal(h, 3 * np.bincount(keys, minlength=4))


def test_serial_code_has_no_iterations_at_once():
    a = np.arange(5.0)
    serial_copy(a, a)  # one iteration: sequential, as Python would run it
    assert a.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]


def test_distinct_arrays_pay_nothing_and_keep_restrict():
    x, out = np.ones(16), np.zeros(16)
    shift_into(x, out)
    assert "restrict" in shift_into.generated_source(x, out)
