"""What the kernel language refuses, it refuses with a message that says what
to write instead: empty indices, slices, creating arrays, Tack's host API
and NumPy functions that are no intrinsics (ndrange's arguments are in
test_ndrange_bounds.py; local arrays' in test_local_arrays.py)."""

import numpy as np
import pytest

import tack


@tack.kernel
def empty_index(x, out):
    for i in range(out.shape[0]):
        out[i] = x[()]


@tack.kernel
def slice_read(x, out):
    for i in range(1):
        out[0] = x[1:3]


@tack.kernel
def slice_write(x):
    for i in range(1):
        x[:, 0] = 1.0


@tack.kernel
def tack_zeros(out):
    for i in range(out.shape[0]):
        tmp = tack.zeros(8, tack.f32)   # a local array (test_local_arrays.py)
        out[i] = tmp[0]


@tack.kernel
def np_arange(out):
    for i in range(out.shape[0]):
        tmp = np.arange(8)
        out[i] = tmp[0]


@tack.kernel
def tack_zeros_of(out, n):
    for i in range(out.shape[0]):
        tmp = tack.zeros(n, tack.f32)
        out[i] = tmp[0]


@tack.kernel
def host_api(out):
    for i in range(out.shape[0]):
        tack.synchronize()


@tack.kernel
def np_sum(out):
    for i in range(out.shape[0]):
        out[i] = np.sum(out[i])


@tack.kernel
def builtin_divmod(x, out):
    for i in range(out.shape[0]):
        out[i] = divmod(x[i], 2)[0]


@pytest.mark.parametrize("k, args, msg, at", [
    (empty_index, (np.zeros(()), np.zeros(2)), r"an empty index, x\[\(\)\], is not supported in kernels: pass "
                                                r"the value of a 0-D array as a scalar argument", "x[()]"),
    (slice_read, (np.zeros(4), np.zeros(2)), r"slices are not supported in kernels: .*write the loop instead, "
                                             r"e.g. 'for i in range\(lo, hi\): a\[i\] = b\[i\]'", "1:3"),
    (slice_write, (np.zeros((2, 2)),), r"slices are not supported in kernels", ":"),
    (np_arange, (np.zeros(2),), r"'np.arange' creates an array; inside a kernel only np.zeros, np.ones, np.empty "
                                r"and np.full \(and tack's\) create one, a small local array of constant shape: "
                                r"create this one outside and pass it as an argument", "np.arange"),
    (tack_zeros_of, (np.zeros(2), 8), r"the shape of a local array must be a compile-time constant \(int literals, "
                                      r"module-level int constants and arithmetic on them\), and 'n' is not one; "
                                      r"for an array whose size the data decides, create it outside the kernel",
     "n, tack.f32"),
    (host_api, (np.zeros(2),), r"'tack.synchronize' is Tack's host API and cannot be called in a kernel",
     "tack.synchronize"),
    (builtin_divmod, (np.zeros(2), np.zeros(2)), r"the builtins range, len, abs, min, max, pow, round, float, int, "
                                                 r"bool and print", "divmod"),
    (np_sum, (np.zeros(2),), r"np.sum is not supported in kernels: a kernel reads one element at a time, so "
                             r"add the elements up in a loop: 's = 0.0' then 'for k in range\(n\): s \+= a\[i, k\]'",
     "np.sum"),
])
def test_refusals_say_what_to_write(k, args, msg, at):
    with pytest.raises(tack.CompileError, match=msg) as e:
        k(*args)
    assert e.value.offset == e.value.text.index(at) + 1, (e.value.text, e.value.offset)


def test_the_old_messages_are_gone():
    out = np.ones(2)
    tack_zeros(out)  # once "not a @tack.func", then "not supported yet": now a local array
    assert out.tolist() == [0.0, 0.0]
    with pytest.raises(tack.CompileError) as e:
        tack_zeros_of(out, 8)
    assert "@tack.func" not in e.value.msg and "not supported" not in e.value.msg
    with pytest.raises(tack.CompileError) as e:
        empty_index(np.zeros(()), np.zeros(2))
    assert "malformed" not in e.value.msg


def _int_vector_times_float(v, s, out):
    for i in range(out.shape[0]):
        out[i] = v[i] * s[i]


def _int_vector_plus_literal(v, out):
    for i in range(out.shape[0]):
        out[i] = 0.5 + v[i]


@pytest.mark.parametrize("jit", [True, False])
def test_int_vector_and_float_refused(jit):
    # the number was converted to the vector's int32 components before the operation, so
    # vec3i(10, 20, 30) * 0.7 gave (0, 0, 0) without a word (NumPy: 7, 14, 21)
    v = tack.array(np.array([[10, 20, 30]], np.int32), tack.vec3i)
    out = tack.zeros(1, tack.vec3i)
    with pytest.raises(tack.CompileError, match=r"vec3i \* f64: the float would be truncated to the vector's "
                                                r"i32 components; convert the vector, e.g. tack.vec3\(v\) \* s, "
                                                r"or the number, int\(s\)"):
        tack.kernel(_int_vector_times_float, jit=jit)(v, np.array([0.7]), out)
    with pytest.raises(tack.CompileError, match=r"float \(Python\) \+ vec3i: the float would be truncated"):
        tack.kernel(_int_vector_plus_literal, jit=jit)(v, out)
    assert out.numpy().tolist() == [[0, 0, 0]]


def _mixed_precision_matmul(m, v, out):
    for i in range(out.shape[0]):
        out[i] = m[i] @ v[i]


def _mixed_precision_add(v, w, out):
    for i in range(out.shape[0]):
        out[i] = v[i] - w[i]


@pytest.mark.parametrize("jit", [True, False])
def test_vectors_of_two_precisions_say_so(jit):
    # 'shapes do not match for @: mat33 and vec3d' named the wrong cause: the shapes match
    m, v, vd = tack.zeros(1, tack.mat33), tack.zeros(1, tack.vec3), tack.zeros(1, tack.vec3d)
    with pytest.raises(tack.CompileError, match=r"@ of mat33 and vec3d: the operands have different precisions "
                                                r"\(f32 and f64\); convert one, e.g. tack.mat33d\(x\)"):
        tack.kernel(_mixed_precision_matmul, jit=jit)(m, vd, tack.zeros(1, tack.vec3d))
    with pytest.raises(tack.CompileError, match=r"- of vec3 and vec3d: the operands have different precisions "
                                                r"\(f32 and f64\); convert one, e.g. tack.vec3d\(x\)"):
        tack.kernel(_mixed_precision_add, jit=jit)(v, vd, tack.zeros(1, tack.vec3d))


def _host_vector_argument(v, g, dt):
    for i in range(v.shape[0]):
        v[i] += g * dt


def _whole_array_in_an_expression(x, out):
    for i in range(out.shape[0]):
        out[i] = x * 2


@pytest.mark.parametrize("jit", [True, False])
def test_a_host_vector_argument_says_how_to_pass_it(jit):
    # Warp's kernels take wp.vec3 values; tack.vec3(0, -9.8, 0) is a NumPy array of its components,
    # and the refusal said only "index it", not that a vector is passed in a one-element array
    v = tack.zeros(4, tack.vec3)
    with pytest.raises(tack.CompileError, match=r"array 'g' cannot be used as a value here \(index it, or pass it "
                                                r"to a @tack.func\); a vector made on the host \(tack.vec3\(...\) and "
                                                r"the like\) is a NumPy array of its components.*annotate the "
                                                r"parameter, g: tack.vec3, to take it by value"):
        tack.kernel(_host_vector_argument, jit=jit)(v, tack.vec3(0, -9.8, 0), np.float32(0.1))
    g = tack.array([tack.vec3(0, -9.8, 0)], tack.vec3)         # a one-element vector array also does
    fixed = tack.kernel(_fall_fixed, jit=jit)
    fixed(v, g, np.float32(0.5))
    assert v.numpy().tolist() == [[0.0, -4.900000095367432, 0.0]] * 4
    tack.kernel(_fall_annotated, jit=jit)(v, tack.vec3(0, -9.8, 0), np.float32(0.5))  # what the message says
    assert v.numpy().tolist() == [[0.0, -9.800000190734863, 0.0]] * 4
    # an array of integers, or of more dimensions, is no host vector: the message stays short
    with pytest.raises(tack.CompileError, match=r"array 'x' cannot be used as a value here \(index it, or pass it "
                                                r"to a @tack.func\) \(test_messages"):
        tack.kernel(_whole_array_in_an_expression, jit=jit)(np.zeros((2, 2), np.float32), np.zeros(2, np.float32))


def _fall_fixed(v, g, dt):
    for i in range(v.shape[0]):
        v[i] += g[0] * dt


def _fall_annotated(v, g: tack.vec3, dt):
    for i in range(v.shape[0]):
        v[i] += g * dt


# ------------------------------------------------------------- NumPy's and Numba's idioms
# Each said only that the call was not supported ("np.sum is not supported", then 45 names
# of the functions that are; "method calls are not supported; use functions such as
# tack.dot(v, w)"; "class 'numba.prange' cannot be used"); now each shows the kernel's
# spelling. Debug mode runs the same front end first, so it raises the same words.

def _row_sum(m, out):
    for i in range(m.shape[0]):
        out[i] = np.sum(m[i, :])


def _row_mean_method(m, out):
    for i in range(m.shape[0]):
        out[i] = m[i].mean()


def _row_dot(m, out):
    for i in range(m.shape[0]):
        out[i] = np.dot(m[i], m[i])


def _row_argmin(m, out):
    for i in range(m.shape[0]):
        out[i] = np.argmin(m[i])


def _row_copy(m, out):
    for i in range(m.shape[0]):
        r = m[i].copy()
        out[i] = r[0]


def _np_random(m, out):
    for i in range(out.shape[0]):
        out[i] = np.random.random()


def _tack_prange(m, out):
    for i in tack.prange(out.shape[0]):
        out[i] = 1.0


def _enumerate(m, out):
    for i, v in enumerate(out):
        out[i] = v


def _returns(m, out):
    for i in range(out.shape[0]):
        out[i] = 1.0
    return out[0]


def _iterates_array(m, out):
    for v in out:
        out[0] = v


def _transposed(m, out):
    for i in range(out.shape[0]):
        out[i] = m.T[0, i]


def _local_sum(m, out):
    s = 0.0
    for i in range(m.shape[0]):
        s += m[i, 0]
    out[0] = s


def _local_max(m, out):
    mx = -np.inf
    for i in range(m.shape[0]):
        mx = max(mx, m[i, 0])
    out[0] = mx


IDIOMS = [
    (_row_sum, "np.sum", r"np.sum is not supported in kernels: a kernel reads one element at a time, so add the "
                         r"elements up in a loop: .*; for a whole array, call NumPy's function outside the kernel, "
                         r"or tack.reduce"),
    (_row_mean_method, "m[i].mean", r"method calls \('m\[i\].mean\(...\)'\) are not supported in kernels: a kernel "
                                    r"reads one element at a time, so add the elements up in a loop: .*\(a mean is s / n\)"),
    (_row_dot, "np.dot", r"np.dot is not supported in kernels: .* 'for k in range\(n\): s \+= a\[i, k\] \* b\[k\]'"),
    (_row_argmin, "np.argmin", r"keep the index in a loop: 'best = 0' then 'for k in range\(1, n\):' and "
                               r"'if a\[i, k\] < a\[i, best\]: best = k'"),
    (_row_copy, "m[i].copy", r"copy the elements in a loop into a local array"),
    (_np_random, "np.random.random", r"np.random.random is not supported in kernels: draw with tack.random instead, "
                                     r".*tack.random.uniform\(seed, counter\) is a float in \[0, 1\)"),
    (_tack_prange, "tack.prange", r"module 'tack' has no attribute 'prange': a kernel needs no prange, since every "
                                  r"for loop over range\(...\) at the top level of a kernel is parallel; write range"),
    (_enumerate, "enumerate", r"class 'enumerate' cannot be used in a kernel; loop over the indices instead: "
                              r"'for i in range\(len\(a\)\):' and 'v = a\[i\]'"),
    (_returns, "return", r"a kernel cannot return a value: write results into an array argument \(out\[0\] = s, "
                         r"or out\[0\] \+= x\[i\] for a sum over a parallel loop\)"),
    (_iterates_array, "out:", r"to visit an array's elements, loop over its indices: 'for i in range\(len\(a\)\):'"),
    (_transposed, "m.T", r"index the transpose as a\[j, i\], or pass a.T to the kernel"),
    (_local_sum, "s", r"cannot assign to 's' inside a parallel loop: .*use an array element \(a\[0\] \+= v is "
                      r"atomic\) for a reduction, tack.atomic_max\(a, 0, v\) or atomic_min"),
    (_local_max, "mx", r"cannot assign to 'mx' inside a parallel loop: .*tack.atomic_max\(a, 0, v\) or atomic_min "
                       r"for a maximum or a minimum, and read the array after the call"),
]


@pytest.mark.parametrize("jit", [True, False])
def test_numpy_and_numba_idioms_say_what_to_write(jit):
    m, out = np.ones((3, 3)), np.zeros(3)
    for fn, at, msg in IDIOMS:
        with pytest.raises(tack.CompileError, match=msg) as e:
            tack.kernel(fn, jit=jit)(m, out)
        assert at in e.value.text, (fn.__name__, e.value.text)
        assert "is not supported in kernels; the NumPy functions kernels accept" not in e.value.msg
    assert not out.any()


def test_numbas_prange_and_njit_functions_say_what_to_write():
    numba = pytest.importorskip("numba")

    @numba.njit
    def helper(x):
        return x

    def with_prange(out):
        for i in numba.prange(out.shape[0]):
            out[i] = 1.0

    def with_njit(out):
        for i in range(out.shape[0]):
            out[i] = helper(out[i])

    for jit in (True, False):
        with pytest.raises(tack.CompileError, match=r"'numba.prange' is Numba's: a kernel needs no prange, .*"
                                                    r"write range\(...\)"):
            tack.kernel(with_prange, jit=jit)(np.zeros(2))
        with pytest.raises(tack.CompileError, match=r"'helper' is a Numba function: a kernel calls @tack.func "
                                                    r"functions; decorate its Python function with @tack.func"):
            tack.kernel(with_njit, jit=jit)(np.zeros(2))


def _float_of_string(x, out):
    for i in range(x.shape[0]):
        lo = float("inf")
        if x[i] < lo:
            lo = x[i]
        out[i, 0] = lo
        out[i, 1] = float("-inf") if x[i] > 1 else float(" NaN ")
        out[i, 2] = x[i] * float("0.5")


def _float_of_bad_string(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = float("one")


@pytest.mark.parametrize("jit", [True, False])
def test_float_of_a_string_literal(jit):
    # float("inf"), Python's and Numba's spelling of infinity, was refused: "strings are only
    # allowed as print() arguments and assert messages"; it is the literal, cast as float(x) is
    x, out = np.array([0.5, 2.0]), np.zeros((2, 3))
    tack.kernel(_float_of_string, jit=jit)(x, out)
    assert out[:, 0].tolist() == [0.5, 2.0] and out[1, 1] == -np.inf and np.isnan(out[0, 1])
    assert out[:, 2].tolist() == [0.25, 1.0]
    with pytest.raises(tack.CompileError, match=r"could not convert string to float: 'one'"):
        tack.kernel(_float_of_bad_string, jit=jit)(x, out)
