"""tack.random's draws in SIMD lanes and in debug mode (issue 41, item 4).

A parallel loop that calls a @tack.func without checks, loops or arrays (the
draws: Philox's rounds, the uniforms, the normals' own log and cos) runs in
SIMD lanes (emit_lanes.c's em_lane_func); debug mode draws a block of counters at
once through the same bodies on NumPy arrays (_debug._random_draw).  Every
value must keep its bits: the compiled loop's, debug mode's and the host's
are one stream.
"""
import numpy as np
import pytest

import tack
import tack.random as tr


def draws_fn(seed, a, b, c, d, w):
    for i in range(a.shape[0]):
        a[i] = tr.normal(seed, i)
        b[i] = tr.normal_f32(seed, i)
        c[i] = tr.uniform(seed, i)
        d[i] = tr.uniform_f32(seed, i)
        w0, w1, w2, w3 = tr.block(seed, i)
        w[i] = w0 ^ w3


draws = tack.kernel(draws_fn)
draws_py = tack.kernel(jit=False)(draws_fn)


@tack.func
def checked(x):
    assert x >= 0.0, "negative"
    return x * 2.0


@tack.kernel
def calls_checked(a):
    for i in range(a.shape[0]):
        a[i] = checked(a[i])


def odd_counters_fn(seed, lo, a):
    for i in range(a.shape[0]):
        a[i] = tr.normal(seed, lo + i)


odd_counters = tack.kernel(odd_counters_fn)
odd_counters_py = tack.kernel(jit=False)(odd_counters_fn)


def _outs(n):
    return [np.empty(n), np.empty(n, np.float32), np.empty(n), np.empty(n, np.float32), np.empty(n, np.uint32)]


def _host(seed, n):
    c = np.arange(n, dtype=np.uint64)
    w = tr.block(seed, c)
    return [tr.normal(seed, c), tr.normal_f32(seed, c), tr.uniform(seed, c), tr.uniform_f32(seed, c), w[0] ^ w[3]]


def _same(x, y):
    return x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.optimized_source
def test_a_loop_that_draws_runs_in_lanes():
    src = draws.generated_source(1, *_outs(4))
    assert "#pragma omp simd" in src[src.index("static void tk_pfor0"):]
    # a function that can fail keeps its loop out of lanes
    src = calls_checked.generated_source(np.empty(4))
    assert "#pragma omp simd" not in src[src.index("static void tk_pfor0"):]


def test_lanes_keep_every_bit():
    n = 5000  # whole vectors and a remainder
    outs = _outs(n)
    draws(2027, *outs)
    for got, want in zip(outs, _host(2027, n)):
        assert _same(got, want)
    a = np.arange(37.0)
    calls_checked(a)
    assert np.array_equal(a, np.arange(37.0) * 2)
    with pytest.raises(AssertionError, match="negative"):
        calls_checked(np.array([1.0, -1.0]))


def test_debug_mode_draws_the_compiled_bits():
    n = 100
    want, got = _outs(n), _outs(n)
    draws(7, *want)
    draws_py(7, *got)
    for x, y in zip(got, want):
        assert _same(x, y)
    # counters across a block's edge, from a NumPy seed; a negative counter and a float seed
    # take the function's body as written, with the same bits
    for seed, lo in ((np.uint32(9), 4090), (9, -3), (9.0, 5)):
        a, b = np.empty(12), np.empty(12)
        odd_counters(seed, lo, a)
        odd_counters_py(seed, lo, b)
        assert _same(a, b), (seed, lo)


def test_debug_mode_keeps_the_nan_seed_error():
    with pytest.raises(ValueError):
        draws_py(float("nan"), *_outs(2))
