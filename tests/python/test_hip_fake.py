"""The HIP backend from Python, against Tack's fake HIP runtime.

tests/c/fake_hip.c is a fake libamdhip64 (and hiprtc) that does the host-side
work for real -- device memory is host memory, copies happen when their
stream is drained, events order streams -- and records what kernels were
launched with (they do not run).  It is built here with the C compiler and
loaded through TACK_HIP_PATH and TACK_HIPRTC_PATH, in a process of its own
per test (the fake is read when Tack first asks for HIP, and the FAKE_HIP_*
settings at device init).  Those processes load no OpenCL driver
(OCL_ICD_VENDORS points nowhere), which would bring a second LLVM.

What is checked: device="hip" without a runtime or a GPU is a clear error
and tack.devices() omits HIP; the device's gcnArchName and wavefront reach
hiprtc; a call returns once queued and a synchronization runs it; a shared
argument finishes first; kDLROCM export and import with DLPack's ROCm
stream rules; array_from_ptr checked with hipPointerGetAttributes; a
runtime lacking an entry point streams or graphs need refuses them, naming it.
"""

import subprocess
import sys
import shutil
import textwrap

import pytest

import _fake_runtime
import _suite

pytestmark = _fake_runtime.needs_cc("the fake HIP runtime")

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
    def fake_set(name, v):
        ctypes.c_int.in_dll(FAKE, name).value = v
""")


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_hip.c", "libfake-amdhip64.so", "the fake HIP runtime")


def run(tmp_path, fake, body, **env_extra):
    env = _fake_runtime.environment(tmp_path, ("FAKE_HIP_COUNT", "FAKE_HIP_ARCH", "FAKE_HIP_WARP", "FAKE_HIP_RUNTIME"),
                                    **{"FAKE_HIP_LIB": fake, "TACK_HIP_PATH": fake, "TACK_HIPRTC_PATH": fake, **env_extra})
    return _fake_runtime.run_script(tmp_path, PRELUDE + textwrap.dedent(body), env).stdout


def test_without_a_runtime_hip_is_a_clear_error(tmp_path, fake):
    out = run(tmp_path, fake, """
        assert not any(str(d).startswith("hip") for d in tack.devices()), tack.devices()
        try:
            tack.zeros(4, device="hip")
        except Exception as e:
            print(type(e).__name__, e)
        else:
            raise SystemExit("device='hip' worked without a HIP runtime")
    """, TACK_HIP_PATH=str(tmp_path / "missing.so"))
    assert "TACK_HIP_PATH names" in out and "cannot be loaded" in out


def test_without_an_amd_gpu_hip_is_a_clear_error(tmp_path, fake):
    out = run(tmp_path, fake, """
        assert not any(str(d).startswith("hip") for d in tack.devices()), tack.devices()
        try:
            tack.zeros(4, device="hip:0")
        except Exception as e:
            print(type(e).__name__, e)
    """, FAKE_HIP_COUNT=0)
    assert "no AMD GPU" in out


def test_devices_memory_and_the_launch_path(tmp_path, fake):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def axpy(a, x, y):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]
    """))
    run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import axpy
        assert "hip:0" in [str(d) for d in tack.devices()]
        host = np.arange(1000, dtype=np.float32)
        x = tack.array(host, device="hip")
        y = tack.zeros(1000, np.float32, device="hip")
        assert str(x.device) == "hip:0"
        np.testing.assert_array_equal(x.numpy(), host)
        before = fake_int("launches")
        axpy(2.0, x, y)
        # built for the device's own architecture; the call returned once queued
        assert "--offload-arch=gfx90a:sramecc+:xnack- " in fake_text("last_options"), fake_text("last_options")
        assert fake_int("launches") == before
        tack.synchronize()
        assert fake_int("launches") == before + 1
        assert "launch(tk_phase0)" in fake_text("completed")
        # a shared argument (wrapped from a pointer): finished when the call returns
        w = tack.array_from_ptr(y.ptr, (1000,), np.float32, writable=True, device="hip")
        before = fake_int("launches")
        axpy(2.0, x, w)
        assert fake_int("launches") == before + 1
        # a failed check is reported at the next synchronization point (z: never shared;
        # reading y.ptr above shared y's storage)
        z = tack.zeros(1000, np.float32, device="hip")
        fake_set("fail_next", 1)
        axpy(2.0, x, z)
        try:
            tack.synchronize()
        except IndexError as e:
            assert "out of bounds" in str(e), e
        else:
            raise SystemExit("the failed check was not reported")
        tack.synchronize()
        print("ok")
    """)


@pytest.mark.parametrize("arch,warp,flag", [("gfx90a", 64, None), ("gfx1030", 32, "-mno-wavefrontsize64"),
                                            ("gfx1030", 64, "-mwavefrontsize64")])
def test_the_wavefront_comes_from_the_device(tmp_path, fake, arch, warp, flag):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def total(x, out):
            for i in range(x.shape[0]):
                out[0] += x[i]
    """))
    out = run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import total
        x = tack.array(np.ones(64, np.float32), device="hip")
        out = tack.zeros(1, np.float32, device="hip")
        total(x, out)
        tack.synchronize()
        print(fake_text("last_options"))
    """, FAKE_HIP_ARCH=arch, FAKE_HIP_WARP=warp)
    assert f"--offload-arch={arch} " in out
    if flag:
        assert flag in out.split()
    else:
        assert "wavefrontsize" not in out


def test_kdlrocm_export_and_import(tmp_path, fake):
    run(tmp_path, fake, """
        x = tack.array(np.arange(8, dtype=np.float32), device="hip")
        assert tuple(x.__dlpack_device__()) == (10, 0)  # kDLROCM
        # None and 0: the ROCm default stream (HIP's null stream) waits for Tack's, on the device
        for stream in (None, 0):
            fake_clear("order")
            cap = x.__dlpack__(stream=stream)
            order = fake_text("order")
            assert "wait(0," in order and "sync" not in order, order
            y = tack.from_dlpack(cap)
            assert str(y.device) == "hip:0" and y.ptr == x.ptr
        # a consumer's own stream: waited on through an event
        s = ctypes.c_void_p()
        assert FAKE.hipStreamCreate(ctypes.byref(s)) == 0
        fake_clear("order")
        x.__dlpack__(stream=s.value)
        assert "record(" in fake_text("order") and "wait(" in fake_text("order")
        # -1: no synchronization; 1 and 2 are CUDA's, not ROCm's
        fake_clear("order")
        x.__dlpack__(stream=-1)
        assert fake_text("order") == "", fake_text("order")
        for bad in (1, 2):
            try:
                x.__dlpack__(stream=bad)
            except ValueError as e:
                assert "not valid for a ROCm array" in str(e)
            else:
                raise SystemExit(f"stream={bad} was taken")
        print("ok")
    """)


def test_strided_views_reach_the_kernel_with_their_strides(tmp_path, fake):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def update(out, x):
            for i in range(out.shape[0]):
                out[i] = 2 * x[i] + 1
    """))
    run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import update
        args = (ctypes.c_uint64 * 64).in_dll(FAKE, "last_args")
        nbytes = ctypes.c_size_t.in_dll(FAKE, "last_args_bytes")
        x = tack.array(np.arange(10, dtype=np.float32), device="hip")
        y = tack.zeros(5, np.float32, device="hip")
        update(y, x[::-2])  # a Tack view: element (0,)'s address, then the extent and the stride
        tack.synchronize()
        assert list(args[3:8]) == [y.ptr, 5, x.ptr + 9 * 4, 5, 2**64 - 2], list(args[3:8])
        assert nbytes.value == 8 * 8, nbytes.value
        w = tack.zeros(5, np.float32, device="hip")
        update(y, w)  # C order: no stride slot (the same kernel, a build of its own)
        tack.synchronize()
        assert list(args[3:7]) == [y.ptr, 5, w.ptr, 5] and nbytes.value == 7 * 8, (list(args[3:7]), nbytes.value)
        # a strided kDLROCM tensor from a producer: imported as it is, no copy
        class Dims(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32 * 2), ("ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                        ("flags", ctypes.c_uint64), ("data", ctypes.c_void_p), ("device", ctypes.c_int32 * 2),
                        ("ndim", ctypes.c_int32), ("dtype", ctypes.c_uint8 * 4),
                        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                        ("byte_offset", ctypes.c_uint64)]
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        shape, strides = (ctypes.c_int64 * 1)(5), (ctypes.c_int64 * 1)(2)
        class Producer:
            def __init__(self, base):
                self.base = base
            def __dlpack_device__(self):
                return (10, 0)
            def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
                cap = self.base.__dlpack__(stream=stream, max_version=(1, 0))
                t = Dims.from_address(get(cap, b"dltensor_versioned"))
                t.shape, t.strides = shape, strides  # x[::2]
                return cap
        z = tack.array(np.arange(10, dtype=np.float32), device="hip")
        update(y, Producer(z))
        tack.synchronize()
        assert list(args[5:8]) == [z.ptr, 5, 2], list(args[5:8])  # (the fake runs no kernel)
        print("ok")
    """)


def test_array_from_ptr_checks_the_address(tmp_path, fake):
    run(tmp_path, fake, """
        x = tack.zeros(16, np.float32, device="hip")
        v = tack.array_from_ptr(x.ptr, (16,), np.float32, device="hip")
        assert v.ptr == x.ptr and str(v.device) == "hip:0"
        host = np.zeros(16, np.float32)
        try:
            tack.array_from_ptr(host.ctypes.data, (16,), np.float32, device="hip")
        except ValueError as e:
            assert "not memory the HIP runtime knows" in str(e), e
        else:
            raise SystemExit("a host address was taken for device memory")
        print("ok")
    """)


def test_array_from_ptr_checks_the_device(tmp_path, fake):
    run(tmp_path, fake, """
        x = tack.zeros(16, np.float32, device="hip:1")
        try:
            tack.array_from_ptr(x.ptr, (16,), np.float32, device="hip:0")
        except ValueError as e:
            assert "belongs to hip:1, not hip:0" in str(e), e
        else:
            raise SystemExit("another GPU's address was taken")
        print("ok")
    """, FAKE_HIP_COUNT=2)


def test_rocm6_pointer_attributes(tmp_path, fake):
    """ROCm 6 renumbered the memory types and answers for unknown memory."""
    run(tmp_path, fake, """
        x = tack.zeros(16, np.float32, device="hip")
        tack.array_from_ptr(x.ptr, (16,), np.float32, device="hip")
        host = np.zeros(16, np.float32)
        try:
            tack.array_from_ptr(host.ctypes.data, (16,), np.float32, device="hip")
        except ValueError as e:
            assert "not memory the HIP runtime knows" in str(e), e
        else:
            raise SystemExit("a host address was taken for device memory")
    """, FAKE_HIP_RUNTIME=60200000)


def _real_hiprtc():
    proc = subprocess.run([sys.executable, "-c", "from tack import _core; print(_core._hiprtc_version())"],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode == 0 and proc.stdout.strip() not in ("", "0")


@pytest.mark.parametrize("arch,warp", [("gfx90a:sramecc+:xnack-", 64), ("gfx1030", 32)])
def test_real_code_objects_per_architecture(tmp_path, fake, arch, warp):
    """With the real hiprtc (TACK_HIPRTC_PATH unset) and the fake runtime: the
    backend builds a real code object for the device's gcnArchName, which the
    fake loads only when its ELF names that architecture (as the runtime
    requires) and whose symbols hold the kernel's phases; it is cached per
    architecture, and a second process loads it from the cache."""
    if not _real_hiprtc():
        pytest.skip("hiprtc is not installed (Debian: libamdhip64-dev)")
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def total(x, out):
            for i in range(x.shape[0]):
                out[0] += x[i]
    """))
    body = """
        sys.path.insert(0, os.getcwd())
        from kern import total
        x = tack.array(np.ones(64, np.float32), device="hip")
        out = tack.zeros(1, np.float32, device="hip")
        total(x, out)
        tack.synchronize()
        assert fake_int("real_loads") == 1 and "launch(tk_phase0)" in fake_text("completed")
    """
    env = dict(FAKE_HIP_ARCH=arch, FAKE_HIP_WARP=warp, TACK_LOG="info", TACK_HIPRTC_PATH="")
    run(tmp_path, fake, body, **env)
    entries = list((tmp_path / "cache").rglob("*.hsaco"))
    assert [e.name.split(".", 1)[1] for e in entries] == [arch.replace(":", "_") + ".hsaco"], entries
    env2 = _fake_runtime.environment(tmp_path, ("TACK_HIPRTC_PATH",), FAKE_HIP_LIB=fake, TACK_HIP_PATH=fake,
                                     FAKE_HIP_ARCH=arch, FAKE_HIP_WARP=warp, TACK_LOG="info")
    proc = _fake_runtime.run_script(tmp_path, PRELUDE + textwrap.dedent(body), env2)
    assert "from the cache" in proc.stderr and "compiled kernel" not in proc.stderr, proc.stderr[-2000:]


def test_a_code_object_for_another_architecture_is_refused(tmp_path, fake):
    """The fake runtime refuses a real code object built for another GPU
    (hipErrorNoBinaryForGpu), as the real one does; the error names the
    architecture Tack built for.  (A cache entry is per architecture, so
    this takes a device whose gcnArchName the fake reports inconsistently:
    gfx908 to Tack, gfx90a to the loader.)"""
    if not _real_hiprtc():
        pytest.skip("hiprtc is not installed (Debian: libamdhip64-dev)")
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def fill(x):
            for i in range(x.shape[0]):
                x[i] = 1.0
    """))
    out = run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import fill
        x = tack.zeros(8, np.float32, device="hip")
        os.environ["FAKE_HIP_ARCH"] = "gfx90a"  # what the loader checks from now on
        try:
            fill(x)
        except RuntimeError as e:
            print(e)
        else:
            raise SystemExit("a code object for another GPU was loaded")
    """, FAKE_HIP_ARCH="gfx908", TACK_HIPRTC_PATH="")
    assert "hipModuleLoadData failed" in out and "compiled for gfx908" in out, out


def test_a_profile_times_launches_with_events(tmp_path, fake):
    # tack.profile() on a GPU: the device time of each launch from an event
    # pair around its phases, read when the profile ends (the fake's clock: a
    # kernel phase takes FAKE_HIP_KERNEL_NS); the build is hiprtc's, then a
    # cache hit in a second kernel object of the same source
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        def make():
            @tack.kernel
            def axpy(a, x, y):
                for i in range(x.shape[0]):
                    y[i] = a * x[i] + y[i]
            return axpy
    """))
    run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        import kern
        x = tack.array(np.arange(1000, dtype=np.float32), device="hip")
        y = tack.zeros(1000, np.float32, device="hip")
        axpy = kern.make()
        axpy(2.0, x, y)
        tack.synchronize()
        fake_clear("order")
        with tack.profile() as p:
            axpy(2.0, x, y)
            axpy(2.0, x, y)
            kern.make()(2.0, x, y)  # a new kernel object: compiled again, from the cache
            # the launches were queued, not waited for: the device times are read at the end
            assert fake_text("order").count("esync") == 0, fake_text("order")
        launches = [e for e in p.events if e.kind == "launch"]
        assert [(e.name, e.device) for e in launches] == [("axpy", "hip:0")] * 3, launches
        assert [e.device_ns for e in launches] == [1234000] * 3, launches
        builds = [e.phase for e in p.events if e.kind == "compile" and e.device == "hip:0"]
        assert builds == ["cache hit"], p.events
        assert fake_text("order").count("esync") == 3, fake_text("order")
        trace = p.trace()
        gpu = [e for e in trace["traceEvents"] if e.get("cat") == "device"]
        assert len(gpu) == 3 and all(e["dur"] == 1234.0 for e in gpu)
        assert all(b["ts"] >= a["ts"] + a["dur"] for a, b in zip(gpu, gpu[1:]))  # one kernel at a time
        print(p)
        print("ok")
    """, FAKE_HIP_KERNEL_NS=1234000)


def test_streams_and_events(tmp_path, fake):
    # tack.Stream, tack.stream(), kernel(..., stream=s) and tack.Event on HIP:
    # the fake drains a stream only when it is synchronized or waited for, so
    # what ran, and in which order, shows what was queued on which stream
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import tack

        @tack.kernel
        def axpy(a, x, y):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]

        @tack.kernel
        def framed(x, y):  # three phases, t carried from the second to the third: a frame
            for i in range(y.shape[0]):
                y[i] = x[i]
            t = y[0] + 1.0
            for i in range(y.shape[0]):
                y[i] += t
    """))
    (tmp_path / "kern2.py").write_text(textwrap.dedent("""
        import tack

        def make():
            @tack.kernel
            def scale(x, y):
                for i in range(x.shape[0]):
                    y[i] = 2.0 * x[i]
            return scale
    """))
    run(tmp_path, fake, """
        sys.path.insert(0, os.getcwd())
        from kern import axpy, framed
        x = tack.array(np.arange(1000, dtype=np.float32), device="hip")
        y = tack.zeros(1000, np.float32, device="hip")
        z = tack.zeros(1000, np.float32, device="hip")
        axpy(2.0, x, y)
        tack.synchronize()
        s1, s2 = tack.Stream("hip"), tack.Stream("hip")
        assert s1.handle and s2.handle and s1.handle != s2.handle and s1.device == "hip:0"
        assert s1.__cuda_stream__() == (0, s1.handle)

        # a launch on s1 runs when s1 is drained, not Tack's own stream
        n = fake_int("launches")
        axpy(2.0, x, y, stream=s1)
        tack.Stream("hip", handle=0)  # HIP's null stream, wrapped: not Tack's own
        assert fake_int("launches") == n
        s1.synchronize()
        assert fake_int("launches") == n + 1

        # an array written on s1 and read on Tack's stream: ordered on the device,
        # the launch before the copy, though only Tack's own stream is synchronized
        fake_clear("completed")
        with tack.stream(s1):
            axpy(2.0, x, y)
        host = y.numpy()
        done = fake_text("completed").split()
        assert done.index("launch(tk_phase0)") < done.index("d2h(4000)"), done

        # arrays apart: nothing ordered, the launch on s2 waits for nothing on s1
        axpy(2.0, x, y, stream=s1)
        fake_clear("completed")
        with tack.stream(s2):
            w = tack.zeros(1000, np.float32, device="hip")
            v = tack.zeros(1000, np.float32, device="hip")
        fake_clear("completed")
        axpy(2.0, w, v, stream=s2)
        s2.synchronize()
        assert fake_text("completed").split().count("launch(tk_phase0)") == 1, fake_text("completed")
        s1.synchronize()

        # explicit events: s2 waits on the device for s1's point; elapsed time
        e0 = tack.Event("hip").record(s1)
        axpy(2.0, x, z, stream=s1)
        e1 = s1.record()
        assert not e1.query()
        fake_clear("completed")
        s2.wait(e1)
        s2.synchronize()  # drains s1 up to e1
        assert "launch(tk_phase0)" in fake_text("completed") and e1.query()
        assert abs(e0.elapsed_time(e1) - 1.5) < 1e-3, e0.elapsed_time(e1)
        try:
            tack.Event("hip", timing=False).elapsed_time(e1)
        except ValueError as e:
            assert "timing=False" in str(e), e
        else:
            raise SystemExit("an event without timing gave a time")

        # DLPack: a consumer's stream waits for the array's last stream, not the host
        axpy(2.0, x, z, stream=s1)
        n = fake_int("launches")
        cap = z.__dlpack__(stream=s2.handle)
        assert fake_int("launches") == n
        s2.synchronize()
        assert fake_int("launches") == n + 1

        # one program with a frame on two streams, arrays apart: the second launch
        # waits for the first all the same (they share the frame)
        s1.synchronize()
        framed(x, y, stream=s1)  # (not z: exported, it is shared, and a launch using it finishes at once)
        n = fake_int("launches")
        framed(w, v, stream=s2)
        s2.synchronize()
        assert fake_int("launches") == n + 6, fake_int("launches") - n  # three phases each

        # a stream dropped while an array used it lives until the array is ordered after it
        s3 = tack.Stream("hip")
        axpy(2.0, x, z, stream=s3)
        del s3
        assert "sdestroy" not in fake_text("order")
        z.numpy()
        assert "sdestroy" not in fake_text("order")  # x holds it too
        x.numpy()
        assert "sdestroy" in fake_text("order")

        # a kernel freed while its launch on s1 is queued: its code goes after the launch
        import gc, kern2
        k = kern2.make()
        k(x, w, stream=s1)
        n, unloads = fake_int("launches"), fake_int("module_unloads")
        del k
        gc.collect()
        assert fake_int("module_unloads") == unloads + 1
        assert fake_int("launches") == n + 1  # drained before the module went

        # refused: a stream of another device, or not a stream
        for bad, err in ((tack.Stream("cpu"), ValueError), (3, TypeError)):
            try:
                axpy(2.0, x, y, stream=bad)
            except err as e:
                print(type(e).__name__, e)
            else:
                raise SystemExit(f"stream={bad!r} was accepted")
        tack.synchronize()
        print("ok")
    """, FAKE_HIP_KERNEL_NS=1500000)
@pytest.mark.parametrize("without, refused, message", [
    ("EVENT_QUERY", "tack.Stream('hip')", "the HIP runtime lacks hipEventQuery, which streams and events need"),
    pytest.param("GRAPH_LAUNCH", "tack.capture(tack.Stream('hip')).__enter__()",
                 "the HIP runtime lacks hipGraphLaunch, which graphs need",
                 marks=pytest.mark.skipif(not _suite.TEST_ALL, reason="a second fake to build: make test-all")),
])
def test_a_runtime_without_an_entry_point_refuses_what_needs_it(tmp_path_factory, tmp_path, without, refused,
                                                                 message):
    """A runtime lacking an entry point streams (or graphs) need refuses them, naming it (the fake
    built without it; the check is gpu_events.c's, shared with the other GPU backends); the rest of
    the device works."""
    lib = _fake_runtime.build(tmp_path_factory, "fake_hip.c", "libfake-amdhip64.so", "the fake HIP runtime",
                              libs=("-lpthread", f"-DFAKE_HIP_WITHOUT_{without}"))
    out = run(tmp_path, lib, f"""
        x = tack.zeros(4, device="hip")
        try:
            {refused}
        except Exception as e:
            print(type(e).__name__, e)
        else:
            raise SystemExit("accepted")
    """)
    assert out.strip() == f"NotImplementedError hip:0: {message}", out


def test_rocm7_libraries_are_found_by_their_sonames(tmp_path, fake):
    """ROCm 7 ships libamdhip64.so.7 and libhiprtc.so.7 (no .so.6 beside them):
    the HIP backend finds both by soname alone (here the fake under those
    names, ahead of any older ROCm on the machine)."""
    libs = tmp_path / "rocm7"
    libs.mkdir()
    for name in ("libamdhip64.so.7", "libhiprtc.so.7"):
        shutil.copy(fake, libs / name)
    out = run(tmp_path, fake, """
        from tack import _core
        x = tack.zeros(4, device="hip")
        print("device", x.device, tack.devices())
        print("code", _core._hiprtc_compile('extern "C" __global__ void k() {}', arch="gfx90a")[:14])
    """, TACK_HIP_PATH="", TACK_HIPRTC_PATH="", LD_LIBRARY_PATH=libs)
    assert "device hip:0" in out and "hip:0" in out.split("device hip:0", 1)[1]
    assert "code b'\\x7fELFfake-hsaco'" in out
