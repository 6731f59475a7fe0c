"""The README and the chapters point at what exists: every relative link names
a file of the repository (and, into a Markdown page, one of its headings), and
every `make TARGET` they tell a reader to run is a target of the Makefile."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slugs(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    found, seen = set(), {}
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for heading in re.findall(r"^#{1,6} +(.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        yield target


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    bad = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in slugs(dest):
            bad.append(f"{target}: no heading '{anchor}' in {dest.relative_to(ROOT)}")
    assert not bad, bad


def test_the_link_check_sees_links_and_anchors():
    readme = list(links(ROOT / "README.md"))
    assert "docs/getting-started.md" in readme and len(readme) > 15
    assert "on-a-gpu-make-test-gpu-nvidia-h200" in slugs(ROOT / "docs" / "benchmarks.md")


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):(?!=)", text, re.M))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_make_command_is_a_target(page):
    targets = make_targets()
    assert {"demo", "test", "docs-gen"} <= targets
    # as code: `make test` in a sentence, or a line of a shell block
    named = set(re.findall(r"(?:`|^)make ([a-z][\w-]*)", page.read_text(), re.M))
    assert named <= targets, sorted(named - targets)
