"""float16 local arrays: np.zeros(n, np.float16) and its kin inside a kernel
or a @tack.func (lower_local.c).

f16 is a storage type in Tack, for a local array as for an array parameter:
an element holds its 16 bits, every store rounds to the nearest f16 (ties to
even, overflow to inf, subnormals kept, NaN stays NaN) and every load widens
it to f32 exactly.  Each kernel here is compared, bit for bit, with the same
function run as plain Python and NumPy.  NumPy computes f16 op f16 in f16
where Tack computes in f32; for one operation whose result is stored into an
f16 element the two agree (f32 holds every such result closely enough that
rounding it again to f16 is rounding once), so the kernels store after each
operation, and test_an_expression_rounds_once_where_numpy_rounds_each_step
shows the difference.  The GPU test files replay this file on each
dialect's compile path (test_cuda.py, test_hip.py, test_opencl.py on PoCL,
test_msl.py, test_metal_run.py)."""

import numpy as np
import pytest

import tack

# f32 values whose f16 roundings are the edge cases: ties to even, the largest
# finite half and the first value past it, subnormals and their ties, the
# smallest normal, signed zeros, infinities, NaN.
EDGES = np.array([
    1.0, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, -(1 + 2**-11),
    65504.0, 65519.0, 65520.0, 1e6, -1e6, 3.0e38,
    2**-24, 2**-25, 3 * 2**-25, 1.5 * 2**-25, 2**-25 + 2**-40, 2**-26,
    2**-14, 2**-14 - 2**-25, 2**-14 - 2**-24, 6e-8, -2.5e-8, 1e-30,
    0.0, -0.0, np.inf, -np.inf, np.nan, 0.1, 1 / 3, 3.14159265, -2.71828, 1000.3, 512.25,
], dtype=np.float32)


def _same(got, want):
    """The same values bit for bit, NaNs as NaNs (their payloads may differ)."""
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    np.testing.assert_array_equal(got[ok].view(u), want[ok].view(u))


def _compare(fn, make, outputs):
    """fn as a kernel against fn itself, run as plain Python and NumPy."""
    got, want = make(), make()
    tack.kernel(fn)(*got)
    with np.errstate(all="ignore"):  # NumPy warns where a cast overflows
        fn(*want)
    for i in outputs:
        _same(got[i], want[i])
    return got


# ----------------------------------------------------------- differential
def rounds_on_store(x, out16, out32):
    for i in range(x.shape[0]):
        h = np.zeros(3, np.float16)
        h[0] = x[i]                     # an f32 value, rounded to the nearest f16
        h[1] = h[0]                     # widened and stored again: unchanged
        h[-1] = x[i] * -3               # one f32 product, rounded once
        out16[i] = h[0]
        out32[i, 0] = h[1]
        out32[i, 1] = h[2]


def test_every_store_rounds_to_nearest_even():
    got = _compare(rounds_on_store, lambda: (EDGES.copy(), np.zeros(EDGES.size, np.float16),
                                             np.zeros((EDGES.size, 2), np.float32)), (1, 2))
    h = got[1]
    assert h[1] == 1.0 and h[2] == 1 + 2**-9 and h[3] == 1 + 2**-10      # ties to even; past the tie
    assert h[6] == 65504 and np.isposinf(h[7]) and np.isposinf(h[8]) and np.isneginf(h[9])
    assert h[11] == 2**-24 and h[12] == 0 and h[13] == 2**-23 and h[14] == 2**-24 and h[15] == 2**-24
    assert h[18] == 2**-14 and h[19] == 2**-14 - 2**-24                    # the tie rounds up to the normal
    assert np.signbit(h[21]) and h[21] == 0 and np.isnan(h[27])


def running_sums(x, out):
    for i in range(x.shape[0]):
        s = np.zeros(2, dtype=np.float16)
        for k in range(x.shape[1]):
            s[0] += x[i, k]             # each partial sum rounds to f16, as NumPy's
            s[1] += x[i, k] * 2         # f16 meets f32: an f32 sum, rounded where stored
        out[i, 0] = s[0]
        out[i, 1] = s[1]


def test_compound_assignment_rounds_each_partial_sum():
    x = np.full((3, 3000), 0.1, np.float32)
    x[1] = np.linspace(-1, 7, 3000, dtype=np.float32)
    got = _compare(running_sums, lambda: (x.copy(), np.zeros((3, 2), np.float32)), (1,))
    assert got[1][0, 0] == 256.0         # stuck where 0.1 is below half a step of f16: NumPy's answer
    assert abs(got[1][0, 0] - x[0].sum()) > 40


def fills(out):
    for i in range(out.shape[0]):
        a = np.zeros(2, np.float16)
        b = np.ones((2, 2), dtype=np.float16)
        c = np.full(3, 0.1, np.float16)             # 0.0999755859375
        d = np.empty(2, "float16")                   # zeros here (NumPy's are whatever was there)
        d[0] = c[1]
        e = np.full(2, 70000.0, np.float16)          # past the largest half: inf
        f = np.full(2, -1e-8, dtype=np.float16)      # below the smallest subnormal: -0.0
        g = np.full(2, 3e-6, np.float16)             # a subnormal
        out[i, 0] = a[1]
        out[i, 1] = b[1, -1]
        out[i, 2] = c[2]
        out[i, 3] = d[0]
        out[i, 4] = e[1]
        out[i, 5] = f[0]
        out[i, 6] = g[1]
        out[i, 7] = len(c) + c.size + b.ndim + b.shape[1]


def test_fills_and_attributes():
    got = _compare(fills, lambda: (np.zeros((2, 8), np.float32),), (0,))[0][0]
    assert got[2] == np.float32(np.float16(0.1)) and np.isposinf(got[4]) and np.signbit(got[5])
    assert got[6] == np.float32(np.float16(3e-6)) and got[7] == 10


def taps(x, out):
    w = np.zeros((2, 3), np.float16)    # before the loop: every iteration reads it
    w[0, 0] = x[0]
    w[0, 1] = x[1]
    w[0, -1] = x[2]
    w[1, -1] = w[0, 0] + w[0, 1]        # one sum, rounded where it is stored
    for i in range(out.shape[0]):
        out[i] = x[i] * w[0, i % 3] + w[1, 2]   # f16 meets f32: f32, as NumPy computes


def test_an_array_made_before_the_loop_is_read_in_it():
    x = np.linspace(-2, 2, 50, dtype=np.float32) + np.float32(0.01)
    _compare(taps, lambda: (x.copy(), np.zeros(50, np.float32)), (1,))


@tack.func
def put_half(buf, k, v):
    buf[k] = v                          # buf's elements are f16: the store rounds


@tack.func
def total(buf):
    s = np.float32(0)
    for k in range(len(buf)):
        s += buf[k]
    return s


def via_funcs(x, p16, out):
    for i in range(out.shape[0]):
        h = np.zeros(4, np.float16)
        for k in range(4):
            put_half(h, k, x[i, k])      # by reference: the function's stores are h's
        out[i] = total(h) + total(p16)   # total() for a local array and for a parameter


def test_passed_to_tack_funcs_by_reference():
    x = EDGES[:32].reshape(8, 4).copy()
    x[~np.isfinite(x)] = 1.5
    p16 = np.array([0.1, 2.5, -1 / 3], np.float16)
    _compare(via_funcs, lambda: (x.copy(), p16.copy(), np.zeros(8, np.float32)), (2,))


def test_tack_spellings():
    @tack.kernel
    def spelled(out):
        for i in range(out.shape[0]):
            a = tack.zeros(2, tack.f16)
            b = tack.full(2, 0.1, dtype=tack.f16)
            c = np.ones(2, dtype=out.dtype)             # an f16 parameter's dtype
            a[1] = b[0] + c[1]
            out[i] = a[1]

    out = np.zeros(3, np.float16)
    spelled(out)
    assert (out == np.float16(np.float16(0.1) + np.float16(1))).all()


def test_an_expression_rounds_once_where_numpy_rounds_each_step():
    """Tack widens a loaded f16 to f32 and computes there, as for f16 array
    parameters; NumPy computes f16 op f16 in f16.  An expression of several
    operations on f16 elements, stored once, rounds once here and after each
    operation in NumPy: the docs say so, and say to store each step to get
    NumPy's bits."""
    def chained(out):
        for i in range(out.shape[0]):
            h = np.full(2, 2049.0, np.float16)      # 2048: 2049 rounds to even
            h[1] = 1.0
            out[i] = h[0] + h[1] + h[1]             # f32 here: 2050; NumPy's f16: 2048

    def python_float(out):
        for i in range(out.shape[0]):
            s = np.zeros(1, np.float16)
            for k in range(3):
                s[0] += 0.1                         # NumPy: 0.1 made an f16 first, then the sum
            out[i] = s[0]

    out = np.zeros(1, np.float16)
    tack.kernel(chained)(out)
    want = np.zeros(1, np.float16)
    chained(want)
    assert out[0] == 2050 and want[0] == 2048
    out = np.zeros(1, np.float16)
    tack.kernel(python_float)(out)
    want = np.zeros(1, np.float16)
    python_float(want)
    assert out[0] == 0.300048828125 and want[0] == 0.2998046875   # NumPy: 1228.5 / 4096, a tie, to even


# ---------------------------------------------------------------- sizes
@tack.kernel
def largest_cpu(out):
    for i in range(out.shape[0]):
        t = np.zeros(8192, np.float16)      # 16 KiB: two bytes an element
        out[i] = t[8191]


@tack.kernel
def past_cpu(out):
    for i in range(out.shape[0]):
        t = np.zeros(8193, np.float16)
        out[i] = t[0]


@tack.kernel
def largest_gpu(out):
    for i in range(out.shape[0]):
        t = np.ones(2048, np.float16)       # 4 KiB
        out[i] = t[2047]


@tack.kernel
def past_gpu(out):
    for i in range(out.shape[0]):
        t = np.ones(2049, np.float16)
        out[i] = t[0]


def test_the_size_limits_count_two_bytes_an_element():
    out = np.zeros(2, np.float32)
    assert "uint16_t v1_t[8192] = {0};" in largest_cpu.generated_source(out)  # (a GPU refuses it: not run)
    largest_gpu(out)
    assert out.tolist() == [1.0, 1.0]
    with pytest.raises(tack.CompileError, match=r"shape \(8193,\) and dtype f16 is too large: 16386 bytes, and a "
                                                r"local array may take at most 16384 bytes on the CPU"):
        past_cpu.generated_source(out)
    for target in ("cuda", "opencl", "hip", "metal"):
        assert "uint16_t v" in largest_gpu.generated_source(out, target=target), target
        with pytest.raises(tack.CompileError, match=r"4098 bytes, and a local array may take at most 4096 bytes on a GPU"):
            past_gpu.generated_source(out, target=target)


# ------------------------------------------------------- the GPU dialects
def _edges_args():
    return EDGES.copy(), np.zeros(EDGES.size, np.float16), np.zeros((EDGES.size, 2), np.float32)


def test_dialects_hold_the_bits_and_convert_where_they_load_and_store():
    x = EDGES[:32].reshape(8, 4).copy()
    for target in tack._core._targets():
        if target == "c":
            src = tack.kernel(rounds_on_store).generated_source(*_edges_args())
        else:
            src = tack.kernel(rounds_on_store).generated_source(*_edges_args(), target=target)
        assert "uint16_t v" in src and "[3] = {0};" in src, target
        assert "tk_f2h(" in src and "tk_h2f(" in src, target
        src = tack.kernel(via_funcs).generated_source(x, np.zeros(3, np.float16), np.zeros(8, np.float32),
                                                      **({} if target == "c" else {"target": target}))
        assert "uint16_t *)v" in src, target      # the local array passed as its bits
        if target == "opencl":                     # private, where the parameter's is global
            assert "abi, uint16_t *a0, int64_t a0_s0)" in src and "abi, __global uint16_t *a0" in src
        src = tack.kernel(taps).generated_source(EDGES.copy(), np.zeros(EDGES.size, np.float32),
                                                 **({} if target == "c" else {"target": target}))
        assert "[6]" in src, target                 # the taps travel to the loop as their bits


def test_opencl_runs_them_as_the_cpu_does():
    devs = [d for d in tack.devices() if d.startswith("opencl")]
    if not devs:
        pytest.skip("no OpenCL device (PoCL)")
    args = _edges_args()
    cpu = [a.copy() for a in args]
    tack.kernel(rounds_on_store)(*cpu)
    dev = [tack.array(a, device=devs[0]) for a in args]
    tack.kernel(rounds_on_store)(*dev)
    for i in (1, 2):
        _same(dev[i].numpy(), cpu[i])
    x = EDGES[:32].reshape(8, 4).copy()
    x[~np.isfinite(x)] = 1.5
    p16 = np.array([0.1, 2.5, -1 / 3], np.float16)
    cpu = np.zeros(8, np.float32)
    tack.kernel(via_funcs)(x, p16, cpu)
    out = tack.zeros(8, tack.f32, device=devs[0])
    tack.kernel(via_funcs)(tack.array(x, device=devs[0]), tack.array(p16, device=devs[0]), out)
    _same(out.numpy(), cpu)


def test_msl_type_checks():
    import _msl

    if _msl.clang() is None:
        pytest.skip("no clang++ to type-check MSL with")
    x = EDGES[:32].reshape(8, 4).copy()
    for src in (tack.kernel(rounds_on_store).generated_source(*_edges_args(), target="metal"),
                tack.kernel(via_funcs).generated_source(x, np.zeros(3, np.float16), np.zeros(8, np.float32),
                                                        target="metal"),
                tack.kernel(taps).generated_source(EDGES.copy(), np.zeros(EDGES.size, np.float32), target="metal")):
        assert not _msl.check(src)


# ----------------------------------------------------------- bad inputs
@tack.kernel
def stores_a_vector(out):
    for i in range(out.shape[0]):
        h = np.zeros(2, np.float16)
        h[0] = tack.vec3(1.0, 2.0, 3.0)
        out[i] = h[0]


@tack.kernel
def stores_a_complex(out):
    for i in range(out.shape[0]):
        h = np.zeros(2, np.float16)
        h[0] = 1 + 2j
        out[i] = h[0]


@pytest.mark.parametrize("k, msg", [
    (stores_a_vector, r"cannot store vec3 into an element of local array 'h' \(f16\)"),
    (stores_a_complex, r"cannot convert complex \(Python\) to f32: the imaginary part would be lost"),
])
def test_bad_stores_name_the_element_type(k, msg):
    with pytest.raises(tack.CompileError, match=msg) as e:
        k(np.zeros(2, np.float32))
    assert e.value.lineno is not None


# ------------------------------------------- Python floats rounded once
# float64 values next to a float16 tie: rounded to f32 first, each would
# round the other way (to 1.0, to 0.0, to inf); NumPy rounds them once.
NEAR_TIE = 1 + 2**-11 + 2**-30
NEAR_SUBNORMAL_TIE = 2**-25 + 2**-60
NEAR_OVERFLOW = 65519.99999999


def python_floats(p16, out):
    for i in range(out.shape[0]):
        h = np.full(6, NEAR_TIE, np.float16)
        h[1] = NEAR_SUBNORMAL_TIE
        h[2] = NEAR_OVERFLOW
        h[3] = -1.0004882821813226             # a literal
        h[4] = -NEAR_SUBNORMAL_TIE
        p16[0] = NEAR_TIE                       # an array parameter's element: the same
        p16[1] = NEAR_OVERFLOW
        for k in range(6):
            out[i, k] = h[k]


def test_python_floats_round_once_as_numpy_rounds_them():
    got = _compare(python_floats, lambda: (np.zeros(2, np.float16), np.zeros((2, 6), np.float32)), (0, 1))
    assert got[1][0].tolist() == [1 + 2**-10, 2**-24, 65504, -(1 + 2**-10), -(2**-24), 1 + 2**-10]
    assert got[0].tolist() == [1 + 2**-10, 65504]


# ------------------------------------------------ every bit pattern
def round_trips(p16, out16, out32):
    for i in range(p16.shape[0]):
        h = np.empty(1, np.float16)
        h[0] = p16[i]                   # widened from the parameter, rounded back: the same half
        out16[i] = h[0]
        out32[i] = h[0]                 # widened exactly


def test_every_float16_widens_exactly_and_stores_back_unchanged():
    p16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = _compare(round_trips, lambda: (p16.copy(), np.zeros(65536, np.float16), np.zeros(65536, np.float32)),
                   (1, 2))
    _same(got[1][~np.isnan(p16)], p16[~np.isnan(p16)])


def test_random_float32_bit_patterns_round_as_numpy_rounds_them():
    x = np.random.default_rng(16).integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x[:EDGES.size] = EDGES
    _compare(rounds_on_store, lambda: (x.copy(), np.zeros(x.size, np.float16), np.zeros((x.size, 2), np.float32)),
             (1, 2))


@tack.func
def smallest_half(x, i):
    h = np.full(2, 65504.0, np.float16)     # a function's own float16 array
    for k in range(x.shape[1]):
        h[1] = x[i, k]
        if h[1] < h[0]:
            h[0] = h[1]
    return h[0]


def per_row_minimum(x, out):
    for i in range(x.shape[0]):
        out[i] = smallest_half(x, i)


def test_a_function_makes_its_own():
    x = np.random.default_rng(3).standard_normal((6, 9)).astype(np.float32) * 1000
    _compare(per_row_minimum, lambda: (x.copy(), np.zeros(6, np.float32)), (1,))


@tack.kernel
def reads_past_the_end(out, k):
    for i in range(out.shape[0]):
        h = np.ones(3, np.float16)
        out[i] = h[k]


def test_indices_are_checked():
    out = np.zeros(2, np.float32)
    reads_past_the_end(out, -3)
    assert out.tolist() == [1.0, 1.0]
    with pytest.raises(IndexError):
        reads_past_the_end(out, 3)


# ------------------------------------------ float64 values rounded once
def from_float64(x, p16, out16):
    for i in range(x.shape[0]):
        h = np.zeros(2, np.float16)
        h[0] = x[i]                     # a float64 array's element: rounded once, with tk_d2h
        h[1] = x[i] * 0.5               # float64 arithmetic: the same
        h[1] += x[i]                    # f32 + f64 is f64: rounded once again
        p16[i] = x[i] * 0.25            # an array parameter's element: the same
        p16[i] += x[i]                  # (a read-modify-write of one)
        out16[i, 0] = h[0]
        out16[i, 1] = h[1]


def test_float64_values_round_once_as_numpy_rounds_them():
    rng = np.random.default_rng(64)
    x = np.concatenate([
        [NEAR_TIE, -NEAR_TIE, NEAR_SUBNORMAL_TIE, -NEAR_SUBNORMAL_TIE, NEAR_OVERFLOW, 1e300, -1e300, 1e-300,
         -1e-300, 0.0, -0.0, np.inf, -np.inf, np.nan, 65520.0, 2**-25, 3 * 2**-26, 2**-14 - 2**-25],
        # next to every kind of tie: a float16 halfway point, nudged by a few float64 steps
        np.ldexp(rng.integers(2**10, 2**11, 3000) * 2 + 1, rng.integers(-35, 6, 3000)).astype(np.float64)
        * (1 + rng.integers(-3, 4, 3000) * 2.0**-52),
        rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000),
    ])
    got = _compare(from_float64, lambda: (x.copy(), np.zeros(x.size, np.float16), np.zeros((x.size, 2), np.float16)),
                   (1, 2))
    with np.errstate(over="ignore"):
        via_f32 = x.astype(np.float32).astype(np.float16)
    assert (got[1].view(np.uint16) != via_f32.view(np.uint16)).sum() > 500    # double rounding would miss these


def test_only_a_float64_value_takes_the_float64_conversion():
    x16 = np.zeros(4, np.float16)
    src = tack.kernel(from_float64).generated_source(np.zeros(4), x16, np.zeros((4, 2), np.float16))
    assert "tk_d2h(" in src
    src = tack.kernel(rounds_on_store).generated_source(*_edges_args())
    assert "tk_d2h(v" not in src and "tk_f2h(" in src
    for target in ("opencl", "cuda", "hip"):
        src = tack.kernel(from_float64).generated_source(np.zeros(4), x16, np.zeros((4, 2), np.float16),
                                                         target=target)
        assert "tk_d2h(" in src, target
    src = tack.kernel(python_floats).generated_source(x16, np.zeros((2, 6), np.float32), target="opencl")
    assert "fp64=0 */" in src    # Python floats rounded while compiling: no float64 in the kernel


def store_argument(s, out):
    for i in range(out.shape[0]):
        h = np.zeros(1, np.float16)
        h[0] = s
        out[i] = h[0]


def test_a_float_argument_stored_as_it_is_rounds_once():
    """A float argument stored as it is into a float16 element is rounded
    once, as NumPy stores it (through f32 it was the tie 1 + 2**-11, then
    1.0), so the kernel takes it as a float64 (a GPU without float64 is
    passed np.float32(s)); an f64 array of one element, a constant, or a
    NumPy float64 argument rounds once as well."""
    k = tack.kernel(store_argument)
    out = np.zeros(1, np.float32)
    k(NEAR_TIE, out)
    assert out[0] == 1 + 2**-10                     # NumPy's; through f32 the tie went to even, 1.0
    k(np.float64(NEAR_TIE), out)                    # a NumPy float64 is not weak: f64, rounded once
    assert out[0] == np.float16(np.float64(NEAR_TIE)) == 1 + 2**-10
    assert "fp64=1 */" in k.generated_source(NEAR_TIE, out, target="opencl")
    k(np.float32(NEAR_TIE), out)                    # an f32, for a GPU without float64: its own rounding
    assert out[0] == np.float16(np.float32(NEAR_TIE)) == 1.0
    got = _compare(from_float64, lambda: (np.array([NEAR_TIE]), np.zeros(1, np.float16), np.zeros((1, 2), np.float16)),
                   (1, 2))
    assert got[2][0, 0] == 1 + 2**-10
