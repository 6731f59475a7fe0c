"""Many CUDA, HIP or Metal sources compiled as one program, for the GPU compile checks.

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

The Metal dialect's sources are batched the same way for the MSL type check
(msl_batch_source): clang++ (or Apple's compiler) starts and reads the
header once for up to BATCH["metal"] sources instead of once a source; the
kernels, which OpenCL's and Metal's rules give C linkage even inside a
namespace, renamed apart by macro, and the header included once before the
first member (its guard makes each member's own #include empty).  The
lint (_msl.lint) reads each member as it stands.

compile_all() is the whole of it for a list of (target, kernel name, arch,
source): the batches, then every member of a failed batch (and every
source a batch could not take) alone, each failure with its kernel's name
and its own message.

The capture plugin (_cuda_capture.py) uses it; it is a module of its own
so that importing it wraps no kernel (a plugin's import does).
"""

import functools
import os
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
SIZES = {"cuda": BATCH, "hip": BATCH, "metal": 48}  # sources per program, by target
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


_MSL_ENTRY = re.compile(r"^[ \t]*kernel[ \t]+void[ \t]+(\w+)[ \t]*\(", re.M)


def msl_batch_source(sources):
    """One MSL translation unit that holds every source in `sources` for the
    type check, each in a namespace of its own with its kernels renamed apart
    (tkb<i>_<name>) and its macros undefined after it; and, for each source,
    the names its kernels have in the batch."""
    parts, entries = ["#include <metal_stdlib>\n"], []
    for i, src in enumerate(sources):
        names = _MSL_ENTRY.findall(src)
        entries.append([f"tkb{i}_{n}" for n in names])
        parts.append("".join(f"#define {n} tkb{i}_{n}\n" for n in names))
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
    if target == "metal":
        return _msl_batch_job(arch, members)
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


def _msl_batch_job(arch, members):
    """batch_job for the Metal check: True when the batch type-checks and every
    member passes the lint and has a kernel (each kept in the output cache as
    that fact), else None."""
    import _msl

    program, entries = msl_batch_source([src for _, src in members])
    if not all(entries) or any(_msl.lint(src) for _, src in members):
        return None
    if _msl.check(program, timeout=600) is not None:
        return None
    digest = hashlib.sha256(program.encode()).hexdigest()
    for (_, src), names in zip(members, entries):
        _tool_cache.store("msl-check", tool_version("metal"), arch, "", src, ("batch", digest, names))
    return True


BATCH_TOOL = {"cuda": "nvrtc", "hip": "hiprtc", "metal": "msl-check"}


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


# ------------------------------------------- the language suite's compiles: batches, then the rest alone
def compile_checked(target, src, arch):
    """Compile one source for the target (or take the output kept from an
    earlier run: _tool_cache.py); raise with the tool's message when it fails
    or its output holds no kernel."""
    version = tool_version(target)
    if target == "metal":
        import _msl

        # "" for a clean check, so that the cache keeps it (it keeps no None)
        problems = _tool_cache.cached("msl-check", version, arch, "", src, lambda: _msl.check(src) or "",
                                      ok=lambda out: out == "")
        if not (problems == "" or kept_by_batch(target, src, arch)):
            raise RuntimeError(problems)
        if "tack-metal: phases=" not in src:
            raise RuntimeError("no layout comment in the MSL")
        return
    if target == "hip":
        code = _tool_cache.cached("hiprtc", version, arch, "", src, lambda: _core._hiprtc_compile(src, arch))
        if not code.startswith(b"\x7fELF") or (b"tk_phase0" not in code and "tack-hip: phases= " not in src):
            raise RuntimeError("hiprtc returned no code object with the kernel's phases")
        return
    ptx = _tool_cache.cached("nvrtc", version, arch, "", src, lambda: nvrtc_compile(src, arch))
    if ".entry" not in ptx and "tack-cuda: phases= " not in src:
        raise RuntimeError("no kernel entry in the PTX")


def compile_job(job):
    """None when (target, kernel name, arch, source) compiles alone, else the
    failure: the kernel's name, the architecture, the tool's message and the source."""
    target, name, arch, src = job
    try:
        compile_checked(target, src, arch)
        return None
    except Exception as e:  # noqa: BLE001 -- every failure is reported
        return {"kernel": name, "arch": arch, "error": str(e)[:3000], "source": src}


def _pool_map(fn, jobs, chunksize):
    """fn over jobs in spawned worker processes, one a core (_ocloc's pool; a
    process each: hiprtc's compiler library is not thread-safe)."""
    import _ocloc

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return _ocloc.pool_map(fn, jobs, cores, chunksize)


def compile_all(jobs, pool_map=_pool_map):
    """For each (target, kernel name, arch, source) of `jobs`, in order: None when
    it compiled, else compile_job's failure.  Sources that no earlier run kept
    go SIZES[target] to a program first (batch_job); the members of a batch
    that fails are compiled alone, as are the sources kept from a single
    compile, so a failure names its own kernel with its own message.  Also
    {target: {"batches": n, "batches_failed": m}}."""
    done, groups = set(), {}
    for i, (target, name, arch, src) in enumerate(jobs):
        if target in BATCH_TOOL:
            if kept_by_batch(target, src, arch):
                done.add(i)
            elif _tool_cache.lookup(BATCH_TOOL[target], tool_version(target), arch, "", src) is None:
                groups.setdefault((target, arch), []).append(i)
    batches = [(key, idx[k:k + SIZES[key[0]]]) for key, idx in groups.items()
               for k in range(0, len(idx), SIZES[key[0]])]
    outcomes = pool_map(batch_job, [(t, a, [(jobs[i][1], jobs[i][3]) for i in idx]) for (t, a), idx in batches], 1)
    stats = {}
    for ((target, _), idx), ok in zip(batches, outcomes):
        s = stats.setdefault(target, {"batches": 0, "batches_failed": 0})
        s["batches"] += 1
        s["batches_failed"] += not ok
        if ok:
            done.update(idx)
    rest = [i for i in range(len(jobs)) if i not in done]
    results = [None] * len(jobs)
    for i, failure in zip(rest, pool_map(compile_job, [jobs[i] for i in rest], 4)):
        results[i] = failure
    return results, stats
