"""tack.HashGrid: neighbour sets equal to SciPy's cKDTree.query_ball_point.

One kernel per dimension lists every point's neighbours (the grid's
candidates within the radius) into a row of a table, and each case compares
the rows, as sets, with cKDTree.query_ball_point: random points in 2-D and
3-D (f32 and f64), a radius larger than a cell, points on the cells'
borders at exactly the radius, a spread that makes the grid widen its
cells, a rebuild, an empty grid, and query points that are NaN or outside
the grid.  The same kernel runs in debug mode and on PoCL, and its source
passes the batched GPU checkers.
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

spatial = pytest.importorskip("scipy.spatial")

MAXK = 96


@pytest.fixture(autouse=True)
def _no_race_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _lists(q, grid, pts, r, nb, cnt):
    for i in range(q.shape[0]):
        c = 0
        for j in grid.neighbors((q[i, 0], q[i, 1], q[i, 2]), r):
            dx = pts[j, 0] - q[i, 0]
            dy = pts[j, 1] - q[i, 1]
            dz = pts[j, 2] - q[i, 2]
            if dx * dx + dy * dy + dz * dz <= r * r:
                if c < nb.shape[1]:
                    nb[i, c] = j
                c += 1
        cnt[i] = c


def _lists2(q, grid, pts, r, nb, cnt):
    for i in range(q.shape[0]):
        c = 0
        p = tack.vec2(q[i, 0], q[i, 1])    # a vector point
        for j in grid.neighbors(p, r):
            dx = pts[j, 0] - p.x
            dy = pts[j, 1] - p.y
            if dx * dx + dy * dy > r * r:
                continue
            if c < nb.shape[1]:
                nb[i, c] = j
            c += 1
        cnt[i] = c


lists3 = tack.kernel(_lists)
lists2 = tack.kernel(_lists2)


def neighbour_sets(kern, q, grid, pts, r, device="cpu"):
    n = q.shape[0]
    nb = tack.zeros((n, MAXK), np.int64, device=device)
    cnt = tack.zeros(n, np.int64, device=device)
    Q = tack.array(q, device=device)
    P = tack.array(pts, device=device)
    kern(Q, grid, P, q.dtype.type(r), nb, cnt)
    nb, cnt = nb.numpy(), cnt.numpy()
    assert cnt.max(initial=0) <= MAXK
    return [sorted(nb[i, :cnt[i]].tolist()) for i in range(n)]


def kdtree_sets(q, pts, r):
    if len(pts) == 0:
        return [[] for _ in range(len(q))]
    return [sorted(s) for s in spatial.cKDTree(pts.astype(np.float64)).query_ball_point(q.astype(np.float64), r)]


def test_neighbour_sets_equal_cKDTree_in_3d_and_2d():
    rng = np.random.default_rng(0)
    x = rng.random((3000, 3))
    grid = tack.HashGrid(x, 0.05)
    assert grid.dims == (20, 20, 20) and grid.cell_width == 0.05
    assert neighbour_sets(lists3, x, grid, x, 0.05) == kdtree_sets(x, x, 0.05)
    # a radius of 2.5 cells, other query points (some outside the grid) on the same grid
    q = rng.random((500, 3)) * 1.2 - 0.1
    assert neighbour_sets(lists3, q, grid, x, 0.12) == kdtree_sets(q, x, 0.12)
    # 2-D, f32 points, a vector point, a cell smaller than the radius
    y = rng.random((2000, 2)).astype(np.float32)
    g2 = tack.HashGrid(y, 0.02)
    assert g2.dim == 2 and g2.dims == (50, 50)
    got = neighbour_sets(lists2, y, g2, y, 0.03)
    want = kdtree_sets(y, y, np.float64(np.float32(0.03)))
    # f32 distances against SciPy's f64 ones: a pair at the radius to within rounding may differ
    diff = [i for i in range(len(y)) if got[i] != want[i]]
    assert len(diff) <= 2, diff


def test_points_on_cell_borders_at_exactly_the_radius():
    # a lattice with the cell size as its spacing: every point sits on cell borders, and its
    # six lattice neighbours are at exactly the radius (and included, as query_ball_point's <=)
    g = np.stack(np.meshgrid(*[np.arange(6.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    grid = tack.HashGrid(g, 1.0)
    got = neighbour_sets(lists3, g, grid, g, 1.0)
    assert got == kdtree_sets(g, g, 1.0)
    assert len(got[int(np.flatnonzero((g == [2, 2, 2]).all(1))[0])]) == 7
    # a radius of two cells: the 33 points within 2 of an inner point
    assert neighbour_sets(lists3, g[:40], grid, g, 2.0) == kdtree_sets(g[:40], g, 2.0)


def test_a_spread_widens_the_cells_and_a_rebuild_reuses_the_grid():
    rng = np.random.default_rng(1)
    x = rng.random((1000, 3))
    x[:10] *= 1e6          # a few far points: 20^3 cells at the asked size would be ~1e17
    grid = tack.HashGrid(x, 0.05)
    assert grid.ncells <= 4096 and grid.cell_width > 1e3
    assert neighbour_sets(lists3, x, grid, x, 0.05) == kdtree_sets(x, x, 0.05)
    y = rng.random((1000, 3)) * 0.7      # 14^3 cells: no more than the grid has
    start = grid._start
    assert grid.build(y) is grid and grid._start is start and grid.cell_width == 0.05
    assert neighbour_sets(lists3, y, grid, y, 0.07) == kdtree_sets(y, y, 0.07)


def test_vector_arrays_build_the_same_grid():
    x = np.random.default_rng(6).random((400, 3))
    want = tack.HashGrid(x, 0.1)._perm.numpy()
    assert np.array_equal(tack.HashGrid(tack.array(x, tack.vec3d), 0.1)._perm.numpy(), want)
    # a strided view of a vector array is copied first
    v = tack.array(np.repeat(x, 2, axis=0), tack.vec3d)[::2]
    assert np.array_equal(tack.HashGrid(v, 0.1)._perm.numpy(), want)
    # points reordered by the permutation are in cell order: their permutation is the identity
    grid = tack.HashGrid(x, 0.1)
    assert np.array_equal(grid.permutation.numpy(), want)
    assert np.array_equal(grid.build(x[want]).permutation.numpy(), np.arange(400))
    g2 = tack.HashGrid(tack.array(x[:, :2].astype(np.float32), tack.vec2), 0.1)
    assert g2.dim == 2 and g2.ftype is np.float32


def test_empty_grid_nan_points_and_negative_radius_find_nothing():
    grid = tack.HashGrid(np.zeros((0, 3)), 0.1)
    assert grid.n == 0
    q = np.array([[0.0, 0.0, 0.0], [np.nan, 0.5, 0.5]])
    assert neighbour_sets(lists3, q, grid, np.zeros((1, 3)), 0.5) == [[], []]
    x = np.random.default_rng(2).random((200, 3))
    grid.build(x)
    got = neighbour_sets(lists3, np.array([[np.nan, 0.5, 0.5], [0.5, 0.5, 0.5]]), grid, x, 0.2)
    assert got[0] == [] and got[1] == kdtree_sets(x[:1] * 0 + 0.5, x, 0.2)[0]
    assert neighbour_sets(lists3, x[:5], grid, x, -0.2) == [[]] * 5
    # the launch's stream= goes to the launch (on the CPU a stream orders nothing)
    cnt = tack.zeros(1, np.int64)
    lists3(x[:1], grid, x, 0.2, tack.zeros((1, MAXK), np.int64), cnt, stream=tack.Stream("cpu"))
    assert cnt.numpy()[0] == len(kdtree_sets(x[:1], x, 0.2)[0])
    grid.build(x[:50])
    assert neighbour_sets(lists3, x[:5], grid, x[:50], np.inf) == [list(range(50))] * 5


def test_bad_arguments_are_refused_by_name():
    x = np.zeros((4, 3))
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=f"cell_size must be a positive finite number, got {bad!r}"):
            tack.HashGrid(x, bad)
    with pytest.raises(TypeError, match="cell_size must be a number, got 'a'"):
        tack.HashGrid(x, "a")
    with pytest.raises(ValueError, match=r"\(n, 2\) or \(n, 3\) array, got shape \(4, 4\)"):
        tack.HashGrid(np.zeros((4, 4)), 1.0)
    with pytest.raises(ValueError, match=r"got shape \(5,\)"):
        tack.HashGrid(np.zeros(5), 1.0)
    with pytest.raises(TypeError, match="points must be f32 or f64, got tack.i32"):
        tack.HashGrid(np.zeros((4, 3), np.int32), 1.0)
    y = np.zeros((4, 3))
    y[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"point 2 has nan in coordinate 1 \(the point: \[0.0, nan, 0.0\]\)"):
        tack.HashGrid(y, 1.0)   # which point: the particle to look at (the message named only the axis)
    y[1, 0] = -np.inf
    with pytest.raises(ValueError, match=r"point 1 has -inf in coordinate 0"):
        tack.HashGrid(tack.array(y.astype(np.float32), tack.vec3), 1.0)
    with pytest.raises(TypeError, match="a loop inside a kernel"):
        tack.HashGrid(x, 1.0).neighbors((0, 0, 0), 1.0)


def _top_level(grid, out):
    for j in grid.neighbors((0.0, 0.0, 0.0), 1.0):
        out[j] = 1


def _with_break(grid, out):
    for i in range(out.shape[0]):
        for j in grid.neighbors((0.0, 0.0, 0.0), 1.0):
            break


def _other_use(grid, out):
    for i in range(out.shape[0]):
        g = grid  # noqa: F841  (refused before it could be unused)
        out[i] = 0


def _two_coords(grid, out):
    for i in range(out.shape[0]):
        for j in grid.neighbors((0.0, 0.0), 1.0):
            out[i] = j


def _other_method(grid, out):
    for i in range(out.shape[0]):
        for j in grid.points(1.0):
            out[i] = j


def _three_args(grid, out):
    for i in range(out.shape[0]):
        for j in grid.neighbors((0.0, 0.0, 0.0), 1.0, 2.0):
            out[i] = j


def _two_names(grid, out):
    for i in range(out.shape[0]):
        for j, k in grid.neighbors((0.0, 0.0, 0.0), 1.0):
            out[i] = j


def _with_else(grid, out):
    for i in range(out.shape[0]):
        for j in grid.neighbors((0.0, 0.0, 0.0), 1.0):
            out[i] = j
        else:
            out[i] = -1


@pytest.mark.parametrize("fn, msg", [
    (_top_level, "at the top level of a kernel would be a parallel loop"),
    (_three_args, r"grid.neighbors takes two arguments, a point and a radius: grid.neighbors\(p, radius\)"),
    (_two_names, r"'for ... in grid.neighbors\(...\)' takes one name for the neighbour's index"),
    (_with_else, r"'for ... in grid.neighbors\(...\)' has no 'else:' block"),
    (_with_break, "'break' in 'for ... in grid.neighbors"),
    (_other_use, "'grid' is a tack.HashGrid: a kernel uses it only as 'for j in grid.neighbors"),
    (_two_coords, "'grid' is a 3-D grid: the point has 3 coordinates, got 2"),
    (_other_method, "has only grid.neighbors\\(p, radius\\), not 'points'"),
])
def test_misuse_in_a_kernel_is_a_compile_error_at_the_line(fn, msg):
    grid = tack.HashGrid(np.zeros((3, 3)), 1.0)
    with pytest.raises(tack.CompileError, match=msg) as e:
        tack.kernel(fn)(grid, np.zeros(3, np.int64))
    assert e.value.lineno > fn.__code__.co_firstlineno


@tack.struct
class _Particle:
    pos: tack.vec2d
    mass: tack.f64
    rho: tack.f64
    count: tack.i32


def _densities(parts, grid, h):
    for i in range(parts.shape[0]):
        s = 0.0
        c = 0
        for j in grid.neighbors(parts[i].pos, h):
            d = parts[j].pos - parts[i].pos
            r2 = tack.dot(d, d)
            if r2 <= h * h:
                s += parts[j].mass * (h * h - r2)
                c += 1
        parts[i].rho = s
        parts[i].count = c


def _misspelt(parts, grid, h):
    for i in range(parts.shape[0]):
        for j in grid.neighbors(parts[i].pos, h):
            parts[i].rho += parts[j].mas


@pytest.mark.parametrize("jit", [True, False])
def test_struct_particles_in_a_grid_kernel(jit):
    # an SPH port keeps its particles as records: the grid is built on the position field and the
    # kernel takes the records and the grid together (refused as a TypeError before the struct
    # rewrite read the grid rewrite's tree)
    rng = np.random.default_rng(8)
    rec = np.zeros(400, _Particle.dtype)
    rec["pos"] = rng.random((400, 2))
    rec["mass"] = rng.random(400) + 0.5
    parts = tack.asarray(rec, dtype=_Particle)
    grid = tack.HashGrid(parts.field("pos"), 0.08)
    tack.kernel(_densities, jit=jit)(parts, grid, 0.08)
    want = kdtree_sets(rec["pos"], rec["pos"], 0.08)
    assert rec["count"].tolist() == [len(w) for w in want]
    d2 = [((rec["pos"][w] - rec["pos"][i]) ** 2).sum(1) for i, w in enumerate(want)]
    np.testing.assert_allclose(rec["rho"], [(rec["mass"][w] * (0.08 ** 2 - d)).sum() for w, d in zip(want, d2)],
                               rtol=1e-12)
    with pytest.raises(tack.CompileError, match=r"struct _Particle has no field 'mas'") as e:
        tack.kernel(_misspelt, jit=jit)(parts, grid, 0.08)
    assert e.value.lineno == _misspelt.__code__.co_firstlineno + 3


def _periodic_lists(q, grid, pts, r, box, nb, cnt):
    # the neighbours within r by the minimum image: the displacement wrapped into [-L/2, L/2]
    # (box: one vector of the box's lengths)
    for i in range(q.shape[0]):
        c = 0
        for j in grid.neighbors(q[i], r):
            d = pts[j] - q[i]
            d -= box[0] * np.floor(d / box[0] + 0.5)
            if tack.dot(d, d) <= r * r:
                if c < nb.shape[1]:
                    nb[i, c] = j
                c += 1
        cnt[i] = c


periodic_lists = tack.kernel(_periodic_lists)


def periodic_sets(kern, x, grid, r, box, vec):
    n = len(x)
    nb, cnt = np.zeros((n, MAXK), np.int64), np.zeros(n, np.int64)
    pts = tack.array(x, vec)
    kern(pts, grid, pts, x.dtype.type(r), tack.array(np.asarray([box], x.dtype), vec), nb, cnt)
    assert cnt.max(initial=0) <= MAXK
    return [sorted(nb[i, :cnt[i]].tolist()) for i in range(n)]


def periodic_kdtree_sets(x, r, box):
    wrapped = np.mod(x.astype(np.float64), box)
    wrapped[wrapped >= box] = 0.0   # np.mod of a tiny negative rounds up to the box's length
    return [sorted(s) for s in spatial.cKDTree(wrapped, boxsize=box).query_ball_point(wrapped, r)]


@pytest.mark.parametrize("jit", [True, False])
def test_periodic_box_neighbours_equal_cKDTree_with_boxsize(jit):
    # molecular dynamics' periodic box: HashGrid(points, cell_size, box=L) wraps the cells the ball
    # touches across the faces (there was no periodic grid: a port had to add ghost particles)
    rng = np.random.default_rng(11)
    kern = periodic_lists if jit else tack.kernel(_periodic_lists, jit=False)
    n = 1500 if jit else 200
    # 3-D, f64, unequal sides: the short side has 3 cells, a radius near a cell's width
    box = (1.0, 0.5, 2.0)
    x = rng.random((n, 3)) * box
    grid = tack.HashGrid(x, 0.15, box=box)
    assert grid.box == box and grid.dims == (6, 3, 13) and grid.origin == (0.0, 0.0, 0.0)
    assert periodic_sets(kern, x, grid, 0.15, box, tack.vec3d) == periodic_kdtree_sets(x, 0.15, box)
    # a ball wider than the box along y (2 cells of 0.15): each cell once, not the wrapped ones twice
    y = rng.random((n, 3)) * (1.0, 0.3, 1.0)
    grid.build(y)   # a rebuild keeps the box
    assert grid.box == box
    g2 = tack.HashGrid(y, 0.14, box=(1.0, 0.3, 1.0))
    assert g2.dims[1] == 2
    assert periodic_sets(kern, y, g2, 0.14, (1.0, 0.3, 1.0), tack.vec3d) == \
        periodic_kdtree_sets(y, 0.14, (1.0, 0.3, 1.0))
    if not jit:
        return
    # 2-D, f32, points outside the box by whole periods: each is found where its image is
    x2 = rng.random((n, 2)).astype(np.float32)
    shifted = x2 + rng.integers(-3, 4, (n, 2)).astype(np.float32)
    g3 = tack.HashGrid(shifted, 0.05, box=1.0)
    got = periodic_sets(kern, shifted, g3, 0.05, (1.0, 1.0), tack.vec2)
    want = periodic_kdtree_sets(shifted, np.float64(np.float32(0.05)), (1.0, 1.0))
    # f32 distances against SciPy's f64 ones (and the shifts' rounding): a pair at the radius may differ
    assert sum(g != w for g, w in zip(got, want)) <= 3


def test_periodic_box_arguments_are_checked():
    x = np.random.default_rng(12).random((10, 3))
    with pytest.raises(ValueError, match=r"box must be a positive finite number, got -1.0"):
        tack.HashGrid(x, 0.1, box=(1.0, -1.0, 1.0))
    with pytest.raises(ValueError, match=r"box has 2 lengths for 3-D points: give one, or 3"):
        tack.HashGrid(x, 0.1, box=(1.0, 1.0))
    with pytest.raises(TypeError, match=r"box must be a number, got 'a'"):
        tack.HashGrid(x, 0.1, box="a")
    # far more cells than points: the cells widen, as an open grid's do
    g = tack.HashGrid(x, 1e-4, box=1.0)
    assert g.ncells <= 4096 and g.cell_width > 1e-4


def test_debug_mode_gives_the_same_sets():
    x = np.random.default_rng(3).random((150, 3))
    grid = tack.HashGrid(x, 0.2)
    debug = tack.kernel(_lists, jit=False)
    assert neighbour_sets(debug, x, grid, x, 0.25) == kdtree_sets(x, x, 0.25)


OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_build_and_query_on_opencl():
    dev = OPENCL[0]
    x = np.random.default_rng(4).random((2000, 3)).astype(np.float32)
    grid = tack.HashGrid(tack.array(x, device=dev), 0.06)
    assert grid.device == dev
    got = neighbour_sets(lists3, x, grid, x, 0.06, device=dev)
    want = kdtree_sets(x, x, np.float64(np.float32(0.06)))
    assert sum(got[i] != want[i] for i in range(len(x))) <= 2


def every_source(target):
    """The build's kernels and the 3-D query kernel, f32, for `target`."""
    from tack import _hashgrid as H

    z = tack.zeros
    f32, i64 = np.float32, np.int64
    grid = tack.HashGrid(np.random.default_rng(5).random((50, 3)).astype(f32), 0.2)
    return [
        H._cells.generated_source(z((4, 3), f32), z(3, f32), z(3, f32), f32(1), z(3, i64), z(4, i64), target=target),
        H._clear.generated_source(z(4, i64), z(4, i64), target=target),
        H._bounds.generated_source(z(4, i64), z(4, i64), z(4, i64), z(4, i64), target=target),
        lists3.generated_source(z((4, 3), f32), grid, z((50, 3), f32), f32(0.1), z((4, MAXK), i64), z(4, i64),
                                target=target),
        H._box.generated_source(z((4, 3), f32), z((1, 7), f32), 4, target=target),
        H._cells_periodic.generated_source(z((4, 3), f32), z(3, f32), z(3, f32), z(3, i64), z(4, i64),
                                           target=target),
        periodic_lists.generated_source(z(4, tack.vec3), tack.HashGrid(z((50, 3), f32), 0.2, box=1.0),
                                        z(4, tack.vec3), f32(0.1), z(1, tack.vec3), z((4, MAXK), i64), z(4, i64),
                                        target=target),
    ]


@pytest.mark.skipif(not (hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0),
                    reason="NVRTC (libnvrtc) is not installed")
def test_cuda_sources_compile_with_nvrtc():
    import _gpu_batch

    ptx, entries = _gpu_batch.nvrtc_checked(every_source("cuda"), "sm_80")
    assert all(n in ptx for names in entries for n in names)


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    import _gpu_batch

    out = _gpu_batch.hiprtc_checked(every_source("hip"), "gfx90a")
    assert out == b"\x7fELF", out


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_sources_compile_with_ocloc():
    # the query kernel and the build's float kernel: the other two are integer copies (ocloc is ~1 s a source)
    sources = every_source("opencl")
    failed = [r for r in _ocloc.check_many([(src, "pvc") for src in (sources[0], sources[3], sources[6])])
              if r is not None]
    assert not failed, failed[0][1][-3000:]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_sources_pass_the_msl_check():
    verdicts = _msl.verdicts(every_source("metal"))
    assert verdicts == ["ok"] * len(verdicts), [v for v in verdicts if v != "ok"][0]
