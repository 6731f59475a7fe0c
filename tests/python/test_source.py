"""tack._source.getsourcelines: the kernel's lines, as inspect.getsourcelines
gives them, without tokenize's start-up cost (python/tack/_source.py)."""
import functools
import os
import importlib.util
import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from tack import _source

MODULE = '''\
import functools
import os
import tack


def plain(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel(
    checks=False,
)
def multi_line_decorator(x):
    for i in range(x.shape[0]):
        x[i] = 1
# a comment at column 0 after the body


def hanging(a,
b):
    return a + b


def low_comment(x):
    t = 1
# column-0 comment inside the body
    return t


def string_at_column_0():
    s = """
not code
"""
    return s


def continued():
    y = (1 +
2)
    return y


def backslash():
    y = 1 + \\
2
    return y


class Holder:
    def method(self, x):
        return x

    @staticmethod
    def static(x):
        return x


def outer():
    def inner(x):
        return x + 1
    return inner


lam = lambda x: x + 1  # noqa: E731


@functools.wraps(plain)
def wrapped(*a):
    return plain(*a)


async def coro():
    return 1


def last_one(x):
    return x'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "srcmod.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("srcmod", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _functions(m):
    fns = [m.plain, m.multi_line_decorator.__wrapped__, m.hanging, m.low_comment, m.string_at_column_0, m.continued, m.backslash, m.Holder.method,
           m.Holder.static, m.outer(), m.outer, m.lam, m.wrapped, m.coro, m.last_one]
    return fns


def _trim(lines):
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines = lines[:-1]
    return lines


def test_same_as_inspect(mod):
    for fn in _functions(mod):
        want_lines, want_start = inspect.getsourcelines(fn)
        got_lines, got_start = _source.getsourcelines(fn)
        assert got_start == want_start, fn
        assert _trim(list(got_lines)) == _trim(list(want_lines)), fn


def test_fast_path_taken_where_it_can_be(mod):
    for fn in (mod.plain, mod.multi_line_decorator.__wrapped__, mod.hanging, mod.low_comment, mod.Holder.method, mod.outer(), mod.last_one,
               mod.string_at_column_0, mod.continued, mod.backslash):
        assert _source._fast(fn) is not None, fn
    for fn in (mod.lam, mod.wrapped, mod.coro, len, functools.partial(mod.plain, 1)):
        assert _source._fast(fn) is None, fn


def test_no_source_is_a_clear_error():
    ns = {}
    exec("def f(x):\n    for i in range(x.shape[0]):\n        x[i] = 1\n", ns)
    with pytest.raises(TypeError, match="source code is not available"):
        tack.kernel(ns["f"])(np.zeros(3))


@pytest.mark.parametrize("jit", [True, False])
def test_no_source_is_the_same_error_for_kernels_a_rewrite_reads(jit):
    # a kernel given a HashGrid, a Bvh or a struct array is rewritten from its source first; there
    # the missing source was inspect's bare OSError('could not get source code')
    ns = {"tack": tack}
    exec("def near(x, grid, out):\n"
         "    for i in range(x.shape[0]):\n"
         "        for j in grid.neighbors((x[i, 0], x[i, 1]), 0.5):\n"
         "            out[i] += 1\n"
         "def boxes(lo, hi, bvh, out):\n"
         "    for i in range(lo.shape[0]):\n"
         "        for k in bvh.query_box((lo[i, 0], lo[i, 1], lo[i, 2]), (hi[i, 0], hi[i, 1], hi[i, 2])):\n"
         "            out[i] += 1\n"
         "def masses(p, out):\n"
         "    for i in range(p.shape[0]):\n"
         "        out[i] = p[i].m\n", ns)

    @tack.struct
    class Body:
        m: tack.f64

    x = np.zeros((3, 2))
    lo = np.zeros((3, 3))
    calls = [(ns["near"], (x, tack.HashGrid(x, 0.5), np.zeros(3, np.int64))),
             (ns["boxes"], (lo, lo + 1, tack.Bvh(lo, lo + 1), np.zeros(3, np.int64))),
             (ns["masses"], (np.zeros(3, Body.dtype), np.zeros(3)))]
    for fn, args in calls:
        with pytest.raises(TypeError, match=f"cannot compile '{fn.__name__}': its source code is not available"):
            tack.kernel(fn, jit=jit)(*args)


def test_kernels_from_the_module_compile(mod):
    x = np.zeros(4, np.float32)
    kern = tack.kernel(mod.plain)
    kern(2.0, np.ones(4, np.float32), x)
    assert x.tolist() == [2.0] * 4
    y = np.zeros(3, np.int64)
    mod.multi_line_decorator(y)
    assert y.tolist() == [1, 1, 1]


def test_first_call_in_a_new_process_does_not_tokenize(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent('''
        import sys
        import numpy as np
        import tack

        @tack.kernel
        def fill(x):
            for i in range(x.shape[0]):
                x[i] = i

        x = np.zeros(5)
        fill(x)
        assert x.tolist() == [0, 1, 2, 3, 4]
        import tokenize
        print(tokenize._compile.cache_info().currsize if hasattr(tokenize._compile, "cache_info") else 0)
    '''))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def _kernel_file(path, name, factor):
    path.write_text(textwrap.dedent(f'''
        import tack

        @tack.kernel
        def {name}(x):
            for i in range(x.shape[0]):
                x[i] = {factor} * x[i]
    '''))


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
def test_running_out_of_file_descriptors_names_the_real_cause(tmp_path):
    # A kernel whose file cannot be opened because the process has no file
    # descriptors left is not a kernel "without source": the OSError (EMFILE)
    # comes out, naming the function and the file.
    _kernel_file(tmp_path / "warm.py", "twice", 2)
    _kernel_file(tmp_path / "cold.py", "thrice", 3)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent('''
        import errno, os, resource, sys
        import numpy as np
        import tack
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import warm, cold
        warm.twice(np.ones(3))  # every lazy import of a first compile is done
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        try:
            cold.thrice(np.ones(3))
        except OSError as e:
            print("OSError", e.errno == errno.EMFILE, e)
        except BaseException as e:
            print(type(e).__name__, e)
        else:
            print("ran")
    '''))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TACK_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    assert out.startswith("OSError True"), out
    assert "cannot read the source of thrice()" in out and "cold.py" in out and "not available" not in out


def test_a_function_without_a_file_still_says_no_source():
    ns = {}
    exec("import tack\n@tack.kernel\ndef k(x):\n    x[0] = 1\n", ns)
    with pytest.raises(TypeError, match="source code is not available"):
        ns["k"](np.zeros(1))


def _cell(number, text):
    """A function compiled as IPython's terminal compiles cell `number`:
    under "<ipython-input-N-hash>", its text in linecache (no IPython here)."""
    import linecache

    name = f"<ipython-input-{number}-0123456789ab>"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    ns = {"tack": tack}
    exec(compile(text, name, "exec"), ns)
    return name, ns


def test_a_kernel_from_an_ipython_cell_names_the_cell():
    # the errors say "Cell In[N]" as IPython's tracebacks do, and filename
    # stays the name linecache has the text under (tests/python/test_notebook.py
    # runs the same through a real Jupyter kernel)
    name, ns = _cell(41, "@tack.kernel\ndef bad(x):\n    for i in range(x.shape[0]):\n        x[i] = nowhere\n")
    with pytest.raises(tack.CompileError) as e:
        ns["bad"](np.zeros(3))
    assert str(e.value) == "name 'nowhere' is not defined (Cell In[41], line 4)"
    assert e.value.filename == name and e.value.text.strip() == "x[i] = nowhere"
    name, ns = _cell(42, "@tack.kernel\ndef far(x):\n    for i in range(x.shape[0]):\n        x[i + 5] = 1.0\n")
    with pytest.raises(IndexError, match=r"kernel far, Cell In\[42\]:4\)"):
        ns["far"](np.zeros(3))
    assert "Cell In[42]" in ns["far"].generated_source(np.zeros(3))
    # a type error found by the compiler core comes back with the module's file, the cell's
    # name: filename and the source line are IPython's again
    name, ns = _cell(43, "@tack.kernel\ndef typed(x):\n    for i in range(x.shape[0]):\n        x[i] = tack.dot(x[i], 2.0)\n")
    with pytest.raises(tack.CompileError) as e:
        ns["typed"](np.zeros(3))
    assert str(e.value).endswith("(Cell In[43], line 4)") and str(e.value).startswith("dot() takes two vectors")
    assert e.value.filename == name and e.value.text.strip() == "x[i] = tack.dot(x[i], 2.0)"
    assert _source.cell_name("plain.py") is None and _source.cell_name(None) is None


def test_a_kernel_under_time_magic_says_why_it_has_no_source():
    ns = {"tack": tack}
    exec(compile("@tack.kernel\ndef timed(x):\n    x[0] = 1.0\n", "<timed exec>", "exec"), ns)
    with pytest.raises(TypeError, match=r"cannot compile 'timed'.*runs under %%time.*a cell of its own"):
        ns["timed"](np.zeros(2))
