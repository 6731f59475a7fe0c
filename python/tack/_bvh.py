"""Spatial queries on boxes and triangles: ``tack.Bvh`` and ``tack.Mesh``.

A ray tracer, a collision test or a nearest-surface query asks which of n
boxes (or triangles) a box, a ray or a point meets.  Testing all n costs
O(n) a query; a bounding volume hierarchy -- a binary tree whose every node
holds the box around its subtree -- skips each subtree whose box the query
misses, which is O(log n) a query for queries that meet few boxes.

The tree is a linear BVH, built on the boxes' own device with Tack kernels
and the parallel sort (tack._algorithms), in passes that are each parallel
over the boxes or the nodes:

1. a kernel gives each box the 30-bit Morton code of its centre in the
   bounding box of all the boxes (10 bits an axis);
2. ``tack.argsort`` orders the boxes by code: the leaves' order;
3. a kernel finds, for every one of the n - 1 internal nodes at once, the
   range of sorted leaves it covers and where that range splits (the
   common-prefix search of Karras, 2012, on the code with the leaf's
   position appended, so equal codes still give a binary tree);
4. a kernel finds each internal node's depth by walking up its parents,
   ``tack.argsort`` orders the internal nodes by depth, and one launch per
   level, deepest first, sets each node's box to the union of its
   children's.

The codes with the position appended are 61-bit keys, and a child's range
shares at least one more leading bit than its parent's, so no node is
deeper than 62 and a traversal's stack never holds more than 63 entries:
the in-kernel stack of 64 is enough for any input, however degenerate.

``bvh.refit()`` repeats the leaf boxes and step 4's level launches with the
tree's shape kept: the cheap update after the boxes moved a little (the tree
stays correct, only less tight).  A ``tack.Mesh`` is a Bvh over its
triangles' boxes plus its vertices and triangles.

Inside a kernel ``for k in bvh.query_box(lo, hi):`` and ``for k in
bvh.query_ray(origin, direction):`` visit boxes, and ``tri, t, u, v =
mesh.ray_closest(origin, direction)`` and ``tri, q = mesh.closest_point(p)``
answer one query; tack._bvh_rewrite turns these into plain kernel code over
the tree's arrays before the front end reads the kernel, as HashGrid's loop
is (tack._hashgrid_rewrite), so every backend and debug mode run them.
"""

import math

import numpy as np

from . import _core, _rewritten_call
from ._algorithms_common import not_differentiated
from ._array import array as _array, asarray as _asarray, empty as _empty, zeros as _zeros
from ._core import f32, f64, i32, i64
from ._intrinsics import dot as _dot, independent
from ._bvh_rewrite import rewrite as _rewrite
from ._kernels import func, kernel

__all__ = ["Bvh", "Mesh"]

STACK = 64  # the traversal stack's entries: a node is at most 62 deep (module docstring)
MAX_BOXES = 1 << 30  # node indices are i32: 2 n - 1 nodes must fit


# ------------------------------------------------------------------ build kernels


@kernel
def _bad_boxes(lo, hi, bad):
    for i in range(lo.shape[0]):
        b = 0
        for d in range(3):
            if not (math.isfinite(lo[i, d]) and math.isfinite(hi[i, d])):
                b = 1
            elif lo[i, d] > hi[i, d]:
                b = 2
        bad[i] = b


@kernel
def _tri_boxes(v, t, lo, hi, bad):
    nv = v.shape[0]
    for i in range(t.shape[0]):
        a, b, c = t[i, 0], t[i, 1], t[i, 2]
        if a < 0 or b < 0 or c < 0 or a >= nv or b >= nv or c >= nv:
            bad[i] = 1
        else:
            bad[i] = 0
            for d in range(3):
                lo[i, d] = min(v[a, d], min(v[b, d], v[c, d]))
                hi[i, d] = max(v[a, d], max(v[b, d], v[c, d]))


@func
def _spread(x):
    # the 10 low bits of x moved to every third bit (bit k to bit 3 k)
    x = (x | (x << 16)) & 0x030000FF
    x = (x | (x << 8)) & 0x0300F00F
    x = (x | (x << 4)) & 0x030C30C3
    x = (x | (x << 2)) & 0x09249249
    return x


@kernel
def _morton(lo, hi, origin, scale, codes):
    for i in range(lo.shape[0]):
        code = i64(0)
        for d in range(3):
            u = ((lo[i, d] + hi[i, d]) * 0.5 - origin[d]) * scale[d]
            q = i64(0)
            if u >= 1023.0:
                q = i64(1023)
            elif u > 0.0:
                q = i64(u)
            code = code | (_spread(q) << (2 - d))
        codes[i] = code


@func
def _prefix(codes, perm, i, j):
    # the length of the common leading bits of the 61-bit keys (code << 31 | position) of sorted
    # leaves i and j, or -1 when j is outside [0, n)
    if j < 0 or j >= perm.shape[0]:
        return i64(-1)
    x = ((codes[perm[i]] << 31) | i) ^ ((codes[perm[j]] << 31) | j)
    b = i64(0)  # floor(log2 x), x > 0 as i != j
    if x >= (i64(1) << 32):
        b += 32
        x = x >> 32
    if x >= 65536:
        b += 16
        x = x >> 16
    if x >= 256:
        b += 8
        x = x >> 8
    if x >= 16:
        b += 4
        x = x >> 4
    if x >= 4:
        b += 2
        x = x >> 2
    if x >= 2:
        b += 1
    return 60 - b


@kernel
def _hierarchy(codes, perm, left, right, parent):
    n = perm.shape[0]
    for i in independent(range(n - 1)):  # each node is the parent of its own two children
        d = i64(1)
        if _prefix(codes, perm, i, i + 1) < _prefix(codes, perm, i, i - 1):
            d = i64(-1)
        dmin = _prefix(codes, perm, i, i - d)
        # the other end j = i + l d of the node's range: the farthest leaf sharing more than dmin bits
        hi = i64(2)
        while _prefix(codes, perm, i, i + hi * d) > dmin:
            hi *= 2
        lo = i64(1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _prefix(codes, perm, i, i + mid * d) > dmin:
                lo = mid
            else:
                hi = mid
        ln = lo
        j = i + ln * d
        dnode = _prefix(codes, perm, i, j)
        # the split: the farthest leaf from i still sharing more than dnode bits with it
        lo = i64(0)
        hi = ln
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _prefix(codes, perm, i, i + mid * d) > dnode:
                lo = mid
            else:
                hi = mid
        g = i + lo * d + min(d, 0)
        first = min(i, j)
        last = max(i, j)
        a = g if first != g else g + n - 1          # leaves are nodes n - 1 ... 2 n - 2
        b = g + 1 if last != g + 1 else g + n
        left[i] = i32(a)
        right[i] = i32(b)
        parent[a] = i32(i)
        parent[b] = i32(i)


@kernel
def _leaf_boxes(lo, hi, perm, nlo, nhi):
    m = perm.shape[0] - 1
    for k in independent(range(perm.shape[0])):  # leaf k is node m + k
        for d in range(3):
            nlo[m + k, d] = lo[perm[k], d]
            nhi[m + k, d] = hi[perm[k], d]


@kernel
def _depths(parent, depth):
    for i in range(depth.shape[0]):
        d = i64(0)
        p = i
        while p != 0:
            p = parent[p]
            d += 1
        depth[i] = d


@kernel
def _level_starts(depth, order, starts):
    n = order.shape[0]
    for k in independent(range(n)):  # each depth's run has one first node
        d = depth[order[k]]
        if k == 0 or depth[order[k - 1]] != d:
            starts[d] = k
        if k == n - 1:
            starts[d + 1] = n


@kernel
def _union(order, first, last, left, right, nlo, nhi):
    for k in independent(range(first, last)):  # order is a permutation of the internal nodes
        i = order[k]
        a = left[i]
        b = right[i]
        for d in range(3):
            nlo[i, d] = min(nlo[a, d], nlo[b, d])
            nhi[i, d] = max(nhi[a, d], nhi[b, d])


# ------------------------------------------------------------------ query funcs, one set per float type

_FUNCS = {}


def funcs(ft):
    """The @tack.func helpers of the in-kernel queries for float type `ft` (np.float32 or np.float64)."""
    got = _FUNCS.get(ft)
    if got is not None:
        return got
    F = f32 if ft is np.float32 else f64
    V = _core.vec3 if ft is np.float32 else _core.vec3d
    W = F(1.0 + 1e-6) if ft is np.float32 else F(1.0 + 1e-14)  # the slab test's widening: rounding loses no box
    INF = F(math.inf)

    @func
    def ray_enter(nlo, nhi, nd, o0, o1, o2, d0, d1, d2, tmax):
        # where the ray o + t d, 0 <= t <= tmax, enters node nd's box, INF if it misses it (a few
        # roundings generously: a box the ray touches is never missed)
        t0 = F(0.0)
        t1 = tmax
        for a in range(3):
            o = o0
            d = d0
            if a == 1:
                o = o1
                d = d1
            elif a == 2:
                o = o2
                d = d2
            lo = nlo[nd, a]
            hi = nhi[nd, a]
            if d == 0.0:
                if o < lo or o > hi:
                    return INF
            else:
                u = (lo - o) / d
                w = (hi - o) / d
                if u > w:
                    x = u
                    u = w
                    w = x
                if u > t0:
                    t0 = u
                if w < t1:
                    t1 = w
        if t1 >= 0.0 and t0 <= t1 * W:
            return t0
        return INF

    @func
    def ray_box(nlo, nhi, nd, o0, o1, o2, d0, d1, d2, tmax):
        # whether the ray o + t d, 0 <= t <= tmax, meets node nd's box
        return ray_enter(nlo, nhi, nd, o0, o1, o2, d0, d1, d2, tmax) < INF

    @func
    def ray_triangle(v, tri, k, o0, o1, o2, d0, d1, d2):
        # Moller-Trumbore: (t, u, v) of the ray's hit on triangle k, t = inf for none
        a = tri[k, 0]
        b = tri[k, 1]
        c = tri[k, 2]
        e10 = v[b, 0] - v[a, 0]
        e11 = v[b, 1] - v[a, 1]
        e12 = v[b, 2] - v[a, 2]
        e20 = v[c, 0] - v[a, 0]
        e21 = v[c, 1] - v[a, 1]
        e22 = v[c, 2] - v[a, 2]
        p0 = d1 * e22 - d2 * e21
        p1 = d2 * e20 - d0 * e22
        p2 = d0 * e21 - d1 * e20
        det = e10 * p0 + e11 * p1 + e12 * p2
        if det == 0.0:
            return INF, F(0.0), F(0.0)
        inv = F(1.0) / det
        s0 = o0 - v[a, 0]
        s1 = o1 - v[a, 1]
        s2 = o2 - v[a, 2]
        u = (s0 * p0 + s1 * p1 + s2 * p2) * inv
        if u < 0.0 or u > 1.0:
            return INF, F(0.0), F(0.0)
        q0 = s1 * e12 - s2 * e11
        q1 = s2 * e10 - s0 * e12
        q2 = s0 * e11 - s1 * e10
        w = (d0 * q0 + d1 * q1 + d2 * q2) * inv
        if w < 0.0 or u + w > 1.0:
            return INF, F(0.0), F(0.0)
        t = (e20 * q0 + e21 * q1 + e22 * q2) * inv
        if not (t > 0.0):
            return INF, F(0.0), F(0.0)
        return t, u, w

    @func
    def ray_closest(nlo, nhi, left, right, leaf, n, v, tri, o0, o1, o2, d0, d1, d2):
        # the nearer child's subtree first, and a subtree skipped once a hit is nearer than its box
        best = INF
        bu = F(0.0)
        bv = F(0.0)
        hit = i64(-1)
        stk = _zeros(STACK, i32)
        tin = _zeros(STACK, F)       # where the ray enters each stacked node's box
        sp = 0
        ok = math.isfinite(o0) and math.isfinite(o1) and math.isfinite(o2)
        if n > 0 and ok and math.isfinite(d0) and math.isfinite(d1) and math.isfinite(d2):
            tin[0] = ray_enter(nlo, nhi, 0, o0, o1, o2, d0, d1, d2, INF)
            if tin[0] < INF:
                sp = 1
        while sp > 0:
            sp -= 1
            nd = stk[sp]
            if tin[sp] > best * W:
                continue
            if nd >= n - 1:
                k = leaf[nd - (n - 1)]
                t, u, w = ray_triangle(v, tri, k, o0, o1, o2, d0, d1, d2)
                if t < best or (t == best and k < hit):
                    best = t
                    bu = u
                    bv = w
                    hit = k
            else:
                a = left[nd]
                b = right[nd]
                ta = ray_enter(nlo, nhi, a, o0, o1, o2, d0, d1, d2, best)
                tb = ray_enter(nlo, nhi, b, o0, o1, o2, d0, d1, d2, best)
                if ta > tb:
                    x = a
                    a = b
                    b = x
                    y = ta
                    ta = tb
                    tb = y
                assert sp + 2 <= STACK, "tack.Mesh.ray_closest: the traversal stack overflowed"
                if tb < INF and sp < STACK:      # the farther child below the nearer
                    stk[sp] = b
                    tin[sp] = tb
                    sp += 1
                if ta < INF and sp < STACK:
                    stk[sp] = a
                    tin[sp] = ta
                    sp += 1
        return hit, best, bu, bv

    @func
    def box_d2(nlo, nhi, nd, p0, p1, p2):
        s = F(0.0)
        for a in range(3):
            p = p0
            if a == 1:
                p = p1
            elif a == 2:
                p = p2
            e = F(0.0)
            if p < nlo[nd, a]:
                e = nlo[nd, a] - p
            elif p > nhi[nd, a]:
                e = p - nhi[nd, a]
            s += e * e
        return s

    @func
    def point_triangle(v, tri, k, p):
        # the closest point of triangle k to p, by the region of the triangle's plane p projects to
        a = V(v[tri[k, 0], 0], v[tri[k, 0], 1], v[tri[k, 0], 2])
        b = V(v[tri[k, 1], 0], v[tri[k, 1], 1], v[tri[k, 1], 2])
        c = V(v[tri[k, 2], 0], v[tri[k, 2], 1], v[tri[k, 2], 2])
        ab = b - a
        ac = c - a
        ap = p - a
        d1 = _dot(ab, ap)
        d2 = _dot(ac, ap)
        if d1 <= 0.0 and d2 <= 0.0:
            return a
        bp = p - b
        d3 = _dot(ab, bp)
        d4 = _dot(ac, bp)
        if d3 >= 0.0 and d4 <= d3:
            return b
        vc = d1 * d4 - d3 * d2
        if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
            return a + ab * (d1 / (d1 - d3))
        cp = p - c
        d5 = _dot(ab, cp)
        d6 = _dot(ac, cp)
        if d6 >= 0.0 and d5 <= d6:
            return c
        vb = d5 * d2 - d1 * d6
        if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
            return a + ac * (d2 / (d2 - d6))
        va = d3 * d6 - d5 * d4
        if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
            return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))
        s = va + vb + vc
        if not (s > 0.0):
            return a
        return a + ab * (vb / s) + ac * (vc / s)

    @func
    def closest_point(nlo, nhi, left, right, leaf, n, v, tri, p0, p1, p2):
        p = V(p0, p1, p2)
        best = INF
        q = p
        hit = i64(-1)
        stk = _zeros(STACK, i32)
        dst = _zeros(STACK, F)       # each stacked node's box's squared distance to p
        sp = 0
        if n > 0 and math.isfinite(p0) and math.isfinite(p1) and math.isfinite(p2):
            sp = 1
        while sp > 0:
            sp -= 1
            nd = stk[sp]
            if dst[sp] <= best:
                if nd >= n - 1:
                    k = leaf[nd - (n - 1)]
                    c = point_triangle(v, tri, k, p)
                    e = c - p
                    d2 = _dot(e, e)
                    if d2 < best or (d2 == best and k < hit):
                        best = d2
                        q = c
                        hit = k
                else:
                    assert sp + 2 <= STACK, "tack.Mesh.closest_point: the traversal stack overflowed"
                    if sp + 2 <= STACK:
                        a = left[nd]
                        b = right[nd]
                        da = box_d2(nlo, nhi, a, p0, p1, p2)
                        db = box_d2(nlo, nhi, b, p0, p1, p2)
                        if da < db:
                            x = a        # the nearer child on top: popped first, it shrinks `best` sooner
                            a = b
                            b = x
                            y = da
                            da = db
                            db = y
                        stk[sp] = a
                        dst[sp] = da
                        stk[sp + 1] = b
                        dst[sp + 1] = db
                        sp += 2
        return hit, q

    got = _FUNCS[ft] = dict(ray_box=ray_box, ray_closest=ray_closest, closest_point=closest_point,
                            F=F, INF=INF)
    return got


# ------------------------------------------------------------------ the Python objects


def _n3(x, who, what):
    """`x` as an (n, 3) f32 or f64 Tack array (a vec3/vec3d array as its components)."""
    a = x if isinstance(x, _core.Array) else _asarray(x)
    vshape = getattr(a.dtype, "shape", ())
    if a.ndim == 1 and tuple(vshape) == (3,):
        if a.strided:
            a = a.copy()
        a = a._field_view(a.dtype.scalar, 0, (a.shape[0], 3), (3, 1))
    shape = tuple(a.shape)
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"{who}: {what} must be an (n, 3) array or an (n,) array of vec3, got shape {shape}")
    npdt = np.dtype(a.dtype.numpy) if hasattr(a.dtype, "numpy") else None
    if npdt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{who}: {what} must be f32 or f64, got {a.dtype}")
    if a.strided:
        a = a.copy()
    return a


def _first_bad(bad, n):
    """The index and flag of the first nonzero of the device array `bad`, or None (a reduce; a copy only
    on the error path)."""
    from ._algorithms import reduce

    if n == 0 or int(reduce(bad, "max")) == 0:
        return None
    b = bad.numpy()
    k = int(np.flatnonzero(b)[0])
    return k, int(b[k])


class Bvh:
    """A bounding volume hierarchy over n axis-aligned boxes, for box and ray queries in kernels.

    ``Bvh(lower, upper)`` builds it from the boxes' lower and upper corners: (n, 3) arrays of
    f32 or f64 (or (n,) arrays of vec3 / vec3d; a Tack array or anything ``tack.asarray``
    takes), both of one dtype and on one device, the tree being built there.  Every coordinate
    must be finite and each lower corner at most its upper one.  ``bvh.refit(lower, upper)``
    updates the boxes of the same n boxes that moved, keeping the tree's shape.  Inside a kernel
    ``for k in bvh.query_box(lo, hi):`` visits every box overlapping [lo, hi] (touching counts)
    and ``for k in bvh.query_ray(origin, direction):`` every box the ray origin + t direction,
    t >= 0, meets (and, at most, some it misses by a rounding error), each once, in no stated
    order.  Memory: 48 bytes (f64) or 24 (f32) per node for the boxes, 2 n - 1 nodes, plus 8
    per box for the leaf order and 8 per internal node for the children."""

    _who = "tack.Bvh"

    @not_differentiated("tack.Bvh")
    def __init__(self, lower, upper):
        self._build_boxes(_n3(lower, self._who, "lower"), _n3(upper, self._who, "upper"))

    def _check(self, lo, hi):
        if lo.shape[0] != hi.shape[0]:
            raise ValueError(f"{self._who}: lower has {lo.shape[0]} boxes and upper {hi.shape[0]}")
        if lo.dtype != hi.dtype:
            raise TypeError(f"{self._who}: lower is {lo.dtype} and upper {hi.dtype}: give both one dtype")
        if lo.device != hi.device:
            raise ValueError(f"{self._who}: lower is on {lo.device} and upper on {hi.device}")
        n = lo.shape[0]
        if n >= MAX_BOXES:
            raise ValueError(f"{self._who}: at most {MAX_BOXES - 1} boxes, got {n}")
        bad = _empty(n, np.int32, device=lo.device)
        if n:
            _bad_boxes(lo, hi, bad)
        self._refuse(_first_bad(bad, n), lo, hi)

    def _refuse(self, found, lo, hi):
        if found is None:
            return
        k, why = found
        lk, hk = lo[k].numpy().tolist(), hi[k].numpy().tolist()
        if why == 1:
            raise ValueError(f"{self._who}: box {k} has a non-finite coordinate (lower {lk}, upper {hk}): "
                             f"every coordinate must be finite")
        raise ValueError(f"{self._who}: box {k} has a lower corner above its upper one (lower {lk}, "
                         f"upper {hk})")

    def _build_boxes(self, lo, hi):
        from ._algorithms import argsort, reduce

        self._check(lo, hi)
        n = lo.shape[0]
        dev = lo.device
        ft = np.dtype(lo.dtype.numpy).type
        self.n, self.device, self.ftype = n, dev, ft
        m = max(n - 1, 0)
        self._left = _empty(max(m, 1), np.int32, device=dev)
        self._right = _empty(max(m, 1), np.int32, device=dev)
        self._lo = _empty((max(2 * n - 1, 1), 3), ft, device=dev)
        self._hi = _empty((max(2 * n - 1, 1), 3), ft, device=dev)
        if n == 0:
            self._perm = _empty(1, np.int64, device=dev)
            self._levels = []
            self.depth = 0
            return
        lo3 = [float(reduce(lo[:, d], "min")) for d in range(3)]
        hi3 = [float(reduce(hi[:, d], "max")) for d in range(3)]
        scale = [1024.0 / (h - l) if h > l else 0.0 for l, h in zip(lo3, hi3)]
        codes = _empty(n, np.int64, device=dev)
        _morton(lo, hi, _array(np.asarray(lo3, ft), device=dev), _array(np.asarray(scale, ft), device=dev), codes)
        self._perm = argsort(codes)
        parent = _empty(max(2 * n - 1, 1), np.int32, device=dev)
        if m:
            _hierarchy(codes, self._perm, self._left, self._right, parent)
            depth = _empty(m, np.int64, device=dev)
            _depths(parent, depth)
            self._order = argsort(depth)
            starts = _array(np.zeros(STACK + 2, np.int64), device=dev)
            _level_starts(depth, self._order, starts)
            s = starts.numpy()
            top = int(reduce(depth, "max"))
            self._levels = [(int(s[d]), int(s[d + 1])) for d in range(top, -1, -1)]
            self.depth = top + 1
        else:
            self._levels = []
            self.depth = 0
        self._fit(lo, hi)

    def _fit(self, lo, hi):
        _leaf_boxes(lo, hi, self._perm, self._lo, self._hi)
        for first, last in self._levels:
            _union(self._order, np.int64(first), np.int64(last), self._left, self._right, self._lo, self._hi)

    @not_differentiated("Bvh.refit")
    def refit(self, lower, upper):
        """Update the boxes from the same n boxes moved (`lower`, `upper` as the constructor takes
        them, same dtype and device), keeping the tree's shape: the tree stays correct and gets
        looser as the boxes move away from where it was built (build a new one then).  Returns
        the Bvh."""
        lo, hi = _n3(lower, self._who, "lower"), _n3(upper, self._who, "upper")
        if lo.shape[0] != self.n:
            raise ValueError(f"{self._who}.refit: the tree has {self.n} boxes, got {lo.shape[0]}")
        if np.dtype(lo.dtype.numpy).type is not self.ftype or lo.device != self.device:
            raise ValueError(f"{self._who}.refit: the boxes must be {np.dtype(self.ftype).name} on "
                             f"{self.device}, as built, got {lo.dtype} on {lo.device}")
        self._check(lo, hi)
        if self.n:
            self._fit(lo, hi)
        return self

    @property
    def order(self):
        """The boxes' indices in the tree's leaf order (Morton order of their centres; int64)."""
        return self._perm[: self.n]

    def query_box(self, lo, hi):
        """In a kernel, ``for k in bvh.query_box(lo, hi):`` visits the index of every box that
        overlaps [lo, hi] (lo, hi vectors or 3-tuples; touching counts), each once, in no stated
        order; none for a NaN corner.  Called from Python it raises TypeError."""
        raise TypeError(f"{type(self).__name__}.query_box(lo, hi) is a loop inside a kernel "
                        "(for k in bvh.query_box(lo, hi): ...), not a Python call")

    def query_ray(self, origin, direction):
        """In a kernel, ``for k in bvh.query_ray(origin, direction):`` visits the index of every
        box the ray origin + t direction (t >= 0) meets, each once, in no stated order (and at
        most a few it misses by a rounding error); none for a non-finite origin or direction.
        Called from Python it raises TypeError."""
        raise TypeError(f"{type(self).__name__}.query_ray(origin, direction) is a loop inside a kernel "
                        "(for k in bvh.query_ray(origin, direction): ...), not a Python call")

    def _args(self):
        return [self._lo, self._hi, self._left, self._right, self._perm, np.int64(self.n)]

    def _key(self):
        return ("bvh", self.ftype)

    def __repr__(self):
        return (f"tack.Bvh({self.n} boxes, {np.dtype(self.ftype).name}, depth {self.depth}, "
                f"device={self.device!r})")


class Mesh(Bvh):
    """A triangle mesh with a Bvh over its triangles, for ray and closest-point queries in kernels.

    ``Mesh(vertices, triangles)``: vertices an (nv, 3) f32 or f64 array (or vec3 / vec3d),
    triangles an (nt, 3) int32 or int64 array of vertex indices, on one device.  The mesh keeps
    both arrays (no copy when they are Tack arrays of these shapes) and builds the tree over its
    triangles' boxes.  ``mesh.refit(vertices)`` after the vertices moved.  Inside a kernel:
    ``tri, t, u, v = mesh.ray_closest(origin, direction)`` gives the nearest triangle the ray
    origin + t direction (t > 0) hits, its t and the barycentric u, v of the hit (the point
    (1 - u - v) a + u b + v c), or tri = -1 and t = inf for a miss; ``tri, q =
    mesh.closest_point(p)`` gives the nearest triangle to p and the point q on it (a vec3, vec3d
    for f64), or tri = -1 and q = p for an empty mesh or a non-finite p; ``query_box`` and
    ``query_ray`` loops visit triangle indices."""

    _who = "tack.Mesh"

    @not_differentiated("tack.Mesh")
    def __init__(self, vertices, triangles):
        v = _n3(vertices, self._who, "vertices")
        t = triangles if isinstance(triangles, _core.Array) else _asarray(triangles)
        if t.ndim != 2 or t.shape[1] != 3:
            raise ValueError(f"tack.Mesh: triangles must be an (nt, 3) array, got shape {tuple(t.shape)}")
        tdt = np.dtype(t.dtype.numpy) if hasattr(t.dtype, "numpy") else None
        if tdt not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise TypeError(f"tack.Mesh: triangles must be int32 or int64, got {t.dtype}")
        if t.device != v.device:
            raise ValueError(f"tack.Mesh: vertices are on {v.device} and triangles on {t.device}")
        if t.strided:
            t = t.copy()
        self.vertices, self.triangles = v, t
        lo, hi = self._boxes(v)
        self._build_boxes(lo, hi)

    def _boxes(self, v):
        t = self.triangles
        nt = t.shape[0]
        ft = np.dtype(v.dtype.numpy).type
        lo = _empty((nt, 3), ft, device=v.device)
        hi = _empty((nt, 3), ft, device=v.device)
        bad = _empty(nt, np.int32, device=v.device)
        if nt:
            _tri_boxes(v, t, lo, hi, bad)
        found = _first_bad(bad, nt)
        if found is not None:
            k = found[0]
            raise ValueError(f"tack.Mesh: triangle {k} is {t[k].numpy().tolist()}: every index must lie in "
                             f"[0, {v.shape[0]}) (the vertices)")
        return lo, hi

    def _refuse(self, found, lo, hi):
        if found is not None and found[1] == 1:
            k = found[0]
            raise ValueError(f"tack.Mesh: triangle {k} ({self.triangles[k].numpy().tolist()}) has a vertex "
                             f"with a non-finite coordinate: every coordinate must be finite")
        super()._refuse(found, lo, hi)

    @not_differentiated("Mesh.refit")
    def refit(self, vertices):
        """Update the tree's boxes from moved `vertices` (same shape, dtype and device; the
        triangles kept), keeping the tree's shape; returns the Mesh."""
        v = _n3(vertices, self._who, "vertices")
        if v.shape[0] != self.vertices.shape[0]:
            raise ValueError(f"tack.Mesh.refit: the mesh has {self.vertices.shape[0]} vertices, got {v.shape[0]}")
        self.vertices = v
        lo, hi = self._boxes(v)
        return super().refit(lo, hi)

    def ray_closest(self, origin, direction):
        """In a kernel, ``tri, t, u, v = mesh.ray_closest(origin, direction)`` (see the class).
        Called from Python it raises TypeError."""
        raise TypeError("Mesh.ray_closest(origin, direction) is a query inside a kernel "
                        "(tri, t, u, v = mesh.ray_closest(origin, direction)), not a Python call")

    def closest_point(self, p):
        """In a kernel, ``tri, q = mesh.closest_point(p)`` (see the class).  Called from Python
        it raises TypeError."""
        raise TypeError("Mesh.closest_point(p) is a query inside a kernel "
                        "(tri, q = mesh.closest_point(p)), not a Python call")

    @classmethod
    def from_vtk(cls, polydata):
        """A Mesh from a vtkPolyData of triangles (tack.interop.vtk; needs the vtk package)."""
        from .interop.vtk import mesh_arrays

        v, t = mesh_arrays(polydata)
        return cls(v, t)

    def _args(self):
        return super()._args() + [self.vertices, self.triangles]

    def _key(self):
        return ("mesh", self.ftype)

    def __repr__(self):
        return (f"tack.Mesh({self.vertices.shape[0]} vertices, {self.n} triangles, "
                f"{np.dtype(self.ftype).name}, depth {self.depth}, device={self.device!r})")


# ------------------------------------------------------------------ the call hook

def bvh_call(kernel_obj, args, kwargs, method=None):
    """The hook for a call with a Bvh or Mesh argument (or kernel.compile / generated_source / ir of
    such arguments, with their target= keyword); NotImplemented when no argument is one."""
    if not (any(isinstance(v, Bvh) for v in args) or any(isinstance(v, Bvh) for v in kwargs.values())):
        return NotImplemented
    return _rewritten_call.call(kernel_obj, args, kwargs, method, Bvh, lambda v: v._key(), _rewrite)
