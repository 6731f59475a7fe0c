"""What debug mode learns from the compiler before a kernel runs as Python.

Debug mode (tack._debug) is the same language as a compiled kernel because it
asks the compiler first: ``Kernel._debug_facts`` runs the front end, the type
checks, the lowering and the race check for the call's signature and returns
the kernel's IR dump.  This module reads that dump -- the types the compiler
gave each local, the parameters the kernel writes, the lines whose ``+=`` is
atomic or privatized, the types chosen for ``and``/``or`` and ``if``-``else``
expressions, the same for each build of each ``@tack.func`` -- and checks a
Python int argument against the range the compiled call accepts, with the
compiled call's words.  It is text in, facts out: nothing here runs kernel
code, so it is kept apart from the interpreter in tack._debug.
"""

from __future__ import annotations

import re

import numpy as np

_I64 = np.dtype(np.int64)
_U64 = np.dtype(np.uint64)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)
_C64 = np.dtype(np.complex64)
_C128 = np.dtype(np.complex128)


_BREAKPOINT = re.compile(r"^(\s*)breakpoint\(\)(\s*(#.*)?\n?)$")


def without_breakpoints(lines):
    """A kernel's source lines with each `breakpoint()` statement made
    `pass` (the same lines and columns), for the compiler's check of a
    kernel run as Python: stopping in pdb is what debug mode is for."""
    out = []
    for line in lines:
        m = _BREAKPOINT.match(line)
        out.append(m.group(1) + "pass        " + m.group(2) if m else line)
    return out


def check(kernel, args, kwargs):
    """The IR of `kernel` (the compiler's checker of a kernel run as Python)
    for these arguments, the ranges its Python int parameters must fit and
    the pairs of array parameters that must not share memory (per parameter,
    None or its (same, part) masks, as tack_launch reads them): its
    CompileError or RaceWarning as a call gives it."""
    import tack

    flag = tack._debug_checking
    flag.active = True
    try:
        return kernel._debug_facts(*args, **kwargs)
    finally:
        flag.active = False


_LOCAL_TYPES = {"bool": _BOOL, "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
                "i64": _I64, "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
                "u32": np.dtype(np.uint32), "u64": _U64, "f32": _F32, "f64": _F64,
                "complex64": _C64, "complex128": _C128}
_WEAK_TYPES = ("int (Python)", "float (Python)", "bool (Python)", "complex (Python)")
_LOCAL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:'\d+)?:(int \(Python\)|float \(Python\)|"
                    r"bool \(Python\)|complex \(Python\)|[A-Za-z0-9_\[\], -]+?)(?=\s+[A-Za-z_][\w']*:|$)")
_HEAD = re.compile(r"^(kernel|func) ([A-Za-z_][A-Za-z0-9_]*)#\d+\(")


def _head_params(line):
    """The text between the parentheses of a build's header line."""
    start = line.index("(") + 1
    depth = 1
    for i in range(start, len(line)):
        depth += {"(": 1, ")": -1}.get(line[i], 0)
        if depth == 0:
            return line[start:i]
    return line[start:]


def _section_facts(lines):
    """{local: dtype} for the locals of one kernel or @tack.func build with one
    fixed scalar type, and its and/or and `if`-`else` types."""
    types, weak, choices = {}, set(), {}
    for line in lines[1:3]:
        st = line.strip()
        if st.startswith("locals:"):
            for m in _LOCAL.finditer(st[len("locals:"):].strip()):
                name, t = m.group(1), m.group(2).strip()
                # a fixed dtype, or one weak type ("int (Python)"): a local is a value known at run
                # time, whatever was assigned to it (`v = 100; v / 3` divides in the default float)
                dt = _LOCAL_TYPES.get(t) or (t if t in ("int (Python)", "float (Python)") else None)
                if dt is None or (name in types and types[name] != dt):
                    weak.add(name)
                else:
                    types[name] = dt
        elif st.startswith("choices:"):
            for item in st[len("choices:"):].split(";"):
                m = re.match(r"\s*(\d+):(\d+)/(\d+) (.+?)\s*$", item)
                if m:
                    t = m.group(4)
                    choices[(int(m.group(1)), int(m.group(2)), int(m.group(3)))] = \
                        _LOCAL_TYPES.get(t) or (t if t in _WEAK_TYPES else None)
    for name in weak:
        types.pop(name, None)
    return types, {k: v for k, v in choices.items() if v is not None}


def _split_params(text):
    """The types of `a: array[f32, 1-D], s: f32` in order."""
    return [t.strip() for t in re.split(r"(?:^|, )[A-Za-z_][A-Za-z0-9_]*: ", text)[1:]]


def ir_facts(ir):
    """From a kernel's IR dump: {local name: dtype} for the kernel's locals
    that have one fixed scalar type, the parameters it writes, the lines
    whose `a[k] += v` is atomic (or privatized), the types of its and/or and
    `if`-`else` expressions, and the same for each build of each @tack.func
    it calls: {name: [(parameter types, local types, choices, atomic lines, return dtype or None,
    the first and last source line of its statements or None)]}: two funcs of one name (a
    closure made twice, or the same name in two modules) each have builds under it."""
    lines = ir.splitlines()
    head = lines[0] if lines else ""
    written = head.split("writes:", 1)[1].split() if "writes:" in head else []
    starts = [i for i, line in enumerate(lines) if _HEAD.match(line)] + [len(lines)]
    types, choices = _section_facts(lines[: starts[1]] if len(starts) > 1 else lines)
    funcs = {}
    for a, b in zip(starts[1:-1], starts[2:]):
        m = _HEAD.match(lines[a])
        if m.group(1) != "func":
            continue
        ft, fc = _section_facts(lines[a:b])
        ret = re.search(r"\) -> ([A-Za-z0-9_]+)(?:\s|$)", lines[a])  # a fixed scalar type: weak_locals.c may make it f32
        body = [int(n) for line in lines[a + 1:b] if line != "races:" for n in re.findall(r"; line (\d+)$", line)]
        funcs.setdefault(m.group(2), []).append((tuple(_split_params(_head_params(lines[a]))), ft, fc,
                                                 _atomic_lines(lines[a + 1:b]),
                                                 _LOCAL_TYPES.get(ret.group(1)) if ret else None,
                                                 (min(body), max(body)) if body else None))
    return types, written, _atomic_lines(lines[1:]), choices, funcs


def _atomic_lines(lines):
    """The lines of one build's section whose `a[k] += v` is atomic (or privatized)."""
    atomic = set()
    for line in lines:
        if line.startswith("func ") or line == "races:":
            break
        # an atomic, a private sum, or an atomic on the iteration's own element made a plain update
        # (privatize.c: `store.rmw a[i] = (add:T (load a i) v)`, v converted to the element's type T
        # first, as the atomic was; a compound store lowering gives is cast to T after the operation)
        if "atomic_" in line or re.search(r"\b_sum\d+'\d+ = ", line) or \
                re.match(r"\s*store\.rmw .*?\](?:\.c\d+)? = \((?:add|sub):", line):
            m = re.search(r"; line (\d+)", line)
            if m:
                atomic.add(int(m.group(1)))
    return frozenset(atomic)


_U64_ONLY = ("Python integer {v} is out of bounds for {t} (argument '{p}' of kernel '{k}'): only a uint64 holds "
             "it, so it is accepted only where every use of the argument converts it to uint64 (NumPy 2 raises "
             "OverflowError for it in arithmetic with a signed type)")
_OUT_OF_BOUNDS = ("Python integer {v} is out of bounds for {t} (argument '{p}' of kernel '{k}', which meets {t} "
                  "values; NumPy 2 raises the same in arithmetic)")


def check_int(kernel_name, param, v, rng):
    """A Python int argument checked against the range the compiled call
    checks (runtime/program.c, tack_launch): OverflowError with its words."""
    if rng is None or type(v) is not int:
        return
    lo, hi, t = rng
    if v >= 1 << 63:  # carried as a u64: only where every use converts it to u64 (lo == hi == 0)
        if lo > hi:
            raise OverflowError(_U64_ONLY.format(v=v, t=t, p=param, k=kernel_name))
        return
    if not lo <= v <= hi:
        raise OverflowError(_OUT_OF_BOUNDS.format(v=v, t=t, p=param, k=kernel_name))
