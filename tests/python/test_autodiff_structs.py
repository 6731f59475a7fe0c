"""Adjoints of kernels on structs (tack._autodiff_structs; docs/differentiation.md, "Structs").

A struct launch is differentiated through its struct build, on the leaves: the gradient of a
struct array is a struct array of the same type whose float leaves hold the leaves' gradients.
Checked against gradients written by hand and central finite differences, on a tape over several
steps, in debug mode, nested structs in f32, and the refusals.
"""

import numpy as np
import pytest

import tack


@tack.struct
class Particle:
    pos: tack.vec3d
    vel: tack.vec3d
    mass: tack.f64
    alive: bool


@tack.struct
class Sphere:
    radius: tack.f32
    kind: tack.i8


@tack.struct
class Body:
    centre: tack.vec3
    shape: Sphere


def _energy(p, dt, e):
    for i in range(p.shape[0]):
        if p[i].alive:
            vx = p[i].vel.x
            e[i] = 0.5 * p[i].mass * (vx * vx + p[i].vel.y * p[i].vel.y + p[i].vel.z ** 2) + p[i].pos.z * dt


energy = tack.kernel(_energy)


@tack.kernel
def drift(p, dt, q):
    for i in range(p.shape[0]):
        q[i].pos.x = p[i].pos.x + dt * p[i].vel.x
        q[i].pos.y = p[i].pos.y + dt * p[i].vel.y * p[i].mass
        q[i].pos.z = tack.sin(p[i].pos.z) + dt
        q[i].vel.x = p[i].vel.x
        q[i].vel.y = p[i].vel.y
        q[i].vel.z = p[i].vel.z
        q[i].mass = p[i].mass
        q[i].alive = p[i].alive


def _particles(n, seed=0):
    rng = np.random.default_rng(seed)
    rec = np.zeros(n, Particle.dtype)
    rec["pos"] = rng.random((n, 3))
    rec["vel"] = rng.random((n, 3)) - 0.5
    rec["mass"] = rng.random(n) + 0.5
    rec["alive"] = rng.random(n) < 0.7
    return rec


def _energy_grads(rec, dt):
    alive = rec["alive"].astype(float)
    g = np.zeros_like(rec)
    g["vel"] = alive[:, None] * rec["mass"][:, None] * rec["vel"]
    g["mass"] = alive * 0.5 * (rec["vel"] ** 2).sum(1)
    g["pos"][:, 2] = alive * dt
    return g


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_adjoint_of_a_struct_kernel_fills_the_float_leaves(jit):
    rec = _particles(9)
    k = energy if jit else tack.kernel(jit=False)(_energy)
    p = tack.asarray(rec, dtype=Particle)
    gp = tack.zeros(9, Particle)
    gp_before = np.asarray(gp).copy()
    k.adjoint(p, 0.3, np.zeros(9), grads={"p": gp, "e": np.ones(9)})
    got, want = np.asarray(gp), _energy_grads(rec, 0.3)
    for f in ("pos", "vel", "mass"):
        np.testing.assert_allclose(got[f], want[f], rtol=1e-13, atol=1e-15, err_msg=f)
    assert not got["alive"].any() and not gp_before["mass"].any()
    # accumulates, as every adjoint does
    k.adjoint(p, 0.3, np.zeros(9), grads={"p": gp, "e": np.ones(9)})
    np.testing.assert_allclose(np.asarray(gp)["vel"], 2 * want["vel"], rtol=1e-13)
    # a record array of the struct's dtype is a gradient too; the forward's records are untouched
    g2 = np.zeros(9, Particle.dtype)
    k.adjoint(rec, 0.3, np.zeros(9), grads={"p": g2, "e": np.ones(9)})
    np.testing.assert_allclose(g2["mass"], want["mass"], rtol=1e-13)
    np.testing.assert_array_equal(rec, _particles(9))


def test_finite_differences_of_a_struct_kernel():
    rec, dt, h = _particles(4, seed=3), 0.25, 1e-6
    rec["alive"] = True
    seed = np.array([0.5, -1.0, 2.0, 1.5])
    g = np.zeros(4, Particle.dtype)
    drift.adjoint(rec, dt, np.zeros(4, Particle.dtype), grads={"p": g, "q": _seeded(seed)})

    def loss(r):
        q = np.zeros(4, Particle.dtype)
        drift(r, dt, q)
        return float((seed * (q["pos"].sum(1) + q["vel"].sum(1) + q["mass"])).sum())

    for field, comp in (("pos", 2), ("vel", 1), ("mass", None), ("pos", 0)):
        for i in range(4):
            up, down = rec.copy(), rec.copy()
            if comp is None:
                up[field][i] += h
                down[field][i] -= h
                got = g[field][i]
            else:
                up[field][i, comp] += h
                down[field][i, comp] -= h
                got = g[field][i, comp]
            fd = (loss(up) - loss(down)) / (2 * h)
            assert abs(got - fd) < 1e-6 * max(1.0, abs(fd)), (field, comp, i, got, fd)


def _seeded(seed):
    """A struct seed: every float leaf of record i seeded with seed[i]."""
    s = np.zeros(len(seed), Particle.dtype)
    s["pos"] = seed[:, None]
    s["vel"] = seed[:, None]
    s["mass"] = seed
    return s


def test_a_tape_over_struct_steps():
    """Three drift steps on a tape (each into a struct array of its own), then the energy: the
    gradient of the first particles is a struct array, equal to the adjoints chained by hand."""
    rec, dt = _particles(6, seed=5), 0.1
    p0 = tack.asarray(rec, dtype=Particle)
    ps = [p0] + [tack.zeros(6, Particle) for _ in range(3)]
    e = np.zeros(6)
    with tack.Tape() as tape:
        for a, b in zip(ps, ps[1:]):
            drift(a, dt, b)
        energy(ps[-1], dt, e)
    tape.backward(grads=[(e, np.ones(6))])
    g0 = tape.gradient(p0)
    assert isinstance(g0, tack.StructArray) and g0.dtype is Particle and g0.shape == (6,)

    # the same chain by hand, one adjoint at a time
    g = _energy_grads(np.asarray(ps[-1]), dt)
    for a, b in reversed(list(zip(ps, ps[1:]))):
        ga = np.zeros(6, Particle.dtype)
        drift.adjoint(a, dt, b, grads={"p": ga, "q": g})
        g = ga
    for f in ("pos", "vel", "mass"):
        np.testing.assert_allclose(np.asarray(g0)[f], g[f], rtol=1e-12, atol=1e-15, err_msg=f)
    assert tape.gradient(tack.zeros(2, Particle)) is None  # a struct array the tape never saw

    # seeded with a struct: every float leaf of the last particles
    with tack.Tape() as tape2:
        drift(p0, dt, ps[1])
    tape2.backward(grads=[(ps[1], _seeded(np.ones(6)))])
    want = np.zeros(6, Particle.dtype)
    drift.adjoint(p0, dt, ps[1], grads={"p": want, "q": _seeded(np.ones(6))})
    np.testing.assert_allclose(np.asarray(tape2.gradient(p0))["pos"], want["pos"], rtol=1e-13)


@tack.kernel
def _sizes(b, probe, out):
    for i in range(b.shape[0]):
        r = b[i].shape.radius + probe.radius
        out[i] = r * r * b[i].centre.x


def test_nested_structs_in_single_precision():
    n = 5
    b = tack.zeros(n, Body)
    rec = np.asarray(b)
    rec["shape"]["radius"] = np.arange(1, n + 1)
    rec["shape"]["kind"] = 3
    rec["centre"] = 2.0
    probe = Sphere(radius=0.5, kind=1)  # by value
    gb = tack.zeros(n, Body)
    _sizes.adjoint(b, probe, np.zeros(n, np.float32), grads={"b": gb, "out": np.ones(n, np.float32)})
    got = np.asarray(gb)
    r = np.arange(1, n + 1) + 0.5
    np.testing.assert_allclose(got["shape"]["radius"], 2 * r * 2.0, rtol=1e-6)
    np.testing.assert_allclose(got["centre"][:, 0], r * r, rtol=1e-6)
    assert not got["centre"][:, 1:].any() and not got["shape"]["kind"].any()
    with pytest.raises(TypeError, match="'probe' is a struct passed by value: its gradient is not returned"):
        _sizes.adjoint(b, probe, np.zeros(n, np.float32), grads={"probe": gb})


def test_a_struct_gradient_of_the_wrong_kind_is_refused():
    p = tack.zeros(3, Particle)
    for bad, words in ((np.zeros(3), "is a ndarray: a struct array's gradient is a struct array of Particle"),
                       (tack.zeros(3, Sphere), "holds Sphere records, not Particle")):
        with pytest.raises(TypeError, match=words):
            energy.adjoint(p, 0.1, np.zeros(3), grads={"p": bad})
    with pytest.raises(TypeError, match="not float array or float scalar parameters"):
        energy.adjoint(p, 0.1, np.zeros(3), grads={"nope": np.zeros(3)})


def _has_opencl():
    try:
        return any(str(d).startswith("opencl") for d in tack.devices())
    except Exception:  # noqa: BLE001 -- no driver: no device
        return False


@pytest.mark.skipif(not _has_opencl(), reason="no OpenCL device (Debian: pocl-opencl-icd)")
def test_a_tape_over_struct_steps_on_opencl():
    """The struct arrays on an OpenCL device: tape.gradient assembles the leaves' gradients into a
    struct array there, and a struct seed seeds the leaves from its strided device views (each was
    a BufferError: a whole-array copy into or out of a leaf's strided view)."""
    rec, dt, dev = _particles(6, seed=5), 0.1, "opencl:0"
    p0 = tack.array(rec, dtype=Particle, device=dev)
    p1 = tack.zeros(6, Particle, device=dev)
    e = tack.zeros(6, tack.f64, device=dev)
    with tack.Tape() as tape:
        drift(p0, dt, p1)
        energy(p1, dt, e)
    tape.backward(grads=[(e, tack.array(np.ones(6), tack.f64, device=dev))])
    g0 = tape.gradient(p0)
    assert isinstance(g0, tack.StructArray) and g0.dtype is Particle and g0.device == dev
    want = np.zeros(6, Particle.dtype)
    drift.adjoint(rec, dt, np.asarray(p1.numpy()), grads={"p": want, "q": _energy_grads(p1.numpy(), dt)})
    got = g0.numpy()
    for f in ("pos", "vel", "mass"):
        np.testing.assert_allclose(got[f], want[f], rtol=1e-12, atol=1e-15, err_msg=f)
    assert not got["alive"].any()

    with tack.Tape() as tape2:
        drift(p0, dt, p1)
    tape2.backward(grads=[(p1, tack.array(_seeded(np.ones(6)), dtype=Particle, device=dev))])
    want = np.zeros(6, Particle.dtype)
    drift.adjoint(rec, dt, p1.numpy(), grads={"p": want, "q": _seeded(np.ones(6))})
    np.testing.assert_allclose(tape2.gradient(p0).numpy()["pos"], want["pos"], rtol=1e-13)
