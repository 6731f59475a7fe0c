"""The gather form of a stencil's adjoint (tack._autodiff_gather): which form a loop gets, and that
it is right, against central finite differences in f64 and debug mode against the compiled adjoint.

The heat stencil's own checks (its fused sweep, its strips on grids from 3 x 3 up, 100 steps on a
tape) are in test_autodiff.py; here, what else the fused form must hold for: several gathered
arrays, offsets of one sign, branches around the stores, a float scalar; and the loops it must
not take.
"""

import ast

import numpy as np

import tack
from tack import _autodiff_run


def _shifted(a, b, out, s):
    # two gathered arrays at positive offsets only, stores in both branches, a float scalar
    for i in range(a.shape[0] - 2):
        t = a[i + 2] * b[i + 1] - a[i]
        if t > 0.0:
            out[i] = tack.sin(t) * s + b[i]
        else:
            out[i] = t * t


shifted = tack.kernel(_shifted)
shifted_py = tack.kernel(jit=False)(_shifted)


def _store_twice(x, y):
    for i in range(1, x.shape[0]):
        y[i] = x[i - 1]
        y[i] = 2.0 * x[i - 1]  # the first store's seed is read after this one zeroed it


def _loops(kernel, args):
    adj = _autodiff_run.build(kernel, args, {})[0]
    tree = adj.__wrapped__.__tack_tree__ if hasattr(adj, "__wrapped__") else adj.py_func.__tack_tree__
    return [st for st in tree.body if isinstance(st, ast.For)]


def _loss(kernel, a, b, s, seed):
    out = np.zeros_like(a)
    kernel(a, b, out, s)
    return float(np.dot(seed, out))


def test_a_gather_with_branches_two_arrays_and_a_scalar_is_fused_and_right():
    """One loop of both arrays' gathers and their own adds, a strip below and above it, the last
    pass: the float scalar's add and the zeroes of the seed (under the branch's test, recomputed:
    the store was in both branches); gradients equal to central finite differences, and debug
    mode's to the compiled adjoint's."""
    rng = np.random.default_rng(3)
    n = 9
    a, b, seed = rng.random(n) - 0.3, rng.random(n) - 0.3, rng.random(n)
    s = 0.7
    loops = _loops(shifted, (a, b, np.zeros(n), s))
    assert len(loops) == 4  # the gathers, below, above, the last pass
    stored = [n.targets[0].value.id for n in ast.walk(loops[0]) if isinstance(n, ast.Assign)
              and isinstance(n.targets[0], ast.Subscript)]
    assert sorted(stored) == ["a\u00b7grad", "b\u00b7grad"]  # each once, summed in a local; no zeroing
    assert [ast.unparse(n) for n in ast.walk(loops[3]) if isinstance(n, ast.Assign)
            and isinstance(n.targets[0], ast.Subscript)] == ["out\u00b7grad[i] = 0.0"] * 2

    def scalar_adds(loop):
        return [n for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript)
                and n.target.value.id == "s\u00b7grad"]

    assert len(scalar_adds(loops[3])) == 1 and not any(scalar_adds(lp) for lp in loops[:3])
    got = []
    for k in (shifted, shifted_py):
        g = {"a": np.zeros(n), "b": np.zeros(n), "out": seed.copy(), "s": np.zeros(1)}
        k.adjoint(a, b, np.zeros(n), s, grads=g)
        assert not g["out"][:n - 2].any() and (g["out"][n - 2:] == seed[n - 2:]).all()  # spent where stored
        got.append(g)
    h = 1e-6
    for name, v in (("a", a), ("b", b)):
        want = np.empty(n)
        for j in range(n):
            up, dn = v.copy(), v.copy()
            up[j] += h
            dn[j] -= h
            args_up = (up, b) if name == "a" else (a, up)
            args_dn = (dn, b) if name == "a" else (a, dn)
            want[j] = (_loss(shifted, *args_up, s, seed) - _loss(shifted, *args_dn, s, seed)) / (2 * h)
        np.testing.assert_allclose(got[0][name], want, rtol=1e-7, atol=1e-8, err_msg=name)
        np.testing.assert_array_equal(got[1][name], got[0][name])
    want_s = (_loss(shifted, a, b, s + h, seed) - _loss(shifted, a, b, s - h, seed)) / (2 * h)
    np.testing.assert_allclose(got[0]["s"][0], want_s, rtol=1e-7)
    np.testing.assert_allclose(got[1]["s"][0], got[0]["s"][0], rtol=1e-14)  # a sum: its order may differ


def test_a_seed_read_after_its_zero_keeps_the_atomic_form():
    """y[i] stored twice: the first store's seed is the zero the second left, so the gradient of
    x[i - 1] is 2, not 1 + 2.  A gather recomputes a neighbour's reverse sweep without its zeroes
    (they must wait until every neighbour has read the seeds), which gave 3; such a loop keeps the
    atomic form (debug mode: no C to build)."""
    k = tack.kernel(jit=False)(_store_twice)
    x = np.arange(1.0, 6.0)
    assert len(_loops(k, (x, np.zeros(5)))) == 1
    g = {"x": np.zeros(5), "y": np.ones(5)}
    k.adjoint(x, np.zeros(5), grads=g)
    np.testing.assert_array_equal(g["x"], [2.0, 2.0, 2.0, 2.0, 0.0])
    np.testing.assert_array_equal(g["y"], [1.0, 0.0, 0.0, 0.0, 0.0])
