"""tack.Stream, tack.stream(), kernel(..., stream=s) and tack.Event on the CPU,
where a stream orders nothing (every call returns when its work is done) and
an event records the host's clock: code written with streams runs there
unchanged.  The GPU's ordering is tested against the fake HIP runtime
(test_hip_fake.py::test_streams_and_events), for real on OpenCL (PoCL under
make test: each stream a command queue, opencl_stream.c), and on Level Zero
against the fake loader tests/c/fake_level_zero.c (each stream an immediate
command list, level_zero_stream.c; the C test test_level_zero_streams.c checks
it in detail); the example in docs/backends.md runs in test_language_docs.py."""

import numpy as np
import pytest

import tack


@tack.kernel
def _inc(x):
    for i in range(x.shape[0]):
        x[i] += 1


@tack.kernel
def _has_stream(x, stream):  # a parameter named stream is the kernel's own
    for i in range(x.shape[0]):
        x[i] += stream


def test_cpu_streams_run_portable_code():
    s = tack.Stream("cpu")
    assert s.device == "cpu" and s.handle == 0
    x = np.zeros(5)
    _inc(x, stream=s)
    with tack.stream(s):
        _inc(x)
        with tack.stream(None):  # Tack's own, nested
            _inc(x)
        _inc(x, stream=None)
    start = tack.Event("cpu").record(s)
    _inc(x)
    end = s.record()
    s.wait(end)
    end.synchronize()
    s.synchronize()
    assert end.query() and 0 <= start.elapsed_time(end) < 10_000
    np.testing.assert_array_equal(x, 5)
    _has_stream(x, stream=2)
    np.testing.assert_array_equal(x, 7)


def test_refusals_name_the_bad_value():
    x = np.zeros(3)
    with pytest.raises(TypeError, match="stream= takes a tack.Stream"):
        _inc(x, stream="cuda")
    with pytest.raises(TypeError, match="tack.stream\\(\\) takes a tack.Stream"):
        with tack.stream(3):
            pass
    with pytest.raises(ValueError, match="timing=False"):
        tack.Event("cpu", timing=False).record().elapsed_time(tack.Event("cpu").record())
    with pytest.raises(ValueError, match="has not been recorded"):
        tack.Event("cpu").elapsed_time(tack.Event("cpu").record())
    with pytest.raises(ValueError, match="no stream handles"):
        tack.Stream("cpu", handle=5)
    with pytest.raises(TypeError, match="handle= takes"):
        tack.Stream("cpu", handle="x")


def test_debug_mode_takes_the_same_stream_argument():
    @tack.kernel(jit=False)
    def inc_py(x):
        for i in range(x.shape[0]):
            x[i] += 1

    x = np.zeros(3)
    inc_py(x, stream=tack.Stream("cpu"))
    inc_py(x, stream=None)
    np.testing.assert_array_equal(x, 2)
    with pytest.raises(TypeError, match="stream= takes a tack.Stream"):
        inc_py(x, stream="cuda")


# ------------------------------------------------------------ OpenCL (PoCL)
OPENCL = next((d for d in tack.devices() if d.startswith("opencl")), None)
needs_opencl = pytest.mark.skipif(OPENCL is None, reason="no OpenCL device (make test installs PoCL as root)")


@tack.kernel
def _scale(x, y, a):
    for i in range(x.shape[0]):
        y[i] = x[i] * a


@tack.kernel
def _framed(x, out):  # serial code between two parallel loops: t lives in the program's frame
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
    t = out[0] + 1.0
    for i in range(out.shape[0]):
        out[i] = out[i] + t


@needs_opencl
def test_opencl_streams_order_work_through_arrays_and_events():
    n = 1 << 16
    host = np.arange(n, dtype=np.float32)
    x = tack.array(host, device=OPENCL)
    y, z = tack.zeros(n, tack.f32, device=OPENCL), tack.zeros(n, tack.f32, device=OPENCL)
    s1, s2 = tack.Stream(OPENCL), tack.Stream(OPENCL)
    assert s1.device == OPENCL and s1.handle != 0 and s1.handle != s2.handle
    start, end = tack.Event(OPENCL), tack.Event(OPENCL)
    for _ in range(3):
        with tack.stream(s1):
            start.record()
            for _ in range(4):
                _scale(x, y, 2.0)
            end.record()
        _scale(y, z, 3.0, stream=s2)  # reads y, last written on s1: the runtime orders s2 after it
        np.testing.assert_array_equal(np.asarray(z), host * 6)
        y.fill(0)  # on the device's own queue, after s2's read of y
        _scale(x, y, 1.0, stream=s2)
        np.testing.assert_array_equal(np.asarray(y), host)
    end.synchronize()
    assert end.query() and 0 <= start.elapsed_time(end) < 60_000
    # a cross-stream wait by an event, with no array between them
    flag = tack.zeros(1, tack.f32, device=OPENCL)
    with tack.stream(s1):
        flag.fill(7)
        done = s1.record()
    s2.wait(done)
    s2.synchronize()
    assert float(np.asarray(flag)[0]) == 7


@needs_opencl
def test_opencl_program_frame_is_ordered_across_streams():
    """Launches of one program share its frame buffer (a serial phase's scratch): a launch on
    another stream than the last waits for it (opencl_launch.c), so results never mix."""
    streams = [tack.Stream(OPENCL) for _ in range(3)]
    xs = [tack.array(np.full(1000, k + 1, np.float32), device=OPENCL) for k in range(9)]
    outs = [tack.zeros(1000, tack.f32, device=OPENCL) for _ in range(9)]
    for _ in range(4):
        for k in range(9):
            _framed(xs[k], outs[k], stream=streams[k % 3])
        for s in streams:
            s.synchronize()
        for k in range(9):
            np.testing.assert_array_equal(np.asarray(outs[k]), 4.0 * (k + 1) + 1)


@needs_opencl
def test_opencl_graph_replays_on_a_stream():
    x = tack.array(np.arange(8, dtype=np.float32), device=OPENCL)
    y = tack.zeros(8, tack.f32, device=OPENCL)
    s = tack.Stream(OPENCL)
    with tack.capture(s) as g:
        _scale(x, y, 5.0)
        _scale(y, y, 2.0)
    assert not np.asarray(y).any()  # nothing ran at capture time
    g.launch()
    s.synchronize()
    np.testing.assert_array_equal(np.asarray(y), np.arange(8) * 10.0)
    tack.copyto(x, np.ones(8, np.float32))  # new contents of a captured array are seen by the replay
    g.launch(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(np.asarray(y), 10.0)


@needs_opencl
def test_opencl_stream_refusals():
    e = tack.Event(OPENCL, timing=True)
    with pytest.raises(ValueError, match="has not been recorded"):
        e.elapsed_time(tack.Event(OPENCL).record())
    with pytest.raises(RuntimeError, match="the event is on cpu and the stream on opencl"):
        tack.Event("cpu").record(tack.Stream(OPENCL))


# ------------------------------------------------- Level Zero (the fake loader)
# tests/c/fake_level_zero.c queues work and runs it only when the host waits for it (or
# another list waits for its events), so what ran, and in which order, shows what Tack
# queued where; kernels do not run there, they are logged. The kernel's SPIR-V is real
# (libocloc); the C tests (tests/c/test_level_zero_fake.c, test_level_zero_streams.c) check the backend in detail.
_L0_SCRIPT = """
import ctypes, os
import numpy as np
import tack

FAKE = ctypes.CDLL(os.environ["FAKE_ZE_LIB"])
FAKE.fake_ran.restype = ctypes.c_char_p
FAKE.fake_misuse.restype = ctypes.c_char_p
ran = lambda: FAKE.fake_ran().decode()

@tack.kernel
def scale(x, y, a):
    for i in range(x.shape[0]):
        y[i] = x[i] * a

dev = "level_zero"
x = tack.array(np.arange(1000, dtype=np.float32), device=dev)
y = tack.zeros(1000, tack.f32, device=dev)
scale(x, y, 2.0)
tack.synchronize()
s1, s2 = tack.Stream(dev), tack.Stream(dev)
assert s1.device == "level_zero:0" and s1.handle and s1.handle != s2.handle, (s1, s2)

# a launch on s1 is queued there: it runs when s1 is waited for
FAKE.fake_ran_clear()
scale(x, y, 2.0, stream=s1)
assert "launch" not in ran(), ran()
s1.synchronize()
assert "launch(tk_phase0)" in ran(), ran()

# copies on a stream, and an array written on s1 read on s2 (ordered by Tack, on the device)
with tack.stream(s1):
    z = tack.array(np.full(1000, 5, np.float32), device=dev)
    w = z.copy()
FAKE.fake_ran_clear()
with tack.stream(s2):
    np.testing.assert_array_equal(w.numpy(), 5)

# events: s2 waits for s1's point; elapsed time from the device's timestamps (ticks of 2 ns)
os.environ["FAKE_ZE_KERNEL_TICKS"] = "500000"
start = tack.Event(dev).record(s1)
scale(x, y, 2.0, stream=s1)
end = s1.record()
assert not end.query()
s2.wait(end)
s2.synchronize()
assert end.query()
assert abs(start.elapsed_time(end) - 1.0) < 1e-6, start.elapsed_time(end)

# a graph: nothing runs at capture; each launch runs it, on its stream or another
FAKE.fake_ran_clear()
with tack.capture(s1) as g:
    scale(x, y, 3.0)
    scale(y, x, 0.5)
assert g.count == 2 and "launch" not in ran(), ran()
g.launch()
g.launch(stream=s2)
s2.synchronize()
assert ran().count("launch(tk_phase0)") == 4, ran()

# the profiler's device time: the kernel's own timestamps
with tack.profile() as p:
    scale(x, y, 2.0, stream=s1)
launches = [e for e in p.events if e.kind == "launch"]
assert [e.device_ns for e in launches] == [1000000], launches

# refused, naming the bad value
try:
    scale(x, y, 2.0, stream=tack.Stream("cpu"))
except ValueError as e:
    assert "cpu" in str(e), e
else:
    raise SystemExit("a CPU stream was taken for a Level Zero launch")
tack.synchronize()
assert not FAKE.fake_misuse(), FAKE.fake_misuse()
print("ok")
"""


@pytest.fixture(scope="module")
def fake_ze(tmp_path_factory):
    import _fake_runtime

    if _fake_runtime.CC is None:
        pytest.skip("no C compiler to build the fake Level Zero loader")
    return _fake_runtime.build(tmp_path_factory, "fake_level_zero.c", "libze_loader.so.1", "the fake Level Zero loader")


def test_level_zero_streams_events_and_graphs_on_the_fake_loader(tmp_path, fake_ze):
    import _fake_runtime

    if not _fake_runtime.has_ocloc():
        pytest.skip("libocloc is not installed (Debian: intel-opencl-icd)")
    env = _fake_runtime.environment(tmp_path, ("FAKE_ZE_DEVICES", "FAKE_ZE_NO_IMMEDIATE", "FAKE_ZE_NO_LISTS"),
                                    FAKE_ZE_LIB=fake_ze, LD_LIBRARY_PATH=fake_ze.parent)
    assert "ok" in _fake_runtime.run_script(tmp_path, _L0_SCRIPT, env).stdout
