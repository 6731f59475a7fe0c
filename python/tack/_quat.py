"""Quaternions and rigid transforms in NumPy: what ``tack.quat_rotate`` & co
compute outside a kernel, and the values a kernel run as Python holds.

A quaternion is an array whose last axis is (x, y, z, w); a transform one
whose last axis is the position (x, y, z) then the rotation's quaternion, as
``tack.quat`` and ``tack.transform`` arrays hold them.  The formulas are the
compiled helpers' (src/compiler/emit/emit_quat.c), written once more in the
arrays' own precision, so a kernel run as Python (debug mode) and a call
outside any kernel give what the compiled kernel gives, to rounding.

In debug mode a quaternion value is a :class:`Quat` and a transform a
:class:`Transform`: ndarray subclasses whose ``*`` is the Hamilton product
and the composition, and which refuse NumPy's ufuncs (``__array_ufunc__ =
None``), so no operation there can silently become componentwise.  The
compiler has refused every mix that the algebra does not define before the
function runs, as it does for a compiled call.
"""

from __future__ import annotations

import numpy as np


def _arr(a):
    a = np.asarray(a)
    return a if a.dtype.kind == "f" else a.astype(np.result_type(a.dtype, np.float32))


def _common(*xs):
    xs = [_arr(x) for x in xs]
    t = np.result_type(*xs)
    return [x.astype(t, copy=False) for x in xs]


def _mk(x, y, z, w):
    return np.stack(np.broadcast_arrays(x, y, z, w), axis=-1)


def _split(q):
    return q[..., 0], q[..., 1], q[..., 2], q[..., 3]


def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2] + a[..., 3] * b[..., 3]


def mul(a, b):
    """The Hamilton product a * b of quaternions (x, y, z, w)."""
    a, b = _common(a, b)
    ax, ay, az, aw = _split(a)
    bx, by, bz, bw = _split(b)
    return _mk(aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
               aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def inverse(q):
    q = _arr(q)
    n = _dot(q, q)
    x, y, z, w = _split(q)
    return _mk(-x / n, -y / n, -z / n, w / n)


def normalize(q):
    q = _arr(q)
    n = np.sqrt(_dot(q, q))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = q / n[..., None]
    return np.where((n > 0)[..., None], r, np.zeros_like(q))


def rotate(q, v):
    q, v = _common(q, v)
    x, y, z, w = _split(q)
    s = q.dtype.type(2) / _dot(q, q)
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    tx, ty, tz = s * (y * vz - z * vy), s * (z * vx - x * vz), s * (x * vy - y * vx)
    return np.stack(np.broadcast_arrays(vx + w * tx + (y * tz - z * ty), vy + w * ty + (z * tx - x * tz),
                                        vz + w * tz + (x * ty - y * tx)), axis=-1)


def conjugate(q):
    q = _arr(q)
    x, y, z, w = _split(q)
    return _mk(-x, -y, -z, w)


def rotate_inv(q, v):
    return rotate(conjugate(q), v)


def to_matrix(q):
    q = _arr(q)
    x, y, z, w = _split(q)
    s = q.dtype.type(2) / _dot(q, q)
    one = q.dtype.type(1)
    rows = [[one - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
            [s * (x * y + z * w), one - s * (x * x + z * z), s * (y * z - x * w)],
            [s * (x * z - y * w), s * (y * z + x * w), one - s * (x * x + y * y)]]
    return np.stack([np.stack(np.broadcast_arrays(*r), axis=-1) for r in rows], axis=-2)


def from_matrix(m):
    m = _arr(m)
    one, two = m.dtype.type(1), m.dtype.type(2)
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    c0 = (tr >= m00) & (tr >= m11) & (tr >= m22)
    c1 = ~c0 & (m00 >= m11) & (m00 >= m22)
    c2 = ~c0 & ~c1 & (m11 >= m22)
    cases = [
        (c0, _mk(m21 - m12, m02 - m20, m10 - m01, one + tr)),
        (c1, _mk(one - tr + two * m00, m10 + m01, m20 + m02, m21 - m12)),
        (c2, _mk(m01 + m10, one - tr + two * m11, m21 + m12, m02 - m20)),
    ]
    r = _mk(m02 + m20, m12 + m21, one - tr + two * m22, m10 - m01)
    for cond, val in reversed(cases):
        r = np.where(cond[..., None], val, r)
    n = np.sqrt(_dot(r, r))
    n = np.where(r[..., 3] < 0, -n, n)
    return r / n[..., None]


def from_axis_angle(axis, angle):
    axis, angle = _common(axis, angle)
    ax, ay, az = axis[..., 0], axis[..., 1], axis[..., 2]
    n = np.sqrt(ax * ax + ay * ay + az * az)
    h = angle * angle.dtype.type(0.5)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sin(h) / n
    r = _mk(ax * s, ay * s, az * s, np.cos(h))
    ident = np.zeros_like(r)
    ident[..., 3] = 1
    return np.where((n == 0)[..., None], ident, r)


def slerp(a, b, t):
    a, b, t = _common(a, b, t)
    a, b = normalize(a), normalize(b)
    b = np.where((_dot(a, b) < 0)[..., None], -b, b)
    d, s = a - b, a + b
    th = a.dtype.type(2) * np.arctan2(np.sqrt(_dot(d, d)), np.sqrt(_dot(s, s)))
    sn = np.sin(th)
    one = a.dtype.type(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        wa = np.where(sn == 0, one - t, np.sin((one - t) * th) / sn)
        wb = np.where(sn == 0, t, np.sin(t * th) / sn)
    return a * wa[..., None] + b * wb[..., None]


def xform(p, q):
    p, q = _common(p, q)
    shape = np.broadcast_shapes(p.shape[:-1], q.shape[:-1])
    return np.concatenate([np.broadcast_to(p[..., 0:3], shape + (3,)), np.broadcast_to(q[..., 0:4], shape + (4,))],
                          axis=-1)


def x_point(t, p):
    t, p = _common(t, p)
    return rotate(t[..., 3:7], p) + t[..., 0:3]


def x_vector(t, v):
    t, v = _common(t, v)
    return rotate(t[..., 3:7], v)


def x_mul(a, b):
    a, b = _common(a, b)
    return xform(x_point(a, b[..., 0:3]), mul(a[..., 3:7], b[..., 3:7]))


def x_inverse(t):
    t = _arr(t)
    qi = inverse(t[..., 3:7])
    return xform(-rotate(qi, t[..., 0:3]), qi)


# ------------------------------------------------------------- debug mode
def _scalar(s, dtype):
    if isinstance(s, np.ndarray) or not isinstance(s, (int, float, np.integer, np.floating, np.bool_, bool)):
        return None
    return dtype.type(s)


class Quat(np.ndarray):
    """A quaternion value (or array of them) of a kernel run as Python:
    ``*`` is the Hamilton product, and a number scales it."""

    __array_ufunc__ = None  # no NumPy ufunc may treat it as a vec4

    x = property(lambda self: np.asarray(self)[..., 0])
    y = property(lambda self: np.asarray(self)[..., 1])
    z = property(lambda self: np.asarray(self)[..., 2])
    w = property(lambda self: np.asarray(self)[..., 3])

    def __mul__(self, other):
        if isinstance(other, Quat):
            return as_quat(mul(np.asarray(self), np.asarray(other)))
        s = _scalar(other, self.dtype)
        return NotImplemented if s is None else as_quat(np.asarray(self) * s)

    def __rmul__(self, other):
        s = _scalar(other, self.dtype)
        return NotImplemented if s is None else as_quat(np.asarray(self) * s)

    def __truediv__(self, other):
        s = _scalar(other, self.dtype)
        return NotImplemented if s is None else as_quat(np.asarray(self) / s)

    def __add__(self, other):
        return as_quat(np.asarray(self) + np.asarray(other)) if isinstance(other, Quat) else NotImplemented

    def __sub__(self, other):
        return as_quat(np.asarray(self) - np.asarray(other)) if isinstance(other, Quat) else NotImplemented

    def __neg__(self):
        return as_quat(-np.asarray(self))


class Transform(np.ndarray):
    """A rigid transform value of a kernel run as Python: ``t.p``, ``t.q``,
    and ``*`` the composition."""

    __array_ufunc__ = None

    @property
    def p(self):
        from ._kernels import _vector_view_type

        return np.array(np.asarray(self)[..., 0:3]).view(_vector_view_type())

    @property
    def q(self):
        return as_quat(np.array(np.asarray(self)[..., 3:7]))

    def __mul__(self, other):
        if isinstance(other, Transform):
            return as_transform(x_mul(np.asarray(self), np.asarray(other)))
        return NotImplemented


def as_quat(a):
    return np.asarray(a).view(Quat)


def as_transform(a):
    return np.asarray(a).view(Transform)
