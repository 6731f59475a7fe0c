"""tack.profile() on the CPU: the compile's steps, the launches with their
host and device (generated code) times, each pool thread's part of a
parallel loop, the table sorted by total time, the Chrome trace, debug mode,
and nothing recorded outside a profile.  The GPU's device times through
events are tested against the fake HIP runtime (test_hip_fake.py), on
OpenCL where a device is installed, and on Metal against the fake Metal
(tests/c/fake_metal.c): its command buffers' GPUStartTime and GPUEndTime.

One kernel of this file's own (a fresh compile in this process, from the
cache or the C compiler) serves every test; the module fixture compiles it
inside a profile once and keeps that profile.
"""

import json
import re
import textwrap

import numpy as np
import pytest

import _fake_runtime
import tack


def _kernel():
    @tack.kernel
    def prof_axpy(a, x, y):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    return prof_axpy


@pytest.fixture(scope="module")
def run():
    k = _kernel()
    x = np.ones(200_000)
    y = np.zeros(200_000)
    with tack.config.override(num_threads=2):
        with tack.profile() as p:
            for _ in range(3):
                k(2.0, x, y)
    np.testing.assert_array_equal(y, 6.0)
    return k, x, y, p


def test_the_compile_is_recorded_step_by_step(run):
    _, _, _, p = run
    steps = [(e.phase, e.device) for e in p.events if e.kind == "compile" and e.name == "prof_axpy"]
    assert [s for s, _ in steps[:4]] == ["frontend", "lower", "passes", "emit"], steps
    assert steps[0][1] == "host" and steps[1][1] == "c"
    assert steps[4][0] in ("cc", "cache hit") and steps[4][1] == "cpu", steps  # the build: compiled or found
    assert all(e.host_ns > 0 and e.device_ns == -1 for e in p.events if e.kind == "compile")


def test_launches_have_host_and_device_times(run):
    _, _, _, p = run
    launches = [e for e in p.events if e.kind == "launch"]
    assert len(launches) == 3 and {e.device for e in launches} == {"cpu"}
    for e in launches:  # the generated code's time is inside the call's
        assert 0 < e.device_ns <= e.host_ns, e
    # each pool thread's part: inside its launch, on the thread's own track (slot)
    workers = [e for e in p.events if e.kind == "worker"]
    assert workers and {e.name for e in workers} == {"prof_axpy"} and {e.thread for e in workers} <= {0, 1}
    for w in workers:
        assert any(l.start_ns <= w.start_ns and w.start_ns + w.host_ns <= l.start_ns + l.host_ns for l in launches)


def test_the_table_is_sorted_by_total_time(run):
    _, _, _, p = run
    text = str(p)
    assert text == p.table()
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["kind", "step", "kernel", "device"]
    rows = [ln for ln in lines[2:]]
    launch = next(r for r in rows if r.startswith("launch"))
    assert launch.split()[4] == "3", launch  # three calls, one row
    totals = [max(sum(e.host_ns for e in p.events if (e.kind, e.phase, e.device) == key),
                  sum(max(e.device_ns, 0) for e in p.events if (e.kind, e.phase, e.device) == key))
              for key in [tuple(re.split(r"\s{2,}", r.strip())[i] for i in (0, 1, 3)) for r in rows]]
    assert totals == sorted(totals, reverse=True), text


def test_the_chrome_trace(run, tmp_path):
    _, _, _, p = run
    path = tmp_path / "trace.json"
    p.save(path)
    trace = json.loads(path.read_text())
    ev = trace["traceEvents"]
    procs = {e["args"]["name"]: e["pid"] for e in ev if e["name"] == "process_name"}
    assert set(procs) >= {"host", "cpu"}
    spans = [e for e in ev if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    host = [e for e in spans if e["pid"] == procs["host"]]
    assert sum(e["cat"] == "launch" for e in host) == 3 and any(e["name"] == "prof_axpy: frontend" for e in host)
    cpu = [e for e in spans if e["pid"] == procs["cpu"]]
    assert sum(e["tid"] == 0 for e in cpu) == 3  # the "kernels" track: each launch's device time
    assert {e["tid"] for e in cpu if e["cat"] == "worker"} <= {1, 2}  # a track per pool thread
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert tracks[(procs["cpu"], 0)] == "kernels"


def test_nothing_is_recorded_outside_a_profile_and_profiles_do_not_nest(run):
    k, x, y, _ = run
    k(1.0, x, y)  # not recorded anywhere
    with tack.profile() as p:
        with pytest.raises(ValueError, match="already recording"):
            with tack.profile():
                pass
        k(1.0, x, y)
    assert [e.kind for e in p.events if e.kind != "worker"] == ["launch"]  # the hot path: no compile
    k(1.0, x, y)
    assert len([e for e in p.events if e.kind == "launch"]) == 1


def test_a_decorator_debug_mode_and_the_printed_table(capsys):
    @tack.kernel(jit=False)
    def prof_debug(x):
        for i in range(x.shape[0]):
            x[i] += 1

    p = tack.profile(print=True)

    @p
    def work(x):
        prof_debug(x)
        prof_debug(x)

    x = np.zeros(4)
    work(x)
    np.testing.assert_array_equal(x, 2)
    launches = [e for e in p.events if e.kind == "launch"]
    assert [(e.name, e.device, e.device_ns) for e in launches] == [("prof_debug", "python", -1)] * 2
    out = capsys.readouterr().out
    assert "prof_debug" in out and "python" in out and out.splitlines()[0].startswith("kind")


def test_the_performance_chapter_runs(tmp_path, monkeypatch):
    import pathlib
    import re
    import runpy

    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "performance.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for k, code in enumerate(blocks):  # from a file: the front end reads a kernel's source back
        script = tmp_path / f"performance_{k}.py"
        script.write_text(code)
        runpy.run_path(str(script))
    assert json.loads((tmp_path / "smooth-trace.json").read_text())["traceEvents"]


OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (make test installs PoCL as root)")
def test_opencl_launches_have_device_times_from_their_events():
    """On OpenCL a launch's device time is read from its commands' profiling events (the first
    phase's start to the last phase's end), when the profile stops."""
    k = _kernel()
    x = tack.array(np.ones(100_000), device=OPENCL)
    y = tack.zeros(100_000, tack.f64, device=OPENCL)
    k(2.0, x, y)  # built outside the profile
    with tack.profile() as p:
        for _ in range(3):
            k(2.0, x, y)
    np.testing.assert_array_equal(y.numpy(), 8.0)
    launches = [e for e in p.events if e.kind == "launch"]
    assert len(launches) == 3 and {e.device for e in launches} == {OPENCL}
    assert all(e.device_ns > 0 for e in launches), launches


METAL_SCRIPT = textwrap.dedent("""
    import ctypes, os
    import numpy as np
    import tack

    FAKE = ctypes.CDLL(os.environ["FAKE_METAL_LIB"])
    seconds = ctypes.c_double.in_dll(FAKE, "fake_metal_cb_seconds")  # what a command buffer takes

    @tack.kernel
    def prof_axpy(a, x, y):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    x = tack.array(np.ones(1000, np.float32), device="metal")
    y = tack.zeros(1000, tack.f32, device="metal")
    prof_axpy(2.0, x, y)  # built outside the profile
    tack.synchronize()
    with tack.profile() as p:
        for s in (0.0025, 0.000125):
            seconds.value = s
            prof_axpy(2.0, x, y)
            tack.synchronize()  # the fake runs a command buffer when it is waited for
        seconds.value = 0.0005
        prof_axpy(2.0, x, y)  # waited for when the profile ends
    launches = [e for e in p.events if e.kind == "launch"]
    assert [(e.name, e.device) for e in launches] == [("prof_axpy", "metal:0")] * 3, launches
    assert [e.device_ns for e in launches] == [2_500_000, 125_000, 500_000], launches
    gpu = [e for e in p.trace()["traceEvents"] if e.get("cat") == "device"]
    assert [e["dur"] for e in gpu] == [2500.0, 125.0, 500.0], gpu
    print("ok")
""")


@pytest.fixture(scope="module")
def fake_metal(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_metal.c", "libfake-metal.so", "the fake Metal runtime")


@_fake_runtime.needs_cc("the fake Metal runtime")
@_fake_runtime.needs_fake_objc
def test_metal_launches_have_device_times_from_their_command_buffers(tmp_path, fake_metal):
    """On Metal a launch's device time is its command buffer's GPUEndTime minus its GPUStartTime
    (all of its phases), read once it has completed, when the profile stops."""
    env = _fake_runtime.environment(tmp_path, ("FAKE_METAL_COUNT", "FAKE_METAL_EMULATE"), FAKE_METAL_LIB=fake_metal,
                                    TACK_METAL_OBJC_PATH=fake_metal, TACK_METAL_PATH=fake_metal)
    assert "ok" in _fake_runtime.run_script(tmp_path, METAL_SCRIPT, env).stdout
