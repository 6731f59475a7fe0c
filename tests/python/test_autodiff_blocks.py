"""Adjoints of the block and warp collectives (tack._autodiff_blocks; docs/differentiation.md).

block_min's adjoint gives the seeds to the threads holding the least value, ties sharing them
equally (compiled and in debug mode), and shuffle is refused at its line.  Under make test-all
also: a blocks kernel calling block_sum, block_scan, warp_sum and block_max (in a branch) against
central finite differences in f64 and debug mode against the compiled adjoint (to the bit with
the vector math off, within its ulps with it on), its f32
adjoint against f64 and its CUDA source compiled by NVRTC, the tie case on PoCL equal to the
CPU, and warp_max beside reads of a neighbouring thread's element.
"""

import os

import numpy as np
import pytest

import tack
from _adjoint_check import fd

TEST_ALL = os.environ.get("TACK_TEST_ALL") == "1"


def _collectives(x, out):
    for b, t in tack.blocks(2, 64):
        i = b * 64 + t
        v = x[i] * x[i]
        s = tack.block_sum(v)
        c = tack.block_scan(x[i] * 0.5)
        ws = tack.warp_sum(tack.sin(x[i]))
        if b == 1:                                  # a branch every thread of a block takes alike
            bm = tack.block_max(x[i])
            ws = ws * 0.5 + bm
        out[i] = s * x[i] + c * c + ws * ws       # block_min: test_ties...; warp_max: ..._neighbour_reads


collectives = tack.kernel(_collectives)
collectives_py = tack.kernel(_collectives, jit=False)
_rng = np.random.default_rng(0)
X, G = _rng.standard_normal(128), _rng.standard_normal(128)


def _grad(k, X, G, device="cpu", dt=np.float64):
    x, out = tack.array(X.astype(dt), device=device), tack.zeros(128, tack.f64 if dt == np.float64 else tack.f32,
                                                                    device=device)
    k(x, out)
    gx = tack.zeros(128, out.dtype, device=device)
    k.adjoint(x, out, grads={"x": gx, "out": tack.array(G.astype(dt), device=device)})
    return gx.numpy()


def _loss(X):
    out = np.zeros(128)
    collectives(X, out)
    return out @ G


@pytest.mark.skipif(not TEST_ALL, reason="a blocks kernel of five collectives and its adjoint: under make test-all")
def test_against_finite_differences_and_debug_mode():
    g = _grad(collectives, X, G)
    num = fd(_loss, [X], 0)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-6 * np.abs(num).max())
    gpy = _grad(collectives_py, X, G)
    # tack.sin over a block's threads runs in SIMD lanes on the CPU (blocks_fast.c), where glibc's
    # vector math is within its documented few ulps of the scalar function debug mode calls
    # (decisions.md, "Vector math"): close with it, and the same bits without it
    np.testing.assert_allclose(g, gpy, rtol=1e-12, atol=1e-12 * np.abs(gpy).max())
    with tack.config.override(vector_math=False):
        scalar = tack.kernel(_collectives)  # a kernel of its own: built under the override
        np.testing.assert_array_equal(_grad(scalar, X, G), gpy)


@tack.kernel
def _least(x, out):
    for b, t in tack.blocks(1, 32):
        m = tack.block_min(x[t])
        out[t] = m * 3.0


def test_ties_share_the_seed():
    x = np.linspace(1.0, 4.0, 32)
    x[[5, 9, 20]] = 0.5                               # three threads hold the least value
    gx, seed = np.zeros(32), np.arange(32.0)
    want = np.zeros(32)
    want[[5, 9, 20]] = 3.0 * seed.sum() / 3          # (the adjoint spends the seed: computed first)
    _least.adjoint(x, np.zeros(32), grads={"x": gx, "out": seed})
    np.testing.assert_array_equal(gx, want)
    gx, seed = np.zeros(32), np.arange(32.0)          # debug mode: the same
    tack.kernel(_least.__wrapped__, jit=False).adjoint(x, np.zeros(32), grads={"x": gx, "out": seed})
    np.testing.assert_array_equal(gx, want)


@tack.kernel
def _shuffled(x, out):
    for b, t in tack.blocks(1, 32):
        r = tack.shuffle(x[t], t + 1)
        out[t] = r


def test_shuffle_is_refused_at_its_line():
    with pytest.raises(tack.CompileError, match="shuffle.. has no derivative.*line"):
        _shuffled.adjoint(np.ones(32), np.zeros(32))


@pytest.mark.skipif(not TEST_ALL, reason="the f32 kernel built for PoCL, and NVRTC: under make test-all")
def test_f32_on_opencl_and_nvrtc():
    from tack import _autodiff_run, _core

    g32 = _grad(collectives, X, G, dt=np.float32)
    np.testing.assert_allclose(g32, _grad(collectives, X, G), rtol=1e-4, atol=1e-4 * np.abs(g32).max())
    ocl = [d for d in tack.devices() if d.startswith("opencl")]
    if ocl:  # PoCL takes a minute to build the whole kernel's adjoint (its barriers): a smaller one
        x = np.linspace(1.0, 4.0, 32).astype(np.float32)
        x[[5, 9, 20]] = 0.5
        got = []
        for dev in ("cpu", ocl[0]):
            gx, seed = tack.zeros(32, tack.f32, device=dev), tack.array(np.arange(32, dtype=np.float32), device=dev)
            _least.adjoint(tack.array(x, device=dev), tack.zeros(32, tack.f32, device=dev),
                           grads={"x": gx, "out": seed})
            got.append(gx.numpy())
        np.testing.assert_array_equal(got[1], got[0])
        assert got[0][5] == 496.0
    if getattr(_core, "_nvrtc_compile", None) is not None:
        import _gpu_batch

        x, out = np.zeros(128, np.float32), np.zeros(128, np.float32)
        adj, bound, names, kinds = _autodiff_run.build(collectives, (x, out), {})
        src = adj.generated_source(x, out, np.zeros(128, np.float32), np.zeros(128, np.float32), target="cuda")
        try:
            assert _core._nvrtc_compile(_gpu_batch.batch_source([src])[0], "sm_80")
        except OSError:  # NVRTC's library is not installed
            pass


def _neighbours(x, out):
    for b, t in tack.blocks(2, 32):
        if t > 0:
            v = x[b, t] - x[b, t - 1]                # a neighbour's element: the atomic form, no gather
        else:
            v = x[b, t]
        s = tack.block_sum(v * v)
        hi = tack.warp_max(x[b, t] * 2.0)
        out[b, t] = s * x[b, t] + hi * x[b, t]


@pytest.mark.skipif(not TEST_ALL, reason="one more kernel and its adjoint to build: under make test-all")
def test_a_collective_beside_neighbour_reads():
    rng = np.random.default_rng(3)
    X2, G2 = rng.standard_normal((2, 32)), rng.standard_normal((2, 32))
    got = []
    for jit in (True, False):
        k = tack.kernel(_neighbours, jit=jit)
        gx, out = np.zeros((2, 32)), np.zeros((2, 32))
        k(X2, out)
        k.adjoint(X2, out, grads={"x": gx, "out": G2.copy()})
        got.append(gx)

        def loss(X):
            o = np.zeros((2, 32))
            k(X, o)
            return float((o * G2).sum())

        num = fd(loss, [X2], 0)
        np.testing.assert_allclose(gx, num, rtol=1e-6, atol=1e-6 * np.abs(num).max())
    np.testing.assert_array_equal(got[0], got[1])
