"""The CUDA Array Interface, version 3 (tack._cai; docs/interop.md), both ways.

Exported by arrays on CUDA and HIP devices and imported by tack.from_cuda_array_interface and by
kernel arguments, checked against Tack's fake HIP runtime (tests/c/fake_hip.c: device memory is
host memory, streams drain when synchronized or waited for, events order them, kernels record
their arguments), in a process of its own per test, and on the CPU where the attribute is absent.
"""

import textwrap
import weakref

import numpy as np
import pytest

import _fake_runtime
import tack

PRELUDE = textwrap.dedent("""
    import ctypes, os, sys, weakref
    import numpy as np
    import tack
    FAKE = ctypes.CDLL(os.environ["FAKE_HIP_LIB"])
    def fake_text(name):
        return ctypes.cast(ctypes.addressof(ctypes.c_char.in_dll(FAKE, name)), ctypes.c_char_p).value.decode()
    def fake_clear(name):
        ctypes.c_char.in_dll(FAKE, name).value = b"\\0"
    class Producer:  # a library's device array, as Numba's speaks it: the interface and nothing else
        def __init__(self, **cai):
            self.__cuda_array_interface__ = cai
    def refused(words, fn, *args, **kw):
        try:
            fn(*args, **kw)
        except (TypeError, ValueError) as e:
            assert words in str(e), (words, str(e))
        else:
            raise SystemExit(f"not refused: {words}")
""")


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    if _fake_runtime.CC is None:
        pytest.skip("no C compiler to build the fake HIP runtime")
    return _fake_runtime.build(tmp_path_factory, "fake_hip.c", "libfake-amdhip64.so", "the fake HIP runtime")


def run(tmp_path, fake, body):
    env = _fake_runtime.environment(tmp_path, ("FAKE_HIP_COUNT", "FAKE_HIP_ARCH", "FAKE_HIP_WARP", "FAKE_HIP_RUNTIME"),
                                    FAKE_HIP_LIB=fake, TACK_HIP_PATH=fake, TACK_HIPRTC_PATH=fake)
    out = _fake_runtime.run_script(tmp_path, PRELUDE + textwrap.dedent(body), env).stdout
    assert out.strip().endswith("ok"), out


def test_the_cpu_has_no_interface():
    a = tack.zeros(4)
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="the array is on cpu; the CUDA Array Interface describes CUDA and HIP"):
        a.__cuda_array_interface__
    with pytest.raises(TypeError, match="a ndarray has no __cuda_array_interface__"):
        tack.from_cuda_array_interface(np.zeros(3))

    class P:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (4096, False), "version": 3}

    if not any(d.split(":")[0] in ("cuda", "hip") for d in tack.devices()):
        with pytest.raises(ValueError, match="finds no CUDA or HIP device"):
            tack.from_cuda_array_interface(P())


def test_export_describes_the_memory(tmp_path, fake):
    run(tmp_path, fake, """
        x = tack.array(np.arange(12, dtype=np.float32).reshape(3, 4), device="hip")
        c = x.__cuda_array_interface__
        assert c == {"shape": (3, 4), "typestr": "<f4", "descr": [("", "<f4")], "data": (x.ptr, False),
                     "strides": None, "version": 3, "stream": None}, c
        assert x.shared  # shared from now on, as after a DLPack export
        t = x.T.__cuda_array_interface__  # a strided view: byte strides, element (0, 0)'s address
        assert t["shape"] == (4, 3) and t["strides"] == (4, 16) and t["data"][0] == x.ptr, t
        v = tack.zeros(5, tack.vec3, device="hip").__cuda_array_interface__
        assert v["shape"] == (5, 3) and v["typestr"] == "<f4" and v["strides"] is None, v
        for dt, ts in ((np.int8, "|i1"), (np.uint16, "<u2"), (np.float64, "<f8"), (np.complex64, "<c8"),
                       (np.bool_, "|b1")):
            assert tack.zeros(2, dt, device="hip").__cuda_array_interface__["typestr"] == ts
        r = tack.zeros(2, np.float32, device="hip")
        ro = r._readonly_view()
        assert ro.__cuda_array_interface__["data"] == (r.ptr, True)
        # the export waits for what Tack queued: the fake drains Tack's stream then
        fake_clear("completed")
        x.fill(1.0)
        x.__cuda_array_interface__
        assert fake_text("completed"), "the export did not wait for the fill"
        print("ok")
    """)


def test_import_shares_the_memory_and_keeps_its_owner(tmp_path, fake):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def twice(out, x):
            for i in range(out.shape[0]):
                out[i] = 2 * x[i]
    """))
    run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import twice
        base = tack.array(np.arange(8, dtype=np.float32), device="hip")
        p = Producer(**base.__cuda_array_interface__)
        alive = weakref.ref(p)
        y = tack.from_cuda_array_interface(p)
        assert y.ptr == base.ptr and y.device == "hip:0" and y.shape == (8,) and y.writable
        del p
        assert alive() is not None  # kept by the Tack array
        y.fill(3.0)
        assert base.numpy().tolist() == [3.0] * 8  # the same memory
        del y
        import gc; gc.collect()
        assert alive() is None
        # a strided interface (every other element, backwards) becomes a strided view
        q = Producer(shape=(4,), typestr="<f4", data=(base.ptr + 7 * 4, False), strides=(-8,), version=3)
        z = tack.from_cuda_array_interface(q)
        assert z.strided and z.ptr == base.ptr + 28
        # a kernel argument that speaks only the interface: its address reaches the launch
        args = (ctypes.c_uint64 * 64).in_dll(FAKE, "last_args")
        out = tack.zeros(8, np.float32, device="hip")
        twice(out, Producer(**base.__cuda_array_interface__))
        tack.synchronize()
        assert base.ptr in list(args[3:10]), list(args[3:10])
        # read-only memory stays read-only
        assert not tack.from_cuda_array_interface(Producer(shape=(8,), typestr="<f4", data=(base.ptr, True),
                                                           version=2)).writable
        print("ok")
    """)


def test_a_producer_stream_is_waited_for_on_the_device(tmp_path, fake):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def inc(x):
            for i in range(x.shape[0]):
                x[i] += 1
    """))
    run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import inc
        base = tack.zeros(8, np.float32, device="hip")
        s = tack.Stream("hip")
        inc(base, stream=s)  # the producer's work, still queued on its stream
        fake_clear("order")
        cai = {"shape": (8,), "typestr": "<f4",
                                                              "data": (base.ptr, False), "version": 3,
                                                              "stream": s.handle}
        y = tack.from_cuda_array_interface(Producer(**cai))
        order = fake_text("order")
        assert "record(" in order and "wait(" in order and "sync" not in order, order  # on the device
        fake_clear("completed")
        host = y.numpy()  # Tack's own stream: after the producer's launch
        done = fake_text("completed").split()
        assert done.index("launch(tk_phase0)") < done.index("d2h(32)"), done
        print("ok")
    """)


def test_bad_interfaces_are_refused_naming_the_value(tmp_path, fake):
    run(tmp_path, fake, """
        base = tack.zeros(8, np.float32, device="hip")
        ok = dict(shape=(8,), typestr="<f4", data=(base.ptr, False), version=3)
        f = tack.from_cuda_array_interface
        refused("version 4 is not one Tack reads", f, Producer(**{**ok, "version": 4}))
        refused("a mask is not supported", f, Producer(**ok, mask=Producer()))
        refused("shape [8] is not a tuple", f, Producer(**{**ok, "shape": [8]}))
        refused("typestr '<x9' is not a type string", f, Producer(**{**ok, "typestr": "<x9"}))
        refused("is no Tack dtype", f, Producer(**{**ok, "typestr": "<M8[s]"}))
        refused("data 5 is not (address, read_only)", f, Producer(**{**ok, "data": 5}))
        refused("strides (6,) are not whole float32 elements (4 bytes)", f, Producer(**ok, strides=(6,)))
        refused("strides (4, 4) do not match shape (8,)", f, Producer(**ok, strides=(4, 4)))
        refused("stream 0 is not a stream handle", f, Producer(**ok, stream=0))
        host = np.zeros(8, np.float32)
        refused(f"address {host.ctypes.data:#x} is not memory of hip:0", f,
                Producer(**{**ok, "data": (host.ctypes.data, False)}))
        refused("bf16 has no type string", lambda: tack.zeros(2, tack.bf16, device="hip").__cuda_array_interface__)
        print("ok")
    """)
