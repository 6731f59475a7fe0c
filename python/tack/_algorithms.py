"""Parallel primitives on Tack arrays: scan, sort, argsort, segmented_reduce,
compact, unique, searchsorted, histogram and reduce with a user operator.

Every primitive is written as ordinary Tack kernels, so the CPU (all cores)
and every GPU backend run the same code, compiled by the same compiler into
each dialect; nothing here is a per-backend fast path.  The shape common to
them is the blocked two-pass pattern: the input is cut into `nb` contiguous
blocks, a parallel loop gives each block its partial result (a sum, a count,
a histogram of radix digits), a short serial loop (or one parallel over the
256 digits) combines the partials into offsets, and a last parallel loop
redoes each block with its offset.  One kernel call holds all the phases,
since each top-level loop of a kernel finishes before the next starts.  The
number of blocks is a few per CPU thread (each block then streams through
memory on one core) and one per 4,096 elements on a GPU, where the serial
loop over a block is one work-item's.

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

The kernels are compiled on first use for each dtype, as any kernel is, and
kept in the disk cache.  The operator kernels (`reduce`, `scan` and
`segmented_reduce` with a `@tack.func`) are made once per operator by a
factory whose kernel names the operator from its enclosing scope.
"""

import numpy as np

from . import _core
from ._array import empty as _empty, asarray as _asarray
from ._core import i64
from ._intrinsics import independent
from ._kernels import kernel, func

__all__ = ["scan", "sort", "argsort", "segmented_reduce", "compact", "unique", "searchsorted", "histogram",
           "reduce"]

# ------------------------------------------------------------------ operators


@func
def _op_sum(a, b):
    return a + b


@func
def _op_min(a, b):
    # np.minimum: a NaN on either side wins, and of two equal values the second
    if a != a:
        return a
    if a < b:
        return a
    return b


@func
def _op_max(a, b):
    if a != a:
        return a
    if a > b:
        return a
    return b


_NAMED = {"sum": _op_sum, "min": _op_min, "max": _op_max}

# ------------------------------------------------------------------ helpers


def _one_d(x, name, what):
    """x as a 1-D Tack array in C order: a strided view is gathered (a copy on
    its device), anything else array-like goes through tack.asarray."""
    if not isinstance(x, _core.Array):
        if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
            x = _core.from_dlpack(x)
        else:
            x = _asarray(np.asarray(x))
    if x.ndim != 1:
        raise ValueError(f"tack.{what}: {name} must be a 1-D array, got shape {tuple(x.shape)}"
                         " (ravel it, or pass one row at a time)")
    if getattr(x, "strided", False):
        x = x.copy()
    return x


def _numeric(x, name, what, complex_ok=False):
    kind = x.dtype.kind
    if x.dtype.shape != () or kind not in ("b", "i", "u", "f") + (("c",) if complex_ok else ()):
        raise TypeError(f"tack.{what}: {name} has dtype {x.dtype.name}; it takes bool, integer or float"
                        + (" or complex" if complex_ok else "") + " elements")


def _npdtype(dt):
    return np.dtype(dt.numpy)


def _blocks(n, device, gpu_block=4096):
    """(number of blocks, elements per block) for n elements on device."""
    if n == 0:
        return 1, 1
    if device.startswith("cpu"):
        nb = max(1, 4 * _core.device_threads(device))
        nb = min(nb, max(1, n // 1024))
    else:
        nb = max(1, -(-n // gpu_block))
    bs = -(-n // nb)
    return -(-n // bs), bs


def _host(values, dtype, device):
    """A small NumPy array of dtype moved to device."""
    from ._array import array as _array
    return _array(np.asarray(values, dtype), device=device)


def _op_of(op, what):
    if isinstance(op, str):
        if op not in _NAMED:
            raise ValueError(f"tack.{what}: op must be 'sum', 'min', 'max' or a @tack.func of two values, got {op!r}")
        return _NAMED[op], op
    if getattr(op, "is_func", False):
        return op, None
    raise TypeError(f"tack.{what}: op must be 'sum', 'min', 'max' or a @tack.func of two values, "
                    f"got {type(op).__name__}")


def _sum_dtype(npdt):
    return np.cumsum(np.zeros(1, npdt)).dtype


def _identity(name, npdt):
    if name == "sum":
        return np.zeros((), npdt)[()]
    if npdt.kind == "b":
        return np.bool_(name == "min")
    if npdt.kind == "f":
        return npdt.type(np.inf if name == "min" else -np.inf)
    info = np.iinfo(npdt)
    return npdt.type(info.max if name == "min" else info.min)


# ------------------------------------------------------------------ scan and reduce

_REDUCES = {}
_SEGMENTS = {}


@func
def _combine(which, a, b):
    # the named operators in one func, so that one compiled scan serves all three
    if which == 0:
        return a + b
    if which == 1:
        return _op_min(a, b)
    return _op_max(a, b)


@kernel
def _scan(x, out, partial, first, bs, exclusive, which):
    # exclusive: 0 inclusive, 1 exclusive, 2 no output: only the total, into first[1]
    n = x.shape[0]
    nb = partial.shape[0]
    for b in independent(range(nb)):
        lo = b * bs
        hi = min(lo + bs, n)
        acc = first[0]
        for i in range(lo, hi):
            acc = _combine(which, acc, x[i])
        partial[b] = acc
    for t in range(1):
        acc = first[0]
        for b in range(nb):
            v = partial[b]
            partial[b] = acc
            acc = _combine(which, acc, v)
        first[1] = acc
    for b in independent(range(nb if exclusive < 2 else 0)):
        lo = b * bs
        hi = min(lo + bs, n)
        acc = partial[b]
        for i in range(lo, hi):
            if exclusive != 0:
                out[i] = acc
                acc = _combine(which, acc, x[i])
            else:
                acc = _combine(which, acc, x[i])
                out[i] = acc


_WHICH = {"sum": 0, "min": 1, "max": 2}
_SCANS_WITH = {}


def _scan_with(op):
    """_scan with the operator fixed to the @tack.func op: for complex sums,
    which _combine cannot type (its min and max compare)."""
    k = _SCANS_WITH.get(op)
    if k is None:
        @kernel
        def _scan_op(x, out, partial, first, bs, exclusive):
            n = x.shape[0]
            nb = partial.shape[0]
            for b in independent(range(nb)):
                lo = b * bs
                hi = min(lo + bs, n)
                acc = first[0]
                for i in range(lo, hi):
                    acc = op(acc, x[i])
                partial[b] = acc
            for t in range(1):
                acc = first[0]
                for b in range(nb):
                    v = partial[b]
                    partial[b] = acc
                    acc = op(acc, v)
                first[1] = acc
            for b in independent(range(nb if exclusive < 2 else 0)):
                lo = b * bs
                hi = min(lo + bs, n)
                acc = partial[b]
                for i in range(lo, hi):
                    if exclusive != 0:
                        out[i] = acc
                        acc = op(acc, x[i])
                    else:
                        acc = op(acc, x[i])
                        out[i] = acc
        k = _SCANS_WITH[op] = _scan_op
    return k


def _run_scan(a, out, partial, first, bs, mode, op, outdt):
    if outdt.kind == "c":
        _scan_with(_op_sum)(a, out, partial, first, bs, mode)
    else:
        _scan(a, out, partial, first, bs, mode, _WHICH[op])


def scan(a, op="sum", *, exclusive=False, dtype=None):
    """Prefix scan of the 1-D array ``a``: ``out[i] = a[0] op a[1] op ... op
    a[i]`` (inclusive: NumPy's ``np.cumsum``, ``np.minimum.accumulate``,
    ``np.maximum.accumulate``), or of the elements before ``i`` (exclusive:
    ``out[0]`` is the identity -- 0 for sums, the dtype's largest (smallest)
    value for min (max), +-inf for floats).  ``op`` is ``"sum"``, ``"min"`` or
    ``"max"``; min and max propagate NaN as NumPy's do.  The result is a new
    array on ``a``'s device, of ``np.cumsum``'s dtype for sums (bool and
    small integers widen to int64 / uint64) and of ``a``'s for min and max,
    unless ``dtype`` is given.  Floats are summed block by block, so a float
    sum may differ from NumPy's serial one in the last bits, as any parallel
    sum does; integer sums wrap as NumPy's do."""
    a = _one_d(a, "a", "scan")
    if not isinstance(op, str) or op not in _NAMED:
        raise ValueError(f"tack.scan: op must be 'sum', 'min' or 'max', got {op!r}")
    _numeric(a, "a", "scan", complex_ok=(op == "sum"))
    npdt = _npdtype(a.dtype)
    outdt = np.dtype(dtype) if dtype is not None else (_sum_dtype(npdt) if op == "sum" else npdt)
    if op != "sum" and outdt.kind == "c":
        raise TypeError(f"tack.scan: {op} is not defined for complex values")
    n = a.shape[0]
    out = _empty(n, outdt, device=a.device)
    if n == 0:
        return out
    nb, bs = _blocks(n, a.device)
    partial = _empty(nb, outdt, device=a.device)
    first = _host([_identity(op, outdt)] * 2, outdt, a.device)
    _run_scan(a, out, partial, first, bs, 1 if exclusive else 0, op, outdt)
    return out


def _reduce_kernel(op):
    k = _REDUCES.get(op)
    if k is None:
        @kernel
        def _reduce(x, partial, bs):
            n = x.shape[0]
            nb = partial.shape[0]
            for b in independent(range(nb)):
                lo = b * bs
                hi = min(lo + bs, n)
                acc = partial[b]
                acc = x[lo]
                for i in range(lo + 1, hi):
                    acc = op(acc, x[i])
                partial[b] = acc
            for t in range(1):
                acc = partial[0]
                for b in range(1, nb):
                    acc = op(acc, partial[b])
                partial[0] = acc
        k = _REDUCES[op] = _reduce
    return k


def reduce(a, op="sum", *, initial=None, dtype=None):
    """Reduce the 1-D array ``a`` to one value with ``op``: ``"sum"``,
    ``"min"``, ``"max"`` or a ``@tack.func`` of two values that is
    associative (the blocks are combined in order, but each block's values
    are combined before the next block's).  Returns a NumPy scalar of
    ``dtype`` (default: ``np.sum``'s dtype for sums, ``a``'s otherwise),
    as ``np.add.reduce`` / ``np.minimum.reduce`` would.  ``initial``, when
    given, is combined first; an empty ``a`` without it is a ``ValueError``
    for every operator but the sum (whose identity is 0)."""
    a = _one_d(a, "a", "reduce")
    fn, name = _op_of(op, "reduce")
    _numeric(a, "a", "reduce", complex_ok=(name != "min" and name != "max"))
    npdt = _npdtype(a.dtype)
    outdt = np.dtype(dtype) if dtype is not None else (_sum_dtype(npdt) if name == "sum" else npdt)
    n = a.shape[0]
    if n == 0:
        if initial is not None:
            return outdt.type(initial)
        if name == "sum":
            return outdt.type(0)
        raise ValueError(f"tack.reduce: zero-size array to reduction operation {name or op.__name__} "
                         "which has no identity (give initial=)")
    if name is not None and outdt.kind == "c" and name != "sum":
        raise TypeError(f"tack.reduce: {name} is not defined for complex values")
    nb, bs = _blocks(n, a.device)
    partial = _empty(nb, outdt, device=a.device)
    if name is not None:  # the scan kernel without its output: one compile serves both
        first = _host([_identity(name, outdt)] * 2, outdt, a.device)
        _run_scan(a, first[:1], partial, first, bs, 2, name, outdt)
        got = first[1]
    else:
        _reduce_kernel(fn)(a, partial, bs)
        got = partial[0]
    if initial is not None:
        got = outdt.type(fn(outdt.type(initial), got))
    return outdt.type(got)


# ------------------------------------------------------------------ sort


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
    argsort).  Without values, vin and vout and the two flags go unread."""

    @kernel(checks=False)  # indices made here, in bounds by construction
    def _radix_pass(kin, vin, kout, vout, c, counts, totals, mode, shift, bs, iota, keys_out):
        n = kin.shape[0]
        nb = counts.shape[0]
        for b in independent(range(nb)):
            top, ones, inf, mag, sh = _key_consts(c)
            for d in range(256):
                counts[b, d] = 0
            lo = b * bs
            hi = min(lo + bs, n)
            for i in range(lo, hi):
                d = i64((_key(kin[i], mode, top, ones, inf, mag, sh) >> shift) & 255)
                counts[b, d] = counts[b, d] + 1
        for t in range(1):
            _offsets(counts, totals)
        for b in independent(range(nb)):
            top, ones, inf, mag, sh = _key_consts(c)
            for d in range(256):
                counts[b, d] = counts[b, d] + totals[d]
            lo = b * bs
            hi = min(lo + bs, n)
            for i in range(lo, hi):
                u = kin[i]
                d = i64((_key(u, mode, top, ones, inf, mag, sh) >> shift) & 255)
                p = counts[b, d]
                counts[b, d] = p + 1
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
    part = _empty((nb, 2), _npdtype(u.dtype), device=u.device)
    _key_span(u, c, part, mode, bs)
    ors, ands = (int(v) for v in part[0].numpy())  # one copy from a GPU
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
    counts = _empty((nb, 256), np.int64, device=dev)
    totals = _empty(256, np.int64, device=dev)
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
        _radix_pass_kv(kin, vin, kout, vout, c, counts, totals, mode, shift, bs,
                       1 if (j == 0 and values is None) else 0, 0 if (last and not keys_wanted) else 1)
        kin, vin = kout, vout
    keys = kin._field_view(a.dtype, 0, (n,), (1,)) if keys_wanted else None
    return keys, vin


def _argsort(a):
    if a.shape[0] <= 1:
        out = _empty(a.shape[0], np.int64, device=a.device)
        if a.shape[0]:
            _iota(out)
        return out
    return _radix_sort_kv(a, None, False)[1]


def _sortable(a, name, what):
    a = _one_d(a, name, what)
    _numeric(a, name, what)
    return a


def argsort(a):
    """The indices that sort the 1-D array ``a`` stably: NumPy's
    ``np.argsort(a, kind="stable")`` (int64), with NaNs last in their input
    order and -0.0 and 0.0 equal.  A radix sort of 8-bit digits, one pass per
    byte of the dtype that is not the same in every element; memory: two
    copies of ``a`` and 8 bytes per element (int32 indices, twice) besides
    the result."""
    a = _sortable(a, "a", "argsort")
    return _argsort(a)


def sort(a, values=None):
    """``a`` sorted (a new array): NumPy's ``np.sort(a, kind="stable")``,
    NaNs last, -0.0 kept where it was among the zeros.  With ``values`` (a
    1-D array of the same length, any dtype), returns ``(sorted a, values
    in the same order)``: a sort by key that keeps equal keys in their input
    order.  A radix sort of 8-bit digits, one pass per byte of the dtype that
    is not the same in every element; memory: a copy of ``a`` besides the
    result (with ``values``: a copy of the keys and of the values besides
    theirs)."""
    a = _sortable(a, "a", "sort")
    if values is not None:
        values = _one_d(values, "values", "sort")
        if values.shape[0] != a.shape[0]:
            raise ValueError(f"tack.sort: values has {values.shape[0]} elements and the keys {a.shape[0]}")
        if values.device != a.device:
            raise ValueError(f"tack.sort: values is on {values.device} and the keys on {a.device}")
    n = a.shape[0]
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
    counts = _empty((nb, 256), np.int64, device=a.device)
    totals = _empty(256, np.int64, device=a.device)
    bufs = [_empty(n, _npdtype(u.dtype), device=a.device) for _ in range(min(2, len(shifts)))]
    none = _empty(1, np.int64, device=a.device)  # the values' stand-in: _radix_pass reads none
    src = u
    for j, shift in enumerate(shifts):
        dst = bufs[j % 2]
        _radix_pass(src, none, dst, none, c, counts, totals, mode, shift, bs, 0, 1)
        src = dst
    return src._field_view(a.dtype, 0, (n,), (1,))


# ------------------------------------------------------------------ compact and unique


@kernel
def _count_true(mask, partial, bs):
    n = mask.shape[0]
    nb = partial.shape[0] - 1
    for b in independent(range(nb)):
        lo = b * bs
        hi = min(lo + bs, n)
        c = i64(0)
        for i in range(lo, hi):
            if mask[i]:
                c += 1
        partial[b] = c
    for t in range(1):
        acc = i64(0)
        for b in range(nb):
            c = partial[b]
            partial[b] = acc
            acc += c
        partial[nb] = acc


@kernel(checks=False)  # out has partial[nb] elements, the number of True in mask
def _compact_scatter(a, mask, partial, out, bs):
    n = mask.shape[0]
    for b in independent(range(partial.shape[0] - 1)):
        lo = b * bs
        hi = min(lo + bs, n)
        p = partial[b]
        for i in range(lo, hi):
            if mask[i]:
                out[p] = a[i]
                p += 1


@kernel
def _run_starts(s, flags):
    # flags[i]: s[i] starts a run of equal values (NaNs equal to each other, as np.unique's)
    for i in range(s.shape[0]):
        if i == 0:
            flags[i] = True
        else:
            p = s[i - 1]
            q = s[i]
            flags[i] = not (p == q or (p != p and q != q))


def _compact(a, mask):
    n = a.shape[0]
    nb, bs = _blocks(n, a.device)
    partial = _empty(nb + 1, np.int64, device=a.device)
    if n:
        _count_true(mask, partial, bs)
        total = int(partial[nb])
    else:
        total = 0
    out = _empty(total, _npdtype(a.dtype), device=a.device)
    if total:
        _compact_scatter(a, mask, partial, out, bs)
    return out


def compact(a, mask):
    """The elements of the 1-D array ``a`` where the bool array ``mask`` is
    True, in order, as a new array: NumPy's ``a[mask]``.  Two passes (a count
    per block, then each block copies its elements to its offset); memory:
    the result and 8 bytes per block."""
    a = _one_d(a, "a", "compact")
    if a.dtype.shape != ():
        raise TypeError(f"tack.compact: a has dtype {a.dtype.name}; it takes arrays of scalars")
    mask = _one_d(mask, "mask", "compact")
    if mask.dtype.kind != "b":
        raise TypeError(f"tack.compact: mask has dtype {mask.dtype.name}; it must be bool")
    if mask.shape[0] != a.shape[0]:
        raise ValueError(f"tack.compact: mask has {mask.shape[0]} elements and a {a.shape[0]}")
    if mask.device != a.device:
        raise ValueError(f"tack.compact: mask is on {mask.device} and a on {a.device}")
    return _compact(a, mask)


def unique(a):
    """The sorted distinct values of the 1-D array ``a``: NumPy's
    ``np.unique(a)`` (all NaNs are one value, last; -0.0 and 0.0 are one).
    A sort, a pass that marks where each run of equal values starts, and a
    compaction."""
    a = _sortable(a, "a", "unique")
    s = sort(a)
    flags = _empty(s.shape[0], np.bool_, device=a.device)
    if s.shape[0]:
        _run_starts(s, flags)
    return _compact(s, flags)


# ------------------------------------------------------------------ searchsorted


@func
def _lt(p, q):
    # NumPy's sort order: NaNs after everything, equal to each other
    return p < q or (q != q and p == p)


@kernel
def _searchsorted(a, v, out, right):
    n = a.shape[0]
    for j in range(v.shape[0]):
        x = v[j]
        lo = i64(0)
        hi = i64(n)
        while lo < hi:
            mid = (lo + hi) // 2
            y = a[mid]
            go = False
            if right != 0:
                go = not _lt(x, y)
            else:
                go = _lt(y, x)
            if go:
                lo = mid + 1
            else:
                hi = mid
        out[j] = lo


def searchsorted(a, v, side="left"):
    """Where the values ``v`` would go in the sorted 1-D array ``a`` to keep
    it sorted: NumPy's ``np.searchsorted(a, v, side)`` (NaNs sort last), one
    binary search per value in parallel, O(len(v) log len(a)).  ``v`` is an
    array (the result is an int64 array on ``a``'s device) or a scalar (an
    ``np.int64``).  ``a`` is not checked to be sorted, as NumPy does not."""
    if side not in ("left", "right"):
        raise ValueError(f"tack.searchsorted: side must be 'left' or 'right', got {side!r}")
    a = _sortable(a, "a", "searchsorted")
    scalar = np.ndim(v) == 0 and not isinstance(v, _core.Array)
    if scalar:
        v = _host([v], np.result_type(v), a.device)
    else:
        v = _one_d(v, "v", "searchsorted")
        _numeric(v, "v", "searchsorted")
        if v.device != a.device:
            raise ValueError(f"tack.searchsorted: v is on {v.device} and a on {a.device}")
    out = _empty(v.shape[0], np.int64, device=a.device)
    if v.shape[0]:
        _searchsorted(a, v, out, 1 if side == "right" else 0)
    return out[0] if scalar else out


# ------------------------------------------------------------------ histogram


@func
def _bin_of(x, edges, scale):
    # the last edge <= x, the last bin closed: np.histogram's bins.  With
    # equal bins (scale[0] = bins / width) the arithmetic guess is checked
    # against the edges and moved a step when it is one off (as NumPy's is);
    # a guess still wrong, and unequal bins, take a binary search.  (A
    # while loop costs far more than two ifs in the common case: keep them
    # out of the path most values take.)
    nb = edges.shape[0] - 1
    l = i64(-1)
    if scale[0] > 0:
        g = (x - edges[0]) * scale[0]  # may be inf when the range's width overflows
        l = i64(0)
        if g >= nb:
            l = nb - 1
        elif g > 0:
            l = i64(g)
        if l > 0 and x < edges[l]:
            l -= 1
        elif l + 1 < nb and edges[l + 1] <= x:
            l += 1
        if x < edges[l] or (l + 1 < nb and edges[l + 1] <= x):
            l = -1
    if l < 0:
        l = 0
        h = i64(nb)
        while h - l > 1:
            mid = (l + h) // 2
            if edges[mid] <= x:
                l = mid
            else:
                h = mid
        while l + 1 < nb and edges[l + 1] <= x:
            l += 1
    return l


@kernel
def _histogram(a, edges, scale, counts):
    nb = edges.shape[0] - 1
    lo = edges[0]
    hi = edges[nb]
    for i in range(a.shape[0]):
        x = a[i]
        if x >= lo and x <= hi:
            counts[_bin_of(x, edges, scale)] += 1


@kernel(checks=False)  # bins come from _bin_of, within 0..nbins-1
def _histogram_blocks(a, edges, scale, rows, counts, bs):
    # each block counts into its own row, then the rows are summed per bin
    n = a.shape[0]
    nb = edges.shape[0] - 1
    lo = edges[0]
    hi = edges[nb]
    for b in independent(range(rows.shape[0])):
        for k in range(nb):
            rows[b, k] = 0
        for i in range(b * bs, min(b * bs + bs, n)):
            x = a[i]
            if x >= lo and x <= hi:
                k = _bin_of(x, edges, scale)
                rows[b, k] = rows[b, k] + 1
    for k in range(nb):
        s = i64(0)
        for b in range(rows.shape[0]):
            s += rows[b, k]
        counts[k] = s


@kernel
def _widen(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


def histogram(a, bins=10, range=None):
    """Counts of the values of the 1-D array ``a`` in bins: NumPy's
    ``np.histogram(a, bins, range)`` -- ``bins`` an int (equal bins over
    ``range``, or over ``a``'s min and max) or the increasing edges; each bin
    holds ``edges[k] <= x < edges[k + 1]``, the last one its right edge too;
    values outside and NaNs are not counted.  Returns ``(counts, edges)``:
    int64 counts on ``a``'s device and the edges as NumPy computes them (a
    NumPy array).  One pass: each block counts into its own row of
    counters (a binary search over the edges per value, or arithmetic and a
    check against them for equal bins), then the rows are summed; when the
    rows would pass 4M counters, atomic adds into one row of int32 counters
    (Metal has no 64-bit atomics); ``weights`` and ``density`` are not
    offered."""
    a = _sortable(a, "a", "histogram")
    npdt = _npdtype(a.dtype)
    if np.ndim(bins) == 0 and range is None and a.shape[0]:
        lo, hi = reduce(a, "min"), reduce(a, "max")
        edges = np.histogram_bin_edges(np.array([lo, hi], npdt), bins)
    else:
        edges = np.histogram_bin_edges(np.zeros(0, npdt), bins, range=range)
    nbins = edges.shape[0] - 1
    counts = _empty(nbins, np.int64, device=a.device)
    counts.fill(0)
    n = a.shape[0]
    if n == 0:
        return counts, edges
    dev_edges = _host(edges, edges.dtype, a.device)
    uniform = np.ndim(bins) == 0 and edges[-1] > edges[0]
    with np.errstate(over="ignore", divide="ignore"):
        sc = np.asarray(nbins / (edges[-1] - edges[0]) if uniform else 0, edges.dtype)
    scale = _host([sc if np.isfinite(sc) else 0], edges.dtype, a.device)
    nb, bs = _blocks(n, a.device)
    if nb * nbins <= 1 << 22:
        # a row of counters per block: no atomics, 8 bytes per block and bin
        rows = _empty((nb, nbins), np.int64, device=a.device)
        _histogram_blocks(a, dev_edges, scale, rows, counts, bs)
    elif n >= 2 ** 31:
        _histogram(a, dev_edges, scale, counts)
    else:
        # counted in int32 atomics (Metal has no 64-bit ones), then widened
        c32 = _empty(nbins, np.int32, device=a.device)
        c32.fill(0)
        _histogram(a, dev_edges, scale, c32)
        _widen(c32, counts)
    return counts, edges


# ------------------------------------------------------------------ segmented reduce


@kernel
def _segments(x, off, out, init, which, has_init):
    for s in range(out.shape[0]):
        lo = off[s]
        hi = off[s + 1]
        acc = init[0]
        if has_init == 0 and hi > lo:
            acc = x[lo]
            lo += 1
        for i in range(lo, hi):
            acc = _combine(which, acc, x[i])
        out[s] = acc


_SEGMENTS = {}


def _segment_kernel(op):
    k = _SEGMENTS.get(op)
    if k is None:
        @kernel
        def _segments_op(x, off, out, init, has_init):
            for s in range(out.shape[0]):
                lo = off[s]
                hi = off[s + 1]
                acc = init[0]
                if has_init == 0 and hi > lo:
                    acc = x[lo]
                    lo += 1
                for i in range(lo, hi):
                    acc = op(acc, x[i])
                out[s] = acc
        k = _SEGMENTS[op] = _segments_op
    return k


def segmented_reduce(values, offsets, op="sum", *, initial=None, dtype=None):
    """Reduce each segment ``values[offsets[s]:offsets[s + 1]]`` of the 1-D
    array ``values`` with ``op`` (``"sum"``, ``"min"``, ``"max"`` or an
    associative ``@tack.func`` of two values): a new array of
    ``len(offsets) - 1`` values, segment ``s`` the ``tack.reduce`` of its
    slice, in parallel over the segments.  ``offsets`` must be
    non-decreasing integers from 0 to ``len(values)`` (checked; a
    ``ValueError`` names the first bad one).  ``initial`` starts every
    segment; without it an empty segment is 0 for sums and a ``ValueError``
    for the other operators."""
    values = _one_d(values, "values", "segmented_reduce")
    fn, name = _op_of(op, "segmented_reduce")
    _numeric(values, "values", "segmented_reduce", complex_ok=(name != "min" and name != "max"))
    off = np.asarray(offsets.numpy() if isinstance(offsets, _core.Array) else offsets)
    if off.ndim != 1 or off.shape[0] < 1 or (off.size and off.dtype.kind not in "iu"):
        raise ValueError("tack.segmented_reduce: offsets must be a 1-D array of integers with at least one "
                         f"element (the segments' starts and the end), got {off.dtype} of shape {off.shape}")
    off = off.astype(np.int64)
    n = values.shape[0]
    bad = np.nonzero((off < 0) | (off > n))[0]
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"tack.segmented_reduce: offsets[{k}] = {off[k]} is outside 0..{n}")
    down = np.nonzero(np.diff(off) < 0)[0]
    if down.size:
        k = int(down[0]) + 1
        raise ValueError(f"tack.segmented_reduce: offsets[{k}] = {off[k]} is below offsets[{k - 1}] = "
                         f"{off[k - 1]}: offsets must not decrease")
    npdt = _npdtype(values.dtype)
    outdt = np.dtype(dtype) if dtype is not None else (_sum_dtype(npdt) if name == "sum" else npdt)
    if initial is None and name != "sum":
        empty = np.nonzero(np.diff(off) == 0)[0]
        if empty.size:
            k = int(empty[0])
            raise ValueError(f"tack.segmented_reduce: segment {k} (offsets[{k}] = offsets[{k + 1}] = {off[k]}) "
                             f"is empty and {name or op.__name__} has no identity: give initial=")
    nseg = off.shape[0] - 1
    out = _empty(nseg, outdt, device=values.device)
    if nseg == 0:
        return out
    has_init = initial is not None or name == "sum"
    init = _host([initial if initial is not None else 0], outdt, values.device)
    offs = _host(off, np.int64, values.device)
    if name is not None and outdt.kind != "c":
        _segments(values, offs, out, init, _WHICH[name], 1 if has_init else 0)
    elif name is not None:  # a complex sum: _combine's min and max cannot be typed for complex
        _segment_kernel(_op_sum)(values, offs, out, init, 1 if has_init else 0)
    else:
        _segment_kernel(fn)(values, offs, out, init, 1 if has_init else 0)
    return out
