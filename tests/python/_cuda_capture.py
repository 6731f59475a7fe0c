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
Under make test NVRTC and hiprtc each compile half of the calls, the halves
chosen by the call's CUDA source (_suite.HALVES); make test-all, every call.

The sources are compiled in batches (_gpu_batch.compile_all: CUDA and HIP
24 to a program, Metal 48 to a translation unit), the members of a batch
that fails alone, so that a failure names its kernel.
"""

import hashlib
import os

import _gpu_batch
import _kernel_wrap
import _suite
import tack

_OUT = os.environ.get("TACK_CUDA_CAPTURE")
_TARGETS = os.environ.get("TACK_CAPTURE_TARGET", "cuda").split(",")
_seen = {t: set() for t in _TARGETS}
# one folder of claims per run (its summary file's name and the run's xdist id), shared by its workers
_CLAIMS = _OUT and f"{_OUT}.claims-{os.environ.get('PYTEST_XDIST_TESTRUNUID', os.getpid())}"
if _CLAIMS:
    os.makedirs(_CLAIMS, exist_ok=True)
_pending = []  # (target, kernel name, source), compiled at the end of the session
_summaries = {t: {"target": t, "kernels": [], "compiled": 0, "failures": [], "no_source": 0} for t in _TARGETS}


def _refused_by_metal(target, e):
    return target == "metal" and "Metal" in str(e) and isinstance(e, (tack.CompileError, NotImplementedError))


def _capture(k, args, kwargs):
    # under make test NVRTC and hiprtc take complementary halves of the calls, by
    # their CUDA source (_suite.HALVES)
    cuda_src = None
    if _suite.sampling() and {"cuda", "hip"} & set(_TARGETS):
        try:
            cuda_src = k.generated_source(*args, target="cuda", **kwargs)
        except Exception:  # noqa: BLE001 -- no CUDA source: each target's own decides
            pass
    for target in _TARGETS:
        _capture_for(target, k, args, kwargs, cuda_src)


def _capture_for(target, k, args, kwargs, cuda_src=None):
    summary = _summaries[target]
    name = getattr(k, "__name__", "?")
    if cuda_src is not None and target in _suite.HALVES and not _suite.sampled(target, cuda_src):
        summary["other_half"] = summary.get("other_half", 0) + 1  # decided before generating its source
        return
    try:
        src = cuda_src if target == "cuda" and cuda_src is not None else \
            k.generated_source(*args, target=target, **kwargs)
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
    if cuda_src is None and target in _suite.HALVES and not _suite.sampled(target, src):
        summary["other_half"] = summary.get("other_half", 0) + 1
        return
    _add(target, name, src)


def _claimed_elsewhere(target, key):
    """Whether another worker of this run has already taken the source `key` for
    target.  The run's pytest-xdist workers each see part of the suite, and a
    kernel called by tests on both would otherwise be compiled by both (151 of
    577 HIP sources once): the first to create the key's file in the run's
    folder of claims compiles it and lists it; the other skips it, as it skips
    a source it has seen itself, so the merged summary names each source once."""
    if not _CLAIMS:
        return False
    try:
        os.close(os.open(os.path.join(_CLAIMS, f"{target}-{key}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return True
    return False


def _add(target, name, src):
    key = hashlib.sha256(src.encode()).hexdigest()
    if key in _seen[target]:
        return
    _seen[target].add(key)
    if _claimed_elsewhere(target, key):
        return
    _summaries[target]["kernels"].append(name)
    _pending.append((target, name, src))


def _compile_pending():
    jobs = [(target, name, arch, src) for target, name, src in _pending for arch in _suite.ARCHS[target]]
    _pending.clear()
    results, stats = _gpu_batch.compile_all(jobs)
    for target, counts in stats.items():
        _summaries[target].update(counts)
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
