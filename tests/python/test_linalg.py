"""Matrix and vector functions (docs/language.md, "Matrix and vector functions"):
transpose, inverse, determinant, trace, outer, diag, identity, norm, svd3,
eig3 and qr3, and normalize's documented zero.

One kernel uses every function; it runs over a few thousand random matrices
per dtype in one launch, on the CPU, in debug mode (which computes the same
operations in NumPy scalars: the same bits as the CPU) and on OpenCL (PoCL,
where listed), and its results are
compared with numpy.linalg within the tolerances stated below.  The same
kernel's CUDA, HIP, OpenCL and MSL sources compile with NVRTC, hiprtc, ocloc
and clang.  Singular and non-finite inputs give the documented results.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import _msl  # noqa: E402
import _ocloc  # noqa: E402

OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)
TYPES = {np.float32: (tack.mat22, tack.mat33, tack.mat44, tack.vec3, tack.vec4),
         np.float64: (tack.mat22d, tack.mat33d, tack.mat44d, tack.vec3d, tack.vec4d)}
DT = pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])


def every(m2, m3, m4, v3, v4, o2, o3, o4, ov3, ov4, os):
    """Every function of the section on row i of each argument."""
    for i in range(m3.shape[0]):
        a2, a3, a4 = m2[i], m3[i], m4[i]
        o2[i, 0] = tack.inverse(a2)
        o2[i, 1] = tack.transpose(a2)
        o3[i, 0] = tack.inverse(a3)
        o3[i, 1] = tack.transpose(a3)
        o3[i, 2] = tack.outer(v3[i], v3[i])
        o3[i, 3] = tack.diag(v3[i])
        U, s, V = tack.svd3(a3)
        w, E = tack.eig3(a3)
        Q, R = tack.qr3(a3)
        o3[i, 4] = U
        o3[i, 5] = V
        o3[i, 6] = E
        o3[i, 7] = Q
        o3[i, 8] = R
        ov3[i, 0] = s
        ov3[i, 1] = w
        ov3[i, 2] = tack.diag(a3)
        ov3[i, 3] = tack.normalize(v3[i])
        o4[i, 0] = tack.inverse(a4)
        o4[i, 1] = tack.transpose(a4)
        o4[i, 2] = tack.outer(v4[i], v4[i])
        ov4[i, 0] = tack.diag(a4)
        os[i, 0] = tack.determinant(a2)
        os[i, 1] = tack.determinant(a3)
        os[i, 2] = tack.determinant(a4)
        os[i, 3] = tack.trace(a3)
        os[i, 4] = tack.trace(a4)
        os[i, 5] = tack.norm(a3)
        os[i, 6] = tack.norm(v3[i])
        os[i, 7] = tack.norm(a4)


EVERY = tack.kernel(every)
EVERY_DEBUG = tack.kernel(every, jit=False)


def inputs(dt, n, seed=7):
    r = np.random.default_rng(seed)
    m2, m3, m4 = (r.standard_normal((n, k, k)).astype(dt) for k in (2, 3, 4))
    v3, v4 = r.standard_normal((n, 3)).astype(dt), r.standard_normal((n, 4)).astype(dt)
    return m2, m3, m4, v3, v4


def run(dt, n, where):
    """every() on n random rows: the inputs and the outputs, as NumPy arrays."""
    m2t, m3t, m4t, v3t, v4t = TYPES[dt]
    x = inputs(dt, n)
    outs = [(n, 2, 2, 2), (n, 9, 3, 3), (n, 3, 4, 4), (n, 4, 3), (n, 1, 4), (n, 8)]
    device = {"cpu": None, "debug": None}.get(where, where)
    on = {"device": device} if device else {}
    args = [tack.array(a, dtype=t, **on) for a, t in zip(x, (m2t, m3t, m4t, v3t, v4t))]
    o = [tack.zeros(s[:2], dtype=t, **on) for s, t in zip(outs[:5], (m2t, m3t, m4t, v3t, v4t))]
    o.append(tack.zeros(outs[5], dtype=tack.f32 if dt == np.float32 else tack.f64, **on))
    (EVERY_DEBUG if where == "debug" else EVERY)(*args, *o)
    return x, [a.numpy() if hasattr(a, "numpy") and device else np.asarray(a) for a in o]


EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps}


def check(dt, x, out, where):
    """Each result against numpy.linalg in f64, within the stated bounds: k * eps scaled by the
    matrix's norm (and for the inverse its condition number)."""
    m2, m3, m4, v3, v4 = (a.astype(np.float64) for a in x)
    o2, o3, o4, ov3, ov4, os = (a.astype(np.float64) for a in out)
    eps = EPS[dt]
    T = lambda a: np.swapaxes(a, -1, -2)  # noqa: E731
    nrm = lambda a: np.linalg.norm(a, axis=(-2, -1))  # noqa: E731
    for k, (m, inv, tr) in enumerate(((m2, o2[:, 0], o2[:, 1]), (m3, o3[:, 0], o3[:, 1]), (m4, o4[:, 0], o4[:, 1]))):
        assert (tr == T(m)).all(), where
        ref = np.linalg.inv(m)
        cond = np.linalg.cond(m)
        err = np.abs(inv - ref).max(axis=(1, 2)) / np.abs(ref).max(axis=(1, 2))
        assert (err <= 64 * eps * cond).all(), (where, k, (err / (eps * cond)).max())
        det = np.linalg.det(m)
        hadamard = np.prod(np.linalg.norm(m, axis=2), axis=1)
        assert (np.abs(os[:, k] - det) <= 16 * eps * hadamard).all(), (where, k)
    w3, w4 = x[3], x[4]  # products in the dtype itself
    assert (o3[:, 2] == w3[:, :, None] * w3[:, None, :]).all() and (o4[:, 2] == w4[:, :, None] * w4[:, None, :]).all()
    assert (o3[:, 3] == np.eye(3) * v3[:, None, :]).all()
    assert (ov3[:, 2] == np.diagonal(m3, axis1=1, axis2=2)).all() and (ov4[:, 0] == np.diagonal(m4, axis1=1, axis2=2)).all()
    assert np.allclose(os[:, 3], np.trace(m3, axis1=1, axis2=2), rtol=4 * eps, atol=4 * eps * nrm(m3))
    assert np.allclose(os[:, 4], np.trace(m4, axis1=1, axis2=2), rtol=4 * eps, atol=4 * eps * nrm(m4))
    assert np.allclose(os[:, 5], nrm(m3), rtol=8 * eps, atol=0) and np.allclose(os[:, 7], nrm(m4), rtol=8 * eps, atol=0)
    assert np.allclose(os[:, 6], np.linalg.norm(v3, axis=1), rtol=8 * eps, atol=0)
    assert np.allclose(ov3[:, 3], v3 / np.linalg.norm(v3, axis=1)[:, None], rtol=0, atol=8 * eps)
    # svd3: m = U diag(s) V^T; U, V orthogonal; s descending, as numpy's within 16 eps ||m||
    scale = nrm(m3)[:, None, None]
    U, V, s = o3[:, 4], o3[:, 5], ov3[:, 0]
    I3 = np.eye(3)
    assert (np.abs(U @ (s[:, :, None] * T(V)) - m3) <= 16 * eps * scale).all(), where
    assert (np.abs(T(U) @ U - I3) <= 16 * eps).all() and (np.abs(T(V) @ V - I3) <= 16 * eps).all(), where
    assert (np.diff(s, axis=1) <= 0).all() and (s >= 0).all()
    assert (np.abs(s - np.linalg.svd(m3, compute_uv=False)) <= 16 * eps * scale[:, :, 0]).all(), where
    # eig3 of the symmetric matrix in the lower triangle: A E = E diag(w), E orthogonal, w ascending as eigvalsh
    S = np.tril(m3) + T(np.tril(m3, -1))
    w, E = ov3[:, 1], o3[:, 6]
    assert (np.abs(w - np.linalg.eigvalsh(S)) <= 16 * eps * scale[:, :, 0]).all(), where
    assert (np.abs(S @ E - E * w[:, None, :]) <= 16 * eps * scale).all(), where
    assert (np.abs(T(E) @ E - I3) <= 16 * eps).all() and (np.diff(w, axis=1) >= 0).all()
    # qr3: m = Q R, Q orthogonal, R upper triangular (exact zeros) with a diagonal >= 0: numpy's with signs made so
    Q, R = o3[:, 7], o3[:, 8]
    assert (np.abs(Q @ R - m3) <= 16 * eps * scale).all() and (np.abs(T(Q) @ Q - I3) <= 16 * eps).all(), where
    assert (np.tril(R, -1) == 0).all() and (np.diagonal(R, axis1=1, axis2=2) >= 0).all()
    nq, nr = np.linalg.qr(m3)
    sign = np.where(np.diagonal(nr, axis1=1, axis2=2) < 0, -1.0, 1.0)
    cond = np.linalg.cond(m3)[:, None, None]  # R's entries are as well conditioned as m
    assert (np.abs(sign[:, :, None] * nr - R) <= 16 * eps * scale * cond).all(), where


@DT
def test_every_function_against_numpy_on_the_cpu(dt):
    x, out = run(dt, 4000, "cpu")
    check(dt, x, out, "cpu")


@DT
def test_debug_mode_gives_the_cpus_bits(dt):
    x, out = run(dt, 40, "debug")
    check(dt, x, out, "debug")
    _, cpu = run(dt, 40, "cpu")
    for d, c in zip(out, cpu):
        assert np.array_equal(d, c, equal_nan=True)


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
@pytest.mark.parametrize("dt", [np.float32, pytest.param(np.float64, marks=pytest.mark.skipif(
    os.environ.get("TACK_TEST_ALL") != "1", reason="f64 on PoCL: make test-all (the f32 run covers the helpers)"))],
    ids=["f32", "f64"])
def test_on_opencl(dt):
    x, out = run(dt, 2000, OPENCL)
    check(dt, x, out, OPENCL)


# ------------------------------------------------------------ singular inputs
@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_singular_and_non_finite_inputs_give_the_documented_results(jit):
    k = tack.kernel(_decomps, jit=jit)
    rank1 = np.outer([1.0, 2.0, 3.0], [4.0, -1.0, 0.5])
    rank2 = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]])
    nan = np.eye(3)
    nan[2, 1] = np.nan  # in the lower triangle, which eig3 reads
    inf = np.eye(3)
    inf[0, 0] = np.inf
    m = np.stack([np.zeros((3, 3)), rank1, rank2, nan, inf]).astype(np.float32)
    to, tov = tack.zeros((5, 6), tack.mat33), tack.zeros((5, 2), tack.vec3)
    k(tack.array(m, dtype=tack.mat33), to, tov)
    o, ov = np.asarray(to), np.asarray(tov)
    eye = np.eye(3)
    # the zero matrix: identities and zeros; its inverse (determinant 0) the zero matrix
    assert (o[0, :4] == eye).all() and (o[0, 4] == 0).all() and (ov[0] == 0).all() and (o[0, 5] == 0).all()
    for j, a in ((1, rank1), (2, rank2)):  # rank-deficient: still m = U s V^T with U, V orthogonal
        U, V, s = o[j, 0].astype(float), o[j, 1].astype(float), ov[j, 0].astype(float)
        assert np.abs(U @ np.diag(s) @ V.T - a).max() <= 1e-5 * np.abs(a).max()
        assert np.abs(U.T @ U - eye).max() <= 1e-6 and np.abs(V.T @ V - eye).max() <= 1e-6
        assert np.abs(s - np.linalg.svd(a, compute_uv=False)).max() <= 1e-5 * np.abs(a).max()
        Q, R = o[j, 3].astype(float), o[j, 4].astype(float)
        assert np.abs(Q @ R - a).max() <= 1e-5 * np.abs(a).max() and np.abs(Q.T @ Q - eye).max() <= 1e-6
    assert (o[1, 5] == 0).all()  # rank1's determinant is exactly 0 in f32: the zero matrix
    for j in (3, 4):  # a NaN or an infinity: every output NaN (numpy.linalg raises LinAlgError)
        assert np.isnan(o[j, :5]).all() and np.isnan(ov[j]).all()
    assert np.isnan(o[3, 5]).all()


def _decomps(m, o, ov):
    for i in range(m.shape[0]):
        U, s, V = tack.svd3(m[i])
        w, E = tack.eig3(m[i])
        Q, R = tack.qr3(m[i])
        o[i, 0] = U
        o[i, 1] = V
        o[i, 2] = E
        o[i, 3] = Q
        o[i, 4] = R
        o[i, 5] = tack.inverse(m[i])
        ov[i, 0] = s
        ov[i, 1] = w


def _normalize(v, out):
    for i in range(v.shape[0]):
        out[i] = tack.normalize(v[i])


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_normalize_of_zero_is_zero_and_of_nan_is_nan(jit):
    v = tack.array(np.array([[0, 0, 0], [np.nan, 1, 0], [3, 4, 0]], np.float32), dtype=tack.vec3)
    out = tack.zeros(3, tack.vec3)
    tack.kernel(_normalize, jit=jit)(v, out)
    got = np.asarray(out)
    assert (got[0] == 0).all() and np.isnan(got[1]).all() and np.allclose(got[2], [0.6, 0.8, 0])


def test_outside_a_kernel_the_functions_compute_the_same():
    m = np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]], np.float32)
    assert tack.inverse(m).dtype == np.float32 and np.allclose(tack.inverse(m) @ m, np.eye(3), atol=1e-6)
    assert tack.determinant(m) == np.float32(18) and tack.trace(m) == 9
    assert (tack.identity(tack.mat33) == np.eye(3)).all() and tack.identity(tack.mat44d).dtype == np.float64
    assert (tack.inverse(np.ones((2, 2))) == 0).all()
    w, E = tack.eig3(m)
    assert np.allclose(w, np.linalg.eigvalsh(m), atol=1e-5)
    assert tack.norm(np.array([3.0, 4.0])) == 5 and (tack.diag(np.array([1.0, 2.0])) == np.diag([1.0, 2.0])).all()


def _dots(a, b, out):
    for i in range(a.shape[0]):
        out[i] = tack.dot(a[i], b[i])


@pytest.mark.parametrize("vt", ["vec3", "vec3d", "vec4d", "vec2"])
def test_dot_in_debug_mode_sums_in_order_as_compiled(vt):
    """tack.dot adds the products left to right, compiled and as Python: debug mode took NumPy's
    dot, which groups them otherwise (a third of random vec3d pairs differed, by up to hundreds of
    ulps of a cancelling result)."""
    dt = getattr(tack, vt)
    n = int(vt[3])
    rng = np.random.default_rng(5)
    fl = np.float64 if vt.endswith("d") else np.float32
    a, b = rng.standard_normal((500, n)).astype(fl), rng.standard_normal((500, n)).astype(fl)
    outs = []
    for jit in (True, False):
        out = np.zeros(500, fl)
        tack.kernel(_dots, jit=jit)(tack.array(a, dt), tack.array(b, dt), out)
        outs.append(out)
    in_order = a[:, 0] * b[:, 0]
    for k in range(1, n):
        in_order = in_order + a[:, k] * b[:, k]
    np.testing.assert_array_equal(outs[0], in_order)
    np.testing.assert_array_equal(outs[1], in_order)
    assert tack.dot(a[0], b[0]) == in_order[0] and tack.dot(a[0], b[0]).dtype == fl  # outside a kernel too


# ------------------------------------------------------------ types and refusals
def _ints(v, out):
    for i in range(v.shape[0]):
        out[i] = tack.dot(v[i], v[i])


def _diag_int(v, out):
    for i in range(v.shape[0]):
        out[i] = tack.diag(v[i])


def _svd_of_44(m, out):
    for i in range(m.shape[0]):
        U, s, V = tack.svd3(m[i])
        out[i] = s


def _svd_kept(m, out):
    for i in range(m.shape[0]):
        r = tack.svd3(m[i])
        out[i] = r


def _outer_mixed(u, v, out):
    for i in range(u.shape[0]):
        out[i] = tack.outer(u[i], v[i])


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_integer_dot_and_the_refusals(jit):
    v = tack.array(np.array([[1, 2, 3], [2**30, 4, 0]], np.int32), dtype=tack.vec3i)
    out = np.zeros(2, np.int32)
    tack.kernel(_ints, jit=jit)(v, out)
    assert out.tolist() == [14, 16]  # int32 arithmetic wraps: 2**60 + 16 is 16 mod 2**32
    with pytest.raises(tack.CompileError, match=r"diag\(\) of vec3i: there are no integer matrices"):
        tack.kernel(_diag_int, jit=jit)(v, tack.zeros(2, tack.mat33))
    with pytest.raises(tack.CompileError, match=r"svd3\(\) takes a 3x3 matrix \(mat33 or mat33d\), not mat44"):
        tack.kernel(_svd_of_44, jit=jit)(tack.zeros(2, tack.mat44), tack.zeros(2, tack.vec4))
    with pytest.raises(tack.CompileError, match=r"cannot assign the 3 values tack.svd3\(\) returns to 'r'"):
        tack.kernel(_svd_kept, jit=jit)(tack.zeros(2, tack.mat33), tack.zeros(2, tack.vec3))
    with pytest.raises(tack.CompileError, match=r"outer\(\) takes two float vectors of one type, not vec3 and vec3d"):
        tack.kernel(_outer_mixed, jit=jit)(tack.zeros(2, tack.vec3), tack.zeros(2, tack.vec3d), tack.zeros(2, tack.mat33))


def _precisions(m, m2, v, md, m2s, vd):
    for i in range(m.shape[0]):
        md[i] = tack.mat33d(m[i]) @ tack.vec3d(v[i])   # f32 -> f64, then f64 arithmetic
        m2s[i] = tack.mat22(m2[i])                     # f64 -> f32, each entry rounded
        vd[i] = tack.vec3d(v[i])


@pytest.mark.parametrize("jit", [True, False])
def test_a_matrix_converts_to_the_other_precision(jit):
    # tack.mat33d(m) of a mat33 value was emitted as a vector's components (.v[k]) and the C
    # compiler refused the kernel; debug mode ran it
    rng = np.random.default_rng(5)
    m, m2, v = rng.standard_normal((4, 3, 3)).astype(np.float32), rng.standard_normal((4, 2, 2)), \
        rng.standard_normal((4, 3)).astype(np.float32)
    md, m2s, vd = tack.zeros(4, tack.vec3d), tack.zeros(4, tack.mat22), tack.zeros(4, tack.vec3d)
    tack.kernel(_precisions, jit=jit)(tack.array(m, tack.mat33), tack.array(m2, tack.mat22d), tack.array(v, tack.vec3),
                                      md, m2s, vd)
    want = np.zeros((4, 3))
    for k in range(3):
        want = want + m[:, :, k].astype(np.float64) * v[:, k, None].astype(np.float64)
    assert md.numpy().tolist() == want.tolist()
    assert m2s.numpy().tolist() == m2.astype(np.float32).tolist()
    assert vd.numpy().tolist() == v.astype(np.float64).tolist()


def test_a_kernel_carries_only_the_helpers_it_calls():
    @tack.kernel
    def det_only(m, out):
        for i in range(m.shape[0]):
            out[i] = tack.determinant(m[i])

    src = det_only.generated_source(tack.zeros(2, tack.mat33), np.zeros(2, np.float32))
    assert "tk_determinant_tk_mat33" in src and "tk_svd3" not in src and "tk_inverse" not in src
    assert "determinant:f32" in det_only.ir(tack.zeros(2, tack.mat33), np.zeros(2, np.float32))


# ------------------------------------------------------------ the GPU dialects
def every_source(target, dt):
    m2t, m3t, m4t, v3t, v4t = TYPES[dt]
    z = [tack.zeros(2, t) for t in (m2t, m3t, m4t, v3t, v4t)]
    o = [tack.zeros((2, k), t) for k, t in ((2, m2t), (9, m3t), (3, m4t), (4, v3t), (1, v4t))]
    return EVERY.generated_source(*z, *o, np.zeros((2, 8), dt), target=target)


@pytest.mark.skipif(not (hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0),
                    reason="NVRTC (libnvrtc) is not installed")
def test_cuda_sources_compile_with_nvrtc():
    import _gpu_batch

    program, entries = _gpu_batch.batch_source([every_source("cuda", np.float32), every_source("cuda", np.float64)])
    ptx = _core._nvrtc_compile(program, "sm_80")
    assert all(n in ptx for names in entries for n in names)


_HIPRTC = ("import json, sys\nfrom tack import _core\njob = json.load(sys.stdin)\n"
           "assert len(_core._hiprtc_compile(job['source'], 'gfx90a')) > 0\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_sources_compile_with_hiprtc():
    import _gpu_batch

    program, _ = _gpu_batch.batch_source([every_source("hip", np.float32), every_source("hip", np.float64)])
    # in a process of its own, as tests/python/test_hip.py explains (comgr and PoCL share libLLVM)
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=json.dumps({"source": program}), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_source_compiles_with_ocloc():
    rc, out = _ocloc.compile(every_source("opencl", np.float64), "pvc")
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_passes_the_msl_check():
    src = every_source("metal", np.float32)
    assert "tk_svd3_tk_mat33" in src and "tk_svd3_tk_mat33d" not in src
    assert _msl.check(src) is None
