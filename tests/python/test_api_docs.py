"""The API reference, docs/api/c.md and docs/api/python.md, is what the code
says, and every public name has its documentation.

tools/gen_api.py writes both pages from the public headers' comments and the
tack package's docstrings (`make docs-gen`); a page that differs from a fresh
run is stale, and a TACK_API function without a comment or a public Python
name without a docstring fails here.
"""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "tools" / "gen_api.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def test_the_reference_pages_are_fresh():
    texts, _ = GEN.pages()
    stale = [str(p.relative_to(ROOT)) for p, t in texts.items() if not p.exists() or p.read_text() != t]
    assert not stale, f"{', '.join(stale)} stale: run make docs-gen"


def test_every_public_name_is_documented():
    _, missing = GEN.pages()
    assert not missing, "no comment or docstring: " + ", ".join(missing)


def test_every_exported_function_is_in_the_c_reference():
    text = (ROOT / "docs" / "api" / "c.md").read_text()
    for header in GEN.HEADERS:
        source = (ROOT / "include" / header).read_text()
        declared = re.findall(r"^\s*TACK_API\b[^;]*?\b(\w+)\s*\(", source, re.M)
        assert declared, header
        absent = [name for name in declared if f"#### `{name}`" not in text]
        assert not absent, f"{header}: {absent}"


def test_every_name_of_all_is_in_the_python_reference():
    import tack
    import tack.random

    text = (ROOT / "docs" / "api" / "python.md").read_text()
    absent = [n for n in tack.__all__ if f"`tack.{n}" not in text]
    absent += [n for n in tack.random.__all__ if f"`tack.random.{n}" not in text]
    assert not absent, absent


HEADER = """\
/*
 * demo.h -- a header for the parser's test.
 */
/* ------------------------------------------------------------- things */
/* The first: documented above. */
TACK_API int tack_first(void);
TACK_API int tack_second(int x); /* documented on its line */
TACK_API int tack_third(const char *s,
                        int n);
/* Flags of the fourth, documented above them. */
#define TACK_FOURTH_FLAG 1u
TACK_API void tack_fourth(unsigned flags)
#if defined(__GNUC__)
    __attribute__((deprecated))
#endif
    ;
/* ------------------------------------------------------------- more */
TACK_API void tack_fifth(void);
"""


def test_the_header_parser_finds_each_comment_and_each_gap(tmp_path):
    path = tmp_path / "demo.h"
    path.write_text(HEADER)
    parsed = GEN.parse_header(path)
    assert parsed["essay"] == "a header for the parser's test."
    got = {f["name"]: (f["decl"], f["doc"], f["section"]) for f in parsed["functions"]}
    assert got["tack_first"] == ("int tack_first(void);", "The first: documented above.", "things")
    assert got["tack_second"][1] == "documented on its line"
    assert got["tack_third"] == ("int tack_third(const char *s, int n);", "", "things")
    assert got["tack_fourth"] == ("void tack_fourth(unsigned flags);", "Flags of the fourth, documented above them.",
                                  "things")
    assert got["tack_fifth"] == ("void tack_fifth(void);", "", "more")  # a section line is no doc


def test_an_undocumented_python_name_is_reported():
    class Documented:
        """Has a docstring."""

        def method(self):
            pass

        @property
        def prop(self):
            """A property with one."""

    def bare(x):
        pass

    missing = []
    GEN._describe("demo.Documented", Documented, missing)
    GEN._describe("demo.bare", bare, missing)
    assert missing == ["demo.Documented.method", "demo.bare"]


def test_a_members_dunder_text_is_not_read_as_bold():
    # "__array__(dtype=None)" in a member's line rendered as a bold "array" (on GitHub and the site)
    assert GEN._dunders_escaped("__array__(dtype=None) -> a `__x__` copy") == \
        "\\_\\_array\\_\\_(dtype=None) -> a `__x__` copy"
    assert "- **`__array__`**: \\_\\_array\\_\\_(" in (ROOT / "docs" / "api" / "python.md").read_text()
