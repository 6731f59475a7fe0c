"""A pytest plugin: every kernel the language tests call is checked for races
in compound assignments, in its IR and in the source of every dialect.

Loaded with ``-p _race_capture`` (tests/python on sys.path) by
test_race_verifier.py, which runs language test files in a subprocess with
it.  It wraps ``tack.kernel``: after each call (on the CPU, as the test makes
it) the same arguments ask for the kernel's IR and its C, CUDA and OpenCL
source.  Compiling runs the IR verifier after every pass, and the verifier
refuses a read-modify-write store in parallel code that is not on the
iteration's own element ("internal compiler error ... non-atomic
read-modify-write"); every such refusal is recorded.  From the IR dump it
also counts what was checked: compound-assignment stores ("store.rmw") in
parallel loops and in functions lowered for them, and atomics -- and checks
that each dialect's source spells an atomic wherever the IR has one.  The
summary goes to the JSON file named by TACK_RACE_CAPTURE; the language tests'
own outcome does not matter here.  (_kernel_wrap.py wraps the kernels.)
"""

import hashlib
import os
import re

import _kernel_wrap

_OUT = os.environ.get("TACK_RACE_CAPTURE")
_TARGETS = ("c", "cuda", "opencl")
_seen = set()
_summary = {"kernels": 0, "sources": 0, "rmw_parallel": 0, "atomics": 0, "races": [], "missing_atomics": [],
            "other_errors": 0}


def _parallel_rmw(ir):
    """Compound-assignment stores in parallel code: in a pfor body, or in a
    function lowered for a parallel loop (its header says 'parallel')."""
    n = 0
    par_func = False
    pfor_indent = None
    for line in ir.splitlines():
        if line.startswith(("kernel ", "func ")):
            par_func = line.startswith("func ") and "  parallel" in line
            pfor_indent = None
            continue
        indent = len(line) - len(line.lstrip())
        if pfor_indent is not None and indent <= pfor_indent:
            pfor_indent = None
        if line.lstrip().startswith("pfor "):
            pfor_indent = indent
        elif line.lstrip().startswith("store.rmw ") and (par_func or pfor_indent is not None):
            n += 1
    return n


def _capture(k, args, kwargs):
    name = getattr(k, "__name__", "?")
    try:
        ir = k.ir(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        if "internal compiler error" in str(e):
            _summary["races"].append({"kernel": name, "target": "ir", "error": str(e)[:2000]})
        else:
            _summary["other_errors"] += 1  # a call the test expects to fail
        return
    key = hashlib.sha256(ir.encode()).hexdigest()
    if key in _seen:
        return
    _seen.add(key)
    _summary["kernels"] += 1
    _summary["rmw_parallel"] += _parallel_rmw(ir)
    natomic = len(re.findall(r"\(atomic_(?:add|sub|min|max):", ir))
    _summary["atomics"] += natomic
    for target in _TARGETS:
        try:
            src = k.generated_source(*args, target=target, **kwargs)
        except Exception as e:  # noqa: BLE001
            if "internal compiler error" in str(e):
                _summary["races"].append({"kernel": name, "target": target, "error": str(e)[:2000]})
            else:
                _summary["other_errors"] += 1
            continue
        _summary["sources"] += 1
        if natomic and "tk_atomic_" not in src:
            _summary["missing_atomics"].append({"kernel": name, "target": target})


_kernel_wrap.wrap_kernels(_kernel_wrap.after_each_call(_capture))
_kernel_wrap.write_summary_at_exit(_OUT, _summary)
