"""One kernel cache shared by many processes that start together (MPI ranks, Dask
workers): 8 processes released at once compile the same new kernel into one empty
cache directory.  All get the right answer, the cache ends with one entry for it
and nothing else of theirs (no temporaries, no lock files), and the compiler ran
once: the others waited for that build (kcache.c, kc_lock) and loaded it."""

import os
import subprocess
import sys
import time

PROCESSES = 8

RANK = '''
import os, sys, time
import numpy as np
import tack

@tack.kernel
def fresh(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] * s + float(i)

go = sys.argv[1]
while not os.path.exists(go):   # every process imported and waiting: then all at once
    time.sleep(0.002)
a = np.ones(5)
fresh(a, 3.0)
print(a.tolist())
'''


def test_eight_processes_compile_one_new_kernel_once(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    go = tmp_path / "go"
    env = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_LOG="info")
    procs = [subprocess.Popen([sys.executable, str(script), str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(PROCESSES)]
    time.sleep(3.0)  # let them all import tack (they wait for `go` either way)
    go.touch()
    results = [p.communicate(timeout=240) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert out.split("\n")[0] == "[3.0, 4.0, 5.0, 6.0, 7.0]", out + err

    logs = "".join(err for _, err in results)
    compiled = logs.count("tack: compiled kernel 'fresh'")
    loaded = logs.count("tack: loaded kernel 'fresh'")
    assert (compiled, loaded) == (1, PROCESSES - 1), logs

    names = sorted(os.listdir(cache))
    entries = [n for n in names if n.endswith(".so")]
    assert len(entries) == 1, names
    key = entries[0][:-3]
    leftovers = [n for n in names if n not in (f"{key}.so", f"{key}.c") and not n.endswith((".ccid", ".id"))]
    assert leftovers == [], names
