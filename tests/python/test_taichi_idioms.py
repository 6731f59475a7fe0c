"""What Taichi's and Warp's simulations (MPM88, SPH, stable fluids, cloth, n-body) write, in Tack
(docs/language.md): an array indexed by an integer vector (`grid[base + offset]`), integer and float
vectors under `//` and `%`, loops over constant tuples (Taichi's `ti.static` loops over offsets), and
NumPy's method spellings on vectors and matrices (`m.T`, `m.transpose()`, `v.dot(w)`, `m.trace()`),
with the Taichi-only names (`v.norm()` ...) refused by a message naming the function to write.

Each is checked against NumPy, compiled and in debug mode (jit=False) alike, with the same errors in
the same words; one kernel holding all of them is compiled for the GPU dialects (CUDA with NVRTC, HIP
with hiprtc, Metal type-checked by clang, OpenCL run on PoCL against the CPU's bits).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _gpu_batch  # noqa: E402
import _msl  # noqa: E402

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0
JIT = pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])

OFFSETS = ((0, 1), (1, 0), (0, -1), (-1, 0))  # a module's constant tuple, read when the kernel compiles
VOFFSETS = (tack.vec2i(0, 1), tack.vec2i(3, 0))  # and one of vectors made outside a kernel


# ------------------------------------------------------------------ g[p], p an integer vector
def scatter(xs, grid, grid3, table, out):
    for i in range(xs.shape[0]):
        base = tack.vec2i(int(xs[i, 0]), int(xs[i, 1]))
        for off in (tack.vec2i(0, 0), tack.vec2i(0, 1), tack.vec2i(1, 0), tack.vec2i(1, 1)):
            grid[base + off] += 1.0                       # atomic: iterations share cells
        grid3[tack.vec3i(base.x, base.y, i % 2)] += 2.0
        out[tack.vec2i(i, -1)] = table[base] + table[-base - tack.vec2i(1, 1)]  # negative: from the end


@JIT
def test_vector_index_reads_writes_and_adds_atomically_as_numpy(jit):
    rng = np.random.default_rng(0)
    xs = rng.uniform(0, 8, (400, 2))  # 400 particles in 64 cells: most cells are hit many times
    grid, grid3, out = np.zeros((9, 9)), np.zeros((9, 9, 2)), np.zeros((400, 2))
    table = rng.integers(0, 1000, (9, 9)).astype(np.int32)
    tack.kernel(scatter, jit=jit)(xs, grid, grid3, table, out)
    base = xs.astype(np.int64)
    g, g3 = np.zeros((9, 9)), np.zeros((9, 9, 2))
    for dx, dy in ((0, 0), (0, 1), (1, 0), (1, 1)):
        np.add.at(g, (base[:, 0] + dx, base[:, 1] + dy), 1.0)
    np.add.at(g3, (base[:, 0], base[:, 1], np.arange(400) % 2), 2.0)
    np.testing.assert_array_equal(grid, g)
    np.testing.assert_array_equal(grid3, g3)
    np.testing.assert_array_equal(out[:, 0], 0)
    np.testing.assert_array_equal(out[:, 1], table[base[:, 0], base[:, 1]] + table[-base[:, 0] - 1, -base[:, 1] - 1])


def test_vector_index_add_in_a_parallel_loop_is_atomic():
    src = tack.kernel(scatter).generated_source(np.zeros((4, 2)), np.zeros((9, 9)), np.zeros((9, 9, 2)),
                                                np.zeros((9, 9), np.int32), np.zeros((4, 2)))
    assert "atomic" in src.lower()


def local_grid(p, out):
    for i in range(p.shape[0]):
        g = np.zeros((3, 4), np.int32)
        q = p[i]
        g[q] = 7
        g[q - tack.vec2i(1, 1)] += 2
        out[i] = g[q] * 10 + g[q.x - 1, q.y - 1]


@JIT
def test_vector_index_of_a_local_array(jit):
    p = tack.array(np.array([[1, 1], [2, 3], [-1, -2]], np.int32), tack.vec2i)
    out = np.zeros(3, np.int64)
    tack.kernel(local_grid, jit=jit)(p, out)
    assert out.tolist() == [72, 72, 72]


def wrong_length(g, out):
    for i in range(out.shape[0]):
        out[i] = g[tack.vec3i(i, 0, 0)]


def float_index(g, out):
    for i in range(out.shape[0]):
        out[i] = g[tack.vec2(1.0, 0.0)]


def far(g, out):
    for i in range(out.shape[0]):
        out[i] = g[tack.vec2i(i, 4 * i)]


@JIT
def test_vector_index_errors_name_both_and_the_axis(jit):
    g, out = np.zeros((3, 4)), np.zeros(2)
    with pytest.raises(tack.CompileError, match=r"array 'g' has 2 dimensions but is indexed with a vec3i of 3 "
                                                r"components"):
        tack.kernel(wrong_length, jit=jit)(g, out)
    with pytest.raises(tack.CompileError, match=r"an index vector must have integer components"):
        tack.kernel(float_index, jit=jit)(g, out)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 1 with size 4 \(array 'g', kernel far"):
        tack.kernel(far, jit=jit, checks=True)(g, out)


# ------------------------------------------------------------------ // and % of vectors
def divmods(a, b, s, q, r, qs, rs, sq, sr):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        qs[i] = a[i] // s[i]
        rs[i] = a[i] % s[i]
        sq[i] = 7 // b[i]
        sr[i] = 7 % b[i]


@JIT
@pytest.mark.parametrize("dt, n", [(np.int32, 2), (np.int32, 4), (np.float32, 3), (np.float64, 4)])
def test_vector_floordiv_and_mod_are_numpys_componentwise(dt, n, jit):
    vt = {np.int32: tack.vec2i, np.float32: tack.vec2, np.float64: tack.vec2d}[dt]
    vt = getattr(tack, vt.name.replace("2", str(n)))
    rng = np.random.default_rng(n)
    k = 40
    a = rng.integers(-20, 21, (k, n)).astype(dt)
    b = rng.choice([-7, -3, -2, -1, 1, 2, 5], (k, n)).astype(dt)
    if dt != np.int32:
        a = a + rng.uniform(-1, 1, (k, n)).astype(dt)
        b = b * rng.uniform(0.5, 1.5, (k, n)).astype(dt)
    s = b[:, 0].copy()
    outs = [tack.zeros(k, vt) for _ in range(6)]
    tack.kernel(divmods, jit=jit)(tack.array(a, vt), tack.array(b, vt), s, *outs)
    got = [o.numpy().reshape(k, n) for o in outs]
    seven = dt(7)
    want = [np.floor_divide(a, b), np.remainder(a, b), np.floor_divide(a, s[:, None]), np.remainder(a, s[:, None]),
            np.floor_divide(seven, b), np.remainder(seven, b)]
    for g, w in zip(got, want):
        assert g.dtype == dt
        np.testing.assert_array_equal(g, w)  # bit for bit: each component is the scalar operator


def powers(a, e, p2, p3, ph, pe, two):
    for i in range(a.shape[0]):
        p2[i] = a[i] ** 2
        p3[i] = (a[i] - 1) ** 3
        ph[i] = abs(a[i]) ** 0.5
        pe[i] = abs(a[i]) ** e[i]
        two[i] = 2 ** e[i]


@JIT
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_vector_powers_are_each_components(dt, jit):
    vt = tack.vec3 if dt == np.float32 else tack.vec3d
    rng = np.random.default_rng(7)
    a = rng.uniform(-3, 3, (50, 3)).astype(dt)
    a[0] = [-0.0, 0.0, np.inf]
    e = rng.uniform(-2, 2, (50, 3)).astype(dt)
    outs = [tack.zeros(50, vt) for _ in range(5)]
    tack.kernel(powers, jit=jit)(tack.array(a, vt), tack.array(e, vt), *outs)
    p2, p3, ph, pe, two = (o.numpy() for o in outs)
    np.testing.assert_array_equal(p2, a * a)
    tol = dict(rtol=4 * np.finfo(dt).eps, atol=0)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(p3, (a - 1) ** 3, **tol)
        np.testing.assert_allclose(ph, np.abs(a) ** 0.5, **tol)
        np.testing.assert_allclose(pe, np.abs(a) ** e, **tol)
        np.testing.assert_allclose(two, dt(2) ** e, **tol)
    if jit:  # debug mode: each component the scalar power, as a number's is there (not NumPy's array
        # shortcuts): the same bits for ** 2 and ** 0.5; other powers within ulps, as for numbers
        dbg = [tack.zeros(50, vt) for _ in range(5)]
        tack.kernel(powers, jit=False)(tack.array(a, vt), tack.array(e, vt), *dbg)
        for j in (0, 2):
            assert outs[j].numpy().tobytes() == dbg[j].numpy().tobytes()
        for o, d in zip(outs, dbg):
            np.testing.assert_allclose(d.numpy(), o.numpy(), **tol)


def int_powers(a, e, q):
    for i in range(a.shape[0]):
        q[i] = a[i] ** e[i] + a[i] ** 2


def negative_literal_power(a, q):
    for i in range(a.shape[0]):
        q[i] = a[i] ** -1


@JIT
def test_int_vector_powers_and_negative_exponents(jit):
    a = tack.array(np.array([[2, -3, 5], [1, 0, -1]], np.int32), tack.vec3i)
    q = tack.zeros(2, tack.vec3i)
    tack.kernel(int_powers, jit=jit)(a, tack.array(np.array([[3, 2, 0], [5, 1, 7]], np.int32), tack.vec3i), q)
    assert q.numpy().tolist() == [[8 + 4, 9 + 9, 1 + 25], [1 + 1, 0, -1 + 1]]
    with pytest.raises(ValueError, match=r"integers to negative integer powers are not allowed"):
        tack.kernel(int_powers, jit=jit, checks=True)(a, tack.array(np.array([[1, 1, 1], [1, -1, 1]], np.int32),
                                                                    tack.vec3i), q)
    with pytest.raises(ValueError, match=r"integers to negative integer powers are not allowed: exponent -1"):
        tack.kernel(negative_literal_power, jit=jit, checks=True)(a, q)  # NumPy's error for an int array


def zero_divisor(a, b, q):
    for i in range(a.shape[0]):
        q[i] = a[i] % b[i]


def truncating(a, q):
    for i in range(a.shape[0]):
        q[i] = a[i] // 0.5


@JIT
def test_vector_zero_divisor_and_float_divisor_of_int_vector(jit):
    a = tack.array(np.array([[7, 8, 9]], np.int32), tack.vec3i)
    b = tack.array(np.array([[2, 0, 1]], np.int32), tack.vec3i)
    q = tack.zeros(1, tack.vec3i)
    with pytest.raises(ZeroDivisionError, match=r"integer modulo by zero \(kernel zero_divisor"):
        tack.kernel(zero_divisor, jit=jit, checks=True)(a, b, q)
    with pytest.raises(tack.CompileError, match=r"the float would be truncated"):
        tack.kernel(truncating, jit=jit)(a, q)


# ------------------------------------------------------------------ loops over constant tuples
def neighbours(a, out, pairs, names):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        s = 0.0
        for di, dj in ((0, 1), (1, 0), (0, -1), (-1, 0)):         # unpacked in the loop
            s += a[(i + di) % n, (j + dj) % m]
        for off in OFFSETS:                                       # a tuple of tuples, named
            x, y = off
            s += 10.0 * a[(i + x) % n, (j + y) % m] + off[0] * off[-2] * a[i, j]   # off[k]: constants
        for w in (1, 2, 4):                                       # numbers
            s += w * a[i, j]
        out[i, j] = s
    t = 0
    for k in (3, -1, 2):                                          # serial code, outside the loop
        for dx, dy in OFFSETS:
            t += k * (dx + 2 * dy + 3)
    pairs[0] = t
    pairs[1] = k                                                  # the last element, as in Python
    u = 0
    for v in (1, 2):
        v = v * 3                                                 # assigned in the body: a local per copy
        u += v
    pairs[2] = u + v
    for o in (tack.vec2i(1, 2), tack.vec2i(-3, 4)):               # vectors
        names[o] += 1
    for o in VOFFSETS:                                            # a module's vectors
        names[o + tack.vec2i(2, 2)] += 10


@JIT
def test_constant_tuple_loops_are_unrolled_as_python_runs_them(jit):
    a = np.random.default_rng(1).integers(-9, 10, (5, 6)).astype(np.float64)
    out, pairs, names = np.zeros((5, 6)), np.zeros(3, np.int64), np.zeros((6, 6), np.int32)
    tack.kernel(neighbours, jit=jit)(a, out, pairs, names)
    r = lambda di, dj: np.roll(a, (-di, -dj), axis=(0, 1))  # noqa: E731 (a[(i + di) % n, ...])
    want = sum(11.0 * r(di, dj) for di, dj in OFFSETS) + 9 * a
    np.testing.assert_array_equal(out, want)
    assert pairs.tolist() == [sum(k * (dx + 2 * dy + 3) for k in (3, -1, 2) for dx, dy in OFFSETS), 2, 9 + 6]
    assert names[1, 2] == 1 and names[-3, 4] == 1 and names[2, 3] == 10 and names[5, 2] == 10 and names.sum() == 22


def exits(a, out, last):
    for i in range(a.shape[0]):
        s = 0
        for k in (1, 2, 3, 4):
            if k == 2 and a[i] > 0:
                continue
            if k * a[i] > 5:
                break
            s += k * 10
        last[i] = k                                   # where the loop left, as in Python
        for dx, dy in ((0, 1), (1, 1), (2, 2)):
            if dx == 1:
                continue
            for j in range(3):                        # its break is its own
                if j == 1:
                    break
                s += dy * 1000
        out[i] = s
    t = 0
    for off in OFFSETS:                               # serial code
        if off[0] == 1:
            break
        t += off[1]
    last[0] += 100 * t


@JIT
def test_constant_tuple_loops_break_and_continue_as_python(jit):
    a = np.array([0, 1, 2, 3, -1, 6], np.int64)
    out, last = np.zeros(6, np.int64), np.zeros(6, np.int64)
    tack.kernel(exits, jit=jit)(a, out, last)
    want_out, want_last = np.zeros(6, np.int64), np.zeros(6, np.int64)
    exits(a, want_out, want_last)                     # the function run by Python itself
    assert out.tolist() == want_out.tolist() and last.tolist() == want_last.tolist()
    assert want_last.tolist() == [104, 4, 3, 3, 4, 1]


def with_local(a):
    for i in range(a.shape[0]):
        for k in (1, a[i]):
            a[i] += k


def assigns_its_variable(a):
    for i in range(a.shape[0]):
        for off in ((0, 1), (1, 0)):
            off = (1, 1)
            a[i] += off[0]


@JIT
def test_constant_tuple_loop_refusals(jit):
    a = np.zeros(3)
    with pytest.raises(tack.CompileError, match=r"its elements must be constants"):
        tack.kernel(with_local, jit=jit)(a)
    with pytest.raises(tack.CompileError, match=r"'off' is the variable of a loop over a tuple of tuples"):
        tack.kernel(assigns_its_variable, jit=jit)(a)


def copies_of_a_parallel_loop(x, idx, out, carried):
    n = x.shape[0]
    for k in (1, 2, 3):                               # at the top level: each copy's loop is parallel
        for i in range(n):
            out[i] = out[i] * 2 + x[i] * k
    for k in (1, 2):
        for i in range(n):
            if i > 0:
                carried[i] = prev * k                 # noqa: F821 (read before assigned in this iteration)
            prev = x[i]


def racing_copies(x, idx, out):
    for k in (1, 2):
        for i in range(x.shape[0]):
            out[idx[i]] = x[i] * k                    # two iterations write one cell


def exit_around_a_parallel_loop(x, out, stop):
    for k in (1, 2, 3):
        for i in range(x.shape[0]):
            out[i] += x[i] * k
        if stop[0] == k:
            break


def continue_before_a_parallel_loop(x, out, stop):
    for k in OFFSETS:
        if stop[0] == k[0]:
            continue
        for k2 in (1, 2):                             # an inner tuple loop's copies go there too
            for i in range(x.shape[0]):
                out[i] += x[i] * k2


def exit_around_a_serial_loop(x, out, stop):
    for t in range(1):                                # serial code: the tuple loop may leave early
        for k in (1, 2, 3):
            for i in range(x.shape[0]):
                out[i] += x[i] * k
            if stop[0] == k:
                break


@JIT
def test_a_top_level_tuple_loops_copies_hold_parallel_loops(jit):
    """A loop over a range in a top-level tuple loop is a parallel loop in each copy, in debug mode
    as compiled: its locals are the iteration's own (debug mode ran it serially, carrying `prev` from
    one iteration to the next where the compiled kernel raised), its races are watched; and a tuple
    loop with a break or continue, whose copies run in a loop of their own, cannot hold one (it ran
    on one thread, unannounced)."""
    x = np.arange(1.0, 7.0)
    out, carried = np.zeros(6), np.zeros(6)
    with pytest.raises(UnboundLocalError):
        tack.kernel(copies_of_a_parallel_loop, jit=jit)(x, np.arange(6), out, carried)
    with pytest.raises(tack.RaceError, match=r"race in kernel 'racing_copies'"), pytest.warns(tack.RaceWarning):
        tack.kernel(racing_copies, jit=jit, check_races=True)(x, np.array([0, 1, 2, 3, 4, 4]), out)

    def twice(x, out):                                # the first half of copies_of_a_parallel_loop
        for k in (1, 2, 3):
            for i in range(x.shape[0]):
                out[i] = out[i] * 2 + x[i] * k

    out[:] = 0.0
    tack.kernel(twice, jit=jit)(x, out)
    assert out.tolist() == (x * 11).tolist()          # ((x * 1) * 2 + x * 2) * 2 + x * 3
    for f in (exit_around_a_parallel_loop, continue_before_a_parallel_loop):
        with pytest.raises(tack.CompileError, match=r"this for loop would be a parallel loop in each copy of the "
                           r"loop over a tuple around it, but that loop has a (break|continue) \(line \d+\)"):
            tack.kernel(f, jit=jit)(x, out, np.array([1]))
    for stop, want in ((1, 1), (2, 3), (5, 6)):      # in serial code the exit is Python's
        out[:] = 0.0
        tack.kernel(exit_around_a_serial_loop, jit=jit)(x, out, np.array([stop]))
        assert out.tolist() == (x * want).tolist()


# ------------------------------------------------------------------ NumPy's methods
def methods(m, v, w, out, tr):
    for i in range(m.shape[0]):
        a = m[i]
        out[i, 0] = a.T @ v[i]
        out[i, 1] = a.transpose() @ v[i] + v[i].T + v[i].transpose()
        out[i, 2] = a.dot(v[i]) + v[i].dot(a)
        out[i, 3] = a.T.T @ w[i]
        tr[i, 0] = v[i].dot(w[i])
        tr[i, 1] = a.trace()


@JIT
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_numpy_method_spellings_are_the_functions(dt, jit):
    rng = np.random.default_rng(3)
    k = 30
    M, V, W = rng.standard_normal((k, 3, 3)).astype(dt), rng.standard_normal((k, 3)).astype(dt), \
        rng.standard_normal((k, 3)).astype(dt)
    vt, mt = (tack.vec3, tack.mat33) if dt == np.float32 else (tack.vec3d, tack.mat33d)
    out, tr = tack.zeros((k, 4), vt), np.zeros((k, 2), dt)
    tack.kernel(methods, jit=jit)(tack.array(M, mt), tack.array(V, vt), tack.array(W, vt), out, tr)

    def spelled(m, v, w, out, tr):  # the same, written with the functions
        for i in range(m.shape[0]):
            a = m[i]
            out[i, 0] = tack.transpose(a) @ v[i]
            out[i, 1] = tack.transpose(a) @ v[i] + v[i] + v[i]
            out[i, 2] = a @ v[i] + v[i] @ a
            out[i, 3] = a @ w[i]
            tr[i, 0] = tack.dot(v[i], w[i])
            tr[i, 1] = tack.trace(a)

    out2, tr2 = tack.zeros((k, 4), vt), np.zeros((k, 2), dt)
    tack.kernel(spelled, jit=jit)(tack.array(M, mt), tack.array(V, vt), tack.array(W, vt), out2, tr2)
    assert out.numpy().tobytes() == out2.numpy().tobytes() and tr.tobytes() == tr2.tobytes()
    tol = dict(rtol=1e-5, atol=1e-5) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)
    got = out.numpy().reshape(k, 4, 3)
    np.testing.assert_allclose(got[:, 0], np.einsum("kji,kj->ki", M, V), **tol)
    np.testing.assert_allclose(got[:, 2], np.einsum("kij,kj->ki", M, V) + np.einsum("kj,kji->ki", V, M), **tol)
    np.testing.assert_allclose(got[:, 3], np.einsum("kij,kj->ki", M, W), **tol)
    np.testing.assert_allclose(tr[:, 0], (V * W).sum(1), **tol)
    np.testing.assert_allclose(tr[:, 1], np.trace(M, axis1=1, axis2=2), **tol)


def taichi_norm(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].norm()


def taichi_normalized(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].normalized()[0]


def taichi_outer(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].outer_product(v[i])[0, 0]


def taichi_other(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].to_numpy()[0]  # (v[i].sum() is NumPy's name: test_messages.py gives its loop)


@JIT
@pytest.mark.parametrize("fn, says", [
    (taichi_norm, r"write tack\.norm\(v\) \(or tack\.length\(v\)\)"),
    (taichi_normalized, r"write tack\.normalize\(v\)"),
    (taichi_outer, r"write tack\.outer\(v, w\)"),
    (taichi_other, r"use functions such as tack\.dot\(v, w\) \(the methods are NumPy's m\.T, m\.transpose\(\)")],
                         ids=["norm", "normalized", "outer_product", "other"])
def test_taichi_method_names_say_what_to_write(fn, says, jit):
    with pytest.raises(tack.CompileError, match=r"method calls \('v\[i\]\.\w+\(\.\.\.\)'\) are not supported in "
                                                r"kernels; " + says):
        tack.kernel(fn, jit=jit)(tack.zeros(1, tack.vec3), np.zeros(1, np.float32))


def attr_norm(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].norm  # the method's name without its call


def attr_length(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].length


def attr_other(v, d):
    for i in range(v.shape[0]):
        d[i] = v[i].mass


@JIT
@pytest.mark.parametrize("fn, says", [
    (attr_norm, r"vec3 has no attribute 'norm': write tack\.norm\(v\) \(or tack\.length\(v\)\)"),
    (attr_length, r"vec3 has no attribute 'length': write tack\.length\(v\)"),
    (attr_other, r"vec3 has no attribute 'mass' \(a vector has its components x, y, z, w as far as its size, and T\)")],
                         ids=["norm", "length", "other"])
def test_vector_attributes_that_are_functions_say_what_to_write(fn, says, jit):
    with pytest.raises(tack.CompileError, match=says):
        tack.kernel(fn, jit=jit)(tack.zeros(1, tack.vec3), np.zeros(1, np.float32))


# ------------------------------------------------------------------ devices and dialects
def everything(xs, grid, q, m, v, out, table, hits):
    for i in range(xs.shape[0]):
        base = tack.vec2i(int(xs[i, 0]), int(xs[i, 1]))
        for dx, dy in OFFSETS:
            grid[base + tack.vec2i(dx, dy) + tack.vec2i(1, 1)] += 1.0
        for o in (tack.vec2i(0, 0), tack.vec2i(1, 1)):
            grid[base + o] += 0.5
        d = base // tack.vec2i(2, -3) + base % 3
        loc = np.zeros((8, 8), np.int32)
        loc[base] = 5
        hits[tack.vec2i(i, -1)] = table[base - tack.vec2i(1, 2)] + loc[base] + loc[base - tack.vec2i(0, 1)]
        out[i] = (m[i].T @ v[i] + m[i].dot(v[i])) // 0.25 + v[i] % 0.5 + m[i].trace() + d.x + d.y
        c = 0
        for kk in (1, 2, 3):
            if kk == 2:
                continue
            if base.x > 5:
                break
            c += kk
        q[i] = d + tack.vec2i(c, kk) ** 2


def _everything_args(device="cpu", k=64):
    rng = np.random.default_rng(5)
    return (tack.array(rng.uniform(0, 7, (k, 2)).astype(np.float32), device=device),
            tack.zeros((9, 9), tack.f32, device=device), tack.zeros(k, tack.vec2i, device=device),
            tack.array(rng.standard_normal((k, 3, 3)).astype(np.float32), tack.mat33, device=device),
            tack.array(rng.standard_normal((k, 3)).astype(np.float32), tack.vec3, device=device),
            tack.zeros(k, tack.vec3, device=device),
            tack.array(rng.integers(0, 100, (8, 8)).astype(np.int32), device=device),
            tack.zeros((k, 2), tack.i32, device=device))


def test_cpu_and_debug_mode_agree_bit_for_bit():
    cpu, dbg = _everything_args(), _everything_args()
    tack.kernel(everything)(*cpu)
    tack.kernel(everything, jit=False)(*dbg)
    for a, b in zip(cpu[1:], dbg[1:]):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    xs, hits = cpu[0].numpy().astype(np.int64), cpu[7].numpy()
    want = cpu[6].numpy()[xs[:, 0] - 1, xs[:, 1] - 2] + 5  # loc[base - (0, 1)] is 0, wrapping at y = 0
    np.testing.assert_array_equal(hits[:, 1], want)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_opencl_gives_the_cpus_results():
    cpu, dev = _everything_args(), _everything_args(OPENCL[0])
    k = tack.kernel(everything)
    k(*cpu)
    k(*dev)
    for j in (1, 2, 7):  # integer-valued: exact on every device
        np.testing.assert_array_equal(dev[j].numpy(), cpu[j].numpy())
    # a float floor can differ by one step where OpenCL fuses a multiply-add into the product
    close = np.isclose(dev[5].numpy(), cpu[5].numpy(), rtol=1e-5, atol=0.3)
    assert close.mean() > 0.98


def _source(target):
    return tack.kernel(everything).generated_source(*_everything_args(k=4), target=target)


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_source_compiles_with_nvrtc():
    assert ".entry" in _core._nvrtc_compile(_source("cuda"), "sm_80")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    out = _gpu_batch.hiprtc_checked([_source("hip")], "gfx90a")
    assert out == b"\x7fELF", out


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    problems = _msl.check(_source("metal"))
    assert problems is None, problems
