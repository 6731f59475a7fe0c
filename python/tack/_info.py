"""tack.info() and the kernel cache's tools: what `python -m tack` reports and does.

A bug report needs the same facts every time -- Tack's version and build, the
settings and where each came from, Python, NumPy and the platform, the devices
Tack finds and, for each device family it does not find, why -- and a user
whose kernels fail needs to see the C compiler Tack would run and the cache it
would use.  Every fact here is libtack's own answer, read through tack._core,
never a second guess made in Python: the reason a backend is absent is the
text its probe kept (tack_backend_status, the one tack.array(device="cuda")
prints), the compiler is the one a CPU build would choose
(tack_cpu_compiler, cpu_jit.c's own choice), and whether a file in the cache
is Tack's is decided by its seal (tack_cache_classify, kcache.c's rules).  A
fact that cannot be had is reported with the error that says why instead of
stopping the report.

The cache tools list, clear and prune the kernel cache.  They touch only the
files libtack says Tack wrote (sealed entries, the C source kept beside a CPU
kernel, build temporaries) and remove them through tack_cache_remove, which
checks again; anything else in the directory is left alone, and a directory
holding files of which none is Tack's is refused rather than emptied of
nothing by mistake -- TACK_CACHE_DIR pointed at the wrong folder is exactly
the case to stop for.  A temporary of a build still running is never
removed: only those older than a day, as libtack's own sweep does.
"""

import os
import platform
import sys
import time

from . import _core, config

_TEMPORARY_STALE_S = 24 * 3600  # kcache.c's KC_STALE_S: a temporary younger than this may be a live build's


def _error_text(exc):
    return f"{type(exc).__name__}: {exc}"


def _devices():
    out = []
    for name in _core.devices():
        kind, _, index = name.partition(":")
        entry = {"name": name, "kind": kind, "index": int(index or 0)}
        try:
            description, dialect, units, memory, on_cores = _core._device_info(name)
            # the CPU's count is the threads a launch runs on; a GPU's, its compute units (SMs, CUs)
            entry.update(description=description, dialect=dialect, memory=memory or None, host_cores=on_cores,
                         **{"threads" if kind == "cpu" else "compute_units": units})
        except Exception as exc:  # a device that fails its query is still listed, with why
            entry["error"] = _error_text(exc)
        out.append(entry)
    return out


def _backends():
    return {name: {"available": n > 0, "devices": n, "reason": None if n > 0 else why}
            for name, n, why in _core._backend_status()}


def _compiler():
    try:
        found = _core._cpu_compiler()
    except Exception as exc:
        return {"found": False, "error": _error_text(exc)}
    if found is None:
        return {"found": False, "error": "no C compiler found (TACK_CC, CC, cc/gcc/clang on PATH, TACK_ZIG): "
                                         "kernels already in the cache still load, new ones cannot be built"}
    command, version, source = found
    return {"found": True, "command": command, "version": version, "from": source}


def _runtime_compilers():
    """NVRTC (CUDA), hiprtc (HIP) and ocloc (Level Zero): the library Tack loaded and its version, or why not."""
    out = {}
    for name, setting in (("nvrtc", "nvrtc_path"), ("hiprtc", "hiprtc_path"), ("ocloc", None)):
        found, where, v = _core._toolchain(name)
        entry = {"found": found, "setting": (config.get(setting) or None) if setting else None}
        if found:
            entry.update(library=where, version=f"{v >> 16}.{v & 0xffff}" if name == "ocloc"
                         else f"{v // 1000}.{v % 1000 // 10}")
        else:
            entry["error"] = where
        out[name] = entry
    return out


def _scan(path):
    """[(name, kind, size, mtime)] of every plain file in the cache directory (kind by libtack)."""
    rows = []
    with os.scandir(path) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if not e.is_file(follow_symlinks=False):
                continue
            rows.append((e.name, _core._cache_classify(e.name), st.st_size, st.st_mtime))
    return rows


def cache_state():
    """The kernel cache: its path, whether it exists, and Tack's entries in it."""
    out = {"path": None, "exists": False}
    try:
        path = out["path"] = _core._cache_path()
        out["exists"] = os.path.isdir(path)
        if out["exists"]:
            rows = _scan(path)
            ours = [r for r in rows if r[1] != "foreign"]
            out.update(entries=sum(r[1] == "entry" for r in ours), files=len(ours),
                       bytes=sum(r[2] for r in ours), other_files=len(rows) - len(ours))
    except Exception as exc:
        out["error"] = _error_text(exc)
    return out


def info():
    """What `python -m tack` reports, as a dict (``python -m tack --json`` prints it):
    Tack's version and build, the settings with where each value came from, Python,
    NumPy and the platform, the devices, every device family with the reason it is
    absent, the C compiler for CPU kernels, NVRTC, hiprtc and ocloc, and the kernel cache."""
    import numpy

    return {
        "tack": {
            "version": _core.__version__,
            "abi_version": _core.ABI_VERSION,
            "max_ndim": _core.MAX_NDIM,
            "module": os.path.dirname(os.path.abspath(__file__)),
            "targets": list(_core._targets()),
            "intrinsics": len(_core._intrinsics()),
        },
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "numpy": numpy.__version__,
        "platform": {"system": platform.system(), "release": platform.release(), "machine": platform.machine(),
                     "platform": platform.platform()},
        "config": {s.name: {"value": s.value, "source": s.source, "env": s.env} for s in config.describe()},
        "devices": _devices(),
        "default_device": _core.get_default_device(),
        "backends": _backends(),
        "c_compiler": _compiler(),
        "runtime_compilers": _runtime_compilers(),
        "cache": cache_state(),
    }


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _age(seconds):
    seconds = max(0, seconds)
    for unit, s in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= s:
            return f"{seconds / s:.1f} {unit}"
    return f"{seconds:.0f} s"


def report(d):
    """The readable form of info()'s dict."""
    t = d["tack"]
    lines = [f"Tack {t['version']} (ABI {t['abi_version']}) at {t['module']}",
             f"  targets: {', '.join(t['targets'])}; {t['intrinsics']} intrinsics; arrays up to {t['max_ndim']} axes",
             f"Python {d['python']['version']} ({d['python']['implementation']}, {d['python']['executable']})",
             f"NumPy {d['numpy']}",
             f"Platform {d['platform']['platform']} ({d['platform']['machine']})",
             "", f"Devices (default: {d['default_device']}):"]
    for dev in d["devices"]:
        if "error" in dev:
            extra = dev["error"]
        else:
            count = f"{dev['threads']} threads" if "threads" in dev else f"{dev['compute_units']} compute units"
            memory = f"{_size(dev['memory'])} memory; " if dev["memory"] else ""
            extra = f"{dev['description'] or '(no description)'}; {memory}{count}; kernels in {dev['dialect']}"
        lines.append(f"  {dev['name']:<14} {extra}")
    lines += ["", "Device families:"]
    for name, b in d["backends"].items():
        state = f"{b['devices']} device{'s' if b['devices'] != 1 else ''}" if b["available"] else f"absent: {b['reason']}"
        lines.append(f"  {name:<11} {state}")
    cc = d["c_compiler"]
    lines += ["", "C compiler for CPU kernels:"]
    if cc["found"]:
        lines.append(f"  {cc['command']} (from {cc['from']})")
        lines.append(f"  {cc['version']}")
    else:
        lines.append(f"  none: {cc['error']}")
    lines += ["", "GPU toolchains (loaded at run time):"]
    for name, rc in d["runtime_compilers"].items():
        where = f" (set: {rc['setting']})" if rc["setting"] else ""
        state = f"{rc['version']} ({rc['library']})" if rc["found"] else f"not found: {rc['error']}"
        lines.append(f"  {name:<7} {state}{where}")
    c = d["cache"]
    lines += ["", "Kernel cache:"]
    if "error" in c:
        lines.append(f"  {c['path'] or '(none)'}: {c['error']}")
    elif not c["exists"]:
        lines.append(f"  {c['path']} (not created yet)")
    else:
        lines.append(f"  {c['path']}: {c['entries']} entries, {c['files']} files of Tack's, {_size(c['bytes'])}"
                     + (f"; {c['other_files']} other files (left alone)" if c["other_files"] else ""))
    changed = {k: v for k, v in d["config"].items() if v["source"] != "default"}
    lines += ["", "Settings not at their default:" if changed else "Settings: all at their defaults"]
    for k, v in changed.items():
        lines.append(f"  {k} = {v['value']!r} ({'from ' + v['env'] if v['source'] == 'env' else 'set at run time'})")
    return "\n".join(lines)


# ------------------------------------------------------------- the cache tools
class CacheError(Exception):
    """A cache command that cannot go ahead (the message says why)."""


def _ours(path):
    if not os.path.isdir(path):
        return []
    rows = _scan(path)
    ours = [r for r in rows if r[1] != "foreign"]
    if rows and not ours:
        files = f"{len(rows)} file" + ("s" if len(rows) != 1 else "")
        raise CacheError(f"{path} does not look like Tack's kernel cache: it holds {files}, none written by Tack "
                         f"(check TACK_CACHE_DIR); nothing was removed")
    return ours


def cache_entries():
    """Tack's files in the cache, newest first: [(name, kind, bytes, mtime)]."""
    return sorted(_ours(_core._cache_path()), key=lambda r: (-r[3], r[0]))


def cache_remove(select):
    """Remove Tack's files for which select(row) is true; returns (files, bytes) removed.
    A build's temporary is removed only when older than a day (it may be a live build's)."""
    now = time.time()
    files = size = 0
    for row in cache_entries():
        if row[1] == "temporary" and now - row[3] <= _TEMPORARY_STALE_S:
            continue
        if select(row):
            _core._cache_remove(row[0])
            files += 1
            size += row[2]
    return files, size


def cache_prune(older_than_days=None, max_bytes=None):
    """Remove entries last written more than older_than_days ago, then the oldest
    until what is left takes at most max_bytes; returns (files, bytes) removed."""
    now = time.time()
    doomed = set()
    if older_than_days is not None:
        doomed.update(r[0] for r in cache_entries() if now - r[3] > older_than_days * 86400)
    if max_bytes is not None:
        total = sum(r[2] for r in cache_entries() if r[0] not in doomed)
        for r in reversed(cache_entries()):  # oldest first
            if total <= max_bytes:
                break
            if r[0] not in doomed:
                doomed.add(r[0])
                total -= r[2]
    return cache_remove(lambda r: r[0] in doomed)


__all__ = ["info"]
