"""Division by loop-invariant divisors (src/compiler/passes/strength.c) against NumPy.

Floor division and modulo in a parallel loop take a vectorizable fast path
(a double reciprocal and an exact fix-up) when the dividend is provably below
2^52 and the divisor is; otherwise the exact helpers.  NumPy's // and % have
Python's floor semantics, so every result here must equal NumPy's, on both
sides of each bound the fast path relies on.
"""
import os

import numpy as np
import pytest

import tack

import _suite

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
B52 = 2**52
B50 = 2**50

DIVISORS = [1, -1, 2, -2, 3, -3, 7, -7, 10, 255, 256, -256, 1000003, -1000003, 2**31 - 1, -(2**31),
            2**40 + 7, -(2**40) - 7, B52 - 1, -(B52 - 1), B52, -B52, B52 + 1, 2**62, -(2**62), I64_MAX, I64_MIN]


@tack.kernel
def divmod_range(q, r, lo, d):
    for i in range(lo, lo + q.shape[0]):
        q[i - lo] = i // d
        r[i - lo] = i % d


@tack.kernel
def divmod_array(a, q, r, d):
    for i in range(a.shape[0]):
        q[i] = a[i] // d
        r[i] = a[i] % d


@tack.kernel
def divmod_chain(a, q, r, m, d):
    for i in range(a.shape[0]):
        t = a[i] % m
        q[i] = t // d
        r[i] = (i // m) % d


@tack.kernel
def modmod(a, r, m, d):
    for i in range(a.shape[0]):
        r[i] = (a[i] % m) % d


@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


def _ref_divmod(a, d):
    return [x // d for x in a], [x % d for x in a]


@pytest.mark.parametrize("d", DIVISORS)
@pytest.mark.parametrize("lo", [0, -1000, -B50 - 3, -B50 + 1, B50 - 600, B50, B52 - 300, -B52 - 300,
                                2**62, I64_MIN, I64_MAX - 600])
def test_range_dividends(lo, d):
    n = 513
    q = np.empty(n, np.int64)
    r = np.empty(n, np.int64)
    divmod_range(q, r, lo, d)
    idx = [lo + k for k in range(n)]
    rq, rr = _ref_divmod(idx, d)
    assert q.tolist() == [_wrap64(x) for x in rq]
    assert r.tolist() == rr


def _wrap64(x):
    return (x + 2**63) % 2**64 - 2**63


@pytest.mark.parametrize("d", DIVISORS)
def test_int64_array_dividends(d):
    rng = np.random.default_rng(abs(d) % 1000)
    a = np.concatenate([
        rng.integers(I64_MIN, I64_MAX, 200, dtype=np.int64, endpoint=True),
        rng.integers(-1000, 1000, 200, dtype=np.int64),
        np.array([0, 1, -1, I64_MIN, I64_MAX, B52, -B52, B52 - 1, -B52 + 1, d, -d if d != I64_MIN else 0],
                 dtype=np.int64),
    ])
    q = np.empty_like(a)
    r = np.empty_like(a)
    divmod_array(a, q, r, d)
    rq, rr = _ref_divmod([int(x) for x in a], d)
    assert q.tolist() == [_wrap64(x) for x in rq]
    assert r.tolist() == rr


@pytest.mark.parametrize("d", [1, -1, 2, -2, 3, -7, 256, -256, 65537, -65537, 2**31 - 1, -(2**31)])
def test_int32_array_dividends(d):
    rng = np.random.default_rng(abs(d) % 997)
    a = np.concatenate([
        rng.integers(-(2**31), 2**31, 400, dtype=np.int32),
        np.array([0, 1, -1, -(2**31), 2**31 - 1, 2**30, -(2**30)], dtype=np.int32),
    ])
    q = np.empty_like(a)
    r = np.empty_like(a)
    divmod_array(a, q, r, np.int32(d))
    with np.errstate(all="ignore"):
        assert np.array_equal(q, a // np.int32(d))
        assert np.array_equal(r, a % np.int32(d))


@pytest.mark.parametrize("m", [1, 3, -5, 1000, B52 - 1, B52 + 5, -(2**62)])
@pytest.mark.parametrize("d", [1, -1, 7, -7, 2**20, B52 - 1, -(2**60)])
def test_bounded_by_modulo(m, d):
    rng = np.random.default_rng(m % 1000 + d % 1000)
    a = np.concatenate([rng.integers(I64_MIN, I64_MAX, 300, dtype=np.int64),
                        np.array([I64_MIN, I64_MAX, 0, -1], dtype=np.int64)])
    q = np.empty_like(a)
    r = np.empty_like(a)
    divmod_chain(a, q, r, m, d)
    assert q.tolist() == [(int(x) % m) // d for x in a]
    assert r.tolist() == [(i // m) % d for i in range(a.size)]


@pytest.mark.parametrize("nx,ny,nz", [(256, 256, 4), (1, 1, 7), (3, 5, 7), (17, 1, 9), (1000, 3, 2), (7, 11, 64)])
def test_radius_squared(nx, ny, nz):
    n = nx * ny * nz
    v = np.empty(n, np.float32)
    radius_squared(v, nx, ny)
    i = np.arange(n)
    ref = ((i % nx) - (nx - 1) * 0.5) ** 2 + (((i // nx) % ny) - (ny - 1) * 0.5) ** 2 + ((i // (nx * ny)) - 2.0) ** 2
    assert np.allclose(v, ref, rtol=1e-6, atol=0)


@pytest.mark.parametrize("nx,ny", [(-3, 5), (4, -6), (-2, -9)])
def test_radius_squared_negative_divisors(nx, ny):
    n = 500
    v = np.empty(n, np.float32)
    radius_squared(v, nx, ny)
    ref = np.array([(float(i % nx) - float(nx - 1) * 0.5) ** 2 + (float((i // nx) % ny) - float(ny - 1) * 0.5) ** 2
                    + (float(i // (nx * ny)) - 2.0) ** 2 for i in range(n)])
    assert np.allclose(v, ref, rtol=1e-6, atol=0)


@pytest.mark.optimized_source
def test_radius_squared_takes_the_fast_path():
    src = radius_squared.generated_source(np.empty(8, np.float32), 2, 2)
    body = src[src.index("static void tk_pfor0"):src.index("tack_entry")]
    assert "tk_fdivq_i64" in body and "tk_modq_i64" in body
    # nx * ny and its zero check run before the loop, not in it
    assert "abi->fail" not in body
    assert "(uint64_t)(v0_nx) * (uint64_t)(v1_ny)" not in body


def test_zero_divisor_after_hoisting():
    v = np.empty(10, np.float32)
    with pytest.raises(ZeroDivisionError):
        radius_squared(v, 0, 3)
    with pytest.raises(ZeroDivisionError):
        radius_squared(v, 3, 0)
    # a loop that does not run divides by nothing
    radius_squared(np.empty(0, np.float32), 0, 0)
    q = np.empty(0, np.int64)
    divmod_range(q, q, 5, 0)
    with pytest.raises(ZeroDivisionError):
        divmod_range(np.empty(3, np.int64), np.empty(3, np.int64), 5, 0)


def _pfor_body(src):
    return src[src.index("static void tk_pfor0"):src.index("tack_entry")]


@pytest.mark.optimized_source
def test_which_divisions_take_the_fast_path():
    q = np.empty(4, np.int64)
    i32 = np.empty(4, np.int32)
    # the loop index (bounded under the loop's flag) and int32 values: fast
    assert "tk_fdivq_i64" in _pfor_body(divmod_range.generated_source(q, q, 0, 3))
    assert "tk_modq_i64" in _pfor_body(divmod_array.generated_source(i32, i32, i32, np.int32(3)))
    # an int64 loaded from memory is not bounded: the exact helpers only
    body = _pfor_body(divmod_array.generated_source(q, q, q, 3))
    assert "tk_fdivq_i64" not in body and "tk_fdiv_i64" in body
    # a % m is bounded by m: (a % m) // d is fast, a % m itself is not
    body = _pfor_body(divmod_chain.generated_source(q, q, q, 5, 3))
    assert "tk_fdivq_i64" in body and "tk_mod_i64" in body


@pytest.mark.parametrize("d", [15, 16, 17, 63, 64, 100, 4096, 65537, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1,
                               2**33 + 1, B52 - 1])
@pytest.mark.parametrize("lo", [0, -77777, -B50 + 5, B50 - 200003, 12345678901, 5 * (2**31 - 1) - 100001,
                                -3 * 2**31 - 100001])
def test_segmented_index_division(lo, d):
    # i // d and i % d of the loop index over many chunks: the loop runs in
    # segments of constant i // d when d >= 16
    n = 200003
    q = np.empty(n, np.int64)
    r = np.empty(n, np.int64)
    divmod_range(q, r, lo, d)
    i = np.arange(lo, lo + n, dtype=np.int64)
    assert np.array_equal(q, i // d)
    assert np.array_equal(r, i % d)


@pytest.mark.optimized_source
def test_segmented_loop_is_emitted():
    body = _pfor_body(radius_squared.generated_source(np.empty(8, np.float32), 2, 2))
    assert "for (int64_t s_ = lo_" in body
    # in a segment, i % d counts in 32 bits from the segment's start remainder
    assert "for (int32_t k_ = " in body and "+ k_))" in body
    # which the run-time divisors must allow: 16 <= d <= 2^31 - 1, tested once per launch
    src = radius_squared.generated_source(np.empty(8, np.float32), 2, 2)
    entry = src[src.index("tack_entry"):]
    assert "16LL" in entry and "2147483647LL" in entry


@tack.kernel
def big_const_divs(o1, o2, o3, o4, lo):
    for i in range(lo, lo + o1.shape[0]):
        o1[i - lo] = i % 2147483647
        o2[i - lo] = i // 2147483648
        o3[i - lo] = float(i % 2147483647)
        o4[i - lo] = i % 4294967311


@pytest.mark.parametrize("lo", [0, 2147483647 - 50000, 2**31 - 50000, 7 * 2**31 - 3, -(2**40) - 77, B50 - 100003,
                                3 * 4294967311 - 50000])
def test_constant_divisors_at_the_int32_bound(lo):
    # 2^31 - 1 is segmented (the remainder counts in 32 bits), larger divisors are not
    n = 100003
    o1, o2, o4 = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    o3 = np.empty(n, np.float32)
    big_const_divs(o1, o2, o3, o4, lo)
    i = np.arange(lo, lo + n, dtype=np.int64)
    assert np.array_equal(o1, i % 2147483647)
    assert np.array_equal(o2, i // 2147483648)
    assert np.array_equal(o3, (i % 2147483647).astype(np.float32))
    assert np.array_equal(o4, i % 4294967311)


def _estimate_misses(d, rng):
    """Dividends below 2^52 where floor(a * fl(1/d)) is off by one: the fix-up's cases."""
    k = rng.integers(-(2**52) // abs(d) + 2, (2**52) // abs(d) - 2, 400_000, dtype=np.int64)
    a = np.concatenate([rng.integers(-(2**52) + 1, 2**52, 1_000_000, dtype=np.int64), k * d, k * d - 1, k * d + 1])
    a = a[np.abs(a) < 2**52 - 1]
    miss = np.floor(a.astype(np.float64) * (1.0 / d)).astype(np.int64) != a // d
    return a[miss]


@pytest.mark.parametrize("d", [-496175, 496175, 250435, -1013415, 3, -3, 1000003, 12345, -77777])
def test_fixup_cases(d):
    # the estimate is exact for most dividends; these are the ones where it is
    # not, so the fix-up itself is tested (fed through a % m, bounded by m)
    rng = np.random.default_rng(abs(d))
    miss = _estimate_misses(d, rng)
    extra = np.array([0, 1, -1, d, -d, 2**52 - 2, -(2**52) + 2], dtype=np.int64)
    for sign in (1, -1):
        a = np.concatenate([miss, extra])
        a = a[(a > 0) if sign > 0 else (a < 0)] if a.size else a
        m = sign * (2**52 - 1)
        q = np.empty_like(a)
        r = np.empty_like(a)
        divmod_chain(a, q, r, m, d)
        assert q.tolist() == [(int(x) % m) // d for x in a]
        assert q.tolist() == [int(x) // d for x in a]
        modmod(a, r, m, d)
        assert r.tolist() == [int(x) % d for x in a]


def test_fixup_cases_exist():
    rng = np.random.default_rng(7)
    assert sum(_estimate_misses(d, rng).size for d in (-496175, 250435, -1013415)) > 0


@tack.kernel
def const_divs(o1, o2, o3, o4, o5, lo):
    for i in range(lo, lo + o1.shape[0]):
        o1[i - lo] = i // 256
        o2[i - lo] = i % 7
        o3[i - lo] = (i // 3) % 5
        o4[i - lo] = i // -100
        o5[i - lo] = i % -64


@pytest.mark.parametrize("lo", [0, -100003, B50 - 50000, -B50, B52, I64_MIN, I64_MAX - 100003])
def test_constant_divisors(lo):
    # constants take the fast path (and 256 the segmented one) when the index is bounded
    n = 100003
    out = [np.empty(n, np.int64) for _ in range(5)]
    const_divs(*out, lo)
    i = np.array([lo + k for k in range(n)], dtype=np.int64) if lo > I64_MAX - n or lo < I64_MIN + n \
        else np.arange(lo, lo + n, dtype=np.int64)
    assert np.array_equal(out[0], i // 256)
    assert np.array_equal(out[1], i % 7)
    assert np.array_equal(out[2], (i // 3) % 5)
    assert np.array_equal(out[3], i // -100)
    assert np.array_equal(out[4], i % -64)
    if os.environ.get("TACK_OPT") == "0":  # the differential run: no strength reduction
        return
    body = _pfor_body(const_divs.generated_source(*out, 0))
    assert "tk_modq_i64(v" in body and "for (int64_t s_ = lo_" in body


@pytest.mark.optimized_source
def test_exact_version_is_a_cold_function():
    """The exact version (run when a value is beyond 2^52) is compiled for size, without lanes."""
    src = radius_squared.generated_source(np.empty(8, np.float32), 2, 2)
    cold = src[src.index("exact divisions */"):src.index("static void tk_pfor0(")]
    assert "__attribute__((cold, noinline))" in cold and "tk_fdivq_i64(v" in cold
    assert "#pragma omp simd" not in cold and ", 0)" in cold
    hot = src[src.index("static void tk_pfor0("):src.index("__attribute__((visibility")]
    assert "tk_pfor0_x(fp_, lo_, hi_); return; }" in hot and "#pragma omp simd" in hot


def _by_constant_powers_of_two(a, q, r):
    for i in range(a.shape[0]):
        q[i, 0] = a[i] // 2
        r[i, 0] = a[i] % 2
        q[i, 1] = a[i] // 64
        r[i, 1] = a[i] % 64
        q[i, 2] = a[i] // -2            # a negative divisor keeps the exact helper
        r[i, 2] = a[i] % -2
        q[i, 3] = (a[i] + 1) // 4
        r[i, 3] = (a[i] - 1) % 4


def _by_wide_powers_of_two(a, q, r):
    for i in range(a.shape[0]):
        q[i, 0] = a[i] // 2**40
        r[i, 0] = a[i] % 2**40
        q[i, 1] = a[i] // 2**62
        r[i, 1] = a[i] % 2**62


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64] if _suite.TEST_ALL else [np.int8, np.int64])
def test_constant_powers_of_two_are_shifts_and_masks(jit, dt):  # the middle widths under make test-all
    # `x // 2^k` is the arithmetic shift and `x % 2^k` the low k bits: the exact helper's test
    # of the remainder's sign was a branch on the parity of x, taken half the time at random
    # (a binary search's `mid = (lo + hi) // 2`: 1.4-1.7x Numba's time, now 1.1-1.2x)
    info = np.iinfo(dt)
    a = np.concatenate([np.arange(-300, 300).astype(dt),
                        np.array([info.min, info.min + 1, info.max, info.max - 1], dt)])
    q, r = np.zeros((len(a), 4), dt), np.zeros((len(a), 4), dt)
    k = tack.kernel(_by_constant_powers_of_two, jit=jit)
    k(a, q, r)
    with np.errstate(all="ignore"):
        one = dt(1)
        want_q = [a // dt(2), a // dt(64), a // dt(-2), (a + one) // dt(4)]
        want_r = [a % dt(2), a % dt(64), a % dt(-2), (a - one) % dt(4)]
    for c in range(4):
        assert q[:, c].tolist() == want_q[c].tolist(), c
        assert r[:, c].tolist() == want_r[c].tolist(), c


@pytest.mark.optimized_source
def test_constant_powers_of_two_are_emitted_as_shifts_and_masks():
    a, q = np.zeros(4, np.int16), np.zeros((4, 4), np.int16)
    src = tack.kernel(_by_constant_powers_of_two).generated_source(a, q, q)
    assert ">> 1)" in src and ">> 6)" in src and "& (((int64_t)1 << 6) - (int64_t)1)" in src
    assert "((int64_t)2LL), 0x1p-1" not in src and "((int64_t)-2LL)" in src  # // -2 keeps the helpers


@pytest.mark.parametrize("jit", [True, False])
def test_wide_constant_powers_of_two(jit):
    a = np.array([I64_MIN, I64_MIN + 1, -(2**62) - 1, -(2**40), -(2**40) + 1, -1, 0, 1, 2**40 - 1, 2**40,
                  2**62, I64_MAX], np.int64)
    q, r = np.zeros((len(a), 2), np.int64), np.zeros((len(a), 2), np.int64)
    tack.kernel(_by_wide_powers_of_two, jit=jit)(a, q, r)
    assert q.tolist() == [[int(x) // 2**40, int(x) // 2**62] for x in a]
    assert r.tolist() == [[int(x) % 2**40, int(x) % 2**62] for x in a]
