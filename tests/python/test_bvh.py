"""tack.Bvh and tack.Mesh: every in-kernel query equal to brute force in NumPy.

Box queries list every box overlapping a query box into a row of a table
and compare the rows, as sets, with NumPy's all-pairs overlap test; ray
queries compare with a slab test in f64 (every box the ray meets is listed,
and nothing a slightly widened box would not give); a mesh's closest ray
hits (triangle and t) with Moller-Trumbore over every triangle, and its
closest points with a distance to every triangle computed another way (the
projection on the plane, else the nearest of the three edges).  Degenerate
inputs: no boxes, one box, all boxes identical (the tree is still binary
and shallow), NaN coordinates and bad triangles refused by name, refit
after the boxes moved.  The same kernels run in debug mode (jit=False), on
PoCL (small: PoCL compiles slowly), and their sources compile with NVRTC,
hiprtc and ocloc and pass the Metal check.
Bigger sizes run under make test-all (_suite.TEST_ALL).
"""

import os
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

# The most hits a query keeps: a box (half-size up to 0.05) and a query box (up to 0.1) meet
# when their centres are within 0.15 on every axis, so among 20000 random boxes (make test-all)
# a query meets at most about 20000 * 0.3**3 = 540 (one met 217 where this was 160)
MAXK = 640
SIZES = (1, 2, 7, 500, 20000) if _suite.TEST_ALL else (1, 2, 7, 500)


@pytest.fixture(autouse=True)
def _no_race_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _boxes_hit(ql, qh, bvh, out, cnt):
    for i in range(ql.shape[0]):
        c = 0
        for k in bvh.query_box((ql[i, 0], ql[i, 1], ql[i, 2]), (qh[i, 0], qh[i, 1], qh[i, 2])):
            if c < out.shape[1]:
                out[i, c] = k
            c += 1
        cnt[i] = c


def _rays_hit(o, d, bvh, out, cnt):
    for i in range(o.shape[0]):
        c = 0
        org = tack.vec3d(o[i, 0], o[i, 1], o[i, 2])       # a vector origin, a tuple direction
        for k in bvh.query_ray(org, (d[i, 0], d[i, 1], d[i, 2])):
            if c < out.shape[1]:
                out[i, c] = k
            c += 1
        cnt[i] = c


def _closest_hits(o, d, mesh, tri, tt, uv):
    for i in range(o.shape[0]):
        k, t, u, v = mesh.ray_closest((o[i, 0], o[i, 1], o[i, 2]), (d[i, 0], d[i, 1], d[i, 2]))
        tri[i] = k
        tt[i] = t
        uv[i, 0] = u
        uv[i, 1] = v


def _closest_points(p, mesh, tri, q):
    for i in range(p.shape[0]):
        k, c = mesh.closest_point((p[i, 0], p[i, 1], p[i, 2]))
        tri[i] = k
        q[i, 0] = c[0]
        q[i, 1] = c[1]
        q[i, 2] = c[2]


boxes_hit = tack.kernel(_boxes_hit)
rays_hit = tack.kernel(_rays_hit)
closest_hits = tack.kernel(_closest_hits)
closest_points = tack.kernel(_closest_points)


def rows(kern, a, b, tree, device="cpu"):
    n = a.shape[0]
    out = tack.zeros((n, MAXK), np.int64, device=device)
    cnt = tack.zeros(n, np.int64, device=device)
    kern(tack.array(a, device=device), tack.array(b, device=device), tree, out, cnt)
    out, cnt = out.numpy(), cnt.numpy()
    assert cnt.max(initial=0) <= MAXK
    return [sorted(out[i, :cnt[i]].tolist()) for i in range(n)]


def random_boxes(rng, n, size=0.05, dtype=np.float64):
    c = rng.random((n, 3))
    s = rng.random((n, 3)) * size
    return (c - s).astype(dtype), (c + s).astype(dtype)


def box_reference(lo, hi, ql, qh):
    return [np.flatnonzero(((lo <= qh[i]) & (hi >= ql[i])).all(1)).tolist() for i in range(len(ql))]


def slab(lo, hi, o, d, pad=0.0):
    """The boxes (widened by pad) the ray o + t d, t >= 0, meets: the slab test in f64."""
    lo, hi = lo.astype(np.float64) - pad, hi.astype(np.float64) + pad
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - o) / d, (hi - o) / d
        near = np.where(d == 0, np.where((o >= lo) & (o <= hi), -np.inf, np.inf), np.minimum(t1, t2))
        far = np.where(d == 0, np.where((o >= lo) & (o <= hi), np.inf, -np.inf), np.maximum(t1, t2))
    tmin = np.maximum(near.max(1), 0.0)
    tmax = far.min(1)
    return set(np.flatnonzero(tmin <= tmax).tolist())


def test_box_queries_equal_brute_force():
    rng = np.random.default_rng(0)
    for n in SIZES:
        lo, hi = random_boxes(rng, n)
        bvh = tack.Bvh(lo, hi)
        assert bvh.n == n and bvh.depth <= 62
        ql, qh = random_boxes(rng, 300, 0.1)
        assert rows(boxes_hit, ql, qh, bvh) == box_reference(lo, hi, ql, qh)
    # f32 boxes, queries in f32: the same comparisons as NumPy's on the f32 values
    lo, hi = random_boxes(rng, 3000, 0.03, np.float32)
    ql, qh = random_boxes(rng, 400, 0.05, np.float32)
    assert rows(boxes_hit, ql, qh, tack.Bvh(lo, hi)) == box_reference(lo, hi, ql, qh)
    # vec3 arrays build the same tree
    lo3 = tack.array(lo, tack.vec3)
    assert np.array_equal(tack.Bvh(lo3, tack.array(hi, tack.vec3)).order.numpy(), tack.Bvh(lo, hi).order.numpy())


def test_ray_queries_equal_the_slab_test():
    rng = np.random.default_rng(1)
    lo, hi = random_boxes(rng, 2000, 0.02)
    bvh = tack.Bvh(lo, hi)
    o = rng.random((300, 3)) * 1.4 - 0.2
    d = rng.normal(size=(300, 3))
    d[:20, 0] = 0.0          # rays parallel to a slab
    d[20:30, 1:] = 0.0       # along an axis
    got = rows(rays_hit, o, d, bvh)
    for i in range(len(o)):
        strict, wide = slab(lo, hi, o[i], d[i]), slab(lo, hi, o[i], d[i], 1e-9)
        assert strict <= set(got[i]) <= wide, i
        assert len(got[i]) == len(set(got[i]))


def triangle_soup(rng, nt, dtype=np.float64, spread=0.2):
    a = rng.random((nt, 3))
    v = np.concatenate([a, a + (rng.random((nt, 3)) - 0.5) * spread, a + (rng.random((nt, 3)) - 0.5) * spread])
    t = np.stack([np.arange(nt), np.arange(nt) + nt, np.arange(nt) + 2 * nt], 1)
    return v.astype(dtype), t


def moller_trumbore(v, tri, o, d):
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    e1, e2 = b - a, c - a
    p = np.cross(d, e2)
    det = (e1 * p).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        s = o - a
        u = (s * p).sum(1) * inv
        q = np.cross(s, e1)
        w = (d * q).sum(1) * inv
        t = (e2 * q).sum(1) * inv
    ok = (det != 0) & (u >= 0) & (u <= 1) & (w >= 0) & (u + w <= 1) & (t > 0)
    if not ok.any():
        return -1, np.inf
    k = np.flatnonzero(ok)[np.argmin(t[ok])]
    return int(k), float(t[k])


def test_closest_ray_hits_equal_moller_trumbore():
    rng = np.random.default_rng(2)
    for nt in (1, 3, 800):
        v, t = triangle_soup(rng, nt)
        mesh = tack.Mesh(v, t)
        m = 300
        o = rng.random((m, 3)) * 1.4 - 0.2
        d = rng.normal(size=(m, 3))
        if nt < 10:   # half the rays at a triangle's centre: hits, not only misses
            k = rng.integers(0, nt, m // 2)
            d[: m // 2] = (v[t[k, 0]] + v[t[k, 1]] + v[t[k, 2]]) / 3 - o[: m // 2]
        tri, tt, uv = tack.zeros(m, np.int64), tack.zeros(m, np.float64), tack.zeros((m, 2), np.float64)
        closest_hits(o, d, mesh, tri, tt, uv)
        tri, tt, uv = tri.numpy(), tt.numpy(), uv.numpy()
        hits = 0
        for i in range(m):
            k, tk = moller_trumbore(v, t, o[i], d[i])
            assert tri[i] == k, (nt, i)
            if k < 0:
                assert tt[i] == np.inf
                continue
            hits += 1
            np.testing.assert_allclose(tt[i], tk, rtol=1e-12)
            a, b, c = v[t[k]]
            np.testing.assert_allclose(o[i] + tt[i] * d[i], (1 - uv[i].sum()) * a + uv[i, 0] * b + uv[i, 1] * c,
                                       atol=1e-9)
        assert hits > (40 if nt > 10 else m // 3)
        # a Mesh's query_ray visits triangle indices: the closest hit's triangle among them
        got = rows(rays_hit, o, d, mesh)
        assert all(tri[i] in got[i] for i in range(m) if tri[i] >= 0)


def point_triangle_distance(p, a, b, c):
    """The distance from p to each triangle (a, b, c): to the plane where p projects inside, else to
    the nearest edge (segments)."""
    n = np.cross(b - a, c - a)
    nn = (n * n).sum(1)
    s = ((p - a) * n).sum(1) / nn
    x = p - s[:, None] * n
    inside = np.ones(len(a), bool)
    for u, w in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(w - u, x - u) * n).sum(1) >= 0
    best = np.where(inside, np.abs(s) * np.sqrt(nn), np.inf)
    for u, w in ((a, b), (b, c), (c, a)):
        e = w - u
        h = np.clip(((p - u) * e).sum(1) / (e * e).sum(1), 0.0, 1.0)
        best = np.minimum(best, np.linalg.norm(p - (u + h[:, None] * e), axis=1))
    return best


def test_closest_points_equal_brute_force():
    rng = np.random.default_rng(3)
    v, t = triangle_soup(rng, 600)
    mesh = tack.Mesh(v, t)
    p = rng.random((400, 3)) * 1.2 - 0.1
    tri, q = tack.zeros(400, np.int64), tack.zeros((400, 3), np.float64)
    closest_points(p, mesh, tri, q)
    tri, q = tri.numpy(), q.numpy()
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    for i in range(len(p)):
        dist = point_triangle_distance(p[i], a, b, c)
        got = np.linalg.norm(q[i] - p[i])
        np.testing.assert_allclose(got, dist.min(), rtol=1e-9, atol=1e-12)
        assert dist[tri[i]] <= dist.min() * (1 + 1e-9) + 1e-12
        # q lies on triangle tri[i]
        assert point_triangle_distance(q[i], a[tri[i]:tri[i] + 1], b[tri[i]:tri[i] + 1],
                                       c[tri[i]:tri[i] + 1])[0] < 1e-9


def test_degenerate_inputs():
    rng = np.random.default_rng(4)
    ql, qh = random_boxes(rng, 50, 0.5)
    # no boxes: every query finds nothing
    empty = tack.Bvh(np.zeros((0, 3)), np.zeros((0, 3)))
    assert empty.n == 0 and rows(boxes_hit, ql, qh, empty) == [[]] * 50
    assert rows(rays_hit, ql, qh, empty) == [[]] * 50
    # one box
    one = tack.Bvh([[0.2, 0.2, 0.2]], [[0.4, 0.4, 0.4]])
    assert rows(boxes_hit, ql, qh, one) == box_reference(np.array([[0.2] * 3]), np.array([[0.4] * 3]), ql, qh)
    # all boxes identical: the equal codes still make a binary tree of depth about log2 n
    lo = np.tile([[0.1, 0.2, 0.3]], (5000, 1))
    same = tack.Bvh(lo, lo + 0.1)
    assert same.depth <= 14
    cnt = tack.zeros(1, np.int64)
    boxes_hit(np.array([[0.15, 0.25, 0.35]]), np.array([[0.15, 0.25, 0.35]]), same, tack.zeros((1, MAXK), np.int64), cnt)
    assert cnt.numpy()[0] == 5000
    # NaN query corners and NaN or infinite rays find nothing
    nanq = np.array([[np.nan, 0.0, 0.0]])
    assert rows(boxes_hit, nanq, np.ones((1, 3)), one) == [[]]
    assert rows(rays_hit, np.zeros((1, 3)), nanq, one) == [[]]
    # an empty mesh: a miss and tri = -1
    mesh = tack.Mesh(np.zeros((3, 3)), np.zeros((0, 3), np.int32))
    tri, tt = tack.zeros(1, np.int64), tack.zeros(1, np.float64)
    closest_hits(np.zeros((1, 3)), np.ones((1, 3)), mesh, tri, tt, tack.zeros((1, 2), np.float64))
    assert tri.numpy()[0] == -1 and tt.numpy()[0] == np.inf
    q = tack.zeros((1, 3), np.float64)
    closest_points(np.full((1, 3), 0.5), mesh, tri, q)
    assert tri.numpy()[0] == -1 and q.numpy().tolist() == [[0.5] * 3]


def test_refit_follows_moved_boxes():
    rng = np.random.default_rng(5)
    lo, hi = random_boxes(rng, 1000)
    bvh = tack.Bvh(lo, hi)
    shift = rng.normal(size=(1000, 3)) * 0.05
    assert bvh.refit(lo + shift, hi + shift) is bvh
    ql, qh = random_boxes(rng, 200, 0.1)
    assert rows(boxes_hit, ql, qh, bvh) == box_reference(lo + shift, hi + shift, ql, qh)
    v, t = triangle_soup(rng, 200)
    mesh = tack.Mesh(v, t)
    mesh.refit(v + 0.3)
    o = rng.random((100, 3))
    d = rng.normal(size=(100, 3))
    tri, tt = tack.zeros(100, np.int64), tack.zeros(100, np.float64)
    closest_hits(o, d, mesh, tri, tt, tack.zeros((100, 2), np.float64))
    assert tri.numpy().tolist() == [moller_trumbore(v + 0.3, t, o[i], d[i])[0] for i in range(100)]


def test_bad_arguments_are_refused_by_name():
    z = np.zeros((4, 3))
    bad = z.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"box 2 has a non-finite coordinate \(lower \[0.0, nan, 0.0\]"):
        tack.Bvh(bad, z)
    inverted = z.copy()
    inverted[3] = 1.0
    with pytest.raises(ValueError, match="box 3 has a lower corner above its upper one"):
        tack.Bvh(inverted, z)
    with pytest.raises(ValueError, match=r"lower must be an \(n, 3\) array or an \(n,\) array of vec3, got shape \(4, 2\)"):
        tack.Bvh(np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(TypeError, match="upper must be f32 or f64, got tack.i64"):
        tack.Bvh(z, np.zeros((4, 3), np.int64))
    with pytest.raises(ValueError, match="lower has 4 boxes and upper 3"):
        tack.Bvh(z, z[:3])
    with pytest.raises(TypeError, match="lower is tack.f64 and upper tack.f32"):
        tack.Bvh(z, z.astype(np.float32))
    with pytest.raises(ValueError, match=r"triangle 1 is \[0, 1, 3\]: every index must lie in \[0, 3\)"):
        tack.Mesh(np.zeros((3, 3)), np.array([[0, 1, 2], [0, 1, 3]]))
    with pytest.raises(TypeError, match="triangles must be int32 or int64, got tack.f64"):
        tack.Mesh(np.zeros((3, 3)), np.zeros((1, 3)))
    v = np.eye(3)
    v[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"triangle 0 \(\[0, 1, 2\]\) has a vertex with a non-finite coordinate"):
        tack.Mesh(v, np.array([[0, 1, 2]]))
    with pytest.raises(TypeError, match="a loop inside a kernel"):
        tack.Bvh(z, z).query_box((0, 0, 0), (1, 1, 1))
    with pytest.raises(TypeError, match="a query inside a kernel"):
        tack.Mesh(np.eye(3), np.array([[0, 1, 2]])).ray_closest((0, 0, 0), (1, 0, 0))
    with pytest.raises(ValueError, match="the tree has 4 boxes, got 3"):
        tack.Bvh(z, z).refit(z[:3], z[:3])


def _top_level(bvh, out):
    for k in bvh.query_box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)):
        out[k] = 1


def _other_use(bvh, out):
    for i in range(out.shape[0]):
        b = bvh  # noqa: F841
        out[i] = 0


def _ray_closest_on_bvh(bvh, out):
    for i in range(out.shape[0]):
        k, t, u, v = bvh.ray_closest((0.0, 0.0, 0.0), (1.0, 0.0, 0.0))
        out[i] = k


def _two_coords(bvh, out):
    for i in range(out.shape[0]):
        for k in bvh.query_box((0.0, 0.0), (1.0, 1.0, 1.0)):
            out[i] = k


def _in_expression(mesh, out):
    for i in range(out.shape[0]):
        out[i] = mesh.closest_point((0.0, 0.0, 0.0))[0]


def _three_args(bvh, out):
    for i in range(out.shape[0]):
        for k in bvh.query_box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), 2.0):
            out[i] = k


def _two_names(bvh, out):
    for i in range(out.shape[0]):
        for k, m in bvh.query_box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)):
            out[i] = k


def _with_else(bvh, out):
    for i in range(out.shape[0]):
        for k in bvh.query_ray((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)):
            out[i] = k
        else:
            out[i] = -1


@pytest.mark.parametrize("fn, msg, mesh", [
    (_top_level, "at the top level of a kernel would be a parallel loop", False),
    (_three_args, r"bvh.query_box takes two arguments: bvh.query_box\(lo, hi\)", False),
    (_two_names, r"'for ... in bvh.query_box\(...\)' takes one name for the box's index", False),
    (_with_else, r"'for ... in bvh.query_ray\(...\)' has no 'else:' block", False),
    (_other_use, "'bvh' is a tack.Bvh: a kernel uses it only in its queries", False),
    (_ray_closest_on_bvh, r"has query_box\(\), query_ray\(\), not 'ray_closest'", False),
    (_two_coords, "the lo of a tack.Bvh query has 3 coordinates, got 2", False),
    (_in_expression, r"gives several values: write 'tri, q = mesh.closest_point\(...\)'", True),
])
def test_misuse_in_a_kernel_is_a_compile_error_at_the_line(fn, msg, mesh):
    tree = tack.Mesh(np.eye(3), np.array([[0, 1, 2]])) if mesh else tack.Bvh(np.zeros((2, 3)), np.ones((2, 3)))
    with pytest.raises(tack.CompileError, match=msg) as e:
        tack.kernel(fn)(tree, np.zeros(3, np.int64))
    assert e.value.lineno > fn.__code__.co_firstlineno


def test_break_ends_the_query_and_continue_goes_on():
    @tack.kernel
    def first_and_count(ql, qh, bvh, first, cnt):
        for i in range(ql.shape[0]):
            c = 0
            for k in bvh.query_box((ql[i, 0], ql[i, 1], ql[i, 2]), (qh[i, 0], qh[i, 1], qh[i, 2])):
                if k % 2 == 1:
                    continue
                c += 1
            cnt[i] = c
            first[i] = -1
            for k in bvh.query_box((ql[i, 0], ql[i, 1], ql[i, 2]), (qh[i, 0], qh[i, 1], qh[i, 2])):
                first[i] = k
                break

    rng = np.random.default_rng(6)
    lo, hi = random_boxes(rng, 500)
    ql, qh = random_boxes(rng, 100, 0.1)
    first, cnt = np.zeros(100, np.int64), np.zeros(100, np.int64)
    first_and_count(ql, qh, tack.Bvh(lo, hi), first, cnt)
    want = box_reference(lo, hi, ql, qh)
    assert cnt.tolist() == [sum(1 for k in w if k % 2 == 0) for w in want]
    assert all((f == -1) == (not w) and (f == -1 or f in w) for f, w in zip(first, want))


@tack.struct
class _Probe:
    lo: tack.vec3d
    hi: tack.vec3d
    boxes: tack.i64
    points: tack.i64


def _boxes_and_points(q, bvh, pts, grid, r):
    for i in range(q.shape[0]):
        c = 0
        for k in bvh.query_box(q[i].lo, q[i].hi):
            c += 1
        q[i].boxes = c
        m = 0
        for j in grid.neighbors(q[i].lo, r):
            d = pts[j] - q[i].lo
            if tack.dot(d, d) <= r * r:
                m += 1
        q[i].points = m


@pytest.mark.parametrize("jit", [True, False])
def test_a_kernel_takes_a_bvh_a_grid_and_structs_together(jit):
    # the Bvh rewrite, then the HashGrid's, then the structs', each on the tree the one before made
    # (refused as a TypeError before)
    rng = np.random.default_rng(9)
    lo, hi = random_boxes(rng, 300)
    rec = np.zeros(40, _Probe.dtype)
    rec["lo"], rec["hi"] = random_boxes(rng, 40, 0.1)
    pts = rng.random((300, 3))
    tack.kernel(_boxes_and_points, jit=jit)(tack.asarray(rec, dtype=_Probe), tack.Bvh(lo, hi),
                                            tack.array(pts, tack.vec3d), tack.HashGrid(pts, 0.1), 0.1)
    assert rec["boxes"].tolist() == [len(w) for w in box_reference(lo, hi, rec["lo"], rec["hi"])]
    d2 = ((pts[None, :, :] - rec["lo"][:, None, :]) ** 2).sum(-1)
    assert rec["points"].tolist() == (d2 <= 0.1 * 0.1).sum(1).tolist()


def test_debug_mode_gives_the_same_results():
    rng = np.random.default_rng(7)
    lo, hi = random_boxes(rng, 200)
    bvh = tack.Bvh(lo, hi)
    ql, qh = random_boxes(rng, 30, 0.1)
    assert rows(tack.kernel(_boxes_hit, jit=False), ql, qh, bvh) == rows(boxes_hit, ql, qh, bvh)
    o, d = rng.random((30, 3)), rng.normal(size=(30, 3))
    assert rows(tack.kernel(_rays_hit, jit=False), o, d, bvh) == rows(rays_hit, o, d, bvh)
    v, t = triangle_soup(rng, 100)
    mesh = tack.Mesh(v, t)
    outs = []
    for kern in (tack.kernel(_closest_hits, jit=False), closest_hits):
        tri, tt = tack.zeros(30, np.int64), tack.zeros(30, np.float64)
        kern(o, d, mesh, tri, tt, tack.zeros((30, 2), np.float64))
        outs.append((tri.numpy().tolist(), tt.numpy().tolist()))
    assert outs[0] == outs[1]
    outs = []
    for kern in (tack.kernel(_closest_points, jit=False), closest_points):
        tri, q = tack.zeros(30, np.int64), tack.zeros((30, 3), np.float64)
        kern(o, mesh, tri, q)
        outs.append((tri.numpy().tolist(), q.numpy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)  # the compiled code may contract to FMAs


def test_debug_mode_f64_ray_closest_hits_what_the_compiled_kernel_hits():
    # a ray that enters the triangle's box through a slab it crosses backwards (d.z < 0): debug
    # mode missed it, its f64 slab test running with the caller's i32 type for a local of its own
    # (np.float64(inf) was a weak constant in the compiled build, so no build matched the call)
    o = np.array([[0.17505202839526945, 0.48462693487230735, 0.4772720374472966]])
    d = np.array([[0.2742882017921661, 0.12522726710851062, -0.49545321860814195]])
    v = np.array([[0.24019237886466843, 0.5, 0.45], [0.22009618943233428, 0.5750000000000001, 0.37764571353075627],
                  [0.21022225211327955, 0.5, 0.37764571353075627]])
    mesh = tack.Mesh(v, np.array([[0, 1, 2]], np.int32))
    for kern in (tack.kernel(_closest_hits, jit=False), closest_hits):
        tri, tt = tack.zeros(1, np.int64), tack.zeros(1, np.float64)
        kern(o, d, mesh, tri, tt, tack.zeros((1, 2), np.float64))
        assert tri.numpy().tolist() == [0] and tt.numpy()[0] == pytest.approx(0.1607102635972229, rel=1e-12)


OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_build_and_ray_query_on_opencl():
    # f32, built on the device; the closest hits equal the CPU's
    dev = OPENCL[0]
    rng = np.random.default_rng(8)
    v, t = triangle_soup(rng, 300, np.float32)
    o = rng.random((200, 3)).astype(np.float32)
    d = rng.normal(size=(200, 3)).astype(np.float32)
    got = []
    for device in ("cpu", dev):
        mesh = tack.Mesh(tack.array(v, device=device), tack.array(t, device=device))
        assert mesh.device == device
        tri, tt = tack.zeros(200, np.int64, device=device), tack.zeros(200, np.float32, device=device)
        closest_hits(tack.array(o, device=device), tack.array(d, device=device), mesh, tri, tt,
                     tack.zeros((200, 2), np.float32, device=device))
        got.append((mesh.order.numpy().tolist(), tri.numpy().tolist(), tt.numpy().tolist()))
    assert got[0] == got[1]
    assert sum(k >= 0 for k in got[0][1]) > 20


def every_source(target):
    """The build's kernels and the four query kernels, f32, for `target`."""
    from tack import _bvh as B

    z = tack.zeros
    f32, i64, i32 = np.float32, np.int64, np.int32
    rng = np.random.default_rng(9)
    v, t = triangle_soup(rng, 20, f32)
    mesh = tack.Mesh(v, t)
    q = z((4, 3), f32)
    return [
        B._bad_boxes.generated_source(q, q, z(4, i32), target=target),
        B._tri_boxes.generated_source(q, z((4, 3), i64), q, q, z(4, i32), target=target),
        B._morton.generated_source(q, q, z(3, f32), z(3, f32), z(4, i64), target=target),
        B._hierarchy.generated_source(z(4, i64), z(4, i64), z(3, i32), z(3, i32), z(7, i32), target=target),
        B._leaf_boxes.generated_source(q, q, z(4, i64), z((7, 3), f32), z((7, 3), f32), target=target),
        B._depths.generated_source(z(7, i32), z(3, i64), target=target),
        B._level_starts.generated_source(z(3, i64), z(3, i64), z(66, i64), target=target),
        B._union.generated_source(z(3, i64), i64(0), i64(3), z(3, i32), z(3, i32), z((7, 3), f32),
                                  z((7, 3), f32), target=target),
        boxes_hit.generated_source(q, q, mesh, z((4, MAXK), i64), z(4, i64), target=target),
        closest_hits.generated_source(q, q, mesh, z(4, i64), z(4, f32), z((4, 2), f32), target=target),
        closest_points.generated_source(q, mesh, z(4, i64), q, target=target),
    ]


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
    # the box loop and the closest ray hit (the ray-box test, Moller-Trumbore, the ordered walk):
    # ocloc takes ~10 s for a Mesh query's source, and PoCL above already compiled and ran the
    # build's kernels and ray_closest; closest_point is left to NVRTC, hiprtc and the Metal check
    sources = every_source("opencl")
    picked = sources[8:10]
    failed = [r for r in _ocloc.check_many([(src, "pvc") for src in picked]) if r is not None]
    assert not failed, failed[0][1][-3000:]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_sources_pass_the_msl_check():
    # f32 trees: Metal has no f64
    verdicts = _msl.verdicts(every_source("metal"))
    assert verdicts == ["ok"] * len(verdicts), [v for v in verdicts if v != "ok"][0]


def test_mesh_from_vtk_shares_the_polydata():
    pytest.importorskip("vtkmodules", reason="VTK is not installed (the interop extra)")
    from vtkmodules.util import numpy_support as nps
    from vtkmodules.vtkFiltersSources import vtkSphereSource

    src = vtkSphereSource()
    src.SetThetaResolution(24)
    src.SetPhiResolution(12)
    src.Update()
    pd = src.GetOutput()
    mesh = tack.Mesh.from_vtk(pd)
    pts = nps.vtk_to_numpy(pd.GetPoints().GetData())
    conn = nps.vtk_to_numpy(pd.GetPolys().GetConnectivityArray()).reshape(-1, 3)
    assert mesh.n == len(conn) and mesh.vertices.shape == pts.shape
    pts[0, 0] += 0.25          # the mesh's arrays are VTK's memory: no copy
    assert mesh.vertices.numpy()[0, 0] == pts[0, 0]
    conn[0, 0] = conn[0, 1]
    assert mesh.triangles.numpy()[0].tolist() == conn[0].tolist()
    # rays from the centre outwards hit the unit sphere's triangulation at t just under 0.5
    d = np.random.default_rng(11).normal(size=(50, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    mesh = tack.Mesh.from_vtk(src.GetOutput())
    tri, tt = tack.zeros(50, np.int64), tack.zeros(50, np.float32)
    closest_hits(np.zeros((50, 3), np.float32), d.astype(np.float32), mesh, tri, tt, tack.zeros((50, 2), np.float32))
    assert (tri.numpy() >= 0).all() and ((tt.numpy() > 0.47) & (tt.numpy() <= 0.5001)).all()
    from vtkmodules.vtkCommonDataModel import vtkPolyData

    with pytest.raises(TypeError, match="mesh_arrays\\(\\) expects a vtkPolyData"):
        tack.Mesh.from_vtk(src)
    quad = vtkPolyData()
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray

    p = vtkPoints()
    for xyz in ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)):
        p.InsertNextPoint(*xyz)
    cells = vtkCellArray()
    cells.InsertNextCell(4, [0, 1, 2, 3])
    quad.SetPoints(p)
    quad.SetPolys(cells)
    with pytest.raises(ValueError, match="polygon 0 of the polydata has 4 points: a tack.Mesh takes triangles"):
        tack.Mesh.from_vtk(quad)


def test_a_full_stack_raises_and_never_writes_past_it():
    # No tree the build makes is deeper than 62, so a chain is made by hand: internal node i has
    # leaf i on its left and internal node i + 1 on its right, every box the unit cube.  A walk
    # keeps one leaf a level on its stack, so it fills the 64 entries at depth 64.
    n = 100
    bvh = tack.Bvh(np.zeros((n, 3)), np.ones((n, 3)))
    left = np.arange(n - 1, 2 * n - 2, dtype=np.int32)
    right = np.arange(1, n, dtype=np.int32)
    right[-1] = 2 * n - 2
    bvh._left, bvh._right = tack.array(left), tack.array(right)
    bvh._perm = tack.array(np.arange(n, dtype=np.int64))
    q = np.full((1, 3), 0.5)
    with pytest.raises(AssertionError, match="the traversal stack of 64 nodes overflowed"):
        boxes_hit(q, q, bvh, tack.zeros((1, MAXK), np.int64), tack.zeros(1, np.int64))
    # without checks the assert is compiled out: the walk stops pushing rather than write past the
    # stack, so it finds the leaves it had stacked and no more
    unchecked = tack.kernel(_boxes_hit, checks=False)
    out, cnt = tack.zeros((1, MAXK), np.int64), tack.zeros(1, np.int64)
    unchecked(q, q, bvh, out, cnt)
    assert 0 < cnt.numpy()[0] < n
    assert sorted(out.numpy()[0, :cnt.numpy()[0]].tolist()) == list(range(cnt.numpy()[0]))

    # the Mesh's closest_point walks the same way (its own stack, in a @tack.func)
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    mesh = tack.Mesh(v, np.zeros((n, 3), np.int64) + [0, 1, 2])
    mesh._left, mesh._right, mesh._perm = bvh._left, bvh._right, bvh._perm
    with pytest.raises(AssertionError, match="tack.Mesh.closest_point: the traversal stack overflowed"):
        closest_points(q, mesh, tack.zeros(1, np.int64), tack.zeros((1, 3), np.float64))
