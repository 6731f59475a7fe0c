"""The Metal Shading Language check of the tests: clang++ against tests/msl.

No machine here has Apple's Metal compiler, so the MSL that the "metal"
dialect emits is checked two ways:

  - clang++ type-checks it as C++ for OpenCL 2021 (C++17 with address
    spaces; the header says why not plain C++) against tests/msl/metal_stdlib,
    our own declarations of the part of Metal's standard library the dialect
    uses, with Metal's address spaces made real and `double` poisoned;
  - a lint for what that header cannot express: every pointer declared names
    its address space (MSL requires it; a plain pointer is a private one in
    the check, so clang cannot tell), no `long long` or LL-suffixed constant
    (MSL's 64-bit integer is `long`) and no hexadecimal float (C++17; MSL is
    C++14, and the check compiles as C++17).

``check(source)`` returns None when the source passes, else the errors.

On a Mac, TACK_MSL_XCRUN=1 makes ``check`` compile with Apple's own compiler
instead (``xcrun -sdk macosx metal -std=metal3.0 -fno-fast-math``; the lint
still runs), so that one command checks the dialect against the real thing:

    TACK_MSL_XCRUN=1 uv run pytest tests/python/test_msl.py
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

INCLUDE = Path(__file__).resolve().parents[1] / "msl"

_CANDIDATES = ("clang++-19", "clang++-18", "clang++-17", "clang++-16", "clang++-15", "clang++")

FLAGS = ("-x", "clcpp", "-cl-std=clc++2021", "-cl-no-stdinc", "-fsyntax-only", "-ferror-limit=20", "-Werror=unknown-attributes",
         "-Werror=double-promotion", "-Werror=implicit-function-declaration", "-Wno-unused-value")


def xcrun():
    """Whether to check with Apple's Metal compiler (TACK_MSL_XCRUN=1, on a Mac)."""
    return os.environ.get("TACK_MSL_XCRUN") == "1"


def clang():
    """The clang++ to check with, or None."""
    env = os.environ.get("TACK_MSL_CLANG")
    if env:
        return env
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def has_float16():
    """Whether clang() knows _Float16 here (clang 15 and later on x86-64):
    the CPU emulation of MSL (_msl_emulate.py) makes half of it."""
    cc = clang()
    if cc is None:
        return False
    proc = subprocess.run([cc, "-x", "c++", "-std=c++17", "-fsyntax-only", "-"], input="_Float16 h;\n",
                          capture_output=True, text=True, timeout=60)
    return proc.returncode == 0


_TYPES = (r"(?:u?int(?:8|16|32|64)_t|float|half|bool|char|u?short|uchar|uint|u?long|int|void|"
          r"tk_\w+|atomic_\w+)")
# a pointer declared or cast to: `[const] [space] [const] TYPE *`
_POINTER = re.compile(r"(\b\w+\s+)?(?:const\s+)?\b(" + _TYPES + r")\s*\*(?=\s*[\w)(])")
_SPACES = {"device", "constant", "thread", "threadgroup"}
_HEX_FLOAT = re.compile(r"\b0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][+-]?\d+")
_LONG_LONG = re.compile(r"\blong\s+long\b|\b(?:0x[0-9a-fA-F]+|\d+)[uU]?(?:LL|ll)\b|\b\d+[uU]?ll\b")


def lint(source):
    """What the header cannot catch; a list of messages, empty when clean."""
    errors = []
    code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.S)
    for n, line in enumerate(code.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        for m in _POINTER.finditer(line):
            before = (m.group(1) or "").strip()
            if before in ("const",):  # `X const T *`: look one word further back
                head = line[: m.start()].split()
                before = head[-1] if head else ""
            if before not in _SPACES and not (before == "" and _space_before(line, m.start())):
                errors.append(f"line {n}: pointer without an address space: {line.strip()[:160]}")
        if _HEX_FLOAT.search(line):
            errors.append(f"line {n}: a hexadecimal float (C++17; MSL is C++14): {line.strip()[:160]}")
        if _LONG_LONG.search(line):
            errors.append(f"line {n}: long long (MSL's 64-bit integer is long): {line.strip()[:160]}")
    return errors


def _space_before(line, at):
    words = re.findall(r"\w+", line[:at])
    while words and words[-1] == "const":
        words.pop()
    return bool(words) and words[-1] in _SPACES


def check(source, timeout=120):
    """None when `source` type-checks as MSL here and passes the lint, else the errors (str)."""
    cc = clang()
    if cc is None and not xcrun():
        raise RuntimeError("no clang++ to check MSL with")
    problems = lint(source)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.metal")
        with open(path, "w") as f:
            f.write(source)
        if xcrun():  # Apple's compiler and its own metal_stdlib
            cmd = ["xcrun", "-sdk", "macosx", "metal", "-std=metal3.0", "-fno-fast-math", "-c", "-x", "metal", path,
                   "-o", os.path.join(tmp, "kernel.air")]
        else:
            cmd = [cc, *FLAGS, "-I", str(INCLUDE), path]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        problems.append(proc.stderr.strip() or f"clang++ exited {proc.returncode}")
    return "\n".join(problems) if problems else None


def verdicts(sources):
    """check()'s verdict on each of `sources`: "ok" or the errors, kept between
    runs by _tool_cache.py under the compiler's identity."""
    import _tool_cache

    return [_tool_cache.cached("msl", compiler_identity(), "", "", src, lambda src=src: check(src) or "ok",
                               lambda out: out == "ok") for src in sources]


def compiler_identity():
    """What decides check()'s verdict besides the source, for _tool_cache.py's key:
    the compiler (its --version), its flags, the headers in tests/msl and this file's lint."""
    import hashlib

    h = hashlib.sha256()
    if xcrun():
        h.update(b"xcrun metal")
    else:
        cc = clang()
        h.update(subprocess.run([cc, "--version"], capture_output=True).stdout if cc else b"none")
    h.update(" ".join(FLAGS).encode())
    for path in sorted(INCLUDE.rglob("*")) + [Path(__file__)]:
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()
