"""Row vectors, dot products and run-time indices of vectors and matrices (docs/language.md, "Matrix and
vector functions"; decisions.md, 2026-12-06).

`v @ m` is NumPy's row vector times a matrix, (v @ m)[j] = sum_i v[i] m[i, j]; `v @ w` of two vectors is
their dot product; shapes that do not match are a CompileError naming both types.  `m[i, j]`, `m[i]` (row
i, a vector) and `v[k]` take indices known only at run time, read and written, negative ones counting
from the end; one out of range is an IndexError naming the axis and the type, compiled (checks on) and in
debug mode in the same words.  Each result is checked against NumPy (exactly, on integer-valued floats,
where every order of summation gives the same bits) and against the kernel's own order of summation
(bit for bit, on random floats), compiled and in debug mode.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _gpu_batch  # noqa: E402
import _msl  # noqa: E402

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
NVRTC = hasattr(_core, "_nvrtc_version") and _core._nvrtc_version() > 0
VEC = {(2, np.float32): tack.vec2, (3, np.float32): tack.vec3, (4, np.float32): tack.vec4,
       (2, np.float64): tack.vec2d, (3, np.float64): tack.vec3d, (4, np.float64): tack.vec4d}
MAT = {(2, np.float32): tack.mat22, (3, np.float32): tack.mat33, (4, np.float32): tack.mat44,
       (2, np.float64): tack.mat22d, (3, np.float64): tack.mat33d, (4, np.float64): tack.mat44d}


def products(v, w, m, vm, vw, mv):
    for i in range(v.shape[0]):
        vm[i] = v[i] @ m[i]
        vw[i] = v[i] @ w[i]
        mv[i] = m[i] @ v[i]


def _ordered(v, m):
    """v @ m summed as the kernel sums it: from zero, i ascending, in the type."""
    s = np.zeros(m.shape[:1] + m.shape[2:], v.dtype)
    for i in range(m.shape[1]):
        s = s + v[:, i, None] * m[:, i, :]
    return s


def _run(n, dt, jit, v, w, m):
    k = len(v)
    out = (tack.zeros(k, VEC[n, dt]), np.zeros(k, dt), tack.zeros(k, VEC[n, dt]))
    tack.kernel(products, jit=jit)(tack.array(v, VEC[n, dt]), tack.array(w, VEC[n, dt]),
                                   tack.array(m, MAT[n, dt]), *out)
    return out[0].numpy().reshape(k, n), out[1], out[2].numpy().reshape(k, n)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_row_vector_dot_and_column_products_match_numpy(n, dt, jit):
    rng = np.random.default_rng(n)
    v, w = rng.integers(-8, 9, (50, n)).astype(dt), rng.integers(-8, 9, (50, n)).astype(dt)
    m = rng.integers(-8, 9, (50, n, n)).astype(dt)  # integers: every order of the sums is exact
    vm, vw, mv = _run(n, dt, jit, v, w, m)
    assert vm.dtype == vw.dtype == mv.dtype == dt
    np.testing.assert_array_equal(vm, np.einsum("ki,kij->kj", v, m))
    np.testing.assert_array_equal(vm, (v[:, None, :] @ m)[:, 0])  # NumPy's own v @ m, row by row
    np.testing.assert_array_equal(vw, np.einsum("ki,ki->k", v, w))
    np.testing.assert_array_equal(mv, np.einsum("kij,kj->ki", m, v))
    assert not np.array_equal(vm, mv)  # v @ m is not m @ v


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 4])
def test_random_floats_in_the_kernels_order_compiled_and_debug_mode_bit_for_bit(n, dt):
    rng = np.random.default_rng(10 + n)
    v, w, m = rng.standard_normal((200, n)).astype(dt), rng.standard_normal((200, n)).astype(dt), \
        rng.standard_normal((200, n, n)).astype(dt)
    v[:20], m[:10] = -0.0, 0.0  # a sum of -0.0 products is +0.0, from zero, as m @ v sums
    m[10:20] = -1.0
    got = _run(n, dt, True, v, w, m)
    dbg = _run(n, dt, False, v, w, m)
    for a, b in zip(got, dbg):
        assert a.tobytes() == b.tobytes()
    assert got[0].tobytes() == _ordered(v, m).tobytes()
    assert got[1].tobytes() == _ordered(v, w[:, :, None])[:, 0].tobytes()
    np.testing.assert_allclose(got[0], np.einsum("ki,kij->kj", v.astype(np.float64), m), rtol=1e-5 if dt ==
                               np.float32 else 1e-13, atol=1e-5 if dt == np.float32 else 1e-13)


def int_dot(v, w, out):
    for i in range(v.shape[0]):
        out[i] = v[i] @ w[i]


@pytest.mark.parametrize("jit", [True, False])
def test_integer_vectors_dot_wraps_as_int32(jit):
    v = np.array([[2**30, 2, 1], [1, -2, 3]], np.int32)
    out = np.zeros(2, np.int32)
    tack.kernel(int_dot, jit=jit)(tack.array(v, tack.vec3i), tack.array(v, tack.vec3i), out)
    with np.errstate(over="ignore"):
        assert out.tolist() == [int(x) for x in np.einsum("ki,ki->k", v, v)]


def mismatched_matrices(m, out):
    for i in range(out.shape[0]):
        out[i] = tack.mat22(1.0) @ m[i]


def mismatched_row(v, m, out):
    for i in range(out.shape[0]):
        out[i] = v[i] @ m[i]


def mixed_components(v, m, out):
    for i in range(out.shape[0]):
        out[i] = v[i] @ m[i]


def number_at(m, out):
    for i in range(out.shape[0]):
        out[i] = 2.0 @ m[i]


@pytest.mark.parametrize("jit", [True, False])
def test_mismatched_products_are_compile_errors_naming_both_types(jit):
    m3 = tack.zeros(2, tack.mat33)
    with pytest.raises(tack.CompileError, match=r"shapes do not match for @: mat22 and mat33"):
        tack.kernel(mismatched_matrices, jit=jit)(m3, tack.zeros(2, tack.mat33))
    with pytest.raises(tack.CompileError, match=r"shapes do not match for @: vec2 and mat33"):
        tack.kernel(mismatched_row, jit=jit)(tack.zeros(2, tack.vec2), m3, tack.zeros(2, tack.vec3))
    with pytest.raises(tack.CompileError, match=r"shapes do not match for @: vec2 and vec3"):
        tack.kernel(mismatched_row, jit=jit)(tack.zeros(2, tack.vec2), tack.zeros(2, tack.vec3), np.zeros(2))
    with pytest.raises(tack.CompileError, match=r"@ of vec3i and mat33: the components' types differ"):
        tack.kernel(mixed_components, jit=jit)(tack.zeros(2, tack.vec3i), m3, tack.zeros(2, tack.vec3))
    with pytest.raises(tack.CompileError, match=r"different precisions"):
        tack.kernel(mixed_components, jit=jit)(tack.zeros(2, tack.vec3d), m3, tack.zeros(2, tack.vec3))
    with pytest.raises(tack.CompileError, match=r"@ multiplies matrices and vectors, not float \(Python\) and "
                                                r"mat33|@ multiplies matrices and vectors, not f32 and mat33"):
        tack.kernel(number_at, jit=jit)(m3, tack.zeros(2, tack.mat33))


# ------------------------------------------------------------ run-time indices
def read_indices(m, v, idx, out, row):
    for i in range(m.shape[0]):
        a = m[i]
        k = idx[i, 0]
        j = idx[i, 1]
        r = a[k]                                  # row k, a vector
        s = 0.0
        for c in range(3):                        # a loop variable as the index
            s += a[c, j] * v[i][c]
        out[i] = a[k, j] + r.y * 10.0 + v[i][j] * 100.0 + s * 1000.0
        row[i] = a[-1 - k]


def write_indices(m, idx, out):
    for i in range(m.shape[0]):
        a = m[i]
        w = tack.vec3(0.0, 0.0, 0.0)
        k = idx[i, 0]
        j = idx[i, 1]
        a[k, j] = -1.0
        a[j] = tack.vec3(7.0, 8.0, 9.0) + a[k]    # a row set from a vector
        a[k - 1] = 2.5                            # and from a number, every entry
        for c in range(3):
            w[c] = a[c, c]
        a[0, 0] += w[j]
        out[i] = a


def _numpy_reads(M, V, idx):
    out, row = [], []
    for a, v, (k, j) in zip(M, V, idx):
        s = np.float32(0)
        for c in range(3):
            s = np.float32(s + a[c, j] * v[c])
        out.append(np.float32(a[k, j] + a[k][1] * np.float32(10) + v[j] * np.float32(100) + s * np.float32(1000)))
        row.append(a[-1 - k])
    return np.array(out), np.array(row)


def _numpy_writes(M, idx):
    out = []
    for a, (k, j) in zip(M.copy(), idx):
        a[k, j] = -1
        a[j] = np.float32([7, 8, 9]) + a[k]
        a[k - 1] = 2.5
        a[0, 0] += np.diag(a)[j]
        out.append(a)
    return np.array(out)


IDX = np.array([[0, 0], [1, 2], [2, 1], [-1, -3], [-2, 2], [2, -1]])


@pytest.mark.parametrize("jit", [True, False])
def test_run_time_indices_read_and_write_as_numpy(jit):
    rng = np.random.default_rng(3)
    M = rng.integers(-9, 10, (len(IDX), 3, 3)).astype(np.float32)
    V = rng.integers(-9, 10, (len(IDX), 3)).astype(np.float32)
    out, row = np.zeros(len(IDX), np.float32), tack.zeros(len(IDX), tack.vec3)
    tack.kernel(read_indices, jit=jit)(tack.array(M, tack.mat33), tack.array(V, tack.vec3), IDX, out, row)
    want, want_row = _numpy_reads(M, V, IDX)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(row.numpy().reshape(-1, 3), want_row)
    res = tack.zeros(len(IDX), tack.mat33)
    tack.kernel(write_indices, jit=jit)(tack.array(M, tack.mat33), IDX, res)
    np.testing.assert_array_equal(res.numpy().reshape(-1, 3, 3), _numpy_writes(M, IDX))


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("bad, axis", [((3, 0), 0), ((-4, 0), 0), ((0, 3), 1), ((1, -4), 1)])
def test_an_index_out_of_range_is_an_index_error_with_the_site(jit, bad, axis):
    M = np.zeros((1, 3, 3), np.float32)
    idx = np.array([bad])
    if axis == 0:  # a[k, j] = -1.0 is the first use of k
        kernel, args = write_indices, (tack.array(M, tack.mat33), idx, tack.zeros(1, tack.mat33))
        line = write_indices.__code__.co_firstlineno + 6
    else:  # the loop's a[c, j] is the first use of j
        kernel, args = read_indices, (tack.array(M, tack.mat33), tack.zeros(1, tack.vec3), idx,
                                      np.zeros(1, np.float32), tack.zeros(1, tack.vec3))
        line = read_indices.__code__.co_firstlineno + 8
    with pytest.raises(IndexError) as e:
        tack.kernel(kernel, jit=jit, checks=True)(*args)
    assert f"index {bad[axis]} is out of range for axis {axis} of a mat33 (kernel {kernel.__name__}, " in str(e.value)
    assert str(e.value).endswith(f"test_matrix_ops.py:{line})"), str(e.value)


def messages(m, idx, out):
    for i in range(out.shape[0]):
        a = m[i]
        out[i] = a[idx[i], 0]


def test_compiled_and_debug_messages_are_the_same():
    m, out = tack.array(np.zeros((1, 2, 2)), tack.mat22d), np.zeros(1)
    got = []
    for jit in (True, False):
        with pytest.raises(IndexError) as e:
            tack.kernel(messages, jit=jit, checks=True)(m, np.array([2]), out)
        got.append(str(e.value))
    assert got[0] == got[1] and "index 2 is out of range for axis 0 of a mat22d (kernel messages, " in got[0]


def constant_out_of_range(m, out):
    for i in range(out.shape[0]):
        a = m[i]
        out[i] = a[0, 3]


def three_indices(m, out):
    for i in range(out.shape[0]):
        a = m[i]
        out[i] = a[0, 1, 2]


def row_of_wrong_type(m, out):
    for i in range(out.shape[0]):
        a = m[i]
        a[1] = tack.vec2(1.0, 2.0)
        out[i] = a


@pytest.mark.parametrize("jit", [True, False])
def test_refusals(jit):
    m = tack.zeros(1, tack.mat33)
    with pytest.raises(tack.CompileError, match="index 3 is out of range for axis 1 of a mat33"):
        tack.kernel(constant_out_of_range, jit=jit)(m, np.zeros(1, np.float32))
    with pytest.raises(tack.CompileError, match=r"a matrix is indexed as m\[i, j\], or m\[i\] for its row i"):
        tack.kernel(three_indices, jit=jit)(m, np.zeros(1, np.float32))
    with pytest.raises(tack.CompileError, match="cannot assign vec2 to a row of mat33"):
        tack.kernel(row_of_wrong_type, jit=jit)(m, tack.zeros(1, tack.mat33))


def local_array_index(out, n):
    for i in range(out.shape[0]):
        a = np.zeros(3, np.float32)
        b = np.zeros((3, 3), np.float32)
        c = tack.zeros(3, tack.f32)
        d = tack.full((2, 2), 1.0, tack.f64)
        a[n % 7] = 1.0
        b[n % 5, 0] = 1.0
        c[n % 11 - 5] = 1.0
        d[n % 13 - 9, 1] = 1.0
        out[i] = a[0] + b[0, 0] + c[0] + d[0, 0]


@pytest.mark.parametrize("n, name, size", [(3, "a", 3), (8, "b", 3), (21, "c", 3), (15, "d", 2)])
def test_debug_mode_calls_a_local_array_an_array_not_a_vector_or_matrix(n, name, size):
    # a 1-D local array of three floats was named a vector in debug mode's IndexError, as the compiled
    # kernel does not; a 3x3 one must not become a matrix now that matrices have their own message
    got = []
    for jit in (True, False):
        with pytest.raises(IndexError) as e:
            tack.kernel(local_array_index, jit=jit, checks=True)(np.zeros(1, np.float32), n)
        got.append(str(e.value))
    assert got[0] == got[1], got
    assert f"is out of bounds for axis 0 with size {size} (array '{name}', kernel local_array_index" in got[0]


# ------------------------------------------------------------ devices and dialects
def everything(v, m, idx, out, rows):
    for i in range(v.shape[0]):
        a = m[i]
        k = idx[i]
        a[k, -1 - k] = 0.5
        a[k] = a[k] * 2.0
        rows[i] = v[i] @ a + a[k]
        out[i] = v[i] @ v[i] + a[k, 0]


def _everything_args(dt, device="cpu", k=64):
    rng = np.random.default_rng(4)
    n = 3
    v = tack.array(rng.standard_normal((k, n)).astype(dt), VEC[n, dt], device=device)
    m = tack.array(rng.standard_normal((k, n, n)).astype(dt), MAT[n, dt], device=device)
    idx = tack.array(rng.integers(-3, 3, k), device=device)
    return v, m, idx, tack.zeros(k, dt, device=device), tack.zeros(k, VEC[n, dt], device=device)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pocl-opencl-icd)")
def test_one_kernel_on_opencl_gives_the_cpus_bits():
    k = tack.kernel(everything)
    cpu, dev = _everything_args(np.float32), _everything_args(np.float32, OPENCL[0])
    k(*cpu)
    k(*dev)
    for a, b in zip(cpu[3:], dev[3:]):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-6)  # OpenCL may fuse a multiply-add
    dbg = _everything_args(np.float32)
    tack.kernel(everything, jit=False)(*dbg)
    for a, b in zip(cpu[3:], dbg[3:]):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def _source(target, dt):
    return tack.kernel(everything).generated_source(*_everything_args(dt, k=4), target=target)


@pytest.mark.skipif(not NVRTC, reason="NVRTC (libnvrtc) is not installed")
def test_cuda_source_compiles_with_nvrtc():
    src = _source("cuda", np.float64)
    assert "tk_dot_" in src and ".entry" in _core._nvrtc_compile(src, "sm_80")


@pytest.mark.skipif(_core._hiprtc_version() <= 0, reason="hiprtc is not installed (Debian: libamdhip64-dev)")
def test_hip_source_compiles_with_hiprtc():
    # in a process of its own (comgr and PoCL share libLLVM), kept in the tests' output cache
    out = _gpu_batch.hiprtc_checked([_source("hip", np.float64)], "gfx90a")
    assert out == b"\x7fELF", out


@pytest.mark.skipif(_msl.clang() is None and not _msl.xcrun(), reason="clang++ is not installed (Debian: clang)")
def test_metal_source_type_checks():
    problems = _msl.check(_source("metal", np.float32))
    assert problems is None, problems


# ------------------------------------------------------------ gradients
def row_times(v, m, out):
    for i in range(v.shape[0]):
        out[i] = v[i] @ m[i]


def test_row_vector_product_gradients_against_finite_differences_and_debug_mode():
    rng = np.random.default_rng(8)
    V, M, seed = rng.standard_normal((3, 3)), rng.standard_normal((3, 3, 3)), rng.standard_normal((3, 3))

    def adjoint(jit):
        gv, gm = tack.zeros(3, tack.vec3d), tack.zeros(3, tack.mat33d)
        tack.kernel(row_times, jit=jit).adjoint(
            tack.array(V, tack.vec3d), tack.array(M, tack.mat33d), tack.zeros(3, tack.vec3d),
            grads={"v": gv, "m": gm, "out": tack.array(seed, tack.vec3d)})
        return gv.numpy().reshape(3, 3), gm.numpy().reshape(3, 3, 3)

    gv, gm = adjoint(True)
    # d/dv of sum_j seed[j] (v @ m)[j] is m @ seed; d/dm is the outer product of v and seed
    np.testing.assert_allclose(gv, np.einsum("kij,kj->ki", M, seed), rtol=1e-13)
    np.testing.assert_allclose(gm, np.einsum("ki,kj->kij", V, seed), rtol=1e-13)
    dv, dm = adjoint(False)
    np.testing.assert_allclose(dv, gv, rtol=1e-13)
    np.testing.assert_allclose(dm, gm, rtol=1e-13)


def dots(v, w, out):
    for i in range(v.shape[0]):
        out[i] = (v[i] @ w[i]) * 2.0 + v[i] @ v[i]


def test_dot_product_gradients_in_closed_form_and_debug_mode():
    rng = np.random.default_rng(12)
    V, W, seed = rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    for jit in (True, False):
        gv, gw = tack.zeros(3, tack.vec3d), tack.zeros(3, tack.vec3d)
        tack.kernel(dots, jit=jit).adjoint(tack.array(V, tack.vec3d), tack.array(W, tack.vec3d), np.zeros(3),
                                           grads={"v": gv, "w": gw, "out": seed.copy()})
        np.testing.assert_allclose(gv.numpy().reshape(3, 3), seed[:, None] * (2 * W + 2 * V), rtol=1e-13)
        np.testing.assert_allclose(gw.numpy().reshape(3, 3), seed[:, None] * 2 * V, rtol=1e-13)


def computed_entries(m, idx, out):
    for i in range(m.shape[0]):
        a = m[i]
        out[i] = a[idx[i, 0], idx[i, 1]] * 3.0 + a[idx[i, 0], 2] * a[1, idx[i, 1]] + m[i][idx[i, 1], -1]


def test_entries_read_at_computed_indices_differentiate_negative_ones_from_the_end():
    rng = np.random.default_rng(14)
    M, seed = rng.standard_normal((4, 3, 3)), rng.standard_normal(4)
    idx = np.array([[0, 1], [-1, -3], [2, 0], [1, -1]])
    want = np.zeros((4, 3, 3))
    for r, (k, j) in enumerate(idx):
        want[r, k, j] += 3.0
        want[r, k, 2] += M[r, 1, j]
        want[r, 1, j] += M[r, k, 2]
        want[r, j, -1] += 1.0
    want *= seed[:, None, None]
    for jit in (True, False):
        g = tack.zeros(4, tack.mat33d)
        tack.kernel(computed_entries, jit=jit).adjoint(tack.array(M, tack.mat33d), idx, np.zeros(4),
                                                       grads={"m": g, "out": seed.copy()})
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-13)


def row_read(m, out):
    for i in range(m.shape[0]):
        a = m[i]
        out[i] = a[1] * 2.0


def row_fill(m, out):
    for i in range(m.shape[0]):
        a = m[i]
        a[1] = 2.0
        out[i] = a


def computed_store(m, idx, out):
    for i in range(m.shape[0]):
        a = m[i]
        a[idx[i], 0] = 2.0
        out[i] = a


@pytest.mark.parametrize("jit", [True, False])
def test_rows_and_computed_stores_are_refused_by_the_adjoint_not_miscounted(jit):
    m, gm = tack.zeros(2, tack.mat33d), tack.zeros(2, tack.mat33d)
    ones33 = tack.array(np.ones((2, 3, 3)), tack.mat33d)
    with pytest.raises(tack.CompileError, match=r"a\[1\]: a matrix's row is not differentiated yet"):
        tack.kernel(row_read, jit=jit).adjoint(m, tack.zeros(2, tack.vec3d), grads={
            "m": gm, "out": tack.array(np.ones((2, 3)), tack.vec3d)})
    with pytest.raises(tack.CompileError, match=r"a\[1\]: a matrix's row is not differentiated yet"):
        tack.kernel(row_fill, jit=jit).adjoint(m, tack.zeros(2, tack.mat33d), grads={"m": gm, "out": ones33})
    with pytest.raises(tack.CompileError, match=r"a\[idx\[i\], 0\]: a matrix entry set at a computed index is "
                                                r"not differentiated"):
        tack.kernel(computed_store, jit=jit).adjoint(m, np.zeros(2, np.int64), tack.zeros(2, tack.mat33d),
                                                     grads={"m": gm, "out": ones33})


def pick(v, idx, out):
    for i in range(v.shape[0]):
        w = v[i]
        w[idx[i]] += 1.0
        out[i] = v[i][idx[i]] * 2.0 + w[idx[i]] * w.x


def test_a_negative_computed_vector_index_differentiates_as_it_counts():
    # v[k] with k = -1 is v.z in the forward; the adjoint's select took only 0 <= k < 3, so the
    # gradient of v[-1] was silently 0
    rng = np.random.default_rng(13)
    V, seed = rng.standard_normal((4, 3)), rng.standard_normal(4)
    idx = np.array([0, -1, 2, -3])
    want = np.zeros((4, 3))
    for r, k in enumerate(idx):
        w = V[r].copy()
        w[k] += 1.0
        want[r, k] += 2.0 + w[0]        # d/dv[k] of 2 v[k] + w[k] * w.x (w[k] = v[k] + 1)
        want[r, 0] += w[k]              # d/dv.x through w.x (and through w[k] when k is 0)
    want *= seed[:, None]
    for jit in (True, False):
        g = tack.zeros(4, tack.vec3d)
        tack.kernel(pick, jit=jit).adjoint(tack.array(V, tack.vec3d), idx, np.zeros(4),
                                           grads={"v": g, "out": seed.copy()})
        np.testing.assert_allclose(g.numpy().reshape(4, 3), want, rtol=1e-13)


def square_array_row(a, i):
    a[i, 0] = 1.0


@pytest.mark.parametrize("jit", [True, False])
def test_an_argument_of_a_matrix_s_shape_is_an_array_in_its_index_error(jit):
    # a 3x3 f32 argument (or a vec3 array of three) has a mat33 value's shape in debug mode: its index
    # error is the array's, as compiled, not a matrix value's
    a = np.zeros((3, 3), np.float32)
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for axis 0 with size 3 \(array 'a', kernel "
                                         r"square_array_row, "):
        tack.kernel(square_array_row, jit=jit)(a, 5)
    assert not a.any()
