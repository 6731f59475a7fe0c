"""`python -m tack` and tack.info(), run as a user runs them: in a subprocess.

The report names every device family, lists the devices found, and for each
absent family gives the reason libtack's probe kept (the one tack.array's
error carries); it shows the C compiler a CPU build would use, with its
version; `--json` is tack.info() itself.  The cache tools are run against a
fresh TACK_CACHE_DIR filled by compiling two kernels: `list` shows Tack's
files newest first and leaves out a file of the user's, `--limit` shortens
it, `prune --older-than` removes what os.utime aged and keeps the rest,
`prune --max-size 0` and `clear` remove every file of Tack's and leave the
user's file alone, and a directory with nothing of Tack's in it is refused
with exit status 1.  Bad usage exits 2 with a message naming the argument.
"""

import json
import os
import subprocess
import sys
import time

import pytest

KERNELS = '''
import numpy as np
import tack

@tack.kernel
def scale(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] * s

@tack.kernel
def shift(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] + s

a = np.ones(4)
scale(a, 3.0)
shift(a, 1.0)
assert a.tolist() == [4.0] * 4
'''


def tack_cmd(*args, cache=None, check=True):
    env = dict(os.environ)
    if cache is not None:
        env["TACK_CACHE_DIR"] = str(cache)
    r = subprocess.run([sys.executable, "-m", "tack", *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    env = dict(os.environ, TACK_CACHE_DIR=str(d))
    script = tmp_path / "kernels.py"  # a file: Tack compiles a kernel from its source text
    script.write_text(KERNELS)
    subprocess.run([sys.executable, str(script)], check=True, env=env, timeout=120)
    (d / "notes.txt").write_text("the user's, not Tack's\n")
    return d


def kernels_in(d):
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".so"))


def test_report_names_devices_backends_and_compiler(tmp_path):
    out = tack_cmd("--json", cache=tmp_path / "c").stdout
    d = json.loads(out)
    names = [dev["name"] for dev in d["devices"]]
    assert names[0] == "cpu" and d["devices"][0]["threads"] >= 1 and d["devices"][0]["dialect"] == "c"
    for dev in d["devices"]:
        assert dev["description"] and ("threads" in dev) == (dev["kind"] == "cpu"), dev
        if dev["kind"] in ("cpu", "cuda", "hip", "opencl"):
            assert dev["memory"] >= 1 << 20, dev
        if dev["kind"] != "cpu":
            assert dev["compute_units"] >= 1
    assert set(d["backends"]) == {"cpu", "cuda", "hip", "metal", "level_zero", "opencl"}
    for family, b in d["backends"].items():
        have = [n for n in names if n.split(":")[0] == family]
        assert b["devices"] == len(have) and b["available"] == bool(have)
        assert (b["reason"] is None) == b["available"], (family, b)
    # the reason is the one asking for such a device gives
    import tack
    for family, b in d["backends"].items():
        if not b["available"]:
            with pytest.raises(RuntimeError, match="not available") as e:
                tack.synchronize(family)
            assert b["reason"] in str(e.value)
    cuda, hip = d["backends"]["cuda"], d["backends"]["hip"]
    if not cuda["available"]:  # no driver library, or a driver that finds no GPU
        assert "libcuda" in cuda["reason"] or "GPU" in cuda["reason"] or "cuInit" in cuda["reason"], cuda
    if not hip["available"]:
        assert "libamdhip64" in hip["reason"] or "GPU" in hip["reason"] or "hipInit" in hip["reason"], hip
    cc = d["c_compiler"]
    assert cc["found"] and cc["version"] and os.path.isabs(cc["command"].split()[0])
    assert cc["from"] in ("TACK_CC", "CC", "PATH", "TACK_ZIG")
    for name, rc in d["runtime_compilers"].items():  # a library's path and version, or why not
        assert (rc["found"] and os.path.isabs(rc["library"]) and rc["version"]) or (not rc["found"] and rc["error"])
    assert set(d["runtime_compilers"]) == {"nvrtc", "hiprtc", "ocloc"}
    assert d["tack"]["version"] == tack.__version__ and "c" in d["tack"]["targets"]
    assert d["config"]["cache_dir"] == {"value": str(tmp_path / "c"), "source": "env", "env": "TACK_CACHE_DIR"}
    assert d["cache"] == {"path": str(tmp_path / "c"), "exists": False}
    assert not (tmp_path / "c").exists()  # reporting creates no cache


def test_json_is_tack_info(cache):
    env = dict(os.environ, TACK_CACHE_DIR=str(cache))
    here = subprocess.run([sys.executable, "-c", "import json, tack; print(json.dumps(tack.info()))"],
                          capture_output=True, text=True, env=env, check=True, timeout=120).stdout
    assert json.loads(tack_cmd("--json", cache=cache).stdout) == json.loads(here)
    c = json.loads(here)["cache"]
    assert c["entries"] >= 2 and c["other_files"] == 1 and c["bytes"] > 0


def test_plain_report_is_readable(cache):
    d = json.loads(tack_cmd("--json", cache=cache).stdout)
    text = tack_cmd(cache=cache).stdout
    assert text.startswith(f"Tack {d['tack']['version']}")
    for section in ("Devices", "Device families:", "C compiler for CPU kernels:", "Kernel cache:"):
        assert section in text
    for family, b in d["backends"].items():
        assert family in text
        if b["reason"]:
            assert b["reason"] in text
    assert d["c_compiler"]["version"] in text
    assert f"{cache}: {d['cache']['entries']} entries" in text and "1 other files (left alone)" in text


def test_cache_list_newest_first_and_limit(cache):
    a, b = kernels_in(cache)
    now = time.time()
    os.utime(cache / a, (now - 7200, now - 7200))
    os.utime(cache / b, (now - 3600, now - 3600))
    out = tack_cmd("cache", "list", cache=cache).stdout
    assert "notes.txt" not in out and out.index(b) < out.index(a)
    assert "2.0 h ago" in out and "1.0 h ago" in out
    lines = tack_cmd("cache", "list", "--limit", "1", cache=cache).stdout.splitlines()
    assert len(lines) == 3 and "older (--limit 1)" in lines[2]


def test_cache_prune_by_age_and_size(cache):
    a, b = kernels_in(cache)
    old = time.time() - 3 * 86400
    os.utime(cache / a, (old, old))
    out = tack_cmd("cache", "prune", "--older-than", "2", cache=cache).stdout
    assert out.startswith("removed 1 files")
    assert kernels_in(cache) == [b]
    tack_cmd("cache", "prune", "--max-size", "0", cache=cache)
    assert sorted(p.name for p in cache.iterdir()) == ["notes.txt"]


def test_cache_clear_leaves_foreign_files(cache):
    assert len(kernels_in(cache)) == 2
    (cache / "fake.so").write_text("a library of the user's, unsealed\n")
    out = tack_cmd("cache", "clear", cache=cache).stdout
    assert out.startswith("removed ")
    assert sorted(p.name for p in cache.iterdir()) == ["fake.so", "notes.txt"]
    # now nothing in it is Tack's: refused, and nothing is removed
    r = tack_cmd("cache", "clear", cache=cache, check=False)
    assert r.returncode == 1 and "does not look like Tack's kernel cache" in r.stderr
    assert sorted(p.name for p in cache.iterdir()) == ["fake.so", "notes.txt"]


def test_cache_refused_when_others_may_write(cache):
    cache.chmod(0o777)
    try:
        r = tack_cmd("cache", "clear", cache=cache, check=False)
        assert r.returncode == 1 and "writable by group or others" in r.stderr
        assert len(kernels_in(cache)) == 2
    finally:
        cache.chmod(0o700)


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["cache"], "required"),
    (["cache", "frob"], "invalid choice: 'frob'"),
    (["cache", "prune"], "give --older-than DAYS and/or --max-size MB"),
    (["cache", "prune", "--older-than", "soon"], "--older-than must be a number, not 'soon'"),
    (["cache", "prune", "--max-size", "-5"], "--max-size must be a finite number >= 0, not '-5'"),
    (["cache", "list", "--limit", "nan"], "--limit must be a number, not 'nan'"),
    (["--json", "cache", "list"], "--json is for the report"),
])
def test_bad_usage_exits_2(tmp_path, args, message):
    r = tack_cmd(*args, cache=tmp_path / "c", check=False)
    assert r.returncode == 2 and message in r.stderr, r.stderr


@pytest.mark.parametrize("args", [[], ["cache"], ["cache", "list"], ["cache", "clear"], ["cache", "prune"]])
def test_help(args):
    r = tack_cmd(*args, "--help")
    assert r.stdout.startswith("usage: python -m tack") and len(r.stdout) > 200
