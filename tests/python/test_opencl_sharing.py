"""What an OpenCL array shares with the host, in each memory mode.

Where the device has fine-grained shared virtual memory (PoCL has), arrays
live there: NumPy shares them through DLPack, `.ptr` is a host address, and
`array_from_ptr` wraps Tack's own SVM addresses and nothing else.  With
TACK_OPENCL_SVM=0 (or a device without SVM) arrays are cl_mem buffers and
every request to share says the device has no shared virtual memory.  The
SVM tests run in this process (and skip when it runs with TACK_OPENCL_SVM=0
or the device has no SVM); the buffer tests run a script with
TACK_OPENCL_SVM=0."""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import tack

OPENCL = [d for d in tack.devices() if d.startswith("opencl")]
pytestmark = pytest.mark.skipif(
    not OPENCL, reason="no OpenCL device: install ocl-icd-libopencl1 and pocl-opencl-icd (make test does, as root)")
DEV = OPENCL[0] if OPENCL else None
SVM = bool(OPENCL) and tack.zeros(1, tack.f32, device=DEV).__dlpack_device__() == (1, 0)
needs_svm = pytest.mark.skipif(not SVM, reason="the OpenCL device is in the buffer mode (no fine-grained SVM, or "
                                               "TACK_OPENCL_SVM=0)")


@tack.kernel
def add_index(x):
    for i in range(x.shape[0]):
        x[i] += float(i)


@tack.kernel
def poke(x, k):
    for i in range(x.shape[0]):
        x[i + k] = 1.0


@tack.kernel
def busy(x, n):
    for i in range(x.shape[0]):
        s = 0.0
        for k in range(n):
            s += 1.0
        x[i] = s


@needs_svm
def test_fills_and_copies_of_shared_svm_storage_finish_before_returning():
    """The host reads shared SVM with plain loads, so a fill or a copy into
    it is done when the call returns, even queued behind a long kernel."""
    slow = tack.zeros(2, tack.f64, device=DEV)
    a = tack.zeros(4, tack.f32, device=DEV)
    alias = np.from_dlpack(a)
    busy(slow, 100_000_000)  # not shared: queued, still running
    a.fill(5.0)
    assert alias.tolist() == [5.0] * 4
    src = tack.full(4, 6.0, tack.f32, device=DEV)
    busy(slow, 100_000_000)
    tack.copyto(a, src)
    assert alias.tolist() == [6.0] * 4


@needs_svm
def test_numpy_shares_an_svm_array():
    a = tack.zeros(6, tack.f32, device=DEV)
    add_index(a)  # queued; the export waits for it
    alias = np.from_dlpack(a)
    np.testing.assert_array_equal(alias, np.arange(6, dtype=np.float32))
    assert a.shared
    alias[0] = 10.0  # the host writes; the device sees it
    add_index(a)  # shared: complete when the call returns, so the alias reads the result at once
    np.testing.assert_array_equal(alias, [10, 2, 4, 6, 8, 10])
    del a
    gc.collect()
    np.testing.assert_array_equal(alias, [10, 2, 4, 6, 8, 10])  # NumPy holds the storage


@needs_svm
def test_a_failed_check_on_a_shared_svm_array_raises_at_once():
    a = tack.zeros(4, tack.f32, device=DEV)
    np.from_dlpack(a)
    with pytest.raises(IndexError, match="out of bounds"):
        poke(a, 1)  # no synchronize: the launch completes before the call returns


@needs_svm
def test_ptr_is_an_address_that_wraps():
    a = tack.array(np.arange(16, dtype=np.float32), device=DEV)
    part = tack.array_from_ptr(a.ptr + 4 * 8, (8,), tack.f32, writable=True, device=DEV)
    assert part.device == DEV and part.shared
    part.fill(-1.0)
    add_index(part)
    np.testing.assert_array_equal(a.numpy(), np.r_[np.arange(8), np.arange(8) - 1].astype(np.float32))
    assert not tack.array_from_ptr(a.ptr, (16,), tack.f32, device=DEV).writable


@needs_svm
def test_only_tacks_own_svm_addresses_wrap():
    a = tack.zeros(8, tack.f32, device=DEV)
    host = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=r"not in shared virtual memory Tack allocated there.*its \.ptr"):
        tack.array_from_ptr(host.ctypes.data, (8,), tack.f32, device=DEV)
    with pytest.raises(ValueError, match="run past the end of the 32-byte shared virtual memory allocation"):
        tack.array_from_ptr(a.ptr + 4, (8,), tack.f32, device=DEV)
    with pytest.raises(ValueError, match="host memory and cannot be wrapped"):
        tack.array_from_ptr(host, (8,), tack.f32, device=DEV)
    gone = tack.zeros(8, tack.f32, device=DEV)
    address = gone.ptr
    del gone
    gc.collect()
    with pytest.raises(ValueError, match="not in shared virtual memory"):
        tack.array_from_ptr(address, (8,), tack.f32, device=DEV)


@needs_svm
def test_dlpack_round_trip_shares_svm_storage():
    a = tack.array(np.arange(4, dtype=np.int32), device=DEV)
    alias = np.from_dlpack(a)
    back = tack.from_dlpack(alias, device=DEV, copy=False)  # the same storage, on the OpenCL device again
    assert back.device == DEV
    back.fill(7)
    np.testing.assert_array_equal(alias, [7, 7, 7, 7])
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7, 7])
    by_default = tack.from_dlpack(alias, device=DEV)  # shares when it can
    by_default.fill(8)
    assert a.numpy().tolist() == [8, 8, 8, 8]
    copied = tack.from_dlpack(alias, device=DEV, copy=True)
    copied.fill(9)
    assert a.numpy().tolist() == [8, 8, 8, 8]
    on_cpu = tack.from_dlpack(a)  # DLPack says host memory: a CPU view of it
    assert on_cpu.device == "cpu" and on_cpu.numpy().tolist() == [8, 8, 8, 8]


@needs_svm
def test_host_memory_is_copied_onto_an_svm_device_never_shared():
    host = np.arange(3.0)
    with pytest.raises(BufferError, match=r"without a copy \(copy=False\): cannot wrap .* not in shared virtual"):
        tack.from_dlpack(host, device=DEV, copy=False)
    moved = tack.from_dlpack(host, device=DEV)
    host[0] = 5.0
    assert moved.numpy().tolist() == [0.0, 1.0, 2.0]


@needs_svm
def test_svm_copies_fills_and_repr():
    a = tack.full(5, 1.5, tack.vec3, device=DEV)  # a 12-byte pattern, staged
    np.testing.assert_array_equal(a.numpy(), np.full((5, 3), 1.5, np.float32))
    b = tack.array(a, device=DEV)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert tack.zeros(0, tack.f64, device=DEV).numpy().shape == (0,)
    big = tack.zeros(100_000, tack.f32, device=DEV)
    assert repr(big).startswith("tack.array([0., 0., 0., ..., 0., 0., 0.]")


BUFFER_MODE = '''
import numpy as np
import pytest
import tack

dev = [d for d in tack.devices() if d.startswith("opencl")][0]

@tack.kernel
def add_index(x):
    for i in range(x.shape[0]):
        x[i] += float(i)

@tack.kernel
def total(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i]

a = tack.zeros(6, tack.f32, device=dev)
assert a.__dlpack_device__() == (4, 0)                   # kDLOpenCL: the cl_mem, as DLPack says
add_index(a)
np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype=np.float32))
out = tack.zeros(1, tack.f64, device=dev)
total(tack.array(np.ones(100), device=dev), out)       # a serial phase: one work-item
assert out.numpy().tolist() == [100.0]
v = tack.full(3, 2.0, tack.vec3, device=dev)            # a staged fill
assert v.numpy().tolist() == [[2.0] * 3] * 3
assert a.__dlpack__(max_version=(1, 0)) is not None      # the export still works (kDLOpenCL)
no_svm = r"opencl:0 \\(.*\\): it has no shared virtual memory Tack can use \\(TACK_OPENCL_SVM=0 turns it off\\)"
with pytest.raises(NotImplementedError, match=no_svm):
    tack.array_from_ptr(a.ptr, (6,), tack.f32, device=dev)
with pytest.raises(BufferError, match="without a copy .copy=False.: cannot share .*" + no_svm[9:]):
    tack.from_dlpack(np.arange(3.0), device=dev, copy=False)
with pytest.raises(BufferError, match="copy=False"):
    a.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
with pytest.raises(ValueError, match="without a copy"):
    np.asarray(a, copy=False)
host = tack.from_dlpack(a.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))   # a copy, allowed
assert host.device == "cpu" and host.numpy().tolist() == list(range(6))
assert repr(tack.zeros(100_000, tack.f32, device=dev)).startswith("tack.array([0., 0., 0., ..., 0., 0., 0.]")
print("ok")
'''


def run_script(tmp_path, text, **env):
    script = tmp_path / "script.py"
    script.write_text(text)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env))


def test_buffer_mode_copies_and_refuses_to_share(tmp_path):
    proc = run_script(tmp_path, BUFFER_MODE, TACK_OPENCL_SVM="0")
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


def test_a_bad_tack_opencl_svm_is_an_error(tmp_path):
    proc = run_script(tmp_path, "import tack\ntack.zeros(1, device='opencl')\n", TACK_OPENCL_SVM="yes")
    assert proc.returncode != 0
    assert "TACK_OPENCL_SVM must be 0 or 1" in proc.stderr
    assert "not 'yes'" in proc.stderr
