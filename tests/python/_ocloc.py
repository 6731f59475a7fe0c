"""Intel's OpenCL compiler, libocloc, driven in-process through oclocInvoke.

libocloc compiles OpenCL C to SPIR-V and to the native code of Intel GPU
generations without a GPU (Debian: intel-opencl-icd).  compile() gives the
outputs by name (`k_<core><device>.spv`, `.bin`, the build log) and ocloc's
return code; the Level Zero backend will take its SPIR-V the same way.
compile_many() spreads many compiles over worker processes, one a core.

A compile costs about 1.4 s of one core here whatever the source holds (an
empty kernel takes most of that: the OpenCL C front end and the native code
generator start every time), and the language suite has about 550 sources,
so compile_many() puts BATCH uncached sources in one program.  OpenCL C has
no namespaces; the batch gives each member names of its own instead: before
a member, every identifier of the generated code's own (tk_*, the int*_t
typedefs the prelude declares) that the member does not define as a macro is
renamed tkb<i>_<name> by a #define, and after it those renames and every
macro the member defined are undefined.  Each member is thus compiled as it
stands, for the same device with the same options; the outputs must hold
every member's kernels under their batch names.  A batch that fails is not
trusted for any member: each is compiled alone, so a failure has its own
log.  A member compiled in a batch is kept in the output cache as that fact
(_tool_cache.py), not as bytes.
"""

import ctypes
import ctypes.util
import multiprocessing
import hashlib
import os
import re
from concurrent.futures import ProcessPoolExecutor

_lib = None

# The options every check here compiles with.  Under make test libocloc makes
# SPIR-V and native code without its optimizer (-cl-opt-disable): "libocloc
# accepts the source" is what the checks ask, and the optimizer was most of the
# cost: 48 of the language suite's sources, 24 to a program, took 21-24 CPU-s
# optimized and 2.6 unoptimized (paired, 2026-12-06), and the suite's check was
# make test's costliest test (125 CPU-s, cold, loaded).  Unoptimized, the front
# end still refuses what the device lacks (a double on dg2 fails to build
# either way).  make test-all (TACK_TEST_ALL=1) compiles with the optimizer, as
# test_atomics.py's sources already were.
OPTIONS = "-cl-std=CL1.2" + ("" if os.environ.get("TACK_TEST_ALL") == "1" else " -cl-opt-disable")


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


def compile(source: str, device: str, options: str = OPTIONS):
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

    kept = _tool_cache.lookup("ocloc", identity(), device, OPTIONS, source)
    if isinstance(kept, tuple) and kept[:1] == ("batch",):
        return 0, kept  # compiled in a batch by an earlier run (check_many)
    return _tool_cache.cached("ocloc", identity(), device, OPTIONS, source, run, ok=lambda out: out[0] == 0)


BATCH = 24
_NAME = re.compile(r"\b(tk_\w+|u?int(?:8|16|32|64)_t)\b")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)
_KERNEL = re.compile(r"__kernel\s+(?:__attribute__\(\([^)]*\)\)\s+)*void\s+(\w+)\s*\(")


_PASTING = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)(.*)$", re.M)


def _arguments(text, start):
    """The arguments of the macro call whose '(' is at text[start]."""
    args, depth, cur = [], 0, []
    for ch in text[start:]:
        if ch == "(":
            depth += 1
            if depth == 1:
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    return args


def _pasted_names(src):
    """The identifiers a source makes by token pasting, with the arguments as
    written: tk_add_##N called with tk_c64 makes tk_add_tk_c64, and
    tk_mm_##M##_##V two names' worth, which no rename of the text's own
    tokens reaches."""
    text = src.replace("\\\n", " ")
    out = []
    for m in _PASTING.finditer(text):
        name, params = m.group(1), [p.strip() for p in m.group(2).split(",")]
        chains = [re.split(r"\s*##\s*", c.group(0)) for c in re.finditer(r"\w+(?:\s*##\s*\w+)+", m.group(3))]
        if not chains:
            continue
        for call in re.finditer(rf"\b{name}\(", text):
            if m.start() <= call.start() < m.end():
                continue  # the definition itself
            args = dict(zip(params, _arguments(text, call.end() - 1)))
            if len(args) == len(params):
                out += ["".join(args.get(part, part) for part in chain) for chain in chains]
    return out


def batch_source(sources):
    """One OpenCL C program holding every source with names of its own; and,
    for each source, its kernels' names in the batch."""
    parts, kernels = [], []
    for i, src in enumerate(sources):
        macros = list(dict.fromkeys(_DEFINE.findall(src)))
        plain = [n for n in dict.fromkeys(_NAME.findall(src)) if n not in macros]
        # A pasted name (tk_add_tk_vec3 from tk_add_##N) is spelled two ways: a
        # macro that pastes N itself uses N as written, one that passes N on to
        # another has N replaced first (tk_add_tkb3_tk_vec3).  So every name of
        # the source's that a name holds after a '_' takes its rename there, and
        # the two spellings meet; a name that holds none is prefixed whole.
        # Only Tack's own names (tk_...) are renamed: a paste may also spell a
        # builtin the source calls (atomic_##_cmpxchg made from P##_cmpxchg).
        pasted = [n for n in _pasted_names(src) if n not in macros and n.startswith("tk_")]
        inner = re.compile(r"(?<=_)(" + "|".join(map(re.escape, sorted(plain, key=len, reverse=True))) + r")(?=_|$)") if plain else None
        renames = {}
        for n in dict.fromkeys(plain + pasted):
            r = inner.sub(lambda m: f"tkb{i}_{m.group(1)}", n) if inner else n
            renames[n] = r if r != n else f"tkb{i}_{n}"
        names = list(renames)
        kernels.append([renames.get(k, k) for k in _KERNEL.findall(src)])
        parts.append("".join(f"#define {n} {r}\n" for n, r in renames.items()))
        parts.append(src if src.endswith("\n") else src + "\n")
        parts.append("".join(f"#undef {n}\n" for n in names + macros))
    return "".join(parts), kernels


def _batch_job(job):
    """Compile one batch for one device: True when every member compiled (each
    kept in the output cache), None when the members must be compiled alone."""
    import _tool_cache

    sources, device = job
    program, kernels = batch_source(sources)
    rc, outputs = compile(program, device)
    kinds = {name.rsplit(".", 1)[-1] for name in outputs}
    if rc != 0 or not {"spv", "bin"} <= kinds:
        return None
    spv = b"".join(data for name, data in outputs.items() if name.endswith(".spv"))
    if not all(names and all(n.encode() in spv for n in names) for names in kernels):
        return None
    digest = hashlib.sha256(spv).hexdigest()
    for src, names in zip(sources, kernels):
        _tool_cache.store("ocloc", identity(), device, OPTIONS, src, ("batch", digest, names))
    return True


def _kept(source, device):
    import _tool_cache

    return _tool_cache.lookup("ocloc", identity(), device, OPTIONS, source)


def pool_map(fn, jobs, workers, chunksize):
    """fn over jobs in up to `workers` spawned processes (in this one when one would do)."""
    if workers <= 1 or len(jobs) <= 1:
        return [fn(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fn, jobs, chunksize=chunksize))


def check_many(jobs, workers=None):
    """For each (source, device) in `jobs`, in order: None when libocloc compiled
    it to SPIR-V and native code, else (return code, its log).  Sources not kept
    from an earlier run are compiled BATCH to a program first; the members of a
    batch that fails, and the sources of a batch of one, are compiled alone."""
    jobs = list(jobs)
    workers = workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    results, todo = [None] * len(jobs), {}
    for i, (source, device) in enumerate(jobs):
        if _kept(source, device) is None:
            todo.setdefault(device, []).append(i)
    batches = [idx[k:k + BATCH] for idx in todo.values() for k in range(0, len(idx), BATCH)]
    outcomes = pool_map(_batch_job, [([jobs[i][0] for i in b], jobs[b[0]][1]) for b in batches], workers, 1)
    alone = sorted(i for b, ok in zip(batches, outcomes) if not ok for i in b)
    kept = sorted(set(range(len(jobs))) - set(alone))  # in the cache now: read here, checked again
    done = pool_map(_compile_job, [jobs[i] for i in alone], workers, 8) + [_compile_job(jobs[i]) for i in kept]
    for i, (rc, out) in zip(alone + kept, done):
        if isinstance(out, tuple) and out[:1] == ("batch",):
            continue  # its batch's outputs held its kernels
        if rc != 0 or not {"spv", "bin"} <= {key.rsplit(".", 1)[-1] for key in out}:
            results[i] = (rc, out.get("stdout.log", b"").decode(errors="replace"))
    return results


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
