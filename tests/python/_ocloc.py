"""Intel's OpenCL compiler, libocloc, driven in-process through oclocInvoke.

libocloc compiles OpenCL C to SPIR-V and to the native code of Intel GPU
generations without a GPU (Debian: intel-opencl-icd).  compile() gives the
outputs by name (`k_<core><device>.spv`, `.bin`, the build log) and ocloc's
return code; the Level Zero backend will take its SPIR-V the same way.
compile_many() spreads many compiles over worker processes, one a core: a
compile takes about 0.3 s of one core and the language suite has over a
thousand.
"""

import ctypes
import ctypes.util
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

_lib = None


def library():
    """The loaded libocloc, or None when it is not installed."""
    global _lib
    if _lib is None:
        for name in ("libocloc.so", "libocloc.so.1", ctypes.util.find_library("ocloc")):
            if not name:
                continue
            try:
                _lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
    return _lib


def compile(source: str, device: str, options: str = "-cl-std=CL1.2"):
    """(return code, {output name: bytes}) for `source` compiled for `device` ("pvc", "dg2")."""
    lib = library()
    if lib is None:
        raise RuntimeError("libocloc is not installed (Debian: intel-opencl-icd)")
    args = [b"ocloc", b"compile", b"-file", b"k.cl", b"-device", device.encode(), b"-options", options.encode(), b"-q"]
    argv = (ctypes.c_char_p * len(args))(*args)
    data = source.encode()
    src = (ctypes.POINTER(ctypes.c_uint8) * 1)(ctypes.cast(ctypes.c_char_p(data), ctypes.POINTER(ctypes.c_uint8)))
    lens = (ctypes.c_uint64 * 1)(len(data) + 1)
    names = (ctypes.c_char_p * 1)(b"k.cl")
    nout = ctypes.c_uint32(0)
    dout = ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8))()
    lout = ctypes.POINTER(ctypes.c_uint64)()
    nameout = ctypes.POINTER(ctypes.c_char_p)()
    lib.oclocInvoke.restype = ctypes.c_int
    rc = lib.oclocInvoke(ctypes.c_uint(len(args)), argv, ctypes.c_uint32(1), src, lens, names, ctypes.c_uint32(0), None,
                         None, None, ctypes.byref(nout), ctypes.byref(dout), ctypes.byref(lout), ctypes.byref(nameout))
    outputs = {}
    for i in range(nout.value):
        outputs[nameout[i].decode(errors="replace")] = ctypes.string_at(dout[i], lout[i])
    lib.oclocFreeOutput(ctypes.byref(nout), ctypes.byref(dout), ctypes.byref(lout), ctypes.byref(nameout))
    return rc, outputs


_identity = None


def identity():
    """The libocloc loaded (its file's name, size and time), for _tool_cache.py's key."""
    global _identity
    if _identity is None:
        path = _library_path() if library() is not None else None
        st = os.stat(path) if path else None
        _identity = f"{path} {st.st_size} {st.st_mtime_ns}" if st else "unknown"
    return _identity


def _library_path():
    """The file libocloc was loaded from (from /proc/self/maps), or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libocloc" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def _compile_job(job):
    import _tool_cache

    source, device = job

    def run():
        rc, outputs = compile(source, device)
        return rc, {name: (data if name.endswith(".log") else len(data)) for name, data in outputs.items()}

    return _tool_cache.cached("ocloc", identity(), device, "-cl-std=CL1.2", source, run, ok=lambda out: out[0] == 0)


def compile_many(jobs, workers=None):
    """[(return code, {output name: bytes for logs, size for binaries})] for each
    (source, device) in `jobs`, in order, compiled in `workers` processes
    (default: one a core).  The workers are spawned, not forked: the calling
    process may hold threads (PoCL's, PyTorch's) that a fork would copy mid-step."""
    jobs = list(jobs)
    workers = workers or min(len(jobs), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if workers <= 1:
        return [_compile_job(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_compile_job, jobs, chunksize=8))
