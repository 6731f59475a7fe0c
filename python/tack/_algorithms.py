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

The kernels are compiled on first use for each dtype, as any kernel is, and
kept in the disk cache.  The operator kernels (`reduce`, `scan` and
`segmented_reduce` with a `@tack.func`) are made once per operator by a
factory whose kernel names the operator from its enclosing scope.

The primitives are three modules: this one (the operators, scan and reduce, compaction and
distinct values, searchsorted, histogram, segmented reduce, and ``__all__``), tack._algorithms_sort
(the radix sort behind ``sort`` and ``argsort``, re-exported here) and tack._algorithms_common
(the argument checks and the blocking every primitive shares).
"""

import numpy as np

from . import _core
from ._algorithms_common import not_differentiated, _blocks, _host, _launch, _is_records, _npdtype, _numeric, _one_d, _one_d_records, _sortable
from ._algorithms_sort import argsort, sort  # noqa: F401  (argsort: re-exported, in __all__)
from ._algorithms_vectors import reduce_vectors, scan_vectors, segmented_vectors
from ._array import _is_bfloat16, empty as _empty, zeros as _zeros
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
    if npdt.kind == "f" or _is_bfloat16(npdt):  # ml_dtypes' bfloat16 is kind "V" to NumPy
        return npdt.type(np.inf if name == "min" else -np.inf)
    info = np.iinfo(npdt)
    return npdt.type(info.max if name == "min" else info.min)


# ------------------------------------------------------------------ scan and reduce

_REDUCES = {}


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


def _run_scan(a, out, partial, first, bs, mode, op, outdt, n, device):
    if outdt.kind == "c":
        _launch(_scan_with(_op_sum), n if mode == 2 else 4 * n, device, a, out, partial, first, bs, mode)
    else:
        _launch(_scan, n if mode == 2 else 4 * n, device, a, out, partial, first, bs, mode, _WHICH[op])


_PLANS = {}  # (what, dtype, op, dtype=) -> (fn, name, result dtype, [identity, identity], float result)


def _plan(what, a, op, dtype):
    """What a reduce or scan of `a` by `op` needs besides its data, checked and cached: the
    operator, its name (None for a @tack.func), the result's dtype, [identity, identity] and 1 when
    the result is a float (bfloat16 included: ml_dtypes' is kind "V" to NumPy), else 0."""
    try:
        key = (what, a.dtype, op, dtype)
        got = _PLANS.get(key)
    except TypeError:  # an unhashable dtype= (a list, say): np.dtype says what it makes of it
        key, got = None, None
    if got is not None:
        return got
    fn, name = _op_of(op, what)
    _numeric(a, "a", what, complex_ok=(name != "min" and name != "max"))
    npdt = _npdtype(a.dtype)
    outdt = np.dtype(dtype) if dtype is not None else (_sum_dtype(npdt) if name == "sum" else npdt)
    if outdt.kind == "c" and name in ("min", "max"):  # dtype=complex: complex values have no order
        raise TypeError(f"tack.{what}: {name} is not defined for complex values (dtype={outdt})")
    first = np.array([_identity(name, outdt)] * 2, outdt) if name is not None else None
    got = (fn, name, outdt, first, 1 if outdt.kind == "f" or _is_bfloat16(outdt) else 0)
    if key is not None:
        _PLANS[key] = got
    return got


def _scratch(nb, outdt, first, device):
    """The partials and [identity, result] a named reduction or scan writes: NumPy arrays on the
    CPU (a kernel takes them as they are, and reading the result back is NumPy's indexing), device
    arrays elsewhere."""
    if device == "cpu":
        return np.empty(nb, outdt), first.copy()
    return _empty(nb, outdt, device=device), _host(first, outdt, device)


@not_differentiated("tack.scan")
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
    sum does; integer sums wrap as NumPy's do.  An array of vectors or
    matrices is scanned component by component (``np.cumsum(a, axis=0)`` of
    its ``(n, 3)`` components), each component bit for bit its column's scan,
    into the vector type of the result's components, or an ``(n, 3)`` array
    where there is none (the int64 sums of a ``vec3i``)."""
    if type(a) is not _core.Array or a.ndim != 1 or a.strided:
        a = _one_d(a, "a", "scan")
    if not isinstance(op, str) or op not in _NAMED:
        raise ValueError(f"tack.scan: op must be 'sum', 'min' or 'max', got {op!r}")
    if a.dtype.shape != ():  # vectors and matrices: component by component
        return scan_vectors(a, op, exclusive, dtype)
    _, _, outdt, ident, fl = _plan("scan", a, op, dtype)
    n = a.shape[0]
    device = a.device
    out = _empty(n, outdt, device=device)
    if n == 0:
        return out
    nb, bs = _blocks(n, device)
    neg = op == "sum" and (fl or outdt.kind == "c")  # from -0.0: np.cumsum of -0.0s is -0.0s, not 0.0 + -0.0
    partial, first = _scratch(nb, outdt, -ident if neg else ident, device)
    _run_scan(a, out, partial, first, bs, 1 if exclusive else 0, op, outdt, n, device)
    if neg and exclusive:
        out[:1].fill(0)  # an exclusive sum starts from 0.0, its identity as documented
    return out


@kernel
def _reduce_sum(x, partial, first, bs):
    # a sum of real values: each block in eight interleaved partial sums (element i of the block
    # into sum i % 8, the sums added pairwise at the block's end), so that the adds of a block
    # do not wait for each other; the blocks' totals are then added in order into first[1].
    # Integer sums wrap and are the same in any order; a float sum's last bits are this order's.
    n = x.shape[0]
    nb = partial.shape[0]
    for b in independent(range(nb)):
        lo = b * bs
        hi = min(lo + bs, n)
        s0 = first[0]
        s1 = first[0]
        s2 = first[0]
        s3 = first[0]
        s4 = first[0]
        s5 = first[0]
        s6 = first[0]
        s7 = first[0]
        m = lo + (hi - lo) // 8 * 8
        for i in range(lo, m - 7, 8):  # i + 7 < m: the index checks hoisted (nests.c)
            s0 = s0 + x[i]
            s1 = s1 + x[i + 1]
            s2 = s2 + x[i + 2]
            s3 = s3 + x[i + 3]
            s4 = s4 + x[i + 4]
            s5 = s5 + x[i + 5]
            s6 = s6 + x[i + 6]
            s7 = s7 + x[i + 7]
        for i in range(m, hi):
            s0 = s0 + x[i]
        partial[b] = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    for t in range(1):
        acc = first[0]
        for b in range(nb):
            acc = acc + partial[b]
        first[1] = acc


@func
def _lane_min(a, b):
    # a NaN stays; otherwise the smaller, b of two equal (np.minimum's choice, as _op_min's)
    return a if (a != a or a < b) else b


@func
def _lane_max(a, b):
    return a if (a != a or a > b) else b


@func
def _zero_or_nan_at(x, lo, hi, h):
    # the index of x[lo:hi]'s last zero (h == 2) or first NaN (h == 1); -1 when there is none
    at = i64(-1)
    for i in range(lo, hi):
        v = x[i]
        if h == 2:
            if v == 0:
                at = i
        elif v != v and at < 0:
            at = i
    return at


def _minmax_kernel(lane):
    """The reduction kernel of "min" or "max" (`lane`, _lane_min or _lane_max): each block in
    eight interleaved lanes (element i of the block into lane i % 8, as the sum's partial sums), the
    lanes and then the blocks combined.  Which of several elements that compare equal is the
    result depends on that order where they differ in their bits -- 0.0 and -0.0, NaNs -- so a
    float result that is zero or NaN is then taken as the serial fold takes it: the first NaN, or
    the last element equal to zero (np.minimum keeps the second of equal values), by a second
    parallel pass over the blocks that runs only then.  Any other value compares equal only to
    its own bits, so the result is the serial fold's, bit for bit."""
    @kernel
    def _reduce_minmax(x, partial, first, where, bs, fl):
        # the blocks and lanes as _reduce_sum's (its loops at the top of the parallel loop's body,
        # whose index checks are tested once a block); fl != 0: a float dtype, whose zero and NaN
        # results are taken again (above), with where (nb + 1 int64) the blocks' finds and the hunt
        n = x.shape[0]
        nb = partial.shape[0]
        for b in independent(range(nb)):
            lo = b * bs
            hi = min(lo + bs, n)
            s0 = first[0]
            s1 = first[0]
            s2 = first[0]
            s3 = first[0]
            s4 = first[0]
            s5 = first[0]
            s6 = first[0]
            s7 = first[0]
            m = lo + (hi - lo) // 8 * 8
            for i in range(lo, m - 7, 8):  # i + 7 < m: the index checks hoisted (nests.c)
                s0 = lane(s0, x[i])
                s1 = lane(s1, x[i + 1])
                s2 = lane(s2, x[i + 2])
                s3 = lane(s3, x[i + 3])
                s4 = lane(s4, x[i + 4])
                s5 = lane(s5, x[i + 5])
                s6 = lane(s6, x[i + 6])
                s7 = lane(s7, x[i + 7])
            for i in range(m, hi):
                s0 = lane(s0, x[i])
            partial[b] = lane(lane(lane(s0, s1), lane(s2, s3)), lane(lane(s4, s5), lane(s6, s7)))
        for t in range(1):
            acc = first[0]
            for b in range(nb):
                acc = lane(acc, partial[b])
            first[1] = acc
            where[nb] = 0
            if fl != 0 and acc != acc:
                where[nb] = 1
            elif fl != 0 and acc == 0:
                where[nb] = 2
        # a zero or NaN result: each block's last zero or first NaN (-1: none), in parallel, then
        # the last block's zero or the first block's NaN
        for b in independent(range(nb if where[nb] != 0 else 0)):
            where[b] = _zero_or_nan_at(x, b * bs, min(b * bs + bs, n), where[nb])
        for t in range(1):
            if where[nb] == 1:
                b = i64(0)
                while where[b] < 0:
                    b += 1
                first[1] = x[where[b]]
            elif where[nb] == 2:
                b = nb - 1
                while where[b] < 0:
                    b -= 1
                first[1] = x[where[b]]

    return _reduce_minmax


def _minmax_keys_kernel(is_min):
    """The reduction kernel of "min" (is_min) or "max" of float32 and float64 values, read as
    integers of their width, u (a view of x's bytes): each value's key, its bits with all but the
    sign flipped where the sign is set, orders as the value does (-0.0 below 0.0, a NaN above inf
    or below -inf by its sign), and a min or max of integers is exact in any order, so the C
    compiler runs the loop in vector lanes (vpminsq; the floats' compare-and-select lanes of
    _minmax_kernel it does not).  Beside it, the greatest of the values' bits without their sign
    says whether a NaN was met (above inf's).  A NaN or zero result is then taken as the serial
    fold takes it, by _minmax_kernel's second pass; any other value has one key, the serial
    fold's result's."""
    @kernel
    def _reduce_keys(x, u, partial, nans, first, where, bs, sh, top, inf):
        # first: [the identity's key, 0, the result's bits]; sh, top: the sign's shift and the mask
        # of the other bits; inf: +inf's bits.  where (nb + 1 int64): as _reduce_minmax's
        n = u.shape[0]
        nb = partial.shape[0]
        for b in independent(range(nb)):
            lo = b * bs
            hi = min(lo + bs, n)
            s = first[0]
            m = first[1]
            for i in range(lo, hi):
                v = u[i]
                k = v ^ ((v >> sh) & top)
                if is_min:
                    s = k if k < s else s
                else:
                    s = k if k > s else s
                a = v & top
                m = a if a > m else m
            partial[b] = s
            nans[b] = m
        for t in range(1):
            s = first[0]
            m = first[1]
            for b in range(nb):
                if is_min:
                    s = partial[b] if partial[b] < s else s
                else:
                    s = partial[b] if partial[b] > s else s
                m = nans[b] if nans[b] > m else m
            first[2] = s ^ ((s >> sh) & top)  # the key's bits: the map is its own inverse
            where[nb] = 0
            if m > inf:
                where[nb] = 1
            elif s == 0 or s == -1:  # the keys of 0.0 and -0.0
                where[nb] = 2
        # a zero or NaN result: each block's last zero or first NaN (-1: none), as _reduce_minmax's
        for b in independent(range(nb if where[nb] != 0 else 0)):
            where[b] = _zero_or_nan_at(x, b * bs, min(b * bs + bs, n), where[nb])
        for t in range(1):
            if where[nb] != 0:
                b = i64(0)
                if where[nb] == 1:
                    while where[b] < 0:
                        b += 1
                else:
                    b = nb - 1
                    while where[b] < 0:
                        b -= 1
                first[2] = u[where[b]]

    return _reduce_keys


_KEY_PLANS = {}  # (name, dtype) -> the kernel, the keys' type, the sign's shift and mask, inf's bits, [identity's key, 0, 0]
_KEY_TYPES = {4: np.int32, 8: np.int64}


def _minmax_keys(a, base, off, step, name, outdt, ident, n, nb, bs, device):
    """min or max of float32 or float64 `a` by its integer keys (_minmax_keys_kernel): the value,
    bit for bit the serial fold's.  `a` is elements off, off + step, ... of `base`'s scalars (a
    vector array's component: _algorithms_vectors), read as integers there."""
    plan = _KEY_PLANS.get((name, outdt))
    if plan is None:
        it = _KEY_TYPES[outdt.itemsize]
        sh, top = it(8 * outdt.itemsize - 1), it(2 ** (8 * outdt.itemsize - 1) - 1)
        ib = np.asarray(ident[0], outdt).view(it)[()]
        first = np.array([ib ^ ((ib >> sh) & top), 0, 0], it)
        k = _minmax_keys_kernel(name == "min")
        plan = _KEY_PLANS[(name, outdt)] = (k, it, sh, top, np.asarray(np.inf, outdt).view(it)[()], first)
    k, it, sh, top, inf, first = plan
    u = base._field_view(it, off, (n,), (step,))
    if device == "cpu":
        partial, nans, first = np.empty(nb, it), np.empty(nb, it), first.copy()
        where = np.empty(nb + 1, np.int64)
    else:
        partial, nans, first = _empty(nb, it, device=device), _empty(nb, it, device=device), _host(first, it, device)
        where = _empty(nb + 1, np.int64, device=device)
    _launch(k, n, device, a, u, partial, nans, first, where, bs, sh, top, inf)
    return first.view(outdt)[2] if device == "cpu" else np.asarray(it(first[2])).view(outdt)[()]


_REDUCE_MINMAX = {}


def _minmax(name):
    """The reduction kernel of "min" or "max", made once."""
    k = _REDUCE_MINMAX.get(name)
    if k is None:
        k = _REDUCE_MINMAX[name] = _minmax_kernel(_lane_min if name == "min" else _lane_max)
    return k


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


_ACCUMULATORS = {}  # (kernel, result dtype, argument dtypes) -> the accumulator's dtype (None: weak)


def _check_accumulator(what, op, k, outdt, *args):
    """Refuse an operator whose value has a type the result's dtype cannot hold: the kernel's
    accumulator ``acc`` takes the promotion of the operator's value (a float for an ``a * 0.5 + b``
    of integers) and every block's result would be converted back to ``outdt`` (truncated) with
    no word.  The accumulator's type is read from the kernel's IR (its front end only), once per
    kernel and dtypes."""
    from ._debug_facts import check, ir_facts

    key = (k, outdt, tuple(getattr(a, "dtype", None) for a in args))
    acc = _ACCUMULATORS.get(key, False)
    if acc is False:
        # a kernel run as Python (TACK_DISABLE_JIT) has the compiler's checker of it instead
        ir = k.ir(*args) if hasattr(k, "ir") else check(k._checker, args, {})[0]
        acc = _ACCUMULATORS[key] = ir_facts(ir)[0].get("acc")
    want = np.dtype(np.float32) if outdt.itemsize == 2 and (outdt.kind == "f" or _is_bfloat16(outdt)) else outdt
    if acc is not None and acc != want:
        raise TypeError(f"tack.{what}: {op.__name__}() gives {acc} for {outdt} values, and the result has dtype "
                        f"{outdt}: each block's value would be converted to {outdt}; pass dtype=np.{acc} "
                        f"(the values are converted first), or make {op.__name__}() return {outdt}")


@not_differentiated("tack.reduce")
def reduce(a, op="sum", *, initial=None, dtype=None):
    """Reduce the 1-D array ``a`` to one value with ``op``: ``"sum"``,
    ``"min"``, ``"max"`` or a ``@tack.func`` of two values that is
    associative (the blocks are combined in order, but each block's values
    are combined before the next block's).  A sum of real values adds each
    block in eight interleaved partial sums (element i into sum i % 8), so a
    float sum's last bits are that order's, not NumPy's pairwise one's.  Returns a NumPy scalar of
    ``dtype`` (default: ``np.sum``'s dtype for sums, ``a``'s otherwise),
    as ``np.add.reduce`` / ``np.minimum.reduce`` would.  ``initial``, when
    given, is combined first; an empty ``a`` without it is a ``ValueError``
    for every operator but the sum (whose identity is 0).  An array of vectors
    or matrices (``tack.vec3``, ``tack.mat33``, ...) is reduced component by
    component, as NumPy's ``a.sum(axis=0)`` of its ``(n, 3)`` copy, each
    component bit for bit as its column alone would be, to a NumPy array of
    the element's shape (``initial`` a scalar or such an array); a
    ``@tack.func`` operator then gets the vectors themselves."""
    if type(a) is not _core.Array or a.ndim != 1 or a.strided:
        a = _one_d(a, "a", "reduce")
    if a.dtype.shape != ():  # vectors and matrices: component by component
        return reduce_vectors(a, op, initial, dtype)
    fn, name, outdt, ident, fl = _plan("reduce", a, op, dtype)
    n = a.shape[0]
    if n == 0:
        if initial is not None:
            return outdt.type(initial)
        if name == "sum":
            return outdt.type(0)
        raise ValueError(f"tack.reduce: zero-size array to reduction operation {name or op.__name__} "
                         "which has no identity (give initial=)")
    return _reduce_column(a, a, 0, 1, fn, name, outdt, ident, fl, dtype, initial)


def _reduce_column(a, base, off, step, fn, name, outdt, ident, fl, dtype, initial):
    """reduce()'s work on a non-empty `a`, checked: a 1-D array, or a strided view of one
    component of a vector array `base` (its scalars off, off + step, ...)."""
    n = a.shape[0]
    device = a.device
    nb, bs = _blocks(n, device)
    if name == "sum" and outdt.kind != "c":  # eight partial sums a block (_reduce_sum)
        partial, first = _scratch(nb, outdt, ident, device)
        _launch(_reduce_sum, n, device, a, partial, first, bs)
        got = first[1]
    elif name is not None and fl and dtype is None and outdt.kind == "f" and outdt.itemsize in (4, 8) and n >= 4096:
        # float32, float64: integer keys (below 4,096 elements the fixed cost of their extra
        # arguments, 1 us, is more than the eight lanes lose: 3.9 against 4.9 us at 1,000)
        got = _minmax_keys(a, base, off, step, name, outdt, ident, n, nb, bs, device)
    elif name is not None and outdt.kind != "c":  # min and max: eight lanes a block
        k = _minmax(name)
        partial, first = _scratch(nb, outdt, ident, device)
        where = np.empty(nb + 1, np.int64) if device == "cpu" else _empty(nb + 1, np.int64, device=device)
        _launch(k, n, device, a, partial, first, where, bs, fl)
        got = first[1]
    elif name is not None:  # a complex sum: the scan kernel without its output
        partial, first = _scratch(nb, outdt, ident, device)
        _run_scan(a, first[:1], partial, first, bs, 2, name, outdt, n, device)
        got = first[1]
    else:
        partial = _empty(nb, outdt, device=device)
        k = _reduce_kernel(fn)
        _check_accumulator("reduce", fn, k, outdt, a, partial, bs)
        k(a, partial, bs)
        got = partial[0]
    if initial is not None:
        got = outdt.type(fn(outdt.type(initial), got))
    return outdt.type(got)


# ------------------------------------------------------------------ sort
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
    # the counts (then offsets) and the total: a NumPy array on the CPU, read back by indexing
    partial = np.empty(nb + 1, np.int64) if a.device == "cpu" else _empty(nb + 1, np.int64, device=a.device)
    if n:
        _launch(_count_true, n, a.device, mask, partial, bs)
        total = int(partial[nb])
    else:
        total = 0
    # numbers, vectors, matrices, or a struct's records (zeroed: the padding between fields is no garbage)
    out = (_zeros if _is_records(a) else _empty)(total, a.dtype, device=a.device)
    if total:
        _launch(_compact_scatter, 4 * n, a.device, a, mask, partial, out, bs)
    return out


@not_differentiated("tack.compact")
def compact(a, mask):
    """The elements of the 1-D array ``a`` (numbers, vectors, matrices, or a
    struct array's records) where the bool array ``mask`` is True, in order,
    as a new array: NumPy's ``a[mask]``.  Two passes (a count
    per block, then each block copies its elements to its offset); memory:
    the result and 8 bytes per block."""
    a = _one_d_records(a, "a", "compact") if _is_records(a) else _one_d(a, "a", "compact")
    mask = _one_d(mask, "mask", "compact", a.device)
    if mask.dtype.kind != "b":
        raise TypeError(f"tack.compact: mask has dtype {mask.dtype.name}; it must be bool")
    if mask.shape[0] != a.shape[0]:
        raise ValueError(f"tack.compact: mask has {mask.shape[0]} elements and a {a.shape[0]}")
    if mask.device != a.device:
        raise ValueError(f"tack.compact: mask is on {mask.device} and a on {a.device}")
    return _compact(a, mask)


@not_differentiated("tack.unique")
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


@not_differentiated("tack.searchsorted")
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
        v = _one_d(v, "v", "searchsorted", a.device)
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


@not_differentiated("tack.histogram")
def histogram(a, bins=10, range=None):
    """Counts of the values of the 1-D array ``a`` in bins: NumPy's
    ``np.histogram(a, bins, range)`` -- ``bins`` an int (equal bins over
    ``range``, or over ``a``'s min and max), the increasing edges, or the name
    of one of NumPy's estimators of a bin width ("auto", "fd", ...); each bin
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
    if isinstance(bins, str):
        # NumPy's estimators ('auto', 'fd', 'sturges', ...) read the values themselves, so they
        # run on a host copy; each gives equal bins over the range, counted as an int number of
        # them is.  (Edges made from the minimum and maximum alone would be another histogram.)
        edges = np.histogram_bin_edges(a.numpy(), bins, range=range)
        bins, range = edges.shape[0] - 1, (edges[0], edges[-1])
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


@not_differentiated("tack.segmented_reduce")
def segmented_reduce(values, offsets, op="sum", *, initial=None, dtype=None):
    """Reduce each segment ``values[offsets[s]:offsets[s + 1]]`` of the 1-D
    array ``values`` with ``op`` (``"sum"``, ``"min"``, ``"max"`` or an
    associative ``@tack.func`` of two values): a new array of
    ``len(offsets) - 1`` values, segment ``s`` the ``tack.reduce`` of its
    slice, in parallel over the segments.  ``offsets`` must be
    non-decreasing integers from 0 to ``len(values)`` (checked; a
    ``ValueError`` names the first bad one).  ``initial`` starts every
    segment; without it an empty segment is 0 for sums and a ``ValueError``
    for the other operators.  Vectors and matrices are reduced component by
    component, as ``tack.scan`` scans them (a ``@tack.func`` gets the elements)."""
    values = _one_d(values, "values", "segmented_reduce")
    fn, name = _op_of(op, "segmented_reduce")
    if values.dtype.shape == ():  # vectors and matrices: below, once the offsets are checked
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
    if initial is None and name != "sum":
        empty = np.nonzero(np.diff(off) == 0)[0]
        if empty.size:
            k = int(empty[0])
            raise ValueError(f"tack.segmented_reduce: segment {k} (offsets[{k}] = offsets[{k + 1}] = {off[k]}) "
                             f"is empty and {name or op.__name__} has no identity: give initial=")
    if values.dtype.shape != ():  # vectors and matrices: component by component
        return segmented_vectors(values, off, fn, name, initial, dtype)
    outdt = _plan("segmented_reduce", values, op, dtype)[2]
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
        k = _segment_kernel(fn)
        _check_accumulator("segmented_reduce", fn, k, outdt, values, offs, out, init, 1 if has_init else 0)
        k(values, offs, out, init, 1 if has_init else 0)
    return out
