"""What a trial port of Warp programs to Tack found (docs/warp.md).

A Warp step stores a new velocity and reads it back in the next line (`vn[i] = v[i] + a * dt;
xn[i] = x[i] + vn[i] * dt`); the adjoint generator refused the read as an array read and
overwritten, though the read sees the value just stored (tack._autodiff_forward).  Checked on a
tape against central finite differences, compiled and in debug mode, for f64 scalar arrays and
vec3d arrays, and the reads the rewrite must leave to the refusal.
"""

import numpy as np
import pytest

import tack


def _step_vec(x, v, xn, vn, dt, drag):
    for i in range(x.shape[0]):
        a = tack.vec3d(0.0, -9.8, 0.0) - drag * tack.length(v[i]) * v[i]
        vn[i] = v[i] + a * dt
        xn[i] = x[i] + vn[i] * dt          # reads the element stored just above


def _step_scalar(x, v, xn, vn, dt):
    for i in range(x.shape[0]):
        vn[i] = v[i] - dt * x[i] * x[i]
        s = vn[i] * dt
        xn[i] = x[i] + s + 0.5 * vn[i]     # two statements on: still the stored value


def _miss(x, target, loss):
    for i in range(x.shape[0]):
        d = x[i] - target[0]
        loss[0] += tack.dot(d, d)


def _sq(x, loss):
    for i in range(x.shape[0]):
        loss[0] += x[i] * x[i]


def _simulate_vec(step, miss, v0, steps=6):
    x = tack.zeros(2, tack.vec3d)
    v = tack.array(v0, tack.vec3d, requires_grad=True)
    loss, target = tack.zeros(1, tack.f64), tack.array([[3.0, 0.0, 1.0]], tack.vec3d)
    first = v
    with tack.Tape() as tape:
        for _ in range(steps):
            xn, vn = tack.zeros(2, tack.vec3d), tack.zeros(2, tack.vec3d)
            step(x, v, xn, vn, 0.05, 0.1)
            x, v = xn, vn
        miss(x, target, loss)
    return tape, loss, first


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_a_stored_vector_read_back_is_differentiated(jit):
    step = tack.kernel(jit=jit)(_step_vec)
    miss = tack.kernel(jit=jit)(_miss)
    v0 = np.array([[2.0, 5.0, 1.0], [1.0, 3.0, -0.5]])
    tape, loss, v = _simulate_vec(step, miss, v0)
    tape.backward(loss)
    got, h = v.grad.numpy(), 1e-6
    want = np.zeros_like(v0)
    for k in range(2):
        for c in range(3):
            e = np.zeros_like(v0)
            e[k, c] = h
            lp = _simulate_vec(step, miss, v0 + e)[1].numpy()[0]
            lm = _simulate_vec(step, miss, v0 - e)[1].numpy()[0]
            want[k, c] = (lp - lm) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_a_stored_number_read_back_is_differentiated(jit):
    step = tack.kernel(jit=jit)(_step_scalar)
    sq = tack.kernel(jit=jit)(_sq)
    x0, v0, dt = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -0.5]), 0.1
    x, v = x0.copy(), tack.array(v0, tack.f64, requires_grad=True)
    xn, vn, loss = np.zeros(3), np.zeros(3), np.zeros(1)
    with tack.Tape() as tape:
        step(x, v, xn, vn, dt)
        sq(xn, loss)
    tape.backward(loss)
    vnv = v0 - dt * x0 * x0
    np.testing.assert_allclose(xn, x0 + vnv * dt + 0.5 * vnv, rtol=1e-15)   # the forward is unchanged
    np.testing.assert_allclose(v.grad.numpy(), 2 * xn * (dt + 0.5), rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(x), 2 * xn * (1 - 2 * dt * x0 * (dt + 0.5)), rtol=1e-14)


@tack.struct
class Ball:
    pos: tack.vec3d
    vel: tack.vec3d


def _struct_step(b, bn, dt):
    for i in range(b.shape[0]):
        bn[i].vel = b[i].vel + tack.vec3d(0.0, -9.8, 0.0) * dt
        bn[i].pos = b[i].pos + bn[i].vel * dt    # a field stored component by component, read back


def _height(b, loss):
    for i in range(b.shape[0]):
        loss[0] += b[i].pos.y * b[i].pos.y


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_a_stored_struct_field_read_back_is_differentiated(jit):
    step, height = tack.kernel(jit=jit)(_struct_step), tack.kernel(jit=jit)(_height)
    b, bn, loss, dt = tack.zeros(3, Ball), tack.zeros(3, Ball), np.zeros(1), 0.1
    rec = np.asarray(b)
    rec["pos"] = [[0.0, 1.0, 0.0], [1.0, -0.5, 2.0], [0.5, 0.25, 0.0]]
    rec["vel"] = [[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [-1.0, 0.0, 3.0]]
    with tack.Tape() as tape:
        step(b, bn, dt)
        height(bn, loss)
    tape.backward(loss)
    y = rec["pos"][:, 1] + (rec["vel"][:, 1] - 9.8 * dt) * dt
    np.testing.assert_allclose(np.asarray(bn)["pos"][:, 1], y, rtol=1e-15)
    g = np.asarray(tape.gradient(b))
    np.testing.assert_allclose(g["vel"][:, 1], 2 * y * dt, rtol=1e-14)
    np.testing.assert_allclose(g["pos"][:, 1], 2 * y, rtol=1e-14)
    assert not g["vel"][:, [0, 2]].any() and not g["pos"][:, [0, 2]].any()


def test_reads_the_store_may_not_have_made_are_still_refused():
    @tack.kernel
    def in_place(x, v, dt):                     # v[i] read before it is stored: its old value is gone
        for i in range(x.shape[0]):
            v[i] = v[i] - dt * x[i]
            x[i] = x[i] + v[i] * dt

    @tack.kernel
    def past_a_store(x, vn, w, out, dt):        # w may be vn: the search stops at any element stored
        for i in range(x.shape[0]):
            vn[i] = x[i] * dt
            w[i] = 1.0
            out[i] = vn[i]

    @tack.kernel
    def after_a_branch(x, vn, out, dt):         # an if between the store and the read: not followed
        for i in range(x.shape[0]):
            vn[i] = x[i] * dt
            if x[i] > 0.0:
                vn[i] = 0.0
            out[i] = vn[i] * 2.0

    x = np.array([1.0, -2.0, 3.0])
    for k, args in ((in_place, (x, x.copy(), 0.1)), (past_a_store, (x, np.zeros(3), np.zeros(3), np.zeros(3), 0.1)),
                    (after_a_branch, (x, np.zeros(3), np.zeros(3), 0.1))):
        with pytest.raises(tack.CompileError, match="is read .* and overwritten"):
            k.adjoint(*args, grads={})


def _warp_tid(v, e):
    for t in range(v.shape[0]):
        i = tack.tid()
        e[i] = 0.0


def _warp_length_sq(v, e):
    for i in range(v.shape[0]):
        e[i] = tack.length_sq(v[i])


def _warp_select(v, e):
    for i in range(v.shape[0]):
        e[i] = tack.select(v[i].x > 0.0, 1.0, 2.0)


def _warp_ray(v, e):
    for i in range(v.shape[0]):
        q = tack.mesh_query_ray(0, v[i], v[i], 1.0)
        e[i] = 0.0


WARP_NAMES = [
    (_warp_tid, "tack.tid", r"module 'tack' has no attribute 'tid': a kernel has no thread index: .*'for i in "
                            r"range\(n\):' at the top level of the kernel \(wp.launch's dim=n\)"),
    (_warp_length_sq, "tack.length_sq", r"'length_sq': Warp's wp.length_sq\(v\) is tack.dot\(v, v\)"),
    (_warp_select, "tack.select", r"'select': Warp's wp.select\(c, a, b\), b where c holds and a where not, is "
                                  r"Python's 'b if c else a'"),
    (_warp_ray, "tack.mesh_query_ray", r"'tri, t, u, v = mesh.ray_closest\(origin, direction\)' of a tack.Mesh"),
]


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "debug"])
def test_warp_names_say_what_to_write(jit):
    v, e = tack.zeros(3, tack.vec3), np.zeros(3, np.float32)
    for fn, at, msg in WARP_NAMES:
        with pytest.raises(tack.CompileError, match=msg) as err:
            tack.kernel(fn, jit=jit)(v, e)
        assert at in err.value.text, (fn.__name__, err.value.text)
    with pytest.raises(AttributeError, match=r"Warp's wp.cw_mul\(a, b\) is a \* b"):
        tack.cw_mul                                       # noqa: B018 -- outside a kernel too
    with pytest.raises(AttributeError, match=r"^module 'tack' has no attribute 'no_such_name'$"):
        tack.no_such_name                                 # noqa: B018
