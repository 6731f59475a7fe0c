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
                                      r"module-level int constants and arithmetic on them\), and 'n' is not one",
     "n, tack.f32"),
    (host_api, (np.zeros(2),), r"'tack.synchronize' is Tack's host API and cannot be called in a kernel",
     "tack.synchronize"),
    (builtin_divmod, (np.zeros(2), np.zeros(2)), r"the builtins range, len, abs, min, max, pow, round, float, int, "
                                                 r"bool and print", "divmod"),
    (np_sum, (np.zeros(2),), r"np.sum is not supported in kernels; the NumPy functions kernels accept are: "
                             r"absolute, arccos, .*sqrt.*\(and the casts np.float32\(x\)", "np.sum"),
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
                                                r"the like\) is a NumPy array of its components.*tack.array\(\[g\], "
                                                r"tack.vec3\), and read g\[0\]"):
        tack.kernel(_host_vector_argument, jit=jit)(v, tack.vec3(0, -9.8, 0), np.float32(0.1))
    g = tack.array([tack.vec3(0, -9.8, 0)], tack.vec3)         # what the message says to write
    fixed = tack.kernel(_fall_fixed, jit=jit)
    fixed(v, g, np.float32(0.5))
    assert v.numpy().tolist() == [[0.0, -4.900000095367432, 0.0]] * 4
    # an array of integers, or of more dimensions, is no host vector: the message stays short
    with pytest.raises(tack.CompileError, match=r"array 'x' cannot be used as a value here \(index it, or pass it "
                                                r"to a @tack.func\) \(test_messages"):
        tack.kernel(_whole_array_in_an_expression, jit=jit)(np.zeros((2, 2), np.float32), np.zeros(2, np.float32))


def _fall_fixed(v, g, dt):
    for i in range(v.shape[0]):
        v[i] += g[0] * dt
