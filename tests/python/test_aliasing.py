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


# Debug mode (jit=False) is the same language: the same pairs are refused with the
# compiled call's words, and the same sharing runs.  It used to run every one of
# them in Python, serially, where the compiled call refused: a 2-D stencil given
# one array for input and output, a transpose into the array's own `.T`, a shift
# between overlapping slices -- each giving the serial answer with no word.

def _stencil2d(u, v, alpha):
    n, m = u.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        v[i, j] = u[i, j] + alpha * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])


def _transpose(a, b):
    for i, j in tack.ndrange(a.shape[0], a.shape[1]):
        b[i, j] = a[j, i]


def _double(x, out):
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i]


def _refused(name, jit):
    stencil = tack.kernel(_stencil2d, jit=jit)
    transpose = tack.kernel(_transpose, jit=jit)
    double = tack.kernel(_double, jit=jit)
    step_ = step if jit else tack.kernel(step.__wrapped__, jit=False)
    shift = shift_into if jit else tack.kernel(shift_into.__wrapped__, jit=False)
    g = np.arange(64.0).reshape(8, 8) ** 1.5
    x = np.arange(12.0)
    cases = {
        "stencil(u, u)": lambda: stencil(g, g, 0.1),
        "stencil(tack u, tack u)": lambda: (lambda t: stencil(t, t, 0.1))(tack.array(g)),
        "stencil(rows 1.., rows ..-1)": lambda: stencil(g[1:], g[:-1], 0.1),
        "transpose(a, a.T)": lambda: transpose(g, g.T),
        "transpose(a, a)": lambda: transpose(g, g),
        "double(x[::-1], x)": lambda: double(x[::-1], x),
        "double(x[1:], x[:-1])": lambda: double(x[1:], x[:-1]),
        "step(u, v, u, v)": lambda: step_(x, x.copy(), x, x.copy()),
        "shift(a, a)": lambda: shift(x, x),
    }
    return cases[name], (g, x)


_CASES = ["stencil(u, u)", "stencil(tack u, tack u)", "stencil(rows 1.., rows ..-1)", "transpose(a, a.T)",
          "transpose(a, a)", "double(x[::-1], x)", "double(x[1:], x[:-1])", "step(u, v, u, v)", "shift(a, a)"]


@pytest.mark.parametrize("case", _CASES)
def test_debug_mode_refuses_the_pairs_the_compiled_call_refuses(case):
    messages = []
    for jit in (True, False):
        call, (g, x) = _refused(case, jit)
        g0, x0 = g.copy(), x.copy()
        with pytest.raises(ValueError) as e:
            call()
        messages.append(str(e.value))
        np.testing.assert_array_equal(g, g0)  # nothing ran
        np.testing.assert_array_equal(x, x0)
    assert "would race through the shared memory" in messages[0]
    assert messages[1] == messages[0]


def test_debug_mode_runs_the_sharing_the_compiled_call_runs():
    for jit in (True, False):
        double = tack.kernel(_double, jit=jit)
        stencil = tack.kernel(_stencil2d, jit=jit)
        add = add_counts if jit else tack.kernel(add_counts.__wrapped__, jit=False)
        x = np.arange(6.0)
        double(x, x)                          # in place: every access the iteration's own element
        assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        m = np.arange(12.0).reshape(3, 4)
        double(m[:, 0], m[:, 1])              # two columns of one matrix: apart
        assert m[:, 1].tolist() == [0.0, 8.0, 16.0]
        y = np.arange(8.0)
        double(y[::2], y[1::2])               # interleaved, apart
        assert y.tolist() == [0.0, 0.0, 2.0, 4.0, 4.0, 8.0, 6.0, 12.0]
        big = np.zeros((10, 6))
        u = np.random.default_rng(0).random((4, 6))
        big[:4] = u
        stencil(big[:4], big[5:9], 0.1)       # two blocks of one array that do not meet
        keys = np.array([0, 1, 1, 3])
        h = np.zeros(4, np.int64)
        add(keys, h, h)                       # adds from both into one array commute
        assert h.tolist() == [3, 6, 0, 3]
