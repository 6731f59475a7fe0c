"""The type stubs (python/tack/__init__.pyi, _core.pyi, py.typed) against
the runtime, and mypy against them.

The stubs are what an editor completes ``tack.`` from and what a type
checker holds a call to, so they must be the API: every public name, each
signature with the runtime's parameter names and kinds (positional-only,
keyword-only, *args), each public class with the runtime's public methods
and properties.  These are read from the stub files' syntax trees and
compared with ``inspect`` on the objects ``import tack`` gives (where
inspect can read a signature: C functions without one are skipped).  Then
mypy checks two files of tests/python/typing_cases: correct uses (no error)
and wrong ones (each marked line flagged with its code, nothing else).
mypy keeps its cache in build/mypy: about 1 s warm, 10-15 s the first time
in a checkout.
"""

import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tack

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "tack"
CASES = Path(__file__).resolve().parent / "typing_cases"


def _stub(name):
    """{name: node} of a stub file's top level: functions (a list, for the
    overloads), classes, annotated and plain assignments, re-exports."""
    tree = ast.parse((PACKAGE / name).read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.asname == a.name:  # "import x as x": a stub's re-export; other imports are its own
                    out[a.asname] = ("import", node.module, a.name)
    return out


INIT = _stub("__init__.pyi")
CORE = _stub("_core.pyi")


def _members(cls_node):
    out = {}
    for node in cls_node.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _stub_params(fn, method):
    """[(name, kind, has default)] of a stub function, as inspect names the kinds."""
    a = fn.args
    P = inspect.Parameter
    out = []
    positional = [(p, P.POSITIONAL_ONLY) for p in a.posonlyargs] + [(p, P.POSITIONAL_OR_KEYWORD) for p in a.args]
    first_default = len(positional) - len(a.defaults)
    for i, (p, kind) in enumerate(positional):
        out.append((p.arg, kind, i >= first_default))
    if a.vararg:
        out.append((a.vararg.arg, P.VAR_POSITIONAL, False))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, P.KEYWORD_ONLY, d is not None))
    if a.kwarg:
        out.append((a.kwarg.arg, P.VAR_KEYWORD, False))
    decorators = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
    if method and "staticmethod" not in decorators:
        out = out[1:]  # self or cls
    return out


def _runtime_params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # a C function without a text signature
    return [(p.name, p.kind, p.default is not p.empty) for p in sig.parameters.values()]


def _show(params):
    return "(" + ", ".join(f"{p[0]}: {p[1].description}" + (" = ..." if len(p) > 2 and p[2] else "")
                           for p in params) + ")"


def _compare(where, stub_fns, runtime, method=False):
    got = _runtime_params(runtime)
    if got is None:
        return []
    if method:
        got = got[1:]  # self or cls
    problems = []
    overloaded = len(stub_fns) > 1
    for fn in stub_fns:
        want = _stub_params(fn, method)
        if overloaded:  # the overloads narrow the types and which defaults apply, not the names or kinds
            want = [(n, k) for n, k, _ in want]
            have = [(n, k) for n, k, _ in got]
            if want != have and not _narrowed(want, have):
                problems.append(f"{where}: an overload has {_show(want)}, the runtime {_show(have)}")
        elif want != got:
            problems.append(f"{where}: the stub has {_show(want)}, the runtime {_show(got)}")
    return problems


def _narrowed(want, have):
    """An overload that leaves out trailing optional parameters (sort(a) and
    sort(a, values)) still names the runtime's in order."""
    return len(want) < len(have) and have[:len(want)] == want


def _public(cls):
    return {n for n in vars(cls) if not n.startswith("_") or n in ("__call__", "__enter__", "__exit__")}


def test_py_typed_is_there():
    assert (PACKAGE / "py.typed").is_file()


def test_every_public_name_is_in_the_stubs():
    missing = [n for n in tack.__all__ if n not in INIT]
    assert not missing, f"python/tack/__init__.pyi lacks: {', '.join(missing)}"
    extra = [n for n, v in INIT.items() if not n.startswith("_") and n not in tack.__all__
             and n not in ("config", "random")]
    assert not extra, f"python/tack/__init__.pyi names what tack.__all__ does not: {', '.join(extra)}"
    # the names imported from _core are there too
    for n, v in INIT.items():
        if isinstance(v, tuple) and v[1] == "_core":
            assert v[2] in CORE, f"_core.pyi lacks {v[2]}, which __init__.pyi imports"


def _stub_of(name):
    node = INIT[name]
    if isinstance(node, tuple):  # imported from _core
        return CORE[node[2]]
    return node


def test_every_function_has_the_runtimes_signature():
    problems = []
    checked = 0
    for name in tack.__all__:
        node = _stub_of(name)
        if isinstance(node, list):
            before = len(problems)
            problems += _compare(f"tack.{name}", node, getattr(tack, name))
            checked += _runtime_params(getattr(tack, name)) is not None and len(problems) == before
    assert not problems, "\n".join(problems)
    assert checked > 100  # the intrinsics, the array functions, the algorithms ...


def test_every_class_has_the_runtimes_methods():
    problems = []
    classes = 0
    for name in tack.__all__:
        node = _stub_of(name)
        obj = getattr(tack, name)
        if not isinstance(node, ast.ClassDef) or not inspect.isclass(obj):
            continue
        classes += 1
        members = _members(node)
        if "__init__" in members and obj.__init__ is not object.__init__:
            problems += _compare(f"tack.{name}()", members["__init__"], obj.__init__, method=True)
        for m in sorted(_public(obj)):
            if m not in members:
                problems.append(f"tack.{name}.{m} is not in the stub")
                continue
            value = inspect.getattr_static(obj, m)
            if isinstance(members[m], list) and (inspect.isfunction(value) or isinstance(value, classmethod)):
                fn = value.__func__ if isinstance(value, classmethod) else value
                problems += _compare(f"tack.{name}.{m}", members[m], fn, method=True)
    assert not problems, "\n".join(problems)
    assert classes >= 18


def _mypy(*files):
    pytest.importorskip("mypy", reason="mypy is in the dev dependency group: uv sync")
    env = dict(os.environ, MYPYPATH=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / "build" / "mypy"),
                          "--no-error-summary", "--hide-error-context", "--no-pretty", "--show-error-codes",
                          "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}", *map(str, files)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode in (0, 1), out.stdout + out.stderr  # 2: mypy itself failed
    return [line for line in out.stdout.splitlines() if ": error: " in line]


def test_mypy_accepts_the_correct_uses_and_flags_each_wrong_one():
    errors = _mypy(CASES / "correct.py", CASES / "wrong.py")
    assert not [e for e in errors if "correct.py" in e], "\n".join(errors)
    found = {}
    for e in errors:
        m = re.match(r".*wrong\.py:(\d+): error: .*\[([a-z-]+)\]$", e)
        assert m, e
        found.setdefault(int(m.group(1)), set()).add(m.group(2))
    marked = {}
    for n, line in enumerate((CASES / "wrong.py").read_text().splitlines(), 1):
        m = re.search(r"# E: ([a-z-]+)$", line)
        if m:
            marked[n] = {m.group(1)}
    assert len(marked) >= 15
    assert found == marked, "\n".join(errors)
