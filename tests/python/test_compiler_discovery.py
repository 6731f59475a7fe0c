"""Which C compiler the CPU backend uses, and kernels without one (docs/backends.md).

The order: TACK_CC, CC, cc/gcc/clang on PATH, then TACK_ZIG (the ziglang
wheel's zig, which the Python package finds by itself; TACK_ZIG set and empty
turns that off).  A kernel already in the cache loads with no compiler at all;
a new one then fails with an error that names the choices.  Each case runs in
its own process with the environment it describes.
"""

import os
import shutil
import subprocess
import sys

import pytest
from test_cache_hostile import seal

SCRIPT = """
import os, sys
import numpy as np, tack
@tack.kernel
def scale(a):
    for i in range(a.shape[0]):
        a[i] = FACTOR * a[i]
x = np.arange(4, dtype=np.float32)
scale(x)
assert x.tolist() == [0, FACTOR, 2 * FACTOR, 3 * FACTOR], x
print("ok")
"""

GCC = shutil.which("gcc")
CLANG = shutil.which("clang")


def run(tmp_path, cache=None, factor=3, path=None, cwd=None, **env):
    """Run the kernel script in a new process.  `path`: the PATH it gets
    (default: an empty directory, so no compiler is on it).  TACK_CC and CC
    are unset unless given; TACK_ZIG is set empty (no zig) unless given."""
    script = tmp_path / f"scale{factor}.py"
    script.write_text(SCRIPT.replace("FACTOR", str(factor)))
    if path is None:
        path = tmp_path / "empty-bin"
        path.mkdir(exist_ok=True)
    e = {k: v for k, v in os.environ.items() if k not in ("TACK_CC", "CC", "TACK_ZIG")}
    e.update(TACK_CACHE_DIR=str(cache or tmp_path / "cache"), TACK_LOG="info", PATH=str(path), TACK_ZIG="")
    e.update(env)
    e = {k: v for k, v in e.items() if v is not None}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=600, cwd=cwd)


def warm(tmp_path, **env):
    """A cache in which a compiler found on the normal PATH built the kernel."""
    first = run(tmp_path, path=os.environ["PATH"], **env)
    assert first.returncode == 0, first.stderr
    assert "compiled kernel 'scale'" in first.stderr
    return tmp_path / "cache"


def test_a_cached_kernel_runs_without_any_compiler(tmp_path):
    warm(tmp_path)
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert "loaded kernel 'scale' from the cache" in proc.stderr and "no C compiler found" in proc.stderr
    assert "compiled" not in proc.stderr


def test_an_entry_from_before_records_gets_one_at_its_next_load(tmp_path):
    cache = warm(tmp_path)
    (record,) = cache.glob("*.ccid")
    record.unlink()
    assert run(tmp_path).returncode != 0  # nothing says which compiler built it
    again = run(tmp_path, path=os.environ["PATH"])  # a compiler loads it from the cache ...
    assert again.returncode == 0 and "loaded kernel 'scale' from the cache" in again.stderr, again.stderr
    assert list(cache.glob("*.ccid"))  # ... and records who built it
    proc = run(tmp_path)
    assert proc.returncode == 0 and "no C compiler found" in proc.stderr, proc.stderr


def test_a_new_kernel_without_a_compiler_names_the_choices(tmp_path):
    warm(tmp_path)
    proc = run(tmp_path, factor=5)  # not in the cache
    assert proc.returncode != 0
    msg = proc.stderr
    assert "RuntimeError" in msg and "no C compiler to build kernel 'scale'" in msg, msg
    for choice in ("TACK_CC", "CC", "cc, gcc and clang on PATH", "TACK_ZIG", "pip install ziglang", "`compiler` extra"):
        assert choice in msg, (choice, msg)


def test_a_damaged_or_foreign_record_loads_nothing(tmp_path):
    cache = warm(tmp_path)
    (record,) = cache.glob("*.ccid")
    data = record.read_bytes()
    record.write_bytes(data[:-3] + b"xyz")  # fails its seal: removed, never believed
    proc = run(tmp_path)
    assert proc.returncode != 0 and "no C compiler to build kernel" in proc.stderr, proc.stderr
    assert not record.exists()
    # A sealed record naming another compiler names an entry that is not there.
    body = b"0123456789abcdef 0123456789abcdef\nsome other compiler"
    record.write_bytes(body + seal(body))
    record.chmod(0o600)
    proc = run(tmp_path)
    assert proc.returncode != 0 and "no C compiler to build kernel" in proc.stderr, proc.stderr


@pytest.mark.skipif(not CLANG or not GCC, reason="needs gcc and clang")
def test_tack_cc_then_cc_are_honoured(tmp_path):
    normal = os.environ["PATH"]
    proc = run(tmp_path, cache=tmp_path / "c1", path=normal, TACK_CC="clang")
    assert proc.returncode == 0, proc.stderr
    assert "clang version" in proc.stderr and "(clang, from TACK_CC)" in proc.stderr, proc.stderr
    proc = run(tmp_path, cache=tmp_path / "c2", CC=CLANG)  # a path: needs no PATH
    assert proc.returncode == 0 and f"({CLANG}, from CC)" in proc.stderr, proc.stderr
    proc = run(tmp_path, cache=tmp_path / "c3", path=normal, TACK_CC=GCC, CC=CLANG)
    assert proc.returncode == 0 and f"({GCC}, from TACK_CC)" in proc.stderr, proc.stderr
    assert "clang version" not in proc.stderr
    # The cc setting (TACK_CC's value until set) is read at every build: a process may change its mind.
    script = tmp_path / "switch.py"
    script.write_text(
        SCRIPT.replace("FACTOR", "7")
        + "tack.config.cc = 'clang'\n"
        + SCRIPT.replace("FACTOR", "8").replace("import os, sys\n", "")
    )
    e = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "c4"), TACK_LOG="info", TACK_CC="gcc")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=600)
    assert proc.returncode == 0, proc.stderr
    first, second = [line for line in proc.stderr.splitlines() if "compiled kernel" in line]
    assert "(gcc, from TACK_CC)" in first and "(clang, from TACK_CC)" in second, proc.stderr


@pytest.mark.skipif(not CLANG or not GCC, reason="needs gcc and clang")
def test_path_is_searched_for_cc_then_gcc_then_clang(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("as", "ld"):  # gcc and clang run the assembler and the linker from PATH
        (bin_ / tool).symlink_to(shutil.which(tool))
    (bin_ / "clang").symlink_to(CLANG)
    proc = run(tmp_path, cache=tmp_path / "c1", path=bin_)
    assert proc.returncode == 0 and "(clang, from PATH)" in proc.stderr, proc.stderr
    (bin_ / "gcc").symlink_to(GCC)
    proc = run(tmp_path, cache=tmp_path / "c2", path=bin_)
    assert proc.returncode == 0 and "(gcc, from PATH)" in proc.stderr, proc.stderr
    (bin_ / "cc").symlink_to(CLANG)
    proc = run(tmp_path, cache=tmp_path / "c3", path=bin_)
    assert proc.returncode == 0 and "(cc, from PATH)" in proc.stderr and "clang version" in proc.stderr, proc.stderr


def test_a_tack_cc_or_cc_that_does_not_exist_is_named(tmp_path):
    missing = tmp_path / "no-such-dir" / "tack-test-cc"
    proc = run(tmp_path, path=os.environ["PATH"], TACK_CC=f"{missing} -O2")
    assert proc.returncode != 0
    assert f"the C compiler '{missing} -O2' (TACK_CC) does not run: there is no program '{missing}'" in proc.stderr, proc.stderr
    proc = run(tmp_path, path=os.environ["PATH"], CC="tack-no-such-cc")
    assert proc.returncode != 0
    assert "(CC) does not run: no program on PATH is named 'tack-no-such-cc'" in proc.stderr, proc.stderr
    # A named compiler that is missing is a mistake to report, even for a kernel in the cache.
    warm(tmp_path)
    proc = run(tmp_path, TACK_CC="tack-no-such-cc")
    assert proc.returncode != 0 and "(TACK_CC) does not run" in proc.stderr, proc.stderr


@pytest.mark.skipif(not GCC, reason="needs gcc")
def test_a_relative_compiler_path_means_from_the_working_directory(tmp_path):
    # The compiler runs inside the cache directory; a relative TACK_CC or PATH
    # entry must still name what it names from where the program runs.
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "gcc").symlink_to(GCC)
    binutils = tmp_path / "binutils"  # gcc's own assembler and linker, found from an absolute entry
    binutils.mkdir()
    for tool in ("as", "ld"):
        (binutils / tool).symlink_to(shutil.which(tool))
    proc = run(tmp_path, cwd=tmp_path, path=binutils, TACK_CC="./tools/gcc")
    assert proc.returncode == 0, proc.stderr
    assert "(./tools/gcc, from TACK_CC)" in proc.stderr, proc.stderr
    proc = run(tmp_path, cache=tmp_path / "c2", cwd=tmp_path, path=f"tools:{binutils}")
    assert proc.returncode == 0, proc.stderr
    assert "(gcc, from PATH)" in proc.stderr, proc.stderr


def test_a_tack_zig_that_is_not_a_program_is_named(tmp_path):
    proc = run(tmp_path, TACK_ZIG=str(tmp_path))
    assert proc.returncode != 0
    assert f"(TACK_ZIG names '{tmp_path}', which is not a program)" in proc.stderr, proc.stderr


@pytest.mark.skipif(not GCC, reason="needs gcc to stand in for zig cc")
def test_the_package_finds_a_ziglang_layout_on_sys_path(tmp_path):
    # The ziglang wheel's layout (a package directory holding the `zig`
    # binary), here with a `zig` that runs `gcc` for `zig cc`, in a
    # directory whose name has a blank: the path is taken whole.
    site = tmp_path / "site packages"
    pkg = site / "ziglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    zig = pkg / "zig"
    tools = os.path.dirname(shutil.which("as"))  # gcc runs the assembler from PATH, as zig needs none
    zig.write_text(f'#!/bin/sh\n[ "$1" = cc ] || exit 2\nshift\nPATH={tools} exec {GCC} "$@"\n')
    zig.chmod(0o755)
    proc = run(tmp_path, TACK_ZIG=None, PYTHONPATH=str(site))
    assert proc.returncode == 0, proc.stderr
    assert f"({zig} cc, from TACK_ZIG)" in proc.stderr, proc.stderr
    # ... and it comes last: a compiler on PATH is preferred.
    proc = run(tmp_path, cache=tmp_path / "c2", path=os.environ["PATH"], TACK_ZIG=None, PYTHONPATH=str(site))
    assert proc.returncode == 0 and "from PATH" in proc.stderr, proc.stderr
    # TACK_ZIG set and empty: zig is not used.
    proc = run(tmp_path, cache=tmp_path / "c3", TACK_ZIG="", PYTHONPATH=str(site))
    assert proc.returncode != 0 and "no C compiler to build kernel" in proc.stderr, proc.stderr


def _ziglang_zig():
    try:
        import ziglang
    except ImportError:
        return None
    zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
    return zig if os.access(zig, os.X_OK) else None


@pytest.mark.skipif(_ziglang_zig() is None, reason="the ziglang wheel (the `compiler` extra) is not installed")
def test_a_new_kernel_compiles_with_the_ziglang_wheel(tmp_path):
    proc = run(tmp_path, TACK_ZIG=None)  # no compiler on PATH; the package finds the wheel
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert f"({_ziglang_zig()} cc, from TACK_ZIG)" in proc.stderr and "clang version" in proc.stderr, proc.stderr
    # in the cache now, under zig's identity, which was remembered: no compile, no `zig cc --version`
    again = run(tmp_path, TACK_ZIG=None)
    assert again.returncode == 0 and "loaded kernel 'scale' from the cache" in again.stderr, again.stderr
