"""docs/design/architecture.md names every source file, and its generated parts
say what the code says.

The map is how a new engineer finds where a thing lives; a file it does not
name is a room with no door.  Every C source, header and table under src/, the
public headers, every module of the Python package and every shared helper of
the tests must be named there.  The include table, the pass order and the file
map are generated from the code (tools/gen_architecture.py, `make docs-gen`):
a page that differs from a fresh run is stale.  The layer rules the page states
are checked here against every #include line.
"""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "design" / "architecture.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_architecture", ROOT / "tools" / "gen_architecture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def _sources():
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix in (".c", ".h", ".def"):
            yield path
    yield from sorted((ROOT / "include").glob("*.h"))
    yield from sorted((ROOT / "python" / "tack").rglob("*.py"))
    yield from sorted((ROOT / "tests" / "python").glob("_*.py"))


def test_every_source_file_is_on_the_map():
    text = PAGE.read_text()
    files = list(_sources())
    assert len(files) > 100
    missing = [str(p.relative_to(ROOT)) for p in files if f"`{p.name}`" not in text]
    assert not missing, "docs/design/architecture.md does not name: " + ", ".join(missing)


def test_the_generated_sections_are_fresh():
    text = PAGE.read_text()
    assert GEN.render(text) == text, "docs/design/architecture.md is stale: run make docs-gen"


def test_every_source_file_opens_with_an_essay():
    listed = [p for folder, pattern, _ in GEN.FOLDERS for p in GEN.folder_files(folder, pattern)]
    assert len(listed) > 100
    bare = [str(p.relative_to(ROOT)) for p in listed if not GEN.essay(p)]
    assert not bare, "these files open with no essay ('/* name.c -- what it does. ...' or a docstring): " + \
        ", ".join(bare)
    assert not GEN.unmapped_sources(), "add their folders to FOLDERS in tools/gen_architecture.py"


def test_the_pass_order_is_read_from_the_driver():
    steps = [s["name"] for s in GEN.pass_steps()]
    # the spine of every compile: lowering first, the passes, then emission
    assert steps[0] == "tk_lower_kernel" and "tk_emit" in steps, steps
    for name in ("tk_depend", "tk_fold", "tk_checks", "tk_strength", "tk_privatize"):
        assert 0 < steps.index(name) < steps.index("tk_emit"), (name, steps)
    when = {s["name"]: s["when"] for s in GEN.pass_steps()}
    assert when["tk_checks"] == "o.optimize" and when["tk_lower_kernel"] == "", when


def test_the_first_sentence_is_the_essays_own():
    assert GEN.first_sentence("the race check: can two iterations meet?  More here.") == \
        "the race check: can two iterations meet?"
    assert GEN.first_sentence("constant folding.\n\nFolds operations.") == "constant folding."
    assert GEN.first_sentence("the entry point (tests and tools):") == "the entry point (tests and tools)."
    assert GEN.first_sentence("spellings, e.g. sqrtf.  Then more.") == "spellings, e.g. sqrtf."


# --------------------------------------------------------------- the layers
def _includes(folder):
    """(file, included name) for every quoted #include of the files under src/folder."""
    for path in sorted((ROOT / "src" / folder).rglob("*")):
        if path.suffix in (".c", ".h", ".def"):
            for name in re.findall(r'^\s*#\s*include\s+["<]([^">]+)[">]', path.read_text(), re.M):
                yield path.relative_to(ROOT / "src"), name


PUBLIC = {p.name for p in (ROOT / "include").glob("*.h")}


def _quoted(folder):
    for path, name in _includes(folder):
        if not name.endswith(".h") or name in PUBLIC:
            continue
        if (ROOT / "src" / path.parent / name).exists() and "/" not in name:
            yield path, str(path.parent / name)  # beside it
        elif (ROOT / "src" / name).exists():
            yield path, name


def test_the_core_never_includes_python():
    bad = [f"{p}: {n}" for folder in ("compiler", "runtime", "backends") for p, n in _includes(folder)
           if n == "Python.h"]
    bad += [str(p.relative_to(ROOT)) for p in (ROOT / "include").glob("*.h") if "Python.h" in p.read_text()]
    assert not bad, bad


@pytest.mark.parametrize("folder, allowed", [
    ("python", ("python/",)),
    ("runtime", ("runtime/", "platform/platform.h")),
    ("compiler", ("compiler/", "runtime/program.h", "runtime/runtime.h", "runtime/races.h", "runtime/config.h",
                  "platform/platform.h")),
    ("backends/common", ("backends/common/", "runtime/", "platform/platform.h")),
    ("platform", ("platform/", "runtime/runtime.h")),
])
def test_the_layers_include_only_what_the_page_allows(folder, allowed):
    bad = [f"{p} includes {n}" for p, n in _quoted(folder) if not n.startswith(allowed)]
    assert not bad, "docs/design/architecture.md's layer rules are broken: " + "; ".join(bad)


def test_a_backend_includes_no_compiler_header_and_no_other_backend():
    kinds = [d.name for d in (ROOT / "src" / "backends").iterdir() if d.is_dir() and d.name != "common"]
    assert {"cpu", "cuda", "hip", "opencl", "level_zero", "metal"} <= set(kinds)
    bad = []
    for kind in kinds:
        allowed = (f"backends/{kind}/", "backends/common/", "runtime/", "private/", "platform/platform.h")  # private/: the exported test entries it defines
        bad += [f"{p} includes {n}" for p, n in _quoted(f"backends/{kind}") if not n.startswith(allowed)]
    assert not bad, "; ".join(bad)


def test_the_include_scan_sees_the_headers_it_judges():
    # the rules above pass vacuously if the scan resolves nothing: it must see
    # the compiler reaching into the runtime, and every backend into runtime.h
    assert {"compiler/compiler.h", "runtime/program.h"} <= {n for _, n in _quoted("compiler")}
    for kind in ("cpu", "cuda", "hip", "opencl", "level_zero", "metal"):
        assert "runtime/runtime.h" in {n for _, n in _quoted(f"backends/{kind}")}, kind
