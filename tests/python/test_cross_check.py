"""tools/cross_check.py, the quick cross check of `make test` (docs/platforms.md): what it
compiles for each target follows CMakeLists.txt, it tells the target's objects from the host's,
and it fails on a warning or an error that only one target's headers bring out.

The full check runs as its own step of `make test` (`make test-cross-check`); here a small tree
of three files is compiled for Windows and a Mac, about a second with zig's cache cold.
"""
import importlib.util
import os
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("cross_check", ROOT / "tools" / "cross_check.py")
cross_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cross_check)


def _zig():
    try:
        return cross_check.find_zig()
    except SystemExit:
        return None


def test_object_kinds_are_read_from_the_headers():
    coff = struct.pack("<HHIIIHH", 0x8664, 3, 0, 0, 0, 0, 0)
    assert cross_check.object_kind(coff) == "coff:0x8664"
    assert cross_check.object_kind(struct.pack("<HHIIIHH", 0xAA64, 3, 0, 0, 0, 0, 0)) == "coff:0xaa64"
    # an image's COFF header has an optional header; a stray 0x8664 is not an object
    assert cross_check.object_kind(struct.pack("<HHIIIHH", 0x8664, 3, 0, 0, 0, 240, 0)) == "other"
    assert cross_check.object_kind(b"\xcf\xfa\xed\xfe" + struct.pack("<I", 0x0100000C) + bytes(12)) == "macho:0x100000c"
    assert cross_check.object_kind(b"\x7fELF" + bytes(60)) == "elf"
    assert cross_check.object_kind(b"MZ" + bytes(62)) == "pe"
    assert cross_check.object_kind(b"") == "other"
    assert cross_check.wanted_kind("x86_64-windows-gnu") == "coff:0x8664"
    assert cross_check.wanted_kind("aarch64-macos") == "macho:0x100000c"
    assert cross_check.wanted_kind("x86_64-macos") == "macho:0x1000007"
    with pytest.raises(SystemExit, match="unknown target riscv64-linux"):
        cross_check.wanted_kind("riscv64-linux")


def test_the_flags_and_the_posix_only_tests_are_cmakes(tmp_path):
    assert "-Werror" in cross_check.cmake_list("TACK_WARNINGS")
    assert "test_pool" in cross_check.cmake_list("TACK_POSIX_ONLY_TESTS")
    assert "test_level_zero_fake" in cross_check.cmake_list("TACK_FAKE_ZE_TESTS")
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    with pytest.raises(SystemExit, match="sets no TACK_WARNINGS"):
        cross_check.cmake_list("TACK_WARNINGS", tmp_path)


def test_every_core_source_and_c_test_is_planned_for_every_target(tmp_path):
    core = {str(p.relative_to(ROOT)) for d in cross_check.CORE_DIRS for p in (ROOT / d).rglob("*.c")}
    tests = {str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "c").glob("test_*.c")}
    posix_only = {"tests/c/%s.c" % n for n in cross_check.cmake_list("TACK_POSIX_ONLY_TESTS")}
    assert len(core) > 80 and posix_only < tests
    for target in cross_check.TARGETS:
        compiles, links = cross_check.plan("zig", target, tmp_path, tmp_path)
        assert {j.what for j in compiles} == core | (tests - posix_only if "windows" in target else tests)
        for job in compiles:
            assert job.argv[1:4] == ["cc", "-target", target] and "-Werror" in job.argv and "-c" in job.argv
        if "windows" in target:
            assert links == []
        else:
            assert sorted(j.what for j in links) == sorted(["libtack.dylib"] + [Path(t).stem for t in tests])
            assert all("-rtlib=none" in j.argv for j in links)


def test_make_test_runs_it():
    makefile = (ROOT / "Makefile").read_text()
    (prereqs,) = [line for line in makefile.splitlines() if line.startswith("test:")]
    assert "test-cross-check" in prereqs.split()
    assert "tools/cross_check.py" in makefile.split("\ntest-cross-check:", 1)[1].split("\n\n", 1)[0]


def _tree(root: Path, core: str) -> Path:
    root.mkdir()
    (root / "CMakeLists.txt").write_text(
        "set(TACK_WARNINGS -Wall -Werror)\nset(TACK_POSIX_ONLY_TESTS test_fork)\nset(TACK_FAKE_ZE_TESTS)\n")
    (root / "src" / "runtime").mkdir(parents=True)
    (root / "tests" / "c").mkdir(parents=True)
    (root / "src" / "runtime" / "core.c").write_text(core)
    (root / "tests" / "c" / "test_one.c").write_text("int core_answer(void);\nint main(void) { return core_answer() != 42; }\n")
    (root / "tests" / "c" / "test_fork.c").write_text("#include <sys/wait.h>\n#include <unistd.h>\nint main(void) { return fork() < 0; }\n")
    return root


@pytest.mark.skipif(_zig() is None, reason="the ziglang wheel (the `compiler` extra) is not installed")
def test_a_warning_one_target_brings_out_fails_there_and_nowhere_else(tmp_path):
    targets = ["x86_64-windows-gnu", "aarch64-macos"]
    # an unused variable on Windows only, -Wall -Werror: the Windows compile fails, the Mac's passes
    core = "#ifdef _WIN32\nstatic int unused;\n#endif\nint core_answer(void) { return 42; }\n"
    root = _tree(tmp_path / "tree", core)
    failed, _ = cross_check.check(_zig(), targets, tmp_path / "out", 2, root, generated=tmp_path)
    assert len(failed) == 1 and failed[0].startswith("x86_64-windows-gnu: src/runtime/core.c failed"), failed
    assert "unused" in failed[0]
    assert (tmp_path / "out" / "aarch64-macos" / "obj" / "tests" / "c" / "test_fork.o").exists()  # POSIX: built
    assert not (tmp_path / "out" / "x86_64-windows-gnu" / "obj" / "tests" / "c" / "test_fork.obj").exists()

    # fixed, everything passes, and the Mac's programs are linked as Mach-O arm64
    (root / "src" / "runtime" / "core.c").write_text("int core_answer(void) { return 42; }\n")
    failed, plans = cross_check.check(_zig(), targets, tmp_path / "out", 2, root, generated=tmp_path)
    assert failed == []
    assert [j.what for j in plans["aarch64-macos"][1]] == ["libtack.dylib", "test_fork", "test_one"]
    exe = (tmp_path / "out" / "aarch64-macos" / "test_one").read_bytes()
    assert cross_check.object_kind(exe[:64]) == "macho:0x100000c"

    # a symbol the Mac's libSystem lacks fails its link, named
    (root / "src" / "runtime" / "core.c").write_text(
        "int tack_nowhere(void);\nint core_answer(void) { return tack_nowhere(); }\n")
    failed, _ = cross_check.check(_zig(), ["aarch64-macos"], tmp_path / "out", 2, root, generated=tmp_path)
    assert failed and all("aarch64-macos" in m and "tack_nowhere" in m for m in failed), failed
    assert os.environ.get("ZIG_GLOBAL_CACHE_DIR") != str(tmp_path / "out" / "zig-cache")  # not leaked
