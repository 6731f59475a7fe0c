"""The core reaches the operating system only through src/platform (platform.h):
no other file of src/runtime, src/compiler or src/backends includes a header
beyond the C library's own and the compiler's intrinsics, so a port to another
system is the platform folder and nothing else (docs/platforms.md)."""
import os
import re
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
# ISO C11's headers, and the compiler's own SIMD intrinsics (no system behind them).
C11 = {"assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h", "iso646.h", "limits.h",
       "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h", "stdarg.h", "stdatomic.h", "stdbool.h",
       "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h", "string.h", "tgmath.h", "threads.h",
       "time.h", "uchar.h", "wchar.h", "wctype.h"}
INTRINSICS = re.compile(r"^[a-z0-9]*intrin\.h$|^arm_neon\.h$")
INCLUDE = re.compile(r"^\s*#\s*include\s*<([^>]+)>", re.M)


def _system_includes(path):
    return [h for h in INCLUDE.findall(path.read_text(errors="replace")) if h not in C11 and not INTRINSICS.match(h)]


def test_only_the_platform_layer_includes_system_headers():
    found = {}
    for folder in ("runtime", "compiler", "backends"):
        for path in sorted((SRC / folder).rglob("*")):
            if path.suffix in (".c", ".h") and (heads := _system_includes(path)):
                found[str(path.relative_to(SRC))] = heads
    assert not found, "system headers outside src/platform (use platform/platform.h): %s" % found


# The Python extension too: it reaches the system only through libtack's exported platform
# calls (src/private/tack_private.h), so it builds for Windows as for Linux and macOS.
PYTHON_HEADERS = {"Python.h", "structmember.h", "pythread.h"}
POSIX_CALLS = re.compile(r"\b(sigaction|sigprocmask|pthread_\w+|getpid|getppid|fork|kill|dlopen|dlsym|dladdr|mmap"
                         r"|munmap|sysconf|usleep|nanosleep|clock_gettime|open|close|read|write|unlink)\s*\(")


def _posix_calls(path):
    code = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"", " ", path.read_text(errors="replace"), flags=re.S)
    return sorted({m.group(1) for m in POSIX_CALLS.finditer(code)})


def test_the_extension_makes_no_system_call_of_its_own():
    found = {}
    for path in sorted((SRC / "python").glob("*.[ch]")):
        heads = [h for h in _system_includes(path) if h not in PYTHON_HEADERS]
        calls = _posix_calls(path)
        if heads or calls:
            found[path.name] = heads + calls
    assert not found, "POSIX-only headers or calls in src/python (use tack_private.h's platform calls): %s" % found


def test_the_extension_check_sees_a_posix_call(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text('/* getpid() in a comment */\nconst char *s = "fork()";\n'
                   "static long f(void) { return (long)getpid(); }\nint g(void) { return sigaction (2, 0, 0); }\n"
                   "int h(void) { return PyOS_getpid(); }\n")
    assert _posix_calls(bad) == ["getpid", "sigaction"]


def test_the_check_sees_a_system_header(tmp_path):
    # the rule above can fail: a file that includes <pthread.h> is caught, one with <string.h> is not
    bad, good = tmp_path / "bad.c", tmp_path / "good.c"
    bad.write_text('#include <string.h>\n#  include <pthread.h>\nconst char *s = "#include <dlfcn.h>";\n')
    good.write_text("#include <string.h>\n#include <xmmintrin.h>\n")
    assert _system_includes(bad) == ["pthread.h"] and _system_includes(good) == []


def test_the_platform_layer_has_both_implementations():
    names = {p.name for p in (SRC / "platform").iterdir()}
    assert {"platform.h", "posix.c", "posix_files.c", "posix_spawn_guard.c", "win32.c", "win32_files.c",
            "win32_spawn.c", "posix_interrupt.c", "win32_interrupt.c"} <= names


# tack.get_library() names the folder of the shared library as each system's build names it
# (CMakeLists.txt; the wheels of every platform: pyproject.toml's [tool.cibuildwheel]).

@pytest.mark.parametrize("platform, name", [
    ("linux", "libtack.so"), ("darwin", "libtack.dylib"), ("win32", "tack.dll"), ("win32", "libtack.dll")])
def test_get_library_finds_each_systems_shared_library(tmp_path, platform, name):
    import tack

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / name).write_bytes(b"")
    assert tack._installed("lib", tack._library_names(platform), base=str(tmp_path)) == str(tmp_path / "lib")


@pytest.mark.parametrize("platform, other", [
    ("darwin", "libtack.so"), ("linux", "libtack.dylib"), ("win32", "libtack.so"), ("linux", "tack.dll")])
def test_get_library_refuses_another_systems_library_naming_what_it_wanted(tmp_path, platform, other):
    import tack

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / other).write_bytes(b"")
    wanted = " or ".join(tack._library_names(platform))
    with pytest.raises(RuntimeError, match=re.escape(f"Tack's {wanted} is not installed beside {tmp_path}")):
        tack._installed("lib", tack._library_names(platform), base=str(tmp_path))


def test_get_library_on_this_system_names_the_library_the_extension_loaded():
    import tack

    lib = Path(tack.get_library())
    names = tack._library_names(sys.platform)
    assert [n for n in names if (lib / n).is_file()], (lib, names)
    if sys.platform.startswith("linux"):  # the very file the loader mapped for tack._core
        maps = {line.split()[-1] for line in open("/proc/self/maps") if "libtack" in line}
        assert {os.path.realpath(lib / names[0])} == {os.path.realpath(m) for m in maps}, maps
