"""The C compiler's identity is remembered in the kernel cache directory, so a
new process with a warm cache starts no compiler process; a damaged memo is
ignored and rewritten."""

import os
import subprocess
import sys

SCRIPT = """
import numpy as np, tack
@tack.kernel
def twice(a):
    for i in range(a.shape[0]):
        a[i] = 2 * a[i]
x = np.arange(4, dtype=np.float32)
twice(x)
assert x.tolist() == [0, 2, 4, 6], x
print("ok")
"""


def run(cache, **env):
    script = cache.parent / "twice.py"
    script.write_text(SCRIPT)
    e = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_LOG="info", **env)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=300)


def test_identity_memo_written_and_reused(tmp_path):
    cache = tmp_path / "cache"
    first = run(cache)
    assert first.returncode == 0, first.stderr
    memos = list(cache.glob("cc-*.id"))
    assert len(memos) == 1
    assert "compiled kernel 'twice'" in first.stderr
    second = run(cache)
    assert second.returncode == 0, second.stderr
    assert "loaded kernel 'twice' from the cache" in second.stderr


def test_damaged_identity_memo_is_rewritten(tmp_path):
    cache = tmp_path / "cache"
    assert run(cache).returncode == 0
    (memo,) = cache.glob("cc-*.id")
    memo.write_text("garbage")
    again = run(cache)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "ok"
    # the memo was asked anew and written back in full
    assert len(memo.read_bytes().split(b"\n")[0].split()) == 2
    assert "loaded kernel 'twice' from the cache" in again.stderr
