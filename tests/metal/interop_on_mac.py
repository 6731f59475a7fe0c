"""The spec's Metal interop rules on a real Mac (tests/metal/run_on_mac.sh runs this).

Each check prints one line, "ok: ..." or "FAILED: ...", and the exit status
is the number of failures.  What it shows that the fake runtime cannot:
Metal's own device list, shared storage that NumPy reads through DLPack,
a host tensor copied into a Metal array (and a zero-copy request refused),
and -- when PyObjC's Metal bindings are installed (pip install
pyobjc-framework-Metal) -- array_from_ptr of an MTLBuffer made by another
library, with writes visible on both sides.
"""

import sys

import numpy as np

import tack

failures = 0


def check(what, fn):
    global failures
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- every failure is reported, then counted
        failures += 1
        print(f"FAILED: {what}: {type(e).__name__}: {e}")
    else:
        print(f"ok: {what}")


def devices():
    names = [str(d) for d in tack.devices()]
    assert "metal:0" in names, names


def shared_storage():
    x = tack.array(np.arange(8, dtype=np.float32), device="metal")
    assert x.__dlpack_device__() == (1, 0)
    n = np.from_dlpack(x)
    n[3] = 42.0
    assert x.numpy()[3] == 42.0


def copy_in():
    host = np.arange(6, dtype=np.int32)
    m = tack.from_dlpack(host, device="metal", copy=True)
    host[0] = 99
    assert str(m.device) == "metal:0" and m.numpy()[0] == 0


def zero_copy_refused():
    try:
        tack.from_dlpack(np.zeros(4, np.float32), device="metal", copy=False)
    except BufferError as e:
        assert "Metal has no zero-copy import" in str(e), e
    else:
        raise AssertionError("a zero-copy import into Metal was accepted")


def wrap_mtlbuffer():
    try:
        import Metal  # PyObjC
    except ImportError:
        print("skipped: array_from_ptr of an MTLBuffer (no PyObjC: pip install pyobjc-framework-Metal)")
        return
    dev = Metal.MTLCreateSystemDefaultDevice()
    buf = dev.newBufferWithLength_options_(64, Metal.MTLResourceStorageModeShared)
    a = tack.array_from_ptr(buf, (16,), tack.f32, writable=True, device="metal")
    a.fill(1.5)
    view = buf.contents().as_buffer(64)
    assert np.frombuffer(view, np.float32)[15] == 1.5


for what, fn in (("Metal lists its GPU", devices),
                 ("a Metal array exports its shared storage as kDLCPU and NumPy shares it", shared_storage),
                 ("from_dlpack(host, device='metal', copy=True) copies", copy_in),
                 ("from_dlpack(host, device='metal', copy=False) is refused", zero_copy_refused),
                 ("array_from_ptr wraps an MTLBuffer", wrap_mtlbuffer)):
    check(what, fn)
sys.exit(failures)
