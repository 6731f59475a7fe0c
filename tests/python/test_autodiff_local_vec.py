"""Adjoints of kernels with local arrays of vectors, matrices and complex numbers (tack._autodiff_local_vec).

Every gradient is checked against central finite differences in f64, and debug mode's adjoint
(jit=False) against the compiled one.  make test runs the refusals here and, through
docs/differentiation.md's example (test_language_docs.py), a triangle's corners gathered into a
local vec2d array; the kernels here, each adjoint seconds of cc to build on a loaded machine,
run under make test-all: a triangle and a tetrahedron of the kind users write (corners gathered
into a local array, an energy, the gradient scattered back to the mesh), two beads whose local
arrays of positions and velocities a sub-stepping loop carries (0, 1, 5 and 40 steps: the plain
replay, the ring tape, two tape segments), loops writing elements of their own, fills,
matrices, complex numbers, functions, and the GPU dialects."""

import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

import _adjoint_check
import _suite
from _adjoint_check import fd as _fd
import tack

_ALL = pytest.mark.skipif(not _suite.TEST_ALL, reason="more kernels and their adjoints to build: under make test-all")


def _check(kernel, args, types, diff, out, seed, **tol):
    """_adjoint_check.check, `types` (the Tack dtype of each array of vectors) third."""
    return _adjoint_check.check(kernel, args, diff, out, seed, types=types, **tol)


# ---- a triangle's corners gathered into a local vec2d array

@tack.kernel
def tri_energy(x, tris, rest, energy):
    for t in range(tris.shape[0]):
        p = tack.zeros(3, tack.vec2d)           # the triangle's corners
        for c in range(3):
            p[c] = x[tris[t, c]]
        e1 = p[1] - p[0]
        e2 = p[-1] - p[0]
        area = 0.5 * (e1.x * e2[1] - e1.y * e2[0])
        edges = 0.0
        for c in range(len(p)):
            edges += tack.length(p[(c + 1) % 3] - p[c])
        scale = float(x.size + 10 * x.ndim + 100 * x.shape[-1])   # 5 + 10 + 500: the element array's
        energy[t] = (area - rest[t]) * (area - rest[t]) + 0.01 * edges * scale


@_ALL
def test_a_triangle_s_corners_in_a_local_vector_array():
    """The gradient of an area-and-perimeter energy reaches the mesh's positions through the gather
    into the local array (the adjoint scatters it back by the triangle's indices).  `scale` reads
    the .size, .ndim and .shape[-1] of an array of vectors, which the adjoint read with the
    component axis before (a vec2d array of 5 elements was 10 numbers, 2 axes, last extent 2)."""
    rng = np.random.default_rng(0)
    x = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [2, 0.5]], float) + 0.05 * rng.standard_normal((5, 2))
    tris = np.array([[0, 1, 2], [1, 3, 2], [1, 4, 3]], np.int64)
    g = _check(tri_energy, (x, tris, np.array([0.4, 0.5, 0.3]), np.zeros(3)), {"x": tack.vec2d}, ("x", "rest"),
               "energy", np.array([1.0, 0.5, 2.0]))
    assert np.abs(g["x"]).min() > 0


# ---- a tetrahedral element: corners gathered into a local vec3d array

@tack.kernel
def tet_energy(x, tets, dm_inv, vol0, lam, mu, energy):
    for e in range(tets.shape[0]):
        p = tack.zeros(4, tack.vec3d)           # the element's corners
        for c in range(len(p)):
            p[c] = x[tets[e, c]]
        ds = tack.transpose(tack.mat33d(p[1] - p[0], p[2] - p[0], p[-1] - p[0]))   # edges as columns
        f = ds @ dm_inv[e]                      # the deformation gradient
        j = tack.determinant(f)
        i1 = tack.trace(tack.transpose(f) @ f)
        w = 0.5 * mu[0] * (i1 - 3.0) + 0.5 * lam[0] * (j - 1.0) * (j - 1.0)
        lo = p[0].y                             # components of elements: .y and [1]
        for c in range(1, 4):
            lo = min(lo, p[c][1])
        energy[e] = vol0[e] * w + 0.1 * lo      # a floor term: the lowest corner's height


def _mesh(rng):
    rest = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]], np.int64)
    dm = np.stack([np.stack([rest[t[1]] - rest[t[0]], rest[t[2]] - rest[t[0]], rest[t[3]] - rest[t[0]]], axis=1)
                   for t in tets])
    vol0 = np.abs(np.linalg.det(dm)) / 6.0
    x = rest + 0.1 * rng.standard_normal(rest.shape)
    return x, tets, np.linalg.inv(dm), vol0


@_ALL
def test_a_tetrahedron_s_corners_in_a_local_vector_array():
    """The gradient of a Neo-Hookean-like element energy reaches the mesh's positions through the
    gather into the local array (the adjoint scatters it back, atomically, by the element's indices),
    and the material's parameters."""
    rng = np.random.default_rng(0)
    x, tets, dmi, vol0 = _mesh(rng)
    args = (x, tets, dmi, vol0, np.array([2.0]), np.array([0.7]), np.zeros(2))
    g = _check(tet_energy, args, {"x": tack.vec3d, "dm_inv": tack.mat33d}, ("x", "dm_inv", "lam", "mu"), "energy",
               np.array([1.0, 0.5]))
    assert g["x"].shape == (5, 3) and np.abs(g["x"][4]).sum() > 0


# ---- a loop carrying local arrays of vectors

@tack.kernel
def beads(x0, v0, k, steps, dt, out):
    for i in range(out.shape[0]):
        p = tack.zeros(2, tack.vec3d)           # two beads on a spring: positions ...
        v = tack.zeros(2, tack.vec3d)           # ... and velocities, carried from step to step
        p[0] = x0[2 * i]
        p[1] = x0[2 * i + 1]
        v[0] = v0[2 * i]
        v[1] = v0[2 * i + 1]
        for s in range(steps):
            d = p[1] - p[0]
            f = d * (k[i] * (tack.length(d) - 1.0))
            v[0] += (f + tack.vec3d(0.0, -1.0, 0.0)) * dt
            v[1] -= f * dt
            for j in range(len(p)):             # each bead moved by its own velocity
                p[j] += v[j] * dt
        out[i] = p[1] + v[0] * 0.5


@_ALL
def test_a_loop_carrying_local_vector_arrays():
    """0 steps (no iteration), 1 (the plain replay), 5 (the ring tape) and 40 (two segments)."""
    rng = np.random.default_rng(1)
    x0 = np.array([[0.0, 0.0, 0.0], [1.1, 0.3, 0.0]] * 2) + 0.05 * rng.standard_normal((4, 3))
    v0 = 0.2 * rng.standard_normal((4, 3))
    k = np.array([3.0, 5.0])
    seed = rng.random((2, 3))
    types = {"x0": tack.vec3d, "v0": tack.vec3d, "out": tack.vec3d}
    for steps in (0, 1, 5, 40):
        g = _check(beads, (x0, v0, k, steps, 0.05, np.zeros((2, 3))), types, ("x0", "v0", "k"), "out", seed)
        assert g["k"].any() == (steps > 0)


# ---- constant taps made before the loop, a function's own array

@tack.func
def _twice(a):                                  # a local array of vectors of its own
    t = tack.zeros(2, tack.vec3d)
    t[0] = a
    t[1] = t[0] * 2.0
    return t[1].x + t[0].y                      # components: the caller gets a number


@tack.func
def _height(q, i):                              # a component of an array parameter's element
    return q[i].y * 2.0


@tack.kernel
def blurred(p, out):
    w = tack.zeros(3, tack.vec3d)               # weights per component, read by every iteration
    w[0] = tack.vec3d(0.25, 0.5, 1.0)
    w[1] = 0.5
    w[2] = tack.vec3d(0.25, 0.0, 0.0)
    for i in range(out.shape[0]):
        win = tack.empty(3, tack.vec3d)
        for k in range(len(win)):
            win[k] = p[i + k] * w[k]
        win[1] += win[0] + win[2]
        out[i] = win[1] * (_twice(p[i]) + _height(p, i))


@_ALL
def test_taps_before_the_loop_and_a_function_s_own_array():
    """Taps filled from constants before the parallel loop are constants to the adjoint; a function
    making a local array of vectors and returning a component of it is inlined (its return value,
    made components once, was taken for a vector and refused before, as was `_height`'s, a
    component of an array parameter's element)."""
    rng = np.random.default_rng(6)
    _check(blurred, (rng.random((5, 3)), np.zeros((3, 3))), {"p": tack.vec3d, "out": tack.vec3d}, ("p",), "out",
           rng.random((3, 3)))


# ---- loops writing elements of their own: no tape (tack._autodiff_local._disjoint)

@tack.kernel
def own_elements(x, y):
    for i in range(y.shape[0]):
        t = tack.zeros(3, tack.vec2d)
        for c in range(3):                      # a gather: each iteration its own element
            if c > 0:
                s = x[i] * float(c)
            else:
                s = x[i] + 1.0                  # set on both paths: the iteration's own
            t[c] = s * s.y
        for c in range(-1, 3):                  # -1 and 2 are one element: carried, taped
            t[c] = t[c] * x[i].x + tack.vec2d(1.0, 0.5)
        for c in range(1, 3):                   # reads the element before: carried
            t[c] += t[c - 1] * 0.5
        for c in range(len(t)):                 # each element scaled by itself
            t[c] = t[c] * tack.length(t[c])
        y[i] = t[0] + t[1] * t[2].x


@_ALL
def test_loops_writing_elements_of_their_own():
    x = np.random.default_rng(5).random((2, 2)) + 0.2
    _check(own_elements, (x, np.zeros((2, 2))), {"x": tack.vec2d, "y": tack.vec2d}, ("x",), "y",
           np.array([[1.0, 0.5], [-0.5, 2.0]]))


# ---- what else an element array does (make test-all)

@tack.func
def _centre(q):                                 # reads a caller's local array of vectors
    s = tack.vec3d(0.0)
    for c in range(q.shape[0]):
        s += q[c]
    return s / float(len(q))


@tack.func
def _shrink(q, by):                             # writes one
    c = _centre(q)
    for k in range(len(q)):
        q[k] = c + (q[k] - c) * by


@tack.kernel
def assorted(x, m, out):
    for i in range(out.shape[0]):
        ones = tack.ones(2, tack.vec3d)         # every component one
        full = tack.full(2, x[i] * 0.5 + tack.vec3d(0.5, -1.0, 2.0), tack.vec3d)  # a vector in each element
        half = np.full(3, 0.5, tack.vec3d)      # a number in every component
        grid = np.zeros((2, 2), tack.vec2d)     # two axes of vec2d
        mats = np.zeros(2, tack.mat33d)
        mats[0] = m[i]
        mats[1] = 2.0                           # a number: every entry
        mats[1] += tack.transpose(m[i]) @ m[i]
        q = np.empty(3, tack.vec3d)
        for c in range(3):
            q[c] = x[i] * (c + 1.0) + half[c] + ones[c % 2]
        q[1] = mats[1] @ q[0] + mats[0][0, 2] * full[1]
        _shrink(q, 0.5)
        q[2] = tack.cross(q[2], q[0])           # the value reads the element it replaces
        for a in range(2):
            for b in range(2):
                grid[a, b] = tack.vec2d(q[a + b].x, q[(a + 2 * b) % 3][2])
        grid[-1, -1] *= grid[0, 1]
        grid[0, 0] = tack.vec2d(grid[0, 0].y, grid[0, 0][0])   # swapped
        n = tack.zeros(2, tack.vec3i)           # integer vectors: saved and put back, no gradient
        n[n[0].x] = tack.vec3i(1, 3, 2)         # the index read once, though the store changes n[0].x
        n[1] = tack.vec3i(1, 2, 0)
        t = 0.0
        for a in range(grid.shape[0]):
            t += tack.dot(grid[a, n[1].y - 1], grid[a, 1]) * float(n[1][n[1].x])
        out[i] = t * float(n[0].y) + q[-1].z * (grid.ndim + q.size + grid.shape[-1] + len(grid))


@tack.kernel
def filled(p, out):
    for i in range(out.shape[0]):
        z = np.full(2, 1.0 + 2.0j, np.complex128)
        m = np.full(2, tack.mat22d(1.0, p[i].x, 0.5, 2.0), tack.mat22d)   # a differentiated matrix fill
        o = np.ones(3, tack.mat22d)
        big = tack.full(20, p[i] * 0.5, tack.vec3d)     # beyond 16 elements: a loop of stores
        big[7] += p[i + 1]
        s = (z[1] * z[0]).imag * p[i].y + m[1][0, 1] * o[2][1, 0] + big[7].z * big[19].x
        out[i] = tack.vec3d(s, m[0][1, 1], big.size)


@_ALL
def test_fills_matrices_functions_and_indices():
    rng = np.random.default_rng(2)
    x, m = rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 3))
    _check(assorted, (x, m, np.zeros(2)), {"x": tack.vec3d, "m": tack.mat33d}, ("x", "m"), "out",
           np.array([1.0, -0.5]))
    p = rng.standard_normal((4, 3))
    _check(filled, (p, np.zeros((3, 3))), {"p": tack.vec3d, "out": tack.vec3d}, ("p",), "out", rng.random((3, 3)))


@tack.kernel
def waves(z, w, out):
    for i in range(out.shape[0]):
        a = np.ones(3, np.complex128)           # 1 + 0j each
        b = np.full(2, 0.5, np.complex128)      # 0.5 + 0j each
        for k in range(3):
            a[k] = a[k] * z[i] + w[k] * a[(k + 2) % 3]
        b[1] += a[0] * a[1].conjugate()
        a[2] = b[1] / (a[2] + 2.0)
        a[1] *= a[0]                            # a complex product of elements, in place
        b[0] /= a[1]
        out[i] = abs(a[2]) + b[1].imag * b[0].real + b[0].imag


@_ALL
def test_a_local_array_of_complex_numbers():
    rng = np.random.default_rng(3)
    z = rng.standard_normal(2) + 1j * rng.standard_normal(2)
    w = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    names = ("z", "w")
    debug = tack.kernel(waves.__wrapped__, jit=False)
    got = []
    for k in (waves, debug):
        g = {"z": np.zeros(2, complex), "w": np.zeros(3, complex), "out": np.ones(2)}
        k.adjoint(z, w, np.zeros(2), grads=g)
        got.append(g)

    def loss(zz, ww):
        o = np.zeros(2)
        waves(zz, ww, o)
        return o.sum()

    for n, arr in zip(names, (z, w)):
        np.testing.assert_allclose(got[1][n], got[0][n], rtol=1e-13, atol=1e-15)
        re = _fd(lambda r, i: loss(*[r + 1j * i if m == n else v for m, v in zip(names, (z, w))]),
                 [arr.real.copy(), arr.imag.copy()], 0)
        im = _fd(lambda r, i: loss(*[r + 1j * i if m == n else v for m, v in zip(names, (z, w))]),
                 [arr.real.copy(), arr.imag.copy()], 1)
        np.testing.assert_allclose(got[0][n], re + 1j * im, rtol=1e-6, atol=1e-8, err_msg=n)


# ---- every target

@tack.kernel
def beads32(x0, k, steps, out):
    for i in range(out.shape[0]):
        p = tack.zeros(2, tack.vec3)
        v = tack.zeros(2, tack.vec3)
        p[0] = x0[i]
        p[1] = x0[i] + tack.vec3(1.0, 0.0, 0.0)
        for s in range(steps):
            d = p[1] - p[0]
            f = d * (k[i] * (tack.length(d) - 1.0))
            v[0] += f * 0.05
            v[1] -= f * 0.05
            for j in range(2):
                p[j] += v[j] * 0.05
        out[i] = p[1] - p[0]


@tack.kernel
def tri32(x, tris, rest, energy):
    for t in range(tris.shape[0]):
        p = tack.zeros(3, tack.vec2)            # a gather: no tape
        for c in range(3):
            p[c] = x[tris[t, c]]
        e1 = p[1] - p[0]
        e2 = p[-1] - p[0]
        area = 0.5 * (e1.x * e2[1] - e1.y * e2[0])
        m = tack.zeros(2, tack.mat22)
        m[0] = tack.mat22(e1.x, e2.x, e1.y, e2.y)
        m[1] = tack.inverse(m[0])
        z = np.zeros(2, np.complex64)
        z[0] = complex(e1.x, e1.y)
        z[1] = z[0] * z[0]
        energy[t] = (area - rest[t]) * (area - rest[t]) + m[1][0, 1] + z[1].imag


_HIPRTC = ("import json, sys\n"
           "from tack import _core\n"
           "job = json.load(sys.stdin)\n"
           "_core._hiprtc_compile(job['source'], 'gfx90a')\n")


def _sources(kern, args):
    from tack import _autodiff_run, _core

    adj, bound, names, kinds = _autodiff_run.build(kern, args, {})
    varr = _autodiff_run._varr(kern, bound, kinds)
    a, _kw = _autodiff_run._adjoint_args(bound, varr)
    grads = [_autodiff_run._components(_autodiff_run._zeros_like(bound.arguments[p]), varr[p], p) if p in varr
             else np.zeros_like(bound.arguments[p]) for p in names]
    return {t: adj.generated_source(*a, *grads, target=t) for t in _core._targets()}


@_ALL
def test_the_adjoints_compile_for_every_target_and_run_on_opencl():
    """f32 kernels, one carrying local vec3 arrays through a loop (its tape), one gathering a
    triangle's corners into a local vec2 array beside local mat22 and complex64 arrays: their
    adjoints are emitted for every target, compile with NVRTC, hiprtc, ocloc and as Metal where
    those are installed, and on PoCL give the CPU's gradients."""
    import _gpu_batch
    import _msl
    import _ocloc

    from tack import _core

    srcs = [_sources(beads32, (tack.zeros(3, tack.vec3), np.ones(3, np.float32), 3, tack.zeros(3, tack.vec3))),
            _sources(tri32, (tack.zeros(5, tack.vec2), np.zeros((3, 3), np.int64), np.zeros(3, np.float32),
                             np.zeros(3, np.float32)))]
    assert all(v for sources in srcs for v in sources.values())
    if getattr(_core, "_nvrtc_compile", None) is not None:
        try:
            assert _core._nvrtc_compile(_gpu_batch.batch_source([x["cuda"] for x in srcs])[0], "sm_90")
        except OSError:  # NVRTC's library is not installed
            pass
    if _ocloc.library() is not None:
        rc, out = _ocloc.compile(_ocloc.batch_source([x["opencl"] for x in srcs])[0], "pvc")
        assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}
    if _msl.clang() is not None or _msl.xcrun():
        for x in srcs:
            assert _msl.check(x["metal"]) is None
    if _core._hiprtc_version() > 0:  # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
        job = json.dumps({"source": _gpu_batch.batch_source([x["hip"] for x in srcs])[0]})
        proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=job, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
    ocl = [d for d in tack.devices() if d.startswith("opencl")]
    if not ocl:
        return
    rng = np.random.default_rng(4)
    x0 = rng.random((5, 3)).astype(np.float32)
    xt = (np.array([[0, 0], [1, 0], [0, 1], [1, 1], [2, 0.5]]) + 0.05 * rng.standard_normal((5, 2))).astype(np.float32)
    tris = np.array([[0, 1, 2], [1, 3, 2], [1, 4, 3]], np.int64)
    got = []
    for dev in ("cpu", ocl[0]):
        a = [tack.array(x0, tack.vec3, device=dev), tack.array(np.linspace(1, 2, 5, dtype=np.float32), device=dev),
             40, tack.zeros(5, tack.vec3, device=dev)]
        g = {"x0": tack.zeros(5, tack.vec3, device=dev), "k": tack.zeros(5, tack.f32, device=dev),
             "out": tack.array(np.ones((5, 3), np.float32), tack.vec3, device=dev)}
        beads32.adjoint(*a, grads=g)
        gt = {"x": tack.zeros(5, tack.vec2, device=dev), "energy": tack.array(np.ones(3, np.float32), device=dev)}
        tri32.adjoint(tack.array(xt, tack.vec2, device=dev), tack.array(tris, device=dev),
                      tack.array(np.full(3, 0.4, np.float32), device=dev), tack.zeros(3, tack.f32, device=dev), grads=gt)
        got.append((g["x0"].numpy(), g["k"].numpy(), gt["x"].numpy()))
    for cpu, dev in zip(*got):
        np.testing.assert_allclose(dev, cpu, rtol=1e-4, atol=1e-5)
    assert np.abs(got[0][1]).sum() > 0 and np.abs(got[0][2]).sum() > 0


# ---- refusals, each at its line

def _f16(x, y):
    for i in range(x.shape[0]):
        t = np.zeros(2, np.float16)  # REFUSE: 16-bit
        t[0] = x[i].x
        y[i] = float(t[0])


def _filled(x, y):
    for i in range(x.shape[0]):
        t = tack.full(2, x[i].y, tack.vec3d)  # REFUSE: a differentiated fill
        y[i] = t[1].x


def _again(x, y):
    for i in range(x.shape[0]):
        t = tack.zeros(2, tack.vec3d)
        t[0] = x[i]
        t = tack.zeros(2, tack.vec3d)  # REFUSE: created again
        y[i] = t[0].x


def _taps(x, y):
    w = tack.zeros(2, tack.vec3d)
    w[0] = x[0]  # REFUSE: differentiated value before the loop
    for i in range(x.shape[0]):
        y[i] = tack.dot(w[0], x[i])


def _to_int(x, y):
    for i in range(x.shape[0]):
        n = tack.zeros(2, tack.vec3i)
        n[0] = tack.vec3i(x[i] * 3.0)  # REFUSE: integer
        y[i] = x[i].x * float(n[0].y)


@pytest.mark.parametrize("fn, words", [
    (_f16, "'t' is a local array of f16: only local arrays of f32, f64, integers and bools, and of vectors"),
    (_filled, "'t' is filled with a differentiated value"),
    (_again, "is created again in an iteration"),
    (_taps, "made outside the parallel loops is given a differentiated value"),
    (_to_int, "a float value made integer is not differentiable"),
])
@pytest.mark.parametrize("jit", [True, False])
def test_refusals_name_the_line(fn, words, jit):
    k = tack.kernel(fn, jit=jit)               # debug mode refuses the same, at the same line
    with pytest.raises(tack.CompileError, match=words) as err:
        k.adjoint(tack.ones(3, tack.vec3d), np.zeros(3))
    lines, first = inspect.getsourcelines(fn)
    want = first + next(n for n, line in enumerate(lines) if "REFUSE" in line)
    assert f"line {want}" in str(err.value) or err.value.lineno == want, str(err.value)


@pytest.mark.optimized_source
def test_a_large_adjoint_is_written_in_two_histogram_versions_not_three():
    """The adjoint of `beads` scatters into several gradient arrays (histograms, privatize.c) from
    a body of about 21,600 IR nodes: the CPU writes its loop adding into private copies choosing
    per add, and with the atomics, but not a third time adding into every copy (emit_cpu.c,
    TK_COPY_BODY_MAX): that third copy was a third of the C (1.28 -> 0.84 MB). A small body with
    two histograms keeps all three (test_privatize.py's count_and_weigh)."""
    from tack import _autodiff_run

    args = (tack.zeros(4, tack.vec3d), tack.zeros(4, tack.vec3d), np.ones(2), 5, 0.05, tack.zeros(2, tack.vec3d))
    adj, bound, names, kinds = _autodiff_run.build(beads, args, {})
    varr = _autodiff_run._varr(beads, bound, kinds)
    a, _kw = _autodiff_run._adjoint_args(bound, varr)
    grads = [_autodiff_run._scalar_grad(bound, kinds) if kinds[p][0] == "fscalar"
             else _autodiff_run._components(_autodiff_run._zeros_like(bound.arguments[p]), varr[p], p) if p in varr
             else np.zeros_like(bound.arguments[p]) for p in names]
    src = adj.generated_source(*a, *grads, target="c")
    assert "per-chunk private histogram" in src and "hall_" not in src
    # nor a record version (emit_cpu.c, TK_COPY_BODY_MAX), though it reads x[i, 0], x[i, 1], ...:
    # the body once more (0.84 -> 1.64 MB) for loads that are a small part of its work
    assert "_r(" not in src and len(src) < 1_000_000
