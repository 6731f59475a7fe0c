"""The language suite has no race in a compound assignment, and the check
that says so can fail.

Every kernel that the language suite's files (_suite.FILES) call is compiled
again for C, CUDA and OpenCL with the _race_capture plugin.  Each compile runs the IR verifier (verify.c) after
every pass; it refuses a read-modify-write store in parallel code -- a
parallel loop's body or a @tack.func called from one -- that is not on the
iteration's own element.  Since every dialect is emitted from that IR, a
race there would be a race on every device; a clean run says the lowering
made every such update an atomic or refused it.  The same run with
TACK_DEBUG_RACY_RMW=1 (lowering leaves out the atomics and the refusal)
must be caught."""

import pathlib

import _kernel_wrap
import _suite

HERE = pathlib.Path(__file__).parent
SUITE = _suite.FILES


def _run(tmp_path, files, **env_extra):
    return _kernel_wrap.run_plugin("_race_capture", [HERE / f for f in files], "TACK_RACE_CAPTURE",
                                   tmp_path / "race.json", 900, **env_extra)


def test_the_language_suite_has_no_racy_compound_assignment(record_property):
    s = _suite.watched("_race_capture")  # the suite's one watched run
    assert not s["races"], "\n\n".join(f"{r['kernel']} ({r['target']}):\n{r['error']}" for r in s["races"][:3])
    assert not s["missing_atomics"], s["missing_atomics"][:5]
    # what was checked: enough kernels, own-element updates and atomics to mean something
    assert s["kernels"] >= 60
    assert s["sources"] == 3 * s["kernels"]
    assert s["rmw_parallel"] >= 5 and s["atomics"] >= 20, s
    record_property("language_suite", f"race verifier: {s['kernels']} kernels, {s['sources']} sources checked")
    print(s["kernels"], "kernels,", s["rmw_parallel"], "parallel read-modify-writes,", s["atomics"], "atomics")


def test_the_check_sees_a_lowering_that_forgets_the_atomics(tmp_path):
    s = _run(tmp_path, ("test_shared_cells.py",), TACK_DEBUG_RACY_RMW="1")
    racy = {r["kernel"] for r in s["races"]}
    assert {"product_into_one_cell", "half_grid_shared", "sum_through_a_function",
            "add_into_shared_sum"} <= racy, racy
    assert all("non-atomic read-modify-write" in r["error"] for r in s["races"])
