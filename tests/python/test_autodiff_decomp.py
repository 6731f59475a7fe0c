"""Adjoints of the 3x3 decompositions tack.svd3, tack.eig3 and tack.qr3 (tack._autodiff_decomp;
docs/differentiation.md, "The decompositions").

One kernel computes the three decompositions and stores every output; its adjoint is checked
against central finite differences in f64 on random matrices (each decomposition's outputs seeded
alone, then all together), debug mode against the compiled adjoint to the bit, decompositions inside
a carrying serial loop, and the degenerate cases: repeated singular values and eigenvalues and a
rank-deficient QR, where a loss of the values alone (the leading columns, for QR) has its gradient
and a loss of the undefined vectors raises AssertionError at the decomposition's line (NaN with
checks=False).  The adjoint's f32 source is emitted for every target and type-checks as Metal.
Under make test-all also: PyTorch's autograd of torch.linalg.svd, eigh and qr on the same matrices
(conventions aligned), the f32 adjoint on the CPU and on PoCL, NVRTC, ocloc and hiprtc, the
decompositions in a carrying loop, checks=False.
"""

import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import tack
from _adjoint_check import fd

TEST_ALL = os.environ.get("TACK_TEST_ALL") == "1"


def _decomps(m, u, s, v, w, e, q, r):
    for i in range(m.shape[0]):
        U, sv, V = tack.svd3(m[i])
        u[i] = U
        s[i] = sv
        v[i] = V
        wv, E = tack.eig3(m[i])                      # reads m's lower triangle
        w[i] = wv
        e[i] = E
        q[i], R = tack.qr3(m[i])                     # unpacked into an array element too
        r[i] = R


decomps = tack.kernel(_decomps)
decomps_py = tack.kernel(_decomps, jit=False)     # debug mode: the same adjoint run as Python
NAMES = ("u", "s", "v", "w", "e", "q", "r")
VEC = (False, True, False, True, False, False, False)
OF = {"svd3": (0, 1, 2), "eig3": (3, 4), "qr3": (5, 6)}
SVD_LINE = _decomps.__code__.co_firstlineno + 2     # the line of each decomposition, for the errors
LINES = {"svd3": SVD_LINE, "eig3": SVD_LINE + 4, "qr3": SVD_LINE + 7}


def _types(f32=False):
    return [(tack.vec3 if f32 else tack.vec3d) if vec else (tack.mat33 if f32 else tack.mat33d) for vec in VEC]


def _outputs(k, A, f32=False, device="cpu"):
    m = tack.array(A.astype(np.float32) if f32 else A, tack.mat33 if f32 else tack.mat33d, device=device)
    outs = [tack.zeros(A.shape[0], t, device=device) for t in _types(f32)]
    k(m, *outs)
    return m, outs


def _grad(k, A, seeds, f32=False, device="cpu"):
    """The adjoint's gradient of sum(seed * output) with respect to the matrices."""
    m, outs = _outputs(k, A, f32, device)
    gm = tack.zeros(A.shape[0], tack.mat33 if f32 else tack.mat33d, device=device)
    k.adjoint(m, *outs, grads={"m": gm, **{n: tack.array(x.astype(np.float32) if f32 else x, t, device=device)
                                           for n, x, t in zip(NAMES, seeds, _types(f32))}})
    return gm.numpy()


def _loss(A, seeds):
    _m, outs = _outputs(decomps, A)
    return sum(float(np.sum(o.numpy() * x)) for o, x in zip(outs, seeds))


def _numeric(A, seeds, h=1e-6):
    return fd(lambda a: _loss(a, seeds), [A], 0, h)


def _seeds(rng, n, only=None):
    """Random seeds for every output (only: those of one decomposition, the rest zero)."""
    out = [rng.standard_normal((n, 3) if vec else (n, 3, 3)) for vec in VEC]
    return [x if only is None or k in OF[only] else np.zeros_like(x) for k, x in enumerate(out)]


def _rot(rng):
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return q


_rng = np.random.default_rng(11)
A = _rng.standard_normal((3, 3, 3))            # well conditioned: the gaps are checked below


def test_against_finite_differences_and_debug_mode():
    s = np.linalg.svd(A, compute_uv=False)
    w = np.linalg.eigvalsh(A)                  # eigvalsh reads the lower triangle, as eig3
    assert np.diff(s).min() < -0.1 and np.diff(w).min() > 0.1 and np.abs(np.linalg.det(A)).min() > 0.1
    rng = np.random.default_rng(12)
    for only in ("svd3", "eig3", "qr3", None):
        seeds = _seeds(rng, 3, only)
        g = _grad(decomps, A, seeds)
        np.testing.assert_allclose(g, _numeric(A, seeds), rtol=1e-6, atol=1e-7, err_msg=str(only))
        assert np.abs(g).max() > 0.5
        if only == "eig3":
            assert not g[:, 0, 1:].any() and not g[:, 1, 2].any()  # the upper triangle is not read
    # debug mode: the same adjoint run as Python, the same bits (the decompositions are the CPU's steps)
    np.testing.assert_array_equal(_grad(decomps_py, A[:1], [x[:1] for x in seeds]), g[:1])


def _carried(m, out):
    for i in range(m.shape[0]):
        M = m[i]
        acc = 0.0
        for k in range(3):                           # carries M: replayed, the outputs saved each time
            U, s, V = tack.svd3(M)
            M = U @ tack.diag(s * s) @ tack.transpose(V) * 0.05 + M
            acc += s[0] * U[0, 1]
        Q, R = tack.qr3(M)
        w, E = tack.eig3(M @ tack.transpose(M))
        out[i] = acc + R[0, 2] + Q[1, 0] + w[2] + E[1, 1] * E[0, 1]


@pytest.mark.skipif(not TEST_ALL, reason="two more kernels and their adjoints to build: under make test-all")
def test_inside_a_carrying_loop():
    B = np.random.default_rng(5).standard_normal((2, 3, 3)) + 2 * np.eye(3)
    got = []
    for jit in (True, False):
        k = tack.kernel(_carried, jit=jit)
        gm = tack.zeros(2, tack.mat33d)
        k.adjoint(tack.array(B, tack.mat33d), np.zeros(2), grads={"m": gm, "out": np.ones(2)})
        got.append(gm.numpy())

        def loss(X):
            o = np.zeros(2)
            k(tack.array(X, tack.mat33d), o)
            return o.sum()

        num = fd(loss, [B], 0)
        np.testing.assert_allclose(got[-1], num, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[0], got[1])


def _degenerate():
    """Matrices with repeated singular values (0, 1), repeated eigenvalues (2, 3), rank-deficient (4, 5)."""
    rng = np.random.default_rng(21)
    D = np.zeros((6, 3, 3))
    D[0] = _rot(rng) @ np.diag([2.0, 2.0, 0.5]) @ _rot(rng).T
    D[1] = _rot(rng)                                    # a rotation: three singular values 1
    q = _rot(rng)
    D[2] = q @ np.diag([-1.0, 3.0, 3.0]) @ q.T
    D[3] = 2.0 * np.eye(3)
    D[4] = rng.standard_normal((3, 3))
    D[4][:, 2] = 0.5 * D[4][:, 0] - 1.5 * D[4][:, 1]   # column 2 in the span of 0 and 1
    D[5] = rng.standard_normal((3, 3))
    D[5][:, 1] = -2.0 * D[5][:, 0]
    return D


def test_degenerate_values_with_defined_gradients():
    D = _degenerate()
    z = [np.zeros((6, 3) if vec else (6, 3, 3)) for vec in VEC]
    sv = list(z)
    sv[1] = np.ones((6, 3))                            # the sum of the singular values: its gradient is U V^T
    sv[3] = np.array([[1.0, 2.0, 2.0]] * 3 + [[1.0, 1.0, 1.0]] * 3)  # weights equal on the repeated values
    g = _grad(decomps, D[:4], [x[:4] for x in sv])
    np.testing.assert_array_equal(_grad(decomps_py, D[:4], [x[:4] for x in sv]), g)   # debug mode: the same bits
    for i in range(4):
        U, s, Vt = np.linalg.svd(D[i])
        w, E = np.linalg.eigh(D[i])
        sym = E @ np.diag(sv[3][i]) @ E.T              # d(w . c) / dA for symmetric dA, on the lower triangle
        want = U @ Vt + np.tril(sym + sym.T - np.diag(np.diag(sym)))
        np.testing.assert_allclose(g[i], want, atol=1e-12)
    # a rank-deficient QR: a loss of the leading columns of Q and R has its gradient (column 2: zero)
    rng = np.random.default_rng(22)
    for i, k in ((4, 2), (5, 1)):
        seeds = _seeds(rng, 1, "qr3")
        seeds[5][0][:, k:] = 0.0
        seeds[6][0][:, k:] = 0.0
        g = _grad(decomps, D[i:i + 1], seeds)
        np.testing.assert_allclose(g, _numeric(D[i:i + 1], seeds), rtol=1e-6, atol=1e-7)
        assert not g[0][:, k:].any() and np.abs(g).max() > 0.1


@pytest.mark.parametrize("which", ["svd3", "eig3", "qr3"])
def test_undefined_gradients_raise_at_the_line(which):
    D = _degenerate()
    i = {"svd3": 0, "eig3": 2, "qr3": 4}[which]
    seeds = [np.zeros((1, 3) if vec else (1, 3, 3)) for vec in VEC]
    out, idx = {"svd3": (2, (0, 1, 0)), "eig3": (4, (0, 1, 1)), "qr3": (6, (0, 0, 2))}[which]
    seeds[out][idx] = 1.0              # V's column 0 (s0 = s1), E's column 1 (w1 = w2), R's column 2 (r22 = 0)
    with pytest.raises(AssertionError, match=f"gradient of {which}.. is undefined here.*{__file__}:{LINES[which]}"):
        _grad(decomps, D[i:i + 1], seeds)
    # debug mode: the same error, raised at the decomposition's line
    with pytest.raises(AssertionError, match=f"gradient of {which}.. is undefined here") as err:
        _grad(decomps_py, D[i:i + 1], seeds)
    assert any(f.filename == __file__ and f.lineno == LINES[which] for f in traceback.extract_tb(err.tb))


@pytest.mark.skipif(not TEST_ALL, reason="a third build of the kernel: under make test-all")
def test_without_checks_an_undefined_gradient_is_nan():
    D = _degenerate()
    k = tack.kernel(_decomps, checks=False)
    seeds = [np.zeros((6, 3) if vec else (6, 3, 3)) for vec in VEC]
    seeds[0][0, 0, 1] = 1.0                            # U of the repeated singular values: undefined
    seeds[1][1:] = 1.0                                  # the others: only singular values, defined
    g = _grad(k, D, seeds)
    assert np.isnan(g[0]).all() and np.isfinite(g[1:]).all()


def test_adjoint_sources_in_every_dialect():
    """The f32 adjoint is emitted for every target and type-checks as Metal; under make test-all
    NVRTC, ocloc and hiprtc compile it (3, 15 and a few seconds: its source is 160 KB)."""
    from tack import _autodiff_run, _core

    m, outs = tack.array(A[:1].astype(np.float32), tack.mat33), [tack.zeros(1, t) for t in _types(True)]
    adj, bound, names, kinds = _autodiff_run.build(decomps, (m, *outs), {})
    varr = _autodiff_run._varr(decomps, bound, kinds)
    a, _kw = _autodiff_run._adjoint_args(bound, varr)
    grads = [_autodiff_run._components(_autodiff_run._zeros_like(bound.arguments[p]), varr[p], p) for p in names]
    sources = {t: adj.generated_source(*a, *grads, target=t) for t in _core._targets()}
    assert all(sources.values())
    import _gpu_batch
    import _msl
    import _ocloc

    if "metal" in sources and (_msl.clang() is not None or _msl.xcrun()):
        assert _msl.check(sources["metal"]) is None
    if not TEST_ALL:
        return
    if getattr(_core, "_nvrtc_compile", None) is not None:
        try:
            assert _core._nvrtc_compile(_gpu_batch.batch_source([sources["cuda"]])[0], "sm_80")
        except OSError:  # NVRTC's library is not installed
            pass
    if _ocloc.library() is not None:
        rc, out = _ocloc.compile(_ocloc.batch_source([sources["opencl"]])[0], "pvc")
        assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}
    if _core._hiprtc_version() > 0:  # in a process of its own (comgr and PoCL share libLLVM)
        code = ("import sys\nfrom tack import _core\n_core._hiprtc_compile(sys.stdin.read(), 'gfx90a')\n")
        proc = subprocess.run([sys.executable, "-c", code], input=_gpu_batch.batch_source([sources["hip"]])[0],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(not TEST_ALL, reason="the f32 kernel built for the CPU and PoCL: under make test-all")
def test_f32_on_the_cpu_and_on_opencl():
    seeds = _seeds(np.random.default_rng(13), 3)
    g64 = _grad(decomps, A, seeds)
    g32 = _grad(decomps, A, seeds, f32=True)
    np.testing.assert_allclose(g32, g64, rtol=2e-4, atol=2e-4 * np.abs(g64).max())
    ocl = [d for d in tack.devices() if d.startswith("opencl")]
    if ocl:
        np.testing.assert_allclose(_grad(decomps, A, seeds, f32=True, device=ocl[0]), g32, rtol=1e-4,
                                   atol=1e-4 * np.abs(g64).max())
        bad = [np.zeros((1, 3) if vec else (1, 3, 3)) for vec in VEC]
        bad[0][0, 0, 0] = 1.0                          # U of repeated singular values, in f32 on the device
        with pytest.raises(AssertionError, match=f"gradient of svd3.. is undefined here.*:{SVD_LINE}"):
            _grad(decomps, _degenerate()[:1], bad, f32=True, device=ocl[0])


@pytest.mark.skipif(not TEST_ALL, reason="importing torch takes seconds: under make test-all (TACK_TEST_ALL=1)")
def test_against_torch():
    """torch.linalg.svd, eigh and qr on the same matrices: sign-invariant losses for the singular
    vectors and eigenvectors (u_k v_k^T, e_k e_k^T), eigh of the matrix symmetrized from its lower
    triangle (what eig3 reads), and torch's QR made unique as qr3's (R's diagonal >= 0)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    Wsv, Ws, We, Ww = (rng.standard_normal((3, 3, 3, 3)), rng.standard_normal((3, 3)),
                       rng.standard_normal((3, 3, 3, 3)), rng.standard_normal((3, 3)))
    Gq, Gr = rng.standard_normal((3, 3, 3)), rng.standard_normal((3, 3, 3))
    t = torch.tensor(A, requires_grad=True)
    U, S, Vh = torch.linalg.svd(t)
    V = Vh.transpose(1, 2)
    L = (S * torch.tensor(Ws)).sum()
    for k in range(3):                           # u_k v_k^T, invariant under the joint sign of u_k and v_k
        L = L + (torch.einsum("ni,nj->nij", U[:, :, k], V[:, :, k]) * torch.tensor(Wsv[:, k])).sum()
    low = torch.tril(t)
    w, E = torch.linalg.eigh(low + torch.tril(t, -1).transpose(1, 2))
    L = L + (w * torch.tensor(Ww)).sum()
    for k in range(3):
        L = L + (torch.einsum("ni,nj->nij", E[:, :, k], E[:, :, k]) * torch.tensor(We[:, k])).sum()
    Q, R = torch.linalg.qr(t)
    d = torch.sign(torch.diagonal(R, dim1=1, dim2=2)).detach()
    Q, R = Q * d[:, None, :], R * d[:, :, None]
    L = L + (Q * torch.tensor(Gq)).sum() + (R * torch.tensor(Gr)).sum()
    L.backward()
    # the same losses through the adjoint's seeds: dL/dU[:, k] = Wsv_k v_k, dL/dV[:, k] = Wsv_k^T u_k ...
    _m, outs = _outputs(decomps, A)
    Uo, So, Vo, wo, Eo = (o.numpy() for o in outs[:5])
    gU = np.einsum("nkij,njk->nik", Wsv, Vo)
    gV = np.einsum("nkij,nik->njk", Wsv, Uo)
    gE = np.einsum("nkij,njk->nik", We + np.swapaxes(We, 2, 3), Eo)
    seeds = [gU, Ws, gV, Ww, gE, Gq, Gr]
    np.testing.assert_allclose(_grad(decomps, A, seeds), t.grad.numpy(), rtol=1e-10, atol=1e-10)
