"""The core reaches the operating system only through src/platform (platform.h):
no other file of src/runtime, src/compiler or src/backends includes a header
beyond the C library's own and the compiler's intrinsics, so a port to another
system is the platform folder and nothing else (docs/platforms.md)."""
import re
from pathlib import Path

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


def test_the_check_sees_a_system_header(tmp_path):
    # the rule above can fail: a file that includes <pthread.h> is caught, one with <string.h> is not
    bad, good = tmp_path / "bad.c", tmp_path / "good.c"
    bad.write_text('#include <string.h>\n#  include <pthread.h>\nconst char *s = "#include <dlfcn.h>";\n')
    good.write_text("#include <string.h>\n#include <xmmintrin.h>\n")
    assert _system_includes(bad) == ["pthread.h"] and _system_includes(good) == []


def test_the_platform_layer_has_both_implementations():
    names = {p.name for p in (SRC / "platform").iterdir()}
    assert {"platform.h", "posix.c", "posix_files.c", "posix_spawn_guard.c", "win32.c", "win32_files.c",
            "win32_spawn.c"} <= names
