"""Local arrays: np.zeros / np.ones / np.empty / np.full (and tack's) of a
constant shape inside a kernel or a @tack.func (lower_local.c).

Each kernel here is compared with the same function run as plain Python and
NumPy (the undecorated function), and every bad input has its error.  The
GPU test files replay this file on each dialect's compile path (test_cuda.py,
test_opencl.py, test_hip.py), and test_differential.py runs it without the
optimizing passes."""

import numpy as np
import pytest

import tack

TAPS = 5
N = 3


def _compare(fn, make, outputs, **tol):
    """fn compiled as a kernel against fn itself, plain Python and NumPy."""
    got, want = make(), make()
    tack.kernel(fn)(*got)
    fn(*want)
    for i in outputs:
        if tol:
            np.testing.assert_allclose(got[i], want[i], **tol)
        else:
            np.testing.assert_array_equal(got[i], want[i])
        assert got[i].dtype == want[i].dtype
    return got


# ----------------------------------------------------------- differential
def fir(x, out):
    w = np.zeros(TAPS, np.float32)      # created before the loop, only read in it
    w[0] = 0.5
    w[1] = 0.25
    w[2] = 0.125
    w[3] = 0.0625
    w[-1] = 0.0625                      # negative indices count from the end
    for i in range(out.shape[0]):
        acc = np.float32(0)
        for k in range(len(w)):
            acc += w[k] * x[i + k]
        out[i] = acc


def median5(x, out):
    for i in range(out.shape[0]):
        win = np.empty(5, dtype=x.dtype)    # private to the iteration
        for k in range(5):
            win[k] = x[i + k]
        for a in range(1, 5):               # insertion sort
            v = win[a]
            b = a - 1
            while b >= 0 and win[b] > v:
                win[b + 1] = win[b]
                b -= 1
            win[b + 1] = v
        out[i] = win[2]


def matmul3(a, b, c):
    for i in range(a.shape[0]):
        m = np.zeros((N, N))
        n = np.zeros((N, N))
        for r in range(N):
            for s in range(N):
                m[r, s] = a[i, r * N + s]
                n[r, s] = b[i, r * N + s]
        p = np.zeros((N, N))
        for r in range(N):
            for s in range(N):
                for t in range(N):
                    p[r, s] += m[r, t] * n[t, s]
        rows, cols = p.shape
        for r in range(rows):
            for s in range(cols):
                c[i, r * N + s] = p[r, s]


def histogram_rows(x, out):
    for i in range(x.shape[0]):
        counts = np.zeros(4, np.int32)
        for j in range(x.shape[1]):
            counts[x[i, j] % 4] += 1
        best = 0
        for k in range(1, 4):
            if counts[k] > counts[best]:
                best = k
        out[i] = best * 100 + counts[best]


def fresh_each_time(out):
    for i in range(out.shape[0]):
        total = 0
        for rep in range(3):
            seen = np.zeros((2, 2, 2), np.int64)   # 3-D, created again each time round: zeros again
            for a in range(2):
                seen[a, a, a] += i + rep
            total += seen[1, 1, 1] + seen[0, 1, 0] + seen.size + seen.ndim
        out[i] = total


def kinds(out):
    for i in range(out.shape[0]):
        a = np.ones(2, np.int32)
        b = np.full((2, 3), 2.5)
        c = np.full(3, 7)
        d = np.zeros(2, dtype=bool)
        e = np.ones(N * 2 - 1, "float32")
        f = np.zeros(3, float)
        d[1] = a[0] > 0
        out[i] = a[1] + b[1, 2] + c[2] + d[1] + d[0] + e[4] + f[0] + len(e) + b.shape[-1]


def many_locals(x, d, out):
    for i in range(out.shape[0]):
        a0 = x[i]
        a1 = a0 + 1
        a2 = a1 + 1
        a3 = a2 + 1
        a4 = a3 + 1
        a5 = a4 + 1
        a6 = a5 + 1
        a7 = a6 + 1
        a8 = a7 + 1
        a9 = a8 + 1
        a10 = a9 + 1
        a11 = a10 + 1
        t = np.full((2, 2), x[i] // d[i] + x[i] % d[i])   # temporaries: the locals grow (and move) here
        t[a0 % 2, (a11 // d[i]) % 2] += a11
        out[i] = t[0, 0] * 1000 + t[0, 1] * 100 + t[1, 0] * 10 + t[1, 1]


def test_a_fill_value_with_temporaries():
    x = np.arange(30, dtype=np.int64)
    d = np.arange(1, 31, dtype=np.int64) % 7 + 1
    _compare(many_locals, lambda: (x.copy(), d.copy(), np.zeros(30, np.int64)), (2,))


def test_filter_taps_made_before_the_loop():
    x = np.arange(20, dtype=np.float32) ** 1.5
    _compare(fir, lambda: (x.copy(), np.zeros(16, np.float32)), (1,))
    ir = tack.kernel(fir).ir(x, x[:16])
    assert "local w: f32[5] = 0" in ir and "lstore w[" in ir and "(lload w " in ir


@pytest.mark.optimized_source
def test_constant_indices_need_no_checks():
    x = np.arange(20, dtype=np.float32)
    ir = tack.kernel(fir).ir(x, x[:16])
    assert "lstore w[4] = 0.0625" in ir          # w[-1]: wrapped when compiled
    # the five taps' loop is unrolled (unroll.c): w[k] has constant indices, and x[i + k], one per tap,
    # is checked once for the whole loop before it
    assert ir.count("check.index #") == 1, ir     # w[-1]
    assert ir.count("check.index.range #") == 5 and "check" not in ir.split("pfor", 1)[1], ir


def test_per_iteration_scratch_sorts_a_window():
    rng = np.random.default_rng(3)
    for dt in (np.float64, np.int16):
        x = (rng.standard_normal(300) * 100).astype(dt)
        got = _compare(median5, lambda: (x.copy(), np.zeros(296, dt)), (1,))
        want = np.median(np.lib.stride_tricks.sliding_window_view(x, 5), axis=1).astype(dt)
        np.testing.assert_array_equal(got[1], want)


def test_small_matrix_multiply():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((50, 9)), rng.standard_normal((50, 9))
    got = _compare(matmul3, lambda: (a.copy(), b.copy(), np.zeros((50, 9))), (2,))
    want = np.einsum("irt,its->irs", a.reshape(50, 3, 3), b.reshape(50, 3, 3)).reshape(50, 9)
    np.testing.assert_allclose(got[2], want, rtol=1e-12)


def test_counts_with_compound_assignment():
    x = np.random.default_rng(9).integers(0, 50, (40, 17))
    _compare(histogram_rows, lambda: (x.copy(), np.zeros(40, np.int64)), (1,))


def test_an_array_created_in_a_loop_starts_afresh_each_time():
    got = _compare(fresh_each_time, lambda: (np.zeros(6, np.int64),), (0,))
    assert got[0][0] == (0 + 1 + 2) + 3 * (8 + 3)


def test_dtypes_fill_values_and_attributes():
    got = _compare(kinds, lambda: (np.zeros(3),), (0,))
    assert got[0][0] == 1 + 2.5 + 7 + 1 + 0 + 1 + 0 + 5 + 3


def complex_scratch(x, out):
    for i in range(x.shape[0] - 2):
        w = np.zeros(3, np.complex64)
        w[0] = x[i]
        w[1] = x[i + 1] * 1j
        w[2] = x[i + 2].conjugate()
        v = np.ones(2, np.complex128)
        v[1] = w[0] * 2
        f = np.full(2, 0.5 - 1j)            # a complex fill value: complex128, as in NumPy
        out[i] = w[0] + w[1] * w[2] + v[0] + v[1] + f[1] * len(w)


def test_complex_elements():
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(40) + 1j * rng.standard_normal(40)).astype(np.complex64)
    _compare(complex_scratch, lambda: (x.copy(), np.zeros(38, np.complex128)), (1,), rtol=1e-6)


@tack.func
def norm3(x, i):
    v = np.zeros(3)
    for k in range(3):
        v[k] = x[i, k]
    s = 0.0
    for k in range(3):
        s += v[k] * v[k]
    return s


@tack.kernel
def norms(x, out):
    for i in range(x.shape[0]):
        out[i] = norm3(x, i)


def test_in_a_tack_func():
    x = np.random.default_rng(1).standard_normal((10, 3))
    out = np.zeros(10)
    norms(x, out)
    np.testing.assert_allclose(out, (x * x).sum(axis=1), rtol=1e-14)


@tack.kernel
def tack_defaults(out, v):
    for i in range(out.shape[0]):
        a = tack.zeros(2)                   # Tack's default dtype: f32
        b = tack.full(2, v)                 # from the value: a Python float is f32
        c = tack.ones((1, 2), tack.f64)
        d = tack.empty(3, dtype=tack.i8)    # zero-filled, as every local array
        a[0] = 1.0 / 3.0
        out[i] = a[0] + b[1] + c[0, 1] + d[2]


def test_tack_constructors():
    out = np.zeros(2)
    tack_defaults(out, 0.1)
    assert out[0] == np.float64(np.float32(1 / 3) + np.float32(0.1)) + 1.0
    assert "float v" in tack_defaults.generated_source(out, 0.1)


@tack.kernel
def shared_fill(x, out, s):
    c = np.full((2, 2), s)                  # a scalar parameter's value, read by every iteration
    c[1, 0] = 2 * s
    for i in range(x.shape[0]):
        out[i] = x[i] * c[i % 2, 0]


def test_an_array_made_from_a_parameter_read_in_the_loop():
    out = np.zeros(5)
    shared_fill(np.arange(5.0), out, 3.0)
    np.testing.assert_array_equal(out, np.arange(5.0) * [3, 6, 3, 6, 3])


# ------------------------------------------------- passed to a @tack.func
@tack.func
def dot(a, b):
    s = 0.0
    for k in range(len(a)):
        s += a[k] * b[k]
    return s


@tack.func
def fill_row(buf, i):
    for k in range(buf.shape[0]):
        buf[k] = (i + 1) * (k + 1)
    buf[0] += 0.5                           # no atomic: the array is the iteration's own


@tack.func
def load_row(buf, x, i):
    for k in range(len(buf)):
        buf[k] = x[i, k]


@tack.func
def transpose_into(m, t):
    rows, cols = m.shape
    for r in range(rows):
        for c in range(cols):
            t[c, r] = m[r, c]


def through_funcs(x, w, out):
    for i in range(x.shape[0]):
        a = np.zeros(3)
        fill_row(a, i)                      # writes the caller sees, as NumPy's
        b = np.ones(3)
        load_row(b, x, i)                   # a local and a parameter in one call
        m = np.zeros((2, 3))
        for r in range(2):
            for c in range(3):
                m[r, c] = a[c] * (r + 1)
        t = np.zeros((3, 2))
        transpose_into(m, t)
        out[i] = dot(a, b) + dot(w, w) + t[2, 1] + takes(a)   # dot(): a local and a parameter


def test_passed_to_tack_funcs_by_reference():
    x = np.random.default_rng(5).standard_normal((7, 3)).round(3)
    got = _compare(through_funcs, lambda: (x.copy(), np.arange(3.0), np.zeros(7)),
                   (2,), rtol=1e-13)
    src = tack.kernel(through_funcs).generated_source(*got)
    assert "tk_atomic_" not in src
    assert src.count("double tk_f") == 2 * 3                # dot(local, local) and dot(param, param): two


def shared_taps(x, out):
    w = np.zeros(3)                         # made before the loop, only read by dot() inside it
    w[0] = 0.25
    w[1] = 0.5
    w[2] = 0.25
    for i in range(out.shape[0]):
        win = np.zeros(3)
        for k in range(3):
            win[k] = x[i + k]
        out[i] = dot(w, win)


def test_read_by_a_func_inside_the_loop():
    _compare(shared_taps, lambda: (np.arange(10.0) ** 2, np.zeros(8)), (1,), rtol=1e-15)


@tack.func
def mark(flags, counts, v):
    for k in range(len(flags)):
        flags[k] = v > k
        counts[k] += 2 * k


def other_dtypes(x, out):
    for i in range(x.shape[0]):
        flags = np.zeros(4, np.bool_)
        counts = np.full(4, 3, np.int32)
        mark(flags, counts, x[i])
        n = 0
        for k in range(4):
            if flags[k]:
                n += counts[k]
        out[i] = n


def test_bools_and_ints_by_reference():
    _compare(other_dtypes, lambda: (np.array([-1.0, 0.5, 2.5, 9.0]), np.zeros(4, np.int64)), (1,))


@tack.func
def get(a, k):
    return a[k]


@tack.kernel
def reads_past_in_a_func(out, k):
    for i in range(out.shape[0]):
        w = np.zeros(4)
        out[i] = get(w, k)


def test_a_func_checks_indices_against_the_constant_extents():
    out = np.zeros(2)
    reads_past_in_a_func(out, -4)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 0 with size 4 \(array 'a'"):
        reads_past_in_a_func(out, 4)
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 0 with size 4 \(array 'a'"):
        reads_past_in_a_func(out, -5)


# ----------------------------------------------------------- bounds checks
@tack.kernel
def reads_past(out, k):
    for i in range(out.shape[0]):
        w = np.zeros((2, 8))
        out[i] = w[1, k]


@tack.kernel(checks=False)
def reads_unchecked(out, k):
    for i in range(out.shape[0]):
        w = np.ones(8)
        out[i] = w[k]


def test_indices_are_checked_against_the_constant_extents():
    out = np.zeros(3)
    reads_past(out, -8)                     # the first element, from the end
    with pytest.raises(IndexError, match=r"index 8 is out of bounds for axis 1 with size 8 \(array 'w'"):
        reads_past(out, 8)
    with pytest.raises(IndexError, match=r"index -9 is out of bounds for axis 1 with size 8 \(array 'w'"):
        reads_past(out, -9)
    reads_unchecked(out, 7)
    assert out.tolist() == [1.0, 1.0, 1.0]
    assert "abi->fail" not in reads_unchecked.generated_source(out, 7)


# ----------------------------------------------------------- compile errors
def compile_error(kernel, *args):
    with pytest.raises(tack.CompileError) as info:
        kernel(*args)
    return info.value


@tack.kernel
def shape_from_parameter(out, n):
    for i in range(out.shape[0]):
        t = np.zeros(n)
        out[i] = t[0]


@tack.kernel
def shape_from_array(out):
    for i in range(out.shape[0]):
        t = np.zeros((2, out.shape[0]))
        out[i] = t[0, 0]


HALF = 0.5


@tack.kernel
def shape_from_float(out):
    for i in range(out.shape[0]):
        t = np.zeros((HALF * 4, 2))
        out[i] = t[0, 0]


@tack.kernel
def too_large(out):
    for i in range(out.shape[0]):
        t = np.zeros((64, 64))
        out[i] = t[0, 0]


@tack.kernel
def gpu_sized(out):
    for i in range(out.shape[0]):
        t = np.zeros(1024, np.float64)      # 8 KiB: fine on the CPU, too large for a GPU
        out[i] = t[0]


@tack.kernel
def half_floats(out):
    for i in range(out.shape[0]):
        t = np.zeros(4, np.float16)         # f16 elements: each store rounds (test_local_arrays_f16.py)
        t[1] = 1 + 2**-11
        t[2] = 70000
        out[i] = t[0] + t[1] + t[2]


@tack.kernel
def complex_tack_full(out):
    for i in range(out.shape[0]):
        t = tack.full(2, 1j)
        out[i] = t[0].real


@tack.kernel
def not_a_dtype(out):
    for i in range(out.shape[0]):
        t = np.zeros(4, "no such type")
        out[i] = t[0]


@tack.kernel
def dtype_from_a_variable(out, x):
    for i in range(out.shape[0]):
        t = np.zeros(4, x)
        out[i] = t[0]


@tack.kernel
def written_by_iterations(out):
    acc = np.zeros(4)
    for i in range(out.shape[0]):
        acc[i % 4] += out[i]


@tack.func
def gives():
    t = np.zeros(4)
    return t


@tack.kernel
def returned(out):
    for i in range(out.shape[0]):
        out[i] = gives()


@tack.func
def takes(t):
    return t[0]


@tack.kernel
def written_by_a_func(out):
    buf = np.zeros(3)
    for i in range(out.shape[0]):
        fill_row(buf, i)                    # a write through a function: the same race
        out[i] = buf[0]


@tack.func
def passes_on(b, i):
    fill_row(b, i)


@tack.kernel
def written_further_down(out):
    buf = np.zeros(3)
    for i in range(out.shape[0]):
        passes_on(buf, i)
        out[i] = buf[1]


@tack.func
def bumps(buf):
    tack.atomic_add(buf, 0, 1.0)


@tack.kernel
def atomic_on_a_local(out):
    for i in range(out.shape[0]):
        buf = np.zeros(2)
        bumps(buf)
        out[i] = buf[0]


@tack.kernel
def atomic_on_own_local(out):
    for i in range(out.shape[0]):
        buf = np.zeros(2)
        tack.atomic_add(buf, 0, 1.0)
        out[i] = buf[0]


@tack.kernel
def in_an_expression(out):
    for i in range(out.shape[0]):
        t = np.zeros(4)
        out[i] = takes(t + 1)


@tack.kernel
def aliased(out):
    for i in range(out.shape[0]):
        t = np.zeros(4)
        u = t
        out[i] = u[0]


@tack.kernel
def reshaped(out):
    for i in range(out.shape[0]):
        t = np.zeros(4)
        t = np.zeros(5)
        out[i] = t[0]


@tack.kernel
def not_assigned(out):
    for i in range(out.shape[0]):
        out[i] = np.zeros(4)[0]


@tack.kernel
def bad_keyword(out):
    for i in range(out.shape[0]):
        t = np.zeros(4, order="F")
        out[i] = t[0]


@tack.kernel
def wrong_rank(out):
    for i in range(out.shape[0]):
        t = np.zeros((2, 2))
        out[i] = t[1]


@tack.kernel
def like(out):
    for i in range(out.shape[0]):
        t = np.zeros_like(out)
        out[i] = t[0]


@pytest.mark.parametrize("k, msg", [
    (shape_from_parameter, r"the shape of a local array must be a compile-time constant \(int literals, module-level "
                           r"int constants and arithmetic on them\), and 'n' is not one"),
    (shape_from_array, r"the shape of a local array must be a compile-time constant .*, and 'out.shape\[0\]' is not one"),
    (shape_from_float, r"and 'HALF' is not one"),
    (too_large, r"local array 't' of shape \(64, 64\) and dtype f64 is too large: 32768 bytes, and a local array "
                r"may take at most 16384 bytes on the CPU"),
    (complex_tack_full, r"tack.full\(\) of a complex value needs a dtype \(tack.complex64 or tack.complex128\)"),
    (not_a_dtype, r"'no such type' is not a dtype a local array can have"),
    (dtype_from_a_variable, r"the dtype of a local array must be a constant such as np.float32, tack.f32 or "
                            r"'float32', not 'x'"),
    (written_by_iterations, r"local array 'acc' is created before the parallel loop \(line \d+\) and written inside "
                            r"it: its iterations would race on the one array; create it inside the loop"),
    (returned, r"local array 't' cannot be used as a value"),
    (written_by_a_func, r"local array 'buf' is created before the parallel loop \(line \d+\) and written inside "
                        r"it by fill_row\(\): its iterations would race on the one array; create it inside the loop"),
    (written_further_down, r"local array 'buf' is created before the parallel loop \(line \d+\) and written "
                           r"inside it by passes_on\(\)"),
    (atomic_on_a_local, r"atomic_add\(\) on 'buf', which receives a local array: a local array belongs to one "
                        r"thread, so there is nothing to be atomic against; write buf\[i\] \+= v instead"),
    (atomic_on_own_local, r"atomic_add\(\) on 'buf', a local array: it belongs to one thread, so there is "
                          r"nothing to be atomic against; write buf\[i\] \+= v instead"),
    (in_an_expression, r"local array 't' cannot be used as a value \(assigned to another name, returned, or in an "
                       r"expression\); .* or pass it whole to a @tack.func: f\(t\)"),
    (aliased, r"local array 't' cannot be used as a value"),
    (reshaped, r"local array 't' is created again with another shape or dtype"),
    (not_assigned, r"numpy.zeros\(\) makes a local array only as the whole value of an assignment to a name"),
    (bad_keyword, r"numpy.zeros\(\) in a kernel takes only the shape and dtype=, not 'order='"),
    (wrong_rank, r"local array 't' has 2 dimensions but is indexed with 1 index"),
    (like, r"'np.zeros_like' creates an array; inside a kernel only np.zeros, np.ones, np.empty and np.full"),
])
def test_bad_local_arrays_are_compile_errors(k, msg):
    args = [np.zeros(2)]
    if k is shape_from_parameter:
        args.append(4)
    if k is dtype_from_a_variable:
        args.append(1.5)
    err = compile_error(k, *args)
    assert err.lineno is not None
    assert pytest.importorskip("re").search(msg, err.msg), err.msg


def test_float16_elements_are_no_longer_refused():
    out = np.zeros(2)
    half_floats(out)
    assert out.tolist() == [np.inf, np.inf]
    t = np.zeros(3, np.float16)
    t[1] = 1 + 2**-11                       # a tie: to even, 1.0
    assert t[1] == 1.0 and np.isinf(np.float16(70000))


def test_gpu_dialects_take_smaller_arrays():
    out = np.zeros(2)
    assert "[1024] = {0};" in gpu_sized.generated_source(out)   # 8 KiB on the CPU: fine
    for target in ("cuda", "opencl", "hip"):
        with pytest.raises(tack.CompileError, match=r"8192 bytes, and a local array may take at most 4096 bytes on a GPU"):
            gpu_sized.generated_source(out, target=target)


def test_the_not_a_func_message_is_gone():
    @tack.kernel
    def uses_tack_zeros(out):
        for i in range(out.shape[0]):
            t = tack.zeros(3, tack.f32)
            out[i] = t[0] + len(t)

    out = np.zeros(2)
    uses_tack_zeros(out)
    assert out.tolist() == [3.0, 3.0]


# ------------------------------------------------------- the GPU dialects
def test_dialects_declare_zeroed_private_arrays():
    x = np.arange(20, dtype=np.float32)
    a = np.zeros((4, 9))
    for target in ("cuda", "opencl", "hip"):
        src = tack.kernel(matmul3).generated_source(a, a, a, target=target)
        assert "double v" in src and "[9] = {0};" in src, target
        src = tack.kernel(fir).generated_source(x, x[:16], target=target)
        assert "[5] = {0};" in src, target        # the taps travel to the loop's phase in the frame


def test_dialects_declare_complex_arrays():
    x = np.zeros(8, np.complex64)
    for target in ("cuda", "opencl", "hip"):
        src = tack.kernel(complex_scratch).generated_source(x, np.zeros(6, np.complex128), target=target)
        assert "tk_c64 v" in src and "tk_c128 v" in src and "[3] = {0};" in src, target


def test_complex_arrays_in_the_cuda_source_run_as_on_the_cpu():
    """The generated CUDA source, run by the CPU emulator (test_cuda.py's),
    gives the CPU's bits."""
    import _cuda_emulate

    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    rng = np.random.default_rng(13)
    x = (rng.standard_normal(40) + 1j * rng.standard_normal(40)).astype(np.complex64)
    k = tack.kernel(complex_scratch)
    want = np.zeros(38, np.complex128)
    k(x, want)
    args = [x.copy(), np.zeros(38, np.complex128)]
    assert _cuda_emulate.run(k.generated_source(*args, target="cuda"), args, 3, 8)[0] == 0
    np.testing.assert_array_equal(args[1], want)


def test_dialects_pass_a_local_array_as_a_private_pointer():
    x = np.zeros((7, 3))
    for target in ("cuda", "opencl", "hip"):
        src = tack.kernel(through_funcs).generated_source(x, np.arange(3.0), np.zeros(7), target=target)
        assert "double *a0, int64_t a0_s0, double *a1, int64_t a1_s0)" in src, target
        if target == "opencl":                  # the parameters' dot(): global memory
            assert "__global double *a0, int64_t a0_s0, __global double *a1, int64_t a1_s0)" in src
