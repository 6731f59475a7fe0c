"""A pytest plugin: compile every kernel the language tests call for the GPUs too.

Loaded with ``-p _cuda_capture`` (tests/python on sys.path) by
_suite.gpu_capture, for test_cuda.py, test_hip.py and test_msl.py, which
run the language suite once in a subprocess with it for all three targets.
It wraps ``tack.kernel`` so that each call of a kernel -- on the CPU, as the
tests make it -- also asks for ``generated_source(*args, target=T)`` for each
target T and compiles that source through libtack's own compiler path for
T: CUDA to PTX with NVRTC, HIP to code objects with hiprtc (the
architectures are _suite.ARCHS: one per vendor, two under make test-all),
or, for "metal", the Metal Shading Language type-checked by clang++ against
tests/msl (_msl.py: no machine here has Apple's compiler).  The targets are
TACK_CAPTURE_TARGET, comma-separated ("cuda" when unset).  For Metal a
kernel that the CPU ran but the dialect refuses (f64, 64-bit atomics,
print: a CompileError or NotImplementedError naming Metal) is recorded as
refused, with its message, not as a failure, and checked again with its
float64 arguments made float32.  The outcome of the language tests
themselves does not matter here (the wrapper changes what some of them
inspect); what is recorded is whether each distinct source compiled.  The
compiles wait for the end of the session and then run in worker
processes, one a core (a process each: hiprtc's compiler library is not
thread-safe), their outputs kept between runs (_tool_cache.py); the
summaries, one per target, go to the JSON file named by TACK_CUDA_CAPTURE.

CUDA and HIP sources are compiled in batches (_gpu_batch.py).
"""

import hashlib
import os

import _gpu_batch
import _kernel_wrap
import _ocloc
import _suite
import _tool_cache
import tack
from tack import _core

_OUT = os.environ.get("TACK_CUDA_CAPTURE")
_TARGETS = os.environ.get("TACK_CAPTURE_TARGET", "cuda").split(",")
_seen = {t: set() for t in _TARGETS}
_pending = []  # (target, kernel name, source), compiled at the end of the session
_summaries = {t: {"target": t, "kernels": [], "compiled": 0, "failures": [], "no_source": 0} for t in _TARGETS}


def _compile_checked(target, src, arch):
    """Compile for the target (or take the output kept from an earlier run:
    _tool_cache.py); raise when the output holds no kernel."""
    version = _gpu_batch.tool_version(target)
    if target == "metal":
        import _msl

        problems = _tool_cache.cached("msl-check", version, arch, "", src, lambda: _msl.check(src),
                                      ok=lambda out: not out)
        if problems:
            raise RuntimeError(problems)
        if "tack-metal: phases=" not in src:
            raise RuntimeError("no layout comment in the MSL")
        return
    if target == "hip":
        code = _tool_cache.cached("hiprtc", version, arch, "", src, lambda: _core._hiprtc_compile(src, arch))
        if not code.startswith(b"\x7fELF") or (b"tk_phase0" not in code and "tack-hip: phases= " not in src):
            raise RuntimeError("hiprtc returned no code object with the kernel's phases")
        return
    ptx = _tool_cache.cached("nvrtc", version, arch, "", src, lambda: _gpu_batch.nvrtc_compile(src, arch))
    if ".entry" not in ptx and "tack-cuda: phases= " not in src:
        raise RuntimeError("no kernel entry in the PTX")


def _refused_by_metal(target, e):
    return target == "metal" and "Metal" in str(e) and isinstance(e, (tack.CompileError, NotImplementedError))


def _capture(k, args, kwargs):
    for target in _TARGETS:
        _capture_for(target, k, args, kwargs)


def _capture_for(target, k, args, kwargs):
    summary = _summaries[target]
    name = getattr(k, "__name__", "?")
    try:
        src = k.generated_source(*args, target=target, **kwargs)
    except Exception as e:  # a call the test expects to fail: nothing to compile
        if _refused_by_metal(target, e):
            summary.setdefault("refused", []).append(f"{name}: {e}"[:400])
            low = _kernel_wrap.single_precision(args)  # Metal has no double: checked again in f32
            if low is not None:
                try:
                    src = k.generated_source(*low, target=target, **kwargs)
                except Exception as e2:  # noqa: BLE001
                    if _refused_by_metal(target, e2):
                        summary.setdefault("refused_in_f32", []).append(f"{name}: {e2}"[:400])
                    return
                _add(target, name + "[f32]", src)
            return
        summary["no_source"] += 1
        summary.setdefault("no_source_why", []).append(f"{name}: {e}"[:300])
        return
    _add(target, name, src)


def _add(target, name, src):
    key = hashlib.sha256(src.encode()).hexdigest()
    if key in _seen[target]:
        return
    _seen[target].add(key)
    _summaries[target]["kernels"].append(name)
    _pending.append((target, name, src))


def _compile_job(job):
    target, name, arch, src = job
    try:
        _compile_checked(target, src, arch)
        return None
    except Exception as e:  # noqa: BLE001 -- every failure is reported
        return {"kernel": name, "arch": arch, "error": str(e)[:3000], "source": src}


def _map(fn, jobs, chunksize):
    """fn over jobs in spawned worker processes, one a core (_ocloc's pool)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return _ocloc.pool_map(fn, jobs, cores, chunksize)


def _compile_pending():
    jobs = [(target, name, arch, src) for target, name, src in _pending for arch in _suite.ARCHS[target]]
    _pending.clear()
    # CUDA and HIP sources not compiled by an earlier run go in batches first
    done, groups = set(), {}
    for i, (target, name, arch, src) in enumerate(jobs):
        if target in _gpu_batch.BATCH_TOOL:
            if _gpu_batch.kept_by_batch(target, src, arch):
                done.add(i)
            elif _tool_cache.lookup(_gpu_batch.BATCH_TOOL[target], _gpu_batch.tool_version(target), arch, "", src) is None:
                groups.setdefault((target, arch), []).append(i)
    batches = [(key, idx[k:k + _gpu_batch.BATCH]) for key, idx in groups.items() for k in range(0, len(idx), _gpu_batch.BATCH)]
    outcomes = _map(_gpu_batch.batch_job, [(t, a, [(jobs[i][1], jobs[i][3]) for i in idx]) for (t, a), idx in batches], 1)
    for ((target, _), idx), ok in zip(batches, outcomes):
        summary = _summaries[target]
        summary["batches"] = summary.get("batches", 0) + 1
        summary["batches_failed"] = summary.get("batches_failed", 0) + (not ok)
        if ok:
            done.update(idx)
    rest = [job for i, job in enumerate(jobs) if i not in done]
    results = [None] * len(jobs)
    for i, failure in zip([i for i in range(len(jobs)) if i not in done], _map(_compile_job, rest, 4)):
        results[i] = failure
    for job, failure in zip(jobs, results):
        summary = _summaries[job[0]]
        if failure is None:
            summary["compiled"] += 1
        else:
            summary["failures"].append(failure)


_kernel_wrap.wrap_kernels(_kernel_wrap.after_each_call(_capture))


def pytest_sessionfinish(session, exitstatus):
    """Compile what the session captured, then write the summaries."""
    _compile_pending()
    _write()


_write = _kernel_wrap.write_summary_at_exit(_OUT, _summaries, ready=lambda: not _pending)
