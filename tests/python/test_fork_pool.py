"""fork() and the CPU thread pool: a child runs kernels and ends, whichever
thread forked it and whatever the pool was doing.

A child that Python forks from a thread other than the main one goes on
running that thread's code and ends the way a thread ends, not with exit():
the process lives until its last thread is gone.  The pool's workers used
to wait forever, so such a child never ended once it had run a parallel
kernel.  Each combination runs in one driver process; each child has a
deadline, and a child that misses it is killed and reported."""

import json
import os
import subprocess
import sys
import textwrap

DRIVER = '''
import json, os, sys, threading, time
import numpy as np
import tack

@tack.kernel
def inc(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1

@tack.kernel
def slow(x, reps):
    for i in range(x.shape[0]):
        s = x[i]
        for r in range(reps):
            s = s * 0.5 + 1.0
        x[i] = s

N = 1_000_000  # far above the fork-join threshold: the pool runs it

def child_body(ends):
    x = np.zeros(N)
    inc(x)
    ok = bool((x == 1).all())
    if ends == "_exit":
        os._exit(0 if ok else 3)
    if ends == "thread_in_child":  # the kernel runs on a thread the child starts
        y = np.zeros(N)
        t = threading.Thread(target=inc, args=(y,))
        t.start()
        t.join()
        ok = ok and bool((y == 1).all())
    if not ok:
        os._exit(3)
    sys.exit(0)  # in a thread: the thread ends; on the main thread: Python exits

def case(where, pool, ends):
    inc(np.zeros(1))
    slow(np.zeros(1), 1)
    stop = threading.Event()
    busy = None
    if pool == "used":
        inc(np.zeros(N))
    elif pool == "used_by_thread":
        t = threading.Thread(target=inc, args=(np.zeros(N),))
        t.start()
        t.join()
    elif pool == "running":  # another thread's parallel kernel is running at the fork
        def spin():
            while not stop.is_set():
                slow(np.zeros(64), 100_000)
        busy = threading.Thread(target=spin)
        busy.start()
        time.sleep(0.1)
    pid = {}
    def fork():
        p = os.fork()
        if p == 0:
            child_body(ends)
        pid["p"] = p
    if where == "main":
        fork()
    else:
        t = threading.Thread(target=fork)
        t.start()
        t.join()
    stop.set()
    if busy:
        busy.join()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        p, status = os.waitpid(pid["p"], os.WNOHANG)
        if p:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid["p"], 9)
    os.waitpid(pid["p"], 0)
    return "hung"

out = {}
for where in ("main", "thread"):
    for pool in ("fresh", "used", "used_by_thread", "running"):
        for ends in ("return", "_exit", "thread_in_child"):
            out[f"{where}/{pool}/{ends}"] = case(where, pool, ends)
# the pool taken down when its last member thread ended starts again
x = np.zeros(N)
inc(x)
out["after"] = bool((x == 1).all())
print(json.dumps(out))
'''


def test_forked_children_run_kernels_and_end(tmp_path):
    path = tmp_path / "driver.py"
    path.write_text(textwrap.dedent(DRIVER))
    env = dict(os.environ, TACK_NUM_THREADS="4")  # several workers, whatever the machine
    proc = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", str(path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got.pop("after") is True
    bad = {k: v for k, v in got.items() if v != 0}
    assert not bad, bad
    assert len(got) == 24


GPU_PARENT = '''
import json, os, sys
import numpy as np
import tack

@tack.kernel
def inc(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1

dev = sys.argv[1]
a = tack.zeros(1000, device=dev)
inc(a)                                  # the parent opens the device and runs on it
assert np.asarray(a).sum() == 1000

def child():
    out = {}
    def attempt(name, fn):
        try:
            fn()
            out[name] = "ran"
        except RuntimeError as e:
            out[name] = str(e)
    attempt("zeros", lambda: tack.zeros(4, device=dev))
    attempt("copy_out", lambda: np.asarray(a))
    attempt("launch", lambda: inc(a))
    attempt("synchronize", tack.synchronize)
    out["listed"] = dev in tack.devices()
    x = np.zeros(100_000)
    inc(x)                              # the CPU works in the child
    out["cpu"] = bool((x == 1).all())
    del out_a[:]                        # dropping the parent's array frees nothing of the child's
    return out

out_a = [a]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        res = child()
    except BaseException as e:
        res = {"error": repr(e)}
    os.write(w, json.dumps(res).encode())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
os.waitpid(pid, 0)

s = tack.Stream(dev)
inc(a, stream=s)
pid = os.fork()
if pid == 0:                            # a child that ends as a script does, dropping the parent's
    del out_a[:], a, s                  # array and stream on the device: nothing waits on the driver
    sys.exit(7)
_, status = os.waitpid(pid, 0)
res = json.loads(data.decode())
res["exit"] = os.waitstatus_to_exitcode(status)
print(json.dumps(res))
'''


def test_a_gpu_device_opened_before_fork_fails_clearly_in_the_child(tmp_path):
    """A GPU driver's context does not carry over into a child of fork(): PoCL's
    queue waited forever in the child for a worker thread it does not have, so
    the child hung at its first use of the device, and a child that never used
    it hung at its exit, freeing the parent's array.  The child now gets a
    RuntimeError naming the device and the fork at every use, the device is
    not listed, dropping the parent's arrays and streams frees nothing, and
    the CPU keeps working."""
    import tack
    gpus = [d for d in tack.devices() if d != "cpu"]
    if not gpus:
        import pytest
        pytest.skip("no device other than the CPU")
    path = tmp_path / "gpu_parent.py"
    path.write_text(GPU_PARENT)
    proc = subprocess.run([sys.executable, str(path), gpus[0]], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got.pop("exit") == 7, got
    assert got.pop("cpu") is True, got
    assert got.pop("listed") is False, got
    assert got.pop("synchronize") == "ran", got  # nothing of the child's is queued there
    for what in ("zeros", "copy_out", "launch"):
        msg = got[what]
        assert f"device '{gpus[0]}' cannot be used in this process" in msg, (what, msg)
        assert "fork()" in msg and "'spawn'" in msg, (what, msg)
