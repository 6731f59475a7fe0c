"""Tack's settings, read and changed at run time: ``tack.config``.

Every setting of the library -- the optimize default, the CPU thread count,
the kernel cache's directory, compiler switches, the paths of the GPU
compilers' libraries -- is one entry of one table in libtack
(src/runtime/config.def); this module is its Python face.  Each setting has
an environment variable (``TACK_OPT``, ``TACK_NUM_THREADS``, ...) that gives
its initial value, read once, when Tack first uses a setting; after that
the environment is not looked at again.

    >>> import tack
    >>> tack.config.num_threads = 2        # the next CPU launch runs on two threads (0: one per core)
    >>> tack.config.num_threads, tack.config.source("num_threads")
    (2, 'set')
    >>> tack.config.reset("num_threads")   # back to the environment's value (or the default)
    >>> with tack.config.override(optimize=False):
    ...     @tack.kernel
    ...     def plain(a):
    ...         for i in range(a.shape[0]):
    ...             a[i] = 2 * i
    >>> plain.optimize
    False

Precedence, from strongest: an explicit option (``@tack.kernel(optimize=...)``,
the C API's ``tack_compile_options``), then the setting -- set here, else from
the environment, else the default.  When a change takes effect is each
setting's own (``describe()`` says, and docs/configuration.md): a kernel
option's default applies to kernels defined from then on, a compiler switch
to the next compile, the thread count to the next launch, a library's path
only before that library is loaded.  Settings are the process's, shared by
its threads.
"""

import contextlib as _contextlib
import os as _os
import sys as _sys
import types as _types
from collections import namedtuple as _namedtuple

from . import _core

Setting = _namedtuple("Setting", "name value source env type default choices doc effect")
Setting.__doc__ = """One setting: its value now and where that came from ("default", "env" or "set"),
its environment variable, type ("bool", "int", "choice" or "str"), default, choices (a
tuple, for a choice), and one line each on what it is and when a change takes effect."""

_TABLE = {row[0]: row for row in _core._config_table()}


def names():
    """The names of every setting, in the table's order."""
    return list(_TABLE)


def _row(name):
    if not isinstance(name, str):
        raise TypeError(f"a setting's name is a str, not {type(name).__name__}")
    try:
        return _TABLE[name]
    except KeyError:
        raise KeyError(f"tack.config has no setting named {name!r} (tack.config.names() lists them)") from None


def _from_text(kind, text):
    if kind == "bool":
        return text == "1"
    if kind == "int":
        return int(text)
    return text


def _to_text(name, kind, value):
    """The text libtack parses, from a Python value of the setting's type."""
    if kind == "bool":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return "1" if value else "0"
        if isinstance(value, int):
            raise ValueError(f"tack.config.{name} is True or False, not {value!r}")
        raise TypeError(f"tack.config.{name} is True or False, not {type(value).__name__} {value!r:.60}")
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"tack.config.{name} is an int, not {type(value).__name__} {value!r:.60}")
        return str(value) if value >= 0 else repr(value)  # a negative one: libtack's message names it
    if kind == "choice" and name == "default_float" and not isinstance(value, str):
        from ._kernels import _float_choice

        return _float_choice(value, "tack.config.default_float").name
    if isinstance(value, _os.PathLike) and kind == "str":
        value = _os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"tack.config.{name} is a str, not {type(value).__name__} {value!r:.60}")
    return value


def get(name):
    """The value of setting `name` now (bool, int or str, by its type)."""
    row = _row(name)
    return _from_text(row[2], _core._config_get(name)[0])


def source(name):
    """Where the value of `name` came from: "default", "env" (its environment
    variable, read at the first use) or "set" (at run time)."""
    _row(name)
    return _core._config_get(name)[1]


def set(name, value):
    """Set `name` to `value` (True/False for a bool, an int, one of the choices, or
    text); None puts back the environment's value, or the default.  A bad value
    raises ValueError (TypeError for one of the wrong type) and changes nothing."""
    row = _row(name)
    _core._config_set(name, None if value is None else _to_text(name, row[2], value))


_PYTHON_DEFAULTS = {}  # name -> the value the package puts in place of libtack's default (zig: the wheel's)


def reset(name=None):
    """Put `name` (every setting, without a name) back to the environment's value
    or the default."""
    for n in names() if name is None else [_row(name)[0]]:
        _core._config_set(n, None)
        if n in _PYTHON_DEFAULTS and _core._config_get(n)[1] == "default":
            _core._config_set(n, _PYTHON_DEFAULTS[n])


def describe():
    """Every setting, as a list of `Setting` (name, value, source, env, type,
    default, choices, doc, effect).  ``print(tack.config)`` shows the same as a
    table."""
    out = []
    for name, env, kind, default, choices, doc, effect in _TABLE.values():
        text, src = _core._config_get(name)
        out.append(Setting(name, _from_text(kind, text), src, env, kind, _from_text(kind, default),
                           tuple(choices.split("|")) if choices else None, doc, effect))
    return out


@_contextlib.contextmanager
def override(**settings):
    """Change settings for the length of a ``with`` block, and put back what they
    were (value and source) when it ends, by an exception too::

        with tack.config.override(optimize=False, num_threads=1):
            ...

    Every name is checked before anything changes; a bad value changes nothing.
    Process-wide, like the settings: other threads see the change meanwhile."""
    for name in settings:
        _row(name)
    saved = {name: _core._config_get(name) for name in settings}
    done = []
    try:
        for name, value in settings.items():
            set(name, value)
            done.append(name)
        yield
    finally:
        for name in reversed(done):
            text, src = saved[name]
            _core._config_set(name, text if src == "set" else None)


def _table():
    rows = [(s.name, repr(s.value), s.source, s.env) for s in describe()]
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d}" for a, b, c, d in rows)


class _ConfigModule(_types.ModuleType):
    """tack.config itself: its settings read and written as attributes."""

    def __getattr__(self, name):  # only for names the module does not define
        if name in _TABLE:
            return get(name)
        raise AttributeError(f"tack.config has no setting named {name!r} (tack.config.names() lists them)")

    def __setattr__(self, name, value):
        if name in _TABLE:
            set(name, value)
        elif name.startswith("_") or name in self.__dict__:
            super().__setattr__(name, value)
        else:
            raise AttributeError(f"tack.config has no setting named {name!r} (tack.config.names() lists them)")

    def __dir__(self):
        return sorted(list(self.__dict__) + names())

    def __repr__(self):
        return "<tack.config: every setting, its value, where it came from, its variable>\n" + _table()


_sys.modules[__name__].__class__ = _ConfigModule
