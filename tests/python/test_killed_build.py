"""A build killed with SIGKILL: its compiler goes with it, and what it left in
the cache is removed later.

The compiler is a wrapper script (TACK_CC) that sleeps before it compiles,
so it has a child of its own, as gcc has cc1: both must be gone within a
few seconds of the builder's death (platform/posix_spawn_guard.c).  The source the build
wrote stays in the cache until the next process that takes a build lock
finds it older than a day (kcache.c); its age is set by hand here."""

import os
import signal
import subprocess
import sys
import textwrap
import time

SLOW_CC = '''#!/bin/sh
if [ "$1" = --version ]; then exec cc --version; fi
echo $$ > "$TACK_TEST_MARK.tmp" && mv "$TACK_TEST_MARK.tmp" "$TACK_TEST_MARK"
sleep 60
exec cc "$@"
'''

BUILD = '''
import numpy as np
import tack

@tack.kernel
def k(x, v):
    for i in range(x.shape[0]):
        x[i] = v * x[i] + 1.0

x = np.ones(4)
k(x, 2.0)
print(x.tolist())
'''


def proc_state(pid):
    """The state letter of a live process, None for one that is gone (a
    zombie counts as gone: its parent, here init, has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return None if state in ("Z", "X") else state


def children_of(pid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(name))
    return out


def killed_build(tmp_path):
    """Start a build with the slow compiler, SIGKILL it mid-compile; the
    compiler's processes (the script and its sleep), their process groups
    and the cache directory.  The compiler's processes are killed at the
    end, if they are still there, by killed_build.cleanup."""
    cc = tmp_path / "slowcc"
    cc.write_text(SLOW_CC)
    cc.chmod(0o755)
    script = tmp_path / "build.py"
    script.write_text(textwrap.dedent(BUILD))
    cache = tmp_path / "cache"
    mark = tmp_path / "cc.pid"
    env = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_CC=str(cc), TACK_TEST_MARK=str(mark))
    builder = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists() and time.monotonic() < deadline and builder.poll() is None:
            time.sleep(0.02)
        assert mark.exists(), builder.communicate()[1][-3000:]
        shell = int(mark.read_text())
        while not children_of(shell) and time.monotonic() < deadline:
            time.sleep(0.02)
        compiler = [shell] + children_of(shell)
        killed_build.started.extend(compiler)
        assert len(compiler) == 2, compiler  # the script and its sleep
        groups = {"compiler": os.getpgid(shell), "builder": os.getpgid(builder.pid)}
    finally:
        builder.send_signal(signal.SIGKILL)
        builder.wait(timeout=30)
    return compiler, groups, cache, script


killed_build.started = []


def cleanup():
    while killed_build.started:
        p = killed_build.started.pop()
        if proc_state(p):
            os.kill(p, signal.SIGKILL)


def test_a_killed_build_leaves_no_compiler_running(tmp_path):
    try:
        compiler, groups, _, _ = killed_build(tmp_path)
        t0 = time.monotonic()
        while any(proc_state(p) for p in compiler) and time.monotonic() - t0 < 5:
            time.sleep(0.02)
        left = {p: proc_state(p) for p in compiler if proc_state(p)}
        assert not left, f"compiler processes outlived the build by 5 s: {left}"
        assert groups["compiler"] == compiler[0] != groups["builder"], groups  # a process group of its own
    finally:
        cleanup()


def test_the_next_build_removes_what_a_killed_one_left(tmp_path):
    try:
        _, _, cache, script = killed_build(tmp_path)
    finally:
        cleanup()
    # what the killed build left: its source, under a temporary name
    leftovers = [p for p in cache.iterdir() if p.name.endswith(".c") and p.name.count("-") >= 2]
    assert len(leftovers) == 1, sorted(p.name for p in cache.iterdir())
    old = leftovers[0]
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    young = cache / "0123456789abcdef-424242-7.so.tmp"  # another build's, under way
    young.write_bytes(b"\x7fELF")
    kept = cache / "notes-1-2.txt"  # not a name Tack makes
    kept.write_text("mine")
    os.utime(kept, (two_days_ago, two_days_ago))

    # the next build (another compiler, so another entry and another lock)
    env = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_LOG="info")
    env.pop("TACK_CC", None)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[3.0, 3.0, 3.0, 3.0]"
    assert not old.exists(), "the leftover source older than a day is still there"
    assert young.exists() and kept.exists()
    assert "removed 1 leftover temporary older than 86400 s" in proc.stderr, proc.stderr[-3000:]
