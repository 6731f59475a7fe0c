"""Counter-based random numbers for kernels: Philox4x32-10.

A kernel cannot share one generator's state between thousands of iterations
running at once, and it should not want to: the numbers would then depend on
which thread ran which iteration.  A *counter-based* generator has no state.
Each number is a pure function of a key (the seed) and a counter (usually the
loop index), so iteration ``i`` draws ``uniform(seed, i)`` and gets the same
value whatever thread runs it, on every backend, at any thread count.

The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
random numbers: as easy as 1, 2, 3", SC'11): a 128-bit counter (four 32-bit
words) and a 64-bit key (two words) go through ten rounds of two 32x32->64-bit
multiplications, whose high halves are xored with the other words and the key,
the key being bumped by two Weyl constants between rounds.  It passes the
BigCrush battery, and the tests check it against the published known-answer
vectors of the Random123 library.

Every function here is a ``@tack.func`` written in the kernel language with
u32/u64 integer arithmetic that wraps the same way in C, CUDA and OpenCL, so
one definition serves every backend.  Called from ordinary Python the same
body runs on Python ints and NumPy scalars (and, except ``randint``, on
NumPy arrays of counters, elementwise) and gives the same bits, the normals
included (their log and cos are the generator's own, below): the way to
check a kernel's draws against the host.

How a (seed, counter) pair becomes a block: the key is ``(seed mod 2**32,
seed >> 32)`` of the seed as a u64, the counter words are ``(counter mod
2**32, counter >> 32, 0, 0)`` of the counter as a u64 (``randint`` uses the
third word to draw further blocks when it rejects a value).  So a seed and a
counter are each taken modulo 2**64, as a cast to u64 would (from Python, a
NumPy integer is too, and a Python int outside [0, 2**64) raises
OverflowError, as NumPy's uint64 does).  A NaN seed raises ValueError, in a
kernel (compiled with checks) as on the host: the seed goes through
``tack.seed_u64``, not a kernel's plain float-to-integer conversion, which
would make it 0.  The functions of one (seed,
counter) read the same block: use a different counter (for example ``2 * i``
and ``2 * i + 1``) or a different seed for values that must be independent.

From Python, the first known answer of Random123 and a few draws:

>>> [hex(w) for w in tack.random.philox4x32(0, 0, 0, 0, 0, 0)]
['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
>>> float(tack.random.uniform(42, 0)), int(tack.random.randint(42, 0, 1, 7))
(0.6129598811894158, 4)
>>> tack.random.uniform(42, np.arange(3))
array([0.61295988, 0.98771865, 0.82586683])
"""

from __future__ import annotations

from ._core import f32, f64, i32, i64, u32, u64
from ._intrinsics import seed_u64, sqrt
from ._kernels import func

__all__ = ["philox4x32", "block", "uniform", "uniform_f32", "normal", "normal_f32", "randint"]

# Philox4x32's round multipliers and key increments (the SC'11 paper, Table 2).
_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LOW32 = 0xFFFFFFFF


@func
def _round(x0, x1, x2, x3, k0, k1):
    """One Philox4x32 round under the round key k0, k1 (u32 words)."""
    # the two 32x32 -> 64-bit products, exact in u64: their high and low words
    p0 = u64(x0) * _M0
    p1 = u64(x2) * _M1
    return (u32(p1 >> 32) ^ x1 ^ k0, u32(p1 & _LOW32),
            u32(p0 >> 32) ^ x3 ^ k1, u32(p0 & _LOW32))


@func
def philox4x32(c0, c1, c2, c3, k0, k1):
    """The Philox4x32-10 block of the counter words ``c0..c3`` under the key
    words ``k0, k1``: four u32 words.  Each argument is taken modulo 2**32.

    The rounds are written out: the C compilers then keep the ten rounds in
    registers (a loop over them ran 2.7 times slower on the CPU).  Round r's
    key is the key plus r times the Weyl constants, modulo 2**32.
    """
    x0 = u32(c0)
    x1 = u32(c1)
    x2 = u32(c2)
    x3 = u32(c3)
    a0 = u64(u32(k0))
    a1 = u64(u32(k1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0), u32(a1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + _W0), u32(a1 + _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 2 * _W0), u32(a1 + 2 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 3 * _W0), u32(a1 + 3 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 4 * _W0), u32(a1 + 4 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 5 * _W0), u32(a1 + 5 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 6 * _W0), u32(a1 + 6 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 7 * _W0), u32(a1 + 7 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 8 * _W0), u32(a1 + 8 * _W1))
    x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + 9 * _W0), u32(a1 + 9 * _W1))
    return x0, x1, x2, x3


@func
def _philox4x32_rounds(c0, c1, c2, c3, k0, k1, rounds):
    """Philox4x32 with any number of rounds, the same round and key schedule:
    for the tests (the published 7-round answers; a round missing fails the
    10-round ones), not for drawing numbers."""
    x0 = u32(c0)
    x1 = u32(c1)
    x2 = u32(c2)
    x3 = u32(c3)
    a0 = u64(u32(k0))
    a1 = u64(u32(k1))
    for r in range(rounds):
        x0, x1, x2, x3 = _round(x0, x1, x2, x3, u32(a0 + u64(r) * _W0), u32(a1 + u64(r) * _W1))
    return x0, x1, x2, x3


@func
def _block(seed, counter, extra):
    """The Philox4x32-10 block of (seed, counter), third counter word `extra`."""
    s = seed_u64(seed)  # a NaN seed raises ValueError in a kernel too, not seed 0's draws
    c = u64(counter)
    w0, w1, w2, w3 = philox4x32(c & _LOW32, c >> 32, extra, 0, s & _LOW32, s >> 32)
    return w0, w1, w2, w3


@func
def block(seed, counter):
    """The four u32 words of the block of (seed, counter): the words that
    ``uniform``, ``normal`` and ``randint`` of the same arguments read.
    Four 32-bit values for the price of one draw."""
    w0, w1, w2, w3 = _block(seed, counter, 0)
    return w0, w1, w2, w3


@func
def _unit53(hi, lo):
    """A f64 in [0, 1) from the 53 leading bits of the words hi, lo: exact."""
    return f64((u64(hi) << 21) | u64(lo >> 11)) * 1.1102230246251565e-16   # 2**-53


@func
def _unit24(w):
    """A f32 in [0, 1) from the 24 leading bits of the word w: exact."""
    return f32(w >> 8) * f32(5.960464477539063e-08)                        # 2**-24


# ------------------------------------------------ log and cos of the normals
#
# The Box-Muller transform needs log(1 - u) and cos(2 pi v).  Each backend's
# math library (and NumPy on the host) rounds those in its own way, so the
# generator carries its own, written with +, -, *, / and integer operations
# only: IEEE arithmetic rounds those identically in C, CUDA, OpenCL and NumPy
# (the backends compile without contraction into fused multiply-adds, and
# with correctly rounded division and sqrt), so a normal has the same bits
# everywhere.  Both take the uniform's integer numerator, which makes the
# range reduction exact integer work:
#
# - log(k * 2**-p) for an integer k in [1, 2**p]: k's bit length by a
#   branch-free binary search, k shifted to [2**p, 2**(p+1)) and scaled to a
#   float x in [sqrt(1/2), sqrt(2)) by exact multiplications by powers of
#   two, log(x) = f - f*f/2 + s*(f*f/2 + R(s*s)) with f = x - 1 (exact) and
#   s = f / (2 + f), R the series of 2*atanh(s) - 2*s over s (its Taylor
#   coefficients 2/3, 2/5, ...), and the power of two's n*log(2) added in
#   two parts, the first exact;
# - cos(2 pi m 2**-p) for an integer m in [0, 2**p): the nearest quarter
#   turn q = round(4 m 2**-p) and the rest r = 4 m 2**-p - q in [-1/2, 1/2]
#   come from integer arithmetic, exactly; cos(pi/2 r) and sin(pi/2 r) are
#   Taylor polynomials in r (|pi/2 r| <= pi/4), and the quarter turn picks
#   one and its sign by multiplications by 0, 1 and -1, exact.
#
# No branches: called from Python, the same bodies run on NumPy arrays of
# counters, and in a kernel the C compiler runs a loop's draws in SIMD lanes
# (the shift amount is masked and k1 > sqrt(2) computed as a carry, where a
# test and a comparison's bool kept GCC from vectorizing; the same values).
# Debug mode draws a whole block of counters at once through them (_debug.py).  Accuracy (tests/python/test_random.py measures it against
# mpmath): 0.76 ulp for log and 1.6 ulps for cos, f64 and f32 alike.

_LN2_HI = 0.6931471805598903       # log(2) to 42 bits: n * _LN2_HI is exact
_LN2_LO = 5.497923018708371e-14    # log(2) - _LN2_HI
_LN2_HI_F32 = 0.693145751953125    # log(2) to 16 bits
_LN2_LO_F32 = 1.428606765330187e-06
_SQRT2_53 = 12738103345051545      # floor(sqrt(2) * 2**53)
_SQRT2_24 = 23726566               # floor(sqrt(2) * 2**24)


@func
def _log_unit53(k):
    """log(k * 2**-53) for an integer k in [1, 2**53], as a f64."""
    t = u64(k)
    e = u64(0)                      # the bit length of k, minus one
    b = u64(t >= 4294967296) * 32
    t = t >> b
    e += b
    b = u64(t >= 65536) * 16
    t = t >> b
    e += b
    b = u64(t >= 256) * 8
    t = t >> b
    e += b
    b = u64(t >= 16) * 4
    t = t >> b
    e += b
    b = u64(t >= 4) * 2
    t = t >> b
    e += b
    e += u64(t >= 2)
    k1 = u64(k) << ((u64(53) - e) & 63)    # in [2**53, 2**54), exact as a f64 (the mask: no branch)
    j = (k1 + (9223372036854775807 - _SQRT2_53)) >> 63   # k1 > _SQRT2_53, without a bool (no wrap: k1 < 2**54)
    x = f64(k1) * 1.1102230246251565e-16 * (1.0 - 0.5 * f64(j))   # in [sqrt(1/2), sqrt(2))
    n = f64(i64(e + j) - 53)
    f = x - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = z * (0.6666666666666666 + z * (0.4 + z * (0.2857142857142857 + z * (
        0.2222222222222222 + z * (0.18181818181818182 + z * (0.15384615384615385 + z * (
            0.13333333333333333 + z * (0.11764705882352941 + z * (0.10526315789473684 + z * (
                0.09523809523809523 + z * 0.08695652173913043))))))))))
    hfsq = 0.5 * f * f
    return n * _LN2_HI - ((hfsq - (s * (hfsq + r) + n * _LN2_LO)) - f)


@func
def _log_unit24(k):
    """log(k * 2**-24) for an integer k in [1, 2**24], as a f32."""
    t = u32(k)
    e = u32(0)
    b = u32(t >= 65536) * 16
    t = t >> b
    e += b
    b = u32(t >= 256) * 8
    t = t >> b
    e += b
    b = u32(t >= 16) * 4
    t = t >> b
    e += b
    b = u32(t >= 4) * 2
    t = t >> b
    e += b
    e += u32(t >= 2)
    k1 = u32(k) << ((u32(24) - e) & 31)    # in [2**24, 2**25), exact as a f32
    j = (k1 + (2147483647 - _SQRT2_24)) >> 31           # k1 > _SQRT2_24, without a bool (k1 < 2**25)
    x = f32(k1) * f32(5.960464477539063e-08) * (f32(1.0) - f32(0.5) * f32(j))
    n = f32(i32(e + j) - 24)
    f = x - f32(1.0)
    s = f / (f32(2.0) + f)
    z = s * s
    r = z * (f32(0.6666666666666666) + z * (f32(0.4) + z * (f32(0.2857142857142857) + z * (
        f32(0.2222222222222222) + z * f32(0.18181818181818182)))))
    hfsq = f32(0.5) * f * f
    return n * f32(_LN2_HI_F32) - ((hfsq - (s * (hfsq + r) + n * f32(_LN2_LO_F32))) - f)


@func
def _cos_unit53(m):
    """cos(2 pi m 2**-53) for an integer m in [0, 2**53), as a f64."""
    mm = u64(m)
    q = (mm + 1125899906842624) >> 51                           # round(m / 2**51)
    r = f64(i64(mm) - i64(q << 51)) * 4.440892098500626e-16    # m / 2**51 - q, exact
    z = r * r
    c = 1.0 + z * (-1.2337005501361697 + z * (0.25366950790104803 + z * (
        -0.02086348076335296 + z * (0.0009192602748394266 + z * (-2.5202042373060607e-05 + z * (
            4.710874778818172e-07 + z * (-6.386603083791852e-09 + z * 6.565963114979473e-11)))))))
    s = r * (1.5707963267948966 + z * (-0.6459640975062463 + z * (0.07969262624616705 + z * (
        -0.004681754135318688 + z * (0.00016044118478735983 + z * (-3.598843235212085e-06 + z * (
            5.692172921967927e-08 + z * (-6.688035109811468e-10 + z * 6.0669357311061955e-12))))))))
    odd = f64(q & 1)                 # cos(pi/2 (q + r)): +c, -s, -c, +s for q mod 4 = 0..3
    neg = f64(((q + 1) >> 1) & 1)
    return (c * (1.0 - odd) + s * odd) * (1.0 - 2.0 * neg)


@func
def _cos_unit24(m):
    """cos(2 pi m 2**-24) for an integer m in [0, 2**24), as a f32."""
    mm = u32(m)
    q = (mm + 2097152) >> 22
    r = f32(i32(mm) - i32(q << 22)) * f32(2.384185791015625e-07)
    z = r * r
    c = f32(1.0) + z * (f32(-1.2337005501361697) + z * (f32(0.25366950790104803) + z * (
        f32(-0.02086348076335296) + z * (f32(0.0009192602748394266) + z * f32(-2.5202042373060607e-05)))))
    s = r * (f32(1.5707963267948966) + z * (f32(-0.6459640975062463) + z * (f32(0.07969262624616705) + z * (
        f32(-0.004681754135318688) + z * (f32(0.00016044118478735983) + z * f32(-3.598843235212085e-06))))))
    odd = f32(q & 1)
    neg = f32(((q + 1) >> 1) & 1)
    return (c * (f32(1.0) - odd) + s * odd) * (f32(1.0) - f32(2.0) * neg)


@func
def uniform(seed, counter):
    """A f64 uniform in [0, 1): a multiple of 2**-53, the 53 leading bits of
    the block's first two words."""
    w0, w1, w2, w3 = _block(seed, counter, 0)
    return _unit53(w0, w1)


@func
def uniform_f32(seed, counter):
    """A f32 uniform in [0, 1): a multiple of 2**-24, the 24 leading bits of
    the block's first word (``uniform`` of the same arguments, truncated)."""
    w0, w1, w2, w3 = _block(seed, counter, 0)
    return _unit24(w0)


@func
def normal(seed, counter):
    """A f64 standard normal (mean 0, variance 1), by the Box-Muller transform
    of two 53-bit uniforms (the block's four words)."""
    w0, w1, w2, w3 = _block(seed, counter, 0)
    mu = (u64(w0) << 21) | u64(w1 >> 11)      # u = mu * 2**-53, as _unit53 makes it
    mv = (u64(w2) << 21) | u64(w3 >> 11)
    return sqrt(-2.0 * _log_unit53(9007199254740992 - mu)) * _cos_unit53(mv)


@func
def normal_f32(seed, counter):
    """A f32 standard normal, by the Box-Muller transform of two 24-bit
    uniforms (the block's first and third words), computed in f32."""
    w0, w1, w2, w3 = _block(seed, counter, 0)
    return sqrt(f32(-2.0) * _log_unit24(16777216 - (w0 >> 8))) * _cos_unit24(w2 >> 8)


@func
def randint(seed, counter, low, high):
    """An i64 uniform in [low, high), without bias, for ``high - low`` up to
    2**32 (anything else fails the assert, which ``checks=False`` removes).

    Lemire's method: a 32-bit word w maps to ``(w * span) >> 32``; the low
    half of the product tells the ``2**32 mod span`` words that would make
    some results more likely than others, and those are rejected in favour
    of the block's next word, then of the blocks with third counter word 1,
    2, ...  A rejection happens with probability below ``span / 2**32``.
    """
    lo = i64(low)
    hi = i64(high)
    ok = lo < hi
    if ok:  # high - low <= 2**32, without overflowing i64 on the way
        if lo < 0 and hi >= 0:
            ok = hi - 4294967296 <= lo
        else:
            ok = hi - lo <= 4294967296
    assert ok, "randint needs low < high and high - low <= 2**32"
    s = u64(hi - lo)
    w0, w1, w2, w3 = _block(seed, counter, 0)
    k = 0
    result = lo
    searching = True
    while searching:
        w = w0
        if k % 4 == 1:
            w = w1
        elif k % 4 == 2:
            w = w2
        elif k % 4 == 3:
            w = w3
        m = u64(w) * s
        low32 = m & _LOW32
        # the modulo only when the word could be one of the few rejected ones
        if low32 >= s or low32 >= 4294967296 % s:
            result = lo + i64(m >> 32)
            searching = False
        else:
            k += 1
            if k % 4 == 0:
                w0, w1, w2, w3 = _block(seed, counter, k // 4)
    return result
