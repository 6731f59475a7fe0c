"""Adjoints of kernels on vectors, matrices and complex numbers (tack._autodiff_scalarize;
docs/differentiation.md, "Vectors, matrices and complex numbers").

Every operation the rewrite supports is checked in ONE adjoint launch against central finite
differences in f64, and debug mode against the compiled adjoint on it, and quaternions the same way; a spring chain stepped with
vec3d on a tape and a soft body's energy (deformation gradients, mat33d) against finite differences
(and, under make test-all, against PyTorch's autograd of the same math); a struct kernel reading
vector fields whole; f32 components; and the refusals.
"""

import cmath
import os

import numpy as np
import pytest

import tack

TEST_ALL = os.environ.get("TACK_TEST_ALL") == "1"


@tack.func
def _pull(a, b, k):
    d = b - a
    return d * (k / (1.0 + tack.dot(d, d)))


def _every_op(x, m, z, w, out, mo, zo, e):
    for i in range(x.shape[0]):
        v = x[i]
        u = tack.vec3d(v.y, 2.0 * v.z, v[0] - 1.0) + tack.vec3d(0.5, 0.5, 0.5)
        a = (v + u) * 0.5 - u / 3.0 + v * u - (-v) / (u + 4.0)
        c = tack.cross(a, v)
        c = tack.cross(c, u)                         # overwritten from itself
        c[2] = c[1] * 0.5 + c[2]                     # one component assigned
        n = tack.normalize(c) if tack.length(c) > 1e-3 else tack.vec3d(0.0, 0.0, 1.0)
        M = m[i]
        R = M @ tack.transpose(M) + tack.outer(v, u) - tack.identity(tack.mat33d) * 2.0 + tack.diag(u)
        q = R @ n + M[0, 1] * v
        acc = tack.vec3d(0.0, 0.0, 0.0)
        for k in range(3):                           # a vector sum in a serial loop, a @tack.func on vectors
            acc += _pull(v, q, 0.5 + k)
        out[i] = q * 0.25 + acc
        mo[i] = M @ M * 0.5 + R * 0.1
        P = tack.mat22d(M[0, 0], M[0, 1], M[1, 0], M[1, 1])
        zz = z[i] * w[i] + 1j
        zq = zz / (w[i] + 2.0) - 0.5 / (zz + 3.0) + 2.0 - zz.conjugate() * 0.25 + np.conj(z[i]) * 0.5
        zq += complex(v.x, u[1])
        zq *= w[i]
        zo[i] = cmath.exp(zq * 0.1) + zq
        e[i] = (tack.dot(a, n) + tack.length(v) + tack.norm(M) + tack.trace(R) + tack.determinant(M)
                + tack.determinant(P) + tack.norm(q - v) + abs(zz) + cmath.phase(zq) + zq.real * zq.imag
                + tack.diag(M)[2])


every_op = tack.kernel(_every_op)
N = 2
_rng = np.random.default_rng(3)
X, M = _rng.standard_normal((N, 3)), _rng.standard_normal((N, 3, 3))
Z, W = (_rng.standard_normal(N) + 1j * _rng.standard_normal(N) for _ in range(2))
GO, GM = _rng.standard_normal((N, 3)), _rng.standard_normal((N, 3, 3))
GZ, GE = _rng.standard_normal(N) + 1j * _rng.standard_normal(N), _rng.standard_normal(N)


def _run(k, X, M, Z, W):
    N = X.shape[0]
    x, m = tack.array(X, tack.vec3d), tack.array(M, tack.mat33d)
    out, mo, zo, e = tack.zeros(N, tack.vec3d), tack.zeros(N, tack.mat33d), np.zeros(N, complex), np.zeros(N)
    k(x, m, Z, W, out, mo, zo, e)
    return x, m, out, mo, zo, e


def _loss(X, M, Z, W):
    _x, _m, out, mo, zo, e = _run(every_op, X, M, Z, W)
    return (np.sum(out.numpy() * GO) + np.sum(mo.numpy() * GM) + np.sum(zo.real * GZ.real + zo.imag * GZ.imag)
            + np.sum(e * GE))


def _grads(k, N=N):
    x, m, out, mo, zo, e = _run(k, X[:N], M[:N], Z[:N], W[:N])
    gx, gm, gz, gw = tack.zeros(N, tack.vec3d), tack.zeros(N, tack.mat33d), np.zeros(N, complex), np.zeros(N, complex)
    seeds = {"out": tack.array(GO[:N], tack.vec3d), "mo": tack.array(GM[:N], tack.mat33d), "zo": GZ[:N].copy(),
             "e": GE[:N].copy()}
    k.adjoint(x, m, Z[:N], W[:N], out, mo, zo, e, grads={"x": gx, "m": gm, "z": gz, "w": gw, **seeds})
    return gx.numpy(), gm.numpy(), gz, gw


def test_every_operation_against_finite_differences_and_debug_mode():
    g = _grads(every_op)
    h = 1e-6
    for j, A in enumerate((X, M, Z, W)):
        num = np.zeros_like(A)
        for idx in np.ndindex(A.shape):
            for d in ((1, 1j) if A.dtype.kind == "c" else (1,)):  # a complex gradient: d/dre + i d/dim
                args = [X, M, Z, W]
                args[j] = A.copy()
                args[j][idx] += h * d
                lp = _loss(*args)
                args[j][idx] -= 2 * h * d
                num[idx] += (lp - _loss(*args)) / (2 * h) * d
        np.testing.assert_allclose(g[j], num, rtol=1e-6, atol=1e-6)
        assert np.abs(g[j]).max() > 1.0  # every input reaches the outputs
    # debug mode: the same adjoint run as Python (on the first element: Python is slow), the same gradients
    for a, b in zip(g, _grads(tack.kernel(_every_op, jit=False), 1)):
        np.testing.assert_array_equal(a[:1], b)


def _quats(q, r, v, out, mo, e):
    for i in range(q.shape[0]):
        a = q[i] * r[i] + q[i] * 0.5 - r[i] / 3.0                 # the Hamilton product, scaling, sums
        b = tack.quatd(a.x, a[1], 2.0 * a.z, a.w - 1.0)
        c = -tack.normalize(b) * tack.quat_inverse(r[i])
        ax = tack.quat_from_axis_angle(v[i], a.w)
        out[i] = tack.quat_rotate(c, v[i]) + tack.quat_rotate_inv(ax * q[i], v[i])
        mo[i] = tack.quat_to_matrix(c * ax)
        e[i] = tack.dot(a, c) + tack.length(b) + tack.quat_identity().w * a.x


def test_quaternions_against_finite_differences_and_debug_mode():
    rng = np.random.default_rng(7)
    n = 2
    Q, R, V = rng.standard_normal((n, 4)), rng.standard_normal((n, 4)), rng.standard_normal((n, 3))
    go, gmo, ge = rng.standard_normal((n, 3)), rng.standard_normal((n, 3, 3)), rng.standard_normal(n)
    compiled = tack.kernel(_quats)

    def run(k, Q, R, V):
        q, r, v = tack.array(Q, tack.quatd), tack.array(R, tack.quatd), tack.array(V, tack.vec3d)
        out, mo, e = tack.zeros(n, tack.vec3d), tack.zeros(n, tack.mat33d), np.zeros(n)
        k(q, r, v, out, mo, e)
        return q, r, v, out, mo, e

    def loss(Q, R, V):
        *_, out, mo, e = run(compiled, Q, R, V)
        return np.sum(out.numpy() * go) + np.sum(mo.numpy() * gmo) + np.sum(e * ge)

    def grads(k):
        q, r, v, out, mo, e = run(k, Q, R, V)
        gq, gr, gv = tack.zeros(n, tack.quatd), tack.zeros(n, tack.quatd), tack.zeros(n, tack.vec3d)
        k.adjoint(q, r, v, out, mo, e, grads={"q": gq, "r": gr, "v": gv, "out": tack.array(go, tack.vec3d),
                                              "mo": tack.array(gmo, tack.mat33d), "e": ge.copy()})
        return gq.numpy(), gr.numpy(), gv.numpy()

    g = grads(compiled)
    h = 1e-6
    for j, A in enumerate((Q, R, V)):
        num = np.zeros_like(A)
        for idx in np.ndindex(A.shape):
            args = [Q, R, V]
            args[j] = A.copy()
            args[j][idx] += h
            lp = loss(*args)
            args[j][idx] -= 2 * h
            num[idx] = (lp - loss(*args)) / (2 * h)
        np.testing.assert_allclose(g[j], num, rtol=1e-6, atol=1e-6)
    for a, b in zip(g, grads(tack.kernel(_quats, jit=False))):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- a spring chain on a tape


@tack.kernel
def chain_step(x, v, k, dt, x1, v1):
    for i in range(x.shape[0]):
        f = tack.vec3d(0.0, -9.8, 0.0)
        if i > 0:
            d = x[i - 1] - x[i]
            ln = tack.length(d)
            f += d * (k[0] * (ln - 1.0) / ln)
        if i < x.shape[0] - 1:
            d = x[i + 1] - x[i]
            ln = tack.length(d)
            f += d * (k[0] * (ln - 1.0) / ln)
        vn = (v[i] + f * dt) * 0.99
        v1[i] = vn
        x1[i] = x[i] + vn * dt


@tack.kernel
def miss(x, target, loss):
    for i in range(x.shape[0]):
        d = x[i] - target[i]
        loss[0] += tack.dot(d, d)


def _chain(X0, V0, K, steps=8, dt=0.05, tape=None):
    n = X0.shape[0]
    xs = [tack.array(X0, tack.vec3d)]
    vs = [tack.array(V0, tack.vec3d)]
    k = np.array([K])
    target = tack.array(np.outer(np.arange(n), [1.0, 0.0, 0.0]) + [0.0, -0.5, 0.0], tack.vec3d)
    loss = np.zeros(1)
    for _ in range(steps):
        xs.append(tack.zeros(n, tack.vec3d))
        vs.append(tack.zeros(n, tack.vec3d))
        chain_step(xs[-2], vs[-2], k, dt, xs[-1], vs[-1])
    miss(xs[-1], target, loss)
    return xs[0], vs[0], k, loss


def _chain_start():
    rng = np.random.default_rng(5)
    X0 = np.outer(np.arange(4.0), [1.1, 0.0, 0.0]) + 0.1 * rng.standard_normal((4, 3))
    V0 = 0.3 * rng.standard_normal((4, 3))
    return X0, V0, 30.0


def test_a_spring_chain_on_a_tape_against_finite_differences():
    X0, V0, K = _chain_start()
    with tack.Tape() as tape:
        x0, v0, k, loss = _chain(X0, V0, K)
    tape.backward(loss)
    gx, gv, gk = tape.gradient(x0), tape.gradient(v0), tape.gradient(k)
    assert gx.dtype == tack.vec3d and tuple(gx.shape) == (4,)
    h = 1e-6

    def f(X, V, K):
        return _chain(X, V, K)[3][0]

    for A, G, j in ((X0, gx.numpy(), 0), (V0, gv.numpy(), 1)):
        num = np.zeros_like(A)
        for idx in np.ndindex(A.shape):
            args = [X0, V0, K]
            args[j] = A.copy()
            args[j][idx] += h
            lp = f(*args)
            args[j][idx] -= 2 * h
            num[idx] = (lp - f(*args)) / (2 * h)
        np.testing.assert_allclose(G, num, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gk[0], (f(X0, V0, K + h) - f(X0, V0, K - h)) / (2 * h), rtol=1e-6)
    if TEST_ALL:  # PyTorch's autograd of the same math
        torch = pytest.importorskip("torch")
        tx, tv, tk = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (X0, V0, np.array(K)))
        x, v = tx, tv
        for _ in range(8):
            f_ = torch.zeros_like(x) + torch.tensor([0.0, -9.8, 0.0], dtype=torch.float64)
            d = x[:-1] - x[1:]                        # from i to i - 1, for i >= 1
            ln = torch.linalg.norm(d, dim=1, keepdim=True)
            pull = d * (tk * (ln - 1.0) / ln)
            f_ = f_ + torch.cat([torch.zeros(1, 3, dtype=torch.float64), pull]) - torch.cat(
                [pull, torch.zeros(1, 3, dtype=torch.float64)])
            v = (v + f_ * 0.05) * 0.99
            x = x + v * 0.05
        target = torch.tensor(np.outer(np.arange(4), [1.0, 0.0, 0.0]) + [0.0, -0.5, 0.0])
        ((x - target) ** 2).sum().backward()
        np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gv.numpy(), tv.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gk[0], tk.grad.item(), rtol=1e-10)


# ---------------------------------------------------------------- a soft body: forces from the energy


@tack.kernel
def neo_hookean(x, tets, rest_inv, vol, mu, lam, energy):
    for t in range(tets.shape[0]):
        a = x[tets[t, 0]]
        ds = tack.mat33d(x[tets[t, 1]] - a, x[tets[t, 2]] - a, x[tets[t, 3]] - a)   # edges as rows
        F = tack.transpose(ds) @ rest_inv[t]                                      # the deformation gradient
        J = tack.determinant(F)
        ic = tack.trace(tack.transpose(F) @ F)
        lj = tack.log(J)
        energy[0] += vol[t] * (0.5 * mu * (ic - 3.0) - mu * lj + 0.5 * lam * lj * lj)


def _soft_body():
    rest = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]], np.int32)
    rest_inv = np.stack([np.linalg.inv((rest[t[1:]] - rest[t[0]]).T) for t in tets])
    vol = np.array([abs(np.linalg.det((rest[t[1:]] - rest[t[0]]).T)) / 6 for t in tets])
    X = rest * [1.2, 0.9, 1.05] + 0.05 * np.random.default_rng(2).standard_normal(rest.shape)
    return X, tets, rest_inv, vol


def test_a_soft_body_energy_gradient_is_minus_the_forces():
    X, tets, rest_inv, vol = _soft_body()
    mu, lam = 2.0, 5.0

    def energy(X):
        e = np.zeros(1)
        neo_hookean(tack.array(X, tack.vec3d), tets, tack.array(rest_inv, tack.mat33d), vol, mu, lam, e)
        return e[0]

    x = tack.array(X, tack.vec3d, requires_grad=True)
    e = np.zeros(1)
    with tack.Tape() as tape:
        neo_hookean(x, tets, tack.array(rest_inv, tack.mat33d), vol, mu, lam, e)
    tape.backward(grads=[(e, np.ones(1))])
    g = x.grad.numpy()
    h = 1e-6
    num = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        Xp, Xm = X.copy(), X.copy()
        Xp[idx] += h
        Xm[idx] -= h
        num[idx] = (energy(Xp) - energy(Xm)) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g.sum(axis=0), 0.0, atol=1e-12)  # internal forces balance
    if TEST_ALL:
        torch = pytest.importorskip("torch")
        tx = torch.tensor(X, requires_grad=True)
        T = torch.tensor(tets.astype(np.int64))
        ds = torch.stack([tx[T[:, 1]] - tx[T[:, 0]], tx[T[:, 2]] - tx[T[:, 0]], tx[T[:, 3]] - tx[T[:, 0]]], dim=1)
        F = ds.transpose(1, 2) @ torch.tensor(rest_inv)
        J = torch.linalg.det(F)
        ic = (F * F).sum(dim=(1, 2))
        lj = torch.log(J)
        (torch.tensor(vol) * (0.5 * mu * (ic - 3.0) - mu * lj + 0.5 * lam * lj * lj)).sum().backward()
        np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- structs, single precision


@tack.struct
class Ball:
    pos: tack.vec3d
    vel: tack.vec3d
    mass: tack.f64


@tack.kernel
def kinetic(b, shift, e):
    for i in range(b.shape[0]):
        v = b[i].vel + shift.vel                    # a field read whole; a struct by value's vector
        e[i] = 0.5 * b[i].mass * tack.dot(v, v) + tack.dot(shift.pos, b[i].pos)


def test_struct_vector_fields_read_whole():
    balls = tack.zeros(3, Ball)
    rec = np.asarray(balls)
    rec["vel"] = [[1.0, 2.0, 2.0], [0.0, 1.0, 0.0], [3.0, 0.0, 4.0]]
    rec["pos"] = [[1.0, 0.0, 0.0]] * 3
    rec["mass"] = [2.0, 1.0, 0.5]
    shift = Ball(pos=tack.vec3d(0.0, 0.0, 1.0), vel=tack.vec3d(1.0, 0.0, 0.0), mass=0.0)
    e = np.zeros(3)
    with tack.Tape() as tape:
        kinetic(balls, shift, e)
    tape.backward(grads=[(e, np.ones(3))])
    g = np.asarray(tape.gradient(balls))
    v = rec["vel"] + [1.0, 0.0, 0.0]
    np.testing.assert_allclose(g["vel"], rec["mass"][:, None] * v)
    np.testing.assert_allclose(g["mass"], 0.5 * (v * v).sum(axis=1))
    np.testing.assert_allclose(g["pos"], [[0.0, 0.0, 1.0]] * 3)


@tack.kernel
def single(x, m, z, out, zo):
    for i in range(x.shape[0]):
        v = m[i] @ x[i]
        out[i] = tack.length(v)
        zo[i] = z[i] * z[i]


def test_f32_components():
    rng = np.random.default_rng(4)
    X, Mm = rng.standard_normal((3, 2)), rng.standard_normal((3, 2, 2))
    Zc = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    x, m = tack.array(X, tack.vec2, requires_grad=True), tack.array(Mm, tack.mat22, requires_grad=True)
    z = Zc.astype(np.complex64)
    out, zo = np.zeros(3, np.float32), np.zeros(3, np.complex64)
    gz = np.zeros(3, np.complex64)
    single(x, m, z, out, zo)
    single.adjoint(x, m, z, out, zo, grads={"z": gz, "out": np.ones(3, np.float32), "zo": np.ones(3, np.complex64)})
    v = np.einsum("nij,nj->ni", Mm, X)
    ln = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(x.grad.numpy(), np.einsum("nij,ni->nj", Mm, v / ln[:, None]), rtol=1e-5)
    np.testing.assert_allclose(m.grad.numpy(), (v / ln[:, None])[:, :, None] * X[:, None, :], rtol=1e-5)
    # a seed of 1 on zo: d/dre + i d/dim of re(z^2) = a^2 - b^2 is 2a - 2ib, 2 conj(z)
    np.testing.assert_allclose(gz, 2 * np.conj(Zc), rtol=1e-5)


def _computed_index(x, j, out):
    for i in range(x.shape[0]):
        v = x[i]
        v[j[i]] = 2.0 * v[j[i]] * v[(j[i] + 1) % 3]           # a component chosen at run time, read and written
        v[(j[i] + 2) % 3] += v.x
        out[i] = v[j[i]] * v[(j[i] + 2) % 3] + v.y


def _fd(loss, arrays, h=1e-6):
    """Central differences of loss(*arrays) with respect to each array."""
    out = []
    for w, A in enumerate(arrays):
        num = np.zeros_like(A)
        for idx in np.ndindex(A.shape):
            args = [a.copy() for a in arrays]
            args[w][idx] += h
            up = loss(*args)
            args[w][idx] -= 2 * h
            num[idx] = (up - loss(*args)) / (2 * h)
        out.append(num)
    return out


def test_a_component_chosen_by_a_computed_index():
    """v[j] read and written with j computed (a select over the components) against central finite
    differences, debug mode equal to the compiled adjoint; an index out of range, which the forward
    refuses, gives NaN in the adjoint rather than another component's gradient."""
    rng = np.random.default_rng(5)
    X, J, G = rng.standard_normal((3, 3)), np.array([0, 1, 2]), rng.standard_normal(3)
    kern = tack.kernel(_computed_index)

    def grad(k, J):
        gx = tack.zeros(3, tack.vec3d)
        k.adjoint(tack.array(X, tack.vec3d), J, np.zeros(3), grads={"x": gx, "out": G.copy()})
        return gx.numpy()

    def loss(X):
        o = np.zeros(3)
        kern(tack.array(X, tack.vec3d), J, o)
        return float(o @ G)

    g = grad(kern, J)
    np.testing.assert_allclose(g, _fd(loss, [X])[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(grad(tack.kernel(_computed_index, jit=False), J), g)
    bad = grad(kern, np.array([0, 1, 5]))
    np.testing.assert_array_equal(bad[:2], g[:2])
    assert np.isnan(bad[2]).any()


def _slerp_transforms(a, b, s, tr, u, v, m, out, to):
    for i in range(v.shape[0]):
        q = tack.quat_slerp(a[i], b[i], s[i]) * tack.quat_from_matrix(m[i])
        t = tr[i]                                   # a transform local named t (the generator's temporaries are t·N)
        c = t * tack.transformd(tack.vec3d(0.5, v[i].x, 1.0), q) * tack.transform_inverse(u[i])
        out[i] = tack.transform_point(c, v[i]) + tack.transform_vector(t, v[i]) * t.p.y + tack.quat_rotate(c.q, t.p)
        to[i] = tack.transform_inverse(c)


def _slerp_transform_small(a, b, s, tr, u, v, m, out, to):
    for i in range(v.shape[0]):
        t = tr[i]
        out[i] = tack.transform_point(t, v[i])
        to[i] = tack.transformd(u[i].p, tack.quat_slerp(a[i], b[i], s[i]) * tack.quat_from_matrix(m[i]))


@pytest.mark.parametrize("func", [_slerp_transform_small, pytest.param(_slerp_transforms, marks=pytest.mark.skipif(
    not TEST_ALL, reason="every transform operation: a larger adjoint to compile (make test-all)"))])
def test_slerp_from_matrix_and_transforms(func):
    """tack.quat_slerp (ends of any length, the shorter arc, equal rotations where sin th = 0),
    tack.quat_from_matrix (each of its four branches: the trace, m00, m11, m22 largest) and the
    transforms (t * u, transform_point, transform_vector, transform_inverse, t.p, t.q) against central
    finite differences, debug mode equal to the compiled adjoint."""
    rng = np.random.default_rng(11)
    n = 4
    A, B, S = rng.standard_normal((n, 4)), rng.standard_normal((n, 4)), rng.random(n)
    B[1] = -2.0 * A[1]                              # the same rotation, antipodal: the angle is 0
    B[2] = 0.5 * A[2]                               # the same rotation
    B[3] = -B[3] if A[3] @ B[3] > 0 else B[3]       # the shorter arc negates b
    T, U, V = rng.standard_normal((n, 7)), rng.standard_normal((n, 7)), rng.standard_normal((n, 3))
    G, GT = rng.standard_normal((n, 3)), rng.standard_normal((n, 7))
    c, s_ = np.cos(0.2), np.sin(0.2)
    turn = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])
    signs = ((1.0, 1.0, 1.0), (1.0, -1.0, -1.0), (-1.0, 1.0, -1.0), (-1.0, -1.0, 1.0))
    Mq = np.array([np.diag(d) for d in signs]) @ turn
    Mq += 0.01 * rng.standard_normal(Mq.shape)      # near rotations, each branch of quat_from_matrix in turn
    types = (tack.quatd, tack.quatd, None, tack.transformd, tack.transformd, tack.vec3d, tack.mat33d)
    kern = tack.kernel(func)

    def args(arrays):
        return [a if t is None else tack.array(a, t) for a, t in zip(arrays, types)] + [
            tack.zeros(n, tack.vec3d), tack.zeros(n, tack.transformd)]

    def loss(*arrays):
        a = args(arrays)
        kern(*a)
        return float(np.sum(a[-2].numpy() * G) + np.sum(a[-1].numpy() * GT))

    def grads(k):
        gs = [np.zeros(n) if t is None else tack.zeros(n, t) for t in types]
        seeds = {"out": tack.array(G, tack.vec3d), "to": tack.array(GT, tack.transformd)}
        k.adjoint(*args((A, B, S, T, U, V, Mq)), grads={**dict(zip(("a", "b", "s", "tr", "u", "v", "m"), gs)), **seeds})
        return [g if isinstance(g, np.ndarray) else g.numpy() for g in gs]

    g = grads(kern)
    for got, num in zip(g, _fd(loss, [A, B, S, T, U, V, Mq])):
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-7)
    for a, b in zip(g, grads(tack.kernel(func, jit=False))):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- refusals


@tack.kernel
def _inverse(m, x, out, det):
    for i in range(m.shape[0]):
        out[i] = tack.inverse(m[i]) @ x[i]


@tack.kernel
def _inverse_det(m, x, out, det):                   # 4x4: the determinant too (2x2, 3x3: test_every_operation...)
    for i in range(m.shape[0]):
        out[i] = tack.inverse(m[i]) @ x[i]
        det[i] = tack.determinant(m[i])


@pytest.mark.parametrize("n", [2, 3, pytest.param(4, marks=pytest.mark.skipif(
    not TEST_ALL, reason="a 4x4 inverse's adjoint takes seconds to generate and compile (make test-all)"))])
def test_inverse_and_determinant_of_2x2_3x3_and_4x4_matrices(n):
    """tack.inverse and tack.determinant of mat22d, mat33d and mat44d against central finite
    differences (d(A^-1) = -A^-1 dA A^-1), debug mode equal to the compiled adjoint, and a singular
    matrix (its inverse the zero matrix, as the forward's) with gradient zero."""
    rng = np.random.default_rng(7)
    mt, vt = {2: (tack.mat22d, tack.vec2d), 3: (tack.mat33d, tack.vec3d), 4: (tack.mat44d, tack.vec4d)}[n]
    M = rng.random((3, n, n)) + 2.0 * np.eye(n)
    M[2] = 1.0                                  # singular: determinant exactly 0
    X = rng.random((3, n))
    seed, dseed = rng.random((3, n)), rng.random(3 if n == 4 else 1)
    dseed[2:] = 0.0                             # the singular matrix: only its inverse's (zero) gradient
    got = []
    kern = _inverse_det if n == 4 else _inverse
    for k in (kern, tack.kernel(kern.__wrapped__, jit=False)):
        gm, gx = tack.zeros(3, mt), tack.zeros(3, vt)
        k.adjoint(tack.array(M, mt), tack.array(X, vt), tack.zeros(3, vt), np.zeros(dseed.size),
                  grads={"m": gm, "x": gx, "out": tack.array(seed, vt), "det": dseed.copy()})
        got.append((gm.numpy(), gx.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-15)

    def loss(M, X):
        o, d = tack.zeros(3, vt), np.zeros(dseed.size)
        kern(tack.array(M, mt), tack.array(X, vt), o, d)
        return float(np.sum(o.numpy() * seed) + (d @ dseed if n == 4 else 0.0))

    h = 1e-6
    for which, arr in ((0, M), (1, X)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            if which == 0 and idx[0] == 2:
                continue                        # the singular matrix: a step makes it invertible
            up, dn = arr.copy(), arr.copy()
            up[idx] += h
            dn[idx] -= h
            args_up = (up, X) if which == 0 else (M, up)
            args_dn = (dn, X) if which == 0 else (M, dn)
            num[idx] = (loss(*args_up) - loss(*args_dn)) / (2 * h)
        np.testing.assert_allclose(got[0][which], num, rtol=1e-6, atol=1e-8, err_msg=f"{n}x{n} {which}")
    assert not got[0][0][2].any() and not got[0][1][2].any()   # the zero matrix: no gradient


@tack.kernel
def _f16_local_array(x, out):
    for i in range(x.shape[0]):
        t = np.zeros(2, np.float16)                 # 16-bit floats: computed in f32 instead
        t[0] = x[i].x
        out[i] = tack.vec3d(float(t[0]))


@tack.func
def _kick(x, v, dt):
    v2 = v - x * dt
    return x + v2 * dt, v2


@tack.kernel
def _kicked(x0, v0, out):
    for i in range(x0.shape[0]):
        x, v = _kick(x0[i], v0[i], 0.1)          # two vectors returned: refused, by name
        out[i] = x + v


def _refusal_cases():
    v3 = tack.ones(2, tack.vec3d)
    return [
        (_f16_local_array, (tack.ones(3, tack.vec3d), tack.zeros(3, tack.vec3d)), "'t' is a local array of f16: "
                                                                                  "only local arrays of f32, f64"),
        (_kicked, (v3, v3, tack.zeros(2, tack.vec3d)), "_kick() returns several values, a vector, matrix or "
                                                       "complex number among them: not differentiated yet"),
    ]


@pytest.mark.parametrize("case", range(2))  # svd3, eig3 and qr3 are differentiated (test_autodiff_decomp.py)
def test_refusals_name_the_line(case):
    kern, args, msg = _refusal_cases()[case]
    with pytest.raises(tack.CompileError) as err:
        kern.adjoint(*args)
    assert msg in str(err.value), str(err.value)
    assert "line" in str(err.value)


def test_a_gradient_of_another_type_is_refused():
    x, out = tack.ones(2, tack.vec3d), np.zeros(2)
    with pytest.raises(TypeError, match="the gradient of an array of vec3 .f64 components. is an array of the "
                                        "same type"):
        miss.adjoint(x, x, out, grads={"x": np.zeros(2)})


def test_a_gradient_given_as_components_and_a_strided_array():
    x, loss = tack.array([[1.0, 2.0, 2.0], [0.0, 3.0, 4.0]], tack.vec3d), np.zeros(1)
    target = tack.zeros(2, tack.vec3d)
    gx = np.zeros((2, 3))                      # the components of a vec3d array's gradient, as NumPy has them
    miss.adjoint(x, target, loss, grads={"x": gx, "loss": np.ones(1)})
    np.testing.assert_allclose(gx, 2 * x.numpy())
    xs = tack.zeros(4, tack.vec3d)[::2]        # a strided view: refused, not read wrong
    with pytest.raises(ValueError, match="strided view of vec3d elements"):
        miss.adjoint(xs, target, loss)


def test_adjoint_sources_in_every_dialect():
    """The adjoint of a kernel on vec2, mat22 and complex64 arrays is emitted for every target, and
    compiles with NVRTC and type-checks as Metal where those are installed."""
    from tack import _autodiff_run, _core

    args = (tack.zeros(3, tack.vec2), tack.zeros(3, tack.mat22), np.zeros(3, np.complex64), np.zeros(3, np.float32),
            np.zeros(3, np.complex64))
    adj, bound, names, kinds = _autodiff_run.build(single, args, {})
    varr = _autodiff_run._varr(single, bound, kinds)
    a, kw = _autodiff_run._adjoint_args(bound, varr)
    grads = [_autodiff_run._components(_autodiff_run._zeros_like(bound.arguments[p]), varr[p], p) if p in varr
             else np.zeros_like(bound.arguments[p]) for p in names]
    sources = {t: adj.generated_source(*a, *grads, target=t) for t in _core._targets()}
    assert all(sources.values())
    if getattr(_core, "_nvrtc_compile", None) is not None:
        import _gpu_batch

        try:
            assert _core._nvrtc_compile(_gpu_batch.batch_source([sources["cuda"]])[0], "sm_80")
        except OSError:  # NVRTC's library is not installed
            pass
    import _msl

    if "metal" in sources and (_msl.clang() is not None or _msl.xcrun()):
        assert _msl.check(sources["metal"]) is None
