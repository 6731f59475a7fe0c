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
NumPy arrays of counters, elementwise) and gives the same numbers -- the
normals to within the last place or two, NumPy's log and cos rounding in
their own way: the way to check a kernel's draws against the host.

How a (seed, counter) pair becomes a block: the key is ``(seed mod 2**32,
seed >> 32)`` of the seed as a u64, the counter words are ``(counter mod
2**32, counter >> 32, 0, 0)`` of the counter as a u64 (``randint`` uses the
third word to draw further blocks when it rejects a value).  So a seed and a
counter are each taken modulo 2**64, as a cast to u64 would (from Python, a
NumPy integer is too, and a Python int outside [0, 2**64) raises
OverflowError, as NumPy's uint64 does).  The functions of one (seed,
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

from ._core import f32, f64, i64, u32, u64
from ._kernels import cos, func, log, sqrt

__all__ = ["philox4x32", "block", "uniform", "uniform_f32", "normal", "normal_f32", "randint"]

# Philox4x32's round multipliers and key increments (the SC'11 paper, Table 2).
_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LOW32 = 0xFFFFFFFF
_TAU = 6.283185307179586          # 2 pi, rounded to f64
_TAU_F32 = 6.2831854820251465     # 2 pi, rounded to f32


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
    s = u64(seed)
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
    u = _unit53(w0, w1)
    v = _unit53(w2, w3)
    return sqrt(-2.0 * log(1.0 - u)) * cos(_TAU * v)


@func
def normal_f32(seed, counter):
    """A f32 standard normal, by the Box-Muller transform of two 24-bit
    uniforms (the block's first and third words), computed in f32."""
    w0, w1, w2, w3 = _block(seed, counter, 0)
    u = _unit24(w0)
    v = _unit24(w2)
    return sqrt(f32(-2.0) * log(f32(1.0) - u)) * cos(f32(_TAU_F32) * v)


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
