"""tack.capture and tack.Graph: work captured once on a stream, replayed.

On the CPU a graph is a list of the captured calls, run at each launch and
not at capture (as a CUDA or HIP capture runs nothing); the replays must give
what the same calls made eagerly give.  On HIP, against the fake runtime
(tests/c/fake_hip.c), the capture goes through hipStreamBeginCapture and a
replay through hipGraphLaunch; the fake keeps captured work out of the
stream's queue and puts a copy of it there at each launch, so its log of
completed work shows what was replayed, in which order and how often.  The
CUDA path is checked the same way in C (tests/c/test_cuda_fake.c, graphs).
"""

import gc
import textwrap
import threading

import numpy as np
import pytest

import tack

import _fake_runtime


@tack.kernel
def axpy(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@tack.kernel
def smooth(x, y):  # a sequential phase between two loops: three phases with a frame
    for i in range(y.shape[0]):
        y[i] = 0.5 * x[i]
    t = y[0] + 1.0
    for i in range(y.shape[0]):
        y[i] += t


@tack.kernel(jit=False)
def axpy_python(a, x, y):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


def test_replay_matches_eager_calls():
    x = tack.array(np.linspace(0, 1, 257, dtype=np.float32))
    y = tack.array(np.ones(257, np.float32))
    ex, ey = np.asarray(x).copy(), np.asarray(y).copy()
    s = tack.Stream("cpu")
    with tack.capture(s) as g:
        axpy(2.0, x, y)
        smooth(y, x)
        axpy(-1.0, x, y)
    assert g.count == 3 and g.device == "cpu" and g.stream is s
    # nothing ran at capture
    np.testing.assert_array_equal(x.numpy(), ex)
    np.testing.assert_array_equal(y.numpy(), ey)
    # the same calls made eagerly, on copies
    x2, y2 = tack.array(ex), tack.array(ey)
    for _ in range(3):
        g.launch()
        axpy(2.0, x2, y2)
        smooth(y2, x2)
        axpy(-1.0, x2, y2)
        np.testing.assert_array_equal(x.numpy(), x2.numpy())
        np.testing.assert_array_equal(y.numpy(), y2.numpy())
    other = tack.Stream("cpu")
    g.launch(stream=other)
    axpy(2.0, x2, y2)
    smooth(y2, x2)
    axpy(-1.0, x2, y2)
    np.testing.assert_array_equal(y.numpy(), y2.numpy())


def test_copies_and_fills_are_captured_and_new_arrays_made_at_capture():
    s = tack.Stream("cpu")
    x = tack.array(np.arange(8, dtype=np.float32))
    y = tack.zeros(8)
    with tack.capture(s) as g:
        z = tack.zeros(8)  # made now, zeroed now: outside the graph
        y.fill(3.0)
        axpy(1.0, x, y)
        w = y.copy()  # the new array's contents are the replay's copy
    assert g.count == 3
    np.testing.assert_array_equal(z.numpy(), np.zeros(8))
    np.testing.assert_array_equal(y.numpy(), np.zeros(8))
    g.launch()
    np.testing.assert_array_equal(y.numpy(), np.arange(8) + 3.0)
    np.testing.assert_array_equal(w.numpy(), np.arange(8) + 3.0)


def test_rebinding_a_name_is_not_seen_and_arrays_live_with_the_graph():
    s = tack.Stream("cpu")
    x = tack.array(np.ones(16, np.float32))
    y = tack.zeros(16)
    with tack.capture(s) as g:
        axpy(1.0, x, y)  # the scalar 1.0 and these two arrays are what every replay uses
    g.launch()
    np.testing.assert_array_equal(y.numpy(), np.full(16, 1.0))
    x = tack.array(np.full(16, 5.0, np.float32))  # rebinding the name: the graph keeps the array it captured
    g.launch()
    np.testing.assert_array_equal(y.numpy(), np.full(16, 2.0))
    # the captured x has no other reference now; the graph keeps it
    del x
    gc.collect()
    g.launch()
    np.testing.assert_array_equal(y.numpy(), np.full(16, 3.0))


def test_captured_array_contents_changed_between_replays_are_seen():
    s = tack.Stream("cpu")
    host = np.ones(16, np.float32)
    x = tack.from_dlpack(host)  # shares host's memory
    y = tack.zeros(16)
    with tack.capture(s) as g:
        axpy(1.0, x, y)
    g.launch()
    host[:] = 10.0
    g.launch()
    np.testing.assert_array_equal(y.numpy(), np.full(16, 11.0))


def test_an_empty_capture_replays_nothing():
    s = tack.Stream("cpu")
    with tack.capture(s) as g:
        pass
    assert g.count == 0
    g.launch()
    g.launch(stream=s)
    assert "ready" in repr(g)


def test_captures_do_not_nest():
    s1, s2 = tack.Stream("cpu"), tack.Stream("cpu")
    with tack.capture(s1):
        with pytest.raises(ValueError, match="captures do not nest"):
            with tack.capture(s2):
                pass
    # the outer capture ended cleanly: a launch runs at once again
    y = tack.zeros(4)
    axpy(1.0, tack.ones(4), y)
    np.testing.assert_array_equal(y.numpy(), np.ones(4))


def test_an_exception_in_the_block_discards_the_capture():
    s = tack.Stream("cpu")
    x, y = tack.ones(4), tack.zeros(4)
    with pytest.raises(KeyError):
        with tack.capture(s) as g:
            axpy(1.0, x, y)
            raise KeyError("inside")
    with pytest.raises(RuntimeError, match="discarded"):
        g.launch()
    assert "discarded" in repr(g) and g.count == 0
    np.testing.assert_array_equal(y.numpy(), np.zeros(4))  # never ran
    axpy(1.0, x, y)  # the stream is not captured any more: this runs now
    np.testing.assert_array_equal(y.numpy(), np.ones(4))


def test_what_a_capture_refuses_names_it():
    s = tack.Stream("cpu")
    y = tack.zeros(4)
    refused = {
        "reading an array on the host": lambda: y.numpy(),
        "synchronizing the device": tack.synchronize,
        "while it is being captured": s.synchronize,
        "copying host data into an array": lambda: tack.array(np.ones(4, np.float32)),
        "Event.record on a stream of cpu": lambda: tack.Event("cpu").record(s),
        "runs as Python": lambda: axpy_python(1.0, y, y),
    }
    for words, call in refused.items():
        with tack.capture(s) as g:
            with pytest.raises(ValueError, match=words):
                call()
            axpy(1.0, y, y)
        assert g.count == 1  # the capture goes on after a refusal
    with tack.capture(s) as g:
        with pytest.raises(RuntimeError, match="has not ended"):
            g.launch()
    with pytest.raises(TypeError, match="tack.Stream"):
        tack.capture("cpu")
    with pytest.raises(TypeError, match="made by tack.capture"):
        tack.Graph()
    with pytest.raises(TypeError, match="tack.Stream or None"):
        g.launch(stream=3)


def test_a_graph_launched_inside_another_capture_is_refused():
    s1, s2 = tack.Stream("cpu"), tack.Stream("cpu")
    y = tack.zeros(4)
    with tack.capture(s1) as g1:
        axpy(1.0, tack.ones(4), y)
    with tack.capture(s2) as g2:
        with pytest.raises(ValueError, match="graphs are not captured into graphs"):
            g1.launch()
    assert g2.count == 0


def test_another_threads_work_is_not_captured():
    s = tack.Stream("cpu")
    y, z, one = tack.zeros(4), tack.zeros(4), tack.ones(4)
    with tack.capture(s) as g:
        axpy(1.0, one, y)
        t = threading.Thread(target=lambda: axpy(1.0, one, z))  # its current stream is its own
        t.start()
        t.join()
    assert g.count == 1
    np.testing.assert_array_equal(z.numpy(), np.ones(4))
    np.testing.assert_array_equal(y.numpy(), np.zeros(4))


def test_a_stream_block_inside_a_capture_comes_back_to_the_captured_stream():
    s, other = tack.Stream("cpu"), tack.Stream("cpu")
    y = tack.zeros(4)
    with tack.capture(s) as g:
        with tack.stream(other):
            axpy(1.0, tack.ones(4), y)  # on another stream: not captured, the fill and the launch run now
        one = tack.ones(4)  # made now, its fill captured: ones from the first replay on
        axpy(1.0, one, y)  # captured
    assert g.count == 2
    np.testing.assert_array_equal(y.numpy(), np.ones(4))
    g.launch()
    np.testing.assert_array_equal(y.numpy(), np.full(4, 2.0))


# ------------------------------------------------------------ the fake HIP runtime
PRELUDE = textwrap.dedent("""
    import ctypes, os, sys
    import numpy as np
    import tack
    FAKE = ctypes.CDLL(os.environ["FAKE_HIP_LIB"])
    def fake_int(name):
        return ctypes.c_int.in_dll(FAKE, name).value
    def fake_text(name):
        return ctypes.cast(ctypes.addressof(ctypes.c_char.in_dll(FAKE, name)), ctypes.c_char_p).value.decode()
    def fake_clear(name):
        ctypes.c_char.in_dll(FAKE, name).value = b"\\0"
""")


@pytest.fixture(scope="module")
def fake_hip(tmp_path_factory):
    if _fake_runtime.CC is None:
        pytest.skip("no C compiler to build the fake HIP runtime")
    return _fake_runtime.build(tmp_path_factory, "fake_hip.c", "libfake-amdhip64.so", "the fake HIP runtime")


def test_hip_capture_and_replay(tmp_path, fake_hip):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def axpy(a, x, y):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]

        @tack.kernel
        def framed(x, y):
            for i in range(y.shape[0]):
                y[i] = x[i]
            t = y[0] + 1.0
            for i in range(y.shape[0]):
                y[i] += t

        def make():
            @tack.kernel
            def double(x):
                for i in range(x.shape[0]):
                    x[i] *= 2.0
            return double
    """))
    env = _fake_runtime.environment(tmp_path, ("FAKE_HIP_COUNT", "FAKE_HIP_ARCH", "FAKE_HIP_WARP", "FAKE_HIP_RUNTIME"),
                                    FAKE_HIP_LIB=fake_hip, TACK_HIP_PATH=fake_hip, TACK_HIPRTC_PATH=fake_hip)
    body = textwrap.dedent("""
        sys.path.insert(0, os.getcwd())
        import gc
        from kern import axpy, framed, make
        double = make()
        x = tack.array(np.arange(100, dtype=np.float32), device="hip")
        y = tack.zeros(100, np.float32, device="hip")
        axpy(2.0, x, y)
        framed(x, y)  # built before the capture
        double(x)
        tack.synchronize()
        s, s2 = tack.Stream("hip"), tack.Stream("hip")
        n = fake_int("launches")
        fake_clear("completed")
        with tack.capture(s) as g:
            axpy(2.0, x, y)
            framed(y, x)
            double(x)
            y.fill(7.0)
            w = x.copy()
            for words, call in (("reading an array on the host", y.numpy), ("synchronizing the device", tack.synchronize),
                                ("while it is being captured", s.synchronize),
                                ("copying host data", lambda: tack.array(np.ones(3, np.float32), device="hip"))):
                try:
                    call()
                except ValueError as e:
                    assert words in str(e), e
                else:
                    raise SystemExit(f"{words}: not refused")
        assert fake_int("capture_mode") == 2 and fake_int("capture_misuse") == 0
        assert g.count == 5, g.count
        assert fake_int("execs_live") == 1 and fake_int("graphs_live") == 0
        tack.synchronize()
        # what completed: only the error record's reads and the events ordering the capture's start
        done = [w for w in fake_text("completed").split() if not w.startswith(("d2h(", "event("))]
        assert fake_int("launches") == n and done == [], done
        fake_clear("completed")
        # each replay: the launches, the fill and the copy, in the captured order
        one = ["launch(tk_phase0)", "launch(tk_phase0)", "launch(tk_phase1)", "launch(tk_phase2)",
               "launch(tk_phase0)", "fill(400)", "d2d(400)"]
        g.launch()
        g.launch(stream=s2)
        s2.synchronize()
        done = fake_text("completed").split()
        assert done[0].startswith("event("), done  # each replay ordered after the streams its arrays were last on
        done = [w for w in done if not w.startswith(("d2h(", "event("))]
        assert done == one + one, done
        assert fake_int("launches") == n + 10 and fake_int("graph_launches") == 2
        assert "glaunch" in fake_text("order")
        np.testing.assert_array_equal(y.numpy(), np.full(100, 7.0, np.float32))  # the fill ran on the device
        # the graph keeps its kernels and arrays: dropped here, the replay still has them
        unloads = fake_int("module_unloads")
        del double, w
        gc.collect()
        assert fake_int("module_unloads") == unloads
        g.launch()
        tack.synchronize()
        assert fake_int("launches") == n + 15
        del g
        gc.collect()
        assert fake_int("execs_live") == 0 and fake_int("module_unloads") == unloads + 1
        print("ok")
    """)
    out = _fake_runtime.run_script(tmp_path, PRELUDE + body, env).stdout
    assert out.strip().endswith("ok")
