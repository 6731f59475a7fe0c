"""libtack as a C library users link: `cmake --install` into a fresh prefix puts
the shared and static library, the public headers, a CMake package and a
pkg-config file there, and docs/examples/c builds a kernel against them and
runs it (docs/getting-started.md, "From C")."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CMAKE = shutil.which("cmake")
pytestmark = pytest.mark.skipif(not CMAKE, reason="needs CMake")


def sh(*cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=1200, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


# The library's Release build, kept in the clone's build/ between runs as the
# other C builds of make test are (build/c, build/asan), and built through
# ccache where there is one, as the Makefile builds those: a fresh clone then
# compiles only what no earlier build compiled (CCACHE_BASEDIR makes the
# paths relative to the clone).  The install, into a fresh prefix, is made
# every run.
BUILD = ROOT / "build" / "test-c-library"


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("libtack")
    env = dict(os.environ)
    launcher = []
    if shutil.which("ccache"):
        env["CCACHE_BASEDIR"] = str(ROOT)
        launcher = ["-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
    sh(CMAKE, "-S", ROOT, "-B", BUILD, "-DTACK_BUILD_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release", *launcher, env=env)
    sh(CMAKE, "--build", BUILD, "-j", str(min(os.cpu_count() or 2, 4)), env=env)
    sh(CMAKE, "--install", BUILD, "--prefix", tmp / "prefix")
    return tmp / "prefix"


def test_the_install_holds_the_library_headers_and_package_files(prefix):
    lib = prefix / "lib"
    for path in ("include/tack.h", "include/tack_kernel.h", "include/tack_dlpack.h", "lib/libtack.a",
                 "lib/libtack.so", "lib/libtack.so.1", "lib/cmake/Tack/TackConfig.cmake",
                 "lib/cmake/Tack/TackConfigVersion.cmake", "lib/pkgconfig/tack.pc", "share/doc/tack/LICENSE"):
        assert (prefix / path).exists(), path
    assert (lib / "libtack.so").resolve() == (lib / "libtack.so.1").resolve()
    # the run-time compilers' entry points are exported for the tests and the extension's
    # test hooks, but no installed header declares them (src/private/tack_private.h)
    installed = "".join(p.read_text() for p in (prefix / "include").glob("*.h"))
    assert "tack_nvrtc_" not in installed and "tack_hiprtc_" not in installed
    assert "TACK_NVRTC_" not in installed and "TACK_HIPRTC_" not in installed
    # the shared library exports the public API (the tack_ prefix) and nothing else
    if shutil.which("nm"):
        lines = sh("nm", "-D", "--defined-only", lib / "libtack.so.1").stdout.splitlines()
        names = [line.split()[-1] for line in lines if line.strip()]
        assert "tack_launch" in names and "tack_compile" in names and "tack_nvrtc_compile" in names
        assert [n for n in names if not n.startswith("tack_")] == [], names


def test_the_c_example_builds_against_the_cmake_package_and_runs(prefix, tmp_path):
    build = tmp_path / "example"
    sh(CMAKE, "-S", ROOT / "docs/examples/c", "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}")
    sh(CMAKE, "--build", build)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    for exe in ("saxpy", "saxpy_static"):  # Tack::tack (libtack.so) and Tack::tack_static (libtack.a)
        out = sh(build / exe, env=env).stdout
        assert out.splitlines() == ["y = 1 3 5 7 9 11 13 15", "saxpy: ok"], out
    deps = sh("ldd", build / "saxpy").stdout if shutil.which("ldd") else ""
    assert "libtack.so.1" in deps or not deps
    assert "libtack" not in (sh("ldd", build / "saxpy_static").stdout if deps else "")


@pytest.mark.skipif(not shutil.which("pkg-config"), reason="needs pkg-config")
def test_pkg_config_finds_the_moved_install(prefix, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(prefix, moved, symlinks=True)  # tack.pc finds the prefix from where it lies
    env = dict(os.environ, PKG_CONFIG_PATH=str(moved / "lib/pkgconfig"))
    flags = sh("pkg-config", "--cflags", "--libs", "tack", env=env).stdout.split()
    assert f"-I{moved}/lib/pkgconfig/../../include" in flags, flags
    exe = tmp_path / "saxpy"
    sh(shutil.which("cc") or "gcc", "-o", exe, ROOT / "docs/examples/c/saxpy.c", *flags)
    env = dict(os.environ, LD_LIBRARY_PATH=str(moved / "lib"), TACK_CACHE_DIR=str(tmp_path / "cache"))
    assert sh(exe, env=env).stdout.splitlines()[-1] == "saxpy: ok"
