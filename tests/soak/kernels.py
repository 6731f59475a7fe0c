"""The soak test's kernels (tests/soak/soak.py), each with the argument
maker and the NumPy reference it is checked against.

A KERNELS entry is (name, kernel, dtypes, make, ref, tol): make(rng, dtype,
n) returns the argument list (random shapes, empty ones included; n is the
length), ref(args) returns {argument index: expected array} computed by
NumPy from copies of the inputs, tol is 0 for bit equality or a relative
tolerance where the order of a float sum differs (per-thread partial sums)
or libm and NumPy may differ in the last places."""

import math

import numpy as np

import tack

INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32)
FLOATS = (np.float32, np.float64)
ALL = INTS + FLOATS

KERNELS = []


def soak(dtypes, make, ref, tol=0.0):
    def deco(fn):
        KERNELS.append((fn.__name__, tack.kernel(fn), dtypes, make, ref, tol))
        return fn

    return deco


def vals(rng, dt, n, lo=-100, hi=100):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return (rng.random(n) * (hi - lo) + lo).astype(dt)
    if dt.kind == "u":
        lo = max(lo, 0)
    info = np.iinfo(dt)
    return rng.integers(max(lo, info.min), min(hi, info.max) + 1, n).astype(dt)


def wide(rng, dt, n):  # the whole range of an integer type: sums and products wrap
    dt = np.dtype(dt)
    if dt.kind == "f":
        return vals(rng, dt, n, -1e3, 1e3)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def two(rng, dt, n):
    return [wide(rng, dt, n), wide(rng, dt, n), np.zeros(n, dt)]


def one(rng, dt, n):
    return [wide(rng, dt, n), np.zeros(n, dt)]


def same(dt_fn):
    return lambda a: {len(a) - 1: dt_fn(*a[:-1]).astype(a[-1].dtype)}


# ---------------------------------------------------------------- elementwise
@soak(ALL, two, same(lambda a, b: a + b))
def add(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


@soak(ALL, two, same(lambda a, b: a - b))
def sub(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] - b[i]


@soak(ALL, two, same(lambda a, b: a * b))
def mul(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * b[i]


@soak(ALL, two, same(np.maximum))
def vmax(a, b, out):
    for i in range(a.shape[0]):
        out[i] = max(a[i], b[i])


@soak(ALL, two, same(np.minimum))
def vmin(a, b, out):
    for i in range(a.shape[0]):
        out[i] = min(a[i], b[i])


@soak(FLOATS, lambda rng, dt, n: [vals(rng, dt, n), vals(rng, dt, n, 1, 50), np.zeros(n, dt)],
      same(lambda a, b: a / b))
def div(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] / b[i]


@soak(FLOATS, one, same(lambda a: np.sqrt(np.abs(a))))
def sqrt_abs(a, out):
    for i in range(a.shape[0]):
        out[i] = math.sqrt(abs(a[i]))


@soak(FLOATS, one, same(np.floor))
def floor(a, out):
    for i in range(a.shape[0]):
        out[i] = math.floor(a[i])


@soak(FLOATS, one, same(np.ceil))
def ceil(a, out):
    for i in range(a.shape[0]):
        out[i] = math.ceil(a[i])


@soak(FLOATS, lambda rng, dt, n: [vals(rng, dt, n), vals(rng, dt, n), np.zeros(n, dt), 2.5],
      lambda a: {2: (a[0] * a[3] + a[1]).astype(a[2].dtype)})
def axpy(x, y, out, s):
    for i in range(x.shape[0]):
        out[i] = x[i] * s + y[i]


@soak(ALL, one, same(lambda a: a * a))
def square(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * a[i]


@soak(ALL, one, same(lambda a: -a))
def neg(a, out):
    for i in range(a.shape[0]):
        out[i] = -a[i]


@soak(FLOATS, one, same(np.abs))
def fabs(a, out):
    for i in range(a.shape[0]):
        out[i] = abs(a[i])


@soak(INTS, two, same(np.bitwise_and))
def bitand(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] & b[i]


@soak(INTS, two, same(np.bitwise_or))
def bitor(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] | b[i]


@soak(INTS, two, same(np.bitwise_xor))
def bitxor(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ^ b[i]


@soak((np.uint8, np.uint32), two, same(lambda a, b: a << (b & a.dtype.type(3))))
def shl(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] << (b[i] & 3)


@soak(INTS, lambda rng, dt, n: [vals(rng, dt, n), vals(rng, dt, n, 1, 9), np.zeros(n, dt)],
      same(np.floor_divide))
def floordiv(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] // b[i]


@soak(INTS, lambda rng, dt, n: [vals(rng, dt, n), vals(rng, dt, n, 1, 9), np.zeros(n, dt)],
      same(np.remainder))
def mod(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] % b[i]


@soak(ALL, lambda rng, dt, n: [vals(rng, dt, n), np.zeros(n, np.float64)],
      lambda a: {1: a[0].astype(np.float64)})
def to_f64(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i]


@soak(FLOATS, lambda rng, dt, n: [vals(rng, dt, n, -1000, 1000), np.zeros(n, np.int32)],
      lambda a: {1: np.trunc(a[0]).astype(np.int32)})
def to_i32(a, out):
    for i in range(a.shape[0]):
        out[i] = int(a[i])


@soak(ALL, one, same(lambda a: np.where(a > 0, a, 0)))
def relu(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] if a[i] > 0 else 0


@soak(ALL, two, same(lambda a, b: np.where(a > b, a - b, b - a)))
def absdiff(a, b, out):
    for i in range(a.shape[0]):
        if a[i] > b[i]:
            out[i] = a[i] - b[i]
        else:
            out[i] = b[i] - a[i]


@soak(INTS, lambda rng, dt, n: [np.zeros(n, dt)], lambda a: {0: (np.arange(a[0].size) * 3).astype(a[0].dtype)})
def iota3(out):
    for i in range(out.shape[0]):
        out[i] = i * 3


@soak(ALL, one, same(lambda a: a[::-1]))
def reverse(a, out):
    for i in range(a.shape[0]):
        out[i] = a[a.shape[0] - 1 - i]


# ---------------------------------------------------------------- reductions
@soak((np.int8, np.int32, np.int64, np.uint8), lambda rng, dt, n: [wide(rng, dt, n), np.zeros(1, np.int64)],
      lambda a: {1: np.array([a[0].astype(np.int64).sum()])})
def sum_int(a, total):
    for i in range(a.shape[0]):
        total[0] += a[i]


@soak(FLOATS, lambda rng, dt, n: [vals(rng, dt, n), np.zeros(1, np.float64)],
      lambda a: {1: np.array([a[0].astype(np.float64).sum()])}, tol=1e-9)
def sum_float(a, total):
    for i in range(a.shape[0]):
        total[0] += a[i]


@soak((np.int32, np.int64, np.uint32), lambda rng, dt, n: [wide(rng, dt, n), np.full(1, np.iinfo(dt).min, dt)],
      lambda a: {1: np.array([max(a[0].max(initial=a[1][0]), a[1][0])], a[1].dtype)})
def atomic_max_int(a, m):
    for i in range(a.shape[0]):
        tack.atomic_max(m, 0, a[i])


@soak((np.float32, np.float64), lambda rng, dt, n: [vals(rng, dt, n), np.full(1, np.inf, dt)],
      lambda a: {1: np.array([a[0].min(initial=np.inf)], a[1].dtype)})
def atomic_min_float(a, m):
    for i in range(a.shape[0]):
        tack.atomic_min(m, 0, a[i])


@soak(ALL, lambda rng, dt, n: [wide(rng, dt, n), np.full(1, np.iinfo(dt).min if np.dtype(dt).kind != "f"
                                                          else -np.inf, dt)],
      lambda a: {1: np.array([a[0].max(initial=a[1][0])], a[1].dtype)})
def running_max(a, m):
    for i in range(a.shape[0]):
        if a[i] > m[0]:
            m[0] = a[i]


@soak(ALL, lambda rng, dt, n: [vals(rng, dt, n), np.zeros(1, np.int64)],
      lambda a: {1: np.array([(a[0] > 0).sum()], np.int64)})
def count_positive(a, c):
    for i in range(a.shape[0]):
        if a[i] > 0:
            c[0] += 1


@soak((np.uint8, np.uint32, np.int64), lambda rng, dt, n: [vals(rng, dt, n, 0, 200), np.zeros(8, np.int64)],
      lambda a: {1: np.bincount(a[0].astype(np.int64) % 8, minlength=8).astype(np.int64)})
def histogram8(a, h):
    for i in range(a.shape[0]):
        tack.atomic_add(h, a[i] % 8, 1)


@soak(FLOATS, lambda rng, dt, n: [vals(rng, dt, n), vals(rng, dt, n), np.zeros(1, np.float64)],
      lambda a: {2: np.array([(a[0] * a[1]).astype(np.float64).sum()])}, tol=1e-9)
def dot(a, b, s):
    for i in range(a.shape[0]):
        s[0] += a[i] * b[i]


# ------------------------------------------------------------------ stencils
def _st1(a):
    out = np.zeros_like(a)
    out[1:-1] = a[:-2] + a[1:-1] + a[2:]
    return out


@soak(ALL, one, lambda a: {1: _st1(a[0])})
def stencil3(a, out):
    for i in range(1, a.shape[0] - 1):
        out[i] = a[i - 1] + a[i] + a[i + 1]


def _diff(a):
    out = np.zeros_like(a)
    out[:-1] = a[1:] - a[:-1]
    return out


@soak(ALL, one, lambda a: {1: _diff(a[0])})
def diff(a, out):
    for i in range(a.shape[0] - 1):
        out[i] = a[i + 1] - a[i]


def grid(rng, dt, n):
    r = int(math.isqrt(n)) + (n % 3)
    c = n // max(r, 1) if r else 0
    return [wide(rng, dt, r * c).reshape(r, c), np.zeros((r, c), dt)]


def _st2(a):
    out = np.zeros_like(a)
    out[1:-1, 1:-1] = (a[1:-1, 1:-1] * a.dtype.type(4) - a[:-2, 1:-1] - a[2:, 1:-1]) - a[1:-1, :-2] - a[1:-1, 2:]
    return out


@soak(ALL, grid, lambda a: {1: _st2(a[0])})
def laplace5(a, out):
    for i, j in tack.ndrange((1, a.shape[0] - 1), (1, a.shape[1] - 1)):
        out[i, j] = a[i, j] * 4 - a[i - 1, j] - a[i + 1, j] - a[i, j - 1] - a[i, j + 1]


@soak(ALL, grid, lambda a: {1: a[0] + a[0]})
def double2d(a, out):
    for i, j in tack.ndrange(a.shape[0], a.shape[1]):
        out[i, j] = a[i, j] + a[i, j]


@soak(ALL, lambda rng, dt, n: [wide(rng, dt, n), np.zeros(n, dt)],
      lambda a: {1: a[0].copy()})
def copy(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i]


# --------------------------------------------------------------- local arrays
def _median3(a):
    out = np.zeros_like(a)
    if a.size > 2:
        out[1:-1] = np.median(np.stack([a[:-2], a[1:-1], a[2:]]), axis=0).astype(a.dtype)
    return out


@soak(ALL, lambda rng, dt, n: [vals(rng, dt, n), np.zeros(n, dt)], lambda a: {1: _median3(a[0])})
def median3(a, out):
    for i in range(1, a.shape[0] - 1):
        w = np.zeros(3, np.float64)
        w[0] = a[i - 1]
        w[1] = a[i]
        w[2] = a[i + 1]
        for p in range(2):
            for q in range(2 - p):
                if w[q] > w[q + 1]:
                    t = w[q]
                    w[q] = w[q + 1]
                    w[q + 1] = t
        out[i] = w[1]


@soak((np.int32, np.int64), lambda rng, dt, n: [vals(rng, dt, n), np.zeros(n, np.int64)],
      lambda a: {1: a[0].astype(np.int64) * 10})
def local_powers(a, out):
    for i in range(a.shape[0]):
        p = np.zeros(4, np.int64)
        for k in range(4):
            p[k] = a[i] * (k + 1)
        out[i] = p[0] + p[1] + p[2] + p[3]


# ------------------------------------------------------------- @tack.func calls
@tack.func
def lerp(a, b, t):
    return a + (b - a) * t


@tack.func
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


@tack.func
def horner(x):
    return ((x * 3 + 2) * x + 1) * x - 7


@soak(FLOATS, lambda rng, dt, n: [vals(rng, dt, n), vals(rng, dt, n), np.zeros(n, dt)],
      same(lambda a, b: a + (b - a) * a.dtype.type(0.25)))
def func_lerp(a, b, out):
    for i in range(a.shape[0]):
        out[i] = lerp(a[i], b[i], 0.25)


@soak(ALL, one, same(lambda a: np.minimum(np.maximum(a, 5), 50)))
def func_clamp(a, out):
    for i in range(a.shape[0]):
        out[i] = clamp(a[i], 5, 50)


@soak((np.int32, np.int64), lambda rng, dt, n: [vals(rng, dt, n), np.zeros(n, np.int64)],
      lambda a: {1: (((a[0] * 3 + 2) * a[0] + 1) * a[0] - 7).astype(np.int64)})
def func_horner(a, out):
    for i in range(a.shape[0]):
        out[i] = horner(a[i])


# ------------------------------------------------------------------- complex
def cplx(rng, dt, n):
    ct = np.complex64 if dt == np.float32 else np.complex128
    z = (vals(rng, dt, n) + 1j * vals(rng, dt, n)).astype(ct)
    w = (vals(rng, dt, n) + 1j * vals(rng, dt, n)).astype(ct)
    return [z, w, np.zeros(n, ct)]


@soak(FLOATS, cplx, same(lambda z, w: z * w), tol=1e-5)
def cmul(z, w, out):
    for i in range(z.shape[0]):
        out[i] = z[i] * w[i]


@soak(FLOATS, cplx, same(lambda z, w: z + w.conjugate()))
def cadd_conj(z, w, out):
    for i in range(z.shape[0]):
        out[i] = z[i] + w[i].conjugate()


@soak(FLOATS, cplx, lambda a: {2: (a[0].real * a[0].real + a[0].imag * a[0].imag).astype(a[2].dtype)}, tol=1e-6)
def cabs2(z, w, out):
    for i in range(z.shape[0]):
        out[i] = z[i].real * z[i].real + z[i].imag * z[i].imag


# -------------------------------------------------------------------- random
@soak((np.float64,), lambda rng, dt, n: [np.zeros(n, dt), int(rng.integers(0, 2**31))], None)
def rand_uniform(out, seed):
    for i in range(out.shape[0]):
        out[i] = tack.random.uniform(seed, i)


@soak((np.int64,), lambda rng, dt, n: [np.zeros(n, dt), int(rng.integers(0, 2**31))], None)
def rand_int(out, seed):
    for i in range(out.shape[0]):
        out[i] = tack.random.randint(seed, i, -5, 17)


# ----------------------------------------------------- serial loops, matrices
def _collatz(a):
    out = np.zeros(a.size, np.int64)
    for k, v in enumerate(a.tolist()):
        v = int(v)
        s = 0
        while v > 1 and s < 500:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        out[k] = s
    return out


@soak((np.int32, np.int64), lambda rng, dt, n: [vals(rng, dt, min(n, 300), 1, 1000), np.zeros(min(n, 300), np.int64)],
      lambda a: {1: _collatz(a[0])})
def collatz(a, out):
    for i in range(a.shape[0]):
        v = i64(a[i])
        s = 0
        while v > 1 and s < 500:
            if v % 2 == 0:
                v = v // 2
            else:
                v = 3 * v + 1
            s += 1
        out[i] = s


i64 = tack.i64


def mat(rng, dt, n):
    r = min(n, 40)
    c = (n % 7) + (1 if n else 0)
    return [vals(rng, dt, r * c, -9, 9).reshape(r, c), vals(rng, dt, c, -9, 9), np.zeros(r, np.float64)]


def _matvec(m, x):  # summed in the loop's order, left to right
    p = m.astype(np.float64) * x.astype(np.float64)
    p = np.concatenate([np.zeros((p.shape[0], 1)), p], axis=1)  # s = 0.0 first: 0.0 + -0.0 is 0.0
    return np.cumsum(p, axis=1)[:, -1]


@soak(ALL, mat, lambda a: {2: _matvec(a[0], a[1])})
def matvec(m, x, y):
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s += tack.f64(m[i, j]) * tack.f64(x[j])
        y[i] = s


@soak(ALL, grid, lambda a: {1: a[0]})
def copy2d(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]


@soak(FLOATS, one, same(lambda a: np.where(a > 0, np.sqrt(np.abs(a)), -a)))
def piecewise(a, out):
    for i in range(a.shape[0]):
        v = a[i]
        if v > 0:
            out[i] = math.sqrt(v)
        else:
            out[i] = -v


@soak(INTS, one, same(lambda a: a + a.dtype.type(1)))
def increment(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + 1


@soak(ALL, two, same(lambda a, b: np.where(a == b, a, b + b)))
def eq_select(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] if a[i] == b[i] else b[i] + b[i]


@soak(FLOATS, one, same(lambda a: np.exp(a / a.dtype.type(100))), tol=1e-6)
def exp_scaled(a, out):
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i] / 100)


@soak(FLOATS, one, same(lambda a: np.sin(a)), tol=1e-6)
def sine(a, out):
    for i in range(a.shape[0]):
        out[i] = math.sin(a[i])
