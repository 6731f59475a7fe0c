"""Vectors, matrices, quaternions and transforms passed to a kernel by value.

  - a parameter annotated with a vector type (``g: tack.vec3``) takes a tuple,
    a list or a NumPy array of the type's shape (``tack.vec3(...)``), its
    components converted to the annotation's type, and is a vector in the
    body (``v[i] + g * dt``, ``tack.dot``, ``tack.length``): NumPy's values
    compiled and in debug mode (jit=False), the two alike to the bit;
    matrices, quaternions, transforms and integer vectors the same;
  - without the annotation nothing changed: a NumPy (3,) array is a 1-D
    array, and an annotated parameter given an array of its type is that array;
  - a wrong length, a component that is not a number, a float for an integer
    vector and an integer that does not fit are refused naming the parameter
    and the value, compiled and in debug mode alike;
  - one source annotated vec3 and vec3d computes in f32 and in f64 (two
    builds, never one from the other's cache);
  - the adjoint takes a by-value vector as a constant, and refuses a gradient for it;
  - the GPU dialects take the same build: it runs on OpenCL (PoCL) to the
    CPU's values, and its CUDA, HIP and Metal sources pass their compilers.
"""

import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _msl  # noqa: E402


def fall(p, v, g: tack.vec3, w: tack.vec3, dt, out):
    for i in range(p.shape[0]):
        v[i] = v[i] + g * dt
        p[i] = p[i] + v[i] * dt
        out[i] = tack.dot(p[i], w) + tack.length(g)


fall_c, fall_py = tack.kernel(fall), tack.kernel(fall, jit=False)


def fall_args(device="cpu", g=(0.0, -9.8, 0.25), w=(1.0, 2.0, 0.5)):
    rng = np.random.default_rng(1)
    p, v = rng.random((5, 3), np.float32), rng.random((5, 3), np.float32)
    return [tack.array(p, tack.vec3, device=device), tack.array(v, tack.vec3, device=device), g, w, 0.125,
            tack.zeros(5, tack.f32, device=device)]


def fall_numpy(g, w):
    rng = np.random.default_rng(1)
    p, v = rng.random((5, 3), np.float32), rng.random((5, 3), np.float32)
    g, w, dt = np.asarray(g, np.float32), np.asarray(w, np.float32), np.float32(0.125)
    v = v + g * dt
    p = p + v * dt
    return p, v, (p * w).sum(1) + np.sqrt((g * g).sum())


@pytest.mark.parametrize("g, w", [((0.0, -9.8, 0.25), [1, 2, 0.5]),                        # tuple, list of ints
                                  (tack.vec3(0.0, -9.8, 0.25), np.array([1.0, 2.0, 0.5]))])  # f32 and f64 arrays
def test_a_vector_by_value_is_a_vector_in_the_body(g, w):
    got = []
    for k in (fall_c, fall_py):
        args = fall_args(g=g, w=w)
        k(*args)
        got.append([args[0].numpy(), args[1].numpy(), args[5].numpy()])
    want = fall_numpy(g, w)
    for a, b in zip(got[0], got[1]):
        assert a.tobytes() == b.tobytes()  # compiled and debug mode: alike to the bit
    for a, b in zip(got[0], want):
        np.testing.assert_allclose(a, b, rtol=2e-6)
    assert isinstance(tack.vec3(1, 2, 3), np.ndarray)  # the host's vector is still NumPy's array


def test_python_numbers_and_arrays_round_alike():
    """A tuple of Python numbers (converted one by one) and a float64 array (converted whole) give
    the same f32 components, past f32's range and 2**53 included, and warn of nothing (an f32
    annotation makes inf of a number past its range, silently, as NumPy's astype does)."""
    for g in [(0.1, 1e38, -3.5e38), (2**53 + 1, -(2**60) - 1, 1 / 3), (float("nan"), float("inf"), 7)]:
        got = []
        for value in (g, np.array(g, np.float64)):
            args = fall_args(g=value)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                fall_c(*args)
            got.append(args[1].numpy().tobytes())
        assert got[0] == got[1], g


def shapes(out, m: tack.mat33, q: tack.quat, t: tack.transform, n: tack.vec2i, x: tack.vec3):
    out[0] = m @ x
    out[1] = tack.quat_rotate(q, x)
    out[2] = tack.transform_point(t, x)
    out[3] = tack.vec3(tack.f32(n.x), tack.f32(n.y), tack.f32(n.x * n.y))
    q.w = 0.0  # a local copy: the caller's value is not changed
    out[4] = tack.vec3(q.x, q.y, q.w)


def test_matrices_quaternions_transforms_and_integer_vectors_by_value():
    m = np.arange(9.0).reshape(3, 3)
    s = np.sqrt(0.5)
    q = (0.0, 0.0, s, s)  # a quarter turn about z
    t = tack.transform(tack.vec3(1, 2, 3), tack.quat(*q))
    x = [1.0, 2.0, 3.0]
    got = []
    for jit in (True, False):
        out = tack.zeros(5, tack.vec3)
        qa = np.array(q, np.float32)
        tack.kernel(shapes, jit=jit)(out, m, qa, t, (3, -4), x)
        assert qa.tolist() == np.array(q, np.float32).tolist()
        got.append(out.numpy())
    assert got[0].tobytes() == got[1].tobytes()
    np.testing.assert_allclose(got[0][0], m @ x, rtol=1e-6)
    np.testing.assert_allclose(got[0][1], [-2, 1, 3], atol=1e-6)
    np.testing.assert_allclose(got[0][2], [-1, 3, 6], atol=1e-6)
    assert got[0][3].tolist() == [3, -4, -12] and got[0][4].tolist() == [0, 0, 0]


@tack.kernel
def plain(v, out):
    out[0] = v[0] + v.shape[0]  # unannotated: a (3,) array stays a 1-D array


def annotated_array(a: tack.vec3, g: tack.vec3, out):
    for i in range(a.shape[0]):
        out[i] = tack.dot(a[i], g)


def test_unannotated_and_array_arguments_keep_their_meaning():
    out = np.zeros(1, np.float32)
    plain(tack.vec3(1.5, 0, 0), out)
    assert out[0] == 4.5
    for jit in (True, False):  # no annotation: no vector, as before, and the refusal says how
        with pytest.raises(TypeError, match=r"argument 'v' of plain\(\)( \(jit=False\))?: expected .*got tuple\); a "
                                            r"vector, matrix or quaternion is passed by value to a parameter "
                                            r"annotated with its type, v: tack.vec3"):
            tack.kernel(plain.__wrapped__, jit=jit)((1.5, 0.0, 0.0), out)
    for jit in (True, False):
        k = tack.kernel(annotated_array, jit=jit)
        out = np.zeros(2, np.float32)
        k(tack.array(np.eye(3)[:2], tack.vec3), (2.0, 3.0, 4.0), out)  # `a` an array of vec3, `g` a value
        assert out.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("jit", [True, False])
def test_bad_values_are_refused_naming_the_parameter_and_the_value(jit):
    k = tack.kernel(fall, jit=jit)
    name = "fall"
    cases = [((1.0, 2.0), TypeError, r"fall\(\): parameter 'g' is annotated vec3, a value of 3 numbers, but the "
              r"value passed has shape \(2,\): \(1.0, 2.0\)"),
             (("a", 1, 2), TypeError, r"the vec3 passed for 'g' has a component that is not a real number .*'a', 1, 2"),
             ((1j, 0, 0), TypeError, r"'g' has a component that is not a real number .*1j"),
             (2.5, TypeError, r"parameter 'g' is annotated vec3, a value of 3 numbers; pass a tuple.* not 2.5"),
             ([[1, 2, 3]], TypeError, r"parameter 'g' .*shape \(1, 3\): \[\[1, 2, 3\]\]")]
    for bad, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            k(*fall_args(g=bad))
    assert name in k.__qualname__

    def ints(out, n: tack.vec2i):
        out[0] = n.x

    ki = tack.kernel(ints, jit=jit)
    with pytest.raises(TypeError, match=r"'n' has a float component.*\(1.5, 2\)"):
        ki(np.zeros(1, np.int32), (1.5, 2))
    for big in (2**32, 2**70):  # past 64 bits NumPy holds the int as an object
        with pytest.raises(OverflowError, match=rf"'n' does not fit in int32: \({big}, 0\)"):
            ki(np.zeros(1, np.int32), (big, 0))
    args = fall_args(g=(2**70, 0, 0))
    k(*args)  # a float vector takes it, rounded as a number is
    assert np.isclose(args[1].numpy()[0, 0], 2.0**67, rtol=1e-6)  # v + g * dt


def third(g, out):
    out[0] = (g / 3.0).x


def test_vec3_and_vec3d_builds_are_apart():
    """One source, annotated vec3 and vec3d: f32 and f64 arithmetic, whichever compiled first."""
    for jit in (True, False):
        for order in ((tack.vec3, tack.vec3d), (tack.vec3d, tack.vec3)):
            for T in order:
                def k(g: T, out):
                    out[0] = (g / 3.0).x

                out = np.zeros(1)
                tack.kernel(k, jit=jit)((1.0, 0.0, 0.0), out)
                want = np.float32(1) / np.float32(3) if T is tack.vec3 else 1 / 3
                assert out[0] == want, (T, jit)


def energy(x, g: tack.vec3d, loss):
    for i in range(x.shape[0]):
        tack.atomic_add(loss, 0, tack.dot(x[i], g) + tack.length(g) * x[i].x)


@pytest.mark.parametrize("jit", [True, False])
def test_the_adjoint_takes_a_vector_by_value_as_a_constant(jit):
    k = tack.kernel(energy, jit=jit)
    x = tack.array(np.arange(6.0).reshape(2, 3), tack.vec3d)
    gx, loss = tack.zeros(2, tack.vec3d), np.zeros(1)
    k.adjoint(x, (1.0, 2.0, 2.0), loss, grads={"x": gx, "loss": np.ones(1)})
    assert gx.numpy().tolist() == [[4, 2, 2], [4, 2, 2]]  # g plus |g| along x
    with pytest.raises(TypeError, match=r"'g' is a vec3d passed by value, a constant to the adjoint.*"
                                        r"tack.array\(\[v\], tack.vec3d\)"):
        k.adjoint(x, (1.0, 2.0, 2.0), loss, grads={"g": np.zeros(3)})
    with tack.Tape() as tape:
        k(x, [1.0, 2.0, 2.0], loss)
    tape.backward(grads=[(loss, np.ones(1))])
    assert tape.gradient(x).numpy().tolist() == [[4, 2, 2], [4, 2, 2]]


def test_compile_ir_and_pickle_take_values():
    args = fall_args()
    fall_c.compile(*args)
    assert "g\u00b70" in fall_c.ir(*args)
    assert fall_c.by_value and not tack.kernel(third).by_value
    k = pickle.loads(pickle.dumps(fall_c))
    k(*args)
    assert k.by_value


OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (PoCL) on this machine")
def test_vectors_by_value_on_an_opencl_device():
    args = fall_args(OPENCL)
    fall_c(*args)
    want = fall_args()
    fall_c(*want)
    for i in (0, 1, 5):
        np.testing.assert_allclose(args[i].numpy(), want[i].numpy(), rtol=1e-6)


NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_source_compiles_with_nvrtc():
    assert ".entry" in _core._nvrtc_compile(fall_c.generated_source(*fall_args(), target="cuda"), "sm_80")


_HIPRTC = ("import json, sys\nfrom tack import _core\njob = json.load(sys.stdin)\n"
           "assert len(_core._hiprtc_compile(job['source'], 'gfx90a')) > 0\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    src = fall_c.generated_source(*fall_args(), target="hip")
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=json.dumps({"source": src}),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    problems = _msl.check(fall_c.generated_source(*fall_args(), target="metal"))
    assert problems is None, problems


def first_f64(out, g: tack.vec3d):
    out[0] = tack.f32(g.x)


def test_metal_refuses_an_f64_value_naming_it():
    """Metal has no f64: the refusal names the vector, not only its first component's parameter, and
    says to annotate the f32 type (it said to pass np.float32(...), which the caller cannot)."""
    k = tack.kernel(first_f64)
    with pytest.raises(tack.CompileError, match=r"'g' is passed by value with float64 components \('g\u00b70'\); "
                                                r"give it a float32 type \(a vector annotated tack.vec3"):
        k.generated_source(np.zeros(1, np.float32), (1.0, 2.0, 2.0), target="metal")


def periodic_counts(pts, grid, r, box: tack.vec3d, count):
    for i in range(pts.shape[0]):
        c = 0
        for j in grid.neighbors(pts[i], r):
            d = pts[j] - pts[i]
            d -= box * np.floor(d / box + 0.5)  # the minimum image
            if tack.dot(d, d) <= r * r:
                c += 1
        count[i] = c


def test_a_vector_by_value_beside_a_hashgrid():
    """The grid's rewrite and the vector's build chained (docs/spatial.md's periodic box)."""
    L = np.array([2.0, 1.0, 1.0])
    x = np.random.default_rng(4).random((60, 3)) * L
    grid = tack.HashGrid(x, 0.3, box=tuple(L))
    d = x[:, None] - x[None]
    d -= L * np.floor(d / L + 0.5)
    want = ((d * d).sum(-1) <= 0.09).sum(1)
    for jit in (True, False):
        count = np.zeros(60, np.int64)
        tack.kernel(periodic_counts, jit=jit)(tack.array(x, tack.vec3d), grid, 0.3, L, count)
        assert (count == want).all()
