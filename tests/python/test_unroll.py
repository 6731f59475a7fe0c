"""Short loops of constant bounds inside a parallel loop are unrolled (src/compiler/passes/unroll.c):
the copies compute what the loop computed, bit for bit, compiled and in debug mode, and a stencil
written with offset loops gets the periodic indices of one written out by hand."""

import re

import numpy as np
import pytest

import tack


def life(a, out):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        c = 0
        for di in range(-1, 2):
            for dj in range(-1, 2):
                if di != 0 or dj != 0:
                    c += a[(i + di) % n, (j + dj) % m]
        out[i, j] = 1 if c == 3 or (c == 2 and a[i, j] == 1) else 0


def life_reference(a):
    c = sum(np.roll(np.roll(a, -di, 0), -dj, 1) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj)
    return ((c == 3) | ((c == 2) & (a == 1))).astype(a.dtype)


@pytest.mark.parametrize("jit", [True, False])
def test_game_of_life_written_with_offset_loops(jit):
    a = (np.random.default_rng(1).random((40, 33)) < 0.3).astype(np.int32)
    out = np.zeros_like(a)
    for _ in range(3):
        tack.kernel(life, jit=jit)(a, out)
        np.testing.assert_array_equal(out, life_reference(a))
        a, out = out, a


@pytest.mark.optimized_source
def test_the_offsets_become_constants_and_the_remainders_periodic():
    a = np.zeros((8, 8), np.int32)
    ir = tack.kernel(life).ir(a, a.copy())
    body = ir.split("pfor", 1)[1]
    assert " for " not in body and "for di" not in body, ir  # no loop left inside the parallel one
    assert body.count("(pmod:") == 16, ir  # each neighbour's two `%` are periodic.c's: `i + c` in the interior


def tails(x, out, last):
    for i in range(out.shape[0]):
        s = 0.0
        t = 0.0
        for k in range(3):                  # a local carried from trip to trip, and one read after the loop
            s = s * 0.5 + x[i + k]
            t = x[i + k] * 2.0
        out[i] = s + t
        for k in range(4, -1, -2):          # a negative step: 4, 2, 0
            out[i] += k * x[i]
        last[i] = k                          # Python leaves the variable at its last value


def jumps(x, out):
    for i in range(out.shape[0]):
        acc = 0.0
        for k in range(4):                  # break: kept as a loop
            if x[i + k] < 0:
                break
            acc += x[i + k]
        for k in range(3):                  # continue: kept as a loop
            if k == 1:
                continue
            acc += 10.0 * x[i + k]
        for k in range(3):                  # assigns its variable: kept as a loop
            acc += x[i + k]
            k = 7
        acc += k
        for k in range(8):                  # eight trips: kept as a loop
            acc += 0.125 * x[i + k]
        out[i] = acc


def branches(x, out):
    for i in range(out.shape[0]):
        best = x[i]
        for k in range(1, 5):
            v = x[i + k]
            if v > best:
                w = v * 2.0                 # a local set under an if, in some copies only
                best = w * 0.5
        out[i] = best


def reference_tails(x, n):
    out, last = np.zeros(n), np.zeros(n, np.int64)
    for i in range(n):
        s = t = 0.0
        for k in range(3):
            s = s * 0.5 + x[i + k]
            t = x[i + k] * 2.0
        out[i] = s + t
        for k in range(4, -1, -2):
            out[i] += k * x[i]
        last[i] = k
    return out, last


@pytest.mark.parametrize("jit", [True, False])
def test_unrolled_loops_compute_what_the_loop_computed(jit):
    x = np.random.default_rng(2).standard_normal(40)
    n = 30
    out, last = np.zeros(n), np.zeros(n, np.int64)
    tack.kernel(tails, jit=jit)(x, out, last)
    want_out, want_last = reference_tails(x, n)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(last, want_last)

    got = np.zeros(n)
    tack.kernel(jumps, jit=jit)(x, got)
    want = np.zeros(n)
    for i in range(n):
        acc = 0.0
        for k in range(4):
            if x[i + k] < 0:
                break
            acc += x[i + k]
        for k in (0, 2):
            acc += 10.0 * x[i + k]
        for k in range(3):
            acc += x[i + k]
        acc += 7
        for k in range(8):
            acc += 0.125 * x[i + k]
        want[i] = acc
    np.testing.assert_array_equal(got, want)

    got = np.zeros(n)
    tack.kernel(branches, jit=jit)(x, got)
    np.testing.assert_array_equal(got, np.lib.stride_tricks.sliding_window_view(x, 5)[:n].max(1))


@pytest.mark.optimized_source
def test_what_is_unrolled_and_what_stays_a_loop():
    x = np.zeros(40)
    ir = tack.kernel(tails).ir(x, np.zeros(30), np.zeros(30, np.int64))
    assert " for " not in ir.split("pfor", 1)[1], ir
    ir = tack.kernel(jumps).ir(x, np.zeros(30))
    body = ir.split("pfor", 1)[1]
    # break, continue and assigned (range(3) twice), eight trips (a loop may be written in two versions)
    assert set(re.findall(r"for k\S* in range\(([-0-9, ]*)\)", body)) == {"0, 4, 1", "0, 3, 1", "0, 8, 1"}, ir
    assert body.count("range(0, 3, 1)") >= 2, ir


def stencil5(u, out):
    n = u.shape[0]
    for i in range(n):
        acc = 0.0
        for d in range(-2, 3):
            acc += u[min(max(i + d, 0), n - 1)] * (3 - abs(d))
        out[i] = acc


@pytest.mark.parametrize("jit", [True, False])
def test_a_clamped_five_point_stencil(jit):
    u = np.random.default_rng(3).standard_normal(50).astype(np.float32)
    out = np.zeros_like(u)
    tack.kernel(stencil5, jit=jit)(u, out)
    idx = np.clip(np.arange(50)[:, None] + np.arange(-2, 3)[None, :], 0, 49)
    want = np.zeros(50, np.float32)
    for c, d in enumerate(range(-2, 3)):  # in the kernel's order, in f32
        want = want + u[idx[:, c]] * np.float32(3 - abs(d))
    np.testing.assert_array_equal(out, want)


@tack.func
def _pull(v, s):
    return v * s + v


def vector_sums(x, out):
    for i in range(out.shape[0]):
        v = x[i]
        acc = tack.vec3d(0.0, 0.0, 0.0)
        for k in range(3):                  # a @tack.func's vector result summed: the copies' temporaries
            acc += _pull(v, 0.5 + k)        # become versions in a body whose nodes lowering shares
        out[i] = acc + v


@pytest.mark.parametrize("jit", [True, False])
def test_vector_sums_through_a_func(jit):
    x = np.random.default_rng(4).standard_normal((6, 3))
    out = tack.zeros(6, tack.vec3d)
    tack.kernel(vector_sums, jit=jit)(tack.array(x, tack.vec3d), out)
    want = np.zeros((6, 3))
    for k in range(3):
        want = want + (x * (0.5 + k) + x)
    np.testing.assert_array_equal(out.numpy(), want + x)


def crosses(x, out):
    for i in range(out.shape[0]):
        c = tack.cross(x[i], tack.vec3d(0.0, 0.0, 1.0))
        c = tack.cross(c, x[i])             # assigned again from itself: a version reading the first, whose
        s = 0.0                             # lowering reads each operand in several places (one node)
        for k in range(3):
            s += c[k] * k
        out[i] = s


@pytest.mark.parametrize("jit", [True, False])
def test_a_local_assigned_twice_beside_an_unrolled_loop(jit):
    x = np.random.default_rng(5).standard_normal((6, 3))
    out = np.zeros(6)
    tack.kernel(crosses, jit=jit)(tack.array(x, tack.vec3d), out)
    c = np.cross(np.cross(x, [0.0, 0.0, 1.0]), x)
    np.testing.assert_array_equal(out, ((0.0 + c[:, 0] * 0) + c[:, 1] * 1) + c[:, 2] * 2)
