"""Debug mode: @tack.kernel(jit=False), or TACK_DISABLE_JIT=1 at import, runs
a kernel as plain Python -- serially, on NumPy views of its arrays -- so
print() and pdb work.  A kernel gives the same results both ways over a good
part of the language (kernels taken from test_language.py), and keeps the
checks: an out-of-bounds index raises IndexError."""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from tack import f32, vec3

GLOBAL_INT = 7
GLOBAL_FLOAT = 0.5
GLOBAL_FLAG = True

CASES = []


def case(make):
    """Register fn with `make`, which returns fresh arguments for one run."""

    def deco(fn):
        CASES.append(pytest.param(fn, make, id=fn.__name__))
        return fn

    return deco


def f64(n):
    return lambda: [np.zeros(n)]


@case(f64(2))
def globals_are_constants(a):
    for i in range(a.shape[0]):
        a[i] = GLOBAL_INT + GLOBAL_FLOAT if GLOBAL_FLAG else 0.0


def _closure():
    scale = 3

    def closure_and_math_constants(a):
        for i in range(a.shape[0]):
            a[i] = scale * math.pi + math.e

    return closure_and_math_constants


case(f64(2))(_closure())


@case(f64(4))
def intrinsics(a):
    for i in range(a.shape[0]):
        a[i] = math.sqrt(float(i)) + tack.sqrt(4.0) + math.floor(1.5) + tack.exp(0.0) + abs(-i) + min(i, 2)


@case(lambda: [np.zeros(10, np.float32), np.zeros(2, np.float32)])
def serial_code_between_parallel_loops(a, out):
    for i in range(a.shape[0]):
        a[i] = float(i)
    total = 0.0
    out[0] = total
    for i in range(a.shape[0]):
        a[i] = a[a.shape[0] - 1 - i] + 1.0 if i < a.shape[0] // 2 else a[i]
    out[1] = a[0]


@case(lambda: [np.zeros((3, 4), np.int32)])
def ndrange_2d(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[i, j] = i * 10 + j


@case(lambda: [np.full(3, 0.1, np.float32), np.zeros(1)])
def accumulate(x, out):
    for j in range(1):
        acc = 0
        for i in range(x.shape[0]):
            acc += x[i]
        out[0] = acc


@case(lambda: [np.zeros(10, np.int64)])
def control_flow(out):
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


@case(f64(3))
def tuple_unpacking(a):
    for i in range(1):
        x, y = 1.0, 2.0
        x, y = y, x
        p = q = x * 3.0
        a[0] = x
        a[1] = y
        a[2] = p + q


@case(lambda: [np.array([1.0, -1.0, 1.0], np.float32), np.zeros(3, np.int32)])
def short_circuit(a, out):
    for i in range(a.shape[0]):
        out[i] = 1 if (i < a.shape[0] and a[i] > 0) or not (0 <= i < 2) else 0


@tack.func
def mad(x, y, z):
    return x * y + z


@case(lambda: [np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int64)])
def funcs_per_call_site(f, n):
    for i in range(f.shape[0]):
        f[i] = mad(f[i], 2.0, 1.0)
        n[i] = mad(n[i], 3, 1)


@tack.func
def get(a, i, scale=2):
    return a[i] * scale


@case(lambda: [np.arange(4.0), np.zeros(4)])
def func_with_array_and_defaults(a, out):
    for i in range(a.shape[0]):
        out[i] = get(a, i) + get(a, i, 10)


@tack.func
def sq(x):
    return x * x


@tack.func
def quad(x):
    return sq(sq(x))


@case(lambda: [np.array([2.0, -1.5])])
def nested_funcs(a):
    for i in range(a.shape[0]):
        a[i] = quad(a[i]) + sq(a[i])


@tack.func
def half(x: tack.f64) -> tack.f64:
    return x / 2


@case(lambda: [np.array([3.0, 5.0]), 1])
def annotations(a, n: tack.i64):
    for i in range(a.shape[0]):
        y: f32 = half(a[i]) + n
        a[i] = y


def _vectors_args():
    rng = np.random.default_rng(1)
    p = tack.array(rng.standard_normal((5, 3)).astype(np.float32), tack.vec3)
    q = tack.array(rng.standard_normal((5, 3)).astype(np.float32), tack.vec3)
    return [p, q, np.zeros(5, np.float32), np.zeros(5, np.float32), tack.zeros(5, tack.vec3),
            tack.zeros(5, tack.vec3)]


@case(_vectors_args)
def vectors(p, q, out_dot, out_len, out_cross, out_norm):
    for i in range(p.shape[0]):
        v = p[i]
        w = q[i]
        out_dot[i] = tack.dot(v, w)
        out_len[i] = tack.length(v)
        out_cross[i] = tack.cross(v, w)
        out_norm[i] = tack.normalize(v) + vec3(0.0, 0.0, 0.0) * v.x * v[1]


@case(lambda: [np.arange(2000, dtype=np.int64) * 7919 % 100_003, np.zeros(8, np.int64)])
def histogram(values, bins):
    for i in range(values.shape[0]):
        bins[values[i] % bins.shape[0]] += 1


@case(lambda: [np.arange(2000, dtype=np.int64) * 7919 % 100_003, np.array([10**9, -(10**9)], np.int64),
               np.zeros(2, np.int64)])
def atomics(values, lo_hi, total):
    for i in range(values.shape[0]):
        tack.atomic_min(lo_hi, 0, values[i])
        tack.atomic_max(lo_hi, 1, values[i])
        tack.atomic_add(total, 0, values[i])
        tack.atomic_sub(total, 1, 1)


@case(lambda: [np.zeros((2, 3), np.int64), np.zeros(60, np.int64)])
def atomic_tuple_index(grid, olds):
    for i in range(olds.shape[0]):
        olds[i] = tack.atomic_add(grid, (i % 2, i % 3), 1) * 0  # the old value depends on the order


def _matrix_args():
    rng = np.random.default_rng(3)
    return [tack.array(rng.standard_normal((4, 3, 3)).astype(np.float32), tack.mat33),
            tack.array(rng.standard_normal((4, 3)).astype(np.float32), tack.vec3),
            tack.zeros(4, tack.vec3), tack.zeros(4, tack.mat33)]


@case(_matrix_args)
def matmul(m, v, out, outm):
    for i in range(m.shape[0]):
        out[i] = m[i] @ v[i]
        outm[i] = m[i] @ m[i]


@case(lambda: [np.arange(5.0), np.zeros(2)])
def negative_indices(a, out):
    for i in range(1):
        out[0] = a[-1]
        out[1] = a[-a.shape[0]]


@case(lambda: [np.zeros((3, 4)), np.zeros(4)])
def len_ndim_pow(m, out):
    for i in range(1):
        out[0] = len(m)
        out[1] = m.ndim
        out[2] = m.shape[1] ** 2
        out[3] = pow(2.0, 0.5)


@tack.func
def divmod_(a, b):
    return a // b, a % b


@case(lambda: [np.arange(-4, 5), np.zeros(9, np.int64), np.zeros(9, np.int64)])
def func_returning_a_tuple(a, q, r):
    for i in range(a.shape[0]):
        q[i], r[i] = divmod_(a[i], 3)


@tack.func
def sorted3(a, b, c):
    if a > b:
        a, b = b, a
    if b > c:
        b, c = c, b
    if a > b:
        a, b = b, a
    return a, b, c


@case(lambda: [np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 9.0]]), np.zeros((2, 3))])
def sort_rows(m, out):
    for i in range(m.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = sorted3(m[i, 0], m[i, 1], m[i, 2])


@case(lambda: [np.linspace(-3.0, 3.0, 7).astype(np.float32), np.zeros(7, np.float32)])
def float_floor_div_and_mod(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] // 2.0 + x[i] % 2.0 * 10.0 + tack.fmod(x[i], 2.0) * 100.0


@case(lambda: [tack.array(np.arange(6, dtype=np.int32)), tack.zeros(6, tack.i32)])
def tack_arrays_in_place(a, b):
    for i in range(a.shape[0]):
        b[a.shape[0] - 1 - i] = a[i] * 2 + (1 if a[i] > 2 else 0)


@case(lambda: [tack.array(np.arange(12.0, dtype=np.float32)).reshape(3, 4)])
def views_of_tack_arrays(m):
    for i, j in tack.ndrange(m.shape[0], m.shape[1]):
        m[i, j] = m[i, j] * 2.0 + float(i == j)


@case(f64(6))
def local_arrays_of_numbers(out):
    taps = tack.zeros(3, tack.f64)
    taps[0] = 0.25
    taps[1] = 0.5
    taps[-1] = 0.25
    for i in range(out.shape[0]):
        win = np.empty((2, 3))
        ones = tack.ones(2, np.int32)
        same = tack.full((2, 2), 1.5, tack.f32)
        for k in range(len(taps)):
            win[0, k] = i + k
            win[1, k] = taps[k] * win[0, k]
        acc = 0.0
        for k in range(win.shape[1]):
            acc += win[1, k]
        out[i] = acc + ones[0] + ones[1] + same[1, 1] + win.ndim + same.size


@case(lambda: [np.zeros(4, np.float32), np.zeros(4, np.float16)])
def local_arrays_of_tack_and_half_dtypes(out, half):
    for i in range(out.shape[0]):
        a = np.zeros(3, tack.f32)
        h = tack.zeros(2, tack.f16)
        a[1] = i * 0.5
        h[0] = a[1] + 1.0
        out[i] = a[1] * 2.0
        half[i] = h[0]


@case(lambda: [np.zeros((4, 3), np.float32)])
def local_arrays_of_vectors(out):
    for i in range(out.shape[0]):
        v = tack.zeros(2, tack.vec3)
        w = tack.full(2, 2.0, tack.vec3)
        v[0] = tack.vec3(1.0, 2.0, 3.0) * float(i)
        v[1] += w[1]
        out[i, 0] = v[0].x + v[1].y
        out[i, 1] = v[0].y
        out[i, 2] = v[0].z + v[1].z


@case(lambda: [np.arange(4.0), np.zeros((4, 4))])
def vector_values_by_name(x, out):
    # constructors from one scalar (a vector's every component, a matrix's diagonal) and
    # components of computed vectors read by name: debug mode failed both
    for i in range(x.shape[0]):
        a = tack.vec3d(0.5)
        m = tack.mat33d(2.0)
        b = tack.vec3d(x[i], 1.0, 2.0)
        z = tack.vec3d()
        out[i, 0] = (a + b).y + z.x
        out[i, 1] = tack.normalize(b).x
        out[i, 2] = (m @ b).z
        out[i, 3] = tack.cross(a, b).z + m[1, 1]


def host(x):
    return x.numpy() if isinstance(x, tack.Array) else np.asarray(x)


def test_enough_kernels_are_compared():
    assert len(CASES) >= 20


@pytest.mark.parametrize("fn, make", CASES)
def test_same_results_compiled_and_as_python(fn, make):
    compiled, python = make(), make()
    tack.kernel(fn)(*compiled)
    k = tack.kernel(fn, jit=False)
    assert isinstance(k, tack.PythonKernel) and k.__name__ == fn.__name__ and k.__wrapped__ is fn
    k(*python)
    for c, p in zip(compiled, python):
        if isinstance(c, (np.ndarray, tack.Array)):
            np.testing.assert_allclose(host(p), host(c), rtol=1e-5, atol=1e-6)


def test_local_arrays_are_numpy_arrays_only_while_a_kernel_runs_as_python(monkeypatch):
    """tack.zeros(...) in a kernel run as Python is a NumPy array the body can
    write; outside, and after a kernel that raised, it is a tack.Array again.
    (The kernel is one the compiler takes: debug mode refuses what it refuses,
    so the local array is seen from pdb's hook rather than appended to a list.)"""
    seen = []
    monkeypatch.setattr(sys, "breakpointhook", lambda: seen.append(sys._getframe(1).f_locals["loc"]))

    def make_local(out):
        loc = tack.zeros((2, 2), tack.i16)
        loc[0, 0] = 1
        breakpoint()
        out[5] = loc[0, 0]  # out of bounds: the kernel raises

    k = tack.kernel(make_local, jit=False)
    with pytest.raises(IndexError):
        k(np.zeros(1))
    assert isinstance(seen[0], np.ndarray) and seen[0].dtype == np.int16 and seen[0].shape == (2, 2)
    assert isinstance(tack.zeros(3), tack.Array) and isinstance(tack.full(2, 1.0), tack.Array)


def test_numpy_takes_tack_dtypes():
    """A Tack dtype is a NumPy dtype-like (its .dtype), as inside a kernel."""
    assert np.zeros(2, tack.i16).dtype == np.int16
    assert np.zeros(2, tack.vec3).shape == (2, 3) and np.zeros(2, tack.vec3).dtype == np.float32
    assert np.zeros(1, tack.mat33d).shape == (1, 3, 3)
    assert np.dtype(tack.f16) == np.float16 and tack.vec3.dtype == tack.vec3.numpy


# ------------------------------------------------------------ the debug part
def test_print_output_is_seen(capfd):
    @tack.kernel(jit=False)
    def show(a):
        for i in range(a.shape[0]):
            print("element", i, a[i])

    show(np.array([1.5, 2.5]))
    out, _ = capfd.readouterr()
    assert out.splitlines() == ["element 0 1.5", "element 1 2.5"]  # serially, in loop order


def test_breakpoint_stops_inside_the_loop(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "breakpointhook", lambda: seen.append(dict(sys._getframe(1).f_locals)))

    @tack.kernel(jit=False)
    def k(a):
        for i in range(a.shape[0]):
            a[i] = 2.0 * i
            breakpoint()

    k(np.zeros(2))
    assert [s["i"] for s in seen] == [0, 1] and seen[1]["a"][1] == 2.0


def test_out_of_bounds_raises_index_error():
    @tack.kernel(jit=False)
    def shifted(a, k):
        for i in range(a.shape[0]):
            a[i + k] = 1.0

    a = np.zeros(4, np.float32)
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        shifted(a, 1)
    with pytest.raises(IndexError):
        shifted(a, -5)  # too negative: out of bounds here as in a compiled kernel
    compiled = tack.kernel(shifted.__wrapped__)
    with pytest.raises(IndexError):
        compiled(np.zeros(4, np.float32), 1)


@tack.func
def _load_after(a, i):
    return a[i + 1]


def _oob_in_func(a, out):
    for i in range(out.shape[0]):
        out[i] = _load_after(a, i)


def _oob_2d(a2, out):
    for i in range(out.shape[0]):
        out[i] = a2[i, 7]


def _oob_store(a, out):
    for i in range(out.shape[0]):
        out[i + 1] = a[i]


def _oob_aug(a, out):
    for i in range(out.shape[0]):
        out[i + 2] += a[i]


def _vector_component(a, out):
    for i in range(out.shape[0]):
        v = vec3(1.0, 2.0, 3.0)
        out[i] = v[i + 1]


def _zero_div(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] // (a[i] - a[i])


def _zero_mod(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] % (a[i] - a[i])


def _negative_power(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i] ** (-1 - a[i])


@pytest.mark.parametrize("fn", [_oob_in_func, _oob_2d, _oob_store, _oob_aug, _vector_component, _zero_div, _zero_mod, _negative_power],
                         ids=lambda f: f.__name__)
def test_a_failed_check_gives_the_compiled_kernels_message(fn):
    """A check that fails in debug mode raises the compiled kernel's exception with its words:
    the index, axis and size, the array, the kernel (or the function and the kernel that called
    it) and the file and line, not NumPy's bare message or "run as Python"."""
    def args():
        a = np.zeros(4, np.int64)
        return (np.zeros((4, 3), np.int64) if fn is _oob_2d else a), np.zeros(4, np.int64)

    messages = []
    for jit in (True, False):
        with pytest.raises((IndexError, ZeroDivisionError, ValueError)) as e:
            tack.kernel(fn, jit=jit)(*args())
        messages.append((e.type, str(e.value)))
    assert messages[0] == messages[1]
    assert f"{__file__}:" in messages[1][1] and "run as Python" not in messages[1][1]


def test_a_failed_check_in_a_kernel_defined_in_a_function_names_the_kernel_as_compiled():
    """A kernel made inside a function (or a class) has a qualified name unlike its name.
    The compiled kernel's message names it "kernel shift"; debug mode compared the frame's
    name with the qualified one and said "function shift called from kernel
    make.<locals>.shift", as if a @tack.func had failed."""
    def make(jit):
        @tack.kernel(jit=jit)
        def shift(x, k, out):
            for i in range(out.shape[0]):
                out[i] = x[i + k]
        return shift

    messages = []
    for jit in (True, False):
        with pytest.raises(IndexError) as e:
            make(jit)(np.arange(10.0), 8, np.zeros(5))
        messages.append(str(e.value))
    assert "(array 'x', kernel shift, " in messages[0], messages
    assert messages[1] == messages[0]


def test_read_only_arrays_stay_read_only():
    @tack.kernel(jit=False)
    def fill(a):
        for i in range(a.shape[0]):
            a[i] = 1.0

    x = np.zeros(3)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        fill(x)
    with pytest.raises(ValueError, match="read-only"):
        fill(tack.zeros(3)._readonly_view())
    assert not x.any()


def test_arrays_are_shared_not_copied():
    @tack.kernel(jit=False)
    def fill(a):
        for i in range(a.shape[0]):
            a[i] = 7

    a = tack.zeros(3, tack.i32)
    fill(a)
    fill(a[1:].reshape(1, 2)[0])
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7])
    torch = pytest.importorskip("torch")
    t = torch.zeros(2)
    fill(t)
    assert t.tolist() == [7, 7]


def test_jax_arrays_are_read_only():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jnp = pytest.importorskip("jax.numpy")

    @tack.kernel(jit=False)
    def fill(a):
        for i in range(a.shape[0]):
            a[i] = 1.0

    with pytest.raises(ValueError, match="read-only"):
        fill(jnp.zeros(2))


def test_strided_views_are_written_in_place_as_a_compiled_call_writes_them():
    @tack.kernel(jit=False)
    def k(a):
        for i in range(a.shape[0]):
            a[i] = i

    base = np.zeros(8)
    k(base[::-2])
    np.testing.assert_array_equal(base, [0, 3, 0, 2, 0, 1, 0, 0])


def test_bad_arguments_are_refused_as_a_compiled_call_refuses_them():
    @tack.kernel(jit=False)
    def k(a):
        for i in range(a.shape[0]):
            a[i] = 0

    with pytest.raises(TypeError, match=r"argument 'a' of .*k\(\).*DLPack producer.*got str"):
        k("abc")
    with pytest.raises(ValueError, match="not multiples of its 8-byte elements"):
        k(np.ndarray((2,), np.float64, np.zeros(24, np.uint8), 0, (12,)))  # 12-byte strides
    with pytest.raises(TypeError, match="no Tack dtype"):
        k(np.zeros(2, np.clongdouble))
    with pytest.raises(TypeError, match="missing a required argument"):
        k()


def test_device_arrays_are_refused():
    devs = [d for d in tack.devices() if d != "cpu"]
    if not devs:
        pytest.skip("no device other than the CPU")

    @tack.kernel(jit=False)
    def k(a):
        pass

    with pytest.raises(ValueError, match=rf"argument 'a'.*on {devs[0]}.*to\('cpu'\)"):
        k(tack.zeros(2, device=devs[0]))


def test_jit_option_values():
    def body(a):
        pass

    assert isinstance(tack.kernel(body, jit=True), tack.Kernel)
    assert isinstance(tack.kernel(jit=False)(body), tack.PythonKernel)
    with pytest.raises(TypeError, match="jit must be True, False or None"):
        tack.kernel(body, jit="no")
    k = tack.kernel(body, jit=False)
    assert tack.compile_kernels([(k, (np.zeros(1),))]) == [0.0]
    assert "jit=False" in repr(k)


def test_environment_variable_is_read_at_import(tmp_path):
    script = tmp_path / "debug_env.py"
    script.write_text(textwrap.dedent("""
        import os, numpy as np, tack

        @tack.kernel
        def k(a):
            for i in range(a.shape[0]):
                a[i] = i

        @tack.kernel(jit=True)
        def forced(a):
            for i in range(a.shape[0]):
                a[i] = 1

        a = np.zeros(2)
        k(a)
        forced(a)
        os.environ["TACK_DISABLE_JIT"] = "0"  # too late: read when tack was imported

        @tack.kernel
        def later(a):
            pass

        print(type(k).__name__, type(forced).__name__, type(later).__name__, a.tolist())
    """))
    for value, expect in (("1", "PythonKernel Kernel PythonKernel"), ("0", "Kernel Kernel Kernel")):
        env = dict(os.environ, TACK_DISABLE_JIT=value)
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[-1] == f"{expect} [1.0, 1.0]"
