"""Tack's fake GPU runtimes, built and run from the Python tests.

tests/c/fake_metal.c (a fake Objective-C runtime and Metal framework) and
tests/c/fake_hip.c (a fake libamdhip64 and hiprtc) are what the GPU driver
paths are tested against without a GPU.  test_metal_fake.py,
test_metal_run.py and test_hip_fake.py each build one into a shared
library once a module (``build``, from a fixture of their own) and run each
test as a script in a process of its own (``run_script``), with the fake
named in its environment (``environment``): a fake is read when Tack first
asks for its backend, so one process cannot try two settings.  Those
processes load no OpenCL driver (OCL_ICD_VENDORS points nowhere: it would
bring a second LLVM) and keep Tack's cache in the test's own directory.
"""

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CC = os.environ.get("TACK_CC") or shutil.which("cc") or shutil.which("gcc")


def has_ocloc():
    """Whether Intel's libocloc loads (the Level Zero fake's tests compile their SPIR-V with it)."""
    import ctypes

    for name in ("libocloc.so", "libocloc.so.1"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def needs_cc(what):
    """Skip the tests without a C compiler to build `what` (a fake runtime) with."""
    return pytest.mark.skipif(CC is None, reason=f"no C compiler to build {what}")


# the fake's objc_msgSend reads typed calls as variadic ones: true of x86-64 System V only
needs_fake_objc = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or sys.platform != "linux",
    reason="the fake Objective-C runtime stands in for the real one on x86-64 Linux only")


def build(tmp_path_factory, source, lib_name, what, libs=("-lpthread",)):
    """tests/c/<source> built into a shared library named lib_name; the tests skip when it does not build."""
    lib = tmp_path_factory.mktemp(Path(source).stem.replace("_", "")) / lib_name
    proc = subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(lib), str(ROOT / "tests" / "c" / source), *libs],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"cannot build {what}: {proc.stderr[-500:]}")
    return lib


def environment(tmp_path, drop=(), **values):
    """This process's environment for a script of tmp_path's: no OpenCL
    driver, Tack's cache in tmp_path, without the variables in drop and with
    values (made strings)."""
    env = dict(os.environ, OCL_ICD_VENDORS=str(tmp_path / "none"), TACK_CACHE_DIR=str(tmp_path / "cache"))
    for name in drop:
        env.pop(name, None)
    env.update({name: str(v) for name, v in values.items()})
    return env


def run_script(tmp_path, text, env, name="script.py", timeout=300):
    """text run as tmp_path/name in tmp_path with env; it must succeed.  Its process, for its output."""
    script = tmp_path / name
    script.write_text(text)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc
