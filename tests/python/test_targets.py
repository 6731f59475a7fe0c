"""Targets are chosen by capability, from one list.

The compiler keeps one table of compile targets (src/compiler/target.c), each
row a descriptor of what the target can do (src/compiler/target.h); the
passes ask the descriptor, never the target's name.  These tests hold the
two rules: no source compares a target's name to a literal, and every other
place that lists the targets reads the table (tests/c/test_targets.c checks
the descriptors' values).
"""

import re
from pathlib import Path

import numpy as np
import pytest

import tack
from tack import _core

ROOT = Path(__file__).resolve().parents[2]

# Every name a target or a device family goes by; a comparison with one of them is a name test.
NAMES = ("c", "cuda", "hip", "metal", "msl", "opencl", "level_zero", "cpu", "gpu")
_LITERAL = re.compile(r"\bstrn?cmp\s*\([^;]*\"(%s)\"" % "|".join(NAMES))
_FIELD = re.compile(r"\bstrn?cmp\s*\([^;]*\b(?:dialect|target|D|T)\s*->\s*name\b")
_GONE = re.compile(r"\bpfor_as_function\b")


def name_tests(text):
    """The lines of C source `text` that compare a target's name (1-based numbers)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if _LITERAL.search(line) or _FIELD.search(line) or _GONE.search(line):
            out.append((n, line.strip()))
    return out


def test_the_scan_finds_a_name_test():
    # the scan itself: each form that was in the passes before the descriptor
    assert name_tests('    if (K && !strcmp(C->dialect->name, "c")) each_pfor(C, K, K->body, fastdiv);')
    assert name_tests('if (!C->dialect || strcmp(C->dialect->name, "c") || !C->nspecs) return;')
    assert name_tests('if (strcmp(T->name, "metal") == 0) refuse(C);')
    assert name_tests('int gpu = C->dialect && C->dialect->pfor_as_function == 0;')
    assert not name_tests('if (C->target->loops == TK_LOOPS_CHUNKED) each_pfor(C, K, K->body, fastdiv);')
    assert not name_tests('if (!strcmp(n->name, "shape")) ERR(n, "...");')


def test_no_source_compares_a_target_name():
    # the table (target.c) is the one place that looks a name up
    found = []
    for path in sorted((ROOT / "src").rglob("*.[ch]")):
        if path.relative_to(ROOT).as_posix() == "src/compiler/target.c":
            continue
        for n, line in name_tests(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}:{n}: {line}")
    assert not found, "ask the target's descriptor (src/compiler/target.h) instead:\n" + "\n".join(found)


def test_the_table_lists_the_targets_the_cpu_first():
    targets = _core._targets()
    assert targets[0] == "c"
    assert set(targets) == {"c", "cuda", "hip", "metal", "opencl"}
    assert len(set(targets)) == len(targets)


def test_the_unsupported_message_lists_the_table():
    @tack.kernel
    def fill(x):
        for i in range(x.shape[0]):
            x[i] = 1.0

    x = np.zeros(4, np.float32)
    with pytest.raises(Exception, match="compile target 'rocm' is not supported") as info:
        fill.generated_source(x, target="rocm")
    listed = re.findall(r'"([a-z_]+)"', str(info.value).split("(", 1)[1])
    assert tuple(listed) == _core._targets()


def test_every_target_in_the_table_compiles():
    @tack.kernel
    def fill(x):
        for i in range(x.shape[0]):
            x[i] = 1.0

    x = np.zeros(4, np.float32)
    for target in _core._targets():
        src = fill.generated_source(x, target=target)
        assert f"dialect {target} */" in src.splitlines()[0], target


def test_every_backend_names_a_target_of_the_table():
    # a backend's vtable names the dialect it builds (rt_backend.dialect)
    found = {}
    for path in sorted((ROOT / "src" / "backends").rglob("*.c")):
        for m in re.finditer(r"\.dialect\s*=\s*\"([a-z_]+)\"", path.read_text()):
            found[path.name] = m.group(1)
    assert len(found) >= 6, found
    assert set(found.values()) <= set(_core._targets()), found
