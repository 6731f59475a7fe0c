"""Sorting: ``tack.sort`` and ``tack.argsort`` (and, through them, ``tack.unique``), a stable
radix sort written as Tack kernels.

Sorting is an LSD radix sort, eight bits a pass, that moves the elements'
own bits: the array's storage is read as unsigned integers of its width (a
view, no copy: float32 as uint32), and each pass computes every element's
key from its bits as it reads it -- integers by flipping the sign bit,
floats by setting a positive number's sign bit and inverting a negative
number's bits, with -0.0 given +0.0's key and every NaN the top key -- so
that the unsigned order of the keys is NumPy's order of the values.  The
keys are never stored: a float's key costs a few integer operations, far
less than the memory a key array would take, and the values moving
themselves keep -0.0 and NaN payloads intact.  A first pass ORs and ANDs all
keys; a byte that is the same in every key moves nothing and its pass is
skipped.  A pass is stable (each block scatters its own elements in order
to offsets that put block b's after block b-1's), so the sort is, and
equal keys (-0.0 and 0.0, NaNs of any sign) keep their input order, as
NumPy's stable sort keeps them.  `argsort` moves the key bits with the
indices (int32 between the passes, int64 into the result; the first pass
makes them, the last writes no keys), and `sort(keys, values)` moves the
values instead of gathering them afterwards.

A pass here is blocks of serial loops (`_radix_pass`), for a device whose work runs on the host's
cores (the CPU, PoCL); a GPU runs the pass of tack._algorithms_sort_blocks instead, tiles sorted
by digit in a work-group's shared memory, with the same keys, digits, buffers and results
(`_passes` picks by what the runtime reports; `_TILES` forces either, for the tests).

The sort is apart from tack._algorithms, which re-exports ``sort`` and ``argsort``, because it is
the primitive with machinery of its own -- the key of an element's bits, the constants of each
dtype, the span of the keys' digits, the pass kernels and the buffers they alternate between --
and shares with the others only the argument checks and the blocking of
tack._algorithms_common.
"""

import numpy as np

from . import _core
from ._algorithms_common import not_differentiated, _blocks, _host, _is_records, _launch, _npdtype, _one_d, _one_d_records, _sortable
from ._array import empty as _empty, zeros as _zeros
from ._core import i64
from ._intrinsics import independent
from ._kernels import kernel, func


@func
def _key(u, mode, top, ones, inf, mag, sh):
    # the radix key of an element's bits u (an unsigned integer of the dtype's width, sh its
    # width - 1), whose unsigned order is NumPy's order of the values: mode 0 unsigned (the
    # bits), 1 signed (the sign bit flipped), 2 float: a positive number its sign bit set, a
    # negative one its bits inverted (larger magnitudes first), -0.0 +0.0's key and a NaN of
    # either sign the top key.  Selects, not branches: the signs of sorted data are random.
    k = u
    if mode == 1:
        k = u ^ top
    elif mode == 2:
        m = u & mag
        k = u ^ (top | ((u >> sh) * ones))
        k = top if m == 0 else k
        k = ones if m > inf else k
    return k


@func
def _key_consts(c):
    # the constants _key takes after the bits, from the array _bits_of made
    return c[0], c[1], c[2], c[3], c[4]


@kernel(checks=False)  # indices made here, in bounds by construction
def _key_span(x, c, part, mode, bs):
    # part[b] = the OR and the AND of block b's keys; part[0] then the whole array's
    n = x.shape[0]
    nb = part.shape[0]
    for b in independent(range(nb)):
        top, ones, inf, mag, sh = _key_consts(c)
        lo = b * bs
        hi = min(lo + bs, n)
        o = _key(x[lo], mode, top, ones, inf, mag, sh)
        a = o
        for i in range(lo + 1, hi):
            k = _key(x[i], mode, top, ones, inf, mag, sh)
            o = o | k
            a = a & k
        part[b, 0] = o
        part[b, 1] = a
    for t in range(1):
        o = part[0, 0]
        a = part[0, 1]
        for b in range(1, nb):
            o = o | part[b, 0]
            a = a & part[b, 1]
        part[0, 0] = o
        part[0, 1] = a


@func
def _offsets(counts, totals):
    # counts[b, d] (block b's keys with digit d) becomes where block b's first such key goes:
    # after every smaller digit's keys, and after the earlier blocks' keys with digit d
    nb = counts.shape[0]
    for d in range(256):
        acc = i64(0)
        for b in range(nb):
            c = counts[b, d]
            counts[b, d] = acc
            acc += c
        totals[d] = acc
    acc = i64(0)
    for d in range(256):
        c = totals[d]
        totals[d] = acc
        acc += c
    return acc


def _radix_pass_kernel(values):
    """One stable pass of 8-bit digits: each block counts its keys' digits,
    _offsets turns the counts into where each block's keys go, and each block
    scatters its elements there in order.  The keys move as their bits (the
    keys are computed from them as they are read, so -0.0 and NaN payloads
    move intact).  `values` (a Python bool, a constant of the kernel, so the
    branch it picks is compiled away) says whether a value moves beside each
    key: vin's, or with iota != 0 the element's index (the first pass of an
    argsort); keys_out == 0 then leaves kout unwritten (the last pass of an
    argsort).  Without values, vin and vout and the two flags go unread.

    A block counts into, and scatters from, 256 counters of its own (a
    local array, on the thread's stack on the CPU, private memory on a GPU),
    copied out to `counts` for the offsets and back in: the counters' address
    is fixed and no index into them is wrapped or checked against a runtime
    extent.  16M elements, two threads, paired with the (blocks, 256) array
    read and written in place (2026-12-06, load 1.7): sort float32 102 ->
    82 ms, int32 104 -> 83, sort by key 189 -> 166; argsort (175) and
    float64 (291-294) the same."""

    @kernel(checks=False)  # indices made here, in bounds by construction
    def _radix_pass(kin, vin, kout, vout, c, counts, totals, mode, shift, bs, iota, keys_out):
        n = kin.shape[0]
        nb = counts.shape[0]
        for b in independent(range(nb)):
            top, ones, inf, mag, sh = _key_consts(c)
            h = np.zeros(256, np.int64)  # the block's own counters (see below)
            lo = b * bs
            hi = min(lo + bs, n)
            for i in range(lo, hi):
                d = i64((_key(kin[i], mode, top, ones, inf, mag, sh) >> shift) & 255)
                h[d] += 1
            for d in range(256):
                counts[b, d] = h[d]
        for t in range(1):
            _offsets(counts, totals)
        for b in independent(range(nb)):
            top, ones, inf, mag, sh = _key_consts(c)
            o = np.empty(256, np.int64)
            for d in range(256):
                o[d] = counts[b, d] + totals[d]
            lo = b * bs
            hi = min(lo + bs, n)
            for i in range(lo, hi):
                u = kin[i]
                d = i64((_key(u, mode, top, ones, inf, mag, sh) >> shift) & 255)
                p = o[d]
                o[d] = p + 1
                if values:
                    if keys_out != 0:
                        kout[p] = u
                    if iota != 0:
                        vout[p] = i
                    else:
                        vout[p] = vin[i]
                else:
                    kout[p] = u
    return _radix_pass


_radix_pass = _radix_pass_kernel(False)  # sort: the elements' bits, nothing beside them
_radix_pass_kv = _radix_pass_kernel(True)  # argsort and sort by key


@kernel(checks=False)  # indices made here, in bounds by construction
def _iota(out):
    for i in range(out.shape[0]):
        out[i] = i


class _BlockedPasses:
    """The passes of one sort on the CPU: `_radix_pass`'s blocks (nb of bs
    elements, from _blocks) and the counters they share."""

    def __init__(self, nb, bs, device):
        self.counts = _empty((nb, 256), np.int64, device=device)
        self.totals = _empty(256, np.int64, device=device)
        self.bs = bs

    def run(self, values, kin, vin, kout, vout, c, mode, shift, iota, keys_out):
        # a pass reads the keys twice and scatters them: 4 a key of one-pass work (_launch)
        _launch(_radix_pass_kv if values else _radix_pass, 4 * kin.shape[0], kin.device, kin, vin, kout, vout, c,
                self.counts, self.totals, mode, shift, self.bs, iota, keys_out)


# which pass a sort runs: None, the tiles of tack._algorithms_sort_blocks on a GPU and the blocked
# serial pass above on a device whose work runs on the host's cores (the CPU, and an OpenCL
# device of type CPU such as PoCL); True or False, the tiles' pass or the blocked one on every
# device (the tests' switch: the tiles' pass runs on the CPU, on PoCL and in debug mode too)
_TILES = None
_ON_CORES = {}  # device name -> whether its work runs on the host's cores (the runtime says)


def _tiles_on(device):
    """Whether a sort on device runs the tiles' pass: on a GPU, not on the host's cores (the CPU,
    PoCL), unless _TILES says."""
    if _TILES is not None:
        return _TILES
    on_cores = _ON_CORES.get(device)
    if on_cores is None:
        on_cores = _ON_CORES[device] = _core._device_info(device)[4]
    return not on_cores


def _passes(n, nb, bs, device):
    """The pass a sort of n elements on device runs, with the arrays its passes share."""
    if _tiles_on(device):
        from ._algorithms_sort_blocks import _Passes
        return _Passes(n, device)
    return _BlockedPasses(nb, bs, device)


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_CONSTS = {}  # (dtype name, device) -> the constants _key reads


def _bits_of(a):
    """a's storage read as unsigned integers of its width (a view, no copy), the
    key mode (0 unsigned, 1 signed, 2 float) and the constants _key takes."""
    size = a.dtype.itemsize
    kind = a.dtype.kind
    mode = 2 if kind == "f" else 1 if kind == "i" else 0
    key = (a.dtype.name, a.device)
    c = _CONSTS.get(key)
    if c is None:
        bits = 8 * size
        top, ones = 1 << (bits - 1), (1 << bits) - 1
        if mode == 2:
            # the exponent's width: f16 5 bits, bf16 8, f32 8, f64 11; bf16 is f32's top half
            ebits = {2: 8 if a.dtype == _core.bf16 else 5, 4: 8, 8: 11}[size]
            inf = ((1 << ebits) - 1) << (bits - 1 - ebits)
        else:
            inf = 0
        c = _CONSTS[key] = _host([top, ones, inf, top - 1, bits - 1], _BITS[size], a.device)
    n = a.shape[0]
    u = a._field_view(_BITS[size], 0, (n,), (1,))
    return u, mode, c


def _digit_shifts(u, mode, c):
    """The shifts of the 8-bit digits that are not the same in every key: a digit
    every key shares moves nothing, so its pass is skipped."""
    n = u.shape[0]
    nb, bs = _blocks(n, u.device)
    if _tiles_on(u.device):
        from ._algorithms_sort_blocks import _key_span as _key_span_tiles
        ors, ands = _key_span_tiles(u, c, mode)
    else:
        part = _empty((nb, 2), _npdtype(u.dtype), device=u.device)
        _launch(_key_span, n, u.device, u, c, part, mode, bs)
        ors, ands = (int(v) for v in part[0].numpy())
    varying = ors ^ ands
    return [s for s in range(0, 8 * u.dtype.itemsize, 8) if (varying >> s) & 255], nb, bs


def _radix_sort_kv(a, values, keys_wanted):
    """a's keys sorted with values riding along (values None: the indices, an
    argsort).  Returns (the sorted keys, or None when not keys_wanted, and the
    values in the keys' order)."""
    n = a.shape[0]
    dev = a.device
    u, mode, c = _bits_of(a)
    shifts, nb, bs = _digit_shifts(u, mode, c)
    if not shifts:
        if values is None:
            out = _empty(n, np.int64, device=dev)
            _iota(out)
        else:
            out = values.copy()
        return (a.copy() if keys_wanted else None), out
    npass = len(shifts)
    passes = _passes(n, nb, bs, dev)
    # the keys of an argsort's last pass are not written
    kbufs = [_empty(n, _npdtype(u.dtype), device=dev) for _ in range(min(2, npass if keys_wanted else npass - 1))]
    if values is None:
        # an argsort's indices ride as int32 between the passes when they fit (half the traffic),
        # the last pass writing the int64 result
        vdt = np.int32 if n < 2 ** 31 else np.int64
        vbufs = [_empty(n, vdt, device=dev) for _ in range(min(2, npass - 1))]
        final = _empty(n, np.int64, device=dev)
    else:
        vbufs = [_empty(n, values.dtype, device=dev) for _ in range(min(2, npass))]
        final = None
    # an argsort's first pass reads no values and its last writes no keys: one-element stand-ins
    kin, vin = u, (values if values is not None else _empty(1, vbufs[0].dtype if vbufs else np.int64, device=dev))
    for j, shift in enumerate(shifts):
        last = j == npass - 1
        kout = kbufs[j % len(kbufs)] if kbufs else _empty(1, _npdtype(u.dtype), device=dev)
        vout = final if (last and final is not None) else vbufs[j % 2]
        passes.run(True, kin, vin, kout, vout, c, mode, shift,
                   1 if (j == 0 and values is None) else 0, 0 if (last and not keys_wanted) else 1)
        kin, vin = kout, vout
    keys = kin._field_view(a.dtype, 0, (n,), (1,)) if keys_wanted else None
    return keys, vin


@kernel(checks=False)  # perm is a permutation of dst's indices, made here
def _gather(src, perm, dst):
    # dst[i] = src[perm[i]]: numbers, vectors, or whole records of a struct array
    for i in range(dst.shape[0]):
        dst[i] = src[perm[i]]


def _argsort(a):
    if a.shape[0] <= 1:
        out = _empty(a.shape[0], np.int64, device=a.device)
        if a.shape[0]:
            _iota(out)
        return out
    return _radix_sort_kv(a, None, False)[1]



@not_differentiated("tack.argsort")
def argsort(a):
    """The indices that sort the 1-D array ``a`` stably: NumPy's
    ``np.argsort(a, kind="stable")`` (int64), with NaNs last in their input
    order and -0.0 and 0.0 equal.  A radix sort of 8-bit digits, one pass per
    byte of the dtype that is not the same in every element; memory: two
    copies of ``a`` and 8 bytes per element (int32 indices, twice) besides
    the result."""
    a = _sortable(a, "a", "argsort")
    return _argsort(a)


@not_differentiated("tack.sort")
def sort(a, values=None):
    """``a`` sorted (a new array): NumPy's ``np.sort(a, kind="stable")``,
    NaNs last, -0.0 kept where it was among the zeros.  With ``values`` (a
    1-D array of the same length, any dtype, or a struct array), returns ``(sorted a, values
    in the same order)``: a sort by key that keeps equal keys in their input
    order.  A radix sort of 8-bit digits, one pass per byte of the dtype that
    is not the same in every element; memory: a copy of ``a`` besides the
    result (with ``values``: a copy of the keys and of the values besides
    theirs)."""
    a = _sortable(a, "a", "sort")
    if values is not None:
        records = _is_records(values)
        values = _one_d_records(values, "values", "sort") if records else _one_d(values, "values", "sort", a.device)
        if values.shape[0] != a.shape[0]:
            raise ValueError(f"tack.sort: values has {values.shape[0]} elements and the keys {a.shape[0]}")
        if values.device != a.device:
            raise ValueError(f"tack.sort: values is on {values.device} and the keys on {a.device}")
    n = a.shape[0]
    if values is not None and records:
        # records move whole: the keys' stable order, then one gather of the keys and one of the records
        perm = _argsort(a)
        keys, out = _empty(n, a.dtype, device=a.device), _zeros(n, values.dtype, device=a.device)
        if n:
            _gather(a, perm, keys)
            _gather(values, perm, out)
        return keys, out
    if values is not None:
        if n <= 1:
            return a.copy(), values.copy()
        return _radix_sort_kv(a, values, True)
    if n <= 1:
        return a.copy()
    # the elements' bits move through the passes themselves: no keys, no index array, no gather
    u, mode, c = _bits_of(a)
    shifts, nb, bs = _digit_shifts(u, mode, c)
    if not shifts:
        return a.copy()
    passes = _passes(n, nb, bs, a.device)
    bufs = [_empty(n, _npdtype(u.dtype), device=a.device) for _ in range(min(2, len(shifts)))]
    none = _empty(1, np.int64, device=a.device)  # the values' stand-in: _radix_pass reads none
    src = u
    for j, shift in enumerate(shifts):
        dst = bufs[j % 2]
        passes.run(False, src, none, dst, none, c, mode, shift, 0, 1)
        src = dst
    return src._field_view(a.dtype, 0, (n,), (1,))
