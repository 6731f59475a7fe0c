"""Atomics on vector and matrix elements: Warp's force scatter.

`tack.atomic_add(f, j, v)`, `atomic_sub`, `atomic_min`, `atomic_max` and
`f[j] += v` / `f[j] -= v` in a parallel loop, on arrays of vec2..vec4 (f32,
f64, i32 components) and of mat22..mat44: each component is its own atomic
(src/compiler/emit/prelude_atomic_vec.c), the value returned is the vector of
the components' old values.

  - a scatter of many iterations into few cells equals np.add.at, compiled,
    in debug mode (jit=False) and on the OpenCL device (PoCL here); integer
    vectors exactly, wrapping as NumPy's int32 does;
  - min and max go component by component (a NaN component stores nothing);
  - matrices (mat22, mat33, mat22d) take the same updates;
  - in a serial loop the returned old values are the running sums;
  - a number is given to every component (NumPy's broadcast, as `v + s`);
  - the own element needs no atomic; on the CPU a fixed cell is summed per
    chunk and flushed once, and a small array added into at varying indices
    is counted in private copies of its components (privatize.c); a GPU keeps
    the atomics;
  - what means nothing is a CompileError naming the call and the type:
    exch, cas, and, or, xor; a float into an integer vector; two precisions;
    two shapes;
  - a differentiated kernel's `f[j] += v` and `tack.atomic_add(f, j, v)`
    give the gradient (a gather of f.grad[j]);
  - each GPU dialect's source compiles: NVRTC (sm_90), hiprtc (gfx90a),
    Intel's ocloc (pvc) and clang++ against our Metal header; the CUDA and
    Metal sources run emulated on the CPU as the CPU runs.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _msl  # noqa: E402
import _ocloc  # noqa: E402
import _suite  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error::tack.RaceWarning")

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
MODES = ["cpu", "debug",
         pytest.param("opencl", marks=pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)"))]


# ------------------------------------------------------------------ kernels
def scatter(f, idx, forces):
    for i in range(idx.shape[0]):
        tack.atomic_add(f, idx[i], forces[i])


def scatter_aug(f, idx, forces):
    for i in range(idx.shape[0]):
        f[idx[i]] += forces[i]
        f[idx[i] + 1] -= forces[i]


def extremes(lo, hi, idx, vals):
    for i in range(idx.shape[0]):
        tack.atomic_min(lo, idx[i], vals[i])
        tack.atomic_max(hi, idx[i], vals[i])


def broadcast(f, g, idx):
    for i in range(idx.shape[0]):
        tack.atomic_add(f, idx[i], 1)
        g[idx[i]] -= 0.5


def running(f, vals, olds):
    for t in range(1):  # serial: the old values are the running sums
        for i in range(vals.shape[0]):
            olds[i] = tack.atomic_add(f, 0, vals[i])


def running_sub(f, vals, olds):
    for t in range(1):
        for i in range(vals.shape[0]):
            olds[i] = tack.atomic_sub(f, (0, 1), vals[i])


def own(f, forces):
    for i in range(f.shape[0]):
        f[i] += forces[i]
        f[i] -= 1.0


def total(f, forces):
    for i in range(forces.shape[0]):
        f[0] += forces[i]
        f[1] -= 2 * forces[i]


def total_if(f, forces):
    for i in range(forces.shape[0]):
        if forces[i].x > 5.0:
            f[3] += forces[i]


def exch(f):
    for i in range(4):
        tack.atomic_exch(f, i, tack.vec3(1.0, 2.0, 3.0))


def cas(f):
    for i in range(4):
        tack.atomic_cas(f, i, tack.vec3(1.0, 2.0, 3.0), tack.vec3(0.0, 2.0, 3.0))


def xor(f):
    for i in range(4):
        tack.atomic_xor(f, i, tack.vec3(1.0, 2.0, 3.0))


def add_value(f, v):
    for i in range(4):
        tack.atomic_add(f, i, v)


def add_vec3d(f):
    for i in range(4):
        f[0] += tack.vec3d(1.0, 2.0, 3.0)


def add_vec2(f):
    for i in range(4):
        tack.atomic_add(f, i, tack.vec2(1.0, 2.0))


def add_mat22(f):
    for i in range(4):
        tack.atomic_add(f, i, tack.mat22(1.0))


def add_vec3(f):
    for i in range(4):
        tack.atomic_add(f, i, tack.vec3(1.0, 2.0, 3.0))


def add_vec3i(f):
    for i in range(4):
        tack.atomic_add(f, i, tack.vec3i(1, 2, 3))


def quat_add(q):
    for i in range(4):
        q[0] += tack.quat(0.0, 0.0, 0.0, 1.0)


KERNELS = {f.__name__: f for f in (scatter, scatter_aug, extremes, broadcast, running, running_sub, own, total,
                                       total_if, exch, cas, xor, add_value, add_vec3d, add_vec2, add_mat22, add_vec3,
                                       add_vec3i, quat_add)}
JIT = {name: tack.kernel(f) for name, f in KERNELS.items()}
DEBUG = {name: tack.kernel(f, jit=False) for name, f in KERNELS.items()}


def run(mode, name, *args):
    """Run kernel `name` on args (tack.Arrays and NumPy arrays, updated in place; scalars) in `mode`:
    "cpu" (compiled), "debug" (jit=False) or "opencl" (the first OpenCL device); returns the arrays'
    contents as NumPy arrays, in the arguments' order."""
    if mode == "opencl":
        dev = [tack.array(np.asarray(a.numpy() if isinstance(a, tack.Array) else a), a.dtype, device=OPENCL[0])
               if isinstance(a, (tack.Array, np.ndarray)) else a for a in args]
        JIT[name](*dev)
        return [d.numpy() for d, a in zip(dev, args) if isinstance(a, (tack.Array, np.ndarray))]
    (JIT if mode == "cpu" else DEBUG)[name](*args)
    return [a.numpy() if isinstance(a, tack.Array) else a for a in args if isinstance(a, (tack.Array, np.ndarray))]


def vec_array(values, dtype):
    return tack.array(np.ascontiguousarray(values), dtype)


# ------------------------------------------------------------ scatters
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype, comp", [(tack.vec3, np.float32), (tack.vec3d, np.float64), (tack.vec2, np.float32),
                                         (tack.vec4d, np.float64)], ids=["vec3", "vec3d", "vec2", "vec4d"])
def test_a_scatter_of_forces_into_few_cells_is_numpys_add_at(mode, dtype, comp):
    rng = np.random.default_rng(1)
    n, cells, width = (300 if mode == "debug" else 20_000), 7, dtype.shape[0]
    idx = rng.integers(0, cells, n).astype(np.int32)
    forces = rng.standard_normal((n, width)).astype(comp)
    want = np.zeros((cells, width), comp)
    np.add.at(want, idx, forces)
    f = run(mode, "scatter", tack.zeros(cells, dtype), idx, vec_array(forces, dtype))[0]
    # the order of the adds is not specified: a float sum's last bits may differ
    np.testing.assert_allclose(f, want, rtol=2e-4 if comp == np.float32 else 1e-12, atol=1e-3 if comp == np.float32
                               else 1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_exact_float_sums_and_the_augmented_form(mode):
    """Forces that are small integers sum exactly in any order: += and -= give NumPy's sums bit for bit."""
    rng = np.random.default_rng(2)
    n = 300 if mode == "debug" else 50_000
    idx = rng.integers(0, 5, n).astype(np.int64)
    forces = rng.integers(-8, 9, (n, 3)).astype(np.float32)
    want = np.zeros((6, 3), np.float32)
    np.add.at(want, idx, forces)
    np.subtract.at(want, idx + 1, forces)
    f = run(mode, "scatter_aug", tack.zeros(6, tack.vec3), idx, vec_array(forces, tack.vec3))[0]
    assert f.tolist() == want.tolist()


@pytest.mark.parametrize("mode", MODES)
def test_integer_vectors_are_exact_and_wrap_as_numpy(mode):
    rng = np.random.default_rng(3)
    n = 300 if mode == "debug" else 30_000
    idx = rng.integers(0, 4, n).astype(np.int32)
    forces = rng.integers(-2**31, 2**31, (n, 4), dtype=np.int64).astype(np.int32)  # the sums wrap
    want = np.zeros((4, 4), np.int32)
    np.add.at(want, idx, forces)
    f = run(mode, "scatter", tack.zeros(4, tack.vec4i), idx, vec_array(forces, tack.vec4i))[0]
    assert f.tolist() == want.tolist()
    f = run(mode, "scatter_aug", tack.zeros(5, tack.vec4i), idx, vec_array(forces, tack.vec4i))[0]
    np.subtract.at(want2 := np.zeros((5, 4), np.int32), idx + 1, forces)
    np.add.at(want2, idx, forces)
    assert f.tolist() == want2.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype, comp", [(tack.vec3, np.float32), (tack.vec3i, np.int32), (tack.vec2d, np.float64)],
                         ids=["vec3", "vec3i", "vec2d"])
def test_min_and_max_go_component_by_component(mode, dtype, comp):
    rng = np.random.default_rng(4)
    n, width = (200 if mode == "debug" else 10_000), dtype.shape[0]
    idx = rng.integers(0, 3, n).astype(np.int32)
    vals = rng.integers(-1000, 1000, (n, width)).astype(comp)
    if comp != np.int32:
        vals[::7, 0] = np.nan  # a NaN component stores nothing (as a scalar atomic_min's)
    start = np.zeros((3, width), comp)
    lo, hi = run(mode, "extremes", vec_array(start, dtype), vec_array(start, dtype), idx, vec_array(vals, dtype))[:2]
    want_lo, want_hi = start.copy(), start.copy()
    np.fmin.at(want_lo, idx, vals)  # fmin ignores the NaN value, and no cell holds one
    np.fmax.at(want_hi, idx, vals)
    assert lo.tolist() == want_lo.tolist() and hi.tolist() == want_hi.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype, comp", [(tack.mat22, np.float32), (tack.mat33, np.float32),
                                         (tack.mat22d, np.float64)], ids=["mat22", "mat33", "mat22d"])
def test_matrices(mode, dtype, comp):
    rng = np.random.default_rng(5)
    n, r = (200 if mode == "debug" else 20_000), dtype.shape[0]
    idx = rng.integers(0, 3, n).astype(np.int32)
    vals = rng.integers(-8, 9, (n, r, r)).astype(comp)
    want = np.zeros((3, r, r), comp)
    np.add.at(want, idx, vals)
    f = run(mode, "scatter", tack.zeros(3, dtype), idx, vec_array(vals, dtype))[0]
    assert f.tolist() == want.tolist()
    lo, hi = run(mode, "extremes", tack.zeros(3, dtype), tack.zeros(3, dtype), idx, vec_array(vals, dtype))[:2]
    want_lo, want_hi = np.zeros((3, r, r), comp), np.zeros((3, r, r), comp)
    np.minimum.at(want_lo, idx, vals)
    np.maximum.at(want_hi, idx, vals)
    assert lo.tolist() == want_lo.tolist() and hi.tolist() == want_hi.tolist()


@pytest.mark.parametrize("mode", MODES)
def test_a_number_is_given_to_every_component(mode):
    idx = np.array([0, 2, 2, 1, 2], np.int32)
    f, g = run(mode, "broadcast", tack.zeros(3, tack.vec3i), tack.zeros(3, tack.mat22), idx)[:2]
    assert f.tolist() == [[1] * 3, [1] * 3, [3] * 3]
    assert g.reshape(3, 4).tolist() == [[-0.5] * 4, [-0.5] * 4, [-1.5] * 4]


@pytest.mark.parametrize("mode", MODES)
def test_the_old_vector_is_returned(mode):
    vals = np.arange(24, dtype=np.float32).reshape(8, 3)
    f, _, olds = run(mode, "running", tack.zeros(1, tack.vec3), vec_array(vals, tack.vec3), tack.zeros(8, tack.vec3))
    sums = np.cumsum(vals, axis=0)
    assert olds.tolist() == np.vstack([np.zeros((1, 3)), sums[:-1]]).tolist()
    assert f.tolist() == [sums[-1].tolist()]
    m = np.arange(32, dtype=np.int32).reshape(8, 2, 2)
    f, _, olds = run(mode, "running_sub", tack.zeros((1, 2), tack.mat22), vec_array(m, tack.mat22),
                     tack.zeros(8, tack.mat22))
    sums = -np.cumsum(m, axis=0).astype(np.float32)
    assert olds.tolist() == np.concatenate([np.zeros((1, 2, 2)), sums[:-1]]).tolist()
    assert f[0, 1].tolist() == sums[-1].tolist() and f[0, 0].tolist() == [[0, 0], [0, 0]]


def test_the_python_functions_outside_a_kernel():
    a = np.zeros((3, 3), np.float32)
    old = tack.atomic_add(a, 1, np.array([1.0, 2.0, 3.0]))
    assert old.tolist() == [0, 0, 0] and a[1].tolist() == [1, 2, 3]
    assert tack.atomic_min(a, 1, np.array([0.0, 5.0, np.nan])).tolist() == [1, 2, 3]
    assert a[1].tolist() == [0, 2, 3]


# ------------------------------------------------------------ what the compiler makes of them
def calls_atomic(src):
    """Whether the kernel's code calls an atomic on an array element (tk_atomic_<op>_<type>(&aN[...]);
    the prelude's vector helpers take a pointer p and update &p->v[i])."""
    return re.search(r"tk_atomic_(add|sub)_\w+\(&a\d", src) is not None


@pytest.mark.parametrize("target", ["c", "cuda", "hip", "opencl", "metal"])
def test_the_own_element_needs_no_atomic(target):
    args = (tack.zeros(8, tack.vec3), tack.zeros(8, tack.vec3))
    assert not calls_atomic(JIT["own"].generated_source(*args, target=target))
    assert calls_atomic(JIT["scatter"].generated_source(args[0], np.zeros(4, np.int32), args[1], target=target))


@pytest.mark.parametrize("mode", MODES)
def test_own_elements_and_fixed_cells(mode):
    rng = np.random.default_rng(6)
    forces = rng.integers(-8, 9, (1000, 3)).astype(np.float32)
    f = run(mode, "own", vec_array(forces, tack.vec3), vec_array(forces, tack.vec3))[0]
    assert f.tolist() == (2 * forces - 1).tolist()
    m = rng.integers(-8, 9, (1000, 2, 2)).astype(np.float64)
    f = run(mode, "total", tack.zeros(2, tack.mat22d), vec_array(m, tack.mat22d))[0]
    assert f.tolist() == [m.sum(0).tolist(), (-2 * m.sum(0)).tolist()]


def test_a_fixed_cell_is_summed_per_chunk_on_the_cpu_and_per_component_on_a_gpu():
    """The CPU keeps a private vector sum per chunk; a GPU a scalar sum per component, which its
    flush reduces across the warp (CUDA, HIP) or sub-group (OpenCL) before one atomic per
    component, where every thread ran an atomic per component into the same address (Metal,
    with no flush hook, adds each thread's non-zero sums)."""
    args = (tack.zeros(2, tack.vec3), tack.zeros(8, tack.vec3))
    cpu = JIT["total"].generated_source(*args)
    assert re.search(r"_sum\d+ = tk_add_tk_vec3\(", cpu) and re.search(r"if \(\w+_sum\d+\.v\[0\] != 0 \|\| ", cpu)
    reduce = {"cuda": r"(\w+_sum\d+) = tk_wsum\(\1\)", "hip": r"(\w+_sum\d+) = tk_wsum\(\1\)",
              "opencl": r"(\w+_sum\d+) = sub_group_reduce_add\(\1\)", "metal": r"if \((\w+_sum\d+) != 0\) \(void\)tk_atomic"}
    for target, flush in reduce.items():
        src = JIT["total"].generated_source(*args, target=target)
        assert len(set(re.findall(flush, src))) == 6, target  # f[0] and f[1]: three components each
        assert not re.search(r"tk_atomic_(add|sub)_tk_vec3\(&a\d", src), target  # no whole-vector atomic left


def test_a_scatter_into_a_small_array_counts_into_private_copies_on_the_cpu():
    """A vector or matrix array added into at varying indices gets privatize.c's private copies of
    its components on the CPU (not on a GPU), and its sums stay NumPy's: negative indices (the
    copies' cells for -n..n-1), an array too large for a copy (its atomics), integer wrapping."""
    idx = np.zeros(8, np.int32)
    src = JIT["scatter"].generated_source(tack.zeros(8, tack.vec3), idx, tack.zeros(8, tack.vec3))
    assert "per-chunk private histogram" in src and "per-thread private histograms" in src
    assert re.search(r"hp\d+_\[h_ \+ 2\] = hp\d+_\[h_ \+ 2\] \+ hv_\.v\[2\];", src)
    src = JIT["scatter_aug"].generated_source(tack.zeros(8, tack.mat22d), idx, tack.zeros(8, tack.mat22d))
    assert "per-chunk private histogram" in src and "hv_.m[1][1]" in src
    for target in ("cuda", "opencl", "metal"):
        assert "private histogram" not in JIT["scatter"].generated_source(tack.zeros(8, tack.vec3), idx,
                                                                           tack.zeros(8, tack.vec3), target=target)
    rng = np.random.default_rng(9)
    n = 200_000
    for cells, dtype, comp in [(5, tack.vec3, np.float32), (9, tack.mat33d, np.float64), (3, tack.vec4i, np.int32),
                               (100_000, tack.vec3, np.float32)]:
        shape = dtype.shape
        idx = rng.integers(-cells, cells, n).astype(np.int64)  # negative: from the end, as NumPy's
        vals = (rng.integers(-2**31, 2**31, (n, *shape), dtype=np.int64) if comp == np.int32
                else rng.integers(-8, 9, (n, *shape))).astype(comp)
        want = np.zeros((cells, *shape), comp)
        np.add.at(want, idx, vals)
        f = tack.zeros(cells, dtype)
        JIT["scatter"](f, idx, vec_array(vals, dtype))
        assert f.numpy().tolist() == want.tolist(), (cells, dtype)
    with pytest.raises(IndexError):
        JIT["scatter"](tack.zeros(5, tack.vec3), np.array([0, 1, 5] * 100, np.int32),
                       vec_array(np.ones((300, 3), np.float32), tack.vec3))


def test_a_private_sum_never_reached_writes_nothing():
    """The flush of a chunk whose iterations never added (all below 5) skips the out-of-bounds cell 3;
    one that did raises the index's IndexError, compiled and in debug mode."""
    small = np.ones((1000, 3), np.float32)
    for k in (JIT, DEBUG):
        f = tack.zeros(1, tack.vec3)
        k["total_if"](f, vec_array(small, tack.vec3))
        assert f.numpy().tolist() == [[0, 0, 0]]
        small[500, 0] = 9.0
        with pytest.raises(IndexError):
            k["total_if"](f, vec_array(small, tack.vec3))
        small[500, 0] = 1.0


def test_no_race_is_reported_by_the_detector():
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 3, 500).astype(np.int32)
    forces = rng.integers(-8, 9, (500, 3)).astype(np.float32)
    want = np.zeros((4, 3), np.float32)
    np.add.at(want, idx, forces)
    np.subtract.at(want, idx + 1, forces)
    for jit in (True, False):
        f = tack.zeros(4, tack.vec3)
        tack.kernel(scatter_aug, check_races=True, jit=jit)(f, idx, vec_array(forces, tack.vec3))
        assert f.numpy().tolist() == want.tolist()


# ------------------------------------------------------------ refusals
@pytest.mark.parametrize("k", [JIT, DEBUG], ids=["jit", "debug"])
def test_what_is_refused_says_why(k):
    v3 = tack.zeros(4, tack.vec3)
    for name in ("exch", "cas", "xor"):
        with pytest.raises(tack.CompileError, match=rf"tack\.atomic_{name}\(\) on vec3 array 'f': a vec3 element is "
                                                    rf"updated one component at a time, so only atomic_add, "
                                                    rf"atomic_sub, atomic_min and atomic_max take it \(each "
                                                    rf"component its own atomic\); to (swap|update) one component, "
                                                    rf"keep the components in an f32 array with one more axis"):
            k[name](v3)
    with pytest.raises(tack.CompileError, match=r"tack\.atomic_add\(\) of float \(Python\) into a vec3i element: "
                                                r"the float would be truncated to the i32 components"):
        k["add_value"](tack.zeros(4, tack.vec3i), 0.5)
    with pytest.raises(tack.CompileError, match=r"'f\[\.\.\.\] \+= \.\.\.' of vec3d on a vec3 element: the component "
                                                r"types differ \(f64 and f32\); convert the value first, tack\.vec3"):
        k["add_vec3d"](v3)
    with pytest.raises(tack.CompileError, match=r"tack\.atomic_add\(\) of vec2 into a vec3 element: the shapes differ"):
        k["add_vec2"](v3)
    with pytest.raises(tack.CompileError, match=r"tack\.atomic_add\(\) of mat22 into a vec4 element: the shapes "
                                                r"differ"):
        k["add_mat22"](tack.zeros(4, tack.vec4))
    with pytest.raises(tack.CompileError, match=r"\+= and -= are not atomic on quaternion and transform elements"):
        k["quat_add"](tack.zeros(4, tack.quat))


def test_an_integer_vector_takes_a_float_vector_only_converted():
    with pytest.raises(tack.CompileError, match=r"of vec3 into a vec3i element: the component types differ"):
        JIT["add_vec3"](tack.zeros(4, tack.vec3i))
    f = tack.zeros(4, tack.vec3)  # an integer vector into a float one is exact: allowed, as vec3 + vec3i is
    JIT["add_vec3i"](f)
    assert f.numpy().tolist() == [[1, 2, 3]] * 4


# ------------------------------------------------------------ gradients
def springs_aug(x, pairs, k, f):
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        fv = k[0] * (x[j] - x[i])
        f[i] += fv
        f[j] -= fv


def springs_call(x, pairs, k, f):
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        fv = k[0] * (x[j] - x[i])
        tack.atomic_add(f, i, fv)
        tack.atomic_sub(f, j, fv)


def springs_old(x, pairs, k, f, olds):
    for s in range(pairs.shape[0]):
        olds[s] = tack.atomic_add(f, pairs[s, 0], k[0] * x[s])


@tack.kernel
def weighted(f, w, loss):
    for i in range(f.shape[0]):
        loss[0] += tack.dot(f[i], w[i])


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "debug"])
@pytest.mark.parametrize("body", [springs_aug, springs_call], ids=["aug", "call"])
def test_the_gradient_of_a_scatter_is_a_gather(body, jit):
    rng = np.random.default_rng(8)
    n = 6
    X, W = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
    P = rng.integers(0, n, (40, 2)).astype(np.int32)
    x = tack.array(X, tack.vec3d, requires_grad=True)
    k = tack.array([2.0], tack.f64, requires_grad=True)
    f, loss = tack.zeros(n, tack.vec3d), tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        tack.kernel(body, jit=jit)(x, P, k, f)
        weighted(f, tack.array(W, tack.vec3d), loss)
    tape.backward(loss)
    # loss = sum over springs of k (x_j - x_i) . (w_i - w_j)
    gx, gk = np.zeros((n, 3)), 0.0
    for i, j in P:
        gx[j] += 2.0 * (W[i] - W[j])
        gx[i] -= 2.0 * (W[i] - W[j])
        gk += np.dot(X[j] - X[i], W[i] - W[j])
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k.grad.numpy(), [gk], rtol=1e-12)


def test_the_returned_old_vector_is_not_differentiated():
    x = tack.array(np.ones((4, 3)), tack.vec3d, requires_grad=True)
    k = tack.array([2.0], tack.f64, requires_grad=True)
    f, olds = tack.zeros(4, tack.vec3d), tack.zeros(4, tack.vec3d)
    with pytest.raises(tack.CompileError, match="cannot be differentiated"):
        with tack.Tape() as tape:
            tack.kernel(springs_old)(x, np.zeros((4, 2), np.int32), k, f, olds)
        tape.backward(grads=[(olds, np.ones((4, 3)))])


# ------------------------------------------------------------ every dialect
@tack.kernel
def every(idx, f3, f3d, i3, m33, m22d, o3, o3d, oi3, om33, om22d, tot, totm):
    for i in range(idx.shape[0]):
        j = idx[i]
        o3[i] = tack.atomic_add(f3, j, tack.vec3(1.0, 2.0, 3.0))
        tack.atomic_sub(f3, j, 0.5)
        tack.atomic_min(f3, j, tack.vec3(0.0, -1.0, 2.0))
        tack.atomic_max(f3, j, tack.vec3(0.0, 1.0, 0.0))
        o3d[i] = tack.atomic_add(f3d, j, tack.vec3d(1.0, 2.0, 3.0))
        tack.atomic_min(f3d, j, 0.0)
        oi3[i] = tack.atomic_add(i3, j, tack.vec3i(1, 2, 3))
        tack.atomic_max(i3, j, 5)
        tack.atomic_min(i3, j, tack.vec3i(9, 9, -1))
        om33[i] = tack.atomic_add(m33, j, tack.mat33(1.0))
        tack.atomic_max(m33, j, tack.mat33(0.5))
        om22d[i] = tack.atomic_sub(m22d, j, tack.mat22d(1.0))
        f3[j] += tack.vec3(1.0, 1.0, 1.0)
        m22d[j] -= 2.0
        tot[1] += tack.vec3(1.0, 2.0, 3.0)  # fixed cells: private sums (a GPU's per component)
        totm[0] -= tack.mat22d(1.0, 2.0, 3.0, 4.0)


@tack.kernel
def every32(idx, f3, i3, m33, o3, oi3, om33, tot, totm):
    for i in range(idx.shape[0]):
        j = idx[i]
        o3[i] = tack.atomic_add(f3, j, tack.vec3(1.0, 2.0, 3.0))
        tack.atomic_sub(f3, j, 0.5)
        tack.atomic_min(f3, j, tack.vec3(0.0, -1.0, 2.0))
        tack.atomic_max(f3, j, tack.vec3(0.0, 1.0, 0.0))
        oi3[i] = tack.atomic_add(i3, j, tack.vec3i(1, 2, 3))
        tack.atomic_max(i3, j, 5)
        tack.atomic_min(i3, j, tack.vec3i(9, 9, -1))
        om33[i] = tack.atomic_add(m33, j, tack.mat33(1.0))
        tack.atomic_max(m33, j, tack.mat33(0.5))
        f3[j] += tack.vec3(1.0, 1.0, 1.0)
        tot[1] += tack.vec3(1.0, 2.0, 3.0)
        totm[0] -= tack.mat33(0.5)


def every_args(n=12):
    return (np.arange(n, dtype=np.int32) % 3, tack.zeros(3, tack.vec3), tack.zeros(3, tack.vec3d),
            tack.zeros(3, tack.vec3i), tack.zeros(3, tack.mat33), tack.zeros(3, tack.mat22d), tack.zeros(n, tack.vec3),
            tack.zeros(n, tack.vec3d), tack.zeros(n, tack.vec3i), tack.zeros(n, tack.mat33), tack.zeros(n, tack.mat22d),
            tack.zeros(2, tack.vec3), tack.zeros(1, tack.mat22d))


def every32_args(n=12):
    return (np.arange(n, dtype=np.int32) % 3, tack.zeros(3, tack.vec3), tack.zeros(3, tack.vec3i),
            tack.zeros(3, tack.mat33), tack.zeros(n, tack.vec3), tack.zeros(n, tack.vec3i), tack.zeros(n, tack.mat33),
            tack.zeros(2, tack.vec3), tack.zeros(1, tack.mat33))


def test_every_dialect_defines_what_it_calls():
    for target in ("c", "cuda", "hip", "opencl"):
        src = every.generated_source(*every_args(), target=target)
        for name in ("add_tk_vec3", "sub_tk_vec3", "min_tk_vec3", "max_tk_vec3", "add_tk_vec3d", "min_tk_vec3d",
                     "add_tk_vec3i", "max_tk_vec3i", "add_tk_mat33", "max_tk_mat33", "sub_tk_mat22d"):
            assert re.search(rf"tk_atomic_{name}\(\w* ?tk_\w+ \*p, ", src), (target, name)
    src = every.generated_source(*every_args(), target="opencl")
    assert "cl_khr_int64_base_atomics" in src  # vec3d's components are doubles: OpenCL's 64-bit atomics
    assert "cl_khr_int64" not in every32.generated_source(*every32_args(), target="opencl")


NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
@pytest.mark.parametrize("arch", _suite.ARCHS["cuda"])
def test_cuda_source_compiles_with_nvrtc(arch):
    assert _core._nvrtc_compile(every.generated_source(*every_args(), target="cuda"), arch)


_HIPRTC = ("import json, sys\n"
           "from tack import _core\n"
           "job = json.load(sys.stdin)\n"
           "for arch in job['archs']:\n"
           "    _core._hiprtc_compile(job['source'], arch)\n")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own, as test_hip.py explains (comgr and PoCL share libLLVM)
    job = json.dumps({"source": every.generated_source(*every_args(), target="hip"),
                      "archs": list(_suite.ARCHS["hip"])})
    proc = subprocess.run([sys.executable, "-c", _HIPRTC], input=job, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(_ocloc.library() is None, reason="libocloc is not installed (Debian: intel-opencl-icd)")
def test_opencl_source_compiles_with_ocloc():
    rc, out = _ocloc.compile(every.generated_source(*every_args(), target="opencl"), "pvc", _ocloc.OPTIONS)
    assert {n.rsplit(".", 1)[-1] for n in out} >= {"spv", "bin"}, sorted(out)
    assert rc == 0, {k: v.decode(errors="replace")[-3000:] for k, v in out.items() if "log" in k.lower()}


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    src = every32.generated_source(*every32_args(), target="metal")
    assert "tk_atomic_add_tk_vec3(device tk_vec3 *p" in src
    problems = _msl.check(src)
    assert problems is None, problems


def cpu_result(kernel, args):
    kernel(*args)
    return [a.numpy() if isinstance(a, tack.Array) else a for a in args]


@pytest.mark.skipif(_msl.clang() is None or not _msl.has_float16(),
                    reason="the Metal emulation needs clang++ 15 or later (_msl_emulate.py)")
def test_metal_source_runs_emulated_as_the_cpu_runs():
    import _msl_emulate

    got, (failed, site) = _msl_emulate.run(every32, *every32_args())
    assert failed == 0, site
    want = cpu_result(every32, every32_args())
    for g, w in zip(got[1:4] + got[7:], want[1:4] + want[7:]):  # the cells: sums of small integers and halves, exact in any order
        assert np.asarray(g).ravel().tolist() == np.asarray(w).ravel().tolist()
    assert np.asarray(got[7]).ravel().tolist() == [0, 0, 0, 12, 24, 36]  # tot[1]: 12 iterations' private sums


def test_cuda_source_runs_emulated_as_the_cpu_runs():
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    shapes = [(3,), (3,), (3, 3), (3, 3), (3, 2, 2), (12, 3), (12, 3), (12, 3), (12, 3, 3), (12, 2, 2)]
    src = every.generated_source(*every_args(), target="cuda")
    em = [a.numpy().copy() if isinstance(a, tack.Array) else a for a in every_args()]
    args = [em[0]] + [(a, [a.shape[0]]) for a in em[1:]]
    assert _cuda_emulate.run(src, args)[0] == 0, shapes
    want = cpu_result(every, every_args())
    for g, w in zip(em[1:6] + em[11:], want[1:6] + want[11:]):
        assert g.tolist() == w.tolist()
    assert em[11].ravel().tolist() == [0, 0, 0, 12, 24, 36] and em[12].ravel().tolist() == [-12, -24, -36, -48]
