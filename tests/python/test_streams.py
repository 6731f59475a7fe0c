"""tack.Stream, tack.stream(), kernel(..., stream=s) and tack.Event on the CPU,
where a stream orders nothing (every call returns when its work is done) and
an event records the host's clock: code written with streams runs there
unchanged.  The GPU's ordering is tested against the fake HIP runtime
(test_hip_fake.py::test_streams_and_events); the example in docs/backends.md
runs in test_language_docs.py."""

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
    if "opencl:0" in tack.devices():  # a backend without streams yet says so
        with pytest.raises(NotImplementedError, match="no streams or events"):
            tack.Stream("opencl:0")



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
