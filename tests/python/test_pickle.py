"""Pickling tack.Array (what Dask, multiprocessing and concurrent.futures use to
send arguments and results between processes): a CPU array pickles as NumPy
would pickle its values and unpickles as a new, writable CPU array; an array
on any other device is refused, so nothing is copied to the host unasked
(docs/beyond-one-machine.md, "How arrays cross")."""

import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tack

CASES = [
    ("f64 2-d", lambda: tack.array(np.arange(6.0).reshape(2, 3))),
    ("f32 0-d", lambda: tack.array(np.float32(3.5))),
    ("empty", lambda: tack.zeros((3, 0))),
    ("vec3", lambda: tack.array(np.arange(15.0).reshape(5, 3), dtype=tack.vec3)),
    ("mat22d", lambda: tack.array(np.arange(16.0).reshape(4, 2, 2), dtype=tack.mat22d)),
    ("bool", lambda: tack.array([True, False, True])),
    ("f16", lambda: tack.array(np.arange(4, dtype=np.float16))),
    ("u64", lambda: tack.array(np.array([0, 2**64 - 1], dtype=np.uint64))),
    ("a view", lambda: tack.array(np.arange(12.0))[2:5]),
]


@pytest.mark.parametrize("make", [c[1] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cpu_array_round_trips(make, protocol):
    a = make()
    b = pickle.loads(pickle.dumps(a, protocol=protocol))
    assert type(b) is tack.Array
    assert (b.shape, b.dtype, b.device) == (a.shape, a.dtype, "cpu")
    assert np.array_equal(b.numpy(), a.numpy())
    assert b.writable and not b.shared


def test_unpickled_array_owns_a_copy():
    a = tack.array(np.arange(4.0))
    b = pickle.loads(pickle.dumps(a))
    b.fill(7.0)
    assert a.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_protocol_5_sends_the_values_out_of_band_without_a_copy():
    # dask.distributed pickles with protocol 5 and a buffer callback: the values
    # travel as one buffer that is Tack's own storage, not a copy of it.
    a = tack.array(np.arange(1000.0))
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 400
    raw = buffers[0].raw()
    assert raw.nbytes == a.nbytes
    assert np.frombuffer(raw, dtype=np.float64).ctypes.data == a.ptr
    b = pickle.loads(data, buffers=buffers)
    assert np.array_equal(b.numpy(), a.numpy()) and b.ptr != a.ptr


def test_read_only_array_pickles_and_unpickles_writable():
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    a = tack.from_dlpack(frozen)
    assert not a.writable
    b = pickle.loads(pickle.dumps(a))
    assert b.writable and b.numpy().tolist() == [0.0, 1.0, 2.0]


def test_copy_and_deepcopy_give_new_storage():
    a = tack.array(np.arange(3.0))
    for c in (copy.copy(a), copy.deepcopy(a)):
        assert c.ptr != a.ptr and c.numpy().tolist() == [0.0, 1.0, 2.0]


def test_unpickles_on_the_cpu_whatever_the_default_device(tmp_path):
    # The receiving process's default device does not move the values anywhere.
    data = pickle.dumps(tack.array(np.arange(3.0)))
    script = tmp_path / "receiver.py"
    script.write_text(
        "import pickle, sys, tack\n"
        "devices = tack.devices()\n"
        "tack.set_default_device(devices[-1])\n"
        "a = pickle.loads(sys.stdin.buffer.read())\n"
        "print(a.device, a.numpy().tolist())\n"
    )
    out = subprocess.run([sys.executable, str(script)], input=data, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split(None, 1) == ["cpu", "[0.0, 1.0, 2.0]\n"]


OTHER = [d for d in tack.devices() if d != "cpu"]


@pytest.mark.skipif(not OTHER, reason="no device besides the CPU (make test installs PoCL's OpenCL)")
@pytest.mark.parametrize("device", OTHER)
def test_device_array_is_refused_with_what_to_do(device):
    a = tack.array(np.arange(3.0, dtype=np.float32), device=device)
    with pytest.raises(TypeError) as e:
        pickle.dumps(a)
    msg = str(e.value)
    assert f"device '{device}'" in msg and "a.numpy()" in msg and "tack.array(values, device=" in msg
    # copy.deepcopy is a.copy() on the device (nothing reaches the host): it fell back on pickling
    # and was refused with this message, which speaks of pickling
    c = copy.deepcopy(a)
    assert c is not a and c.device == device and c.numpy().tolist() == [0.0, 1.0, 2.0]


def test_reduce_hook_must_be_callable():
    import tack._core as core

    with pytest.raises(TypeError, match="reduce must be callable"):
        core._set_hooks(reduce=42)
    assert pickle.loads(pickle.dumps(tack.zeros(2))).shape == (2,)  # the package's hook stays


# ------------------------------------------------------------------ kernels


@tack.kernel
def add_one(a):
    for i in range(a.shape[0]):
        a[i] += 1.0


def test_importable_kernel_pickles_by_name():
    data = pickle.dumps(add_one)
    assert b"add_one" in data and len(data) < 120  # a name, not the function
    assert pickle.loads(data) is add_one
    assert copy.deepcopy(add_one) is add_one  # as for a function


def test_kernel_defined_in_a_function_needs_a_pickler_that_sends_functions():
    @tack.kernel
    def local(a):
        for i in range(a.shape[0]):
            a[i] = 2.0

    with pytest.raises((pickle.PicklingError, AttributeError), match="local"):
        pickle.dumps(local)  # plain pickle sends functions only by name, and this one has none


SENDER = '''
import sys
import cloudpickle
import tack

@tack.func
def twice(x):
    return 2.0 * x

@tack.kernel(checks=False)
def scale(a):
    for i in range(a.shape[0]):
        a[i] = twice(a[i]) + 1.0

sys.stdout.buffer.write(cloudpickle.dumps(scale))
'''

RECEIVER = '''
import pickle, sys
import numpy as np
import tack

k = pickle.loads(sys.stdin.buffer.read())
a = np.arange(3.0)
k(a)
print(a.tolist(), k.checks, k.__wrapped__.__code__.co_filename)
'''


def test_script_kernel_travels_by_value_with_its_source(tmp_path):
    # What Dask does with a kernel defined in a script: cloudpickle sends the
    # function by value; the source travels with it, so the receiving process
    # compiles it even where the script is gone.
    pytest.importorskip("cloudpickle", reason="cloudpickle comes with the dask extra")
    sender = tmp_path / "sender.py"
    sender.write_text(SENDER)
    sent = subprocess.run([sys.executable, str(sender)], capture_output=True, timeout=120)
    assert sent.returncode == 0, sent.stderr.decode()
    sender.unlink()
    receiver = tmp_path / "receiver.py"
    receiver.write_text(RECEIVER)
    got = subprocess.run([sys.executable, str(receiver)], input=sent.stdout, capture_output=True, timeout=120)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.decode().split() == ["[1.0,", "3.0,", "5.0]", "False", str(sender)]


POOL_SCRIPT = '''
import concurrent.futures as cf
import multiprocessing as mp
import pickle, sys
import numpy as np
import tack

@tack.kernel
def saxpy(y, x, a):
    for i in range(y.shape[0]):
        y[i] += a * x[i]

def call(kernel, n):
    y, x = np.ones(n), np.arange(float(n))
    kernel(y, x, 2.0)
    return y.tolist()

if __name__ == "__main__":
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        k = pickle.loads(pickle.dumps(saxpy, protocol))
        assert (k is saxpy) == (protocol < 4), protocol  # below 4 by the kernel's own name (_pickle.by_name)
        assert k.__qualname__ == "saxpy" and k.__name__ == "saxpy", (protocol, k)
        assert call(k, 3) == [1.0, 3.0, 5.0], protocol
        assert pickle.loads(pickle.dumps(k, protocol)).__qualname__ == "saxpy"  # and again
    assert saxpy.__wrapped__.__qualname__ == "saxpy" and not hasattr(saxpy.__wrapped__, "__tack_source__")
    for method in sys.argv[1:]:
        with cf.ProcessPoolExecutor(1, mp_context=mp.get_context(method)) as pool:
            print(method, pool.submit(call, saxpy, 4).result())
'''


def test_a_script_kernel_goes_to_a_process_pool_by_plain_pickle(tmp_path):
    # multiprocessing and concurrent.futures send a task's function and arguments with plain pickle,
    # which sends a function by name: a script's kernel holds its function's name, so the kernel sends
    # a copy the receiving process finds by a name of its own (__main__.saxpy.__tack_by_name__); the
    # child compiles the source that came with it (spawn re-imports the script as __mp_main__)
    script = tmp_path / "pool_script.py"
    script.write_text(POOL_SCRIPT)
    got = subprocess.run([sys.executable, str(script), "fork", "spawn", "forkserver"], capture_output=True,
                         timeout=300, cwd=tmp_path)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.decode().splitlines() == [f"{m} [1.0, 3.0, 5.0, 7.0]" for m in ("fork", "spawn", "forkserver")]


def test_the_by_name_hook_must_be_callable():
    import tack._core as core

    with pytest.raises(TypeError, match="by_name must be callable"):
        core._set_hooks(by_name=42)
    assert add_one.__tack_by_name__.__qualname__ == "add_one.__tack_by_name__"
    assert add_one.__tack_by_name__ is add_one.__tack_by_name__  # made once, so pickle finds it again


def test_the_by_name_copy_lives_and_dies_with_its_kernel():
    import gc
    import weakref

    def body(a):
        for i in range(a.shape[0]):
            a[i] = 1.0

    k = tack.kernel(body)
    copy_ = k.__tack_by_name__
    before = sys.getrefcount(copy_)
    for _ in range(100):
        assert k.__tack_by_name__ is copy_
    assert sys.getrefcount(copy_) == before  # the getter gives a new reference each time, no more
    gone = weakref.ref(copy_)
    del copy_, k
    gc.collect()
    assert gone() is None


STALE_MODULE = '''
import tack

def body(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2.0

k = tack.kernel(body)  # held under another name than its function's: pickles by value
'''

STALE_SENDER = '''
import pickle, sys
sys.path.insert(0, sys.argv[1])
import stale_mod
sys.stdout.buffer.write(pickle.dumps(stale_mod.k))
'''

STALE_RECEIVER = '''
import pickle, sys
import numpy as np
import tack
sys.path.insert(0, sys.argv[1])
k = pickle.loads(sys.stdin.buffer.read())  # imports the edited stale_mod: body is its function now
import stale_mod

def run(kernel):
    a = np.ones(2)
    try:
        kernel(a)
    except tack.CompileError as e:
        return "CompileError: " + str(e)
    return str(a.tolist())

print(run(k))
print(run(stale_mod.k))
print(run(tack.kernel(stale_mod.body)))
print(hasattr(stale_mod.body, "__tack_source__"))
'''


def test_a_pickled_kernel_s_source_never_outlives_an_edit(tmp_path):
    # Pickled, then its file edited, then unpickled in another process: the
    # kernel came with the old text, but its function is the edited one (plain
    # pickle sends a function by name).  The old text compiled for it, and --
    # set on the receiver's own function -- for the receiver's own kernels too.
    # Now the unpickled kernel refuses as an edited file does, and the
    # receiver's kernels compile the file they imported (docs/design/decisions.md).
    (tmp_path / "stale_mod.py").write_text(STALE_MODULE)
    (tmp_path / "sender.py").write_text(STALE_SENDER)
    (tmp_path / "receiver.py").write_text(STALE_RECEIVER)
    sent = subprocess.run([sys.executable, str(tmp_path / "sender.py"), str(tmp_path)], capture_output=True,
                          timeout=120)
    assert sent.returncode == 0, sent.stderr.decode()
    (tmp_path / "stale_mod.py").write_text(STALE_MODULE.replace("* 2.0", "* 3.0"))
    got = subprocess.run([sys.executable, str(tmp_path / "receiver.py"), str(tmp_path)], input=sent.stdout,
                         capture_output=True, timeout=120)
    assert got.returncode == 0, got.stderr.decode()
    unpickled, own, fresh, leaked = got.stdout.decode().splitlines()
    assert unpickled.startswith("CompileError: ") and "body()" in unpickled and "pickle" in unpickled, unpickled
    assert own == fresh == "[3.0, 3.0]"
    assert leaked == "False"


def test_an_unpickled_kernel_s_source_is_its_own(tmp_path):
    # Unedited, the unpickled kernel compiles the text it came with, and the
    # receiver's function is left as it was: it pickles again by name.
    (tmp_path / "stale_mod.py").write_text(STALE_MODULE)
    (tmp_path / "sender.py").write_text(STALE_SENDER)
    receiver = STALE_RECEIVER + "print(pickle.loads(pickle.dumps(k)).__wrapped__.__qualname__)\n"
    (tmp_path / "receiver.py").write_text(receiver)
    sent = subprocess.run([sys.executable, str(tmp_path / "sender.py"), str(tmp_path)], capture_output=True,
                          timeout=120)
    assert sent.returncode == 0, sent.stderr.decode()
    got = subprocess.run([sys.executable, str(tmp_path / "receiver.py"), str(tmp_path)], input=sent.stdout,
                         capture_output=True, timeout=120)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.decode().splitlines() == ["[2.0, 2.0]"] * 3 + ["False", "body"]
