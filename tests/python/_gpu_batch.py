"""Many CUDA or HIP sources compiled as one program, for the GPU compile checks.

CUDA and HIP sources are compiled BATCH at a time: hiprtc spends about a
second of fixed cost on every program (its headers and device libraries)
whatever the kernel, NVRTC a tenth of that, and the suite has over 500
sources per target.  A batch is one C++ program holding each source in a
namespace of its own (tkb<i>), its `extern "C"` entry points renamed
tkb<i>_<name> by a macro, and every macro it defines undefined after it, so
each source is compiled as it stands, by the same compiler, for the same
architecture, with the same options; the output must hold every renamed
entry.  A batch that fails is compiled again a source at a time, so a
failure names its kernel and its own message.  A source compiled in a
batch is kept in the output cache as that fact (the batch output's digest
and the entries found), not as bytes.
(_kernel_wrap.py wraps the kernels.)

The capture plugin (_cuda_capture.py) uses it; it is a module of its own
so that importing it wraps no kernel (a plugin's import does).
"""

import functools
import hashlib
import re

import _tool_cache
from tack import _core


def nvrtc_compile(src, arch):
    """PTX through libtack's NVRTC (tack._core._nvrtc_compile), else ctypes."""
    fn = getattr(_core, "_nvrtc_compile", None)
    if fn is not None:
        return fn(src, arch)
    from _nvrtc_ctypes import compile_ptx

    return compile_ptx(src, arch)


@functools.lru_cache(maxsize=None)
def tool_version(target):
    """The identity of the tool that compiles for target, for the output cache's key."""
    if target == "metal":
        import _msl

        return _msl.compiler_identity()
    if target == "hip":
        return f"hiprtc {_core._hiprtc_version()}"
    fn = getattr(_core, "_nvrtc_version", None)
    return f"nvrtc {fn() if fn else 'ctypes'}"


BATCH = 24  # sources per NVRTC/hiprtc program (see the module's docstring)
_ENTRY = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(')
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)


def batch_source(sources):
    """One C++ program that holds every source in `sources`, each as it stands
    inside a namespace of its own with its entry points renamed; and, for each
    source, the names its entries have in the batch."""
    parts, entries = [], []
    for i, src in enumerate(sources):
        names = _ENTRY.findall(src)
        renamed = [f"tkb{i}_{n}" for n in names]
        entries.append(renamed)
        parts.append("".join(f"#define {n} {r}\n" for n, r in zip(names, renamed)))
        parts.append(f"namespace tkb{i} {{\n{src}\n}}\n")
        parts.append("".join(f"#undef {m}\n" for m in dict.fromkeys(_DEFINE.findall(src) + names)))
    return "".join(parts), entries


def tool_compile(target, src, arch):
    """The tool's output for one program, or raise with its log."""
    return _core._hiprtc_compile(src, arch) if target == "hip" else nvrtc_compile(src, arch).encode()


def batch_job(job):
    """Compile a batch; the list of members that compiled (each kept in the
    output cache), or None when the batch failed and its members must be
    compiled one at a time."""
    target, arch, members = job  # members: [(name, source)]
    program, entries = batch_source([src for _, src in members])
    try:
        out = tool_compile(target, program, arch)
    except Exception:  # noqa: BLE001 -- the members are compiled alone, each with its own message
        return None
    if target == "hip" and not out.startswith(b"\x7fELF"):
        return None
    if target == "cuda" and b".entry" not in out:
        return None
    if not all(names and all(n.encode() in out for n in names) for names in entries):
        return None
    digest = hashlib.sha256(out).hexdigest()
    for (_, src), names in zip(members, entries):
        _tool_cache.store(BATCH_TOOL[target], tool_version(target), arch, "", src, ("batch", digest, names))
    return True


BATCH_TOOL = {"cuda": "nvrtc", "hip": "hiprtc"}


def kept_by_batch(target, src, arch):
    """True when an earlier batch compiled this source (the output cache says so)."""
    found = _tool_cache.lookup(BATCH_TOOL[target], tool_version(target), arch, "", src)
    return isinstance(found, tuple) and found[:1] == ("batch",) and bool(found[2])


# ------------------------------------------- one batch, checked, for a test file's own sources
_HIPRTC_CHILD = ("import sys\nfrom tack import _core\n"
                 "sys.stdout.buffer.write(_core._hiprtc_compile(sys.stdin.read(), sys.argv[1])[:4])\n")


def nvrtc_checked(sources, arch):
    """(NVRTC's PTX for `sources` as one batch, each source's entry names in it), kept in the
    tests' output cache (a cached PTX is trusted only if it holds an entry)."""
    program, entries = batch_source(sources)
    ptx = _tool_cache.cached("nvrtc", tool_version("cuda"), arch, "", program, lambda: nvrtc_compile(program, arch),
                             lambda out: ".entry" in out)
    return ptx, entries


def hiprtc_checked(sources, arch):
    """The first 4 bytes of hiprtc's code object for `sources` as one batch (b"\\x7fELF"), or the
    end of its error; compiled in a process of its own, as tests/python/test_hip.py explains
    (comgr and PoCL share libLLVM), and kept in the tests' output cache."""
    import subprocess
    import sys

    program, _ = batch_source(sources)

    def compile_apart():
        proc = subprocess.run([sys.executable, "-c", _HIPRTC_CHILD, arch], input=program.encode(),
                              capture_output=True, timeout=600)
        return proc.stdout if proc.returncode == 0 else proc.stderr.decode(errors="replace")[-4000:]

    return _tool_cache.cached("hiprtc", tool_version("hip"), arch, "", program, compile_apart,
                              lambda out: out == b"\x7fELF")
