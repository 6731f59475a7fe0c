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
