"""The kernel cache trusts nothing it did not make (docs/security.md).

Each hostile case runs in its own process with a timeout, as the review that
found them did: a damaged entry must be rebuilt, never crash the process; a
planted library must never run (dlopen runs a library's constructors before
any symbol can be compared, so it must not be dlopen'ed at all); a FIFO must
not hang; a directory another user could swap is refused; TACK_CC never
reaches a shell; long paths and flags are used whole.
"""

import os
import shutil
import stat
import subprocess
import sys

import pytest

SCRIPT = """
import numpy as np, tack
@tack.kernel
def triple(a):
    for i in range(a.shape[0]):
        a[i] = 3 * a[i]
x = np.arange(4, dtype=np.float32)
triple(x)
assert x.tolist() == [0, 3, 6, 9], x
print("ok")
"""

PLANT = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("planted code ran\n", f); fclose(f); }
}
__attribute__((visibility("default"))) const char tack_cache_key[] = "%s";
__attribute__((visibility("default"))) void tack_entry(void) {}
"""

CC = shutil.which(os.environ.get("TACK_CC", "cc"))


def run(cache, timeout=300, where=None, **env):
    script = (where or cache.parent) / "triple.py"
    script.write_text(SCRIPT)
    e = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_LOG="info", **env)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, timeout=timeout)


def warm(tmp_path):
    """A cache holding the kernel's entry; returns (cache, entry path)."""
    cache = tmp_path / "cache"
    first = run(cache)
    assert first.returncode == 0, first.stderr
    (entry,) = [p for p in cache.glob("*.so")]
    return cache, entry


def seal(data):
    """Tack's seal of `data` (kcache.c): two FNV-1a lanes, then the size."""
    a, b, prime, mask = 0xCBF29CE484222325, 0x6C62272E07BB0142, 0x100000001B3, (1 << 64) - 1
    for byte in data:
        a = ((a ^ byte) * prime) & mask
        b = ((b ^ byte) * prime) & mask
    a = ((a ^ 0xFF) * prime) & mask
    b = ((b ^ 0xFE) * prime) & mask
    return b"TACKSEAL" + a.to_bytes(8, "little") + b.to_bytes(8, "little") + len(data).to_bytes(8, "little")


def plant(tmp_path, entry, marker, sealed):
    """Replace `entry` with a library whose constructor writes `marker`."""
    src = tmp_path / "plant.c"
    src.write_text(PLANT % (marker, entry.stem))
    lib = tmp_path / "plant.so"
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    data = lib.read_bytes()
    entry.unlink()
    entry.write_bytes(data + seal(data) if sealed else data)
    entry.chmod(0o600)


def assert_rebuilt(proc, why):
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert why in proc.stderr, proc.stderr
    assert "compiled kernel 'triple'" in proc.stderr, proc.stderr


def test_a_sealed_entry_is_loaded(tmp_path):
    cache, entry = warm(tmp_path)
    data = entry.read_bytes()
    assert data[-32:] == seal(data[:-32])  # the seal is what the tests think it is
    again = run(cache)
    assert again.returncode == 0 and "loaded kernel 'triple' from the cache" in again.stderr, again.stderr


def test_truncated_entry_is_rebuilt(tmp_path):
    cache, entry = warm(tmp_path)
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])
    assert_rebuilt(run(cache), "rebuilding it")


def test_zero_filled_entry_is_rebuilt(tmp_path):
    cache, entry = warm(tmp_path)
    entry.write_bytes(bytes(entry.stat().st_size))
    assert_rebuilt(run(cache), "not sealed by Tack")


def test_fifo_at_an_entry_does_not_hang(tmp_path):
    cache, entry = warm(tmp_path)
    entry.unlink()
    os.mkfifo(entry, 0o600)
    assert_rebuilt(run(cache, timeout=120), "not a regular file")
    assert stat.S_ISREG(entry.stat().st_mode)


def test_symlink_at_an_entry_is_not_followed(tmp_path):
    cache, entry = warm(tmp_path)
    elsewhere = tmp_path / "elsewhere.so"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert_rebuilt(run(cache), "a symbolic link")
    assert not entry.is_symlink()


def test_directory_at_an_entry_is_named_and_left_alone(tmp_path):
    """A directory cannot be renamed over as a FIFO or a link is: the call fails saying what is in
    the way and what to do (it said only "Is a directory"), and the directory and what it holds
    stay; once it is removed the kernel is built and cached again."""
    cache, entry = warm(tmp_path)
    entry.unlink()
    entry.mkdir()
    (entry / "notes.txt").write_text("someone's file")
    r = run(cache)
    assert r.returncode != 0
    assert f"cannot store the compiled kernel {entry}: a directory is in its place" in r.stderr, r.stderr
    assert "remove it" in r.stderr and "TACK_CACHE_DIR" in r.stderr, r.stderr
    assert (entry / "notes.txt").read_text() == "someone's file"
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]  # no half-stored entry left
    shutil.rmtree(entry)
    assert run(cache).returncode == 0 and entry.is_file()


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_planted_library_never_runs(tmp_path):
    cache, entry = warm(tmp_path)
    marker = tmp_path / "PWNED"
    plant(tmp_path, entry, marker, sealed=False)
    proc = run(cache)
    assert not marker.exists(), "a planted library's constructor ran"
    assert_rebuilt(proc, "not sealed by Tack")


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_entry_others_may_write_never_runs(tmp_path):
    # Even with a valid seal: a file others may write is not ours alone.
    cache, entry = warm(tmp_path)
    marker = tmp_path / "PWNED"
    plant(tmp_path, entry, marker, sealed=True)
    entry.chmod(0o666)
    proc = run(cache)
    assert not marker.exists(), "a library others may write was loaded"
    assert_rebuilt(proc, "writable by group or others")


def test_directory_others_may_replace_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable, no sticky bit: anyone may rename our cache away
    proc = run(shared / "cache")
    assert proc.returncode != 0
    assert "without the sticky bit" in proc.stderr, proc.stderr


def test_sticky_world_writable_parent_is_accepted(tmp_path):
    shared = tmp_path / "sticky"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    proc = run(shared / "cache")
    assert proc.returncode == 0, proc.stderr


def test_cache_directory_others_may_write_is_refused(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    proc = run(cache)
    assert proc.returncode != 0 and "chmod go-w" in proc.stderr, proc.stderr


def test_tack_cc_never_reaches_a_shell(tmp_path):
    marker = tmp_path / "PWNED"
    proc = run(tmp_path / "cache", TACK_CC=f"cc;touch {marker}")
    assert not marker.exists(), "TACK_CC went through a shell"
    assert proc.returncode != 0 and "does not run" in proc.stderr, proc.stderr


def test_long_cache_path_is_used_whole(tmp_path):
    deep = tmp_path
    for i in range(12):
        deep = deep / (f"level{i:02d}-" + "d" * 100)
    assert len(str(deep)) > 1300
    proc = run(deep, where=tmp_path)  # Tack creates all twelve levels
    assert proc.returncode == 0, proc.stderr
    assert list(deep.glob("*.so")), "the entry is not in the directory that was named"


def test_a_relative_cache_directory_is_refused_naming_its_variable(tmp_path):
    """The message said the path was not absolute but not where it came from: a service whose
    environment set it had to guess which variable to fix."""
    (tmp_path / "triple.py").write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(tmp_path / "triple.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=dict(os.environ, TACK_CACHE_DIR="relative/cache"))
    assert proc.returncode != 0
    assert "'relative/cache'" in proc.stderr and "TACK_CACHE_DIR" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "relative").exists()


def test_a_relative_xdg_cache_home_is_ignored_as_the_xdg_specification_says(tmp_path):
    """The XDG Base Directory specification: a relative path in XDG_CACHE_HOME is invalid and
    is ignored. Tack refused to compile anything instead ("'relcache/tack' is not an absolute
    path"); it now uses $HOME/.cache/tack, as with XDG_CACHE_HOME unset."""
    (tmp_path / "triple.py").write_text(SCRIPT)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = dict(os.environ, TACK_CACHE_DIR="", XDG_CACHE_HOME="relcache", HOME=str(home), TACK_LOG="info")
    proc = subprocess.run([sys.executable, str(tmp_path / "triple.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list((home / ".cache" / "tack").glob("*.so")), proc.stderr[-2000:]
    assert not (tmp_path / "relcache").exists()
    env["HOME"] = "relhome"  # and a relative HOME is an error that names HOME
    env.pop("XDG_CACHE_HOME")
    proc = subprocess.run([sys.executable, str(tmp_path / "triple.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode != 0
    assert "'relhome/.cache/tack'" in proc.stderr and "HOME" in proc.stderr, proc.stderr[-2000:]


def test_long_cflags_are_passed_whole(tmp_path):
    flags = " ".join(f"-DTACK_UNUSED_{i}=1" for i in range(400))
    assert len(flags) > 6000
    proc = run(tmp_path / "cache", TACK_CFLAGS=flags)
    assert proc.returncode == 0, proc.stderr
    # The last of 401 flags reaches the compiler (a list cut at a fixed size
    # would lose it): an option the compiler does not know makes it fail.
    proc = run(tmp_path / "cache2", TACK_CFLAGS=flags + " -fthis-option-does-not-exist")
    assert proc.returncode != 0
    assert "this-option-does-not-exist" in proc.stderr, proc.stderr[-2000:]


def ctrl_c_mid_compile(tmp_path, text, compile_delay):
    """Run `text` with a compiler that sleeps `compile_delay` seconds first, send
    Ctrl-C (SIGINT to the whole process group) once the build has begun, and
    give (return code, stdout, stderr, the cache directory)."""
    import signal
    import time

    slow = tmp_path / "slowcc"
    slow.write_text('#!/bin/sh\nif [ "$1" = --version ]; then exec cc --version; fi\n'
                    f'sleep {compile_delay}\nexec cc "$@"\n')
    slow.chmod(0o755)
    cache = tmp_path / "cache"
    script = tmp_path / "script.py"
    script.write_text(text)
    env = dict(os.environ, TACK_CACHE_DIR=str(cache), TACK_CC=str(slow))
    # The script and its compiler start with SIGINT's default disposition even
    # when this test runs with it ignored (a background job of a
    # non-interactive shell), which they would inherit and never be stopped.
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and not list(cache.glob("*.c")):
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err, cache


def test_ctrl_c_during_a_compile_is_a_keyboard_interrupt(tmp_path):
    # A compiler that takes its time; Ctrl-C reaches the whole process group.
    rc, out, err, cache = ctrl_c_mid_compile(tmp_path, SCRIPT, 60)
    assert rc != 0
    assert "KeyboardInterrupt" in err, err[-3000:]
    assert "RuntimeError" not in err, err[-3000:]
    assert not list(cache.glob("*.c")), "a stray source file was left behind"


def test_ctrl_c_during_a_compile_with_the_programs_own_handler(tmp_path):
    # The program installed its own SIGINT handler: the compile, like the
    # kernel, runs to its end, and then the handler runs (docs/runtime-contract.md).
    rc, out, err, _ = ctrl_c_mid_compile(
        tmp_path, "import signal\nstop = []\nsignal.signal(signal.SIGINT, lambda s, f: stop.append(1))\n"
        + SCRIPT + "print(stop)\n", 1)
    assert rc == 0, err[-3000:]
    assert out.split() == ["ok", "[1]"], out + err[-3000:]


@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KiB tmpfs to fill up (needs root and a kernel that lets us mount)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir(mode=0o700)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_full_disk_while_writing_the_source_says_so(tiny_disk):
    (tiny_disk / "filler").write_bytes(b"\0" * (256 * 1024 - 2048))  # the source needs more than what is left
    proc = run(tiny_disk, where=tiny_disk.parent)
    assert proc.returncode != 0
    assert "No space left on device" in proc.stderr, proc.stderr[-2000:]
    assert not list(tiny_disk.glob("*.c")) and not list(tiny_disk.glob("*.so"))


def test_full_disk_while_compiling_says_so_and_keeps_nothing(tiny_disk):
    # A compiler that finds the disk full: the source was written, then the
    # disk fills before the linker writes the library.
    cc = tiny_disk.parent / "fillcc"
    cc.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then exec {CC} --version; fi\n'
                  f'dd if=/dev/zero of="{tiny_disk}/filler" bs=4096 2>/dev/null\nexec {CC} "$@"\n')
    cc.chmod(0o755)
    proc = run(tiny_disk, where=tiny_disk.parent, TACK_CC=str(cc))
    assert proc.returncode != 0
    assert "no space left on the device holding the kernel cache" in proc.stderr, proc.stderr[-2000:]
    assert "No space left on device" in proc.stderr
    assert not list(tiny_disk.glob("*.c")) and not list(tiny_disk.glob("*.so"))
