"""NumPy arrays passed to a kernel are read from the array object itself (src/python/
array_ndarray.c) once the buffer protocol has shown that reading right; every array that does not
qualify (not C-contiguous, read-only, warning on write, misaligned, a dtype the buffer protocol has
not mapped) still goes the buffer protocol's way.  The tests here hold the two ways to the same
results, errors and warnings, check the switch's state, and the references the fast path takes."""

import gc
import re
import sys
import warnings
import weakref

import numpy as np
import pytest

import tack
from tack import _core


@tack.kernel
def add_one(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1


@tack.kernel
def copy_into(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@tack.kernel
def scale2(m, a):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[i, j] = m[i, j] * a


@tack.kernel
def total3(t, out):
    for i in range(1):
        s = 0.0
        for a in range(t.shape[0]):
            for b in range(t.shape[1]):
                for c in range(t.shape[2]):
                    s += t[a, b, c]
        out[0] = s


@pytest.fixture
def fresh():
    """The fast path forgotten before and after the test (unchecked, no dtypes known)."""
    _core._ndarray_path(-1)
    yield
    _core._ndarray_path(-1)


def _outcome(fn):
    """What fn does: its result or its exception's type and message, and its warnings."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - the outcome compared is any exception
            r = ("raised", type(e).__name__, re.sub(r"0x[0-9a-f]+", "0x...", str(e)))
    return r, [(type(x.message).__name__, str(x.message)) for x in w]


def _both(make, call):
    """call(make()) with the fast path on (learned) and off; both outcomes and arrays."""
    _core._ndarray_path(-1)
    warm = np.zeros(4, np.float64)
    add_one(warm)  # the first NumPy array checks the layout: the fast path is on after it
    a = make()
    on = _outcome(lambda: call(a)), a
    _core._ndarray_path(0)
    b = make()
    off = _outcome(lambda: call(b)), b
    _core._ndarray_path(-1)
    return on, off


DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
          np.uint16, np.uint32, np.uint64, np.complex64, np.complex128]


@pytest.mark.parametrize("dt", DTYPES)
def test_every_dtype_the_same_both_ways(fresh, dt):
    def make():
        return np.arange(7).astype(dt)
    (on, a), (off, b) = _both(make, lambda x: (add_one(x), add_one(x)))
    assert on == off
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, (np.arange(7) + 2).astype(dt))
    state, names = _core._ndarray_path()
    assert state == -1 and names == ()


def test_the_first_array_turns_it_on_and_each_dtype_is_learned_once(fresh):
    assert _core._ndarray_path() == (-1, ())
    x = np.zeros(5, np.float32)
    add_one(x)
    assert _core._ndarray_path() == (1, ("f32",))
    for _ in range(3):
        add_one(x)
    add_one(np.zeros(3, np.int64))
    assert _core._ndarray_path() == (1, ("f32", "i64"))
    np.testing.assert_array_equal(x, 4)


def test_off_stays_off(fresh):
    _core._ndarray_path(0)
    x = np.zeros(5)
    add_one(x)
    assert _core._ndarray_path() == (0, ())
    np.testing.assert_array_equal(x, 1)
    with pytest.raises(ValueError, match="state is 0 or -1, not 1"):
        _core._ndarray_path(1)


MAKERS = {
    "2-D": lambda: np.arange(12.0).reshape(3, 4),
    "0-d": lambda: np.array(5.0),
    "empty": lambda: np.zeros(0),
    "empty 2-D": lambda: np.zeros((3, 0)),
    "size-1 axes": lambda: np.arange(6.0).reshape(1, 6, 1)[:, :, 0],
    "Fortran order": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "a column": lambda: np.arange(12.0).reshape(3, 4)[:, 1],
    "reversed": lambda: np.arange(6.0)[::-1],
    "read-only": lambda: _readonly(np.arange(4.0)),
    "broadcast": lambda: np.broadcast_arrays(np.arange(4.0), np.zeros((2, 4)))[0],
    # C-contiguous (its one row's stride is 0), and NumPy warns when it is written
    "broadcast, contiguous": lambda: np.broadcast_arrays(np.arange(4.0), np.zeros((1, 4)))[0],
    "byte-swapped": lambda: np.arange(4.0).astype(">f8"),
    "misaligned": lambda: np.frombuffer(bytearray(8 * 4 + 1), np.float64, count=4, offset=1),
    "structured": lambda: np.zeros(3, [("a", np.float64), ("b", np.int32)]),
    "object": lambda: np.array([1.0, None], dtype=object),
    "bool": lambda: np.array([True, False, True]),
}


def _readonly(a):
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_arrays_that_do_not_qualify_behave_as_before(fresh, kind):
    make = MAKERS[kind]
    ndim = make().ndim

    def call(x):
        if ndim == 2:
            return scale2(x, 3.0)
        if ndim == 1 and x.dtype != np.bool_:
            return add_one(x)
        out = np.zeros(max(x.size, 1), x.dtype if x.dtype != object else np.float64)
        return copy_into(x.reshape(-1) if x.ndim else x.reshape(1), out) if x.dtype != object else copy_into(x, out)
    (on, a), (off, b) = _both(make, call)
    assert on == off, kind
    if a.dtype != object:
        np.testing.assert_array_equal(a, b)


def test_a_read_only_array_is_read_but_not_written(fresh):
    x = _readonly(np.arange(4.0))
    out = np.zeros(4)
    add_one(np.zeros(2))  # the fast path on
    copy_into(x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(ValueError, match="read-only"):
        add_one(x)


def test_no_reference_is_kept_or_lost(fresh):
    x = np.zeros(100, np.float32)
    add_one(x)  # learn
    before = sys.getrefcount(x), sys.getrefcount(x.dtype)
    for _ in range(200):
        add_one(x)
    assert (sys.getrefcount(x), sys.getrefcount(x.dtype)) == before
    r = weakref.ref(x)
    del x
    gc.collect()
    assert r() is None  # the kernel does not keep the array alive


def test_the_array_is_read_again_at_every_call(fresh):
    x = np.zeros(12)
    add_one(x)
    x.shape = (3, 4)  # the same memory, another shape
    scale2(x, 2.0)
    np.testing.assert_array_equal(x, 2)
    y = np.zeros(4)
    add_one(y)
    y.resize(1000, refcheck=False)  # new memory
    add_one(y)
    np.testing.assert_array_equal(y[:4], 2)
    np.testing.assert_array_equal(y[4:], 1)
    x3 = np.arange(24.0).reshape(2, 3, 4)
    out = np.zeros(1)
    total3(x3, out)
    assert out[0] == x3.sum()


def test_more_dtypes_than_it_keeps(fresh):
    # dtype objects with metadata are distinct objects of the same dtype: past the ones it keeps,
    # the rest go the buffer protocol's way, with the same results
    xs = [np.zeros(3, np.dtype(np.float64, metadata={"k": k})) for k in range(40)]
    for x in xs:
        add_one(x)
        add_one(x)
    for x in xs:
        np.testing.assert_array_equal(x, 2)
    state, names = _core._ndarray_path()
    assert state == 1 and 1 <= len(names) <= 16


def test_a_subclass_takes_the_buffer_protocol(fresh):
    m = np.zeros(4).view(type("Sub", (np.ndarray,), {}))
    add_one(np.zeros(2))
    add_one(m)
    np.testing.assert_array_equal(m, 1)


# ---- the borrowed handles kept between calls (tack_array_recycle / tack_array_rewrap) -----------
# After a call, the handle that borrowed a NumPy array is kept, emptied, when nothing else holds it,
# and the next NumPy argument refills it; _core._ndarray_spares() says how many it may keep and
# keeps, and _ndarray_spares(0) makes every call wrap and free (the old way), for comparison.

@tack.kernel
def add4(a, b, c, d):
    for i in range(d.shape[0]):
        d[i] = a[i] + b[i] + c[i] + d[i]


@pytest.fixture(params=[16, 0], ids=["kept", "not kept"])
def spares(request, fresh):
    most = _core._ndarray_spares()[0]
    _core._ndarray_spares(request.param)
    yield request.param
    _core._ndarray_spares(most)


def _refs(arrays):
    return [sys.getrefcount(a) for a in arrays]


def test_handles_are_kept_only_up_to_the_limit(fresh):
    most = _core._ndarray_spares()[0]
    try:
        _core._ndarray_spares(0)  # none kept: the earlier tests' handles freed
        _core._ndarray_spares(16)
        xs = [np.zeros(3) for _ in range(4)]
        add4(*xs)
        add4(*xs)
        assert _core._ndarray_spares() == (16, 4)  # the four handles of the last call, emptied
        _core._ndarray_spares(2)
        assert _core._ndarray_spares() == (2, 2)
        add4(*xs)
        assert _core._ndarray_spares() == (2, 2)
        _core._ndarray_spares(0)
        assert _core._ndarray_spares() == (0, 0)
        add4(*xs)
        assert _core._ndarray_spares() == (0, 0)
        np.testing.assert_array_equal(xs[3], [0, 0, 0])
        with pytest.raises(ValueError, match="most is 0 to 16, not 17"):
            _core._ndarray_spares(17)
    finally:
        _core._ndarray_spares(most)


def test_no_reference_is_kept_or_lost_over_many_calls(spares):
    # one array and four, the same ones and different ones at each call, of several dtypes and
    # shapes; and calls that fail after some of their arrays were borrowed
    xs = [np.zeros(5, dt) for dt in (np.float64, np.float32, np.int32, np.int64)]
    ms = [np.zeros((2, 3)) for _ in range(3)]
    ro = _readonly(np.zeros(5))
    for x in xs:
        add_one(x)  # every dtype learned (a reference to its dtype object kept): before the counts
    everything = xs + ms + [ro]
    dtypes = [np.dtype(dt) for dt in (np.float64, np.float32, np.int32, np.int64)]
    before, dbefore = _refs(everything), _refs(dtypes)
    for n in range(300):
        add_one(xs[n % 4])
        add4(xs[0], xs[0], xs[0], xs[0]) if n % 3 else add4(*[x.astype(np.float64) for x in xs])
        scale2(ms[n % 3], 1.0)
        copy_into(ro, xs[0])  # a read-only array (the buffer protocol's) beside a kept handle
        with pytest.raises(ValueError, match="read-only"):
            add4(xs[0], xs[0], xs[0], ro)  # refused after all four were borrowed
        with pytest.raises(TypeError):
            copy_into(xs[0], "not an array")  # refused at the second argument, the first borrowed
    assert _refs(everything) == before
    assert _refs(dtypes) == dbefore
    assert (_core._ndarray_spares()[1] >= 4) == bool(spares)
    r = weakref.ref(xs[1])
    del xs[1], everything
    gc.collect()
    assert r() is None


def test_a_captured_handle_is_never_refilled(spares):
    # a captured graph retains the handle that borrowed x: the call's end must release it, not
    # empty it for the next call -- else the next NumPy argument would refill it, the replay would
    # write that array, and x's reference would be dropped while the graph still uses x
    x = np.zeros(8)
    add_one(np.zeros(1))  # learn
    refs = sys.getrefcount(x)
    s = tack.Stream("cpu")
    with tack.capture(s) as g:
        add_one(x)
    assert sys.getrefcount(x) == refs + 1  # the graph's
    ys = [np.zeros(8) for _ in range(6)]
    for y in ys:  # calls that take and give back the kept handles
        add_one(y)
        add4(y, y, y, y)
    g.launch()
    g.launch()
    np.testing.assert_array_equal(x, 2)
    for y in ys:
        np.testing.assert_array_equal(y, 4)
    assert sys.getrefcount(x) == refs + 1
    del g
    gc.collect()
    assert sys.getrefcount(x) == refs


class _Reentrant:
    """A DLPack producer whose __dlpack__ first runs `during` (which calls kernels on NumPy arrays)."""

    def __init__(self, arr, during):
        self.arr, self.during = arr, during

    def __dlpack__(self, **kw):
        self.during()
        return self.arr.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def test_a_call_made_while_another_holds_a_handle_never_shares_it(spares):
    # copy_into's first argument holds a handle when its second argument's __dlpack__ calls
    # kernels that take and give back handles: the first's must stay its own
    x = np.arange(6.0)
    zs = [np.zeros(6) for _ in range(5)]
    add_one(np.zeros(1))  # learn
    for _ in range(3):
        add4(*zs[:4])  # handles kept
    y = np.zeros(6)
    objs = [x, y] + zs
    before = _refs(objs)
    copy_into(x, _Reentrant(y, lambda: [add4(z, z, z, zs[4]) for z in zs[:4]]))
    np.testing.assert_array_equal(y, x)  # not a z
    np.testing.assert_array_equal(zs[4], 0)
    assert _refs(objs) == before


def test_threads_calling_one_kernel_at_once(spares):
    import threading

    n, calls = 4, 500
    arrays = [[np.zeros(64) for _ in range(4)] for _ in range(n)]
    add_one(np.zeros(1))  # learn
    before = [_refs(a) for a in arrays]
    errors = []

    def work(mine):
        try:
            for _ in range(calls):
                add_one(mine[3])
                add4(mine[0], mine[1], mine[2], mine[3])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [_refs(a) for a in arrays] == before
    for a in arrays:
        np.testing.assert_array_equal(np.stack(a[:3]), 0)
        np.testing.assert_array_equal(a[3], calls)  # each thread's own array, every call counted


@tack.kernel(check_races=True)
def scatter_checked(out, idx, x):
    for i in range(x.shape[0]):
        out[idx[i]] = x[i]


@pytest.mark.filterwarnings("ignore::tack.RaceWarning")
def test_a_race_error_and_the_profiler_leave_the_references_as_they_were(spares):
    out, idx, x = np.zeros(4), np.array([0, 1, 1, 2]), np.arange(4.0)
    add_one(np.zeros(1))  # learn
    objs = [out, idx, x]
    before = _refs(objs)
    for _ in range(20):
        with pytest.raises(tack.RaceError):
            scatter_checked(out, idx, x)
    with tack.profile():
        for _ in range(20):
            scatter_checked(out, np.arange(4), x)
    np.testing.assert_array_equal(out, x)
    assert _refs(objs) == before
