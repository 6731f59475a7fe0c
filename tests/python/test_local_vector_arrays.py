"""Local arrays of vectors and matrices: `tack.zeros(4, tack.vec3)` and the
like inside a kernel or a @tack.func (lower_local.c).

Each kernel is compared with NumPy, where an array of n vec3 elements is an
(n, 3) float32 array and one of mat33 an (n, 3, 3) one, and every bad input
has its error.  The GPU test files replay this file's kernel calls on each
dialect's compile path (test_cuda.py and test_hip.py compile them, test_opencl.py
runs them on PoCL, test_msl.py type-checks them as MSL), and
test_differential.py runs it without the optimizing passes."""

import re

import numpy as np
import pytest

import tack

F32 = dict(rtol=1e-6, atol=1e-6)


def vecs(a, dt):
    return tack.array(np.ascontiguousarray(a), dt)


# ----------------------------------------------------------- differential
@tack.kernel
def windows(p, mid, spread):
    for i in range(mid.shape[0]):
        w = tack.empty(3, p.dtype)              # vec3, zero-filled, as every local array
        for k in range(len(w)):
            w[k] = p[i + k]
        c = tack.zeros(1, tack.vec3)
        for k in range(w.shape[0]):
            c[0] += w[k]
        c[0] *= 0.5
        mid[i] = c[0]
        spread[i] = w[-1].x - w[0].x + w[2][1] - w[0].z + w.size * w.ndim


def test_vec3_scratch_against_numpy():
    rng = np.random.default_rng(1)
    pn = rng.standard_normal((30, 3)).astype(np.float32)
    mid, spread = tack.zeros(28, tack.vec3), np.zeros(28, np.float32)
    windows(vecs(pn, tack.vec3), mid, spread)
    want = (pn[:-2] + pn[1:-1] + pn[2:]) * np.float32(0.5)
    np.testing.assert_allclose(mid.numpy(), want, **F32)
    np.testing.assert_allclose(spread, pn[2:, 0] - pn[:-2, 0] + pn[2:, 1] - pn[:-2, 2] + 3, **F32)


@tack.kernel
def plain_arrays(x, out):                       # (n, 3) float32 NumPy arrays: no vector parameters
    for i in range(out.shape[0]):
        w = tack.zeros(2, tack.vec3)
        w[0] = tack.vec3(x[i, 0], x[i, 1], x[i, 2])
        w[1] = w[0] * 2.0 + 1.0
        m = tack.full(1, 0.5, tack.mat33)
        w[1] = m[0] @ w[1] - w[0]
        for c in range(3):
            out[i, c] = w[1][c] + w[0].x


def test_vectors_from_plain_numpy_arrays():
    xn = np.random.default_rng(8).standard_normal((16, 3)).astype(np.float32)
    out = np.zeros((16, 3), np.float32)
    plain_arrays(xn, out)
    u = 2 * xn + 1
    np.testing.assert_allclose(out, 0.5 * u.sum(1, keepdims=True) - xn + xn[:, :1], rtol=1e-5, atol=1e-5)


@tack.kernel
def fills(v, out):
    for i in range(out.shape[0]):
        a = tack.ones((2, 3), tack.vec3d)       # every component one, as NumPy fills an (2, 3, 3) array
        b = tack.full(2, v[i], tack.vec3d)      # a vec3d value: every element
        c = np.full(2, -0.5, tack.vec3d)        # a number: every component
        e = np.zeros((2, 2), dtype=tack.vec3d)
        a[1, 2] = b[0] * 2.0
        e[1, -1] = 3                            # a number stored: every component
        e[0, 1] -= v[i]
        rows, cols = a.shape
        out[i] = a[0, 0] + a[1, 2] + b[1] + c[-1] + e[1, 1] + e[0, 1] + tack.vec3d(rows, cols, e.size)


def test_vec3d_fills_and_two_dimensions_against_numpy():
    vn = np.random.default_rng(2).standard_normal((9, 3))
    out = tack.zeros(9, tack.vec3d)
    fills(vecs(vn, tack.vec3d), out)
    np.testing.assert_allclose(out.numpy(), 1 + 2 * vn + vn - 0.5 + 3 - vn + [2, 3, 4], rtol=1e-14)


@tack.kernel
def int_vectors(q, out, as_float):
    for i in range(out.shape[0]):
        h = tack.full((2,), 7, tack.vec3i)
        h[0] += q[i]
        h[1] = h[0] * 2 - q[i]
        f = tack.full(2, q[i], tack.vec3)       # a vec3i value, converted to each element's f32
        f[1] += 0.5
        out[i] = h[0] + h[1]
        as_float[i] = f[0] + f[1]


def test_vec3i_against_numpy():
    qn = np.random.default_rng(3).integers(-1000, 1000, (12, 3)).astype(np.int32)
    out, as_float = tack.zeros(12, tack.vec3i), tack.zeros(12, tack.vec3)
    int_vectors(vecs(qn, tack.vec3i), out, as_float)
    np.testing.assert_array_equal(out.numpy(), 21 + 2 * qn)
    np.testing.assert_array_equal(as_float.numpy(), (2 * qn + 0.5).astype(np.float32))


@tack.kernel
def transforms(rot, p, out, diag):
    for i in range(out.shape[0]):
        ms = tack.zeros(2, tack.mat33)
        ms[0] = rot[i]
        ms[1] = rot[i] @ rot[i]
        ones = tack.ones(1, tack.mat33)         # every entry one
        m = ms[i % 2]
        out[i] = m @ p[i] + ones[0] @ p[i]
        ms[1] *= 2.0
        diag[i] = ms[1][0, 0] + ms[0][2, 2] + ms[0][-1, 1]


def test_matrices_against_numpy():
    rng = np.random.default_rng(4)
    rn = rng.standard_normal((10, 3, 3)).astype(np.float32)
    pn = rng.standard_normal((10, 3)).astype(np.float32)
    out, diag = tack.zeros(10, tack.vec3), np.zeros(10, np.float32)
    transforms(vecs(rn, tack.mat33), vecs(pn, tack.vec3), out, diag)
    sq = rn @ rn
    m = np.where((np.arange(10) % 2 == 0)[:, None, None], rn, sq)
    want = np.einsum("nij,nj->ni", m, pn) + pn.sum(1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(diag, 2 * sq[:, 0, 0] + rn[:, 2, 2] + rn[:, 2, 1], rtol=1e-5, atol=1e-5)


@tack.kernel
def matrices_d(rot, out):
    for i in range(out.shape[0]):
        ms = np.full(3, rot[i], tack.mat22d)    # a mat22d value: every element
        ms[2] = ms[2] * 2.0 + 1.0
        ms[1] -= ms[0]
        out[i] = ms[0] + ms[1] + ms[2]


def test_mat22d_against_numpy():
    rn = np.random.default_rng(7).standard_normal((5, 2, 2))
    out = tack.zeros(5, tack.mat22d)
    matrices_d(vecs(rn, tack.mat22d), out)
    np.testing.assert_allclose(out.numpy(), 3 * rn + 1, rtol=1e-14)


@tack.kernel
def matrix_components(rot, out):
    for i in range(out.shape[0]):
        m = rot[i]
        m[0, 1] = 5.0                           # constant indices, a negative one from the end
        out[i] = rot[i][1, 2] + m[0, 1] + m[-1, -2] * 10.0


def test_matrix_components_take_constant_indices():
    """m[i, j] with int literals (which lowering casts to i64) on a matrix
    value and on an array element: once refused as not constant."""
    rn = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    out = np.zeros(2, np.float32)
    matrix_components(vecs(rn, tack.mat33), out)
    np.testing.assert_array_equal(out, rn[:, 1, 2] + 5 + rn[:, 2, 1] * 10)


@tack.kernel
def taps_before_the_loop(p, out):
    taps = tack.zeros(3, tack.vec3)             # made before the loop, read by every iteration
    taps[0] = tack.vec3(0.25, 0.5, 1.0)
    taps[1] = 0.5
    taps[2] = tack.vec3(1.0, 0.5, 0.25)
    turn = tack.full(1, tack.mat22(0.0, -1.0, 1.0, 0.0), tack.mat22)
    for i in range(out.shape[0]):
        acc = tack.vec3(0.0, 0.0, 0.0)
        for k in range(len(taps)):
            acc += taps[k] * p[i + k]
        r = turn[0] @ tack.vec2(acc.x, acc.y)
        out[i] = tack.vec3(r.x, r.y, acc.z)


def test_made_before_the_parallel_loop_against_numpy():
    pn = np.random.default_rng(5).standard_normal((20, 3)).astype(np.float32)
    out = tack.zeros(18, tack.vec3)
    taps_before_the_loop(vecs(pn, tack.vec3), out)
    taps = np.array([[0.25, 0.5, 1.0], [0.5, 0.5, 0.5], [1.0, 0.5, 0.25]], np.float32)
    acc = taps[0] * pn[:-2] + taps[1] * pn[1:-1] + taps[2] * pn[2:]
    np.testing.assert_allclose(out.numpy(), np.stack([-acc[:, 1], acc[:, 0], acc[:, 2]], 1), **F32)


@tack.func
def center(pts):                                # writes the caller's array
    c = tack.vec3(0.0, 0.0, 0.0)
    for k in range(len(pts)):
        c += pts[k]
    c = c / pts.shape[0]
    for k in range(len(pts)):
        pts[k] -= c
    return c


@tack.func
def total_length(pts):
    s = tack.f32(0.0)
    for k in range(pts.shape[0]):
        s += tack.length(pts[k])
    return s


@tack.kernel
def recentred(p, moved, centers, radius):
    for i in range(radius.shape[0]):
        pts = tack.zeros(4, tack.vec3)
        for k in range(4):
            pts[k] = p[4 * i + k]
        centers[i] = center(pts)
        moved[i] = pts[3]
        radius[i] = total_length(pts)


def test_passed_to_tack_funcs_against_numpy():
    pn = np.random.default_rng(6).standard_normal((24, 3)).astype(np.float32)
    moved, centers, radius = tack.zeros(6, tack.vec3), tack.zeros(6, tack.vec3), np.zeros(6, np.float32)
    recentred(vecs(pn, tack.vec3), moved, centers, radius)
    groups = pn.reshape(6, 4, 3)
    c = groups.mean(1)
    np.testing.assert_allclose(centers.numpy(), c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moved.numpy(), groups[:, 3] - c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(radius, np.linalg.norm(groups - c[:, None], axis=2).sum(1), rtol=1e-5)


# ----------------------------------------------------------- bounds checks
@tack.kernel
def vec_reads_past(out, k):
    for i in range(out.shape[0]):
        w = tack.ones((2, 4), tack.vec2)
        out[i] = w[1, k]


@tack.func
def element(a, k):
    return a[k]


@tack.kernel
def mat_reads_past_in_a_func(out, k):
    for i in range(out.shape[0]):
        w = tack.zeros(3, tack.mat22)
        out[i] = element(w, k)


def test_indices_are_checked_against_the_constant_extents():
    out = tack.zeros(2, tack.vec2)
    vec_reads_past(out, -4)
    assert out.numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 1 with size 4 \(array 'w'"):
        vec_reads_past(out, 4)
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 1 with size 4 \(array 'w'"):
        vec_reads_past(out, -5)
    m = tack.zeros(2, tack.mat22)
    mat_reads_past_in_a_func(m, 2)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3 \(array 'a'"):
        mat_reads_past_in_a_func(m, 3)


# ----------------------------------------------------------- the old refusal
@tack.kernel
def vector_elements(out):
    for i in range(out.shape[0]):
        t = np.zeros(4, tack.vec3)
        out[i] = t[0].x


def test_the_refused_kernel_now_runs():
    """test_local_arrays.py once had this kernel as a CompileError."""
    out = np.ones(3)
    vector_elements(out)
    assert out.tolist() == [0.0, 0.0, 0.0]


# ----------------------------------------------------------- sizes
@tack.kernel
def vec_too_large(out):
    for i in range(out.shape[0]):
        t = tack.zeros(1366, tack.vec3)         # 1366 * 12 = 16392 bytes
        out[i] = t[0].x


@tack.kernel
def mat_gpu_sized(out):
    for i in range(out.shape[0]):
        t = np.zeros(33, tack.mat44d)           # 33 * 128 = 4224 bytes: fine on the CPU, too large for a GPU
        out[i] = t[32][3, 3]


@tack.kernel
def vec_largest(out):
    for i in range(out.shape[0]):
        t = tack.zeros(1365, tack.vec3)         # 16380 bytes: fits
        out[i] = t[-1].z


def test_sizes_count_the_elements_bytes():
    out = np.zeros(2)
    err = compile_error(vec_too_large, out)
    assert "local array 't' of shape (1366,) and dtype vec3 is too large: 16392 bytes" in err.msg, err.msg
    # (sources only: the GPU replays of this file's calls would refuse these two)
    assert "[1365] = {0};" in vec_largest.generated_source(out)
    assert "[33] = {0};" in mat_gpu_sized.generated_source(out)
    for target in ("cuda", "opencl", "hip"):
        with pytest.raises(tack.CompileError, match=r"dtype mat44d is too large: 4224 bytes, and a local array may "
                                                    r"take at most 4096 bytes on a GPU"):
            mat_gpu_sized.generated_source(out, target=target)


# ----------------------------------------------------------- compile errors
def compile_error(kernel, *args):
    with pytest.raises(tack.CompileError) as info:
        kernel(*args)
    return info.value


@tack.kernel
def short_fill(out):
    for i in range(out.shape[0]):
        t = tack.full(2, tack.vec2(1.0, 2.0), tack.vec3)
        out[i] = t[0].x


@tack.kernel
def vector_fill_for_a_matrix(out):
    for i in range(out.shape[0]):
        t = tack.full(2, tack.vec3(1.0, 2.0, 3.0), tack.mat33)
        out[i] = t[0][0, 0]


@tack.kernel
def matrix_fill_for_a_vector(out):
    for i in range(out.shape[0]):
        t = np.full(2, tack.mat22(1.0, 2.0, 3.0, 4.0), tack.vec4)
        out[i] = t[0].x


@tack.kernel
def complex_fill(out):
    for i in range(out.shape[0]):
        t = tack.full(2, 1j, tack.vec3)
        out[i] = t[0].x


@tack.kernel
def vector_fill_without_a_dtype(out):
    for i in range(out.shape[0]):
        t = tack.full(2, tack.vec3(1.0, 2.0, 3.0))
        out[i] = t[0].x


@tack.kernel
def matrix_fill_without_a_dtype(out):
    for i in range(out.shape[0]):
        t = np.full(2, tack.mat22(1.0, 2.0, 3.0, 4.0))
        out[i] = t[0][0, 0]


@tack.kernel
def vector_fill_for_a_number(out):
    for i in range(out.shape[0]):
        t = np.full(2, tack.vec3(1.0, 2.0, 3.0), np.float32)
        out[i] = t[0]


@tack.kernel
def stores_a_shorter_vector(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.vec3)
        t[0] = tack.vec2(1.0, 2.0)
        out[i] = t[0].x


@tack.kernel
def stores_another_vector_type(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.vec3)
        t[0] = tack.vec3d(1.0, 2.0, 3.0)
        out[i] = t[0].x


@tack.kernel
def stores_a_complex(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.vec3)
        t[1] = 2j
        out[i] = t[0].x


@tack.kernel
def stores_a_vector_in_a_number(out):
    for i in range(out.shape[0]):
        s = np.zeros(2)
        s[0] = tack.vec3(1.0, 2.0, 3.0)
        out[i] = s[0]


@tack.kernel
def adds_a_shorter_vector(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.vec3)
        t[0] += tack.vec2(1.0, 2.0)
        out[i] = t[0].x


@tack.kernel
def indexes_a_component_as_an_axis(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.vec3)
        out[i] = t[0, 1]


@tack.kernel
def vector_written_by_iterations(out):
    acc = tack.zeros(2, tack.vec3)
    for i in range(out.shape[0]):
        acc[i % 2] += 1.0


@pytest.mark.parametrize("k, msg", [
    (short_fill, r"local array 't' of vec3 cannot be filled with vec2: its fill value is a real number, given to "
                 r"every component, or a vector of 3 components"),
    (vector_fill_for_a_matrix, r"local array 't' of mat33 cannot be filled with vec3: its fill value is a real "
                               r"number, given to every component, or a 3 x 3 matrix"),
    (matrix_fill_for_a_vector, r"local array 't' of vec4 cannot be filled with mat22: .* or a vector of 4 components"),
    (complex_fill, r"local array 't' of vec3 cannot be filled with complex \(Python\)"),
    (vector_fill_without_a_dtype, r"local array 't': tack.full\(\) of a vec3 value needs a dtype \(tack.vec3\), as "
                                  r"outside a kernel"),
    (matrix_fill_without_a_dtype, r"local array 't': np.full\(\) of a mat22 value needs a dtype \(tack.mat22\)"),
    (vector_fill_for_a_number, r"local array 't' cannot be filled with vec3"),
    (stores_a_shorter_vector, r"cannot store vec2 into an element of local array 't' \(vec3\)"),
    (stores_another_vector_type, r"cannot store vec3d into an element of local array 't' \(vec3\)"),
    (stores_a_complex, r"cannot store complex \(Python\) into an element of local array 't' \(vec3\)"),
    (stores_a_vector_in_a_number, r"cannot store vec3 into an element of local array 's' \(f64\)"),
    (adds_a_shorter_vector, r"vec3 and vec2"),
    (indexes_a_component_as_an_axis, r"local array 't' has 1 dimension but is indexed with 2 indices"),
    (vector_written_by_iterations, r"local array 'acc' is created before the parallel loop \(line \d+\) and "
                                   r"written inside it"),
])
def test_bad_vector_local_arrays_are_compile_errors(k, msg):
    err = compile_error(k, np.zeros(2))
    assert err.lineno is not None
    assert re.search(msg, err.msg), err.msg


def variable_matrix_index(out):
    for i in range(out.shape[0]):
        t = tack.zeros(2, tack.mat22)
        t[1] = tack.mat22(1.0, 2.0, 3.0, 4.0)
        out[i] = t[1][i % 2, 0] + t[1][-1 - i % 2][1] * 10.0


@pytest.mark.parametrize("jit", [True, False])
def test_run_time_indices_into_a_matrix_element(jit):
    # a CompileError before 2026-12-06 (decisions.md): a matrix's indices are now checked and
    # wrapped at run time as a vector's are (tests/python/test_matrix_ops.py)
    out = np.zeros(4)
    tack.kernel(variable_matrix_index, jit=jit)(out)
    assert out.tolist() == [41.0, 23.0, 41.0, 23.0]


# ------------------------------------------------------- the GPU dialects
def test_dialects_declare_zeroed_private_vector_arrays():
    pn = vecs(np.zeros((30, 3), np.float32), tack.vec3)
    rn = vecs(np.zeros((10, 3, 3), np.float32), tack.mat33)
    for target in ("cuda", "opencl", "hip"):
        src = windows.generated_source(pn, tack.zeros(28, tack.vec3), np.zeros(28, np.float32), target=target)
        assert re.search(r"tk_vec3 v\w*\[3\] = \{0\};", src), target
        src = transforms.generated_source(rn, pn[:10], tack.zeros(10, tack.vec3), np.zeros(10, np.float32),
                                          target=target)
        assert re.search(r"tk_mat33 v\w*\[2\] = \{0\};", src), target
        src = taps_before_the_loop.generated_source(pn, tack.zeros(28, tack.vec3), target=target)
        assert re.search(r"tk_vec3 v\w*\[3\];", src), target    # the taps travel to the loop's phase in the frame


def test_dialects_pass_a_vector_array_as_a_private_pointer():
    pn = vecs(np.zeros((24, 3), np.float32), tack.vec3)
    for target in ("cuda", "opencl", "hip"):
        src = recentred.generated_source(pn, tack.zeros(6, tack.vec3), tack.zeros(6, tack.vec3), np.zeros(6, np.float32),
                                         target=target)
        assert re.search(r"tk_vec3 \*a0, int64_t a0_s0\)", src), target


@tack.kernel
def f64_matrices(out):
    for i in range(out.shape[0]):
        t = tack.ones(2, tack.mat22d)
        out[i] = tack.f32(t[0][1, 1])


def test_metal_refuses_a_float64_vector_array_by_name():
    out = np.zeros(2, np.float32)
    f64_matrices(out)
    assert out.tolist() == [1.0, 1.0]
    with pytest.raises(tack.CompileError, match=r"Metal has no double precision .*: the value 't' is mat22d"):
        f64_matrices.generated_source(out, target="metal")
    assert "[2] = {0};" in f64_matrices.generated_source(out, target="cuda")


def test_the_cuda_source_runs_as_on_the_cpu():
    """The generated CUDA source of the vector kernels, run by the CPU
    emulator (test_cuda.py's), gives the CPU's bits: per-thread arrays, one
    made before the loop (copied through the frame), and one passed to
    @tack.func helpers."""
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    rng = np.random.default_rng(14)
    pn = rng.standard_normal((24, 3)).astype(np.float32)
    rn = rng.standard_normal((10, 3, 3)).astype(np.float32)
    cases = [
        (windows, lambda: (vecs(pn, tack.vec3), tack.zeros(22, tack.vec3), np.zeros(22, np.float32))),
        (transforms, lambda: (vecs(rn, tack.mat33), vecs(pn[:10], tack.vec3), tack.zeros(10, tack.vec3),
                              np.zeros(10, np.float32))),
        (taps_before_the_loop, lambda: (vecs(pn, tack.vec3), tack.zeros(22, tack.vec3))),
        (recentred, lambda: (vecs(pn, tack.vec3), tack.zeros(6, tack.vec3), tack.zeros(6, tack.vec3),
                             np.zeros(6, np.float32))),
        (plain_arrays, lambda: (pn.copy(), np.zeros((24, 3), np.float32))),
    ]
    for k, make in cases:
        want = make()
        k(*want)
        want = [a.numpy() if isinstance(a, tack.Array) else a for a in want]
        for grid, block in ((3, 32), (1, 1), (5, 7)):
            args = make()
            src = k.generated_source(*args, target="cuda")
            em = [(a.numpy().copy(), a.shape) if isinstance(a, tack.Array) else a for a in args]
            assert _cuda_emulate.run(src, em, grid, block)[0] == 0, k.__name__
            got = [a[0] if isinstance(a, tuple) else a for a in em]
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w, err_msg=f"{k.__name__} {grid}x{block}")
