"""Quaternions and rigid transforms (docs/language.md, "Quaternions and
transforms"): tack.quat / quatd, tack.transform / transformd and their
functions, against SciPy's Rotation.

One kernel (made for each precision by _make) uses every operation and function on a few thousand
random unit quaternions, scale factors, vectors, axes, angles, transforms and
rotation matrices in one launch per dtype; its results are compared with
scipy.spatial.transform.Rotation in float64 -- quaternions up to their sign
(q and -q are one rotation) where SciPy's sign is its own choice -- within

    f32: 2e-5 absolute (values of order 1; a few hundred ulps of f32 after
         the products and the normalizations)
    f64: 1e-12 absolute

The same kernel runs compiled on the CPU, as Python (jit=False: debug mode
must give the compiled kernel's values, within 1e-6 in f32 and 1e-13 in
f64), on the OpenCL device (PoCL), as CUDA source on the CPU
(_cuda_emulate.py) and as the Metal dialect's MSL on the CPU
(_msl_emulate.py, f32: Metal has no double); its sources compile with
NVRTC, hiprtc, Intel's ocloc and the MSL check.  What the algebra does not
define -- q * v, q + 1.0, q == r, q / r, t * v, a vec4 or a number where a
quat goes -- is a CompileError naming the types, compiled and in debug mode.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

Rotation = pytest.importorskip("scipy.spatial.transform").Rotation

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _msl  # noqa: E402
import _ocloc  # noqa: E402

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
TOL = {np.float32: 2e-5, np.float64: 1e-12}
DEBUG_TOL = {np.float32: 1e-6, np.float64: 1e-13}
TYPES = {np.float32: (tack.quat, tack.vec3, tack.mat33, tack.transform),
         np.float64: (tack.quatd, tack.vec3d, tack.mat33d, tack.transformd)}
DT = pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])


def _make(transform):
    """The kernel, whose transforms are built as `transform` (tack.transform or tack.transformd)."""

    def _everything(qa, qb, sc, v, axis, ang, t, tp, mats, oq, ov, om, osc, ot):
        for i in range(qa.shape[0]):
            qs = qa[i] * sc[i]  # a quaternion of length sc[i]: it rotates as qa[i] does
            oq[0, i] = qa[i] * qb[i]  # the Hamilton product
            oq[1, i] = tack.quat_inverse(qs)
            oq[2, i] = tack.quat_from_axis_angle(axis[i], ang[i])
            oq[3, i] = tack.quat_from_matrix(mats[i])
            oq[4, i] = tack.quat_slerp(qa[i], qb[i], tp[i])
            oq[5, i] = tack.normalize(qs / 2.0) + (qa[i] - qb[i]) * 0.5 - -qb[i] * 0.5 + 2 * tack.quat_identity()
            ov[0, i] = tack.quat_rotate(qs, v[i])
            ov[1, i] = tack.quat_rotate_inv(qs, v[i])
            ov[2, i] = tack.transform_point(t[i], v[i])
            ov[3, i] = tack.transform_vector(t[i], v[i])
            ov[4, i] = tack.transform_point(t[i] * transform(axis[i], qb[i]), v[i])
            ov[5, i] = tack.transform_point(tack.transform_inverse(t[i]), v[i])
            ov[6, i] = t[i].p * qs.w + v[i] * qs[3]
            om[i] = tack.quat_to_matrix(qs)
            osc[0, i] = tack.length(qs)
            osc[1, i] = tack.dot(qa[i], qb[i])
            ot[i] = transform(t[i].p, t[i].q * qb[i])

    return _everything


KERNELS = {dt: tack.kernel(_make(TYPES[dt][3])) for dt in TYPES}
DEBUG = {dt: tack.kernel(_make(TYPES[dt][3]), jit=False) for dt in TYPES}


def inputs(dt, n, seed=1):
    """The kernel's arguments (CPU tack arrays) and the float64 inputs SciPy's references take."""
    rng = np.random.default_rng(seed)
    q, v3, m33, tr = TYPES[dt]
    ra, rb, rt = (Rotation.random(n, random_state=rng) for _ in range(3))
    qa, qb = ra.as_quat(), rb.as_quat()
    sc = rng.uniform(0.5, 2.0, n)
    v, axis, p = rng.normal(size=(3, n, 3))
    ang = rng.uniform(-np.pi, np.pi, n)
    tp = rng.uniform(0, 1, n)
    mats = Rotation.random(n, random_state=rng).as_matrix()
    tq = rt.as_quat()
    host = dict(qa=qa, qb=qb, sc=sc, v=v, axis=axis, ang=ang, p=p, tq=tq, tp=tp, mats=mats)
    host = {k: x.astype(dt).astype(np.float64) for k, x in host.items()}  # what the kernel sees
    args = [tack.array(qa.astype(dt), q), tack.array(qb.astype(dt), q), sc.astype(dt), tack.array(v.astype(dt), v3),
            tack.array(axis.astype(dt), v3), ang.astype(dt), tack.array(np.hstack([p, tq]).astype(dt), tr),
            tp.astype(dt), tack.array(mats.astype(dt), m33),
            tack.zeros((6, n), q), tack.zeros((7, n), v3), tack.zeros(n, m33), np.zeros((2, n), dt), tack.zeros(n, tr)]
    return args, host


def results(args):
    return [np.array(a.numpy() if isinstance(a, tack.Array) else a, np.float64) for a in args[9:]]


def up_to_sign(got, want):
    s = np.where(np.sum(got * want, axis=-1) < 0, -1.0, 1.0)
    return got * s[:, None]


def check(res, h, dt):
    oq, ov, om, osc, ot = res
    tol = TOL[dt]
    R = Rotation.from_quat
    ra, rb, rt = R(h["qa"]), R(h["qb"]), R(h["tq"])
    close = lambda got, want, what: np.testing.assert_allclose(got, want, rtol=0, atol=tol, err_msg=what)  # noqa: E731
    close(up_to_sign(oq[0], (ra * rb).as_quat()), (ra * rb).as_quat(), "q * r")
    conj = h["qa"] * [-1, -1, -1, 1]
    close(oq[1], conj / h["sc"][:, None], "quat_inverse")
    unit = h["axis"] / np.linalg.norm(h["axis"], axis=1)[:, None]
    want = Rotation.from_rotvec(unit * h["ang"][:, None]).as_quat()
    close(up_to_sign(oq[2], want), want, "quat_from_axis_angle")
    want = Rotation.from_matrix(h["mats"]).as_quat()
    assert (oq[3][:, 3] >= 0).all()
    close(up_to_sign(oq[3], want), want, "quat_from_matrix")
    want = (ra * Rotation.from_rotvec((ra.inv() * rb).as_rotvec() * h["tp"][:, None])).as_quat()
    close(up_to_sign(oq[4], want), want, "quat_slerp")
    close(oq[5], 1.5 * h["qa"] + [0, 0, 0, 2], "q + r, q - r, -q, q * s, s * q, q / s")
    close(ov[0], ra.apply(h["v"]), "quat_rotate")
    close(ov[1], ra.inv().apply(h["v"]), "quat_rotate_inv")
    close(ov[2], rt.apply(h["v"]) + h["p"], "transform_point")
    close(ov[3], rt.apply(h["v"]), "transform_vector")
    close(ov[4], rt.apply(rb.apply(h["v"]) + h["axis"]) + h["p"], "transform * transform")
    close(ov[5], rt.inv().apply(h["v"] - h["p"]), "transform_inverse")
    close(ov[6], (h["p"] + h["v"]) * (h["qa"][:, 3] * h["sc"])[:, None], "t.p, q.w, q[3]")
    close(om, ra.as_matrix(), "quat_to_matrix")
    close(osc[0], h["sc"], "length")
    close(osc[1], np.sum(h["qa"] * h["qb"], axis=1), "dot")
    close(ot[:, :3], h["p"], "transform(p, q).p")
    want = (rt * rb).as_quat()
    close(up_to_sign(ot[:, 3:], want), want, "transform(p, q).q")


@DT
def test_against_scipy_on_the_cpu(dt):
    args, h = inputs(dt, 3000)
    KERNELS[dt](*args)
    check(results(args), h, dt)


@DT
def test_debug_mode_gives_the_compiled_values(dt):
    args, h = inputs(dt, 150, seed=2)
    DEBUG[dt](*args)
    got = results(args)
    check(got, h, dt)
    args2, _ = inputs(dt, 150, seed=2)
    KERNELS[dt](*args2)
    for g, w in zip(got, results(args2)):
        np.testing.assert_allclose(g, w, rtol=0, atol=DEBUG_TOL[dt])


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
@DT
def test_on_opencl(dt):
    args, h = inputs(dt, 1000, seed=3)
    dev = [tack.array(a.numpy() if isinstance(a, tack.Array) else a, a.dtype if isinstance(a, tack.Array) else None,
                      device=OPENCL[0]) if hasattr(a, "shape") else a for a in args]
    KERNELS[dt](*dev)
    check(results(dev), h, dt)


@pytest.mark.skipif(_msl.clang() is None or not _msl.has_float16(),
                    reason="the Metal emulation needs clang++ 15 or later (_msl_emulate.py)")
def test_metal_source_runs_emulated():
    import _msl_emulate

    args, h = inputs(np.float32, 200, seed=4)
    arrays, (failed, site) = _msl_emulate.run(KERNELS[np.float32], *args, threads=3)
    assert failed == 0, site
    out = [np.array(a, np.float64) for a in arrays[9:]]
    n = 200
    check([out[0].reshape(6, n, 4), out[1].reshape(7, n, 3), out[2].reshape(n, 3, 3), out[3].reshape(2, n),
           out[4].reshape(n, 7)], h, np.float32)


@DT
def test_cuda_source_runs_emulated(dt):
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    args, h = inputs(dt, 200, seed=5)
    src = KERNELS[dt].generated_source(*args, target="cuda")
    em = [(np.asarray(a), tuple(a.shape)) if isinstance(a, tack.Array) else a for a in args]
    assert _cuda_emulate.run(src, em)[0] == 0
    check([np.array(a[0] if isinstance(a, tuple) else a, np.float64) for a in em[9:]], h, dt)


# --------------------------------------------------------- the compilers
def source(target, dt):
    args, _ = inputs(dt, 4)
    return KERNELS[dt].generated_source(*args, target=target)


NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_source_compiles_with_nvrtc():
    src = source("cuda", np.float64)  # quatd; the prelude carries the f32 helpers too
    assert "tk_mul_tk_quatd" in src and ".entry" in _core._nvrtc_compile(src, "sm_80")


_HIPRTC = ("import sys\n"
           "from tack import _core\n"
           "assert len(_core._hiprtc_compile(sys.stdin.read(), 'gfx90a')) > 0\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=source("hip", np.float64), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
@pytest.mark.parametrize("device, dt", [("pvc", np.float64), ("dg2", np.float32)])
def test_opencl_source_compiles_with_ocloc(device, dt):
    src = source("opencl", dt)
    assert ("tk_quatd" in src) == (dt == np.float64)  # no double in a kernel that has none
    rc, out = _ocloc.compile(src, device)
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    problems = _msl.check(source("metal", np.float32))
    assert problems is None, problems


def test_metal_refuses_quatd_by_name():
    args, _ = inputs(np.float64, 4)
    with pytest.raises(tack.CompileError, match="Metal has no double precision"):
        KERNELS[np.float64].generated_source(*args, target="metal")


# ------------------------------------------------------------ refusals
def _mul_vec(q, v, out):
    for i in range(q.shape[0]):
        out[i] = q[i] * v[i]


def _plus_number(q, v, out):
    for i in range(q.shape[0]):
        out[i] = q[i] + 1.0


def _equal(q, v, out):
    for i in range(q.shape[0]):
        if q[i] == q[i]:
            out[i] = q[i]


def _divide(q, v, out):
    for i in range(q.shape[0]):
        out[i] = q[i] / q[i]


def _vec4(q, v, out):
    for i in range(q.shape[0]):
        out[i] = tack.quat(tack.vec4(1.0, 0.0, 0.0, 0.0))


def _store_number(q, v, out):
    for i in range(q.shape[0]):
        out[i] = 1.0


def _xform_vec(q, v, out):
    for i in range(q.shape[0]):
        t = tack.transform(v[i], q[i])
        out[i] = (t * v[i]).q


def _index_transform(q, v, out):
    for i in range(q.shape[0]):
        t = tack.transform(v[i], q[i])
        t[0] = 0.0              # a quaternion's components are set by index or name; a transform's parts by name
        out[i] = t.q


REFUSED = {
    _mul_vec: "unsupported operand types for \\*: quat and vec3 \\(rotate a vector with tack.quat_rotate",
    _plus_number: "unsupported operand types for \\+: quat and float \\(Python\\) \\(quaternion algebra",
    _equal: "'==' is not supported between quat and quat",
    _divide: "q / r is ambiguous for quaternions",
    _vec4: "quat\\(\\) takes 4 components .* \\(1 given: vec4\\)",
    _store_number: "cannot convert float \\(Python\\) to quat",
    _xform_vec: "transform and vec3 \\(apply a transform with tack.transform_point",
    _index_transform: "a transform is not indexed; assign its parts by name \\(t.p = v, t.q = q, t.p.x = s\\)",
}


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
@pytest.mark.parametrize("f", list(REFUSED), ids=lambda f: f.__name__[1:])
def test_what_the_algebra_does_not_define_is_refused_by_name(f, jit):
    q = tack.array(np.array([[0, 0, 0, 1]], np.float32), tack.quat)
    v = tack.array(np.ones((1, 3), np.float32), tack.vec3)
    with pytest.raises(tack.CompileError, match=REFUSED[f]):
        tack.kernel(f, jit=jit)(q, v, tack.zeros(1, tack.quat))


def test_arrays_are_numpy_shaped_and_the_python_functions_agree():
    assert tack.quat.shape == (4,) and tack.transformd.shape == (7,) and tack.quat.itemsize == 16
    assert np.asarray(tack.zeros(3, tack.transform)).shape == (3, 7)
    assert tack.transform(tack.vec3(1, 2, 3), tack.quat_identity()).tolist() == [1, 2, 3, 0, 0, 0, 1]
    r = Rotation.random(5, random_state=0)
    v = np.ones((5, 3))
    np.testing.assert_allclose(tack.quat_rotate(r.as_quat(), v), r.apply(v), atol=1e-12)
    np.testing.assert_allclose(tack.quat_to_matrix(r.as_quat()), r.as_matrix(), atol=1e-12)


def test_functions_take_and_return_quats_and_mix_precisions():
    @tack.func
    def turn(q: tack.quat, v):
        return tack.quat_rotate(q, v), q * q

    @tack.kernel
    def k(q, out, half):
        for i in range(q.shape[0]):
            v, q2 = turn(q[i], tack.vec3d(1.0, 0.0, 0.0))  # a quat with a vec3d: computed in f64
            out[i] = v
            half[i] = tack.quatd(q2)

    q = tack.array(np.array([[0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)]], np.float32), tack.quat)
    out, half = tack.zeros(1, tack.vec3d), tack.zeros(1, tack.quatd)
    k(q, out, half)
    np.testing.assert_allclose(out.numpy(), [[0, 1, 0]], atol=1e-7)
    np.testing.assert_allclose(half.numpy(), [[0, 0, 1, 0]], atol=1e-7)
