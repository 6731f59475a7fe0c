"""The language suite's CUDA and HIP checks compile their sources in batches
(_cuda_capture.batch_source): each source in a namespace of its own, its entry
points renamed, its macros undefined after it.  These tests hold the batch to
what one source alone proves: every member's entries are in the output, two
members with the same helpers and entry names do not clash, and a batch with
one bad member fails, so that its members are compiled alone and the bad one
is reported with its own message."""

import numpy as np
import pytest

import _cuda_capture as C
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
    out = C._batch_compile(target, program, ARCH[target])
    assert all(n.encode() in out for e in entries for n in e)
    assert C._batch_job((target, ARCH[target], [(f"k{i}", s) for i, s in enumerate(sources)])) is True


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_a_bad_member_fails_the_batch_and_then_alone(target):
    if not _available(target):
        pytest.skip(f"no {target} compiler on this machine")
    sources = _sources(target)
    bad = sources[1].replace("tk_phase0(", "tk_phase0(undeclared_type q, ", 1)
    members = [("good", sources[0]), ("bad", bad), ("good2", sources[2])]
    assert C._batch_job((target, ARCH[target], members)) is None
    assert C._compile_job((target, "good", ARCH[target], sources[0])) is None
    failure = C._compile_job((target, "bad", ARCH[target], bad))
    assert failure is not None and failure["kernel"] == "bad" and "undeclared_type" in failure["error"]


def test_macros_of_one_member_do_not_reach_the_next():
    a = "#define TK_X 1\nextern \"C\" __global__ void k(int *p) { p[0] = TK_X; }\n"
    b = "#ifdef TK_X\n#error TK_X leaked\n#endif\nextern \"C\" __global__ void k(int *p) { p[0] = 2; }\n"
    program, entries = C.batch_source([a, b])
    assert entries == [["tkb0_k"], ["tkb1_k"]]
    first_undef = program.index("#undef TK_X")
    assert program.index("#define TK_X") < first_undef < program.index("#ifdef TK_X")
