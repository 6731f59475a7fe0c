"""docs/design/architecture.md names every source file.

The map is how a new engineer finds where a thing lives; a file it does not
name is a room with no door.  Every C source and table under src/, every
module of the Python package and every shared helper of the tests must be
named there (a header is covered by the .c file of the same name).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sources():
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix in (".c", ".def") or (path.suffix == ".h" and not path.with_suffix(".c").exists()):
            yield path
    for path in sorted((ROOT / "python" / "tack").rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            yield path
    for path in sorted((ROOT / "tests" / "python").glob("_*.py")):
        yield path


def test_every_source_file_is_on_the_map():
    text = (ROOT / "docs" / "design" / "architecture.md").read_text()
    files = list(_sources())
    assert len(files) > 100
    missing = [str(p.relative_to(ROOT)) for p in files if p.name not in text]
    assert not missing, "docs/design/architecture.md does not name: " + ", ".join(missing)
