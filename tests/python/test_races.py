"""The race check of parallel loops (src/compiler/analysis/depend.c; docs/language.md, "Races").

A CompileError where two iterations surely touch one element and one writes
it, a tack.RaceWarning where they may, silence where the iterations are
provably independent, and tack.independent(range(...)) to say "I know" for
one loop.  The differential tests run kernels with one thread and with many:
a kernel the check passes in silence must give the same answer both ways.
"""
import warnings

import numpy as np
import pytest

import tack

import _suite  # noqa: E402 (tests/python is on the path)


def compile_quietly(kernel, *args):
    """Call the kernel; return the RaceWarnings its compile gave."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        kernel(*args)
    return [w for w in got if issubclass(w.category, tack.RaceWarning)]


def line_of(fn, text):
    """The file line of the first source line of kernel function fn holding text."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    for k, s in enumerate(lines):
        if text in s:
            return first + k
    raise AssertionError(text)


# ------------------------------------------------------------------ errors
def stencil_time_loop(a, b, steps):
    n = a.shape[0]
    for t in range(steps):                # the parallel loop: the steps run at once
        for i in range(1, n - 1):
            b[i] = 0.5 * (a[i - 1] + a[i + 1])
        for i in range(1, n - 1):
            a[i] = b[i]


def test_a_time_loop_at_the_top_is_an_error_that_says_what_to_do():
    k = tack.kernel(stencil_time_loop)
    a, b = np.linspace(0, 1, 64), np.zeros(64)
    with pytest.raises(tack.CompileError) as e:
        k(a, b, 50)
    msg = str(e.value)
    assert "b[i]" in msg and "time loop" in msg
    assert "once per step" in msg and "tack.independent" in msg
    assert e.value.lineno == line_of(stencil_time_loop, "b[i] =")
    assert f"line {line_of(stencil_time_loop, 'for t in')}" in msg


@tack.kernel
def stencil_step(a, b):
    n = a.shape[0]
    for i in range(1, n - 1):
        b[i] = 0.5 * (a[i - 1] + a[i + 1])
    for i in range(1, n - 1):
        a[i] = b[i]


def test_the_time_loop_once_per_step_is_right():
    a0 = np.sin(np.linspace(0, 3, 200))
    a, b = a0.copy(), np.zeros(200)
    for _ in range(50):
        stencil_step(a, b)
    ref = a0.copy()
    for _ in range(50):
        ref[1:-1] = 0.5 * (ref[:-2] + ref[2:])
    np.testing.assert_allclose(a, ref, rtol=0, atol=1e-15)


def inplace_neighbours(a):
    for i in range(1, a.shape[0] - 1):
        a[i] = a[i - 1] + a[i + 1]


def test_in_place_neighbours_are_an_error():
    with pytest.raises(tack.CompileError) as e:
        tack.kernel(inplace_neighbours)(np.ones(10))
    msg = str(e.value)
    assert "writes a[i]" in msg and "reads a[i - 1]" in msg
    assert "iteration i reads the element that iteration i - 1 writes" in msg
    assert "another array" in msg


def max_into_one_cell(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[0] = max(out[0], v)


def test_max_into_one_cell_is_an_error():
    with pytest.raises(tack.CompileError) as e:
        tack.kernel(max_into_one_cell)(np.ones(10), np.zeros(1))
    msg = str(e.value)
    assert "writes out[0]" in msg and "does not depend on the loop variable" in msg
    assert "tack.atomic_max" in msg and "range(1)" in msg
    assert e.value.lineno == line_of(max_into_one_cell, "out[0] =")


def shifted_grid(m):
    for i, j in tack.ndrange(m.shape[0] - 1, m.shape[1]):
        m[i, j] = m[i + 1, j] * 0.5


def test_a_shift_in_an_ndrange_is_an_error():
    with pytest.raises(tack.CompileError, match=r"iteration \(i, j\) reads the element that iteration \(i \+ 1, j\)"):
        tack.kernel(shifted_grid)(np.ones((4, 4)))


def row_sums_by_assignment(x, out):
    for i, j in tack.ndrange(x.shape[0], x.shape[1]):
        out[i] = out[i] + x[i, j]


def test_an_index_missing_one_ndrange_variable_is_an_error():
    with pytest.raises(tack.CompileError) as e:
        tack.kernel(row_sums_by_assignment)(np.ones((3, 4)), np.zeros(3))
    msg = str(e.value)
    assert "differ only in 'j' all write out[i]" in msg and "+= / -=" in msg


@tack.func
def put_first(a, v):
    a[0] = v


def race_through_a_function(x, a):
    for i in range(x.shape[0]):
        put_first(a, x[i])


def test_a_race_inside_a_called_function_is_found():
    with pytest.raises(tack.CompileError, match=r"writes a\[0\]"):
        tack.kernel(race_through_a_function)(np.ones(5), np.zeros(5))


# ----------------------------------------------------------------- silence
@tack.kernel
def histogram(values, bins):
    for i in range(values.shape[0]):
        bins[values[i] % bins.shape[0]] += 1


@tack.kernel
def own_elements(x, out, m):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
        out[i] += 1.0
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[j, i] = m[j, i] * 3.0


@tack.kernel
def rows_in_place(m):
    for i in range(m.shape[0]):
        m[i, 0] *= 2.0
        for j in range(1, m.shape[1]):
            m[i, j] = m[i, j - 1] + m[i, j]


@tack.kernel
def strided(x, out):
    for i in range(2, x.shape[0], 3):
        out[i] = x[i]
    for k in range(x.shape[0] // 2 - 1):   # odd cells from their even neighbours
        x[2 * k + 1] = x[2 * k] + x[2 * k + 2]


@tack.kernel
def first_iteration_only(x, out, flag):
    for i in range(x.shape[0]):
        if i == 0:
            out[0] = x[0] + x[1]
        if x[i] > 2.0:
            flag[0] = 1                  # the same value from every iteration
    for t in range(1):                   # one iteration: serial work
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        out[1] = s


@tack.func
def put(a, i, v):
    a[i] = v


@tack.kernel
def through_a_function(x, a):
    for i in range(x.shape[0]):
        put(a, i, x[i] + 1.0)


@tack.kernel
def flattened(x, out, m):
    n = x.shape[0] // m
    for i, j in tack.ndrange(n, m):
        out[i * m + j] = x[i * m + j] * 2.0
    for i in range(n):
        for j in range(m):
            out[i * m + j] += 1.0
        for j in range(m):
            x[m * i + j] = out[i * m + j] + x[m * i + j]


def flattened_wrong(x, out, m):
    for i, j in tack.ndrange(x.shape[0] // m, m + 1):   # j runs past the row
        out[i * m + j] = x[i]


def test_a_flattened_index_over_its_row_length_is_silent():
    x, out = np.arange(12.0), np.zeros(12)
    assert compile_quietly(flattened, x, out, 4) == []
    np.testing.assert_array_equal(out, 2 * np.arange(12.0) + 1)
    np.testing.assert_array_equal(x, 3 * np.arange(12.0) + 1)
    got = compile_quietly(tack.kernel(flattened_wrong), np.arange(12.0), np.zeros(20), 4)
    assert len(got) == 1 and "out[i * m + j]" in str(got[0].message)


def test_independent_iterations_are_silent():
    x = np.arange(10.0)
    out, m = np.zeros(10), np.ones((3, 3))
    assert compile_quietly(own_elements, x, out, m) == []
    np.testing.assert_array_equal(out, 2 * x + 1)
    bins = np.zeros(3, np.int64)
    assert compile_quietly(histogram, np.arange(30), bins) == []
    assert bins.tolist() == [10, 10, 10]
    r = np.ones((3, 4))
    assert compile_quietly(rows_in_place, r) == []
    np.testing.assert_array_equal(r, [[2, 3, 4, 5]] * 3)
    o = np.zeros(10)
    y = np.arange(10.0)
    assert compile_quietly(strided, y, o) == []
    assert y[1] == 0 + 2 and y[3] == 2 + 4
    out2, flag = np.zeros(2), np.zeros(1, np.int64)
    assert compile_quietly(first_iteration_only, x, out2, flag) == []
    assert out2.tolist() == [1.0, 45.0] and flag[0] == 1
    a = np.zeros(10)
    assert compile_quietly(through_a_function, x, a) == []
    np.testing.assert_array_equal(a, x + 1)


# ---------------------------------------------------------------- warnings
def scatter(x, idx, out):
    for i in range(x.shape[0]):
        out[idx[i]] = x[i]


def halves(x, out):
    for i in range(x.shape[0]):
        out[i // 2] = x[i]


def mirror(a):
    for i in range(a.shape[0]):
        a[i] = a[a.shape[0] - 1 - i]


def test_possible_races_are_warnings_naming_array_index_and_line():
    idx = np.arange(5)[::-1].copy()
    got = compile_quietly(tack.kernel(scatter), np.arange(5.0), idx, np.zeros(5))
    assert len(got) == 1
    w = got[0]
    assert "out[idx[i]]" in str(w.message) and "tack.independent" in str(w.message)
    assert w.lineno == line_of(scatter, "out[idx[i]] =") and w.filename == __file__
    got = compile_quietly(tack.kernel(halves), np.arange(4.0), np.zeros(2))
    assert len(got) == 1 and "out[i // 2]" in str(got[0].message)
    got = compile_quietly(tack.kernel(mirror), np.arange(4.0))
    assert len(got) == 1 and "reads a[a.shape[0] - 1 - i]" in str(got[0].message)


def periodic_neighbours(a, L):
    for i in range(a.shape[0]):
        a[(i - 1) % L] = 2.0 * a[(i + 1) % L]     # an Ising or stencil code's periodic wrap


def squares_mod(out, x):
    for i in range(x.shape[0]):
        out[(i + 1) ** 2 % 3] = x[i]


def test_a_warning_writes_the_index_with_the_parentheses_python_needs():
    # Python's floor modulo is lowered through a temporary: the message printed
    # 'a[i - 1 % L]', an index Python reads as i - (1 % L).
    got = compile_quietly(tack.kernel(periodic_neighbours), np.ones(8), 8)
    assert len(got) == 1 and "a[(i - 1) % L]" in str(got[0].message)
    got = compile_quietly(tack.kernel(squares_mod), np.zeros(3), np.ones(8))
    assert len(got) == 1 and "out[(i + 1) ** 2 % 3]" in str(got[0].message)


@tack.kernel
def by_step(out, s):
    for i in range(0, out.shape[0], s):
        out[i] = 1.0


def shift_by_step(a, s):
    for i in range(1, a.shape[0], s):
        a[i] = a[i - 1]                 # with s == 2 no iteration reads what another writes


def test_a_range_with_a_variable_step_names_its_variable():
    out = np.zeros(7)
    assert compile_quietly(by_step, out, 3) == []
    assert out.tolist() == [1, 0, 0, 1, 0, 0, 1]
    got = compile_quietly(tack.kernel(shift_by_step), np.arange(6.0), 2)
    assert len(got) == 1 and "over 'i'" in str(got[0].message) and "reads a[i - 1]" in str(got[0].message)
    with pytest.raises(tack.CompileError, match="over 'i'.*iteration i reads the element that iteration i - 1"):
        tack.kernel(inplace_neighbours)(np.ones(5))


@tack.kernel
def by_steps_2d(out, s, t):
    for i, j in tack.ndrange((0, out.shape[0], s), (1, out.shape[1], t)):
        out[i, j] = 1.0


def shift_by_steps_2d(a, s):
    for i, j in tack.ndrange((1, a.shape[0], s), a.shape[1]):
        a[i, j] = a[i - 1, j]


def test_ndrange_axes_with_variable_steps_name_their_variables():
    out = np.zeros((5, 4))
    assert compile_quietly(by_steps_2d, out, 2, 2) == []
    want = np.zeros((5, 4))
    want[0::2, 1::2] = 1.0
    np.testing.assert_array_equal(out, want)
    got = compile_quietly(tack.kernel(shift_by_steps_2d), np.ones((6, 3)), 2)
    assert len(got) == 1 and "over 'i', 'j'" in str(got[0].message) and "reads a[i - 1, j]" in str(got[0].message)


def test_race_warning_is_a_user_warning_and_can_be_an_error():
    assert issubclass(tack.RaceWarning, UserWarning)
    k = tack.kernel(scatter)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tack.RaceWarning)
        with pytest.raises(tack.RaceWarning):
            k(np.arange(3.0), np.arange(3), np.zeros(3))


# ----------------------------------------------------------------- opt-out
@tack.kernel
def scatter_known(x, idx, out):
    for i in tack.independent(range(x.shape[0])):
        out[idx[i]] = x[i]


@tack.kernel
def grid_known(m, idx):
    for i, j in tack.independent(tack.ndrange(m.shape[0], m.shape[1])):
        m[idx[i], j] = 1.0 * i


def serial_marked(a):
    for t in range(1):
        for i in tack.independent(range(a.shape[0])):
            a[i] = 1.0


def test_independent_silences_one_loop():
    idx = np.array([2, 0, 1])
    out = np.zeros(3)
    assert compile_quietly(scatter_known, np.arange(3.0), idx, out) == []
    assert out.tolist() == [1.0, 2.0, 0.0]
    m = np.zeros((3, 2))
    assert compile_quietly(grid_known, m, idx) == []
    assert m[:, 0].tolist() == [1.0, 2.0, 0.0]
    assert list(tack.independent(range(3))) == [0, 1, 2]
    assert "independent:" in scatter_known.ir(np.arange(3.0), idx, out)
    assert "independent" not in histogram.ir(np.arange(3), np.zeros(3, np.int64))


def test_independent_also_silences_a_certain_race():
    def chaotic(a):  # the in-place neighbours of inplace_neighbours, marked
        for i in tack.independent(range(1, a.shape[0] - 1)):
            a[i] = a[i - 1] + a[i + 1]
    assert compile_quietly(tack.kernel(chaotic), np.ones(6)) == []


def test_independent_on_a_serial_loop_is_an_error():
    with pytest.raises(tack.CompileError, match="marks a parallel loop"):
        tack.kernel(serial_marked)(np.zeros(3))


def test_the_switch_turns_the_check_off_for_measuring():
    with pytest.raises(tack.CompileError):  # the race analysis refuses it ...
        tack.kernel(max_into_one_cell)(np.ones(4), np.zeros(1))
    with tack.config.override(race_analysis="off"):  # ... and the switch (TACK_RACE_CHECK=0) skips it
        tack.kernel(max_into_one_cell)(np.ones(4), np.zeros(1))


# ---------------------------------------------------------- differential
def run_with_threads(threads):
    """The silent kernels of this file on `threads` threads (tack.config.num_threads:
    the next launch runs on them), on the same inputs each time."""
    r = np.random.default_rng(3)
    n = 100_003
    with tack.config.override(num_threads=threads), warnings.catch_warnings():
        warnings.simplefilter("error", tack.RaceWarning)
        assert tack._core.device_threads("cpu") == threads
        x = r.standard_normal(n)
        out, m = np.zeros(n), r.standard_normal((300, 300))
        own_elements(x, out, m)
        bins = np.zeros(7, np.int64)
        histogram(r.integers(0, 1000, n), bins)
        rows = r.standard_normal((500, 60))
        rows_in_place(rows)
        y, o = r.standard_normal(n), np.zeros(n)
        strided(y, o)
        o2, flag = np.zeros(2), np.zeros(1, np.int64)
        first_iteration_only(x, o2, flag)
        a = np.zeros(n)
        through_a_function(x, a)
    return dict(out=out, m=m, bins=bins, rows=rows, y=y, o=o, o2=o2, flag=flag, a=a)


def test_silent_kernels_give_the_same_bits_on_one_thread_and_many():
    one = run_with_threads(1)
    many = run_with_threads(8)
    for k in one:
        np.testing.assert_array_equal(one[k], many[k], err_msg=k)


def test_warning_free_language_kernels_agree_on_one_thread_and_many():
    """Each test of the language suites checks its kernels' results against
    Python or NumPy; in the suite's two runs of its own (_suite.RUNS: the
    watched run, optimized, on eight threads; the unoptimized run on one
    thread), every test whose kernels compiled without a RaceWarning must
    pass both times.  A test marked watched_differs inspects what the watched
    run's plugins change (the kernel object, what it prints): it must pass on
    one thread, and (under make test-all, where every call is repeated on
    OpenCL) must fail in the watched run, or lose the mark."""
    many = _suite.result("watched")["_outcomes"]
    one = _suite.result("unoptimized")["_outcomes"]
    both = one.keys() & many.keys()
    assert len(both) > 1000
    quiet = [t for t in sorted(both) if not one[t]["race"] and not many[t]["race"]]
    bad = [t for t in quiet if not one[t]["ok"] or not (many[t]["ok"] or many[t]["watched_differs"])]
    assert bad == [], "fail on one thread or on eight (a test that fails only under the watching " \
        "plugins, for what they change, is marked watched_differs):\n" + "\n".join(bad[:20])
    marked, failed = set(), set()
    for t, o in many.items():  # a parametrized test is marked as a whole
        if o["watched_differs"]:
            marked.add(t.split("[")[0])
            if not o["ok"]:
                failed.add(t.split("[")[0])
    stale = sorted(marked - failed)
    if not _suite.TEST_ALL:
        # under make test the watched run repeats on OpenCL only the calls whose source is in
        # its half (_suite.HALVES), so a marked test whose kernels are in the other half passes
        # there; make test-all repeats every call and checks the marks
        return
    assert stale == [], "marked watched_differs but passed in the watched run: take the mark off\n" + \
        "\n".join(stale[:20])
