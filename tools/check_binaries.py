"""Check that a cross build made what its target runs: every C test program and
libtack in a build folder of `make test-cross` carries the target's executable
format and machine -- PE32+ for x86-64 (Windows), Mach-O 64-bit for arm64 or
x86-64 (macOS) -- read from the files' own headers, so a toolchain that quietly
built for the host (a wrong -target, a compiler found on PATH) fails here.

    python tools/check_binaries.py TARGET BUILD_DIR
"""
import struct
import sys
from pathlib import Path

MACHO_CPU = {"aarch64": 0x0100000C, "x86_64": 0x01000007}  # CPU_TYPE_ARM64, CPU_TYPE_X86_64
PE_MACHINE = {"x86_64": 0x8664, "aarch64": 0xAA64}


def kind(path: Path) -> str:
    """What the file is, as "pe:<machine>", "macho:<cputype>", "elf" or "other"."""
    head = path.read_bytes()[:4096]
    if head[:2] == b"MZ" and len(head) >= 0x40:
        off = struct.unpack_from("<I", head, 0x3C)[0]
        if head[off : off + 4] == b"PE\0\0":
            return "pe:%#x" % struct.unpack_from("<H", head, off + 4)[0]
    if head[:4] == b"\xcf\xfa\xed\xfe":
        return "macho:%#x" % struct.unpack_from("<I", head, 4)[0]
    if head[:4] == b"\x7fELF":
        return "elf"
    return "other"


def main(argv):
    target, folder = argv[1], Path(argv[2])
    arch = target.split("-")[0]
    if "windows" in target:
        want, files = "pe:%#x" % PE_MACHINE[arch], sorted(folder.glob("test_*.exe")) + sorted(folder.glob("*.dll"))
    elif "macos" in target:
        want = "macho:%#x" % MACHO_CPU[arch]
        files = [p for p in sorted(folder.glob("test_*")) if p.is_file() and "." not in p.name]
        files += [p for p in sorted(folder.glob("*.dylib")) if not p.is_symlink()]
    else:
        raise SystemExit("check_binaries.py: unknown target " + target)
    if not files:
        raise SystemExit("check_binaries.py: nothing built in %s" % folder)
    bad = ["%s is %s" % (p.name, kind(p)) for p in files if kind(p) != want]
    if bad:
        raise SystemExit("check_binaries.py: %s wants %s, but %s" % (target, want, "; ".join(bad)))
    print("%s: %d files, all %s" % (target, len(files), want))


if __name__ == "__main__":
    main(sys.argv)
