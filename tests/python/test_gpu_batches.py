"""The language suite's CUDA and HIP checks compile their sources in batches
(_gpu_batch.batch_source): each source in a namespace of its own, its entry
points renamed, its macros undefined after it.  These tests hold the batch to
what one source alone proves: every member's entries are in the output, two
members with the same helpers and entry names do not clash, and a batch with
one bad member fails, so that its members are compiled alone and the bad one
is reported with its own message."""

import numpy as np
import pytest

import _gpu_batch as C
import _suite
import tack


@tack.kernel
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def total(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i]


def _sources(target):
    out = []
    for dt in (np.float32, np.float64, np.int64):
        f = np.ones(10, dt)
        out.append(saxpy.generated_source(2, f, f, target=target))
        out.append(total.generated_source(f, np.zeros(1, dt), target=target))
    return out


ARCH = {"cuda": "sm_90", "hip": "gfx90a"}


def _apart(fn, *args):
    """fn(*args) in a fresh process, as the capture plugin compiles: hiprtc's
    compiler library, loaded into a pytest worker that has forked and run
    other tests' threads, can take the whole worker down."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _available(target):
    try:
        return target in _suite.gpu_targets()
    except Exception:  # noqa: BLE001 -- no toolchain: the test is skipped
        return False


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_a_batch_holds_every_member_under_its_own_names(target):
    if not _available(target):
        pytest.skip(f"no {target} compiler on this machine")
    sources = _sources(target)
    program, entries = C.batch_source(sources)
    assert program.count("namespace tkb") == len(sources)
    assert [len(e) for e in entries] == [1] * len(sources)  # one phase each: tk_phase0
    assert len({n for e in entries for n in e}) == len(sources)  # renamed apart
    out = _apart(C.tool_compile, target, program, ARCH[target])
    assert all(n.encode() in out for e in entries for n in e)
    assert _apart(C.batch_job, (target, ARCH[target], [(f"k{i}", s) for i, s in enumerate(sources)])) is True


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_a_bad_member_fails_the_batch_and_then_alone(target):
    if not _available(target):
        pytest.skip(f"no {target} compiler on this machine")
    sources = _sources(target)
    bad = sources[1].replace("tk_phase0(", "tk_phase0(undeclared_type q, ", 1)
    members = [("good", sources[0]), ("bad", bad), ("good2", sources[2])]
    assert _apart(C.batch_job, (target, ARCH[target], members)) is None
    assert _apart(C.tool_compile, target, sources[0], ARCH[target])  # alone, each good member compiles
    with pytest.raises(Exception, match="undeclared_type"):  # and the bad one fails with its own message
        _apart(C.tool_compile, target, bad, ARCH[target])


def test_macros_of_one_member_do_not_reach_the_next():
    a = "#define TK_X 1\nextern \"C\" __global__ void k(int *p) { p[0] = TK_X; }\n"
    b = "#ifdef TK_X\n#error TK_X leaked\n#endif\nextern \"C\" __global__ void k(int *p) { p[0] = 2; }\n"
    program, entries = C.batch_source([a, b])
    assert entries == [["tkb0_k"], ["tkb1_k"]]
    first_undef = program.index("#undef TK_X")
    assert program.index("#define TK_X") < first_undef < program.index("#ifdef TK_X")


# --- OpenCL: libocloc, 24 sources to a program with their names renamed apart (_ocloc.batch_source)

import _ocloc  # noqa: E402

needs_ocloc = pytest.mark.skipif(_ocloc.library() is None, reason="libocloc not installed (Debian: intel-opencl-icd)")


@tack.kernel
def rotate(v, out):
    for i in range(v.shape[0]):
        out[i] = tack.cross(v[i], tack.vec3(0.0, 0.0, 1.0)) * 2.0


def _opencl_sources():
    f = np.ones(10, np.float32)
    vs = np.ones((4, 3), np.float32)
    out = [saxpy.generated_source(2, f, f, target="opencl"),
           total.generated_source(f, np.zeros(1, np.float32), target="opencl"),
           total.generated_source(np.ones(10, np.int32), np.zeros(1, np.int32), target="opencl")]
    try:
        out.append(rotate.generated_source(vs, np.zeros((4, 3), np.float32), target="opencl"))
    except Exception:  # noqa: BLE001 -- vectors spelled otherwise: the other three still batch
        pass
    return out


@needs_ocloc
def test_opencl_members_keep_their_own_names_and_compile_together():
    sources = _opencl_sources()
    program, kernels = _ocloc.batch_source(sources)
    assert all(len(k) == 1 for k in kernels) and len({k[0] for k in kernels}) == len(sources)
    rc, out = _ocloc.compile(program, "dg2")
    assert rc == 0, out.get("stdout.log", b"").decode()[-3000:]
    spv = b"".join(d for n, d in out.items() if n.endswith(".spv"))
    assert all(k[0].encode() in spv for k in kernels)
    assert _ocloc.check_many([(s, "dg2") for s in sources]) == [None] * len(sources)


@needs_ocloc
def test_opencl_bad_member_is_reported_alone():
    sources = _opencl_sources()
    bad = sources[1].replace("__kernel", "__kernel undeclared_type q;\n__kernel", 1)
    results = _ocloc.check_many([(sources[0], "dg2"), (bad, "dg2"), (sources[2], "dg2")])
    assert results[0] is None and results[2] is None
    assert results[1] is not None and "undeclared_type" in results[1][1]


@needs_ocloc
def test_opencl_member_that_needs_double_is_refused_for_dg2_and_named():
    """make test's ocloc checks compile without the optimizer (_ocloc.OPTIONS);
    a member that computes in double is still refused for dg2 (no fp64), alone,
    with its own log, and the others of its batch still pass."""
    sources = _opencl_sources()
    f64 = saxpy.generated_source(2, np.ones(10), np.ones(10), target="opencl")
    assert "fp64=1 */" in f64
    results = _ocloc.check_many([(sources[0], "dg2"), (f64, "dg2"), (sources[2], "dg2")])
    assert results[0] is None and results[2] is None
    assert results[1] is not None and "fp64" in results[1][1], results[1]
    if not _suite.TEST_ALL:
        assert "-cl-opt-disable" in _ocloc.OPTIONS


def test_pasted_names_take_their_arguments_rename():
    src = ("#define TK_V(N, T) typedef struct { T v[2]; } N; static T tk_dot_##N(N a) { return a.v[0]; }\n"
           "#define TK_VF(N, T) TK_V(N, T) static T tk_len_##N(N a) { return tk_dot_##N(a); }\n"
           "TK_VF(tk_vec2, float)\n"
           "__kernel void tk_phase0(__global float *x) { tk_vec2 a; a.v[0] = 1; x[0] = tk_len_tk_vec2(a); }\n")
    program, kernels = _ocloc.batch_source([src, src])
    assert kernels == [["tkb0_tk_phase0"], ["tkb1_tk_phase0"]]
    assert "#define tk_len_tk_vec2 tk_len_tkb0_tk_vec2" in program
    assert "#define tk_dot_tk_vec2 tk_dot_tkb1_tk_vec2" in program
    if _ocloc.library() is not None:
        rc, out = _ocloc.compile(program, "dg2")
        assert rc == 0, out.get("stdout.log", b"").decode()[-3000:]
