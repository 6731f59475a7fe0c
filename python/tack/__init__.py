"""Tack: data-parallel kernels in plain Python, on CPUs and GPUs.

Write a kernel as a Python function, decorate it with ``@tack.kernel`` and
call it with Tack arrays or NumPy arrays::

    import numpy as np
    import tack

    @tack.kernel
    def saxpy(a, x, y):
        for i in range(y.shape[0]):
            y[i] = a * x[i] + y[i]

    x = tack.array(np.arange(4, dtype=np.float32))
    y = tack.ones(4)
    saxpy(2.0, x, y)
    print(y.numpy())          # [1. 3. 5. 7.]

Arrays live on a device ("cpu", "cuda", ...); see ``tack.devices()``.
"""

import os as _os
import sys as _sys

if _sys.platform == "win32":  # pragma: no cover - Windows only
    # Windows has no run-time search path: tack._core finds tack.dll (tack/lib) through the
    # process's DLL directories, added here before the import (CMakeLists.txt: the rpath).
    _lib = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "lib")
    if _os.path.isdir(_lib):
        _dll_directory = _os.add_dll_directory(_lib)

from . import _core

_core._config_check()  # a TACK_* variable whose value cannot be read is an error now, naming it
from . import config  # noqa: E402  (tack.config: every setting, docs/configuration.md)
from ._core import (  # noqa: E402
    Array,
    DType,
    bool,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f16,
    f32,
    f64,
    vec2,
    vec3,
    vec4,
    vec2d,
    vec3d,
    vec4d,
    vec2i,
    vec3i,
    vec4i,
    mat22,
    mat33,
    mat44,
    mat22d,
    mat33d,
    mat44d,
    complex64,
    complex128,
    quat,
    quatd,
    transform,
    transformd,
    bf16,
    devices,
    get_default_device,
    set_default_device,
    synchronize,
)
from ._array import array, asarray, copyto, dtype, empty, full, ones, zeros
from ._array import empty_like, full_like, ones_like, zeros_like
from ._interop import array_from_ptr, from_dlpack
from ._cai import from_cuda_array_interface  # noqa: E402  (the CUDA Array Interface both ways)
from ._structs import StructArray, array_field, struct

__version__ = _core.__version__


# For C extensions built against Tack, in NumPy's manner (numpy.get_include()):
# the wheel carries the public headers and the shared libtack that tack._core
# itself links, beside the extension, so an extension that links it shares the
# one runtime of the process (docs/getting-started.md, "With pip").
def get_include():
    """The directory of Tack's public C headers (``tack.h``, ``tack_kernel.h``,
    ``tack_dlpack.h``), for a compiler's ``-I``."""
    return _installed("include", "tack.h")


def get_library():
    """The directory of libtack, the shared library ``tack._core`` links
    (``libtack.so`` on Linux, ``libtack.dylib`` on macOS, ``tack.dll`` with its
    import library ``tack.lib`` on Windows), for a linker's ``-L`` (with
    ``-ltack``) and a run-time search path."""
    return _installed("lib", _library_names(_sys.platform))


def _library_names(platform):
    """The file names libtack's build gives the shared library on `platform`
    (a ``sys.platform`` value), the usual one first: CMake names the DLL
    ``tack.dll`` with MSVC's conventions (MSVC, clang, clang-cl) and
    ``libtack.dll`` with MinGW's (gcc, ``zig cc``)."""
    if platform == "win32":
        return ("tack.dll", "libtack.dll")
    if platform == "darwin":
        return ("libtack.dylib",)
    return ("libtack.so",)


def _installed(folder, names, base=None):
    """The folder `folder` beside the extension (or in `base`) when it holds
    one of `names` (a file name or a tuple of them); else a RuntimeError."""
    os = _os
    names = (names,) if isinstance(names, str) else tuple(names)
    name = " or ".join(names)
    # beside the extension: the package's own directory in a wheel, and the
    # installed part of an editable install
    where = os.path.join(base or os.path.dirname(os.path.abspath(_core.__file__)), folder)
    if not any(os.path.isfile(os.path.join(where, n)) for n in names):
        raise RuntimeError(
            f"Tack's {name} is not installed beside {base or _core.__file__}: this build of tack has no "
            f"C {'headers' if folder == 'include' else 'library'} (install the tack-kernels wheel, "
            "or build with scikit-build-core: pip install . or uv sync)"
        )
    return where


# What the kernel front end (src/python/frontend*.c) needs from Python, handed
# to the extension once here; the modules behind them are imported on first use.
def _getsourcelines(fn):
    from ._source import cell_name, getsourcelines

    lines, first = getsourcelines(fn)
    if getattr(_debug_checking, "active", False):  # debug mode's compile check: breakpoint() is allowed
        from ._debug import without_breakpoints

        lines = without_breakpoints(lines)
    cell = cell_name(getattr(getattr(fn, "__code__", None), "co_filename", None))
    return (lines, first) if cell is None else (lines, first, cell)  # a notebook cell: its name, for the module


_debug_checking = __import__("threading").local()


def _getline(filename, lineno):
    import linecache

    from ._source import cell_file

    return linecache.getline(cell_file(filename), lineno)  # "Cell In[3]": the cell's text


_CALL_HOOKS = []  # bvh_call, grid_call, struct_call: imported at the first call that needs them


def _struct_call(kernel, args, kwargs, method):
    if not _CALL_HOOKS:
        from ._bvh import bvh_call
        from ._hashgrid import grid_call
        from ._structs import struct_call

        _CALL_HOOKS[:] = [bvh_call, grid_call, struct_call]
    bvh_call, grid_call, struct_call = _CALL_HOOKS
    # a tack.Bvh or tack.Mesh argument first; its rewritten kernel's call comes back here for the grids and structs
    out = bvh_call(kernel, args, kwargs, method)
    if out is not NotImplemented:
        return out
    out = grid_call(kernel, args, kwargs, method)  # a tack.HashGrid argument (docs/spatial.md)
    if out is not NotImplemented:
        return out
    return struct_call(kernel, args, kwargs, method)


_core._set_hooks(getsourcelines=_getsourcelines, getline=_getline, struct_call=_struct_call)


# The last C compiler the CPU backend tries (after TACK_CC, CC and cc, gcc or
# clang on PATH; docs/backends.md) is the clang of the ziglang wheel -- the
# `compiler` extra -- run as `zig cc`.  The package's directory is only known
# here, so it is handed to libtack as the zig setting, unless TACK_ZIG gave
# it already (set and empty: do not use zig).
def _offer_ziglang():
    import os

    if config.source("zig") != "default":
        return
    from importlib.util import find_spec

    try:
        spec = find_spec("ziglang")
    except (ImportError, ValueError):
        return
    exe = "zig.exe" if os.name == "nt" else "zig"  # the Windows wheel's binary (docs/platforms.md)
    for where in (spec.submodule_search_locations or []) if spec else []:
        zig = os.path.join(where, exe)
        if os.path.isfile(zig) and os.access(zig, os.X_OK):
            config.zig = zig
            config._PYTHON_DEFAULTS["zig"] = zig  # what tack.config.reset() puts back
            return


_offer_ziglang()
del _offer_ziglang

__all__ = [
    "Array", "DType", "array", "asarray", "copyto", "dtype", "empty", "full", "ones", "zeros",
    "empty_like", "full_like", "ones_like", "zeros_like",
    "array_from_ptr", "from_dlpack", "from_cuda_array_interface", "struct", "array_field", "StructArray",
    "devices", "get_default_device", "set_default_device", "synchronize", "__version__",
    "get_include", "get_library",
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64",
    "vec2", "vec3", "vec4", "vec2d", "vec3d", "vec4d", "vec2i", "vec3i", "vec4i",
    "mat22", "mat33", "mat44", "mat22d", "mat33d", "mat44d", "complex64", "complex128",
    "quat", "quatd", "transform", "transformd",
    "bf16",
]

# the kernel compiler's Python side: @tack.kernel, @tack.func and the intrinsics
from ._kernels import *  # noqa: F401,F403,E402
from ._kernels import __all__ as _kernel_all  # noqa: E402
from ._intrinsics import *  # noqa: F401,F403,E402
from ._intrinsics import __all__ as _intrinsic_all  # noqa: E402

__all__ += list(_kernel_all) + list(_intrinsic_all)

# tack.profile(): compiles and launches timed, a table and a Chrome trace (docs/performance.md)
from ._profile import ProfileEvent, profile  # noqa: E402

__all__ += ["profile", "ProfileEvent"]

# streams and events: ordering work on a GPU (docs/backends.md, "Streams, events and graphs")
from ._streams import Event, Stream, stream  # noqa: E402

__all__ += ["Stream", "Event", "stream"]

# graphs: a stream's launches captured once, replayed with one call (docs/backends.md, "Graphs")
from ._graphs import Graph, capture  # noqa: E402

__all__ += ["capture", "Graph"]

# diagnostics: tack.info(), what `python -m tack` reports (docs/troubleshooting.md)
from ._info import info  # noqa: E402

__all__ += ["info"]

# counter-based random numbers for kernels (tack.random.uniform, ...): a
# submodule, kept out of __all__ so that `from tack import *` does not shadow
# the standard library's random
from . import random  # noqa: E402
from . import _pickle  # noqa: E402,F401  (hands the extension how arrays and kernels pickle)

# parallel primitives written as Tack kernels: tack.scan, tack.sort, ... (docs/algorithms.md), and
# the spatial queries further down: imported on first use (__getattr__ below), since they import
# NumPy, whose import is most of `import tack`'s time when nothing has imported it yet
_ALGORITHMS = ["scan", "sort", "argsort", "segmented_reduce", "compact", "unique", "searchsorted", "histogram",
               "reduce"]  # tack._algorithms.__all__ (tests/python/test_algorithms.py holds them equal)

__all__ += _ALGORITHMS

# reverse-mode differentiation: tack.Tape, and kernels as PyTorch and JAX functions
# (docs/differentiation.md), imported on first use as the primitives are: a kernel's .adjoint
# reaches tack._autodiff_run through this hook, which that module replaces with its own on import
def _adjoint(*args, **kwargs):
    from ._autodiff_run import adjoint

    return adjoint(*args, **kwargs)


_core._set_hooks(autodiff=_adjoint)

__all__ += ["Tape", "torch_function", "jax_function"]

# spatial queries: tack.HashGrid and its neighbour loop in kernels, tack.Bvh and tack.Mesh and
# their box, ray and closest-point queries (docs/spatial.md)
__all__ += ["HashGrid", "Bvh", "Mesh"]

_LAZY = dict({name: "._algorithms" for name in _ALGORITHMS}, HashGrid="._hashgrid", Bvh="._bvh", Mesh="._bvh",
             Tape="._autodiff_run", torch_function="._autodiff_frameworks", jax_function="._autodiff_frameworks")


# Warp's names that Tack spells another way: a port that keeps them (wp.length_sq -> tack.length_sq)
# is told the spelling, in Python and in a kernel's CompileError (docs/warp.md has the whole table)
_FROM_WARP = {
    "tid": "a kernel has no thread index: its parallel loop's variable is Warp's wp.tid(), "
           "'for i in range(n):' at the top level of the kernel (wp.launch's dim=n), "
           "'for i, j in tack.ndrange(n, m):' for dim=(n, m)",
    "launch": "call the kernel with its arguments, k(a, b, ...): its parallel loops' ranges are Warp's dim",
    "length_sq": "Warp's wp.length_sq(v) is tack.dot(v, v)",
    "select": "Warp's wp.select(c, a, b), b where c holds and a where not, is Python's 'b if c else a'",
    "where": "Warp's wp.where(c, a, b) is Python's 'a if c else b'",
    "min": "Warp's wp.min(a, b) is min(a, b) of numbers, np.minimum(a, b) of vectors",
    "max": "Warp's wp.max(a, b) is max(a, b) of numbers, np.maximum(a, b) of vectors",
    "abs": "Warp's wp.abs(x) is abs(x)",
    "pow": "Warp's wp.pow(x, y) is x ** y",
    "mod": "Warp's wp.mod(x, y), which keeps the sign of x, is math.fmod(x, y) (x % y takes the sign of y)",
    "cw_mul": "Warp's wp.cw_mul(a, b) is a * b: * and / of two vectors are component by component",
    "cw_div": "Warp's wp.cw_div(a, b) is a / b: * and / of two vectors are component by component",
    "rand_init": "tack.random has no state to make: a draw is tack.random.uniform(seed, counter), a counter per draw",
    "randf": "Warp's wp.randf(state) is tack.random.uniform(seed, counter), a counter per draw",
    "randn": "Warp's wp.randn(state) is tack.random.normal(seed, counter), a counter per draw",
    "randi": "Warp's wp.randi(state, lo, hi) is tack.random.randint(seed, counter, lo, hi)",
    "constant": "a module-level name is a constant in a kernel as it is: Warp's wp.constant(x) is x",
    "float32": "Warp's wp.float32 is tack.f32 (wp.float64 tack.f64, wp.int32 tack.i32, wp.uint32 tack.u32)",
    "float64": "Warp's wp.float64 is tack.f64",
    "int32": "Warp's wp.int32 is tack.i32",
    "int64": "Warp's wp.int64 is tack.i64",
    "uint32": "Warp's wp.uint32 is tack.u32",
    "vec3f": "Warp's wp.vec3f is tack.vec3 (f32 components; tack.vec3d f64)",
    "from_numpy": "tack.array(a, dtype) copies a NumPy array, tack.asarray(a) shares it",
    "hash_grid_query": "the neighbour loop is 'for j in grid.neighbors(p, radius):' of a tack.HashGrid "
                       "passed to the kernel (docs/spatial.md)",
    "hash_grid_query_next": "the neighbour loop is 'for j in grid.neighbors(p, radius):' of a tack.HashGrid "
                            "passed to the kernel (docs/spatial.md)",
    "hash_grid_point_id": "Warp's wp.hash_grid_point_id(grid, i) is grid.permutation[i]: pass grid.permutation "
                          "to the kernel as an array",
    "mesh_query_point": "Warp's wp.mesh_query_point is 'tri, q = mesh.closest_point(p)' of a tack.Mesh passed to "
                        "the kernel: q is the nearest point (docs/spatial.md)",
    "mesh_query_point_no_sign": "Warp's wp.mesh_query_point_no_sign is 'tri, q = mesh.closest_point(p)' of a "
                                "tack.Mesh passed to the kernel: q is the nearest point (docs/spatial.md)",
    "mesh_query_ray": "Warp's wp.mesh_query_ray is 'tri, t, u, v = mesh.ray_closest(origin, direction)' of a "
                      "tack.Mesh passed to the kernel; tri is -1 for a miss (docs/spatial.md)",
    "mesh_eval_position": "the point at a hit's u, v is (1 - u - v) * a + u * b + v * c of the triangle's "
                          "vertices a, b, c (Tack's u, v are not Warp's: docs/warp.md)",
    "bvh_query_aabb": "Warp's wp.bvh_query_aabb loop is 'for k in bvh.query_box(lo, hi):' of a tack.Bvh "
                      "passed to the kernel (docs/spatial.md)",
    "bvh_query_ray": "Warp's wp.bvh_query_ray loop is 'for k in bvh.query_ray(origin, direction):' of a "
                     "tack.Bvh passed to the kernel (docs/spatial.md)",
}


def __getattr__(name):
    """tack.scan, tack.HashGrid, ...: their module imported on first use (PEP 562)."""
    where = _LAZY.get(name)
    if where is None:
        hint = _FROM_WARP.get(name)
        raise AttributeError(f"module 'tack' has no attribute {name!r}" + (f": {hint}" if hint else ""))
    import importlib

    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
