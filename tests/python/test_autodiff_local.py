"""Adjoints of kernels with local arrays and serial loops that carry values (tack._autodiff_local).

Every gradient is checked against central finite differences in f64, and debug mode's adjoint
(jit=False) against the compiled one; a sub-stepped integrator with a local state array also
against PyTorch's autograd under make test-all.  Trip counts 0, 1 and several are each checked
(the replay must be right for every one), and a sum read inside its loop, which the independent
replay differentiated wrong before, against its closed form."""

import numpy as np
import pytest

import _suite
from _adjoint_check import check as _check, fd as _fd
import tack

TAPS = 3
_ALL = pytest.mark.skipif(not _suite.TEST_ALL, reason="one more kernel and its adjoint to build: under make test-all")


@tack.kernel
def fill_and_read(x, w, y):
    for i in range(y.shape[0]):
        t = np.zeros(3)                         # filled by a serial loop, read back by another
        for j in range(3):
            t[j] = x[i, j] * w[j]
        m = np.zeros((2, 3))                    # a 2-D local array, elements overwritten
        for j in range(3):
            m[0, j] = t[j] * t[j]
            m[1, j] = tack.sin(t[(j + 1) % 3])
        t[1] = t[1] * t[0]                      # overwritten: its old value read on the right
        t[0] += t[2] * m[1, 0]
        acc = 0.0
        for j in range(3):
            acc += m[0, j] * m[1, j]
        y[i] = acc + t[1] * t[0]


@_ALL
def test_a_local_array_filled_read_and_overwritten():
    rng = np.random.default_rng(0)
    x, w = rng.random((3, 3)), rng.random(3) + 0.5
    _check(fill_and_read, (x, w, np.zeros(3)), ("x", "w"), "y", rng.random(3))


def _product(x, n, y):
    for i in range(y.shape[0]):
        p = 1.0
        for k in range(n):
            p = p * x[i, k] + 0.25              # carried from one iteration to the next
        y[i] = p * p


product = tack.kernel(_product)


@_ALL
@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_carried_product_for_every_trip_count(n):
    rng = np.random.default_rng(n)
    x = rng.random((2, 4)) + 0.5
    g = _check(product, (x, n, np.zeros(2)), ("x",), "y", np.ones(2))
    if n == 0:
        assert not g["x"].any()


@pytest.mark.parametrize("slots, plain", [(1, 3), (2, 3), (2, 0)])
def test_tape_segments_and_the_plain_replay(slots, plain, monkeypatch):
    """With a tape of 2 iterations, 5 trips are 3 segments; with 1 (a state too large for a tape)
    the loop is replayed from its entry for each iteration; up to `plain` trips (3 by default) the
    taped loop is replayed from its entry too, and with 0 every trip count takes the tape.  Debug
    mode: the same generator, no C."""
    from tack import _autodiff_local

    monkeypatch.setattr(_autodiff_local, "TAPE_SLOTS", slots)
    monkeypatch.setattr(_autodiff_local, "PLAIN_TRIPS", plain)
    k = tack.kernel(_product, jit=False)       # a kernel of its own: built afresh with this tape
    x = np.random.default_rng(slots).random((2, 5)) + 0.5
    for n in range(6):
        gx = np.zeros_like(x)
        k.adjoint(x, n, np.zeros(2), grads={"x": gx, "y": np.ones(2)})

        def loss(x):
            y = np.zeros(2)
            k(x, n, y)                          # debug mode's forward too: nothing compiled here
            return y.sum()

        np.testing.assert_allclose(gx, _fd(loss, [x], 0), rtol=1e-6, atol=1e-8)


@tack.kernel
def strided_product(x, lo, hi, st, y):
    for i in range(y.shape[0]):
        p = 1.0
        for k in range(lo, hi, st):
            p = p * x[i, k] + 0.25              # carried, over a range with a start and a step
        y[i] = p * p


def test_a_carried_loop_over_a_strided_range():
    """The replay's trip count, len(range(lo, hi, st)), for steps up and down, a step past the end
    and empty ranges; 1 to 3 trips take the plain replay, more the tape (compiled and debug mode)."""
    x = np.random.default_rng(3).random((2, 5)) + 0.5
    for lo, hi, st in ((0, 5, 2), (4, -1, -1), (4, 0, -3), (0, 5, 7), (1, 1, 1), (3, 0, 1), (0, 5, 1),
                       (1, 5, 1), (4, 0, 1), (0, -1, -1)):
        g = _check(strided_product, (x, lo, hi, st, np.zeros(2)), ("x",), "y", np.ones(2))
        assert g["x"].any() == (len(range(lo, hi, st)) > 0)


@tack.kernel
def running_sum(x, y):
    for i in range(y.shape[0]):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j]
            y[i] += s * s                       # the sum read inside its loop: its value carried


def test_a_sum_read_inside_its_loop():
    """Before the replay, this loop was taken as independent iterations and its gradient was wrong."""
    rng = np.random.default_rng(3)
    x = rng.random((2, 4))
    gx = np.zeros_like(x)
    running_sum.adjoint(x, np.zeros(2), grads={"x": gx, "y": np.ones(2)})
    c = np.cumsum(x, axis=1)
    want = np.cumsum((2 * c)[:, ::-1], axis=1)[:, ::-1]   # d/dx_j sum_k c_k^2 = sum_{k >= j} 2 c_k
    np.testing.assert_allclose(gx, want, rtol=1e-13)


@tack.func
def force(x, k):
    return -k * x * x * x - 0.1 * x


@tack.kernel
def integrate(x0, v0, k, steps, dt, out):
    w = np.zeros(TAPS)                          # made before the parallel loop: a constant
    w[0] = 0.5
    w[1] = 1.0
    w[2] = 2.0
    for i in range(out.shape[0]):
        st = np.zeros((2, 2))                   # a particle's state: two positions, two velocities
        st[0, 0] = x0[i]
        st[1, 0] = v0[i]
        st[0, 1] = x0[i] * 0.5
        pick = np.zeros(1, np.int64)            # an integer local array, an index read from it
        e = 0.0
        for s in range(steps):                  # sub-steps: everything carried
            for c in range(2):
                st[1, c] = st[1, c] + dt * force(st[0, c], k[i])
                st[0, c] += dt * st[1, c]
            if st[0, 0] > 0.0:
                e = e + w[s % TAPS] * st[0, pick[0]]
            else:
                e = e * 0.9
            pick[0] = 1 - pick[0]
        out[i] = e + st[0, 0] * st[1, 1]


@tack.kernel
def pendulums(theta0, omega0, g, steps, dt, out):
    for i in range(out.shape[0]):
        s = np.zeros(2)                         # a local state array: angle, angular velocity
        s[0] = theta0[i]
        s[1] = omega0[i]
        for k in range(steps):                  # sub-steps: the state carried
            s[1] -= dt * g[i] * tack.sin(s[0])
            s[0] += dt * s[1]
        out[i] = s[0] * s[1]


def test_a_sub_stepped_pendulum_with_a_local_state_array():
    """The cheap whole kernel (make test): a local state array carried through 0, 1, 5 and 40
    sub-steps (40: two tape segments)."""
    rng = np.random.default_rng(9)
    th, om, g = rng.random(3) - 0.5, rng.random(3) - 0.5, rng.random(3) + 9.0
    for steps in (0, 1, 5, 40):
        _check(pendulums, (th, om, g, steps, 0.05, np.zeros(3)), ("theta0", "omega0", "g"), "out", rng.random(3))


@_ALL
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_a_sub_stepped_integrator_with_a_local_state_array(steps):
    rng = np.random.default_rng(10 + steps)
    x0, v0, k = rng.random(3) - 0.3, rng.random(3) - 0.5, rng.random(3) + 0.5
    _check(integrate, (x0, v0, k, steps, 0.1, np.zeros(3)), ("x0", "v0", "k"), "out", rng.random(3))


@tack.kernel
def stored_in_a_loop(x, y):
    for i in range(x.shape[0]):
        p = x[i, 0]
        for j in range(y.shape[1]):
            y[i, j] = p                         # a store inside a serial loop
            p = tack.cos(p) * x[i, j]


@_ALL
def test_stores_inside_a_carrying_loop():
    x = np.random.default_rng(4).random((2, 3))
    _check(stored_in_a_loop, (x, np.zeros((2, 3))), ("x",), "y", np.arange(6.0).reshape(2, 3))


@tack.func
def _dot3(a, b):
    s = 0.0
    for k in range(len(a)):
        s += a[k] * b[k]
    return s


@tack.func
def _unit(v):                                   # writes the caller's array
    n = np.sqrt(_dot3(v, v))
    for k in range(v.shape[0]):
        v[k] = v[k] / n


@tack.kernel
def cosines(p, q, out):
    for i in range(out.shape[0]):
        a = np.zeros(3)
        b = np.zeros(3)
        for k in range(3):
            a[k] = p[i, k]
            b[k] = q[i, k]
        _unit(a)
        _unit(b)
        out[i] = _dot3(a, b)


@_ALL
def test_local_arrays_passed_to_functions():
    rng = np.random.default_rng(5)
    p, q = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    _check(cosines, (p, q, np.zeros(2)), ("p", "q"), "out", np.ones(2))


@tack.kernel
def turned(x, out):
    for i in range(x.shape[0]):
        p = x[i]
        for j in range(3):
            p = tack.cross(p, x[j]) + p * 0.5   # a vector carried from one iteration to the next
        out[i] = p


@_ALL
def test_a_carried_vector():
    x = tack.array(np.random.default_rng(6).random((3, 3)), tack.vec3d)
    gx = tack.zeros(3, tack.vec3d)
    turned.adjoint(x, tack.zeros(3, tack.vec3d), grads={"x": gx, "out": tack.array(np.ones((3, 3)), tack.vec3d)})

    def loss(xa):
        o = tack.zeros(3, tack.vec3d)
        turned(tack.array(xa, tack.vec3d), o)
        return o.numpy().sum()

    np.testing.assert_allclose(gx.numpy(), _fd(loss, [x.numpy().copy()], 0), rtol=1e-6, atol=1e-8)


@tack.kernel
def substep32(x0, v0, steps, out):
    for i in range(out.shape[0]):
        st = np.zeros(2, np.float32)
        st[0] = x0[i]
        st[1] = v0[i]
        for s in range(steps):
            st[1] = st[1] - 0.1 * tack.sin(st[0])
            st[0] += 0.1 * st[1]
        out[i] = st[0]


@_ALL
def test_the_adjoint_is_emitted_for_every_target():
    """An f32 kernel with a local state array and a carried loop: its adjoint is written for every
    target (GPU dialects included: the replay needs nothing a GPU lacks)."""
    from tack import _autodiff_run, _core

    args = (np.ones(2, np.float32), np.ones(2, np.float32), 3, np.zeros(2, np.float32))
    adj, bound, names, kinds = _autodiff_run.build(substep32, args, {})
    grads = [np.zeros(1, np.float32) if kinds[p][0] == "fscalar" else np.zeros_like(bound.arguments[p])
             for p in names]
    for t in _core._targets():
        assert adj.generated_source(*args, *grads, target=t)
    ocl = [d for d in tack.devices() if d.startswith("opencl")]
    if not ocl:
        return
    x0 = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    got = []
    for dev in ("cpu", ocl[0]):                 # on PoCL, equal to the CPU's
        a = [tack.array(x0, device=dev), tack.array(x0[::-1].copy(), device=dev), 40,
             tack.zeros(5, tack.f32, device=dev)]
        g = {"x0": tack.zeros(5, tack.f32, device=dev), "v0": tack.zeros(5, tack.f32, device=dev),
             "out": tack.array(np.ones(5, np.float32), device=dev)}
        substep32(*a)
        substep32.adjoint(*a, grads=g)
        got.append((g["x0"].numpy(), g["v0"].numpy()))
    for cpu, dev in zip(*got):
        np.testing.assert_allclose(dev, cpu, rtol=1e-5, atol=1e-6)


# ---- refusals, each at its line

def _again(x, y):
    for i in range(x.shape[0]):
        t = np.zeros(2)
        t[0] = x[i]
        t = np.zeros(2)  # REFUSE: created again
        y[i] = t[0]


def _taps(x, y):
    w = np.zeros(2)
    w[0] = x[0]  # REFUSE: differentiated value before the loop
    for i in range(x.shape[0]):
        y[i] = w[0] * x[i]


def _to_int(x, y):
    for i in range(x.shape[0]):
        n = np.zeros(2, np.int64)
        n[0] = int(x[i] * 3.0)  # REFUSE: integer
        y[i] = x[i] * n[0]


def _not_a_range(x, y):
    for i in range(x.shape[0]):
        p = 1.0
        for k in tack.ndrange(3):  # REFUSE: not a range
            p = p * x[k]
        y[i] = p


@pytest.mark.parametrize("fn, words", [
    (_again, "is created again in an iteration"),
    (_taps, "made outside the parallel loops is given a differentiated value"),
    (_to_int, "a float value made integer is not differentiable"),
    (_not_a_range, "write it over a range"),
])
def test_refusals_name_the_line(fn, words):
    k = tack.kernel(fn)
    with pytest.raises(tack.CompileError, match=words) as err:
        k.adjoint(np.ones(3), np.zeros(3))
    lines, first = __import__("inspect").getsourcelines(fn)
    want = first + next(n for n, line in enumerate(lines) if "REFUSE" in line)
    assert f"line {want}" in str(err.value) or err.value.lineno == want, str(err.value)


@pytest.mark.skipif(not _suite.TEST_ALL, reason="PyTorch's autograd of the integrator: under make test-all")
def test_the_integrator_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    n, steps, dt = 6, 40, 0.05
    x0, v0, k, seed = rng.random(n) - 0.3, rng.random(n) - 0.5, rng.random(n) + 0.5, rng.random(n)
    grads = {"x0": np.zeros(n), "v0": np.zeros(n), "k": np.zeros(n), "out": seed.copy()}
    integrate.adjoint(x0, v0, k, steps, dt, np.zeros(n), grads=grads)
    tx, tv, tk = (torch.tensor(a, requires_grad=True) for a in (x0, v0, k))
    w = [0.5, 1.0, 2.0]
    outs = []
    for i in range(n):
        st = [[tx[i], tx[i] * 0.5], [tv[i], torch.zeros((), dtype=torch.float64)]]
        e, pick = torch.zeros((), dtype=torch.float64), 0
        for s in range(steps):
            for c in range(2):
                st[1][c] = st[1][c] + dt * (-tk[i] * st[0][c] ** 3 - 0.1 * st[0][c])
                st[0][c] = st[0][c] + dt * st[1][c]
            e = e + w[s % 3] * st[0][pick] if st[0][0] > 0 else e * 0.9
            pick = 1 - pick
        outs.append(e + st[0][0] * st[1][1])
    (torch.stack(outs) * torch.tensor(seed)).sum().backward()
    for name, t in (("x0", tx), ("v0", tv), ("k", tk)):
        np.testing.assert_allclose(grads[name], t.grad.numpy(), rtol=1e-10, atol=1e-13, err_msg=name)


@tack.kernel
def nested_carry(x, n, y):
    for i in range(y.shape[0]):
        s = 0.0
        for a in range(n):              # three carried loops deep: each level taped or replayed
            for b in range(n):
                for c in range(n):
                    s = s * 0.5 + tack.sin(s) * x[i, c]
        y[i] = s


@pytest.mark.optimized_source
def test_a_deep_adjoint_s_c_is_a_bounded_multiple_of_its_cuda():
    """The adjoint of a carried loop three deep: the CPU's C is the same IR as the CUDA source
    plus the CPU's copies (nests.c's two versions, innermost loops' plain copies), a constant
    factor (3.8x at this depth, 4.1x at five deep; 2^depth if every level were written twice)."""
    from tack import _autodiff_run

    x, y = np.ones((4, 4)), np.zeros(4)
    adj, bound, names, _kinds = _autodiff_run.build(nested_carry, (x, 3, y), {})
    grads = [np.zeros_like(bound.arguments[p]) for p in names]
    c = adj.generated_source(x, 3, y, *grads, target="c")
    cuda = adj.generated_source(x, 3, y, *grads, target="cuda")
    assert len(c) < 5 * len(cuda), (len(c), len(cuda))
    assert len(c) < 700_000, len(c)
