"""The Python meaning of the matrix and vector functions (tack.transpose ... tack.qr3).

Outside a kernel and in debug mode these compute what the compiled kernel
computes: the same operations in the same order as the prelude's helpers
(src/compiler/emit/prelude_linalg.c, whose essay has the methods), in NumPy
scalars of the argument's float type (f32 for tack.mat33, f64 for mat33d and
for arrays of any other dtype), so that the bits agree with the CPU's.  NumPy's
own functions would give other bits and other answers where the kernel's are
documented: numpy.linalg.inv raises on a singular matrix where tack.inverse
gives the zero matrix, and numpy.linalg.svd raises on a NaN where tack.svd3
gives NaNs.

Each takes a vector or square matrix (a NumPy array, or a Tack vector or
matrix value in debug mode) and returns NumPy arrays; the decompositions
return tuples.
"""

from __future__ import annotations

import numpy as np

_EPS = {np.dtype(np.float32): np.float32(1.1920929e-07), np.dtype(np.float64): np.float64(2.220446049250313e-16)}


def _arg(a, what, ndim):
    a = np.asarray(a)
    if a.dtype not in _EPS:
        a = a.astype(np.float64)
    if a.ndim != ndim or (ndim == 2 and a.shape[0] != a.shape[1]) or not 2 <= a.shape[0] <= 4:
        raise ValueError(f"{what} takes a {'square matrix' if ndim == 2 else 'vector'} of size 2 to 4, "
                         f"not an array of shape {a.shape}")
    return a


def _square(m, what):
    return _arg(m, what, 2)


def transpose(m):
    m = _square(m, "transpose()")
    return m.T.copy()


def trace(m):
    m = _square(m, "trace()")
    s = m[0, 0]
    for i in range(1, m.shape[0]):
        s = s + m[i, i]
    return s


def outer(u, v):
    u, v = _arg(u, "outer()", 1), _arg(v, "outer()", 1)
    return np.outer(u, v).astype(np.result_type(u, v))


def diag(x):
    x = np.asarray(x)
    if x.ndim == 1:
        return np.diag(_arg(x, "diag()", 1))
    return np.diag(_square(x, "diag()")).copy()


def identity(dtype):
    shape = getattr(dtype, "shape", None)
    if not shape or len(shape) != 2:
        raise ValueError(f"identity() takes a matrix dtype, as in tack.identity(tack.mat33), not {dtype!r}")
    return np.eye(shape[0], dtype=np.dtype(dtype.scalar.numpy) if hasattr(dtype, "scalar") else np.float64)


def dot(a, b):
    """Two vectors' dot product as a kernel computes it (the dialects' tk_dot): a sum from zero, term by
    term in ascending order, in the vectors' type -- not NumPy's dot, whose BLAS sums in another
    order (and may fuse a multiply-add), so its last bits differ in a fair share of rows.  Other
    shapes are NumPy's dot, as before."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        return np.dot(a, b)
    s = np.result_type(a, b).type(0)
    with np.errstate(all="ignore"):  # integers wrap, as the kernel's do
        for x, y in zip(a, b):
            s = s + x * y
    return s


def matmul(a, b):
    """``a @ b`` of a matrix or vector and a matrix or vector as a kernel computes it (the dialects' tk_mm,
    tk_dot for two vectors): each
    entry a sum from zero over k in ascending order, in the operands' type, not NumPy's matmul
    (BLAS, another order).  The result has the shape, dtype and array class NumPy's gives."""
    r = np.matmul(a, b)
    x, y = np.asarray(a), np.asarray(b)
    if x.ndim == 1 and y.ndim == 1 and x.shape == y.shape:  # v @ w: the dot product (tk_dot)
        return dot(x, y)
    if x.ndim == 1 and y.ndim == 2:  # v @ m, a row vector: transpose(m) @ v, in the kernel's order
        x, y = y.T, x
    if x.ndim != 2 or y.ndim not in (1, 2):
        return r
    s = np.zeros(r.shape, r.dtype)
    with np.errstate(all="ignore"):
        for k in range(x.shape[1]):
            s = s + (x[:, k] * y[k] if y.ndim == 1 else x[:, k, None] * y[None, k, :])
    r[...] = s
    return r


def norm(x):
    """A vector's length, a matrix's Frobenius norm: the square root of the sum of squares, in order."""
    x = np.asarray(x)
    x = _arg(x, "norm()", x.ndim if x.ndim in (1, 2) else 2)
    t = x.dtype.type
    s = t(0)
    with np.errstate(all="ignore"):
        for v in x.reshape(-1):
            s = s + v * v
        return np.sqrt(s)


def _cof3(a):
    return [[a[1][1] * a[2][2] - a[1][2] * a[2][1], a[1][2] * a[2][0] - a[1][0] * a[2][2],
             a[1][0] * a[2][1] - a[1][1] * a[2][0]],
            [a[0][2] * a[2][1] - a[0][1] * a[2][2], a[0][0] * a[2][2] - a[0][2] * a[2][0],
             a[0][1] * a[2][0] - a[0][0] * a[2][1]],
            [a[0][1] * a[1][2] - a[0][2] * a[1][1], a[0][2] * a[1][0] - a[0][0] * a[1][2],
             a[0][0] * a[1][1] - a[0][1] * a[1][0]]]


def _minors4(a):
    s = [a[0][0] * a[1][1] - a[1][0] * a[0][1], a[0][0] * a[1][2] - a[1][0] * a[0][2],
         a[0][0] * a[1][3] - a[1][0] * a[0][3], a[0][1] * a[1][2] - a[1][1] * a[0][2],
         a[0][1] * a[1][3] - a[1][1] * a[0][3], a[0][2] * a[1][3] - a[1][2] * a[0][3]]
    c = [a[2][0] * a[3][1] - a[3][0] * a[2][1], a[2][0] * a[3][2] - a[3][0] * a[2][2],
         a[2][0] * a[3][3] - a[3][0] * a[2][3], a[2][1] * a[3][2] - a[3][1] * a[2][2],
         a[2][1] * a[3][3] - a[3][1] * a[2][3], a[2][2] * a[3][3] - a[3][2] * a[2][3]]
    d = s[0] * c[5] - s[1] * c[4] + s[2] * c[3] + s[3] * c[2] - s[4] * c[1] + s[5] * c[0]
    return s, c, d


def _rows(m):
    return [list(r) for r in m]


def determinant(m):
    m = _square(m, "determinant()")
    a = _rows(m)
    with np.errstate(all="ignore"):
        if m.shape[0] == 2:
            return a[0][0] * a[1][1] - a[0][1] * a[1][0]
        if m.shape[0] == 3:
            c = _cof3(a)
            return a[0][0] * c[0][0] + a[0][1] * c[0][1] + a[0][2] * c[0][2]
        return _minors4(a)[2]


def inverse(m):
    """The adjugate over the determinant; the zero matrix where the determinant is exactly 0."""
    m = _square(m, "inverse()")
    a, n, t = _rows(m), m.shape[0], m.dtype.type
    r = np.zeros_like(m)
    with np.errstate(all="ignore"):
        if n == 2:
            d = a[0][0] * a[1][1] - a[0][1] * a[1][0]
            if d != 0:
                r[:] = [[a[1][1] / d, -a[0][1] / d], [-a[1][0] / d, a[0][0] / d]]
        elif n == 3:
            c = _cof3(a)
            d = a[0][0] * c[0][0] + a[0][1] * c[0][1] + a[0][2] * c[0][2]
            for i in range(3):
                for j in range(3):
                    r[i, j] = t(0) if d == 0 else c[j][i] / d
        else:
            s, c, d = _minors4(a)
            if d != 0:
                r[:] = [[(a[1][1] * c[5] - a[1][2] * c[4] + a[1][3] * c[3]) / d,
                         (-a[0][1] * c[5] + a[0][2] * c[4] - a[0][3] * c[3]) / d,
                         (a[3][1] * s[5] - a[3][2] * s[4] + a[3][3] * s[3]) / d,
                         (-a[2][1] * s[5] + a[2][2] * s[4] - a[2][3] * s[3]) / d],
                        [(-a[1][0] * c[5] + a[1][2] * c[2] - a[1][3] * c[1]) / d,
                         (a[0][0] * c[5] - a[0][2] * c[2] + a[0][3] * c[1]) / d,
                         (-a[3][0] * s[5] + a[3][2] * s[2] - a[3][3] * s[1]) / d,
                         (a[2][0] * s[5] - a[2][2] * s[2] + a[2][3] * s[1]) / d],
                        [(a[1][0] * c[4] - a[1][1] * c[2] + a[1][3] * c[0]) / d,
                         (-a[0][0] * c[4] + a[0][1] * c[2] - a[0][3] * c[0]) / d,
                         (a[3][0] * s[4] - a[3][1] * s[2] + a[3][3] * s[0]) / d,
                         (-a[2][0] * s[4] + a[2][1] * s[2] - a[2][3] * s[0]) / d],
                        [(-a[1][0] * c[3] + a[1][1] * c[1] - a[1][2] * c[0]) / d,
                         (a[0][0] * c[3] - a[0][1] * c[1] + a[0][2] * c[0]) / d,
                         (-a[3][0] * s[3] + a[3][1] * s[1] - a[3][2] * s[0]) / d,
                         (a[2][0] * s[3] - a[2][1] * s[1] + a[2][2] * s[0]) / d]]
    return r


# ---------------------------------------------------------- decompositions
def _start(m, what):
    """The 3x3 argument as rows of scalars, its type, and its NaN (a non-finite entry) and scale."""
    m = _square(m, what)
    if m.shape != (3, 3):
        raise ValueError(f"{what} takes a 3x3 matrix, not one of shape {m.shape}")
    return m


def _bad_and_scale(a, t):
    with np.errstate(all="ignore"):
        for row in a:
            for x in row:
                d = x - x
                if d != 0 or d != d:
                    return t(np.nan), t(0)
        s = t(0)
        for row in a:
            for x in row:
                if abs(x) > s:
                    s = abs(x)
        return t(0), s


def _rot(p, q, g, t):
    th = (q - p) / (t(2) * g)
    r = t(1) / (abs(th) + np.sqrt(th * th + t(1)))
    if th < 0:
        r = -r
    c = t(1) / np.sqrt(r * r + t(1))
    return c, r * c


def _cols(a, p, q, c, s):
    for i in range(3):
        x, y = a[i][p], a[i][q]
        a[i][p] = c * x - s * y
        a[i][q] = s * x + c * y


def _eye(t):
    return [[t(1) if i == j else t(0) for j in range(3)] for i in range(3)]


def _out(rows, dt):
    return np.array(rows, dtype=dt)


def eig3(m):
    """(eigenvalues ascending, eigenvectors as columns) of the symmetric matrix in m's lower triangle."""
    m = _start(m, "eig3()")
    t, e = m.dtype.type, _EPS[m.dtype]
    a = [[m[i, j] if i >= j else m[j, i] for j in range(3)] for i in range(3)]
    v = _eye(t)
    bad, sc = _bad_and_scale(a, t)
    if bad != bad or sc == 0:
        return np.full(3, bad, m.dtype), (np.full((3, 3), bad, m.dtype) if bad != bad else _out(v, m.dtype))
    with np.errstate(all="ignore"):
        a = [[x / sc for x in row] for row in a]
        for _sweep in range(16):
            turned = False
            for p, q in ((0, 1), (0, 2), (1, 2)):
                g = a[p][q]
                if abs(g) <= e * (abs(a[p][p]) + abs(a[q][q])) or abs(g) < e * e:
                    continue
                turned = True
                c, s = _rot(a[p][p], a[q][q], g, t)
                _cols(a, p, q, c, s)
                for j in range(3):
                    x, y = a[p][j], a[q][j]
                    a[p][j] = c * x - s * y
                    a[q][j] = s * x + c * y
                a[p][q] = a[q][p] = t(0)
                _cols(v, p, q, c, s)
            if not turned:
                break
        for p in (0, 1, 0):
            q = p + 1
            if a[q][q] < a[p][p]:
                a[p][p], a[q][q] = a[q][q], a[p][p]
                for row in v:
                    row[p], row[q] = row[q], row[p]
        return np.array([a[i][i] * sc for i in range(3)], m.dtype), _out(v, m.dtype)


def svd3(m):
    """(U, sigma descending, V) with m = U @ diag(sigma) @ V.T, by one-sided Jacobi."""
    m = _start(m, "svd3()")
    t, e = m.dtype.type, _EPS[m.dtype]
    b = _rows(m)
    bad, sc = _bad_and_scale(b, t)
    if bad != bad or sc == 0:
        uv = np.full((3, 3), bad, m.dtype) if bad != bad else np.eye(3, dtype=m.dtype)
        return uv, np.full(3, bad, m.dtype), uv.copy()
    v = _eye(t)
    u = _eye(t)
    with np.errstate(all="ignore"):
        b = [[x / sc for x in row] for row in b]
        for _sweep in range(16):
            turned = False
            for p, q in ((0, 1), (0, 2), (1, 2)):
                al = be = g = t(0)
                for i in range(3):
                    al = al + b[i][p] * b[i][p]
                    be = be + b[i][q] * b[i][q]
                    g = g + b[i][p] * b[i][q]
                if abs(g) <= e * np.sqrt(al * be) or abs(g) < e * e * e:
                    continue
                turned = True
                c, s = _rot(al, be, g, t)
                _cols(b, p, q, c, s)
                _cols(v, p, q, c, s)
            if not turned:
                break
        s = [np.sqrt(b[0][j] * b[0][j] + b[1][j] * b[1][j] + b[2][j] * b[2][j]) for j in range(3)]
        for p in (0, 1, 0):
            q = p + 1
            if s[p] < s[q]:
                s[p], s[q] = s[q], s[p]
                for i in range(3):
                    b[i][p], b[i][q] = b[i][q], b[i][p]
                    v[i][p], v[i][q] = v[i][q], v[i][p]
        for j in range(3):
            if j == 0 or s[j] > e * s[0]:
                for i in range(3):
                    u[i][j] = b[i][j] / s[j]
        if not s[1] > e * s[0]:
            k = 0
            for i in (1, 2):
                if abs(u[i][0]) < abs(u[k][0]):
                    k = i
            w = [t(i == k) - u[k][0] * u[i][0] for i in range(3)]
            n = t(0)
            for x in w:
                n = n + x * x
            n = np.sqrt(n)
            for i in range(3):
                u[i][1] = w[i] / n
        if not s[2] > e * s[0]:
            u[0][2] = u[1][0] * u[2][1] - u[2][0] * u[1][1]
            u[1][2] = u[2][0] * u[0][1] - u[0][0] * u[2][1]
            u[2][2] = u[0][0] * u[1][1] - u[1][0] * u[0][1]
        return _out(u, m.dtype), np.array([x * sc for x in s], m.dtype), _out(v, m.dtype)


def qr3(m):
    """(Q, R) with m = Q @ R, R upper triangular with a diagonal >= 0, by Householder reflections."""
    m = _start(m, "qr3()")
    t = m.dtype.type
    a = _rows(m)
    bad, sc = _bad_and_scale(a, t)
    if bad != bad or sc == 0:
        q = np.full((3, 3), bad, m.dtype) if bad != bad else np.eye(3, dtype=m.dtype)
        return q, np.full((3, 3), bad, m.dtype)
    q = _eye(t)
    with np.errstate(all="ignore"):
        a = [[x / sc for x in row] for row in a]
        for k in range(2):
            nx = t(0)
            for i in range(k, 3):
                nx = nx + a[i][k] * a[i][k]
            nx = np.sqrt(nx)
            if nx == 0:
                continue
            w = [t(0) if i < k else a[i][k] for i in range(3)]
            w[k] = w[k] + (nx if a[k][k] > 0 else -nx)
            nw = t(0)
            for i in range(k, 3):
                nw = nw + w[i] * w[i]
            for j in range(3):
                d = t(0)
                for i in range(k, 3):
                    d = d + w[i] * a[i][j]
                d = t(2) * d / nw
                for i in range(k, 3):
                    a[i][j] = a[i][j] - d * w[i]
            for i in range(3):
                d = t(0)
                for j in range(k, 3):
                    d = d + q[i][j] * w[j]
                d = t(2) * d / nw
                for j in range(k, 3):
                    q[i][j] = q[i][j] - d * w[j]
        for k in range(3):
            for j in range(3):
                a[k][j] = t(0) if j < k else a[k][j] * sc
            if a[k][k] < 0:
                for i in range(3):
                    a[k][i] = -a[k][i]
                    q[i][k] = -q[i][k]
        return _out(q, m.dtype), _out(a, m.dtype)
