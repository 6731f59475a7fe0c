"""The kernel language: compile errors with their locations, and the semantics of DESIGN §3."""

import inspect
import math
import traceback

import numpy as np
import pytest

import tack
from tack import f32, vec3

GLOBAL_INT = 7
GLOBAL_FLOAT = 0.5
GLOBAL_FLAG = True
GLOBAL_LIST = [1, 2, 3]
GLOBAL_TEXT = "hello"


def line_of(fn, marker):
    lines, first = inspect.getsourcelines(inspect.unwrap(fn))
    for i, text in enumerate(lines):
        if marker in text:
            return first + i, text
    raise AssertionError(f"{marker!r} not in the source of {fn.__name__}")


def compile_error(kernel, *args):
    with pytest.raises(tack.CompileError) as info:
        kernel(*args)
    return info.value


def assert_at(err, kernel, marker, snippet=None):
    """err points at the line holding `marker`, with the caret under `snippet`."""
    line, text = line_of(kernel, marker)
    assert isinstance(err, SyntaxError)
    assert err.filename == __file__
    assert err.lineno == line, (err.lineno, line, str(err))
    assert err.text is not None and marker in err.text
    if snippet is not None:
        assert err.offset == text.index(snippet) + 1, (err.offset, text, snippet)
    shown = "".join(traceback.format_exception_only(type(err), err))
    assert "^" in shown and "CompileError" in shown


# ------------------------------------------------------------ unsupported Python
def k_list(a):
    for i in range(a.shape[0]):
        a[i] = [1, 2][0]  # HERE


def k_dict(a):
    d = {1: 2}  # HERE


def k_comprehension(a):
    s = (x for x in range(3))  # HERE


def k_lambda(a):
    f = lambda x: x  # noqa: E731  # HERE


def k_fstring(a):
    print(f"{a[0]}")  # HERE


def k_walrus(a):
    for i in range(a.shape[0]):
        a[i] = (y := 2)  # HERE


def k_class(a):
    class C:  # HERE
        pass


def k_nested_def(a):
    def inner(x):  # HERE
        return x


def k_try(a):
    try:  # HERE
        a[0] = 1
    except Exception:
        pass


def k_with(a):
    with open("x"):  # HERE
        pass


def k_import(a):
    import os  # HERE


def k_global(a):
    global GLOBAL_INT  # HERE


def k_raise(a):
    raise ValueError()  # HERE


def k_del(a):
    x = 1
    del x  # HERE


def k_slice(a):
    for i in range(a.shape[0]):
        a[i] = a[1:2]  # HERE


def k_keyword(a):
    print(a[0], sep="")  # HERE


def k_starred(a):
    print(*a)  # HERE


def k_string(a):
    s = "text"  # HERE


def k_none(a):
    x = None  # HERE


def k_is(a):
    for i in range(a.shape[0]):
        if a[i] is i:  # HERE
            a[i] = 1


def k_in(a):
    for i in range(a.shape[0]):
        if i in a:  # HERE
            a[i] = 1


def k_attribute_store(a):
    a.shape = 3  # HERE


def k_for_array(a):
    for x in a:  # HERE
        pass


def k_for_else(a):
    for i in range(3):
        pass
    else:
        a[0] = 1  # HERE


def k_method(a):
    for i in range(a.shape[0]):
        a[i] = a.sum()  # HERE


def k_varargs(a, *rest):  # HERE
    pass


def k_kwonly(a, *, b):  # HERE
    pass


UNSUPPORTED = [
    (k_list, "[1, 2]", "lists"),
    (k_dict, "{1: 2}", "dicts"),
    (k_comprehension, "(x for x", "generator"),
    (k_lambda, "lambda", "lambda"),
    (k_fstring, 'f"', "f-strings"),
    (k_walrus, "y := 2", ":="),
    (k_class, "class C", "classes"),
    (k_nested_def, "def inner", "nested functions"),
    (k_try, "try", "'try'"),
    (k_with, "with", "'with'"),
    (k_import, "import os", "import"),
    (k_global, "global", "'global'"),
    (k_raise, "raise", "'raise'"),
    (k_del, "del", "'del'"),
    (k_slice, "1:2", "slices"),
    (k_keyword, 'sep=""', "keyword arguments"),
    (k_starred, "*a", "starred"),
    (k_string, '"text"', "strings"),
    (k_none, "None", "None"),
    (k_is, "a[i] is i", "'is'"),
    (k_in, "i in a", "'in'"),
    (k_attribute_store, "a.shape", "an array's attributes are read-only"),
    (k_for_array, "a:", "range"),
    (k_for_else, "a[0] = 1", "else"),
    (k_method, "a.sum", "method calls"),
    (k_varargs, "rest", "*args"),
    (k_kwonly, "b)", "keyword-only"),
]


@pytest.mark.parametrize("fn, snippet, words", UNSUPPORTED, ids=[u[0].__name__ for u in UNSUPPORTED])
def test_unsupported_python_is_a_compile_error(fn, snippet, words):
    kernel = tack.kernel(fn)
    err = compile_error(kernel, np.zeros(4, np.float32))
    assert words in err.msg, err.msg
    assert_at(err, kernel, "# HERE", snippet)


# ------------------------------------------------------------------ free names
@tack.kernel
def k_unknown_name(a):
    for i in range(a.shape[0]):
        a[i] = no_such_name + 1  # HERE  # noqa: F821


@tack.kernel
def k_global_list(a):
    for i in range(a.shape[0]):
        a[i] = GLOBAL_LIST[0]  # HERE


@tack.kernel
def k_global_str(a):
    print(GLOBAL_TEXT)  # HERE


def plain_function(x):
    return x


@tack.kernel
def k_plain_call(a):
    a[0] = plain_function(1.0)  # HERE


@tack.kernel
def k_calls_kernel(a):
    k_unknown_name(a)  # HERE


@tack.kernel
def k_missing_attribute(a):
    a[0] = math.no_such_thing  # HERE


@tack.func
def recursive(n):
    return recursive(n - 1)  # HERE


@tack.kernel
def k_recursive(a):
    a[0] = recursive(3)


@pytest.mark.watched_differs("inspects tack.kernel itself, which the watching plugins replace")
@pytest.mark.parametrize(
    "kernel, snippet, words",
    [
        (k_unknown_name, "no_such_name", "name 'no_such_name' is not defined"),
        (k_global_list, "GLOBAL_LIST", "list"),
        (k_global_str, "GLOBAL_TEXT", "string"),
        (k_plain_call, "plain_function", "@tack.func"),
        (k_calls_kernel, "k_unknown_name", "cannot be called from a kernel"),
        (k_missing_attribute, "math.no_such_thing", "no attribute 'no_such_thing'"),
    ],
)
def test_bad_free_names(kernel, snippet, words):
    err = compile_error(kernel, np.zeros(4, np.float32))
    assert words in err.msg, err.msg
    assert_at(err, kernel, "# HERE", snippet)


def test_recursion_is_an_error():
    err = compile_error(k_recursive, np.zeros(1, np.float32))
    assert "recursion" in err.msg
    assert_at(err, recursive, "# HERE", "recursive(n - 1)")


def test_closure_over_array():
    captured = np.zeros(3)

    @tack.kernel
    def k(a):
        for i in range(a.shape[0]):
            a[i] = captured[i]  # HERE

    err = compile_error(k, np.zeros(3))
    assert "closures over arrays" in err.msg
    assert_at(err, k, "# HERE", "captured")


def test_lambda_kernel():
    k = tack.kernel(lambda a: None)
    with pytest.raises(tack.CompileError, match="lambda"):
        k(np.zeros(1))


def test_non_ascii_column():
    @tack.kernel
    def k(a):
        print("é", "ü"); x = [1]  # HERE

    err = compile_error(k, np.zeros(1))
    line, text = line_of(k, "# HERE")
    assert err.offset == text.index("[1]") + 1


def test_compile_error_is_a_syntax_error_subclass():
    assert issubclass(tack.CompileError, SyntaxError)
    assert tack.CompileError.__module__ == "tack"


# ------------------------------------------------------------------ type errors
@tack.kernel
def k_type_conflict(a):
    for i in range(a.shape[0]):
        x = 1.0
        x = vec3(1.0, 2.0, 3.0)  # HERE
        a[i] = 0.0


@tack.kernel
def k_vec_into_float(a):
    for i in range(a.shape[0]):
        a[i] = vec3(1.0, 2.0, 3.0)  # HERE


@tack.kernel
def k_bad_annotation(a):
    x: tack.i32 = vec3(1.0, 2.0, 3.0)  # HERE


@pytest.mark.parametrize("kernel", [k_type_conflict, k_vec_into_float, k_bad_annotation])
def test_type_conflicts_are_compile_errors(kernel):
    err = compile_error(kernel, np.zeros(4, np.float32))
    line, _ = line_of(kernel, "# HERE")
    assert err.lineno == line, str(err)
    assert err.filename == __file__
    assert err.offset and err.offset > 0


def test_annotation_must_be_a_dtype():
    @tack.kernel
    def k(a):
        x: list = 1  # HERE

    err = compile_error(k, np.zeros(1))
    assert "not a tack dtype" in err.msg
    assert_at(err, k, "# HERE", "list")


# =================================================================== semantics
def run(kernel, *args):
    kernel(*args)
    return args


def test_globals_are_frozen_constants():
    @tack.kernel
    def k(a):
        for i in range(a.shape[0]):
            a[i] = GLOBAL_INT + GLOBAL_FLOAT if GLOBAL_FLAG else 0.0

    a = np.zeros(2, np.float64)
    k(a)
    assert list(a) == [7.5, 7.5]


def test_closure_constants_and_math_constants():
    scale = 3

    @tack.kernel
    def k(a):
        for i in range(a.shape[0]):
            a[i] = scale * math.pi + math.e

    a = np.zeros(2, np.float64)
    k(a)
    assert a[0] == pytest.approx(3 * math.pi + math.e)


def test_from_imports_and_tack_intrinsics():
    from math import sqrt

    @tack.kernel
    def k(a):
        for i in range(a.shape[0]):
            a[i] = sqrt(float(i)) + tack.sqrt(4.0) + math.floor(1.5)

    a = np.zeros(4, np.float64)
    k(a)
    np.testing.assert_allclose(a, np.sqrt(np.arange(4, dtype=np.float32)) + 2 + 1, rtol=1e-6)


def test_serial_code_between_parallel_loops():
    @tack.kernel
    def k(a, out):
        for i in range(a.shape[0]):
            a[i] = float(i)
        total = 0.0
        out[0] = total
        for i in range(a.shape[0]):  # this loop sees the first one complete
            a[i] = a[a.shape[0] - 1 - i] + 1.0 if i < a.shape[0] // 2 else a[i]
        out[1] = a[0]

    a = np.zeros(10, np.float32)
    out = np.zeros(2, np.float32)
    k(a, out)
    assert out[1] == 10.0


def test_ndrange_2d():
    @tack.kernel
    def k(m):
        for i, j in tack.ndrange(m.shape[0], m.shape[1]):
            m[i, j] = i * 10 + j

    m = np.zeros((3, 4), np.int32)
    k(m)
    np.testing.assert_array_equal(m, np.arange(3)[:, None] * 10 + np.arange(4))


def test_inference_acc_takes_the_array_type():
    @tack.kernel
    def k(x, out):
        for j in range(1):
            acc = 0
            for i in range(x.shape[0]):
                acc += x[i]
            out[0] = acc

    x = np.full(3, 0.1, np.float32)
    out = np.zeros(1, np.float64)
    k(x, out)
    expected = np.float32(0)
    for v in x:
        expected = np.float32(expected + v)
    assert out[0] == np.float64(expected)


def test_control_flow():
    @tack.kernel
    def k(out):
        for i in range(out.shape[0]):
            n = i
            steps = 0
            while n != 1 and n > 0:
                if n % 2 == 0:
                    n = n // 2
                elif n > 1000:
                    break
                else:
                    n = 3 * n + 1
                steps += 1
                if steps > 500:
                    break
                continue
            out[i] = steps if 0 < i < 100 else -1

    out = np.zeros(10, np.int64)
    k(out)

    def collatz(n):
        s = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            s += 1
        return s

    assert list(out) == [-1] + [collatz(i) for i in range(1, 10)]


def test_tuple_unpacking_and_chained_assignment():
    @tack.kernel
    def k(a):
        for i in range(1):
            x, y = 1.0, 2.0
            x, y = y, x
            p = q = x * 3.0
            a[0] = x
            a[1] = y
            a[2] = p + q

    a = np.zeros(3, np.float64)
    k(a)
    assert list(a) == [2.0, 1.0, 12.0]


def test_short_circuit_and_chained_compare():
    @tack.kernel
    def k(a, out):
        for i in range(a.shape[0]):
            # a[i] is never read out of bounds thanks to short-circuiting
            out[i] = 1 if (i < a.shape[0] and a[i] > 0) or not (0 <= i < 2) else 0

    a = np.array([1.0, -1.0, 1.0], np.float32)
    out = np.zeros(3, np.int32)
    k(a, out)
    assert list(out) == [1, 0, 1]


def test_funcs_typed_per_call_site():
    @tack.func
    def mad(x, y, z):
        return x * y + z

    @tack.kernel
    def k(f, n):
        for i in range(f.shape[0]):
            f[i] = mad(f[i], 2.0, 1.0)
            n[i] = mad(n[i], 3, 1)

    f = np.arange(3, dtype=np.float32)
    n = np.arange(3, dtype=np.int64)
    k(f, n)
    assert list(f) == [1, 3, 5]
    assert list(n) == [1, 4, 7]


def test_func_with_array_and_defaults():
    @tack.func
    def get(a, i, scale=2):
        return a[i] * scale

    @tack.kernel
    def k(a, out):
        for i in range(a.shape[0]):
            out[i] = get(a, i) + get(a, i, 10)

    a = np.arange(4, dtype=np.float64)
    out = np.zeros(4)
    k(a, out)
    np.testing.assert_array_equal(out, a * 12)


def test_funcs_are_lowered_once_per_module():
    @tack.func
    def sq(x):
        return x * x

    @tack.func
    def quad(x):
        return sq(sq(x))

    @tack.kernel
    def k(a):
        for i in range(a.shape[0]):
            a[i] = quad(a[i]) + sq(a[i])

    a = np.array([2.0], np.float64)
    k(a)
    assert a[0] == 16 + 4


def test_annotations():
    @tack.func
    def half(x: tack.f64) -> tack.f64:
        return x / 2

    @tack.kernel
    def k(a, n: tack.i64):
        for i in range(a.shape[0]):
            y: f32 = half(a[i]) + n
            a[i] = y

    a = np.array([3.0], np.float64)
    k(a, 1)
    assert a[0] == 2.5


def test_vectors():
    @tack.kernel
    def k(p, q, out_dot, out_len, out_cross, out_norm):
        for i in range(p.shape[0]):
            v = p[i]
            w = q[i]
            out_dot[i] = tack.dot(v, w)
            out_len[i] = tack.length(v)
            out_cross[i] = tack.cross(v, w)
            out_norm[i] = tack.normalize(v) + vec3(0.0, 0.0, 0.0) * v.x * v[1]

    rng = np.random.default_rng(1)
    pn = rng.standard_normal((5, 3)).astype(np.float32)
    qn = rng.standard_normal((5, 3)).astype(np.float32)
    p = tack.array(pn, tack.vec3)
    q = tack.array(qn, tack.vec3)
    out_dot = np.zeros(5, np.float32)
    out_len = np.zeros(5, np.float32)
    out_cross = tack.zeros(5, tack.vec3)
    out_norm = tack.zeros(5, tack.vec3)
    k(p, q, out_dot, out_len, out_cross, out_norm)
    np.testing.assert_allclose(out_dot, (pn * qn).sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_len, np.linalg.norm(pn, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out_cross.numpy().reshape(5, 3), np.cross(pn, qn), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        out_norm.numpy().reshape(5, 3), pn / np.linalg.norm(pn, axis=1)[:, None], rtol=1e-5, atol=1e-6
    )



def vector_components(p, q, ks, out):
    for i in range(p.shape[0]):
        v = p[i]
        k = ks[i]
        w = tack.vec3(v[-1], v[-3], v[k])          # constants and a run-time index count from the end
        w[-2] = q[i][-1]                           # a store through a negative index, a quat's last (w)
        w[k] = w[k] + 10.0
        out[i] = w


def vector_component_past_the_end(p, out):
    for i in range(p.shape[0]):
        out[i] = p[i][-4]


@pytest.mark.parametrize("jit", [True, False])
def test_vector_component_indices_count_from_the_end(jit):
    """v[-1] is the last component, as in Python and in debug mode's NumPy vectors: the compiled
    kernel took a negative literal (a cast of the constant) for a run-time index and raised
    IndexError, and refused every negative run-time index, where debug mode wrapped it."""
    rng = np.random.default_rng(2)
    pn = rng.standard_normal((6, 3)).astype(np.float32)
    qn = rng.standard_normal((6, 4)).astype(np.float32)
    ks = np.array([0, 1, 2, -1, -2, -3], np.int64)
    out = tack.zeros(6, tack.vec3)
    k = tack.kernel(vector_components, jit=jit)
    k(tack.array(pn, tack.vec3), tack.array(qn, tack.quat), ks, out)
    want = np.stack([pn[:, 2], pn[:, 0], pn[np.arange(6), ks]], 1)
    want[:, 1] = qn[:, 3]
    want[np.arange(6), ks] += np.float32(10)
    np.testing.assert_array_equal(out.numpy(), want)
    for bad in (3, -4):
        with pytest.raises(IndexError):
            k(tack.array(pn, tack.vec3), tack.array(qn, tack.quat), np.full(6, bad, np.int64), out)
    with pytest.raises(tack.CompileError, match="index -4 is out of range for a vec3"):
        tack.kernel(vector_component_past_the_end, jit=jit)(tack.array(pn, tack.vec3), np.zeros(6, np.float32))


@pytest.mark.parametrize("jit", [True, False])
def test_a_value_compared_with_itself(jit):
    """x != x is False for an integer (folded) and the NaN test for a float, f16 included."""
    def selfcmp(a, h, out):
        for i in range(a.shape[0]):
            k = a[i]
            x = h[i]
            out[i, 0] = k != k
            out[i, 1] = k == k and k <= k and not (k < k)
            out[i, 2] = x != x
            out[i, 3] = x == x
    a = np.array([0, -5], np.int64)
    h = np.array([np.nan, 1.5], np.float16)
    out = np.zeros((2, 4), bool)
    tack.kernel(selfcmp, jit=jit)(a, h, out)
    assert out.tolist() == [[False, True, True, False], [False, True, False, True]]


def test_atomics_under_contention():
    @tack.kernel
    def histogram(values, bins):
        for i in range(values.shape[0]):
            bins[values[i] % bins.shape[0]] += 1

    @tack.kernel
    def explicit(values, lo_hi, total):
        for i in range(values.shape[0]):
            tack.atomic_min(lo_hi, 0, values[i])
            tack.atomic_max(lo_hi, 1, values[i])
            tack.atomic_add(total, 0, values[i])
            tack.atomic_sub(total, 1, 1)

    values = np.arange(200_000, dtype=np.int64) * 7919 % 100_003
    bins = np.zeros(8, np.int64)
    histogram(values, bins)
    np.testing.assert_array_equal(bins, np.bincount(values % 8, minlength=8))
    lo_hi = np.array([10**9, -(10**9)], np.int64)
    total = np.zeros(2, np.int64)
    explicit(values, lo_hi, total)
    assert list(lo_hi) == [values.min(), values.max()]
    assert list(total) == [values.sum(), -len(values)]


def test_print_scalars(capfd):
    @tack.kernel
    def k(a):
        print("value", a[0], 3, True)

    k(np.array([1.5], np.float64))
    out, _ = capfd.readouterr()
    assert "value" in out and "1.5" in out and "3" in out


@pytest.mark.watched_differs("inspects tack.kernel itself, which the watching plugins replace")
def test_python_side_of_the_intrinsics():
    assert tack.sqrt(4.0) == 2.0
    assert list(tack.ndrange(2, 2)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    a = np.array([5, 1])
    assert tack.atomic_add(a, 0, 2) == 5 and a[0] == 7
    assert tack.atomic_max(a, 1, 9) == 1 and a[1] == 9
    assert tack.dot([1, 2, 3], [4, 5, 6]) == 32
    assert tack.length([3.0, 4.0]) == 5.0
    for name in ["sqrt", "atomic_add", "ndrange", "dot", "kernel", "func"]:
        assert getattr(tack, name).__doc__


def test_matrices_and_matmul():
    @tack.kernel
    def k(m, v, out, outm):
        for i in range(m.shape[0]):
            out[i] = m[i] @ v[i]
            outm[i] = m[i] @ m[i]

    rng = np.random.default_rng(3)
    mn = rng.standard_normal((4, 3, 3)).astype(np.float32)
    vn = rng.standard_normal((4, 3)).astype(np.float32)
    m = tack.array(mn, tack.mat33)
    v = tack.array(vn, tack.vec3)
    out = tack.zeros(4, tack.vec3)
    outm = tack.zeros(4, tack.mat33)
    k(m, v, out, outm)
    np.testing.assert_allclose(out.numpy().reshape(4, 3), np.einsum("nij,nj->ni", mn, vn), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outm.numpy().reshape(4, 3, 3), mn @ mn, rtol=1e-5, atol=1e-5)


def test_negative_indices_count_from_the_end():
    @tack.kernel
    def k(a, out):
        for i in range(1):
            out[0] = a[-1]
            out[1] = a[-a.shape[0]]

    a = np.arange(5.0)
    out = np.zeros(2)
    k(a, out)
    assert out.tolist() == [4.0, 0.0]


def test_atomic_with_tuple_index_and_old_value():
    @tack.kernel
    def hand_out_old_values(grid, olds):  # named in _opencl_diff.RACY: olds depends on the order
        for i in range(olds.shape[0]):
            olds[i] = tack.atomic_add(grid, (i % 2, i % 3), 1)

    grid = np.zeros((2, 3), np.int64)
    olds = np.zeros(600, np.int64)
    hand_out_old_values(grid, olds)
    assert grid.sum() == 600 and (grid == 100).all()
    for cell in range(6):  # each cell handed out the old values 0..99 exactly once
        idx = [i for i in range(600) if (i % 2) * 3 + i % 3 == cell]
        assert sorted(olds[idx].tolist()) == list(range(100))


def test_len_ndim_pow():
    @tack.kernel
    def k(m, out):
        for i in range(1):
            out[0] = len(m)
            out[1] = m.ndim
            out[2] = m.shape[1] ** 2
            out[3] = pow(2.0, 0.5)

    m = np.zeros((3, 4))
    out = np.zeros(4)
    k(m, out)
    assert out.tolist() == [3.0, 2.0, 16.0, 2.0**0.5]


def test_int_to_a_negative_literal_power_is_a_float():
    # as in Python: the literal exponent says the result is a float
    @tack.kernel
    def k(out, a):
        for i in range(1):
            out[0] = 2 ** -1
            out[1] = a[0] ** -2
            out[2] = (-3) ** -3
            out[3] = 2 ** 3

    out = np.zeros(4)
    k(out, np.array([4], np.int32))
    assert out.tolist() == [0.5, 4.0 ** -2, (-3) ** -3, 8.0]


def test_int_to_a_negative_power_at_run_time_is_a_value_error():
    # int ** int stays an int; a negative exponent known only at run time is
    # NumPy's ValueError (np.int64(2) ** -2), never a silent 0
    @tack.kernel
    def k(out, e):
        for i in range(out.shape[0]):
            out[i] = (i + 2) ** (e + i)

    out = np.zeros(4, np.int64)
    k(out, 1)
    assert out.tolist() == [2, 9, 64, 625]
    out[:] = 7
    with pytest.raises(ValueError, match=r"integers to negative integer powers are not allowed: exponent -3 "
                                         r"\(kernel k, .*test_language.py:\d+\)"):
        k(out, -3)
    with pytest.raises(ValueError, match="exponent -1"):
        k(np.zeros(1, np.int64), -1)
    # 1 ** -1 and (-1) ** -1 would have an integer answer, but NumPy refuses them too
    with pytest.raises(ValueError):
        k(np.zeros(1, np.int64), -3 + 0)

    @tack.kernel
    def unsigned(out, b, e):
        for i in range(1):
            out[0] = b ** e

    u = np.zeros(1, np.uint32)
    unsigned(u, np.uint32(3), np.uint32(4))
    assert u[0] == 81
    f = np.zeros(1)
    unsigned(f, 2.0, -2)  # a float base: a float power, no check
    assert f[0] == 0.25


def test_func_returning_a_tuple():
    @tack.func
    def divmod_(a, b):
        return a // b, a % b

    @tack.kernel
    def k(a, q, r):
        for i in range(a.shape[0]):
            q[i], r[i] = divmod_(a[i], 3)

    a = np.arange(-4, 5)
    q, r = np.zeros_like(a), np.zeros_like(a)
    k(a, q, r)
    np.testing.assert_array_equal(q, a // 3)
    np.testing.assert_array_equal(r, a % 3)


@tack.func
def _sorted3(a, b, c):
    if a > b:
        a, b = b, a
    if b > c:
        b, c = c, b
    if a > b:
        a, b = b, a
    return a, b, c


@tack.func
def _polar(x, y):
    return math.hypot(x, y), math.atan2(y, x)


@tack.func
def _split(v):
    if v < 0:
        return -1, -v  # ints here, a float below: each value promotes on its own
    return 1, v * 1.5


def test_funcs_returning_tuples_of_mixed_types():
    @tack.kernel
    def k(x, y, s, r, t, sign, mag):
        lo, mid, hi = _sorted3(x[0], x[1], x[2])  # outside the parallel loop
        s[0], s[1], s[2] = lo, mid, hi
        for i in range(x.shape[0]):
            r[i], t[i] = _polar(x[i], y[i])
            sign[i], mag[i] = _split(x[i])

    rng = np.random.default_rng(3)
    x = rng.standard_normal(1000)
    y = rng.standard_normal(1000)
    s, r, t, mag = np.zeros(3), np.zeros(1000), np.zeros(1000), np.zeros(1000)
    sign = np.zeros(1000, np.int64)
    k(x, y, s, r, t, sign, mag)
    np.testing.assert_array_equal(s, np.sort(x[:3]))
    np.testing.assert_allclose(r, np.hypot(x, y), rtol=1e-15)
    np.testing.assert_allclose(t, np.arctan2(y, x), rtol=1e-15)
    np.testing.assert_array_equal(sign, np.where(x < 0, -1, 1))
    np.testing.assert_array_equal(mag, np.where(x < 0, -x, x * 1.5))


def test_tuple_returns_that_do_not_fit_are_compile_errors():
    @tack.func
    def two(a):
        return a, a + 1

    @tack.func
    def uneven(a):
        if a > 0:
            return a, a
        return a, a, a

    @tack.func
    def one_or_two(a):
        if a > 0:
            return a
        return a, a

    @tack.kernel
    def into_one(x):
        for i in range(x.shape[0]):
            v = two(x[i])
            x[i] = v

    @tack.kernel
    def into_three(x):
        for i in range(x.shape[0]):
            p, q, r = two(x[i])
            x[i] = p + q + r

    x = np.zeros(4)
    with pytest.raises(tack.CompileError, match="cannot assign the 2 values a function returned to 'v'; unpack them"):
        into_one(x)
    with pytest.raises(tack.CompileError, match="cannot unpack 2 values into 3 names"):
        into_three(x)

    @tack.kernel
    def call_uneven(x):
        for i in range(x.shape[0]):
            p, q = uneven(x[i])
            x[i] = p + q

    @tack.kernel
    def call_one_or_two(x):
        for i in range(x.shape[0]):
            p, q = one_or_two(x[i])
            x[i] = p + q

    with pytest.raises(tack.CompileError, match="'uneven' returns 3 values here and 2 elsewhere"):
        call_uneven(x)
    with pytest.raises(tack.CompileError, match="'one_or_two' returns 2 values here and one elsewhere"):
        call_one_or_two(x)



def test_return_in_a_kernel_is_refused_or_ends_it():
    @tack.kernel
    def k(a):
        for i in range(a.shape[0]):
            a[i] = 1.0
        return

    a = np.zeros(2)
    k(a)
    assert a.tolist() == [1.0, 1.0]


FAST_MATH_SCRIPT = """
import numpy as np
import tack

@tack.kernel(fast_math=True)
def k(a, out):
    for i in range(1):
        s = 0.0
        for j in range(a.shape[0]):
            s += a[j]
        out[0] = s

a = np.arange(100, dtype=np.float64)
out = np.zeros(1)
k(a, out)
assert out[0] == 4950.0, out
tiny = np.array([5e-324])
assert (tiny * 1.0)[0] != 0.0, "loading a fast_math kernel turned on flush-to-zero for the process"
print("ok")
"""


def run_script(tmp_path, text):
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(text)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)


def test_fast_math_computes(tmp_path):
    # In a subprocess: see the next test.
    out = run_script(tmp_path, FAST_MATH_SCRIPT.replace('assert (tiny', '# assert (tiny'))
    assert out.returncode == 0, out.stderr


def test_fast_math_kernel_leaves_the_process_fp_mode_alone(tmp_path):
    out = run_script(tmp_path, FAST_MATH_SCRIPT)
    assert out.returncode == 0, out.stderr


def test_kernels_are_garbage_collected():
    import gc
    import weakref

    def make():
        @tack.kernel
        def k(a):
            for i in range(a.shape[0]):
                a[i] = 1

        k.__wrapped__.self_ref = k  # a cycle through the function
        k(np.zeros(2))
        return weakref.ref(k)

    ref = make()
    gc.collect()
    assert ref() is None


def test_indented_kernels_with_odd_lines():
    class Holder:
        @tack.kernel
        def k(a):
# a comment at column 0 does not upset the parser
            for i in range(a.shape[0]):
                a[i] = i + \
                    1

    a = np.zeros(3)
    Holder.k(a)
    assert a.tolist() == [1.0, 2.0, 3.0]

    def make():
        @tack.kernel
        def bad(a):
# comment
            a[0] = [1]  # HERE
        return bad

    bad = make()
    err = compile_error(bad, np.zeros(1))
    assert_at(err, bad, "# HERE", "[1]")
