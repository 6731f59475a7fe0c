"""tack.scan, sort, argsort, reduce, ... (python/tack/_algorithms.py) against NumPy.

One differential per primitive over dtypes and sizes: the sizes (empty, one
element, a block's edge, many blocks) reuse one compiled kernel per dtype, so
the cost is a compile per dtype; the default run takes a few dtypes that
cover each kind (signed, unsigned, bool, f16, f32, f64), TACK_TEST_ALL every
dtype.  The floats carry NaNs of both signs, +-0.0, +-inf, subnormals and
values either side of powers of two, where a sort key made by arithmetic
could go wrong.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tack
from tack import _core

sys.path.insert(0, os.path.dirname(__file__))
import _msl  # noqa: E402
import _ocloc  # noqa: E402
import _suite  # noqa: E402

ALL = bool(os.environ.get("TACK_TEST_ALL"))
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64] if ALL else \
    [np.int8, np.int64, np.uint32]
FLOATS = [np.float16, np.float32, np.float64] if ALL else [np.float32, np.float64]
DTYPES = INTS + FLOATS + [np.bool_]
# the scans compile per (input, output) dtype pair: the default run takes one of each kind of pair
SCAN_DTYPES = DTYPES if ALL else [np.int8, np.float32, np.bool_]
SIZES = [0, 1, 2, 7, 1023, 1024, 1025, 5000, 70_001]


@pytest.fixture(autouse=True)
def _no_race_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def data(dt, n, seed=0):
    rng = np.random.default_rng(seed + n)
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        # both the full range and many ties
        x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        x[::3] = rng.integers(0, 5, x[::3].shape[0]).astype(dt)
        return x
    x = (rng.standard_normal(n) * 100).astype(dt)
    fi = np.finfo(dt)
    special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, fi.tiny, -fi.tiny, fi.tiny / 4, -fi.tiny / 8,
                        fi.max, -fi.max, 1.0, np.nextafter(dt.type(1.0), dt.type(0)), 2.0, 0.5,
                        np.nextafter(dt.type(0.5), dt.type(1)), -0.0, 0.0, np.nan, fi.smallest_subnormal,
                        -fi.smallest_subnormal, fi.tiny - fi.smallest_subnormal, np.nextafter(fi.max, dt.type(0)),
                        np.nextafter(fi.tiny, dt.type(1))], dt)
    spots = np.arange(0, n, 7)
    x[spots] = np.resize(special, spots.size)
    return x


def same_bits(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sort_and_argsort_are_numpys_stable_sort(dt):
    for n in SIZES:
        x = data(dt, n)
        idx = tack.argsort(x)
        assert isinstance(idx, tack.Array) and idx.dtype == tack.i64
        np.testing.assert_array_equal(idx.numpy(), np.argsort(x, kind="stable"), err_msg=f"n={n}")
        same_bits(tack.sort(x).numpy(), np.sort(x, kind="stable"))


def test_sort_by_key_carries_values_and_keeps_ties_in_order():
    keys = np.array([3, 1, 3, 2, 1, 3], np.int64)
    vals = np.array([0.5, 1.5, 2.5, 3.5, 4.5, 5.5], np.float32)
    k, v = tack.sort(keys, vals)
    assert k.numpy().tolist() == [1, 1, 2, 3, 3, 3]
    assert v.numpy().tolist() == [1.5, 4.5, 3.5, 0.5, 2.5, 5.5]


@tack.struct
class _Particle:
    pos: tack.vec3
    cell: tack.i32
    alive: bool


def _particles(n=300, seed=3):
    rng = np.random.default_rng(seed)
    r = np.zeros(n, _Particle.dtype)
    r["pos"] = rng.random((n, 3))
    r["cell"] = rng.integers(0, 20, n)
    r["alive"] = rng.random(n) < 0.6
    return r


def _same_records(a, b):
    return a.shape == b.shape and all(np.array_equal(a[f], b[f]) for f in b.dtype.names)


@pytest.mark.parametrize("device", ["cpu"] + [d for d in tack.devices() if d.startswith("opencl")][:1])
def test_sort_and_compact_take_struct_and_vector_arrays(device):
    # a particle code sorts its records by cell and drops the dead ones; sort(keys, values) said
    # "any dtype" but refused a struct array with a DLPack TypeError, and compact refused vectors
    r = _particles()
    p = tack.array(r, dtype=_Particle, device=device)
    order = np.argsort(r["cell"], kind="stable")
    k, v = tack.sort(p.field("cell"), p)
    assert isinstance(v, tack.StructArray) and v.dtype is _Particle and v.device == p.device
    assert k.numpy().tolist() == r["cell"][order].tolist() and _same_records(v.numpy(), r[order])
    live = tack.compact(p, p.field("alive"))
    assert isinstance(live, tack.StructArray) and _same_records(live.numpy(), r[r["alive"]])
    pos = tack.array(r["pos"], tack.vec3, device=device)
    kept = tack.compact(pos, p.field("alive"))
    assert kept.dtype == tack.vec3 and kept.numpy().tolist() == r["pos"][r["alive"]].tolist()
    m = tack.array(np.arange(300 * 9, dtype=np.float64).reshape(300, 3, 3), tack.mat33d, device=device)
    assert tack.compact(m, p.field("alive")).numpy().tolist() == m.numpy()[r["alive"]].tolist()
    k, v = tack.sort(p.field("cell"), pos)  # vectors and matrices ride with their keys too
    assert v.dtype == tack.vec3 and v.numpy().tolist() == r["pos"][order].tolist()
    k, v = tack.sort(p.field("cell"), m)
    assert v.dtype == tack.mat33d and v.numpy().tolist() == m.numpy()[order].tolist()
    none = tack.compact(p, tack.zeros(300, bool, device=device))
    assert isinstance(none, tack.StructArray) and none.shape == (0,)
    k, v = tack.sort(np.zeros(0, np.int32), tack.zeros(0, _Particle))
    assert v.shape == (0,) and v.dtype is _Particle


def test_sort_skips_the_digits_every_key_shares_and_keeps_equal_keys_in_order():
    # keys all equal (no pass at all: -0.0 and 0.0, NaNs of both signs), and keys differing only
    # in their top byte (one pass): the radix sort skips the digits that are the same in every key
    zeros = np.array([0.0, -0.0, -0.0, 0.0, -0.0], np.float32)
    nans = np.array([np.nan, -np.nan, np.nan], np.float64)
    top = (np.arange(3000, dtype=np.int64) % 7 - 3) << 56
    for x in (zeros, nans, top, np.full(5000, 7, np.uint32)):
        same_bits(tack.sort(x).numpy(), np.sort(x, kind="stable"))
        np.testing.assert_array_equal(tack.argsort(x).numpy(), np.argsort(x, kind="stable"))
        k, v = tack.sort(x, np.arange(x.size, dtype=np.float32))
        same_bits(k.numpy(), np.sort(x, kind="stable"))
        np.testing.assert_array_equal(v.numpy(), np.argsort(x, kind="stable"))


@pytest.mark.skipif(not ALL, reason="two more key widths' kernels: make test-all")
def test_sort_of_16_bit_floats_is_numpys_order_of_their_values():
    # f16 (5 exponent bits) and bf16 (8, f32's top half) each have their own NaN bound in the key;
    # NumPy has no bf16, so the order is NumPy's stable argsort of the values as float32
    import ml_dtypes

    for dt in (np.float16, ml_dtypes.bfloat16):
        with np.errstate(over="ignore"):  # f32's largest values become +-inf in f16
            f = data(np.float32, 5000).astype(dt)
        order = np.argsort(f.astype(np.float32), kind="stable")
        np.testing.assert_array_equal(tack.argsort(f).numpy(), order)
        same_bits(tack.sort(tack.array(f)).numpy().view(np.uint16), f[order].view(np.uint16))


@pytest.mark.parametrize("dt", SCAN_DTYPES, ids=lambda d: np.dtype(d).name)
def test_scan_and_reduce_are_numpys(dt):
    refs = {"sum": np.cumsum, "min": np.minimum.accumulate, "max": np.maximum.accumulate}
    reds = {"sum": np.sum, "min": np.min, "max": np.max}
    floats = np.dtype(dt).kind == "f"
    for n in SIZES:
        x = data(dt, n, seed=1)
        if floats:  # sums of huge values and infinities are all inf/NaN: keep the sums meaningful
            x = np.where(np.isfinite(x) & (np.abs(x) < 1e4), x, 1).astype(dt)
        for op, ref in refs.items():
            got = tack.scan(x, op).numpy()
            want = ref(x)
            if floats and op == "sum" and dt == np.float16:
                # NumPy adds one after another and Tack block by block, each rounding to f16 at
                # every add (eps 2**-11): their errors differ by far more than f16's last bit.
                # Both must be within the worst-case bound of a sum in any order, i * u * sum|x|,
                # of the exact prefix sums.
                assert got.dtype == want.dtype
                exact = np.cumsum(x.astype(np.float64))
                bound = np.arange(1, n + 1) * 2.0**-11 * np.cumsum(np.abs(x.astype(np.float64)))
                assert np.all(np.abs(want - exact) <= bound)  # the bound is honest: NumPy meets it
                assert np.all(np.abs(got.astype(np.float64) - exact) <= bound), np.max(np.abs(got - exact) / bound)
            elif floats and op == "sum":  # summed block by block: the last bits may differ
                assert got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=0.5)
            else:
                same_bits(got, want)
            if n:
                r, w = tack.reduce(x, op), reds[op](x)
                assert type(r) is type(w)
                if floats and op == "sum" and dt == np.float16:  # as the scan above: within the bound
                    exact = float(np.sum(x.astype(np.float64)))
                    assert abs(float(r) - exact) <= n * 2.0**-11 * float(np.sum(np.abs(x.astype(np.float64))))
                elif floats and op == "sum":
                    np.testing.assert_allclose(r, w, rtol=1e-3)
                else:
                    assert r == w, (op, n, r, w)


def test_min_and_max_of_bfloat16_start_from_its_infinities():
    # the identity of "min" and "max" came from np.iinfo for every dtype NumPy does not call a
    # float, and ml_dtypes' bfloat16 is kind "V" to NumPy: scan, reduce and histogram of a bf16
    # array raised "Invalid integer data type 'V'"
    import ml_dtypes

    x = np.array([1.5, -2.0, 3.0, np.nan, -7.0, 0.25], ml_dtypes.bfloat16)
    f = x.astype(np.float32)  # exact: NumPy's references in float32
    for op, ref in (("min", np.minimum.accumulate), ("max", np.maximum.accumulate)):
        np.testing.assert_array_equal(tack.scan(x, op).numpy().astype(np.float32), ref(f))
        ex = tack.scan(x[:3], op, exclusive=True).numpy().astype(np.float32)
        assert ex[0] == (np.inf if op == "min" else -np.inf) and ex[1:].tolist() == ref(f[:2]).tolist()
    assert float(tack.reduce(x[:3], "min")) == -2.0 and float(tack.reduce(x[:3], "max")) == 3.0
    assert np.isnan(float(tack.reduce(x, "max")))
    c, e = tack.histogram(x[:3], 3)
    wc, we = np.histogram(x[:3], 3)
    assert c.numpy().tolist() == wc.tolist() and e.tolist() == we.tolist()


def _sum_in_eights(x, nb, bs):
    """tack.reduce's order for a real sum, in NumPy: each block's elements into eight partial
    sums (element i into sum i % 8; a column sum of a float32 2-D array adds row after row), the
    remainder into the first, the eight added pairwise, the blocks' totals added in order."""
    t = x.dtype.type
    acc = t(0)
    for b in range(nb):
        blk = x[b * bs:min((b + 1) * bs, x.shape[0])]
        m = blk.shape[0] // 8 * 8
        s = blk[:m].reshape(-1, 8).sum(axis=0, dtype=x.dtype) if m else np.zeros(8, x.dtype)
        for v in blk[m:]:
            s[0] = t(s[0] + v)
        acc = t(acc + t(t(t(s[0] + s[1]) + t(s[2] + s[3])) + t(t(s[4] + s[5]) + t(s[6] + s[7]))))
    return acc


@pytest.mark.parametrize("n", [1, 7, 8, 9, 1023, 5003, 100_001])
def test_a_float_sum_adds_each_block_in_eight_partial_sums(n):
    # the order is the language's (the same kernel compiled, in debug mode or on a GPU): pinned
    # here bit for bit, and it is not the serial one (which the big case would show)
    from tack._algorithms_common import _blocks
    x = (np.random.default_rng(n).random(n) * 1000 - 300).astype(np.float32)
    nb, bs = _blocks(n, "cpu")
    got = tack.reduce(x)
    want = _sum_in_eights(x, nb, bs)
    assert got.view(np.uint32) == want.view(np.uint32), (got, want)
    if n == 100_001:
        serial = np.float32(0)
        for v in x:
            serial = np.float32(serial + v)
        assert got != serial  # not the block's serial order


# "min" and "max" reduce each block in eight lanes, then take a zero or NaN result again as the
# serial fold takes it: the default run takes the dtypes the scan test above compiles already
MINMAX_DTYPES = DTYPES + ["bfloat16"] if ALL else [np.float32, np.int8, np.bool_]
MINMAX_SIZES = [1, 2, 7, 8, 9, 16, 17, 1023, 2048 + 9, 32767, 32768, 32769, 70_001]


def _serial_fold(x, op):
    """The serial fold np.minimum / np.maximum.reduce would give one element at a time, as
    _op_min and _op_max take them: the first NaN, else the last element equal to the result."""
    nan = np.isnan(x.astype(np.float32)) if x.dtype.kind not in "biu" else np.zeros(x.shape, bool)
    if nan.any():
        return x[np.argmax(nan)]
    v = x.min() if op == "min" else x.max()
    return x[np.nonzero(x == v)[0][-1]]


def _minmax_cases(dt, n, rng):
    if np.dtype(dt).kind in "biu":
        yield data(dt, n, seed=3)
        return
    x = (rng.standard_normal(n) * 100).astype(np.float32).astype(dt)
    yield x  # no zero, no NaN: a value that compares equal only to its own bits
    z = np.where(x > 0, x, 0).astype(dt)  # a ReLU's output: the minimum is a zero of either sign
    z[rng.integers(0, n, 1 + n // 7)] *= -1
    z[rng.integers(0, n, 1 + n // 9)] = -0.0
    yield z
    yield -z  # the maximum is such a zero
    w = x.copy()
    bits = w.view(np.uint16 if w.itemsize == 2 else np.uint32 if w.itemsize == 4 else np.uint64)
    at = rng.integers(0, n, 3)
    w[at] = np.nan
    bits[at[0]] |= 1  # NaNs of other payloads and signs: the first one is the result
    w[at[1]] = -w[at[1]]
    yield w


@pytest.mark.parametrize("dt", MINMAX_DTYPES, ids=lambda d: np.dtype(d).name if d != "bfloat16" else d)
def test_min_and_max_are_the_serial_folds_bit_for_bit(dt):
    if dt == "bfloat16":
        import ml_dtypes
        dt = ml_dtypes.bfloat16
    rng = np.random.default_rng(7)
    for n in MINMAX_SIZES:
        for x in _minmax_cases(dt, n, rng):
            for op in ("min", "max"):
                got, want = tack.reduce(x, op), _serial_fold(x, op)
                assert type(got) is type(want), (op, n)
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (op, n, got, want)
    with pytest.raises(ValueError, match="zero-size array to reduction operation min"):
        tack.reduce(np.zeros(0, dt), "min")
    assert tack.reduce(np.zeros(0, dt), "max", initial=1) == 1


def _pool_parts(fn):
    with tack.profile() as p:
        fn()
    return [e for e in p.events if e.kind == "worker"]


@pytest.mark.skipif(_core.device_threads("cpu") < 2, reason="one CPU thread: every launch runs alone")
def test_a_small_input_runs_on_the_calling_thread_alone_to_the_same_bits(monkeypatch):
    from tack import _algorithms_common as C

    rng = np.random.default_rng(5)
    below = C.ALONE_BELOW
    for n in (below // 4 - 1, below // 4 + 1, below - 1, below):
        x = (rng.standard_normal(n) * 100).astype(np.float32)
        m = x > 0
        calls = [lambda: tack.reduce(x), lambda: tack.reduce(x, "min"), lambda: tack.reduce(x, "max"),
                 lambda: tack.scan(x).numpy(), lambda: tack.scan(x, exclusive=True).numpy(),
                 lambda: tack.compact(x, m).numpy()]
        monkeypatch.setattr(C, "ALONE_BELOW", 1 << 62)  # every launch alone
        alone = [np.asarray(f()).tobytes() for f in calls]
        monkeypatch.setattr(C, "ALONE_BELOW", 0)  # every launch on the pool
        pooled = [np.asarray(f()).tobytes() for f in calls]
        assert alone == pooled, n
        monkeypatch.setattr(C, "ALONE_BELOW", below)
        # the pool takes part (its threads' parts are recorded) only from the threshold on
        assert bool(_pool_parts(lambda: tack.reduce(x))) == (n >= below), n
        assert bool(_pool_parts(lambda: tack.scan(x))) == (4 * n >= below), n
    # the setting is the calling thread's, and put back after a kernel that fails
    assert _core._launch_alone(False) is False

    def boom(*args):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        C._launch(boom, 1, "cpu")
    assert _core._launch_alone(False) is False


def test_exclusive_scan_starts_from_the_identity():
    x = np.array([3, -1, 4, -1, 5], np.int32)
    assert tack.scan(x, exclusive=True).numpy().tolist() == [0, 3, 2, 6, 5]
    assert tack.scan(x, "min", exclusive=True).numpy().tolist() == [2 ** 31 - 1, 3, -1, -1, -1]
    f = np.array([2.0, np.nan, 1.0])
    assert tack.scan(f, "max", exclusive=True).numpy()[:2].tolist() == [-np.inf, 2.0]
    assert np.isnan(tack.scan(f, "max").numpy()[1:]).all()
    # a float sum runs from -0.0, so that -0.0s stay -0.0 as np.cumsum's (it was 0.0 + -0.0 = 0.0);
    # the exclusive sum's first element is still 0.0
    z = np.array([-0.0, -0.0, 1.0, -1.0, -0.0], np.float64)
    same_bits(tack.scan(z).numpy(), np.cumsum(z))
    same_bits(tack.scan(z, exclusive=True).numpy(), np.r_[0.0, np.cumsum(z)[:-1]])


def test_complex_sums_and_the_refusals_of_complex_order():
    c = (np.arange(3000) + 1j * np.arange(3000)[::-1]).astype(np.complex128)
    np.testing.assert_array_equal(tack.scan(c).numpy(), np.cumsum(c))  # small integers: exact
    assert tack.reduce(c) == c.sum()
    np.testing.assert_array_equal(tack.segmented_reduce(c, [0, 10, 10, 3000]).numpy(),
                                  [c[:10].sum(), 0, c[10:].sum()])
    with pytest.raises(TypeError, match="tack.scan: a has dtype complex128; it takes bool, integer or float elements"):
        tack.scan(c, "min")
    with pytest.raises(TypeError, match="a has dtype complex128; it takes bool, integer or float elements"):
        tack.sort(c)
    # dtype=complex of real values: segmented_reduce summed where min was asked, reduce said "Invalid
    # integer data type 'c'", and a vector reduce did either
    f = np.array([3.0, 1.0, 2.0], np.float32)
    for call in (lambda: tack.segmented_reduce(f, [0, 3], "min", dtype=np.complex64),
                 lambda: tack.reduce(f, "max", dtype=np.complex64), lambda: tack.scan(f, "min", dtype=np.complex64),
                 lambda: tack.reduce(tack.array(f.reshape(1, 3), tack.vec3), "min", dtype=np.complex64)):
        with pytest.raises(TypeError, match=r"\.(segmented_reduce|reduce|scan): m(in|ax) is not defined for complex "
                                            r"values \(dtype=complex64\)"):
            call()


@tack.func
def _argmax_pair(a, b):
    # an associative operator on packed (value << 32 | index): the largest value, first index on ties
    return a if (a >> 32) > (b >> 32) or ((a >> 32) == (b >> 32) and (a & 0xFFFFFFFF) < (b & 0xFFFFFFFF)) else b


def test_reduce_with_a_user_func():
    rng = np.random.default_rng(5)
    v = rng.integers(0, 1000, 20_000)
    packed = (v << 32) | np.arange(v.size)
    got = tack.reduce(packed, _argmax_pair)
    assert (got >> 32, got & 0xFFFFFFFF) == (v.max(), v.argmax())
    assert tack.reduce(np.zeros(0, np.int64), _argmax_pair, initial=7) == 7
    with pytest.raises(ValueError, match="zero-size array.*no identity"):
        tack.reduce(np.zeros(0, np.int64), _argmax_pair)


@tack.func
def _half_then_add(a, b):
    return a * 0.5 + b


@tack.func
def _larger(a, b):
    return a if a > b else b


def test_an_operator_whose_value_the_result_cannot_hold_is_refused():
    # a float from an operator of integers was converted back to the integers at each block's
    # store: ((1 / 2 + 2) / 2 + 3) / 2 + 4 = 6.125 came back as 6 with no word (and how much was
    # lost depended on the blocks, so on the thread count)
    x = np.arange(1, 5)
    with pytest.raises(TypeError, match=r"tack.reduce: _half_then_add\(\) gives float64 for int64 values, and the "
                                        r"result has dtype int64: .* pass dtype=np.float64"):
        tack.reduce(x, _half_then_add)
    with pytest.raises(TypeError, match=r"tack.segmented_reduce: _half_then_add\(\) gives float64 for int64"):
        tack.segmented_reduce(x, [0, 2, 4], _half_then_add)
    assert tack.reduce(x, _half_then_add, dtype=np.float64) == 6.125
    assert tack.reduce(x.astype(np.float32), _half_then_add) == np.float32(6.125)
    # a value of the elements' own type is taken, f16's computed in f32 included
    for dt in (np.int8, np.uint64, np.float16, np.bool_):
        y = np.array([1, 3, 2, 0]).astype(dt)
        assert tack.reduce(y, _larger) == y.max()
        assert tack.segmented_reduce(y, [0, 2, 4], _larger).numpy().tolist() == [y[:2].max(), y[2:].max()]


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="1-D array, got shape \\(2, 2\\)"):
        tack.sort(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="dtype complex128"):
        tack.argsort(np.zeros(3, np.complex128))
    with pytest.raises(ValueError, match="op must be 'sum', 'min' or 'max', got 'prod'"):
        tack.scan(np.zeros(3), "prod")
    with pytest.raises(ValueError, match="values has 2 elements and the keys 3"):
        tack.sort(np.zeros(3), np.zeros(2))
    with pytest.raises(TypeError, match="op must be"):
        tack.reduce(np.zeros(3), len)


def test_strided_input_is_copied_first():
    a = tack.array(np.arange(20, 0, -1, dtype=np.int32))
    assert tack.sort(a[::2]).numpy().tolist() == sorted(range(20, 0, -2))
    assert tack.scan(a[::-1]).numpy()[-1] == 210


def _vectors(dt, n, seed):
    # n elements of the vector or matrix dtype dt: NaN-free values with repeats and zeros of both signs
    rng = np.random.default_rng(seed)
    sc = np.dtype(dt.scalar.numpy)
    h = rng.integers(-40, 40, (n,) + tuple(dt.shape))
    if sc.kind == "f":
        h = (h / 4).astype(sc)
        h[h == 0] = np.where(rng.random(np.count_nonzero(h == 0)) < 0.5, -0.0, 0.0).astype(sc)
    return h.astype(sc)


def _columns(h):
    return h.reshape(h.shape[0], -1)


# vec4i's int32 sums widen to int64 as NumPy's (one component at a time); mat22d is a matrix
VECTOR_DTYPES = [tack.vec3, tack.vec2d, tack.vec4i, tack.mat22d]


@pytest.mark.parametrize("dt", VECTOR_DTYPES, ids=lambda d: d.name)
def test_reduce_of_vectors_and_matrices_is_numpys_component_by_component(dt):
    for n in (1, 37, 5000):  # 5,000: float min and max by integer keys (from 4,096), in blocks
        h = _vectors(dt, n, seed=n)
        a = tack.array(h, dt)
        for op, ref in (("sum", np.sum), ("min", np.min), ("max", np.max)):
            got, want = tack.reduce(a, op), ref(h, axis=0)
            assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == tuple(dt.shape)
            if op != "sum" or want.dtype.kind != "f":
                same_bits(got, want)  # min and max keep the serial fold's zero, as NumPy's
            else:  # each component the sum of that component's column alone, bit for bit (the
                # scalar sum's blocks and eight partial sums, not NumPy's order)
                alone = [tack.reduce(np.ascontiguousarray(col)) for col in _columns(h).T]
                same_bits(got.ravel(), np.array(alone, want.dtype))
                np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_float_vector_sum_adds_each_component_in_the_scalar_sums_order():
    # values whose sum depends on the order of the adds: vec3 and the columns alone must agree
    rng = np.random.default_rng(4)
    h = (rng.standard_normal((70001, 3)) * 10.0 ** rng.integers(-6, 7, (70001, 3))).astype(np.float32)
    got = tack.reduce(tack.array(h, tack.vec3))
    same_bits(got, np.array([tack.reduce(np.ascontiguousarray(h[:, c])) for c in range(3)], np.float32))


def test_reduce_of_vectors_empty_initial_nan_and_operators():
    v3 = tack.zeros(0, tack.vec3)
    same_bits(tack.reduce(v3), np.zeros((0, 3), np.float32).sum(axis=0))
    same_bits(tack.reduce(v3, "min", initial=5), np.zeros((0, 3), np.float32).min(axis=0, initial=5))
    same_bits(tack.reduce(tack.zeros(0, tack.vec3i), initial=[1, 2, 3]), np.array([1, 2, 3], np.int64))
    with pytest.raises(ValueError, match="zero-size array to reduction operation max .*give initial="):
        tack.reduce(v3, "max")
    with pytest.raises(ValueError, match=r"initial has shape \(2,\); give a scalar or a value of the elements' "
                                         r"shape \(3,\)"):
        tack.reduce(v3, initial=[1, 2])
    h = np.array([[1, 5, -0.0], [np.nan, 2, 0.0], [3, -np.nan, 4], [0.5, 7, -1]], np.float32)
    a = tack.array(h, tack.vec3)
    for op in ("min", "max"):  # the first NaN of a component, its sign kept; a zero's sign as NumPy's
        same_bits(tack.reduce(a, op), getattr(h, op)(axis=0))
        same_bits(tack.reduce(a, op, initial=-9), getattr(h, op)(axis=0, initial=-9))
    same_bits(tack.reduce(a, "max", initial=[0, 0, 9]), np.array([np.nan, -np.nan, 9], np.float32))
    g = _vectors(tack.vec3d, 300, seed=8)
    G = tack.array(g, tack.vec3d)
    same_bits(tack.reduce(G, _vec_add), tack.reduce(G, "sum"))  # blocks of a serial fold, vectors summed
    same_bits(tack.reduce(G, _vec_add, initial=[1, 2, 3]), tack.reduce(G, "sum") + [1, 2, 3])
    with pytest.raises(tack.CompileError, match="cannot assign vec3d to 'acc' of type vec3"):
        tack.reduce(tack.array(g, tack.vec3), _widen)  # no silent conversion back to vec3
    same_bits(tack.reduce(G, "sum", dtype=np.float32), np.array([tack.reduce(np.ascontiguousarray(g[:, c]),
                                                                             dtype=np.float32) for c in range(3)]))


@tack.func
def _vec_add(a, b):
    return a + b


@tack.func
def _widen(a, b):
    return tack.vec3d(a) + tack.vec3d(b)


def _exclusive(inclusive, first):
    # NumPy has no exclusive scan: the identity, then the inclusive scan without its last element
    return np.concatenate([np.full((1,) + inclusive.shape[1:], first, inclusive.dtype), inclusive[:-1]])[:len(inclusive)]


def _per_segment(h, off, ufunc, **kw):
    # NumPy's reduction of each segment h[off[s]:off[s + 1]] (an empty one: initial, or the sum's 0)
    dt = np.sum(h[:0], axis=0).dtype if ufunc is np.add else h.dtype
    rows = [ufunc.reduce(h[lo:hi], axis=0, dtype=dt, **kw) for lo, hi in zip(off[:-1], off[1:])]
    return np.array(rows, dt).reshape((len(rows),) + h.shape[1:])


@pytest.mark.parametrize("dt", VECTOR_DTYPES, ids=lambda d: d.name)
def test_scan_and_segmented_reduce_of_vectors_are_numpys_component_by_component(dt):
    # np.cumsum(h, axis=0), np.minimum.accumulate(h, axis=0), ... of the (n, k) components, and
    # NumPy's per-segment reductions; the values are quarters, so a float sum is exact in any order
    rng = np.random.default_rng(9)
    for n in (0, 37, 5000):
        h = _vectors(dt, n, seed=n)
        a = tack.array(h, dt)
        off = np.sort(np.r_[0, 0, rng.integers(0, n + 1, 5), n, n])  # empty segments at both ends
        for op, ufunc in (("sum", np.add), ("min", np.minimum), ("max", np.maximum)):
            want = np.cumsum(h, axis=0) if op == "sum" else ufunc.accumulate(h, axis=0)
            got = tack.scan(a, op)
            # the vector type of the result's components, or (n, k) int64 for an integer sum
            assert got.dtype == (dt if want.dtype == h.dtype else tack.i64) and got.shape == (
                (n,) if want.dtype == h.dtype else want.shape)
            same_bits(got.numpy().reshape(want.shape), want)
            big = np.inf if h.dtype.kind == "f" else None
            first = 0 if op == "sum" else {"min": big or np.iinfo(h.dtype).max, "max": -big if big else
                                           np.iinfo(h.dtype).min}[op]
            same_bits(tack.scan(a, op, exclusive=True).numpy().reshape(want.shape), _exclusive(want, first))
            kw = {} if op == "sum" else {"initial": 3}
            seg = tack.segmented_reduce(a, off, op, **kw)
            assert seg.device == a.device and seg.shape[0] == off.size - 1
            want = _per_segment(h, off, ufunc, **kw)
            same_bits(seg.numpy().reshape(want.shape), want)


def test_vector_scans_and_segments_are_each_columns_alone_bit_for_bit():
    # values whose sums depend on the order of the adds: each component of a vec3 scan or segmented
    # sum must be the scalar primitive's result on that component's column, in its blocks and order
    rng = np.random.default_rng(4)
    h = (rng.standard_normal((70001, 3)) * 10.0 ** rng.integers(-6, 7, (70001, 3))).astype(np.float32)
    a = tack.array(h, tack.vec3)
    cols = [np.ascontiguousarray(h[:, c]) for c in range(3)]
    off = np.array([0, 5, 5, 40000, 69999, 70001])
    for ex in (False, True):
        same_bits(tack.scan(a, exclusive=ex).numpy(), np.stack([tack.scan(c, exclusive=ex).numpy() for c in cols], 1))
    same_bits(tack.segmented_reduce(a, off).numpy(), np.stack([tack.segmented_reduce(c, off).numpy() for c in cols], 1))
    # dtype=np.float16: the scalar scan's running value is f32 (f16 computes in f32), rounded only on the
    # way out; the rows' kernel carried it from tile to tile in f16 and drifted from the column's
    got = tack.scan(tack.array(h[:3000], tack.vec3), dtype=np.float16)
    assert got.dtype == tack.f16 and got.shape == (3000, 3)
    same_bits(got.numpy(), np.stack([tack.scan(c[:3000], dtype=np.float16).numpy() for c in cols], 1))
    same_bits(tack.segmented_reduce(a, off, initial=[1e-3, 2, 3]).numpy(),
              np.stack([tack.segmented_reduce(c, off, initial=i).numpy() for c, i in zip(cols, [1e-3, 2, 3])], 1))


def test_vector_scans_and_segments_nan_empty_dtype_and_refusals():
    h = np.array([[1, 5, -0.0], [np.nan, 2, 0.0], [3, -np.nan, 4], [0.5, 7, -1], [-0.0, 1, 0.0]], np.float32)
    a = tack.array(h, tack.vec3)
    for op, uf in (("min", np.minimum), ("max", np.maximum)):  # a NaN stays, its sign kept; zeros as NumPy's
        same_bits(tack.scan(a, op).numpy(), uf.accumulate(h, axis=0))
        same_bits(tack.segmented_reduce(a, [0, 2, 5], op).numpy(), _per_segment(h, [0, 2, 5], uf))
    # empty: the vector type, or (0, k) int64 for an integer sum
    e = tack.scan(tack.zeros(0, tack.vec3))
    assert e.dtype == tack.vec3 and e.shape == (0,)
    e = tack.scan(tack.zeros(0, tack.vec3i), exclusive=True)
    assert e.dtype == tack.i64 and e.shape == (0, 3)
    e = tack.segmented_reduce(tack.zeros(0, tack.mat22d), [0, 0], "max", initial=-1)
    same_bits(e.numpy(), np.full((1, 2, 2), -1.0))
    assert tack.segmented_reduce(tack.zeros(0, tack.vec3), [0]).shape == (0,)
    # dtype=: the components' type, or a vector type of the elements' shape
    q = np.arange(-12, 12, dtype=np.int32).reshape(8, 3) * 400_000_000 // 3
    for d in (np.float64, tack.vec3d):
        got = tack.scan(a, dtype=d)
        assert got.dtype == tack.vec3d
        same_bits(got.numpy()[:1], h[:1].astype(np.float64))
    got = tack.scan(tack.array(q, tack.vec3i), dtype=np.int32)  # wraps, as NumPy's cumsum(dtype=int32)
    assert got.dtype == tack.vec3i and np.array_equal(got.numpy(), np.cumsum(q, axis=0, dtype=np.int32))
    same_bits(tack.segmented_reduce(tack.array(q, tack.vec3i), [0, 8], initial=[1, 2, 3]).numpy(),
              q.sum(axis=0, keepdims=True) + [1, 2, 3])
    g = _vectors(tack.vec3d, 300, seed=8)
    G = tack.array(g, tack.vec3d)
    off = [0, 100, 300]  # an operator has no identity: no empty segment without initial=
    same_bits(tack.segmented_reduce(G, off, _vec_add).numpy(), tack.segmented_reduce(G, off).numpy())
    same_bits(tack.segmented_reduce(G, [0, 0, 300], _vec_add, initial=[1, 2, 3]).numpy(),
              tack.segmented_reduce(G, [0, 0, 300], initial=[1, 2, 3]).numpy())
    with pytest.raises(TypeError, match=r"tack.scan: dtype=vec2 has shape \(2,\) and the elements \(vec3\) \(3,\)"):
        tack.scan(a, dtype=tack.vec2)
    with pytest.raises(ValueError, match="tack.scan: op must be 'sum', 'min' or 'max', got 'prod'"):
        tack.scan(a, "prod")
    with pytest.raises(TypeError, match="tack.scan: dtype=complex64 is not taken for vec3 values"):
        tack.scan(a, dtype=np.complex64)
    with pytest.raises(ValueError, match=r"segment 1 .* is empty and min has no identity: give initial="):
        tack.segmented_reduce(a, [0, 2, 2, 5], "min")
    with pytest.raises(ValueError, match=r"tack.segmented_reduce: initial has shape \(2,\); give a scalar"):
        tack.segmented_reduce(a, [0, 5], initial=[1, 2])
    with pytest.raises(TypeError, match="tack.segmented_reduce: dtype= is not taken with an operator of vec3d"):
        tack.segmented_reduce(G, off, _vec_add, dtype=np.float64)
    with pytest.raises(tack.CompileError, match="cannot assign vec3d to 'acc' of type vec3"):
        tack.segmented_reduce(tack.array(g, tack.vec3), off, _widen)  # no silent conversion back to vec3


def test_compact_unique_searchsorted_histogram_segmented_reduce_are_numpys():
    rng = np.random.default_rng(7)
    for n in SIZES:
        x = rng.integers(-50, 50, n).astype(np.int32)
        f = np.round(data(np.float64, n, seed=3) / 100, 1)
        m = x % 3 == 0
        np.testing.assert_array_equal(tack.compact(x, m).numpy(), x[m])
        np.testing.assert_array_equal(tack.compact(f, m).numpy(), f[m])
        np.testing.assert_array_equal(tack.unique(f).numpy(), np.unique(f))
        np.testing.assert_array_equal(tack.unique(x).numpy(), np.unique(x))
        s = np.sort(f)
        q = np.concatenate([f[:100], [np.nan, -np.inf, np.inf, 0.0, -0.0, 0.25]])
        for side in ("left", "right"):
            np.testing.assert_array_equal(tack.searchsorted(s, q, side).numpy(), np.searchsorted(s, q, side))
            np.testing.assert_array_equal(tack.searchsorted(np.sort(x), x, side).numpy(),
                                          np.searchsorted(np.sort(x), x, side))
        fin = np.where(np.isfinite(f), f, 0.5)
        if n > 100:  # values exactly on the edges, where an arithmetic bin is most easily one off
            fin[:18] = np.histogram_bin_edges(fin, 17)
        for args in [(fin, 17), (x, [-50, -1, 0, 0, 3, 49]), (f, 5, (-1, 1)), (x, 4, (-10, 10)), (x, 1)]:
            c, e = tack.histogram(*args)
            wc, we = np.histogram(*args)
            np.testing.assert_array_equal(c.numpy(), wc, err_msg=f"n={n} {args[1:]}")
            np.testing.assert_array_equal(e, we)
        off = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, 5)]))
        off = np.insert(off, 1, off[0])  # an empty segment
        segs = [x[a:b] for a, b in zip(off[:-1], off[1:])]
        np.testing.assert_array_equal(tack.segmented_reduce(x, off).numpy(), [s.sum() for s in segs])
        np.testing.assert_array_equal(tack.segmented_reduce(x, off, "min", initial=99).numpy(),
                                      [min(s.min(initial=99), 99) for s in segs])
        np.testing.assert_array_equal(tack.segmented_reduce(x.astype(np.int64), off, _argmax_pair, initial=-1).numpy(),
                                      [_py_reduce(s) for s in segs])
    assert tack.searchsorted([1.0, 2.0, 3.0], 2.0, "right") == 2
    # NumPy's bin-width estimators read the values: they gave edges made from the min and max
    # alone, so tack.histogram(x, "auto") counted 2 bins where NumPy counts 4, with no error
    for x in (np.arange(5.0), rng.standard_normal(3000), rng.integers(0, 50, 1000), np.full(7, 3.0)):
        for bins in ("auto", "fd", "sturges", "sqrt"):
            for r in (None, (-1, 2)):
                c, e = tack.histogram(x, bins, range=r)
                wc, we = np.histogram(x, bins, range=r)
                assert c.numpy().tolist() == wc.tolist() and e.tolist() == we.tolist(), (bins, r, x[:3])
    # past 4M counters in the blocks' rows, the counts are atomic adds into one row
    x = rng.standard_normal(20_000)  # 8 blocks of 2,500 on the CPU: 8 x 600,000 counters
    c, e = tack.histogram(x, 600_000)
    np.testing.assert_array_equal(c.numpy(), np.histogram(x, 600_000)[0])


def _py_reduce(s):
    acc = -1
    for v in s.astype(np.int64):
        acc = _argmax_pair(acc, int(v))
    return acc


def test_the_documented_differences_from_numpy_of_searchsorted_and_segmented_reduce():
    # docs/algorithms.md: searchsorted compares exactly, where NumPy compares an int64 table and
    # a value past int64 in float64 (2**63 - 1 rounds to 2**63)
    table = np.array([0, 2**63 - 1])
    assert np.searchsorted(table, 2**63) == 1 and tack.searchsorted(table, 2**63) == 2
    assert tack.searchsorted(table, np.array([2**63, 2**64 - 1], np.uint64)).numpy().tolist() == [2, 2]
    # initial is combined into every segment, as NumPy's initial=; offsets need not span values
    x = np.array([1, 5, 2, 7, 3])
    assert tack.segmented_reduce(x, [0, 2, 2, 4], "max", initial=6).numpy().tolist() == [6, 6, 7]
    assert tack.reduce(x, "max", initial=9) == np.max(x, initial=9) == 9
    assert tack.segmented_reduce(x, [1, 3, 4]).numpy().tolist() == [7, 7]


def test_bad_arguments_of_the_other_primitives():
    with pytest.raises(TypeError, match="mask has dtype i32; it must be bool"):
        tack.compact(np.zeros(3), np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="mask has 2 elements and a 3"):
        tack.compact(np.zeros(3), np.zeros(2, bool))
    with pytest.raises(ValueError, match="side must be 'left' or 'right', got 'middle'"):
        tack.searchsorted(np.zeros(3), 1.0, "middle")
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\] is not finite"):
        tack.histogram(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="`bins` must increase monotonically"):
        tack.histogram(np.zeros(3), [1, 0])
    with pytest.raises(ValueError, match="offsets\\[2\\] = 1 is below offsets\\[1\\] = 2"):
        tack.segmented_reduce(np.zeros(3), [0, 2, 1, 3])
    with pytest.raises(ValueError, match="offsets\\[1\\] = 4 is outside 0..3"):
        tack.segmented_reduce(np.zeros(3), [0, 4])
    with pytest.raises(ValueError, match="segment 1 .* is empty and max has no identity: give initial="):
        tack.segmented_reduce(np.zeros(3), [0, 1, 1, 3], "max")


_DEBUG_RUN = """\
import numpy as np, tack, warnings
warnings.simplefilter("error")
rng = np.random.default_rng(2)
x = rng.integers(-9, 9, 40).astype(np.int16)
f = np.round(rng.standard_normal(40), 1); f[::7] = np.nan; f[1::9] = -0.0
assert np.array_equal(tack.scan(x).numpy(), np.cumsum(x))
assert np.array_equal(tack.scan(f, "min").numpy(), np.minimum.accumulate(f), equal_nan=True)
assert tack.reduce(x, "max") == x.max()
z = np.array([3.0, -0.0, 1.0, 0.0, 2.0, -0.0, 5.0], np.float32)  # min and max: the serial fold's zero
assert np.signbit(tack.reduce(z, "min")) and not np.signbit(tack.reduce(z[:5], "min"))
q = np.array([1.0, -np.nan, np.nan, 2.0], np.float32)  # the first NaN, its sign kept
assert np.signbit(tack.reduce(q, "min")) and np.signbit(tack.reduce(q, "max"))
assert np.array_equal(tack.argsort(f).numpy(), np.argsort(f, kind="stable"))
assert np.array_equal(tack.sort(x).numpy(), np.sort(x))
assert np.array_equal(tack.unique(f).numpy(), np.unique(f), equal_nan=True)
assert np.array_equal(tack.compact(x, x > 0).numpy(), x[x > 0])
assert np.array_equal(tack.searchsorted(np.sort(f), f).numpy(), np.searchsorted(np.sort(f), f))
assert np.array_equal(tack.histogram(x, 5)[0].numpy(), np.histogram(x, 5)[0])
assert np.array_equal(tack.segmented_reduce(x, [0, 5, 5, 40]).numpy(), [x[:5].sum(), 0, x[5:].sum()])
assert np.array_equal(tack.histogram(f[np.isfinite(f)], "auto")[0].numpy(), np.histogram(f[np.isfinite(f)], "auto")[0])


@tack.func
def larger(a, b):
    return a if a > b else b


@tack.func
def half_then_add(a, b):
    return a * 0.5 + b


assert tack.reduce(x, larger) == x.max()
v = np.round(rng.standard_normal((40, 3)), 1).astype(np.float32); v[3, 1] = np.nan; v[4, 2] = -0.0
V = tack.array(v, tack.vec3)  # vectors: component by component, each column's own reduction
assert np.array_equal(tack.reduce(V).view(np.uint32), np.array([tack.reduce(v[:, c].copy()) for c in range(3)]).view(np.uint32))
assert np.array_equal(tack.reduce(V, "min"), v.min(axis=0), equal_nan=True)
assert np.array_equal(tack.reduce(tack.array(x[:39].reshape(13, 3), tack.vec3i), "sum", initial=1), x[:39].reshape(13, 3).sum(axis=0, initial=1))
assert np.array_equal(tack.scan(V).numpy().view(np.uint32), np.stack([tack.scan(v[:, c].copy()).numpy() for c in range(3)], 1).view(np.uint32))
assert np.array_equal(tack.scan(V, "max", exclusive=True).numpy()[1:], np.maximum.accumulate(v)[:-1], equal_nan=True)
assert np.array_equal(tack.scan(tack.array(x[:39].reshape(13, 3), tack.vec3i)).numpy(), np.cumsum(x[:39].reshape(13, 3), axis=0))
assert np.array_equal(tack.segmented_reduce(V, [0, 3, 3, 40]).numpy().view(np.uint32), np.stack([tack.segmented_reduce(v[:, c].copy(), [0, 3, 3, 40]).numpy() for c in range(3)], 1).view(np.uint32))
assert np.array_equal(tack.segmented_reduce(V, [0, 4, 40], "min").numpy(), np.stack([v[:4].min(axis=0), v[4:].min(axis=0)]), equal_nan=True)
try:  # the accumulator's type is read from the compiler's checker of the kernel run as Python
    tack.reduce(x, half_then_add)
except TypeError as e:
    assert "gives float32 for int16 values" in str(e), e  # i16 * 0.5 is f32, as in any kernel
else:
    raise AssertionError("a float operator of integers was taken")
print("ok")
"""


def test_debug_mode_runs_the_same_kernels_to_the_same_results(tmp_path):
    # TACK_DISABLE_JIT=1: every kernel the primitives launch runs as Python (docs/language.md,
    # "Running a kernel as Python"), the same language, so the same answers
    script = tmp_path / "debug_run.py"
    script.write_text(_DEBUG_RUN)
    env = dict(os.environ, TACK_DISABLE_JIT="1")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


# ------------------------------------------------------------ the GPU backends
OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


def _opencl_data():
    dev = OPENCL[0]
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, 3000).astype(np.int32)
    f = np.round(rng.standard_normal(3000), 1)
    f[::9] = np.nan
    f[1::13] = -0.0
    X, F = tack.array(x, device=dev), tack.array(f, device=dev)

    def same(got, want):
        assert not isinstance(got, tack.Array) or got.device == dev
        got = got.numpy() if isinstance(got, tack.Array) else got
        np.testing.assert_array_equal(got, want)

    return dev, x, f, X, F, same


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_scan_float_sort_and_compact_run_on_opencl():
    dev, x, f, X, F, same = _opencl_data()
    same(tack.scan(X), np.cumsum(x))
    same(tack.sort(F).numpy().view(np.uint64), np.sort(f, kind="stable").view(np.uint64))
    same(tack.compact(X, tack.array(x > 0, device=dev)), x[x > 0])


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_reduce_of_vectors_runs_on_opencl():
    dev = OPENCL[0]
    rng = np.random.default_rng(12)
    h = (rng.standard_normal((9000, 3)) * 10.0 ** rng.integers(-4, 5, (9000, 3))).astype(np.float32)
    h[5, 1] = np.nan
    a = tack.array(h, tack.vec3, device=dev)
    for op in ("sum", "min", "max"):  # the columns alone on the same device (its blocks), bit for bit
        same_bits(tack.reduce(a, op), np.array([tack.reduce(tack.array(np.ascontiguousarray(h[:, c]), device=dev),
                                                             op) for c in range(3)], np.float32))
    same_bits(tack.reduce(a, "min"), h.min(axis=0))
    hi = rng.integers(-99, 99, (9000, 2, 2)).astype(np.int32)
    same_bits(tack.reduce(tack.array(hi.astype(np.float64), tack.mat22d, device=dev), "max"), hi.max(axis=0) * 1.0)
    same_bits(tack.reduce(tack.array(hi.reshape(9000, 4), tack.vec4i, device=dev)), hi.reshape(9000, 4).sum(axis=0))
    hf = hi[:, 0].astype(np.float64)  # whole numbers: their sum is exact in any order
    same_bits(tack.reduce(tack.array(hf, tack.vec2d, device=dev), _vec_add, initial=1.0), hf.sum(axis=0) + 1)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_scan_and_segmented_reduce_of_vectors_run_on_opencl():
    dev = OPENCL[0]
    rng = np.random.default_rng(13)
    h = (rng.standard_normal((9000, 3)) * 10.0 ** rng.integers(-4, 5, (9000, 3))).astype(np.float32)
    h[5, 1] = np.nan
    a = tack.array(h, tack.vec3, device=dev)
    cols = [tack.array(np.ascontiguousarray(h[:, c]), device=dev) for c in range(3)]
    off = np.array([0, 7, 7, 5000, 9000])
    # the columns alone on the same device (its blocks), bit for bit: the vector kernels (sums) and
    # the scalar ones on strided views (max)
    for got, alone in ((tack.scan(a), [tack.scan(c) for c in cols]),
                       (tack.scan(a, "max", exclusive=True), [tack.scan(c, "max", exclusive=True) for c in cols]),
                       (tack.segmented_reduce(a, off), [tack.segmented_reduce(c, off) for c in cols])):
        assert got.device == dev
        same_bits(got.numpy(), np.stack([c.numpy() for c in alone], 1))
    hi = rng.integers(-99, 99, (9000, 4)).astype(np.int32)  # int32 sums widen to (n, 4) int64, as NumPy's
    same_bits(tack.scan(tack.array(hi, tack.vec4i, device=dev)).numpy(), np.cumsum(hi, axis=0))


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_a_numpy_second_argument_goes_to_the_first_arrays_device():
    # tack.compact(opencl_array, numpy_mask) was "mask is on cpu and a on opencl:0" (sort's values
    # and searchsorted's v alike), where segmented_reduce's offsets and histogram's bins were taken
    dev = next(d for d in tack.devices() if d.startswith("opencl"))
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int32)
    a = tack.array(x, device=dev)
    out = tack.compact(a, x > 2)
    assert out.device == dev and out.numpy().tolist() == x[x > 2].tolist()
    keys, vals = tack.sort(a, np.arange(8))
    assert vals.device == dev and vals.numpy().tolist() == np.argsort(x, kind="stable").tolist()
    s = tack.sort(a)
    at = tack.searchsorted(s, np.array([2, 5]))
    assert at.device == dev and at.numpy().tolist() == np.searchsorted(np.sort(x), [2, 5]).tolist()
    with pytest.raises(ValueError, match="mask is on cpu and a on opencl"):  # a Tack array stays where it is
        tack.compact(a, tack.array(x > 2))


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
@pytest.mark.skipif(os.environ.get("TACK_TEST_ALL") != "1",
                    reason="the other primitives on PoCL: make test-all (each is a few more PoCL programs)")
def test_the_other_primitives_run_on_opencl():
    dev, x, f, X, F, same = _opencl_data()
    same(tack.scan(F, "max", exclusive=True)[1:], np.maximum.accumulate(f)[:-1])
    same(tack.argsort(F), np.argsort(f, kind="stable"))
    assert tack.reduce(X, "min") == x.min() and tack.reduce(X, "sum") == x.sum()
    same(tack.sort(X), np.sort(x))
    same(tack.unique(F), np.unique(f))
    same(tack.searchsorted(tack.array(np.sort(f), device=dev), F, "right"), np.searchsorted(np.sort(f), f, "right"))
    same(tack.histogram(X, 7)[0], np.histogram(x, 7)[0])
    off = np.array([0, 10, 10, 2000, 3000])
    same(tack.segmented_reduce(X, off, "max", initial=-99),
         [x[a:b].max(initial=-99) for a, b in zip(off[:-1], off[1:])])
    packed = tack.array((x.astype(np.int64) + 50) << 32 | np.arange(x.size), device=dev)
    got = tack.reduce(packed, _argmax_pair)
    assert (got >> 32, got & 0xFFFFFFFF) == (x.max() + 50, x.argmax())


def every_source(target):
    """The source of every kernel the primitives launch, for `target`, with
    32-bit floats (Metal has no double) and the integer widths they use."""
    from tack import _algorithms as A
    from tack import _algorithms_sort as S
    from tack import _algorithms_sort_blocks as SB
    from tack import _algorithms_vectors as V

    def z(n, dt):
        return tack.zeros(n, dt)

    def rows(x, dt):  # a vec3 array as the (n, 3) array of its components, a view
        return x._field_view(dt, 0, (x.shape[0], 3), (3, 1))

    f32, i32, i64, u32 = np.float32, np.int32, np.int64, np.uint32
    calls = [
        (A._scan, (z(4, i32), z(4, i64), z(2, i64), z(2, i64), 2, 0, 0)),
        (A._scan, (z(4, f32), z(4, f32), z(2, f32), z(2, f32), 2, 0, 1)),
        (A._scan_with(A._op_sum), (z(4, np.complex64), z(4, np.complex64), z(2, np.complex64), z(2, np.complex64), 2, 0)),
        (A._reduce_sum, (z(4, f32), z(2, f32), z(2, f32), 2)),
        (A._minmax("min"), (z(4, f32), z(2, f32), z(2, f32), z(3, i64), 2, 1)),
        (A._minmax("max"), (z(4, i32), z(2, i32), z(2, i32), z(3, i64), 2, 0)),
        (S._key_span, (z(4, u32), z(5, u32), tack.zeros((2, 2), u32), 2, 2)),
        (S._radix_pass, (z(4, u32), z(1, i64), z(4, u32), z(1, i64), z(5, u32), tack.zeros((2, 256), i64), z(256, i64),
                         2, 0, 2, 0, 1)),
        (S._radix_pass_kv, (z(4, u32), z(4, i32), z(4, u32), z(4, i64), z(5, u32), tack.zeros((2, 256), i64),
                            z(256, i64), 2, 0, 2, 0, 0)),
        (S._radix_pass_kv, (z(4, np.uint64), z(4, f32), z(4, np.uint64), z(4, f32), z(5, np.uint64),
                            tack.zeros((2, 256), i64), z(256, i64), 1, 0, 2, 0, 1)),
        (SB._radix_pass_blocks, (z(4, u32), z(1, i64), z(4, u32), z(1, i64), z(5, u32), z(SB.TILE, i32),
                                 z(SB.BLOCK, i64), tack.zeros((1, SB.BLOCK), i32), z(1, i64), 2, 0, 0, 1)),
        (SB._radix_pass_blocks_kv, (z(4, np.uint64), z(4, i32), z(4, np.uint64), z(4, i64), z(5, np.uint64),
                                    z(SB.TILE, i32), z(SB.BLOCK, i64), tack.zeros((1, SB.BLOCK), i32), z(1, i64),
                                    1, 8, 1, 0)),
        (SB._unpadded()[0], (z(4, u32), z(1, i64), z(4, u32), z(1, i64), z(5, u32), z(SB.TILE, i32),
                             z(SB.BLOCK, i64), tack.zeros((1, SB.BLOCK), i32), z(1, i64), 2, 0, 0, 1)),
        (SB._key_span_blocks, (z(4, np.uint16), z(5, np.uint16), tack.zeros((1, 2), np.uint64), 2)),
        (S._iota, (z(4, i64),)),
        (A._reduce_kernel(_argmax_pair), (z(4, i64), z(2, i64), 2)),
        (A._count_true, (z(4, np.bool_), z(3, i64), 2)),
        (A._compact_scatter, (z(4, f32), z(4, np.bool_), z(3, i64), z(4, f32), 2)),
        (A._compact_scatter, (z(4, tack.vec3), z(4, np.bool_), z(3, i64), z(4, tack.vec3), 2)),
        (S._gather, (z(4, f32), z(4, i64), z(4, f32))),
        (A._run_starts, (z(4, f32), z(4, np.bool_))),
        (A._searchsorted, (z(4, f32), z(4, f32), z(4, i64), 0)),
        (A._histogram, (z(4, f32), z(5, f32), z(1, f32), z(4, np.int32))),
        (A._histogram_blocks, (z(4, f32), z(5, f32), z(1, f32), tack.zeros((2, 4), i64), z(4, i64), 2)),
        (A._widen, (z(4, np.int32), z(4, i64))),
        (A._segments, (z(4, i32), z(3, i64), z(2, i64), z(1, i64), 0, 1)),
        (A._segment_kernel(_argmax_pair), (z(4, i64), z(3, i64), z(2, i64), z(1, i64), 1)),
        # vectors: the float sums' kernels over vec3; the others' over the (n, 3) rows of components
        (A._scan_with(A._op_sum), (z(4, tack.vec3), z(4, tack.vec3), z(2, tack.vec3), z(2, tack.vec3), 2, 0)),
        (A._segment_kernel(A._op_sum), (z(4, tack.vec3), z(3, i64), z(2, tack.vec3), z(1, tack.vec3), 1)),
        (V._rows()[0], (rows(z(4, tack.vec3i), i32), tack.zeros((4, 3), i64), tack.zeros((2, 3), i64), z(2, i64), 2, 0,
                        0)),
        (V._rows()[1], (rows(z(4, tack.vec3), f32), z(3, i64), rows(z(2, tack.vec3), f32), z(3, f32), 1, 1)),
        # a vector scan to float16: the scalar scan on each component's strided view
        (A._scan, (rows(z(4, tack.vec3), f32)[:, 1], tack.zeros((4, 3), np.float16)[:, 1], z(2, np.float16),
                   z(2, np.float16), 2, 0, 0)),
    ]
    return [k.generated_source(*args, target=target) for k, args in calls]


@pytest.mark.skipif(not (hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0),
                    reason="NVRTC (libnvrtc) is not installed")
def test_cuda_sources_compile_with_nvrtc():
    import _gpu_batch

    cuda = every_source("cuda")  # under make test NVRTC's half, hiprtc the other (_suite.paired_half)
    ptx, entries = _gpu_batch.nvrtc_checked(_suite.paired_half("cuda", cuda, cuda), "sm_80")
    assert all(n in ptx for names in entries for n in names)


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    import _gpu_batch

    # under make test the kernels whose CUDA source NVRTC does not take (_suite.paired_half)
    out = _gpu_batch.hiprtc_checked(_suite.paired_half("hip", every_source("hip"), every_source("cuda")), "gfx90a")
    assert out == b"\x7fELF", out


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_sources_compile_with_ocloc():
    failed = [r for r in _ocloc.check_many([(src, "pvc") for src in every_source("opencl")]) if r is not None]
    assert not failed, failed[0][1][-3000:]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_sources_pass_the_msl_check():
    verdicts = _msl.verdicts(every_source("metal"))
    assert verdicts == ["ok"] * len(verdicts), [v for v in verdicts if v != "ok"][0]


def test_the_benchmark_script_runs(monkeypatch, capsys):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from benchmarks import algorithms as bench

    monkeypatch.setattr(sys, "argv", ["algorithms.py", "--n", "4096", "--rounds", "1"])
    bench.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 16 and rows[1].startswith("| scan (cumsum) |")
    # the sweep over sizes: one row a primitive and size, beside NumPy
    monkeypatch.setattr(sys, "argv", ["algorithms.py", "--sizes", "1e3,2e3", "--rounds", "1", "--budget", "0",
                                      "--only", "reduce"])
    bench.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| reduce")]
    assert [r.split(" | ")[1] for r in rows] == ["1,000"] * 3 + ["2,000"] * 3, rows


def test_the_primitives_are_imported_on_first_use(tmp_path):
    """`import tack` leaves tack._algorithms, the spatial queries and autodiff unimported (they
    import NumPy, which was most of `import tack`'s 240 ms); the names tack/__init__.py lists
    for them are the modules' own, and a kernel's .adjoint reaches autodiff through the hook."""
    from tack import _algorithms

    assert tack._ALGORITHMS == _algorithms.__all__
    probe = ("import sys, tack\n"
             "assert 'numpy' not in sys.modules, 'numpy imported'\n"
             "assert not [m for m in sys.modules if m.startswith(('tack._algorithms', 'tack._autodiff', "
             "'tack._hashgrid', 'tack._bvh'))]\n"
             "assert {'scan', 'HashGrid', 'Tape', 'torch_function'} <= set(dir(tack))\n"
             "import numpy as np\n"
             "@tack.kernel\n"
             "def twice(x, y):\n"
             "    for i in range(x.shape[0]):\n"
             "        y[i] = 2.0 * x[i]\n"
             "x, y = np.arange(3.0), np.zeros(3)\n"
             "twice(x, y)\n"
             "gx = np.zeros(3)\n"
             "twice.adjoint(x, y, grads={'y': np.ones(3), 'x': gx})\n"
             "assert list(gx) == [2.0, 2.0, 2.0], gx\n"
             "assert list(np.asarray(tack.scan(np.arange(4)))) == [0, 1, 3, 6]\n"
             "print('ok')\n")
    script = tmp_path / "probe.py"  # a file: the front end reads a kernel's source back
    script.write_text(probe)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_float_min_and_max_by_integer_keys_edges(dt):
    """float32 and float64 min and max reduce the values' integer keys: infinities, NaNs of
    either sign beside them, denormals, zeros alone and the largest finite values give the serial
    fold's result bit for bit (float64's other cases run in make test-all's test above).  Keys
    are read from 4,096 elements; below, the eight float lanes run as before."""
    info = np.finfo(dt)
    tiny = np.array(info.smallest_subnormal, dt)
    edges = [[np.inf], [-np.inf], [np.inf, -np.inf], [-np.inf, np.inf, np.inf], [info.max, -info.max],
             [tiny, -tiny], [-tiny, 0.0, tiny], [0.0], [-0.0], [-0.0, 0.0], [0.0, -0.0],
             [np.inf, np.nan], [-np.inf, -np.nan], [1.0, -np.nan, np.nan], [np.nan]]
    rng = np.random.default_rng(11)
    for vals in edges:
        for n in (len(vals), 4099):  # the keys from 4,096 elements
            x = np.resize(np.array(vals, dt), n)
            if n > len(vals):
                rng.shuffle(x)
            for op in ("min", "max"):
                with np.errstate(over="ignore"):  # _serial_fold's NaN test casts to float32
                    got, want = tack.reduce(x, op), _serial_fold(x, op)
                assert type(got) is type(want)
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (vals, n, op, got, want)
    if dt == np.float64:
        for n in (4096, 70_001):
            for x in _minmax_cases(dt, n, rng):
                for op in ("min", "max"):
                    assert np.asarray(tack.reduce(x, op)).tobytes() == np.asarray(_serial_fold(x, op)).tobytes()
