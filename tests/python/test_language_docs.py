"""Every Python example in docs/language.md, errors.md, backends.md,
beyond-one-machine.md, algorithms.md and differentiation.md runs as written."""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHAPTERS = ["language.md", "errors.md", "backends.md", "beyond-one-machine.md", "algorithms.md",
            "differentiation.md"]
# What a chapter's examples import beyond Tack's own needs (the mpi and dask extras).
NEEDS = {"beyond-one-machine.md": ("mpi4py", "dask")}


def examples():
    for chapter in CHAPTERS:
        path = ROOT / "docs" / chapter
        if not path.exists():
            continue
        text = path.read_text()
        for n, match in enumerate(re.finditer(r"```python\n(.*?)```", text, re.S)):
            line = text[: match.start()].count("\n") + 2
            missing = [m for m in NEEDS.get(chapter, ()) if importlib.util.find_spec(m) is None]
            marks = pytest.mark.skip(reason=f"{', '.join(missing)} not installed") if missing else ()
            yield pytest.param(match.group(1), id=f"{chapter}:{line}", marks=marks)


@pytest.mark.parametrize("code", list(examples()))
def test_doc_example_runs(code, tmp_path):
    # A file, not exec(): kernels are compiled from their source text.
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
