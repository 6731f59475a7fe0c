"""The quick cross check of `make test`: every source of the core and every C test compiled by the
ziglang wheel's `zig cc` for Windows and both Macs with the project's warnings as errors, and the
Macs' libtack.dylib and test programs linked, in seconds even with zig's cache cold.

`make test-cross` (under `make test-all`) builds the same with CMake, zig's defaults and every
link; cold, it costs minutes a target, nearly all of it zig building the target's run-time
libraries from source the first time anything is linked: compiler-rt and the UBSan run time
(some 20 to 40 s for each Mac) and, for Windows, MinGW-w64's C run time and zig's own libc
objects (about three minutes). CMake's configure step links a test program, so even its
compiler checks pay that. Compiling (`-c`) needs none of it, only the headers zig carries; so
this check compiles with `-g0 -fno-sanitize=undefined` (no debug information and no UBSan calls
to generate: neither changes a warning) and links only where nothing has to be built first:
for macOS with `-rtlib=none` (libSystem's stubs, which zig carries as .tbd files, hold what
compiler-rt would). Windows is compiled, not linked. Every object and program is then checked
to be the target's own (COFF x86-64, Mach-O arm64 or x86-64), so a compiler that quietly built
for the host fails.

What it compiles follows CMakeLists.txt, whose `TACK_WARNINGS`, `TACK_POSIX_ONLY_TESTS` and
`TACK_FAKE_ZE_TESTS` it reads: the core (src/runtime, src/compiler, src/backends, src/platform) with TACK_BUILDING, and
each tests/c/test_*.c, leaving out the POSIX-only tests for Windows. zig's cache is kept in
the build folder (OUT/zig-cache), so a second run recompiles nothing that did not change.

    python tools/cross_check.py [--jobs N] [--out DIR] [--zig ZIG] [TARGET ...]
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("x86_64-windows-gnu", "aarch64-macos", "x86_64-macos")
CORE_DIRS = ("src/runtime", "src/compiler", "src/backends", "src/platform")
# what each target's objects must be: (magic bytes at 0, the CPU field's format and offset)
COFF_MACHINE = {"x86_64": 0x8664, "aarch64": 0xAA64}
MACHO_CPU = {"aarch64": 0x0100000C, "x86_64": 0x01000007}


def cmake_list(name: str, root: Path = ROOT) -> list[str]:
    """The words of `set(NAME ...)` in root's CMakeLists.txt (the first such line)."""
    text = (root / "CMakeLists.txt").read_text()
    m = re.search(r"^\s*set\(%s\b([^)]*)\)" % re.escape(name), text, re.M)
    if not m:
        raise SystemExit("cross_check.py: CMakeLists.txt sets no %s" % name)
    return m.group(1).split()


def find_zig() -> str:
    try:
        import ziglang
    except ImportError:
        raise SystemExit("cross_check.py: no ziglang wheel in this environment (make env installs the compiler extra)")
    return os.path.join(os.path.dirname(ziglang.__file__), "zig")


def object_kind(data: bytes) -> str:
    """An object file's format and machine: "coff:0x8664", "macho:0x100000c", "elf" or "other"."""
    if data[:4] == b"\xcf\xfa\xed\xfe" and len(data) >= 8:
        return "macho:%#x" % struct.unpack_from("<I", data, 4)[0]
    if data[:4] == b"\x7fELF":
        return "elf"
    if data[:2] == b"MZ":
        return "pe"
    if len(data) >= 20:
        # a COFF object has no magic: its header's first field is the machine, and the
        # optional header's size (offset 16) is 0 in an object
        machine, size_opt = struct.unpack_from("<H", data, 0)[0], struct.unpack_from("<H", data, 16)[0]
        if machine in COFF_MACHINE.values() and size_opt == 0:
            return "coff:%#x" % machine
    return "other"


def wanted_kind(target: str) -> str:
    arch = target.split("-")[0]
    if "windows" in target:
        return "coff:%#x" % COFF_MACHINE[arch]
    if "macos" in target:
        return "macho:%#x" % MACHO_CPU[arch]
    raise SystemExit("cross_check.py: unknown target %s (known: %s)" % (target, ", ".join(TARGETS)))


class Job:
    """One zig cc run: what it makes, its command, and what to say when it fails."""

    def __init__(self, target: str, what: str, out: Path, argv: list[str], root: Path):
        self.target, self.what, self.out, self.argv, self.root = target, what, out, argv, root

    def run(self, env: dict[str, str]) -> str | None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(self.argv, cwd=self.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if p.returncode != 0:
            return "%s: %s failed (exit status %d):\n  %s\n%s" % (
                self.target, self.what, p.returncode, shlex.join(self.argv), p.stdout.rstrip())
        if p.stdout.strip():  # a warning that -Werror let through (a linker's) is a failure too
            return "%s: %s printed:\n%s" % (self.target, self.what, p.stdout.rstrip())
        return None


def plan(zig: str, target: str, out: Path, generated: Path, root: Path = ROOT) -> tuple[list[Job], list[Job]]:
    """The compile jobs of one target, and its link jobs (none for Windows), for the tree at root."""
    windows, mac = "windows" in target, "macos" in target
    cc = [zig, "cc", "-target", target]
    common = ["-std=c11", "-fvisibility=hidden", "-g0", "-fno-sanitize=undefined", "-D_GNU_SOURCE"]
    common += [] if windows else ["-fPIC"]
    common += ["-D_DARWIN_C_SOURCE"] if mac else []
    warnings = cmake_list("TACK_WARNINGS", root)
    posix_only = set(cmake_list("TACK_POSIX_ONLY_TESTS", root))
    obj_suffix = ".obj" if windows else ".o"
    tdir = out / target
    compiles, core_objs = [], []
    for d in CORE_DIRS:
        for src in sorted((root / d).rglob("*.c")):
            rel = src.relative_to(root)
            obj = tdir / "obj" / rel.with_suffix(obj_suffix)
            core_objs.append(obj)
            compiles.append(Job(target, str(rel), obj, cc + common + warnings + [
                "-DTACK_BUILDING=1", "-Iinclude", "-Isrc", "-I" + str(generated), "-c", str(rel), "-o", str(obj)], root))
    # the fake drivers' paths that CMakeLists.txt gives some POSIX tests (never opened here)
    fake_ze = set(cmake_list("TACK_FAKE_ZE_TESTS", root))
    tests = []
    for src in sorted((root / "tests" / "c").glob("test_*.c")):
        if windows and src.stem in posix_only:
            continue
        rel = src.relative_to(root)
        obj = tdir / "obj" / rel.with_suffix(obj_suffix)
        extra = []
        if src.stem == "test_hip_fake":
            extra = ['-DTACK_FAKE_HIP="libtack-fake-hip.dylib"']
        elif src.stem in fake_ze:
            extra = ['-DTACK_FAKE_ZE_SRC="tests/c/fake_level_zero.c"']
        tests.append((src.stem, obj))
        compiles.append(Job(target, str(rel), obj, cc + common + warnings + extra + [
            "-Iinclude", "-Isrc", "-Itests/c", "-c", str(rel), "-o", str(obj)], root))
    links = []
    if mac:
        # linked against libSystem's stubs alone: -rtlib=none, so that zig builds no compiler-rt
        ld = cc + ["-g0", "-fno-sanitize=undefined", "-rtlib=none"]
        lib = tdir / "libtack.dylib"
        links.append(Job(target, "libtack.dylib", lib, ld + ["-shared", "-o", str(lib)] + [str(o) for o in core_objs]
                         + ["-lpthread", "-lm"], root))
        for name, obj in tests:  # the objects of the core, not an archive: the linker takes what it needs either way
            exe = tdir / name
            links.append(Job(target, name, exe, ld + ["-o", str(exe), str(obj)] + [str(o) for o in core_objs]
                             + ["-lpthread", "-lm"], root))
    return compiles, links


def write_prelude(out: Path) -> Path:
    """generated/cpu_abi_prelude.inc, which dialect_c.c includes, written by the build's own CMake script."""
    gen = out / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cmake", "-DTACK_PRELUDE_HEADER=src/runtime/cpu_abi.h",
                    "-DTACK_PRELUDE_OUT=" + str(gen / "cpu_abi_prelude.inc"), "-P", "cmake/cpu_abi_prelude.cmake"],
                   cwd=ROOT, check=True)
    return gen


def run_all(jobs: list[Job], workers: int, env: dict[str, str]) -> list[str]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return [msg for msg in pool.map(lambda job: job.run(env), jobs) if msg]


def check_kinds(jobs: list[Job]) -> list[str]:
    bad = []
    for job in jobs:
        got = object_kind(job.out.read_bytes()[:64])
        if got != wanted_kind(job.target):
            bad.append("%s: %s is %s, not %s" % (job.target, job.out.name, got, wanted_kind(job.target)))
    return bad


def check(zig: str, targets: list[str], out: Path, jobs: int, root: Path = ROOT, generated: Path | None = None):
    """Compile, link and check every target; the failures' messages (none when all passed) and the plans."""
    # zig's cache in the build folder: the objects, and the hashes of the headers they read
    env = dict(os.environ, ZIG_GLOBAL_CACHE_DIR=str(out / "zig-cache"), ZIG_LOCAL_CACHE_DIR=str(out / "zig-cache"))
    generated = generated or write_prelude(out)
    plans = {t: plan(zig, t, out, generated, root) for t in targets}
    compiles = [j for t in targets for j in plans[t][0]]
    failed = run_all(compiles, jobs, env) or check_kinds(compiles)
    links = [j for t in targets for j in plans[t][1]]
    if not failed:
        failed = run_all(links, jobs, env) or check_kinds(links)
    return failed, plans


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", default=list(TARGETS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "cross-check")
    ap.add_argument("--zig", default=None)
    args = ap.parse_args(argv)
    for t in args.targets:
        wanted_kind(t)
    start = time.monotonic()
    failed, plans = check(args.zig or find_zig(), args.targets, args.out.resolve(), max(1, args.jobs))
    for msg in failed:
        print(msg, file=sys.stderr)
    if failed:
        print("cross_check.py: %d failed" % len(failed), file=sys.stderr)
        return 1
    for t in args.targets:
        c, l = plans[t]
        print("%s: %d files compiled%s, all %s" % (
            t, len(c), ", libtack.dylib and %d test programs linked" % (len(l) - 1) if l else " (not linked)",
            wanted_kind(t)))
    print("cross_check.py: %.1f s" % (time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
