"""The run-time race detector (check_races; docs/language.md, "Races").

The compiler's race check can only warn (tack.RaceWarning) where the data
decides whether two iterations meet: ``out[idx[i]] = x[i]``.  A kernel
compiled with check_races=True runs those loops with every access to the
arrays they write recorded in shadow memory, and the first two iterations
that touch one element, one of them writing it, raise tack.RaceError naming
the array, the element, both iterations and both lines.  The same kernel on
data without such a pair gives NumPy's answer; atomic updates never
conflict with each other; a kernel built without the option is the code it
always was.  Accesses inside @tack.func functions the loop calls are watched
too (each function a watched copy, told the iteration and its caller's
arrays), and debug mode (jit=False) runs the same detector: the same
kernels flagged, with the same message.
"""
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.filterwarnings("ignore::tack.RaceWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
FILE = os.path.abspath(__file__)


def line_of(fn, text):
    fn = getattr(fn, "__wrapped__", fn)
    lines, first = inspect.getsourcelines(fn)
    for k, s in enumerate(lines):
        if text in s:
            return first + k
    raise AssertionError(text)


def scatter(out, idx, x):
    for i in range(x.shape[0]):
        out[idx[i]] = x[i]


def double_through(a, idx):
    for i in range(a.shape[0]):
        v = a[i] * 2
        a[idx[i]] = v


def count(out, idx):
    for i in range(idx.shape[0]):
        out[idx[i]] += 1


checked_scatter = tack.kernel(scatter, check_races=True)
plain_scatter = tack.kernel(scatter, check_races=False)
checked_double = tack.kernel(double_through, check_races=True)


def where(fn, text):
    return f"{FILE}:{line_of(fn, text)}"


# ------------------------------------------------------------------ races found
def test_two_iterations_writing_one_element_raise_naming_both_and_the_line():
    out, idx, x = np.zeros(8), np.array([3, 1, 4, 1, 5]), np.arange(5.0)
    with pytest.raises(tack.RaceError) as e:
        checked_scatter(out, idx, x)
    msg = str(e.value)
    assert isinstance(e.value, RuntimeError)
    assert "kernel 'scatter'" in msg
    assert "iteration i=1 writes out[1]" in msg and "iteration i=3 writes it" in msg
    assert msg.count(f"{where(scatter, 'out[idx[i]] =')}: out[idx[i]]") == 2
    assert f"parallel loop over 'i' ({where(scatter, 'for i in')})" in msg


def test_a_read_of_what_another_iteration_writes_names_both_lines():
    a, idx = np.arange(6.0), np.array([1, 0, 2, 3, 4, 5])
    with pytest.raises(tack.RaceError) as e:
        checked_double(a, idx)
    msg = str(e.value)
    read, write = where(double_through, "v = a[i]"), where(double_through, "a[idx[i]] = v")
    assert "iteration i=0 writes a[1]" in msg and "iteration i=1 reads it" in msg
    assert f"({write}: a[idx[i]])" in msg and f"({read}: a[i])" in msg


def test_the_one_racing_pair_is_found_among_many_iterations_on_every_thread():
    n = 200_000  # the pool splits it over its threads
    idx = np.arange(n)
    idx[150_001] = 123
    with pytest.raises(tack.RaceError) as e:
        checked_scatter(np.zeros(n), idx, np.ones(n))
    assert "iteration i=123 writes out[123]" in str(e.value)
    assert "iteration i=150001 writes it" in str(e.value)


@tack.kernel(check_races=True)
def grid_scatter(out, rows, x):
    for i, j in tack.ndrange(x.shape[0], x.shape[1]):
        out[rows[i], j] = x[i, j]


def test_an_ndrange_names_every_variable_and_the_element_by_its_indices():
    x = np.ones((4, 3))
    with pytest.raises(tack.RaceError) as e:
        grid_scatter(np.zeros((5, 3)), np.array([0, 2, 4, 2]), x)
    assert "iteration i=1, j=0 writes out[2, 0]" in str(e.value)
    assert "iteration i=3, j=0 writes it" in str(e.value)
    assert "parallel loop over 'i', 'j'" in str(e.value)


@tack.kernel(check_races=True)
def odd_scatter(out, idx, x):
    for i in range(1, x.shape[0], 2):
        out[idx[i]] = x[i]


def test_a_stepped_loop_names_its_variable_by_its_value():
    idx = np.array([0, 7, 0, 2, 0, 7, 0])
    with pytest.raises(tack.RaceError) as e:
        odd_scatter(np.zeros(8), idx, np.ones(7))
    assert "iteration i=1 writes out[7]" in str(e.value) and "iteration i=5 writes it" in str(e.value)


def test_a_strided_view_names_the_element_of_the_view():
    base = np.zeros(16)
    with pytest.raises(tack.RaceError) as e:
        checked_scatter(base[::-2], np.array([2, 0, 2]), np.ones(3))
    assert "writes out[2]" in str(e.value)


@tack.kernel(check_races=True)
def vouched(out, idx, x):
    for i in tack.independent(range(x.shape[0])):
        out[idx[i]] = x[i]


def test_a_loop_tack_independent_vouches_for_is_checked_too():
    with pytest.raises(tack.RaceError, match=r"i=0 writes out\[2\].*i=2 writes it"):
        vouched(np.zeros(4), np.array([2, 1, 2]), np.ones(3))
    out = np.zeros(4)
    vouched(out, np.array([2, 1, 3]), np.array([1.0, 2.0, 3.0]))
    assert out.tolist() == [0.0, 2.0, 1.0, 3.0]


@tack.kernel(check_races=True)
def bump_and_read(out, seen, idx):
    for i in range(idx.shape[0]):
        tack.atomic_add(out, idx[i], 1)
        seen[i] = out[i]


def test_an_atomic_update_and_a_plain_read_of_one_element_conflict():
    with pytest.raises(tack.RaceError, match=r"i=0 updates atomically out\[1\].*i=1 reads it"):
        bump_and_read(np.zeros(3, np.int64), np.zeros(3, np.int64), np.array([1, 2, 0]))


# ------------------------------------------------------------------ no race
def test_the_same_kernels_on_data_without_a_racing_pair_give_numpys_answer():
    rng = np.random.default_rng(5)
    n = 100_000
    idx, x = rng.permutation(n), rng.standard_normal(n)
    out = np.zeros(n)
    checked_scatter(out, idx, x)
    ref = np.zeros(n)
    ref[idx] = x
    assert np.array_equal(out, ref)
    a = np.arange(10.0)
    checked_double(a, np.arange(10))
    assert np.array_equal(a, np.arange(10.0) * 2)


def test_a_race_free_run_gives_what_the_uninstrumented_kernel_gives():
    rng = np.random.default_rng(7)
    n = 50_000
    idx, x = rng.permutation(n), rng.integers(0, 1000, n).astype(np.int64)
    a, b = np.zeros(n, np.int64), np.zeros(n, np.int64)
    checked_scatter(a, idx, x)
    plain_scatter(b, idx, x)
    assert np.array_equal(a, b)


@tack.kernel(check_races=True)
def tallies(n, hi, lo, idx, x):
    for i in tack.independent(range(x.shape[0])):  # watched: the detector checks the claim
        n[idx[i]] += 1
        tack.atomic_max(hi, idx[i], x[i])
        tack.atomic_min(lo, idx[i], x[i])


def test_atomic_updates_never_conflict_with_each_other():
    idx = np.array([1, 1, 1, 2, 1, 0, 2] * 3000)
    x = np.arange(idx.size, dtype=np.float64) % 17 - 8
    n, hi, lo = np.zeros(3, np.int64), np.full(3, -np.inf), np.full(3, np.inf)
    assert tallies.generated_source(n, hi, lo, idx, x).count("tk_rc_acc(rc_") == 3
    tallies(n, hi, lo, idx, x)
    assert n.tolist() == np.bincount(idx).tolist()
    for k in range(3):
        assert hi[k] == x[idx == k].max() and lo[k] == x[idx == k].min()


# ------------------------------------------------------------------ no cost when off
@tack.kernel
def stencil(a, b):
    for i in range(1, a.shape[0] - 1):
        b[i] = a[i - 1] + a[i + 1]


def test_a_kernel_without_the_option_has_none_of_the_detector():
    out, idx, x = np.zeros(8), np.array([1, 2, 3]), np.ones(3)
    assert "tk_rc" not in plain_scatter.generated_source(out, idx, x)
    src = checked_scatter.generated_source(out, idx, x)
    assert "tk_rc_acc(rc_" in src
    # a loop the compiler proves race-free is not watched: the same code either way
    s2 = tack.kernel(stencil.__wrapped__, check_races=True)
    a, b = np.ones(16), np.zeros(16)
    assert s2.generated_source(a, b) == stencil.generated_source(a, b)


# ------------------------------------------------------------------ the switches
def test_the_process_switch_sets_the_kernels_defined_after_it_and_the_option_wins():
    assert tack.get_check_races() is False
    try:
        tack.set_check_races(True)
        on = tack.kernel(scatter)
        off = tack.kernel(scatter, check_races=False)
    finally:
        tack.set_check_races(False)
    assert on.check_races and not off.check_races
    assert not tack.kernel(scatter).check_races
    with pytest.raises(tack.RaceError):
        on(np.zeros(4), np.array([1, 1]), np.ones(2))
    off(np.zeros(4), np.array([1, 1]), np.ones(2))  # unwatched: no error
    with pytest.raises(TypeError):
        tack.set_check_races(1)
    with pytest.raises(TypeError):
        tack.kernel(scatter, check_races="yes")


def test_the_environment_variable_turns_it_on_at_import(tmp_path):
    code = ("import tack, numpy as np, warnings; warnings.simplefilter('ignore')\n"
            "@tack.kernel\n"
            "def k(out, idx):\n"
            "    for i in range(idx.shape[0]):\n"
            "        out[idx[i]] = i\n"
            "print(tack.get_check_races(), k.check_races)\n"
            "try:\n"
            "    k(np.zeros(3), np.array([0, 0]))\n"
            "except tack.RaceError as e:\n"
            "    print('RaceError', 'i=0' in str(e) and 'i=1' in str(e))\n")
    script = tmp_path / "env_races.py"
    script.write_text(code)
    env = dict(os.environ, TACK_CHECK_RACES="1")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "True", "RaceError", "True"], r.stderr
    env["TACK_CHECK_RACES"] = "yes"
    r = subprocess.run([sys.executable, "-c", "import tack"], env=env, capture_output=True, text=True, timeout=120)
    assert "TACK_CHECK_RACES must be 0 or 1" in r.stderr


def test_a_gpu_dialect_refuses_it():
    out, idx, x = np.zeros(8), np.array([1, 2]), np.ones(2)
    for target in ("cuda", "opencl"):
        with pytest.raises(tack.CompileError, match="check_races runs on the CPU"):
            checked_scatter.generated_source(out, idx, x, target=target)
    assert "tk_rc" not in plain_scatter.generated_source(out, idx, x, target="cuda")


# ------------------------------------------------------------------ @tack.func
@tack.func
def put(a, k, v):
    a[k] = v


@tack.func
def put_twice_removed(b, k, v):
    put(b, k, v)


@tack.func
def get(a, k):
    return a[k]


@tack.func
def bump(a, k):
    a[k] += 1


def scatter_through(out, idx, x):
    for i in range(x.shape[0]):
        put(out, idx[i], x[i])


def scatter_deeper(out, idx, x):
    for i in range(x.shape[0]):
        put_twice_removed(out, idx[i], x[i])


def double_through_get(a, idx):
    for i in range(idx.shape[0]):
        v = get(a, i) * 2
        a[idx[i]] = v


def count_through(out, idx):
    for i in range(idx.shape[0]):
        bump(out, idx[i])


@tack.func
def add_at(a, k, v):
    tack.atomic_add(a, k, v)


def count_and_peek(h, y, idx):
    for i in range(idx.shape[0]):
        add_at(h, idx[i], 1)
        y[i] = get(h, i)


def running_max(m, y, idx, x):
    for i in range(x.shape[0]):
        if x[i] > m[0]:  # an atomic max of m[0]
            m[0] = x[i]
        y[i] = m[idx[i]]


def own_update(a, idx):
    for i in range(a.shape[0]):
        a[i] *= a[idx[i]]  # a read and a write of the iteration's own a[i], and a read of a[idx[i]]


def grid_update(m, rows):
    for i, j in tack.ndrange(rows.shape[0], m.shape[1]):
        m[rows[i], j] += 1.0
        m[i, j] = 2.0


def with_local_array(out, idx, x):
    for i in range(x.shape[0]):
        t = tack.zeros(2)
        put(t, 0, x[i])  # the iteration's own array: nothing to watch
        put(out, idx[i], t[0])


checked_through = tack.kernel(scatter_through, check_races=True)


def test_a_racy_write_through_a_function_is_found_at_the_functions_line():
    out, idx, x = np.zeros(8), np.array([3, 1, 4, 1, 5]), np.arange(5.0)
    with pytest.raises(tack.RaceError) as e:
        checked_through(out, idx, x)
    msg = str(e.value)
    assert "kernel 'scatter_through'" in msg
    assert "iteration i=1 writes out[1]" in msg and "iteration i=3 writes it" in msg
    assert msg.count(f"({where(put, 'a[k] = v')}: a[k] in put())") == 2, msg
    assert f"parallel loop over 'i' ({where(scatter_through, 'for i in')})" in msg
    # two calls deep, and the caller's argument named by the function's parameter
    with pytest.raises(tack.RaceError, match=r"i=0 writes out\[2\].*i=2 writes it") as e:
        tack.kernel(scatter_deeper, check_races=True)(np.zeros(4), np.array([2, 1, 2]), np.ones(3))
    assert f"({where(put, 'a[k] = v')}: a[k] in put())" in str(e.value)


def test_a_read_in_a_function_of_what_another_iteration_writes_is_found():
    # one pair meets (i=1 writes a[0], which i=0 reads), whichever thread runs which
    with pytest.raises(tack.RaceError) as e:
        tack.kernel(double_through_get, check_races=True)(np.arange(8.0), np.array([5, 0, 6]))
    msg = str(e.value)
    assert "iteration i=0 reads a[0]" in msg and "iteration i=1 writes it" in msg
    assert f"({where(get, 'return a[k]')}: a[k] in get())" in msg
    assert f"({where(double_through_get, 'a[idx[i]] = v')}: a[idx[i]])" in msg


def test_functions_without_a_race_give_numpys_answer():
    rng = np.random.default_rng(3)
    idx, x = rng.permutation(1000), rng.standard_normal(1000)
    out = np.zeros(1000)
    checked_through(out, idx, x)
    ref = np.zeros(1000)
    ref[idx] = x
    assert np.array_equal(out, ref)
    a = np.arange(8.0)
    tack.kernel(double_through_get, check_races=True)(a, np.array([5, 6, 7]))
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 2.0, 4.0]
    # += in a function called from the loop is atomic: counts never conflict
    n, idx = np.zeros(3, np.int64), np.array([1, 1, 2, 1, 0] * 100)
    tack.kernel(count_through, check_races=True)(n, idx)
    assert n.tolist() == np.bincount(idx).tolist()
    # a function given the iteration's own local array: that array is not watched
    out = np.zeros(4)
    tack.kernel(with_local_array, check_races=True)(out, np.array([3, 0, 2]), np.array([1.0, 2.0, 3.0]))
    assert out.tolist() == [2.0, 0.0, 3.0, 1.0]
    with pytest.raises(tack.RaceError, match=r"i=0 writes out\[3\].*i=1 writes it"):
        tack.kernel(with_local_array, check_races=True)(np.zeros(4), np.array([3, 3]), np.ones(2))


def test_a_function_gets_a_watched_copy_only_where_a_watched_loop_calls_it():
    args = (np.zeros(8), np.array([1, 2]), np.ones(2))
    plain = tack.kernel(scatter_through).generated_source(*args)
    assert not re.search(r"tk_w\d", plain) and "tk_rc" not in plain
    src = checked_through.generated_source(*args)
    assert src.count("tk_rc_facc(rc_, ctx, abi, rcp0_,") == 1  # a[k] = v, in the watched copy
    assert "tk_w1(ctx, abi, rc_, rc_me_, 0, a0" in src  # the loop's call: the kernel's array 0
    assert "tk_f1(ctx, abi, a0" not in src


def _nested(tmp_path, depth):
    """A kernel whose loop writes through `depth` nested @tack.func calls."""
    code = "import tack\n@tack.func\ndef f0(a, k):\n    a[k] = 1.0\n"
    for d in range(1, depth):
        code += f"@tack.func\ndef f{d}(a, k):\n    f{d - 1}(a, k)\n"
    code += f"def nested(out, idx):\n    for i in range(idx.shape[0]):\n        f{depth - 1}(out, idx[i])\n"
    path = tmp_path / f"nested{depth}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(f"nested{depth}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.nested


def test_calls_nested_deeper_than_the_race_check_follows_are_refused(tmp_path):
    deep = _nested(tmp_path, 10)
    with pytest.raises(tack.CompileError, match="follows @tack.func calls nested at most 8 deep"):
        tack.kernel(deep, check_races=True)(np.zeros(4), np.array([0, 1]))
    # without the detector, the race check says it could not look (it once passed such a loop in silence)
    with pytest.warns(tack.RaceWarning, match="does not follow @tack.func calls nested more than 8 deep"):
        tack.kernel(deep)(np.zeros(4), np.array([0, 1]))
    with pytest.raises(tack.RaceError, match="i=0 writes out\\[1\\].*a\\[k\\] in f0"):
        tack.kernel(_nested(tmp_path, 8), check_races=True)(np.zeros(4), np.array([1, 1]))


# ------------------------------------------------------------------ debug mode
def test_debug_mode_runs_the_same_detector():
    k = tack.kernel(scatter, jit=False, check_races=True)
    with pytest.raises(tack.RaceError) as e:
        k(np.zeros(8), np.array([3, 1, 4, 1, 5]), np.arange(5.0))
    with pytest.raises(tack.RaceError) as c:
        checked_scatter(np.zeros(8), np.array([3, 1, 4, 1, 5]), np.arange(5.0))
    assert str(e.value) == str(c.value)
    out = np.zeros(4)
    k(out, np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0]))  # no race: the serial answer
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    tack.kernel(scatter, jit=False)(np.zeros(4), np.array([1, 1]), np.ones(2))  # not watched: no error


def _both(fn, make):
    """fn run with check_races compiled and as Python: (error message or None, arrays) each."""
    got = []
    for jit in (True, False):
        args = make()
        try:
            tack.kernel(fn, jit=jit, check_races=True)(*args)
            got.append((None, [a.copy() for a in args if isinstance(a, np.ndarray)]))
        except tack.RaceError as e:
            got.append((str(e), None))
    return got


def _unwrap(k):
    return getattr(k, "__wrapped__", k)


# Each racy case has one pair of accesses that meet: a loop that calls a
# function is split over the threads from two iterations, and of several
# pairs the compiled kernel names the one its threads meet first.
BOTH_WAYS = [
    (scatter, lambda: (np.zeros(8), np.array([3, 1, 4, 1, 5]), np.arange(5.0)), True),
    (scatter, lambda: (np.zeros(8), np.array([3, 1, 4, 0, 5]), np.arange(5.0)), False),
    (double_through, lambda: (np.arange(6.0), np.array([1, 0, 2, 3, 4, 5])), True),
    (double_through, lambda: (np.arange(6.0), np.arange(6)), False),
    (count, lambda: (np.zeros(4, np.int64), np.array([1, 1, 3, 1])), False),
    (_unwrap(grid_scatter), lambda: (np.zeros((5, 3)), np.array([0, 2, 4, 2]), np.ones((4, 3))), True),
    (_unwrap(grid_scatter), lambda: (np.zeros((5, 3)), np.array([0, 2, 4, 1]), np.ones((4, 3))), False),
    (_unwrap(odd_scatter), lambda: (np.zeros(8), np.array([0, 7, 0, 2, 0, 7, 0]), np.ones(7)), True),
    (_unwrap(odd_scatter), lambda: (np.zeros(8), np.array([0, 7, 0, 2, 0, 6, 0]), np.ones(7)), False),
    (scatter, lambda: (np.zeros(16)[::-2], np.array([2, 0, 2]), np.ones(3)), True),
    (scatter, lambda: (np.zeros(16)[::-2], np.array([2, 0, -1]), np.ones(3)), False),
    (scatter, lambda: (np.zeros(8), np.array([-1, 7]), np.ones(2)), True),  # one element, by two names
    (_unwrap(vouched), lambda: (np.zeros(4), np.array([2, 1, 2]), np.ones(3)), True),
    (_unwrap(vouched), lambda: (np.zeros(4), np.array([2, 1, 3]), np.array([1.0, 2.0, 3.0])), False),
    (_unwrap(bump_and_read), lambda: (np.zeros(3, np.int64), np.zeros(3, np.int64), np.array([1, 2, 0])), True),
    (_unwrap(bump_and_read), lambda: (np.zeros(3, np.int64), np.zeros(3, np.int64), np.array([0, 1, 2])), False),
    (_unwrap(tallies), lambda: (np.zeros(3, np.int64), np.full(3, -np.inf), np.full(3, np.inf),
                                np.array([1, 1, 1, 2, 1, 0, 2] * 3), np.arange(21.0) % 5 - 2), False),
    (_unwrap(stencil), lambda: (np.arange(8.0), np.zeros(8)), False),
    (scatter_through, lambda: (np.zeros(8), np.array([3, 1, 4, 1, 5]), np.arange(5.0)), True),
    (scatter_deeper, lambda: (np.zeros(4), np.array([2, 1, 2]), np.ones(3)), True),
    (scatter_deeper, lambda: (np.zeros(4), np.array([2, 1, 0]), np.ones(3)), False),
    (double_through_get, lambda: (np.arange(8.0), np.array([5, 0, 6])), True),
    (double_through_get, lambda: (np.arange(8.0), np.array([5, 6, 7])), False),
    (count_through, lambda: (np.zeros(3, np.int64), np.array([1, 1, 2, 1, 0])), False),
    (count_and_peek, lambda: (np.zeros(8, np.int64), np.zeros(4, np.int64), np.array([5, 5, 6, 1])), True),
    (count_and_peek, lambda: (np.zeros(8, np.int64), np.zeros(4, np.int64), np.array([5, 5, 6, 7])), False),
    (running_max, lambda: (np.zeros(2), np.zeros(4), np.array([1, 1, 1, 1]), np.array([1.0, 3.0, 2.0, 5.0])), False),
    (running_max, lambda: (np.zeros(2), np.zeros(4), np.array([1, 1, 1, 0]), np.array([1.0, 3.0, 2.0, 5.0])), True),
    (own_update, lambda: (np.arange(1.0, 6.0), np.arange(5)), False),
    (own_update, lambda: (np.arange(1.0, 6.0), np.array([1, 1, 2, 3, 4])), True),
    (grid_update, lambda: (np.zeros((4, 2)), np.array([3, 3, 3])), False),
    (grid_update, lambda: (np.zeros((4, 2)), np.array([3, 3, 0])), True),
    (with_local_array, lambda: (np.zeros(4), np.array([3, 0, 2]), np.array([1.0, 2.0, 3.0])), False),
    (with_local_array, lambda: (np.zeros(4), np.array([3, 3]), np.ones(2)), True),
]


@pytest.mark.parametrize("fn,make,racy", BOTH_WAYS, ids=[f"{f.__name__}-{k}" for k, (f, _, _) in enumerate(BOTH_WAYS)])
def test_the_same_kernels_are_flagged_compiled_and_as_python(fn, make, racy):
    (cmsg, cout), (pmsg, pout) = _both(fn, make)
    assert (cmsg is not None) == racy, cmsg
    assert cmsg == pmsg
    if cmsg is None:
        assert all(np.array_equal(c, p) for c, p in zip(cout, pout))
