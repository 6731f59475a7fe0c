"""The Metal backend from Python, against Tack's fake Objective-C runtime and Metal.

tests/c/fake_metal.c is a fake libobjc and Metal framework in one shared
library: objects are reference counted and counted live, buffers are host
memory, encoders record what a launch binds, command buffers "run" when they
are waited for (its comment says how its objc_msgSend stands in for the real
one, on x86-64 only).  It is built here with the C compiler and loaded
through TACK_METAL_OBJC_PATH and TACK_METAL_PATH, in a process of its own per
test.  Kernel launches through the fake are tested in C
(tests/c/test_metal_fake.c, hand-written MSL) and, run for real by the
fake's CPU emulation, in test_metal_run.py: this file checks what Python
users do with Metal arrays.

What is checked: device="metal" without Metal is a clear error and
tack.devices() omits Metal; the fake's GPUs are listed; arrays live in shared
storage (copies, fills, NumPy round trips); array_from_ptr wraps an
MTLBuffer (by its id), retaining it while an array uses it, and refuses what
is not a shared MTLBuffer; DLPack export describes the storage as kDLCPU and
NumPy shares it; from_dlpack(host, device="metal", copy=True) copies and
copy=False is refused with the reason; nothing leaks (retains and releases
balance in the fake).
"""

import textwrap

import pytest

import _fake_runtime

pytestmark = [_fake_runtime.needs_cc("the fake Metal runtime"), _fake_runtime.needs_fake_objc]

PRELUDE = textwrap.dedent("""
    import ctypes, gc, os, sys
    import numpy as np
    import tack
    FAKE = ctypes.CDLL(os.environ["FAKE_METAL_LIB"])
    FAKE.fake_metal_new_buffer.restype = ctypes.c_void_p
    FAKE.fake_metal_new_buffer.argtypes = [ctypes.c_ulong, ctypes.c_ulong]
    FAKE.fake_metal_contents.restype = ctypes.c_void_p
    FAKE.fake_metal_contents.argtypes = [ctypes.c_void_p]
    FAKE.fake_metal_refs.restype = ctypes.c_long
    FAKE.fake_metal_refs.argtypes = [ctypes.c_void_p]
    FAKE.fake_metal_release.argtypes = [ctypes.c_void_p]
    FAKE.fake_metal_device.restype = ctypes.c_void_p
    def live():
        gc.collect()
        return ctypes.c_int.in_dll(FAKE, "fake_metal_live").value
""")


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_metal.c", "libfake-metal.so", "the fake Metal runtime")


def run(tmp_path, fake, body, with_fake=True, **env_extra):
    loaded = dict(TACK_METAL_OBJC_PATH=fake, TACK_METAL_PATH=fake) if with_fake else {}
    env = _fake_runtime.environment(tmp_path, ("FAKE_METAL_COUNT", "TACK_METAL_OBJC_PATH", "TACK_METAL_PATH"),
                                    **{"FAKE_METAL_LIB": fake, **loaded, **env_extra})
    return _fake_runtime.run_script(tmp_path, PRELUDE + textwrap.dedent(body), env).stdout


def test_without_metal_it_is_a_clear_error(tmp_path, fake):
    out = run(tmp_path, fake, """
        assert not any(str(d).startswith("metal") for d in tack.devices()), tack.devices()
        try:
            tack.zeros(4, device="metal")
        except RuntimeError as e:
            print(e)
        else:
            raise SystemExit("device='metal' worked without Metal")
    """, with_fake=False)
    assert "device 'metal' is not available" in out and "could not be loaded" in out, out


def test_a_named_library_that_does_not_load_is_said(tmp_path, fake):
    out = run(tmp_path, fake, """
        try:
            tack.zeros(4, device="metal")
        except RuntimeError as e:
            print(e)
    """, TACK_METAL_PATH=str(tmp_path / "missing.dylib"))
    assert "TACK_METAL_PATH names" in out and "cannot be loaded" in out, out


def test_without_a_gpu_it_is_a_clear_error(tmp_path, fake):
    out = run(tmp_path, fake, """
        assert not any(str(d).startswith("metal") for d in tack.devices())
        try:
            tack.zeros(4, device="metal:0")
        except RuntimeError as e:
            print(e)
    """, FAKE_METAL_COUNT=0)
    assert "Metal finds no GPU" in out, out


def test_devices_and_shared_storage(tmp_path, fake):
    run(tmp_path, fake, """
        names = [str(d) for d in tack.devices()]
        assert "metal:0" in names and "metal:1" in names and names[0] == "cpu", names
        before = live()
        host = np.arange(1000, dtype=np.float32)
        x = tack.array(host, device="metal")
        assert str(x.device) == "metal:0"
        np.testing.assert_array_equal(x.numpy(), host)
        y = tack.zeros((10, 10), np.float64, device="metal:1")
        y.fill(2.5)
        assert (y.numpy() == 2.5).all()
        # the array's storage is host memory: its address reads the values
        view = np.ctypeslib.as_array(ctypes.cast(x.ptr, ctypes.POINTER(ctypes.c_float)), shape=(1000,))
        assert view[999] == 999.0
        del x, y, view
        assert live() == before, (live(), before)
    """, FAKE_METAL_COUNT=2)


def test_array_from_ptr_wraps_an_mtlbuffer(tmp_path, fake):
    run(tmp_path, fake, """
        buf = FAKE.fake_metal_new_buffer(64, 0)
        mem = (ctypes.c_float * 16).from_address(FAKE.fake_metal_contents(buf))
        mem[3] = 7.0
        a = tack.array_from_ptr(buf, (16,), tack.f32, writable=True, device="metal")
        assert FAKE.fake_metal_refs(buf) == 2          # retained while an array uses it
        assert a.ptr == FAKE.fake_metal_contents(buf)  # the array's address is its contents
        assert a.numpy()[3] == 7.0
        a.fill(1.5)
        assert mem[0] == 1.5 and mem[15] == 1.5
        # an object with __c_void_p__ (PyObjC's MTLBuffer) is taken as its id
        class PyObjCLike:
            def __c_void_p__(self):
                return ctypes.c_void_p(buf)
        b = tack.array_from_ptr(PyObjCLike(), (4,), tack.f32, device="metal")
        assert b.numpy()[0] == 1.5
        del a, b
        gc.collect()
        assert FAKE.fake_metal_refs(buf) == 1
        for bad, shape, words in ((buf, (17,), "holds 64 bytes"),
                                  (FAKE.fake_metal_new_buffer(64, 2), (4,), "private storage"),
                                  (FAKE.fake_metal_device(0), (4,), "is not one")):
            try:
                tack.array_from_ptr(bad, shape, tack.f32, device="metal")
            except ValueError as e:
                assert words in str(e), e
            else:
                raise SystemExit("wrapped " + words)
        try:
            tack.array_from_ptr(np.zeros(4, np.float32), (4,), tack.f32, device="metal")
        except ValueError as e:
            assert "pass an MTLBuffer (its id) as an int" in str(e), e
        else:
            raise SystemExit("wrapped a NumPy buffer on Metal")
        FAKE.fake_metal_release(buf)
    """)


def test_dlpack_export_is_kdlcpu_and_shares(tmp_path, fake):
    run(tmp_path, fake, """
        x = tack.array(np.arange(8, dtype=np.float32), device="metal")
        assert x.__dlpack_device__() == (1, 0)
        n = np.from_dlpack(x)
        n[2] = 42.0                          # NumPy writes the Metal array's storage
        assert x.numpy()[2] == 42.0
        try:
            x.__dlpack__(stream=1)
        except ValueError as e:
            assert "stream must be None" in str(e), e
        else:
            raise SystemExit("a stream was accepted for a Metal array")
    """)


def test_from_dlpack_copies_into_metal_and_refuses_zero_copy(tmp_path, fake):
    run(tmp_path, fake, """
        host = np.arange(6, dtype=np.int32).reshape(2, 3)
        m = tack.from_dlpack(host, device="metal", copy=True)
        assert str(m.device) == "metal:0" and m.shape == (2, 3)
        host[0, 0] = 99                      # a copy: the host tensor is not shared
        np.testing.assert_array_equal(m.numpy(), np.arange(6, dtype=np.int32).reshape(2, 3))
        c = tack.from_dlpack(host, device="metal")   # copy=None copies when the device differs
        assert c.numpy()[0, 0] == 99
        try:
            tack.from_dlpack(host, device="metal", copy=False)
        except BufferError as e:
            assert "Metal has no zero-copy import" in str(e) and "copy=True" in str(e), e
        else:
            raise SystemExit("a zero-copy import into Metal was accepted")
        # and the round trip: a Metal array's kDLCPU export imports to the CPU, sharing
        back = tack.from_dlpack(m)
        assert str(back.device) == "cpu" and back.ptr == m.ptr
    """)


def test_streams_events_and_graphs(tmp_path, fake):
    """Each stream an MTLCommandQueue of its own, events MTLSharedEvents, graphs a replayed list
    (src/backends/metal/metal_stream.c).  The fake runs a queue's command buffers in commit order,
    only when the host waits for them, and logs their commit numbers as they run; kernels are
    not run here (test_metal_run.py runs them), so what is checked is what runs when."""
    out = run(tmp_path, fake, """
        RAN = (ctypes.c_char * 8192).in_dll(FAKE, "fake_metal_ran")
        ran = lambda: [int(t) for t in RAN.value.split()]
        commits = lambda: ctypes.c_int.in_dll(FAKE, "fake_metal_commits").value

        @tack.kernel
        def scale(x, y, a):
            for i in range(x.shape[0]):
                y[i] = x[i] * a

        x = tack.zeros(1000, tack.f32, device="metal")
        y = tack.zeros(1000, tack.f32, device="metal")
        u = tack.zeros(1000, tack.f32, device="metal")
        v = tack.zeros(1000, tack.f32, device="metal")
        s1, s2 = tack.Stream("metal"), tack.Stream("metal")
        assert s1.device == "metal:0" and s1.handle and s1.handle != s2.handle, (s1, s2)
        scale(x, y, 2.0, stream=s1)
        scale(u, v, 2.0, stream=s2)
        tack.synchronize()

        # one stream: queued, run in commit order when waited for; the other stream's work waits
        FAKE.fake_metal_ran_clear()
        c = commits()
        scale(x, y, 2.0, stream=s1)
        with tack.stream(s1):
            scale(x, y, 3.0)
        scale(u, v, 2.0, stream=s2)
        assert commits() == c + 3 and ran() == [], ran()
        s1.synchronize()
        assert ran() == [c + 1, c + 2], ran()
        s2.synchronize()
        assert ran() == [c + 1, c + 2, c + 3], ran()

        # an event recorded on s1 and waited for on s2: s2 runs after s1's work up to the record
        FAKE.fake_metal_ran_clear()
        c = commits()
        scale(x, y, 2.0, stream=s1)
        e = s1.record()
        scale(x, y, 2.0, stream=s1)
        s2.wait(e)
        scale(u, v, 2.0, stream=s2)
        assert not e.query()
        s2.synchronize()
        assert ran() == [c + 1, c + 2, c + 4, c + 5] and e.query(), ran()
        s1.synchronize()

        # elapsed time: the records' command buffers' GPUEndTime apart (1 ms per command buffer in the fake)
        start = tack.Event("metal").record(s1)
        scale(x, y, 2.0, stream=s1)
        end = s1.record()
        assert abs(start.elapsed_time(end) - 2.0) < 1e-3, start.elapsed_time(end)

        # a graph: nothing committed at capture; each launch commits the calls again, in order
        c = commits()
        with tack.capture(s1) as g:
            scale(x, y, 3.0)
            scale(y, x, 0.5)
        assert g.count == 2 and commits() == c
        FAKE.fake_metal_ran_clear()
        g.launch()
        g.launch(stream=s2)
        s2.synchronize()
        assert commits() - c >= 4 and len(ran()) >= 4, (commits() - c, ran())

        # refused, naming the bad value
        try:
            scale(x, y, 2.0, stream=tack.Stream("cpu"))
        except ValueError as err:
            assert "cpu" in str(err), err
        else:
            raise SystemExit("a CPU stream was taken for a Metal launch")
        del e, start, end, g, s1, s2
        tack.synchronize()
        print("ok")
    """)
    assert "ok" in out, out
