"""NVRTC through ctypes, with the options of src/backends/cuda/nvrtc.c.

A fallback for tests when the extension lacks ``_core._nvrtc_compile``;
raises RuntimeError when NVRTC is missing or the source does not compile.
"""

import ctypes
import os

_NAMES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so",
          "/usr/local/cuda/lib64/libnvrtc.so")
_lib = None


def _load():
    global _lib
    if _lib is None:
        env = os.environ.get("TACK_NVRTC_PATH")
        for name in ((env,) if env else ()) + _NAMES:
            try:
                _lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise RuntimeError("NVRTC (libnvrtc.so) was not found")
    return _lib


def available():
    try:
        _load()
        return True
    except RuntimeError:
        return False


def compile_ptx(src, arch="sm_80"):
    lib = _load()
    cc = arch.replace("sm_", "").replace("compute_", "")
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = [f"--gpu-architecture=compute_{cc}".encode(), b"--std=c++17", b"-default-device", b"--fmad=false"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    try:
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if rc:
            n = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(n.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC could not compile for {arch}:\n{log.value.decode(errors='replace')}")
        n = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetPTX(prog, buf)
        return buf.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
