"""Nothing from the user's Python reaches generated source unescaped.

A kernel's name, its file's path and the strings of print() and assert are
the user's text; a name or path holding "*/" once closed the comment it was
pasted into, and what followed ran at dlopen.  Here hostile names, paths and
strings go through every dialect: the C output must compile to exactly the
intended program (the kernel computes what it should and prints exactly the
strings), and the CUDA output must compile with NVRTC."""

import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest

import tack
from tack import _core

HOSTILE_NAME = 'evil */ __attribute__((constructor)) static void pwn(void) { __builtin_trap(); } /* \n\x01 ??/'
STRINGS = ['quote " backslash \\ end', "trigraph ??/ ??= ??' done", "comment */ /* open", "tab\tnewline\nbell\a"]

MODULE = '''
import tack

@tack.kernel
def hostile(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1

@tack.func
def helper(v):
    return v * 2

@tack.kernel
def hostile_helper(x):
    for i in range(x.shape[0]):
        x[i] = helper(x[i])

def renamed(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1

renamed.__name__ = renamed.__qualname__ = NAME
renamed = tack.kernel(renamed)

@tack.kernel
def talk(x):
    print(%s)
    print(%s)
    print(%s)
    print(%s)
    assert x[0] > 1000, %r
''' % (tuple(repr(s) for s in STRINGS) + ("assert */ message ??/ \" \\",))
MODULE = "NAME = %r\n" % HOSTILE_NAME + MODULE


def load(tmp_path):
    where = tmp_path / "dir with *" / "*nested *"  # the path holds "*/" and "/*"
    where.mkdir(parents=True)
    path = where / "kernels here.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("hostile_mod", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["hostile_mod"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["hostile_mod"]
    return mod, path


def test_hostile_path_compiles_to_the_intended_program(tmp_path):
    mod, path = load(tmp_path)
    assert "*/" in str(path) and "/*" in str(path)
    x = np.arange(4, dtype=np.float32)
    mod.hostile(x)
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32) + 1)
    mod.hostile_helper(x)
    np.testing.assert_array_equal(x, (np.arange(4, dtype=np.float32) + 1) * 2)
    src = mod.hostile.generated_source(x)
    assert "kernels here.py" in src and "kernels here.py" not in strip_comments(src)


def strip_comments(src):
    return re.sub(r"/\*.*?\*/", " ", src, flags=re.S)


def test_hostile_kernel_name_is_only_a_comment(tmp_path):
    mod, path = load(tmp_path)
    assert mod.renamed.__name__ == HOSTILE_NAME
    src = mod.renamed.generated_source(np.zeros(3, dtype=np.float32))
    assert "pwn" in src and "pwn" not in strip_comments(src)
    # And it runs, in a process of its own: an injected constructor would trap at load.
    script = tmp_path / "run_hostile.py"
    script.write_text(
        "import importlib.util, sys, numpy as np\n"
        f"spec = importlib.util.spec_from_file_location('hostile_mod', {str(path)!r})\n"
        "mod = importlib.util.module_from_spec(spec); sys.modules['hostile_mod'] = mod\n"
        "spec.loader.exec_module(mod)\n"
        "x = np.zeros(3, dtype=np.float32); mod.renamed(x); assert x.tolist() == [1, 1, 1]; print('ok')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_hostile_strings_print_exactly(tmp_path, capfd):
    mod, _ = load(tmp_path)
    x = np.full(2, 5000.0, dtype=np.float32)
    mod.talk(x)
    out = capfd.readouterr().out
    assert out == "".join(s + "\n" for s in STRINGS), repr(out)
    x[0] = 0
    with pytest.raises(AssertionError) as info:
        mod.talk(x)
    assert 'assert */ message ??/ " \\' in str(info.value)


@pytest.mark.skipif(not _core._nvrtc_version(), reason="NVRTC (libnvrtc) is not installed")
def test_hostile_text_through_the_cuda_dialect(tmp_path):
    mod, _ = load(tmp_path)
    x = np.zeros(2, dtype=np.float32)
    for k in (mod.hostile, mod.hostile_helper, mod.talk, mod.renamed):
        src = k.generated_source(x, target="cuda")
        ptx = _core._nvrtc_compile(src, "sm_80")
        assert ".entry" in ptx or ".visible" in ptx


@tack.kernel
def nul_print(x):
    print("before\x00after")


@tack.kernel
def nul_assert(x):
    assert x[0] > 0, "cut\x00here"


def test_long_print_is_printed_whole(tmp_path, capfd):
    text = "abc" * 3000  # a literal of 9,000 characters (print stopped at 4,095)
    path = tmp_path / "long_print.py"
    path.write_text(f"import tack\n@tack.kernel\ndef long_print(x):\n    print({text!r}, x.shape[0], 'tail')\n")
    spec = importlib.util.spec_from_file_location("long_print_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.long_print(np.zeros(2))
    out = capfd.readouterr().out
    assert out == text + " 2 tail\n", len(out)


@pytest.mark.parametrize("k", [nul_print, nul_assert])
def test_nul_in_a_string_is_a_compile_error(k):
    with pytest.raises(tack.CompileError, match="NUL"):
        k(np.ones(2))


def run_module(tmp_path, body, call="k(np.ones(4))"):
    """A kernel module in its own process: the limits are for pathological input."""
    path = tmp_path / "limits_mod.py"
    path.write_text("import numpy as np, tack\n@tack.kernel\ndef k(x):\n    for i in range(x.shape[0]):\n"
                    f"        x[i] = {body}\n"
                    f"try:\n    {call}\nexcept tack.CompileError as e:\n    print('CompileError:', e)\n")
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)


def balanced_sum(n):
    """n terms x[i] summed as a balanced tree (Python's own parser refuses deep chains)."""
    terms = ["x[i]"] * n
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + (terms[-1:] if len(terms) % 2 else [])
    return terms[0]


def test_huge_expression_is_a_compile_error_naming_the_limit(tmp_path):
    proc = run_module(tmp_path, balanced_sum(50_000))
    assert "CompileError:" in proc.stdout and "more than 100000 expressions" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_deep_expression_is_a_compile_error_naming_the_limit(tmp_path):
    proc = run_module(tmp_path, "-" * 450 + "x[i]")
    assert "nested more than 400 levels" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_large_but_reasonable_expression_compiles(tmp_path):
    proc = run_module(tmp_path, " + ".join(["x[i]"] * 300), call="x = np.ones(4); k(x); print(x.tolist())")
    assert proc.stdout.strip() == "[300.0, 300.0, 300.0, 300.0]", proc.stdout + proc.stderr[-2000:]
