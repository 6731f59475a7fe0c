"""What the GPU compilers gave, kept between test runs, by content.

The language suite's GPU checks compile about a thousand distinct sources
per target with tools that take 0.1-0.5 s each (NVRTC, hiprtc, Intel's
libocloc, clang++ for the Metal dialect's type check).  Between two runs
of `make test` almost none of those sources change, so a compile's output
is kept under the key of everything that decides it: the tool and its
version, the architecture, the flags and the source text.  A changed
source, tool or flag is a new key; an entry is never trusted beyond its
key, and its checks (a kernel entry in the PTX, an ELF code object, both
SPIR-V and native binary from ocloc) run again on the kept bytes, so a
cached run proves what an uncached one does.

Where: $TACK_TEST_TOOL_CACHE (make test sets build/test-cache/tools); unset,
nothing is kept and every compile runs.  Only successful compiles are kept:
a failure is compiled again the next time, with its message.  Writes go to
a temporary name and are renamed into place, so the workers of one run and
two runs at once never see half an entry.
"""

import hashlib
import os
import pickle
import tempfile

_DIR = os.environ.get("TACK_TEST_TOOL_CACHE")


def key(tool, version, arch, flags, source):
    """The hex digest of everything that decides a compile's output."""
    h = hashlib.sha256()
    for part in (tool, str(version), arch, flags, source):
        data = part.encode() if isinstance(part, str) else bytes(part)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def cached(tool, version, arch, flags, source, compute, ok=lambda out: True):
    """compute()'s result for this source, from the cache when it holds it.

    compute() runs when the entry is missing or unreadable; its result is
    kept only when ok(result) says the compile succeeded."""
    found = lookup(tool, version, arch, flags, source)
    if found is not None:
        return found
    out = compute()
    if ok(out):
        store(tool, version, arch, flags, source, out)
    return out


def _path(tool, version, arch, flags, source):
    k = key(tool, version, arch, flags, source)
    return os.path.join(_DIR, k[:2], k)


def lookup(tool, version, arch, flags, source):
    """The kept output for this compile, or None (also when nothing is kept: no TACK_TEST_TOOL_CACHE)."""
    if not _DIR:
        return None
    try:
        with open(_path(tool, version, arch, flags, source), "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


def store(tool, version, arch, flags, source, out):
    """Keep a successful compile's output (nothing when no TACK_TEST_TOOL_CACHE)."""
    if not _DIR:
        return
    path = _path(tool, version, arch, flags, source)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(out, f)
    os.replace(tmp, path)
