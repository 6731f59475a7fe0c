"""The tape beside what it does not differentiate: the parallel primitives (tack.scan, tack.reduce,
tack.sort, ..., a HashGrid's build) called in a tape's block, and losses backward cannot seed.

A primitive runs Tack's own kernels, whose adjoints were never meant to be generated: on a tape
they once made backward raise a CompileError about the primitive's internals, even where the
result was an index or a number printed along the way.  Now the tape notes the call instead of
its launches, and refuses in backward only where a gradient reaches the call's float results
(its inputs would silently get none).  Compiled kernels and debug mode alike.
"""

import numpy as np
import pytest

import _suite
import tack


def _square(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]


def _weighted(c, w, loss):
    for i in range(c.shape[0]):
        loss[0] += w[i] * c[i]


def _pairs(x, grid, e):
    for i in range(x.shape[0]):
        for j in grid.neighbors(x[i], 0.3):
            if j != i:
                r = tack.length(x[i] - x[j])
                if r < 0.3:
                    e[0] += (0.3 - r) ** 2


def _closest(p, mesh, out):
    for i in range(p.shape[0]):
        tri, q = mesh.closest_point(p[i])
        d = p[i] - q
        out[0] += tack.dot(d, d)


KERNELS = {jit: (tack.kernel(jit=jit)(_square), tack.kernel(jit=jit)(_weighted)) for jit in (True, False)}
PAIRS = tack.kernel(_pairs) if _suite.TEST_ALL else None


@pytest.mark.parametrize("jit", [True, False])
def test_primitives_off_the_gradient_path(jit):
    # a sum printed, indices sorted and counted on the tape: backward differentiates the kernels
    square, weighted = KERNELS[jit]
    rng = np.random.default_rng(0)
    xv, w = rng.standard_normal(64), rng.standard_normal(64)
    x = tack.array(xv, tack.f64, requires_grad=True)
    y, loss = tack.zeros(64, tack.f64), tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        square(x, y)
        total = tack.reduce(y)
        order = tack.argsort(y)
        grid = tack.HashGrid(np.asarray(x).reshape(16, 4)[:, :3], 0.5)  # points of f64: its build records nothing
        mesh = tack.Mesh(np.asarray(x).reshape(16, 4)[:, :3], np.array([[0, 1, 2]], np.int32))
        weighted(y, w, loss)
    assert total == pytest.approx(np.sum(xv * xv))
    assert (np.asarray(order) == np.argsort(xv * xv, kind="stable")).all()
    assert grid.permutation.shape == (16,) and mesh.triangles.shape == (1, 3)
    assert len(tape.launches) == 2
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv * w, rtol=1e-14)


@pytest.mark.skipif(not _suite.TEST_ALL, reason="the neighbour loop's adjoint takes a minute to compile: make test-all")
def test_hash_grid_built_on_the_tape():
    # the grid's build (a sort of cell keys) on the tape; the energy's gradient against its closed form
    rng = np.random.default_rng(1)
    xv = rng.random((40, 3))
    x = tack.array(xv, tack.vec3d, requires_grad=True)
    e = tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        grid = tack.HashGrid(x, 0.3)
        PAIRS(x, grid, e)
    tape.backward(e)
    ref = np.zeros((40, 3))
    for i in range(40):
        d = xv[i] - xv
        r = np.linalg.norm(d, axis=1)
        near = (r < 0.3) & (r > 0)
        f = (-2 * (0.3 - r[near]) / r[near])[:, None] * d[near]
        ref[i] += f.sum(0)
        ref[near] -= f
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jit", [True, False])
def test_primitive_result_reaching_the_loss_is_refused(jit):
    square, weighted = KERNELS[jit]
    xv = np.linspace(-1.0, 1.0, 16)
    for name, call in [("tack.scan", tack.scan), ("tack.sort", tack.sort)]:
        x = tack.array(xv, tack.f64, requires_grad=True)
        y, loss = tack.zeros(16, tack.f64), tack.zeros(1, tack.f64)
        with tack.Tape() as tape:
            square(x, y)
            c = call(y)
            weighted(c, np.ones(c.shape[0]), loss)
        with pytest.raises(ValueError, match=rf"{name}\(\) is not differentiated, and the loss depends on its result"):
            tape.backward(loss)
    # the same result with weights of zero: its gradient is zero, so nothing is lost
    x = tack.array(xv, tack.f64, requires_grad=True)
    y, loss = tack.zeros(16, tack.f64), tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        square(x, y)
        weighted(tack.scan(y), np.zeros(16), loss)
    tape.backward(loss)
    assert not x.grad.numpy().any()


def test_backward_of_a_number_or_an_unwritten_loss_is_refused():
    square, weighted = KERNELS[True]
    x = tack.array(np.arange(4.0), tack.f64, requires_grad=True)
    y = tack.zeros(4, tack.f64)
    with tack.Tape() as tape:
        square(x, y)
        total = tack.reduce(y)
    with pytest.raises(TypeError, match=r"not float64 .*a number has no gradient to seed"):
        tape.backward(total)
    loss = tack.zeros(1, tack.f64)
    weighted(y, np.ones(4), loss)  # outside the block: not recorded
    with pytest.raises(ValueError, match="no launch on the tape wrote the loss"):
        tape.backward(loss)
    assert not x.grad.numpy().any()
    # a one-element view of an array a launch wrote is a loss
    out = tack.zeros(3, tack.f64)
    with tack.Tape() as tape:
        square(x, y)
        weighted(y, np.ones(4), out[1:2])
    tape.backward(out[1:2])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.arange(4.0))


def test_spatial_query_refusal_names_the_query():
    # the query's own function has early returns: the refusal says it is Tack's, behind the query
    closest = tack.kernel(_closest)
    verts = tack.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]], tack.vec3d)
    p = tack.array([[0.2, 0.2, 0.5], [0.1, 0.3, -0.4]], tack.vec3d, requires_grad=True)
    out = tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        mesh = tack.Mesh(verts, np.array([[0, 1, 2]], np.int32))
        closest(p, mesh, out)
    assert out.numpy()[0] == pytest.approx(0.41)
    with pytest.raises(tack.CompileError, match=r"(point_triangle\(\) is Tack's own function behind a spatial query "
                                                r"\(such as mesh.closest_point\(\))|(mesh.closest_point\(\) of a vector "
                                                r"value is not differentiated)"):
        tape.backward(out)
