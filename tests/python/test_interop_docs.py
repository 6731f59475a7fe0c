"""Every Python example in docs/interop.md runs as written."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "interop.md"


def blocks():
    text = DOC.read_text()
    found = []
    for m in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.S | re.M):
        indent = len(m.group(1))
        code = "\n".join(line[indent:] for line in m.group(2).splitlines())
        line = text[: m.start()].count("\n") + 1
        found.append(pytest.param(code, id=f"line{line}"))
    return found


def test_the_chapter_has_examples():
    assert len(blocks()) >= 8


@pytest.mark.parametrize("code", blocks())
def test_example(code, tmp_path):
    # From a file: kernels are compiled from their source text.
    path = tmp_path / "example.py"
    path.write_text(code)
    exec(compile(code, str(path), "exec"), {"__name__": "__doc_example__"})
