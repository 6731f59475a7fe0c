"""tack.random: Philox4x32-10 in kernels and in plain Python.

The generator is checked against the published known-answer vectors of
Random123 (tests/kat_vectors of github.com/DEShawResearch/random123), in a
kernel and from Python; a generator with a round missing fails them.  The
numbers a kernel draws are the same bits from Python, at one thread and at
many, in the generated CUDA source (compiled by NVRTC, run by the CPU
emulator) and on the OpenCL device.  The distributions are checked with
fixed seeds, at thresholds a correct generator crosses with probability
below 1e-6 for all the checks together (each z-score below 5.5, about 4e-8
two-sided; the Kolmogorov-Smirnov statistic below 3.0/sqrt(n), about 3e-8),
and the checks are shown to reject a biased integer mapping.
"""

import math

import numpy as np
import pytest

import tack
from tack import _core
from tack.random import _cos_unit24, _cos_unit53, _log_unit24, _log_unit53, _philox4x32_rounds, block, normal, normal_f32, philox4x32, randint, uniform, uniform_f32

import _cuda_emulate  # noqa: E402
import _nvrtc_ctypes  # noqa: E402

# Random123's kat_vectors, the Philox4x32 lines: (rounds, counter, key, expected)
KAT = [
    (10, (0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (10, (0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (10, (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    (7, (0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x5207DDC2, 0x45165E59, 0x4D8EE751, 0x8C52F662)),
    (7, (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0x4DFCCABA, 0x190A87F0, 0xC47362BA, 0xB6B5242A)),
]
KAT10 = [k for k in KAT if k[0] == 10]

Z = 5.5          # two-sided normal tail: 3.8e-8
KS = 3.0         # sqrt(n) * D: 2 exp(-18) = 3.0e-8


# ------------------------------------------------------------------ kernels
@tack.kernel
def kat_kernel(c, k, out, rounds):
    for i in range(c.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = _philox4x32_rounds(c[i, 0], c[i, 1], c[i, 2], c[i, 3],
                                                                        k[i, 0], k[i, 1], rounds)


@tack.kernel
def kat_kernel_default(c, k, out):
    for i in range(c.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = philox4x32(c[i, 0], c[i, 1], c[i, 2], c[i, 3],
                                                                k[i, 0], k[i, 1])


@tack.kernel
def draw_all(seed, first, u, uf, z, zf, small, wide):
    """Every kind of draw, counter first + i (a counter past 2**32 tests the
    second counter word)."""
    for i in range(u.shape[0]):
        c = first + i
        u[i] = tack.random.uniform(seed, c)
        uf[i] = tack.random.uniform_f32(seed, c)
        z[i] = tack.random.normal(seed, c)
        zf[i] = tack.random.normal_f32(seed, c)
        small[i] = tack.random.randint(seed, c, -5, 6)
        wide[i] = tack.random.randint(seed, c, 0, 2**31 + 1)   # rejects about half the words


@tack.kernel
def uniforms(seed, out):
    for i in range(out.shape[0]):
        out[i] = uniform(seed, i)


@tack.kernel
def uniforms_f32(seed, out):
    for i in range(out.shape[0]):
        out[i] = uniform_f32(seed, i)


@tack.kernel
def normals(seed, out):
    for i in range(out.shape[0]):
        out[i] = normal(seed, i)


@tack.kernel
def normals_f32(seed, out):
    for i in range(out.shape[0]):
        out[i] = normal_f32(seed, i)


@tack.kernel
def randints(seed, low, high, out):
    for i in range(out.shape[0]):
        out[i] = randint(seed, i, low, high)


@tack.kernel
def pi_estimate(seed, n, hits):
    for i in range(n):
        x = uniform(seed, 2 * i)
        y = uniform(seed, 2 * i + 1)
        if x * x + y * y < 1.0:
            hits[0] += 1


def draws(n, seed=2026, first=0, device="cpu"):
    arrays = [np.zeros(n), np.zeros(n, np.float32), np.zeros(n), np.zeros(n, np.float32),
              np.zeros(n, np.int64), np.zeros(n, np.int64)]
    if device == "cpu":
        draw_all(seed, first, *arrays)
        return arrays
    moved = [tack.array(a, device=device) for a in arrays]
    draw_all(seed, first, *moved)
    tack.synchronize(device)
    return [m.numpy() for m in moved]


def host_draws(n, seed=2026, first=0):
    c = np.arange(first, first + n, dtype=np.uint64)
    small = [randint(seed, int(k), -5, 6) for k in c]
    wide = [randint(seed, int(k), 0, 2**31 + 1) for k in c]
    return [uniform(seed, c), uniform_f32(seed, c), normal(seed, c), normal_f32(seed, c),
            np.array(small, np.int64), np.array(wide, np.int64)]


def assert_same(got, want):
    """Bit for bit, the normals included: the generator's own log and cos use
    only operations that round the same way on every backend and in NumPy."""
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, k
        np.testing.assert_array_equal(g.view(f"u{g.itemsize}"), w.view(f"u{w.itemsize}"), err_msg=f"output {k}")


# --------------------------------------------------------- known answers
def _kat_arrays(cases):
    c = np.array([k[1] for k in cases], np.uint32)
    key = np.array([k[2] for k in cases], np.uint32)
    want = np.array([k[3] for k in cases], np.uint32)
    return c, key, want


@pytest.mark.parametrize("rounds", [10, 7])
def test_known_answers_in_a_kernel(rounds):
    c, key, want = _kat_arrays([k for k in KAT if k[0] == rounds])
    out = np.zeros_like(want)
    kat_kernel(c, key, out, rounds)
    np.testing.assert_array_equal(out, want)
    if rounds == 10:            # the default is Philox4x32-10
        out[:] = 0
        kat_kernel_default(c, key, out)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("case", KAT, ids=lambda k: f"r{k[0]}-{k[1][0]:08x}" if isinstance(k, tuple) else "")
def test_known_answers_from_python(case):
    rounds, c, key, want = case
    got = _philox4x32_rounds(*c, *key, rounds)
    assert all(isinstance(w, np.uint32) for w in got)
    assert tuple(int(w) for w in got) == want
    if rounds == 10:
        assert tuple(int(w) for w in philox4x32(*c, *key)) == want
        # NumPy arrays of counters: elementwise, the same words
        cols = philox4x32(*(np.full(3, w, np.uint32) for w in c), *key)
        assert [col.tolist() for col in cols] == [[w] * 3 for w in want]


def test_a_generator_with_a_round_missing_fails_the_known_answers():
    c, key, want = _kat_arrays(KAT10)
    for rounds in (9, 11):
        out = np.zeros_like(want)
        kat_kernel(c, key, out, rounds)
        assert (out != want).all(axis=1).all(), rounds
        for (_, cw, kw, w) in KAT10:
            assert tuple(int(x) for x in _philox4x32_rounds(*cw, *kw, rounds)) != w


@tack.kernel
def blocks(seed, counter, out):
    for i in range(out.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = tack.random.block(seed, counter + i)


def test_seed_and_counter_map_onto_the_key_and_counter_words():
    seed, counter = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    w = philox4x32(counter & 0xFFFFFFFF, counter >> 32, 0, 0, seed & 0xFFFFFFFF, seed >> 32)
    assert tuple(int(x) for x in tack.random.block(seed, counter)) == tuple(int(x) for x in w)
    out = np.zeros((3, 4), np.uint32)
    blocks(seed, counter - 2**64, out)        # an i64 counter, wrapped to the same u64
    assert tuple(out[0]) == tuple(int(x) for x in w)
    np.testing.assert_array_equal(out.T, tack.random.block(seed, counter + np.arange(3, dtype=np.uint64)))
    w0, w1 = int(w[0]), int(w[1])
    assert uniform(seed, counter) == ((w0 << 21) | (w1 >> 11)) * 2.0**-53
    assert uniform_f32(seed, counter) == np.float32((w0 >> 8) * 2.0**-24)
    assert uniform_f32(seed, counter) == np.float32(uniform(seed, counter) // 2.0**-24 * 2.0**-24)


def test_the_module_is_not_exported_by_star_import():
    """`from tack import *` must not shadow the standard library's random."""
    ns = {}
    exec("from tack import *", ns)
    assert "random" not in ns and tack.random.__name__ == "tack.random"


# ------------------------------------------------------ the same numbers
def test_a_kernel_gives_pythons_numbers():
    n = 4000
    for first in (0, 2**32 - 2000):    # across the carry into the second counter word
        assert_same(draws(n, first=first), host_draws(n, first=first))


def test_normals_are_pythons_bits_over_a_million_counters():
    """The normals' log and cos are the generator's own: a kernel and NumPy
    on the host draw the same bits, f64 and f32 (NumPy's log and cos, as
    the kernel's libm, would differ in the last place here and there)."""
    c = np.arange(1_000_000, dtype=np.uint64)
    z = np.zeros(len(c))
    normals(2027, z)
    np.testing.assert_array_equal(z.view(np.uint64), normal(2027, c).view(np.uint64))
    zf = np.zeros(len(c), np.float32)
    normals_f32(2027, zf)
    np.testing.assert_array_equal(zf.view(np.uint32), normal_f32(2027, c).view(np.uint32))
    # a NumPy scalar counter gives the element's bits too
    assert normal(2027, 12345).view(np.uint64) == z[12345].view(np.uint64)
    assert normal_f32(2027, np.uint64(12345)).view(np.uint32) == zf[12345].view(np.uint32)


@tack.kernel
def log_cos(m, lg, cs, lg32, cs32):
    for i in range(m.shape[0]):
        lg[i] = _log_unit53(9007199254740992 - m[i])
        cs[i] = _cos_unit53(m[i])
        lg32[i] = _log_unit24(16777216 - (m[i] >> 29))
        cs32[i] = _cos_unit24(m[i] >> 29)


def _ulps(got, exact, dtype):
    """|got - exact| in units of the last place of exact rounded to dtype."""
    import mpmath

    worst = 0.0
    for g, x in zip(got, exact):
        if abs(x) < 1e-30:       # cos of a quarter turn: exactly 0
            assert g == 0
            continue
        ulp = float(np.spacing(dtype(abs(float(x)))))
        worst = max(worst, float(abs(mpmath.mpf(float(g)) - x)) / ulp)
    return worst


def test_the_normals_log_and_cos_are_within_two_ulps():
    """log(1 - u) and cos(2 pi v) of the normals against mpmath, at random
    numerators, both ends of the range, around each quarter turn and at
    powers of two (each binade of log's argument); the measured worst cases
    are 0.76 ulp (log) and 1.6 ulps (cos), f64 and f32 alike."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 120
    rng = np.random.default_rng(5)
    quarter = [q * 2**51 + d for q in range(5) for d in (-(2**29) - 1, -1, 0, 1, 2**29 + 1)]
    m = np.concatenate([rng.integers(0, 2**53, 3000, dtype=np.uint64),
                        np.arange(0, 200, dtype=np.uint64), 2**53 - 1 - np.arange(200, dtype=np.uint64),
                        np.array([x for x in quarter if 0 <= x < 2**53], np.uint64),
                        np.array([2**e + d for e in range(53) for d in (-1, 0, 1) if 0 <= 2**e + d < 2**53],
                                 np.uint64)])
    m = np.unique(m)
    lg, cs = np.zeros(len(m)), np.zeros(len(m))
    lg32, cs32 = np.zeros(len(m), np.float32), np.zeros(len(m), np.float32)
    log_cos(m, lg, cs, lg32, cs32)
    big, small = mpmath.mpf(2) ** 53, mpmath.mpf(2) ** 24
    ks = [int(k) for k in m]
    assert _ulps(lg, [mpmath.log((big - k) / big) for k in ks], np.float64) < 1.0
    assert _ulps(cs, [mpmath.cos(2 * mpmath.pi * k / big) for k in ks], np.float64) < 2.0
    assert _ulps(lg32, [mpmath.log((small - (k >> 29)) / small) for k in ks], np.float32) < 1.0
    assert _ulps(cs32, [mpmath.cos(2 * mpmath.pi * (k >> 29) / small) for k in ks], np.float32) < 2.0
    # the host runs the same operations
    np.testing.assert_array_equal(lg, _log_unit53(9007199254740992 - m))
    np.testing.assert_array_equal(cs32, _cos_unit24(m >> np.uint64(29)))


def test_values_lie_in_their_ranges():
    u, uf, z, zf, small, wide = draws(200_000, seed=7)
    assert u.min() >= 0 and u.max() < 1 and uf.min() >= 0 and uf.max() < 1
    assert np.isfinite(z).all() and np.isfinite(zf).all()
    assert small.min() == -5 and small.max() == 5
    assert wide.min() >= 0 and wide.max() <= 2**31
    assert len(np.unique(u[:20_000])) == 20_000   # 53 bits: a repeat among 2e4 has probability 2e-8


def test_seeds_and_counters_are_taken_modulo_2_to_the_64():
    """In a kernel, as a cast to u64 would; from Python a NumPy integer wraps
    the same way and a Python int outside [0, 2**64) is refused, as NumPy
    refuses it for a u64."""
    out = np.zeros(100)
    uniforms(-1, out)
    np.testing.assert_array_equal(out, uniform(2**64 - 1, np.arange(100)))
    np.testing.assert_array_equal(out, uniform(np.int64(-1), np.arange(100)))
    assert uniform(5, np.int64(-2)) == uniform(5, 2**64 - 2)
    for bad in (-1, 2**64):
        with pytest.raises(OverflowError):
            uniform(bad, 0)
        with pytest.raises(OverflowError):
            uniform(0, bad)


def seed_draws(seed, u, uf, z, k, w):
    for i in range(u.shape[0]):
        u[i] = tack.random.uniform(seed, i)
        uf[i] = tack.random.uniform_f32(seed, i)
        z[i] = tack.random.normal_f32(seed, i)
        k[i] = tack.random.randint(seed, i, 0, 6)
        w[i], w0, w1, w2 = tack.random.block(seed, i)


@tack.func
def _seed_plus_one(seed, i):
    return tack.random.uniform(seed + 1, i)   # arithmetic on the seed: a Python int's, in int64


def seed_arithmetic(seed, u):
    for i in range(u.shape[0]):
        u[i] = _seed_plus_one(seed, i)


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("seed", [2**63, 2**64 - 1])
def test_a_seed_only_a_uint64_holds_is_a_kernel_argument(seed, jit):
    """A Python int seed from 2**63 to 2**64 - 1 is a seed like any other in
    a kernel, as on the host: the tack.random functions convert it to u64
    (inside the @tack.func they are), so the launch's check that every use of
    such an argument converts it to u64 follows it into the calls.  It was
    refused with OverflowError ('only a uint64 holds it'), though -1, the
    same seed modulo 2**64 as 2**64 - 1, ran.  And -1 ran compiled but not
    in debug mode, which converted the seed with the host's u64() (it refuses
    a negative Python int) where the kernel's cast wraps it."""
    n = 64
    outs = [np.zeros(n), np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.int64),
            np.zeros(n, np.uint32)]
    tack.kernel(seed_draws, jit=jit)(seed, *outs)
    c = np.arange(n)
    np.testing.assert_array_equal(outs[0], uniform(seed, c))
    np.testing.assert_array_equal(outs[1], uniform_f32(seed, c))
    np.testing.assert_array_equal(outs[2], tack.random.normal_f32(seed, c))
    assert outs[3].tolist() == [randint(seed, i, 0, 6) for i in range(n)]
    np.testing.assert_array_equal(outs[4], tack.random.block(seed, c)[0])
    if seed == 2**64 - 1:
        wrapped = [np.zeros_like(o) for o in outs]
        tack.kernel(seed_draws, jit=jit)(-1, *wrapped)    # -1 is 2**64 - 1 modulo 2**64
        for a, b in zip(outs, wrapped):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(OverflowError, match="only a uint64 holds it"):
        tack.kernel(seed_arithmetic, jit=jit)(seed, np.zeros(4))   # seed + 1 is int64 arithmetic


def test_randint_full_and_unit_spans():
    out = np.zeros(1000, np.int64)
    randints(3, 10, 11, out)
    assert (out == 10).all()
    randints(3, -2**31, 2**31, out)   # span 2**32: every word is used as it is
    w = np.array([int(philox4x32(i, 0, 0, 0, 3, 0)[0]) for i in range(1000)], np.int64)
    np.testing.assert_array_equal(out, w - 2**31)


@pytest.mark.parametrize("low, high", [(5, 5), (6, 5), (0, 2**32 + 1), (-2**62, 2**62), (-2**63, 2**63 - 1),
                                       (-2**31, 2**31 + 1), (2**62, 2**63 - 1)])
def test_randint_refuses_an_empty_or_too_wide_range(low, high):
    out = np.zeros(4, np.int64)
    with pytest.raises(AssertionError, match="randint needs low < high"):
        randints(1, low, high, out)
    with pytest.raises(AssertionError, match="randint needs low < high"):
        randint(1, 0, low, high)


@pytest.mark.parametrize("threads", [1, 5])
def test_bit_identical_at_any_thread_count(threads):
    with tack.config.override(num_threads=threads):
        assert tack._core.device_threads("cpu") == threads
        got = draws(300_000, seed=99, first=2**32 - 150_000)
    assert_same(got, draws(300_000, seed=99, first=2**32 - 150_000))


def test_a_monte_carlo_loop_is_reproducible():
    hits = np.zeros(1, np.int64)
    pi_estimate(11, 1_000_000, hits)
    first = hits[0]
    hits[0] = 0
    pi_estimate(11, 1_000_000, hits)
    assert hits[0] == first
    # sd of 4 * hits / n is 4 * sqrt(p (1 - p) / n) = 1.6e-3
    assert abs(4 * first / 1_000_000 - math.pi) < Z * 1.7e-3


# ----------------------------------------------------- other backends
def _nvrtc_available():
    if hasattr(_core, "_nvrtc_version"):
        return _core._nvrtc_version() > 0
    return _nvrtc_ctypes.available()


def _nvrtc(src, arch):
    if hasattr(_core, "_nvrtc_compile"):
        return _core._nvrtc_compile(src, arch)
    return _nvrtc_ctypes.compile_ptx(src, arch)


def test_cuda_source_compiles_and_gives_the_cpu_bits():
    """The CUDA dialect: NVRTC compiles the generated source (when installed),
    and the same source, run by the CPU emulator over several grid shapes,
    draws the CPU's bits."""
    n = 2000
    make = lambda: [2026, 2**32 - 1000, np.zeros(n), np.zeros(n, np.float32), np.zeros(n),  # noqa: E731
                    np.zeros(n, np.float32), np.zeros(n, np.int64), np.zeros(n, np.int64)]
    src = draw_all.generated_source(*make(), target="cuda")
    if _nvrtc_available():
        assert ".entry tk_phase0" in _nvrtc(src, "sm_80")
    if not _cuda_emulate.available():
        pytest.skip("no C++ compiler to emulate CUDA with")
    want = draws(n, first=2**32 - 1000)
    for grid, block in ((3, 32), (1, 1), (5, 7)):
        args = make()
        assert _cuda_emulate.run(src, args, grid, block)[0] == 0
        assert_same(args[2:], want)


OPENCL = [d for d in tack.devices() if d.startswith("opencl")]


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device: install ocl-icd-libopencl1 and pocl-opencl-icd")
def test_opencl_gives_the_cpu_bits():
    n = 100_000
    assert_same(draws(n, first=2**32 - 50_000, device=OPENCL[0]), draws(n, first=2**32 - 50_000))
    c, key, want = _kat_arrays(KAT10)
    out = tack.zeros(want.shape, tack.u32, device=OPENCL[0])
    kat_kernel(tack.array(c, device=OPENCL[0]), tack.array(key, device=OPENCL[0]), out, 10)
    np.testing.assert_array_equal(out.numpy(), want)


# ---------------------------------------------------------- statistics
def chi2_bounds(df, z=Z):
    """The chi-square quantiles at normal deviates -z and +z (Wilson-Hilferty)."""
    h = 2.0 / (9 * df)
    return tuple(df * (1 - h + s * z * math.sqrt(h)) ** 3 for s in (-1, 1))


def check_counts(counts, probs):
    """Counts against expected probabilities: a chi-square inside its bounds."""
    expected = np.asarray(probs) * counts.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    lo, hi = chi2_bounds(len(counts) - 1)
    assert lo < chi2 < hi, (chi2, lo, hi)


def check_mean_var(x, mean, var, fourth):
    """Sample mean and variance within Z standard errors (`fourth`: the
    distribution's fourth central moment)."""
    n = len(x)
    assert abs(x.mean() - mean) < Z * math.sqrt(var / n), x.mean()
    assert abs(x.var() - var) < Z * math.sqrt((fourth - var * var) / n), x.var()


def check_ks(x, cdf):
    x = np.sort(np.asarray(x, np.float64))
    n = len(x)
    f = cdf(x)
    d = max(float((np.arange(1, n + 1) / n - f).max()), float((f - np.arange(n) / n).max()))
    assert math.sqrt(n) * d < KS, d


def normal_cdf(x):
    return 0.5 * np.frompyfunc(math.erfc, 1, 1)(-x / math.sqrt(2)).astype(np.float64)


N = 1_000_000


@pytest.mark.parametrize("kernel, dtype", [(uniforms, np.float64), (uniforms_f32, np.float32)])
def test_uniform_distribution(kernel, dtype):
    x = np.zeros(N, dtype)
    kernel(20260, x)
    x = x.astype(np.float64)
    check_mean_var(x, 0.5, 1 / 12, 1 / 80)
    check_counts(np.bincount((x * 100).astype(np.int64), minlength=100), np.full(100, 0.01))
    check_ks(x[:200_000], lambda v: v)


@pytest.mark.parametrize("kernel, dtype", [(normals, np.float64), (normals_f32, np.float32)])
def test_normal_distribution(kernel, dtype):
    x = np.zeros(N, dtype)
    kernel(31337, x)
    x = x.astype(np.float64)
    check_mean_var(x, 0.0, 1.0, 3.0)
    check_ks(x[:200_000], normal_cdf)
    # the tails: beyond 3 and 4 standard deviations, as often as they should be
    for t, p in ((3.0, 0.0026997960632601866), (4.0, 6.334248366623996e-05)):
        k = int((np.abs(x) > t).sum())
        assert abs(k - N * p) < Z * math.sqrt(N * p * (1 - p)), (t, k)


def test_randint_distribution():
    x = np.zeros(N, np.int64)
    randints(555, -5, 6, x)
    check_counts(np.bincount(x + 5, minlength=11), np.full(11, 1 / 11))
    check_mean_var(x.astype(np.float64), 0.0, 10.0, 178.0)   # uniform on -5..5: var 10, 4th moment 178


def _mod3_counts(x):
    return np.bincount(x % 3, minlength=3)


def test_randint_rejects_the_biased_words():
    """A span of 3 * 2**30: multiplying a word by the span without rejection
    makes results divisible by 3 come half the time, not a third.  Lemire's
    rejection removes that bias, and the check sees the difference."""
    span = 3 * 2**30
    x = np.zeros(300_000, np.int64)
    randints(8, 0, span, x)
    assert x.min() >= 0 and x.max() < span
    check_counts(_mod3_counts(x), [1 / 3] * 3)
    words = philox4x32(np.arange(300_000, dtype=np.uint64), 0, 0, 0, 8, 0)[0]
    biased = ((words.astype(np.uint64) * np.uint64(span)) >> np.uint64(32)).astype(np.int64)
    with pytest.raises(AssertionError):
        check_counts(_mod3_counts(biased), [1 / 3] * 3)


def test_the_checks_reject_a_weak_generator():
    """Two rounds of Philox over consecutive counters are far from random:
    the uniformity checks see it."""
    w = _philox4x32_rounds(np.arange(200_000, dtype=np.uint64), 0, 0, 0, 1, 0, 2)
    x = (w[0] >> np.uint32(8)).astype(np.float64) * 2.0**-24
    with pytest.raises(AssertionError):
        check_counts(np.bincount((x * 100).astype(np.int64), minlength=100), np.full(100, 0.01))


@tack.kernel
def _draw_with_seed(out, seed):
    for i in range(out.shape[0]):
        out[i] = tack.random.uniform(seed, i)


@tack.kernel(checks=False)
def _draw_with_seed_unchecked(out, seed):
    for i in range(out.shape[0]):
        out[i] = tack.random.uniform(seed, i)


def test_a_nan_seed_raises_in_a_kernel_as_on_the_host():
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        tack.random.uniform(float("nan"), 0)
    out = np.zeros(4)
    with pytest.raises(ValueError, match=r"cannot convert float NaN to integer \(function _block called from "
                                         r"kernel _draw_with_seed"):
        _draw_with_seed(out, float("nan"))
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        _draw_with_seed(out, np.float32("nan"))
    # a finite float seed is converted as u64() converts it, in and out of a kernel
    _draw_with_seed(out, 42.0)
    assert out.tolist() == [float(tack.random.uniform(42, i)) for i in range(4)]
    # without checks a kernel converts as it converts any float (NaN is 0), as documented
    _draw_with_seed_unchecked(out, float("nan"))
    assert out.tolist() == [float(tack.random.uniform(0, i)) for i in range(4)]


def _draw_with_seed_py(out, seed):
    for i in range(out.shape[0]):
        out[i] = tack.random.uniform(seed, i)


@pytest.mark.parametrize("jit", [True, False])
def test_seed_conversion_is_the_same_in_debug_mode(jit):
    """Debug mode converts a seed as the compiled kernel does: a NaN raises
    only with checks on (without, it is seed 0), a negative int wraps."""
    out = np.zeros(4)
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        tack.kernel(_draw_with_seed_py, jit=jit)(out, float("nan"))
    tack.kernel(_draw_with_seed_py, jit=jit, checks=False)(out, float("nan"))
    assert out.tolist() == [float(tack.random.uniform(0, i)) for i in range(4)]
    tack.kernel(_draw_with_seed_py, jit=jit)(out, -2)
    assert out.tolist() == [float(tack.random.uniform(2**64 - 2, i)) for i in range(4)]
