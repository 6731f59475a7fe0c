"""A bounded fuzz of the front end and the emitters (issue: nothing from the
user's Python reaches generated source unescaped, no input crashes).

Hypothesis writes kernel modules with hostile names, file paths and strings
and random expression trees over arrays of random shapes; each is compiled
and run, and must give NumPy's answer and print exactly its strings, or fail
with a CompileError for what the language refuses (a NUL in a string).  The
cases that once broke Tack are kept as explicit examples (the corpus, run
first every time), and any failing example hypothesis finds is saved in
tests/fuzz-corpus/ and replayed first on the next run.  The budget is fixed (FUZZ_EXAMPLES, default 40)
so CI time stays bounded."""

import importlib.util
import itertools
import keyword
import os
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

import tack

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "fuzz-corpus"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
_counter = itertools.count()

identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s not in ("x", "y", "out", "i", "tack", "np"))
path_parts = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
                     min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))
strings = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=40)


@st.composite
def expressions(draw, depth=0):
    """(source, function of (x, y) -> value) over float64 arrays x[i], y[i]."""
    if depth > 3 or draw(st.booleans()):
        leaf = draw(st.sampled_from(["x[i]", "y[i]", "c"]))
        if leaf == "c":
            c = draw(st.floats(-100, 100, allow_nan=False).map(lambda v: round(v, 3)))
            return repr(c), (lambda x, y, c=c: np.float64(c))
        return leaf, (lambda x, y, leaf=leaf: x if leaf == "x[i]" else y)
    op = draw(st.sampled_from(["+", "-", "*", "min", "max", "abs"]))
    a_src, a_fn = draw(expressions(depth + 1))
    if op == "abs":
        return f"abs({a_src})", (lambda x, y: np.abs(a_fn(x, y)))
    b_src, b_fn = draw(expressions(depth + 1))
    if op in ("min", "max"):
        f = np.minimum if op == "min" else np.maximum
        return f"{op}({a_src}, {b_src})", (lambda x, y: f(a_fn(x, y), b_fn(x, y)))
    f = {"+": np.add, "-": np.subtract, "*": np.multiply}[op]
    return f"({a_src} {op} {b_src})", (lambda x, y: f(a_fn(x, y), b_fn(x, y)))


@settings(max_examples=EXAMPLES, deadline=None, database=DirectoryBasedExampleDatabase(str(CORPUS)),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example(name="evil", dirs=["dir *", " nested", "a*"], text='*/ int pwn; /* ??/ " \\ \x01 é',
         expr=("(x[i] + y[i])", lambda x, y: x + y), n=3)
@example(name="_", dirs=["*x"], text="", expr=("abs(-2.5)", lambda x, y: np.float64(2.5)), n=0)
@example(name="nul", dirs=["d"], text="a\x00b", expr=("x[i]", lambda x, y: x), n=2)
@given(name=identifiers, dirs=st.lists(path_parts, min_size=1, max_size=3), text=strings,
       expr=expressions(), n=st.integers(0, 7))
def test_fuzzed_kernel(tmp_path_factory, capfd, name, dirs, text, expr, n):
    src, fn = expr
    where = tmp_path_factory.mktemp("fuzz")
    for part in dirs:
        where = where / part
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a name this file system refuses; not Tack's input
    path = where / f"fuzz_{next(_counter)}.py"
    path.write_text(
        "import tack\n"
        f"def {name}(x, y, out):\n"
        "    for i in range(out.shape[0]):\n"
        f"        out[i] = {src}\n"
        f"    print({text!r})\n"
        f"{name}.__name__ = {name}.__qualname__ = {name + ' */ /* ' + text!r}\n"
        f"k = tack.kernel({name})\n",
        encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"fuzz_mod_{next(_counter)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    out = np.zeros(n)
    if "\x00" in text:
        with pytest.raises(tack.CompileError, match="NUL"):
            mod.k(x, y, out)
        return
    capfd.readouterr()
    mod.k(x, y, out)
    assert capfd.readouterr().out == text + "\n"
    np.testing.assert_allclose(out, fn(x, y) * np.ones(n), rtol=1e-12, atol=1e-9)
