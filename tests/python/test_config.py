"""tack.config: every setting of libtack's one table (src/runtime/config.def),
read and changed at run time, its environment variable read once; an
explicit option beats the setting; bad names and values raise naming them;
override() puts everything back, by an exception too; docs/configuration.md
lists exactly the table."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def other_value(s):
    """A value of setting s other than its present one."""
    if s.type == "bool":
        return not s.value
    if s.type == "int":
        return s.value + 3
    if s.type == "choice":
        return next(c for c in s.choices if c != s.value)
    return s.value + "-x y"


@pytest.mark.parametrize("name", tack.config.names())
def test_each_setting_round_trips(name):
    s = next(d for d in tack.config.describe() if d.name == name)
    assert s.env.startswith("TACK_") and s.doc and s.effect
    assert type(s.value) is {"bool": bool, "int": int, "choice": str, "str": str}[s.type]
    new = other_value(s)
    with tack.config.override(**{name: new}):
        assert tack.config.get(name) == getattr(tack.config, name) == new
        assert tack.config.source(name) == "set"
    assert (tack.config.get(name), tack.config.source(name)) == (s.value, s.source)
    setattr(tack.config, name, new)
    try:
        assert tack.config.get(name) == new
    finally:
        tack.config.set(name, s.value if s.source == "set" else None)
    assert (tack.config.get(name), tack.config.source(name)) == (s.value, s.source)
    if s.type == "choice":
        for c in s.choices:
            with tack.config.override(**{name: c}):
                assert getattr(tack.config, name) == c


def test_the_table_is_complete():
    names = tack.config.names()
    assert len(names) == len(set(names)) >= 20
    for must in ("optimize", "num_threads", "cache_dir", "checks", "check_races", "dump", "log", "cflags",
                 "vector_math", "nests", "tile", "nvrtc_path", "hiprtc_path", "zig", "ocloc_device", "opencl_svm"):
        assert must in names
    assert "num_threads" in repr(tack.config) and "TACK_NUM_THREADS" in repr(tack.config)
    assert set(names) <= set(dir(tack.config))


def test_override_restores_on_an_exception():
    before = [(s.name, s.value, s.source) for s in tack.config.describe()]
    with pytest.raises(RuntimeError, match="inside"):
        with tack.config.override(optimize=False, num_threads=2, dump="ir", cflags="-g"):
            assert tack.config.optimize is False and tack.config.num_threads == 2
            raise RuntimeError("inside")
    assert [(s.name, s.value, s.source) for s in tack.config.describe()] == before
    # nested: the inner block puts back the outer's values
    with tack.config.override(num_threads=3):
        with tack.config.override(num_threads=5):
            assert tack.config.num_threads == 5
        assert tack.config.num_threads == 3 and tack.config.source("num_threads") == "set"
    assert [(s.name, s.value, s.source) for s in tack.config.describe()] == before


def test_bad_names_and_values():
    before = [(s.name, s.value, s.source) for s in tack.config.describe()]
    with pytest.raises(KeyError, match="no setting named 'optimise'"):
        tack.config.get("optimise")
    with pytest.raises(KeyError, match="'optimise'"):
        tack.config.set("optimise", 1)
    with pytest.raises(AttributeError, match="no setting named 'optimise'"):
        tack.config.optimise = 1
    with pytest.raises(AttributeError, match="'optimise'"):
        tack.config.optimise
    with pytest.raises(ValueError, match="'log' must be one of off/info/debug, not 'loud'"):
        tack.config.log = "loud"
    with pytest.raises(ValueError, match="'num_threads' must be a whole number from 0 to .*, not '-2'"):
        tack.config.num_threads = -2
    with pytest.raises(ValueError, match="optimize is True or False, not 2"):
        tack.config.optimize = 2
    with pytest.raises(TypeError, match="num_threads is an int, not str"):
        tack.config.num_threads = "4"
    with pytest.raises(TypeError, match="num_threads is an int, not bool"):
        tack.config.num_threads = True
    with pytest.raises(TypeError, match="optimize is True or False, not str"):
        tack.config.optimize = "0"
    with pytest.raises(TypeError, match="cflags is a str, not int"):
        tack.config.cflags = 3
    with pytest.raises(ValueError, match="'cflags' is 40000 bytes long"):
        tack.config.cflags = "x" * 40000
    with pytest.raises(ValueError, match="default_float must be tack.f32 or tack.f64"):
        tack.config.default_float = np.int32
    # an unknown name, or a bad value after good ones, changes nothing
    with pytest.raises(KeyError):
        with tack.config.override(num_threads=2, nope=1):
            pass
    with pytest.raises(ValueError):
        with tack.config.override(num_threads=2, dump="everything"):
            pass
    assert [(s.name, s.value, s.source) for s in tack.config.describe()] == before


def test_the_old_setters_are_the_settings():
    with tack.config.override(default_float="f64", check_races=True):
        assert tack.get_default_float() == tack.f64 and tack.get_check_races() is True
    with tack.config.override():
        tack.set_default_float(tack.f64)
        assert tack.config.default_float == "f64"
    with tack.config.override(default_float=tack.f64):  # a dtype, as set_default_float takes
        assert tack.config.default_float == "f64"


def folded(a):
    for i in range(a.shape[0]):
        a[i] = i * (2 * 3 + 1)


def test_an_explicit_option_beats_the_setting():
    a = np.zeros(4)
    on_src = tack.kernel(folded, optimize=True, checks=True).generated_source(a)
    off_src = tack.kernel(folded, optimize=False, checks=False).generated_source(a)
    assert on_src != off_src  # the passes change this kernel's source
    with tack.config.override(optimize=False, checks=False):
        plain = tack.kernel(folded)
        forced = tack.kernel(folded, optimize=True, checks=True)
    assert (plain.optimize, plain.checks) == (False, False)
    assert (forced.optimize, forced.checks) == (True, True)
    # a kernel keeps the options it was defined with, whatever the setting at its compile
    with tack.config.override(optimize=True):
        assert plain.generated_source(a) == off_src
    with tack.config.override(optimize=False):
        assert forced.generated_source(a) == on_src
    plain(a)
    assert a.tolist() == [0, 7, 14, 21]
    with pytest.raises(TypeError, match="optimize must be True, False or None"):
        tack.kernel(folded, optimize=1)


def test_disable_jit_applies_to_kernels_defined_after():
    with tack.config.override(disable_jit=True):
        k = tack.kernel(folded)
        forced = tack.kernel(folded, jit=True)
    assert type(k).__name__ == "PythonKernel" and type(forced).__name__ == "Kernel"


def test_thread_count_takes_effect_at_the_next_launch():
    with tack.config.override(num_threads=3):
        assert tack._core.device_threads("cpu") == 3
    with tack.config.override(num_threads=1):
        assert tack._core.device_threads("cpu") == 1


ENV_SCRIPT = textwrap.dedent("""
    import os, numpy as np, tack
    print(tack.config.optimize, tack.config.source("optimize"), tack.config.log, tack.config.source("log"))
    os.environ["TACK_LOG"] = "debug"  # too late: read once
    print(tack.config.log)
    def folded(a):
        for i in range(a.shape[0]):
            a[i] = i * (2 * 3 + 1)
    a = np.zeros(4)
    print(tack.kernel(folded).optimize, tack.kernel(folded, optimize=True).optimize)
    on, off, plain = (tack.kernel(folded, **o).generated_source(a) for o in ({{"optimize": True}}, {{"optimize": False}}, {{}}))
    print(on != off, plain == off)
""")


def test_the_environment_is_read_once_and_an_option_still_wins(tmp_path):
    """TACK_OPT=0 is the initial value of optimize, no longer an override of the
    kernel's explicit option."""
    script = tmp_path / "env.py"
    script.write_text(ENV_SCRIPT.format())
    env = dict(os.environ, TACK_OPT="0", TACK_LOG="info")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == ["False env info env", "info", "False True", "True True"]


def test_a_bad_environment_value_is_an_error_at_import():
    env = dict(os.environ, TACK_NUM_THREADS="many")
    r = subprocess.run([sys.executable, "-c", "import tack"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "ValueError: TACK_NUM_THREADS must be a whole number from 0 to" in r.stderr and "'many'" in r.stderr


# ------------------------------------------------------------ the docs' table
def docs_rows():
    text = open(os.path.join(ROOT, "docs", "configuration.md")).read()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `(\w+)` \| `(TACK_\w+)` \| (\w+) \| `([^`]*)` \| (.+) \| (.+) \|$", line)
        if m:
            rows[m.group(1)] = m.groups()[1:]
    return rows


def test_the_docs_table_is_the_c_table():
    rows = docs_rows()
    assert list(rows) == tack.config.names(), "docs/configuration.md lists other settings, or in another order"
    for name, env, kind, default, choices, doc, effect in tack._core._config_table():
        d_env, d_kind, d_default, d_doc, d_effect = rows[name]
        assert (d_env, d_kind, d_default) == (env, kind, default), name
        assert d_doc.replace("\\|", "|") == doc + (f" ({choices.replace('|', ', ')})" if choices else ""), name
        assert d_effect == effect, name


def test_an_environment_value_too_long_to_keep_is_named_at_import():
    # (it was once "unknown error in libtack": the check re-read a cut copy of the value)
    import subprocess
    import sys

    env = dict(os.environ, TACK_CFLAGS="-DX " * 10000)
    r = subprocess.run([sys.executable, "-c", "import tack"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "ValueError: TACK_CFLAGS is 40000 bytes long; at most 32767 are kept" in r.stderr, r.stderr[-2000:]
