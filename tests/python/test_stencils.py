"""Small stencils on 2-D grids against NumPy, bit for bit: Conway's Life on
uint8 and a 5-point heat step on float32, periodic (`%`) and over the
interior only, compiled and in debug mode (the kernels of
`benchmarks/periodic.py stencils`).

Life's rule `c == 3 or (a[i, j] == 1 and c == 2)` loads a[i, j] in some
iterations only.  Its index check could not be hoisted like the others (not
every iteration runs it), and the loop's stop, `n` of `n, m = a.shape`, was
not read as the extent, so the check stayed in the loop, a branch out of it
that kept the C compiler from vectorizing the whole body: 25x slower than
with the check gone (src/compiler/passes/checks.c, 1.).  The grids below
are sizes where everything is border (1 x N, N x 1, 2 x 2, 3 x 3) and sizes
that are no multiple of a vector's lanes.
"""
import re

import numpy as np
import pytest

import tack


def life_fn(a, b):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        c = (a[(i - 1) % n, (j - 1) % m] + a[(i - 1) % n, j] + a[(i - 1) % n, (j + 1) % m]
             + a[i, (j - 1) % m] + a[i, (j + 1) % m]
             + a[(i + 1) % n, (j - 1) % m] + a[(i + 1) % n, j] + a[(i + 1) % n, (j + 1) % m])
        b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0


def life_loops_fn(a, b):
    n, m = a.shape
    for i, j in tack.ndrange(n, m):
        c = 0
        for di in range(-1, 2):
            for dj in range(-1, 2):
                if di != 0 or dj != 0:
                    c += a[(i + di) % n, (j + dj) % m]
        b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0


def life_inner_fn(a, b):
    n, m = a.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        c = (a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1] + a[i, j - 1] + a[i, j + 1]
             + a[i + 1, j - 1] + a[i + 1, j] + a[i + 1, j + 1])
        b[i, j] = 1 if c == 3 or (a[i, j] == 1 and c == 2) else 0


def heat_fn(u, out, k):
    n, m = u.shape
    for i, j in tack.ndrange(n, m):
        out[i, j] = u[i, j] + k * (u[(i - 1) % n, j] + u[(i + 1) % n, j] + u[i, (j - 1) % m] + u[i, (j + 1) % m]
                                   - 4.0 * u[i, j])


def heat_inner_fn(u, out, k):
    n, m = u.shape
    for i, j in tack.ndrange((1, n - 1), (1, m - 1)):
        out[i, j] = u[i, j] + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])


def np_life(a):
    c = np.zeros_like(a)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                c += np.roll(a, (-di, -dj), (0, 1))
    return ((c == 3) | ((a == 1) & (c == 2))).astype(np.uint8)


def np_life_inner(a):
    b = np.zeros_like(a)
    c = (a[:-2, :-2] + a[:-2, 1:-1] + a[:-2, 2:] + a[1:-1, :-2] + a[1:-1, 2:]
         + a[2:, :-2] + a[2:, 1:-1] + a[2:, 2:])
    b[1:-1, 1:-1] = (c == 3) | ((a[1:-1, 1:-1] == 1) & (c == 2))
    return b


def np_heat(u, k):
    return u + k * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4.0 * u)


def np_heat_inner(u, k):
    out = np.zeros_like(u)
    c = u[1:-1, 1:-1]
    out[1:-1, 1:-1] = c + k * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * c)
    return out


KERNELS = {  # name: (function, NumPy's reference, float32 grid)
    "life": (life_fn, np_life, False),
    "life_loops": (life_loops_fn, np_life, False),
    "life_inner": (life_inner_fn, np_life_inner, False),
    "heat": (heat_fn, np_heat, True),
    "heat_inner": (heat_inner_fn, np_heat_inner, True),
}
COMPILED = {name: tack.kernel(fn) for name, (fn, _, _) in KERNELS.items()}
DEBUG = {name: tack.kernel(jit=False)(fn) for name, (fn, _, _) in KERNELS.items()}
SHAPES = [(1, 1), (1, 9), (9, 1), (2, 2), (3, 3), (4, 5), (7, 67), (66, 130)]


def _grid(shape, f32, seed):
    rng = np.random.default_rng(seed)
    return rng.random(shape, dtype=np.float32) if f32 else (rng.random(shape) < 0.35).astype(np.uint8)


@pytest.mark.parametrize("name", list(KERNELS))
def test_stencil_equals_numpy(name):
    fn, ref, f32 = KERNELS[name]
    k = np.float32(0.2)
    for seed, shape in enumerate(SHAPES):
        x = _grid(shape, f32, seed)
        args = (k,) if f32 else ()
        want = ref(x, *args)
        kernels = [COMPILED[name]] + ([DEBUG[name]] if x.size <= 64 else [])
        for kern in kernels:
            out = np.zeros_like(x)
            kern(x, out, *args)
            assert out.dtype == want.dtype and np.array_equal(out, want), (name, shape, kern)


def _inner_loops(name, src):
    """The generated C of the loops that do the work: a periodic kernel's
    interior (from `pa_` up to the border's loop, test_periodic.py), else
    the parallel loop's function."""
    if name == "life_inner":
        start = src.index("static void tk_pfor0(")
        return src[start:src.index("tack_entry", start)]
    start = re.search(r"for \(int64_t \w+ = pa_;", src).start()
    start = src.rindex("\n", 0, src.rindex("\n", 0, start))
    return src[start:src.index("for (int pp_ = 0;", start)]


@pytest.mark.optimized_source
@pytest.mark.parametrize("name", ["life", "life_loops", "life_inner"])
def test_conditional_load_keeps_no_check(name):
    """a[i, j] in the `and` is in bounds wherever the loop runs (its stop is
    the extent, through `n, m = a.shape`, or the extent less one): no check
    is left in the loop, whose body runs in SIMD lanes."""
    a = _grid((8, 8), False, 0)
    body = _inner_loops(name, COMPILED[name].generated_source(a, np.zeros_like(a)))
    assert "abi->fail" not in body and "#pragma omp simd" in body, body


# ------------------------------------- a stop past the extent still raises
def past_stop_fn(a, b):
    n, m = a.shape
    for i, j in tack.ndrange((1, n), (0, m)):
        if a[i - 1, j] == 1:
            b[i - 1, j] = a[i + 1, j]  # i + 1 reaches n at the last row


def other_extent_fn(a, b):
    n = b.shape[0]
    for i in range(n):
        if b[i] == 1:
            b[i] = a[i]  # b may be longer than a


def serial_fn(a, b):
    n = a.shape[0]
    for t in range(1):
        for i in range(n - 1):  # a serial loop
            if a[i] == 1:
                b[i] = a[i + 2]  # i + 2 reaches n at the last i


ERRORS = [past_stop_fn, other_extent_fn, serial_fn]


@pytest.mark.parametrize("fn", ERRORS, ids=lambda fn: fn.__name__)
def test_a_conditional_index_past_the_extent_raises(fn):
    for kern in (tack.kernel(fn), tack.kernel(jit=False)(fn)):
        if fn is past_stop_fn:
            a = np.zeros((5, 3), np.uint8)
            b = np.zeros_like(a)
            kern(a, b)  # no row read: nothing raises
            a[3, 1] = 1
            with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
                kern(a, b)
        elif fn is other_extent_fn:
            a, b = np.arange(4, dtype=np.int64), np.zeros(6, np.int64)
            b[:4] = 1
            kern(a, b)
            assert b.tolist() == [0, 1, 2, 3, 0, 0]
            b[5] = 1
            with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 4"):
                kern(a, b)
        else:
            a, b = np.zeros(6, np.int64), np.zeros(6, np.int64)
            a[:3] = 1
            kern(a, b)
            a[4] = 1
            with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
                kern(a, b)
