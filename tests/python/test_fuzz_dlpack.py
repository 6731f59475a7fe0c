"""A bounded fuzz of the DLPack import path (issue: no capsule crashes Tack,
loses an exception or a deleter call).

Hypothesis writes managed tensors with ctypes (tests/python/_dlpack_producer.py):
both versions, every flag, every Tack dtype and some it refuses, shapes with
zero, negative and huge extents, NULL, C-order, unit-axis and arbitrary
strides, byte offsets (aligned, misaligned, past the address space), NULL
data and shapes, foreign devices, and deleters that count their calls and
sometimes raise.  Each goes through one of the three doors: a raw capsule
to tack.from_dlpack, a producer object to tack.from_dlpack, or a producer
object as a kernel argument (which refuses a read-only one for a parameter
the kernel writes).  Every door takes strided tensors as strided views
(tack.from_dlpack once refused them).  The properties:

- never a crash; a refused tensor raises ValueError, TypeError or
  BufferError (a kernel argument: ValueError or TypeError) whose message
  names the bad field;
- an accepted tensor reads back exactly the elements the producer holds;
  a shared one exports back to NumPy with the producer's address and
  strides, and writes through that export (or a kernel's writes) land in
  the producer's memory where the view says;
- the deleter runs exactly once in the tensor's life -- by Tack once it
  consumed the capsule (renamed it "used_dltensor[_versioned]"), whether
  the import succeeded or not, else by the capsule's own destructor; a
  capsule Tack does not recognize is neither renamed nor deleted;
- a consumed capsule refuses a second import; no reference to the capsule
  or the producer is left behind; an exception a deleter raises goes to
  sys.unraisablehook, never in place of the call's own result.

The budget is fixed: DLPACK_FUZZ_EXAMPLES (default 60) examples, a few
seconds; `make fuzz-dlpack` runs 5,000.  A failing example is saved in
tests/fuzz-corpus/ and replayed first on the next run; the cases that once
broke Tack are the @example lines below and unit tests in
test_dlpack_args.py (deleters written in Python) and test_arrays.py (empty
shapes whose other extents overflow)."""

import os
import pathlib
import re
import sys
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

import tack
from _dlpack_producer import (DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
                              DLPACK_FLAG_BITMASK_READ_ONLY, Producer, capsule_name, kDLBfloat, kDLBool,
                              kDLComplex, kDLFloat, kDLInt, kDLOpaqueHandle, kDLUInt)

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "fuzz-corpus"
EXAMPLES = int(os.environ.get("DLPACK_FUZZ_EXAMPLES", "60"))

DTYPES = [(kDLBool, 8, "?"), (kDLInt, 8, "i1"), (kDLInt, 16, "i2"), (kDLInt, 32, "i4"), (kDLInt, 64, "i8"),
          (kDLUInt, 8, "u1"), (kDLUInt, 16, "u2"), (kDLUInt, 32, "u4"), (kDLUInt, 64, "u8"),
          (kDLFloat, 16, "f2"), (kDLFloat, 32, "f4"), (kDLFloat, 64, "f8"), (kDLComplex, 64, "c8"),
          (kDLComplex, 128, "c16")]
# A kernel compiles once per dtype, rank and layout (a few tenths of a second
# each): the bounded run passes kernels three dtypes, the long run all.
KERNEL_DTYPES = DTYPES if EXAMPLES > 60 else [DTYPES[0], DTYPES[2], DTYPES[11]]
BAD_DTYPES = [(kDLBfloat, 32, 1), (kDLFloat, 8, 1), (kDLOpaqueHandle, 64, 1), (kDLInt, 128, 1),
              (kDLFloat, 64, 2), (kDLBool, 1, 1), (kDLComplex, 32, 1), (99, 32, 1), (kDLUInt, 0, 1)]
BAD_DEVICES = [7, 8, 9, 12, 99, -1]  # Vulkan, Metal, VPI, ExtDev, unknown

# What a refusal must name, by the field made bad.
REFUSALS = {
    "version": r"version",
    "dtype": r"dtype",
    "ndim": r"dimensions",
    "null_shape": r"NULL shape",
    "negative": r"negative extent",
    "huge": r"shape",
    "null_data": r"NULL data",
    "byte_offset": r"byte_offset",
    "misaligned": r"byte_offset.*aligned",
    "subbyte": r"sub-byte",
    "device": r"device type",
    "huge_stride": r"stride",
    "name": r"capsule named",
}


@dataclass
class Case:
    door: str                 # "capsule", "producer" or "kernel"
    kw: dict                  # Producer's arguments
    bad: str = ""             # the field made bad ("" for a valid tensor)
    shape: tuple = ()
    strides: tuple = None     # in elements, as given (None: NULL)
    npdtype: str = "f8"
    offset: int = 0           # bytes from data to the first element
    copy: object = None
    raises: bool = False      # the deleter raises
    notes: list = field(default_factory=list)
    others: list = field(default_factory=list)  # more producers of the same tensor the case made


def _span(shape, strides):
    """(lowest, highest) element offset a view reaches (0, 0 when empty)."""
    if 0 in shape:
        return 0, 0
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return lo, hi


def _c_strides(shape):
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _contiguous(shape, strides):
    if strides is None or 0 in shape:
        return True
    return all(n == 1 or s == c for n, s, c in zip(shape, strides, _c_strides(shape)))


def _self_overlaps(shape, strides, itemsize):
    """Whether two elements of the view share a byte (counted, not reasoned)."""
    if 0 in shape:
        return False
    starts = sorted(int(np.dot(idx, strides)) * itemsize for idx in np.ndindex(*shape))
    return any(b - a < itemsize for a, b in zip(starts, starts[1:]))


def _nested(shape, strides, itemsize):
    """Whether each axis's stride, by magnitude, steps over everything the
    smaller ones span: the sufficient rule Tack applies before letting a
    kernel write a strided view (runtime/strided.c).  Interleaved strides
    whose elements happen to be apart ((3, 2) with strides (2, 3)) fail it
    and are refused as well: a conservative refusal, never a wrong write."""
    reach = itemsize
    for n, s in sorted(((n, abs(s) * itemsize) for n, s in zip(shape, strides) if n > 1), key=lambda a: a[1]):
        if s < reach:
            return False
        reach += s * (n - 1)
    return True


@st.composite
def cases(draw):
    door = draw(st.sampled_from(["capsule", "producer", "kernel"]))
    versioned = draw(st.booleans())
    code, bits, npdtype = draw(st.sampled_from(DTYPES if door != "kernel" else KERNEL_DTYPES))
    itemsize = np.dtype(npdtype).itemsize
    ndim = draw(st.integers(1, 2)) if door == "kernel" else draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    layout = draw(st.sampled_from(["null", "c", "unit", "any"]))
    if layout == "null":
        strides = None
    elif layout == "c":
        strides = _c_strides(shape)
    elif layout == "unit":  # C order, any stride on the axes of extent 1
        strides = tuple(draw(st.integers(-9, 9)) if n == 1 else c for n, c in zip(shape, _c_strides(shape)))
    else:
        strides = tuple(draw(st.lists(st.integers(-6, 6), min_size=ndim, max_size=ndim)))
    flags = 0
    if versioned:
        flags = draw(st.sampled_from([0, DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED,
                                      DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED]))
    lo, hi = _span(shape, strides or _c_strides(shape))
    offset = draw(st.integers(0, 3)) * itemsize - lo * itemsize  # element 0 after the lowest one
    size = int(np.prod(shape, dtype=np.int64))
    values = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(-100, 100, hi - lo + 1)
    elems = (values % 2).astype("?") if npdtype == "?" else values.astype(npdtype)
    payload = b"\x5a" * (offset + lo * itemsize) + elems.tobytes() + b"\xa5" * draw(st.integers(0, 16))
    kw = dict(payload=payload, shape=shape, strides=strides, dtype=(code, bits, 1), byte_offset=offset,
              flags=flags, version=(1, draw(st.integers(0, 9))), versioned=versioned,
              raise_in_deleter=draw(st.booleans()))
    c = Case(door, kw, shape=shape, strides=strides, npdtype=npdtype, offset=offset,
             copy=draw(st.sampled_from([None, True, False])) if door != "kernel" else None,
             raises=kw["raise_in_deleter"])
    if door == "kernel" and not flags & DLPACK_FLAG_BITMASK_READ_ONLY and 0 not in shape:
        s = strides or _c_strides(shape)
        if _self_overlaps(shape, s, itemsize):
            c.notes.append("overlap")  # read fine, written refused
        elif not _nested(shape, s, itemsize):
            c.notes.append("interleaved")  # apart, but refused all the same (see _nested)
    if draw(st.integers(0, 2)) == 0:
        return c  # valid (strided or not)
    bad = draw(st.sampled_from(sorted(REFUSALS.keys())))
    if bad == "version" and versioned:
        kw["version"] = (draw(st.sampled_from([0, 2, 7, 2**32 - 1])), 0)
    elif bad == "dtype":
        kw["dtype"] = draw(st.sampled_from(BAD_DTYPES))
    elif bad == "ndim":
        kw["ndim"] = draw(st.sampled_from([-1, -2**31, 9, 40, 2**31 - 1]))
    elif bad == "null_shape" and ndim > 0:
        kw["null_shape"] = True
    elif bad == "negative" and ndim > 0:
        axis = draw(st.integers(0, ndim - 1))
        kw["shape"] = shape[:axis] + (draw(st.sampled_from([-1, -7, -2**63])),) + shape[axis + 1:]
    elif bad == "huge" and ndim > 0:
        # extents whose product, or whose bytes, pass 2**63 -- also beside an extent 0
        big = draw(st.sampled_from([2**62, 2**63 - 1, 2**61, 3 * 2**61]))
        huge = list(shape)
        huge[draw(st.integers(0, ndim - 1))] = big
        if ndim > 1 and draw(st.booleans()):
            huge[draw(st.integers(0, ndim - 1))] = big
        if int(np.prod([n or 1 for n in huge], dtype=object)) * itemsize < 2**63:
            return c  # it fits after all: a claim Tack cannot check, not a fuzz case
        kw["shape"] = tuple(huge)
        kw["strides"] = None
    elif bad == "null_data" and size > 0:
        kw["null_data"] = True
    elif bad == "byte_offset" and size > 0:
        kw["byte_offset"] = 2**64 - draw(st.integers(1, 4)) * itemsize
    elif bad == "misaligned" and size > 0 and np.dtype(npdtype).alignment > 1:
        kw["byte_offset"] = offset + draw(st.integers(1, np.dtype(npdtype).alignment - 1))
    elif bad == "subbyte" and versioned:
        kw["flags"] = flags | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED
    elif bad == "device":
        kw["device"] = (draw(st.sampled_from(BAD_DEVICES)), 0)
    elif bad == "huge_stride" and size > 0 and any(n > 2 for n in shape):
        axis = next(i for i, n in enumerate(shape) if n > 2)
        s = list(strides or _c_strides(shape))
        s[axis] = draw(st.sampled_from([2**62, -2**62, 2**63 - 1]))
        kw["strides"] = tuple(s)
    elif bad == "name" and door == "capsule":
        pass
    else:
        return c  # the field does not apply here: the valid case
    if bad != "huge_stride":
        kw["strides"] = None  # one bad field at a time: the strides are not
    c.bad = bad
    c.notes = []
    return c


@tack.kernel
def read1(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


@tack.kernel
def read2(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j]


@tack.kernel
def set1(x, v):
    for i in range(x.shape[0]):
        x[i] = v


@tack.kernel
def set2(x, v):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            x[i, j] = v


def _view(c, memory):
    """The elements as the producer describes them, in NumPy."""
    dt = np.dtype(c.npdtype)
    strides = c.strides if c.strides is not None else _c_strides(c.shape)
    return np.ndarray(c.shape, dt, buffer=memory, offset=c.offset,
                      strides=tuple(s * dt.itemsize for s in strides))


def _refused(do, kind=Exception, match=""):
    """The exception do() raises, without its traceback (whose frames would
    hold the producer and its arrays past the refcount checks: no gc.collect
    here, it costs more than the rest of an example)."""
    try:
        do()
    except kind as e:
        assert re.search(match, str(e)), str(e)
        e.__traceback__ = None
        return e
    raise AssertionError(f"{do} did not raise")


def _expect_refusal(c, exc):
    kinds = (ValueError, TypeError) if c.door == "kernel" else (ValueError, TypeError, BufferError)
    assert isinstance(exc, kinds), (c.bad, repr(exc))
    assert re.search(REFUSALS[c.bad], str(exc)), (c.bad, str(exc))
    if c.door == "kernel":
        assert "argument 'x' of" in str(exc) or "parameter 'x'" in str(exc), str(exc)


def _run(c, p):
    """One import through c.door; returns the capsule (capsule door) for the checks after."""
    if c.door == "capsule":
        cap = p.capsule()
        if c.bad == "name":
            cap = _renamed(cap)
        refs = sys.getrefcount(cap)
        _import(c, p, lambda: tack.from_dlpack(cap, copy=c.copy))
        consumed = capsule_name(cap).startswith("used_")
        assert consumed == (c.bad != "name"), capsule_name(cap)
        if consumed:
            before = p.deleted
            _refused(lambda: tack.from_dlpack(cap), ValueError, "already consumed")
            assert p.deleted == before
        assert sys.getrefcount(cap) == refs
        return cap
    refs = sys.getrefcount(p)
    if c.door == "producer":
        _import(c, p, lambda: tack.from_dlpack(p, copy=c.copy))
    else:
        _through_kernel(c, p)
    assert sys.getrefcount(p) == refs
    return None


def _renamed(cap):
    """The same tensor in a capsule with a name that is not DLPack's."""
    import ctypes as C

    C.pythonapi.PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
    C.pythonapi.PyCapsule_SetName(cap, b"not_a_dltensor")
    return cap


def _import(c, p, do):
    if c.bad:
        _expect_refusal(c, _refused(do))
        return
    a = do()
    got = a.numpy()
    assert a.shape == c.shape and got.dtype == np.dtype(c.npdtype)
    np.testing.assert_array_equal(got, _view(c, p.payload))
    readonly = bool(c.kw["flags"] & DLPACK_FLAG_BITMASK_READ_ONLY)
    copied = c.copy is True and not (c.kw["flags"] & DLPACK_FLAG_BITMASK_IS_COPIED and not readonly)
    assert a.writable == (copied or not readonly)
    if copied:
        assert p.deleted == 1  # the copy is made and the producer's tensor given back at once
        assert not a.strided  # gathered in C order
    else:
        assert p.deleted == 0  # shared: in use until the array goes
        assert a.strided == (a.size > 1 and not _contiguous(c.shape, c.strides))
        if a.size:
            assert a.ptr == p.base + c.offset
            _export_back(c, p, a)
    del a


def _export_back(c, p, a):
    """A shared import exported to NumPy: the producer's address and strides
    (axes of extent 1 aside), and a write through it lands where the view says."""
    back = np.from_dlpack(a)
    dt = np.dtype(c.npdtype)
    strides = c.strides if c.strides is not None else _c_strides(c.shape)
    assert back.ctypes.data == p.base + c.offset
    assert all(n == 1 or b == s * dt.itemsize for n, b, s in zip(c.shape, back.strides, strides)), back.strides
    if not a.writable:
        assert not back.flags.writeable
        return
    one = dt.type(1)
    back[...] = one
    expect = bytearray(p.payload)
    _view(c, expect)[...] = one
    assert p.memory() == bytes(expect), "the writes did not land where the view says"
    del back


def _through_kernel(c, p):
    read, write = (read1, set1) if len(c.shape) == 1 else (read2, set2)
    out = np.zeros(c.shape if c.bad not in ("huge", "negative") else 0, c.npdtype)
    if c.bad:
        _expect_refusal(c, _refused(lambda: read(p, out)))
        return
    read(p, out)
    np.testing.assert_array_equal(out, _view(c, p.payload))
    assert p.deleted == 1  # the call's argument is given back when the call returns
    one = np.dtype(c.npdtype).type(1)
    q = Producer(**c.kw)  # the same tensor again, to write
    c.others.append(q)
    try:
        if c.kw["flags"] & DLPACK_FLAG_BITMASK_READ_ONLY:
            _refused(lambda: write(q, one), ValueError, r"writes to parameter 'x'.*read-only")
            assert q.deleted == 1 and q.final == q.payload
            return
        if "overlap" in c.notes or "interleaved" in c.notes:
            _refused(lambda: write(q, one), ValueError, "share memory")
            assert q.deleted == 1 and q.final == q.payload
            return
        write(q, one)
        assert q.deleted == 1
        expect = bytearray(q.payload)
        _view(c, expect)[...] = one
        assert q.final == bytes(expect), "the writes did not land where the view says"
    finally:
        q.forget()


def _case(door, bad="", npdtype="f8", payload=b"", shape=(), copy=None, **kw):
    """A Case written by hand (the @example lines below)."""
    code, bits, _ = next(d for d in DTYPES if d[2] == npdtype)
    args = dict(payload=payload, shape=shape, strides=None, dtype=(code, bits, 1), byte_offset=0, flags=0,
                version=(1, 0), versioned=True, raise_in_deleter=False)
    args.update(kw)
    return Case(door, args, bad=bad, shape=shape, npdtype=npdtype, copy=copy, raises=args["raise_in_deleter"])


# The cases that once broke Tack.  A refusal of a tensor from a producer
# object lost its exception to the producer's capsule destructor (Python code,
# run as Tack dropped the capsule): SystemError.  An empty shape whose other
# extents overflow was accepted (its strides overflowed on export).  A
# misaligned byte_offset was refused without naming it.  A read-only tensor
# refused by a writing kernel lost its ValueError to the deleter (Python code).
@example(c=_case("producer", "version", payload=bytes(8), shape=(1,), version=(2, 0)))
@example(c=_case("producer", "misaligned", payload=bytes(16), shape=(1,), byte_offset=4))
@example(c=_case("capsule", "huge", shape=(2**62, 0, 2**62)))
@example(c=_case("capsule", "huge", npdtype="i2", shape=(2**62, 0), versioned=False))
@example(c=_case("kernel", payload=np.arange(3.0).tobytes(), shape=(3,), flags=DLPACK_FLAG_BITMASK_READ_ONLY,
                 raise_in_deleter=True))
@settings(max_examples=EXAMPLES, deadline=None, database=DirectoryBasedExampleDatabase(str(CORPUS)),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(c=cases())
def test_fuzzed_dlpack_import(c):
    seen = []  # (type, message) only: a traceback would keep the deleter's frame, and the producer, alive
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: seen.append((type(u.exc_value), str(u.exc_value)))
    p = Producer(**c.kw)
    try:
        cap = _run(c, p)
        # Never for a capsule Tack does not recognize, nor for a kernel
        # argument on a foreign device (refused before __dlpack__ is asked).
        want = 0 if c.bad == "name" or (c.door, c.bad) == ("kernel", "device") else 1
        assert p.deleted == want, (c.door, c.bad, p.deleted)
        del cap
        assert p.deleted == want  # the capsule's destructor does not call it again
    finally:
        sys.unraisablehook = hook
        p.forget()
    assert all(t is RuntimeError and "on purpose" in m for t, m in seen), seen
    calls = p.deleted + sum(q.deleted for q in c.others)
    assert len(seen) == (calls if c.raises else 0), (len(seen), calls)
