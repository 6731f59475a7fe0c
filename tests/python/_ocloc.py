"""Intel's OpenCL compiler, libocloc, driven in-process through oclocInvoke.

libocloc compiles OpenCL C to SPIR-V and to the native code of Intel GPU
generations without a GPU (Debian: intel-opencl-icd).  compile() gives the
outputs by name (`k_<core><device>.spv`, `.bin`, the build log) and ocloc's
return code; the Level Zero backend will take its SPIR-V the same way.
"""

import ctypes
import ctypes.util

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
